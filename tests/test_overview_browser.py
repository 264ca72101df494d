"""The overview's group states in real headless Chromium (as tests/test_dashboard_browser.py drives
it), on a lakehouse whose silver and gold rows are written per contract — one group per state an SRE
must tell apart at a glance: a healthy pair, a live whose backup does not answer, a split brain,
stale data, a ZooKeeper ensemble without quorum. The app's clock is pinned, so "how old" is exact.
Also: the page refreshes itself (dashboard.overview_refresh) and picks up a new observation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dashboards import data as D
from dashboards.app import DashboardServer, create_app
from lakehouse.store import Lakehouse
from settings.dashboard import DashboardSettings
from tests.test_dashboard_browser import browser, keep_screenshot, wait_text  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

NOW = datetime(2026, 11, 26, 3, 0, tzinfo=timezone.utc)


def state_row(group: str, inst: str, role: str, active: bool, reachable: bool = True, ago_s: float = 2.0) -> dict:
    ts = NOW - timedelta(seconds=ago_s)
    return dict(obs_key=f"{inst}-{ago_s}", ts=ts, obs_date=ts.date().isoformat(), kind="artemis", group_name=group,
                instance=inst, reachable=reachable, active=active if reachable else None,
                role=role if reachable else "unknown", replica_sync=True if role == "backup" and reachable else None,
                error=None if reachable else "connection refused", connections=1, total_enqueued=0, total_dequeued=0)


def open_interval(group: str, inst: str, ago_s: float = 2.0) -> dict:
    return dict(interval_id=f"iv-{inst}", kind="artemis", group_name=group, instance=inst,
                start_ts=NOW - timedelta(minutes=40), end_ts=NOW - timedelta(seconds=ago_s), is_open=True,
                observations=10, unanswered_inside=0)


def scenario_lakehouse(root) -> Lakehouse:
    lh = Lakehouse(root)
    lh.overwrite("broker_state", [
        state_row("healthy", "h-a", "live", True), state_row("healthy", "h-b", "backup", False),
        state_row("lonely", "l-a", "live", True), state_row("lonely", "l-b", "backup", False, reachable=False),
        state_row("split", "s-a", "live", True), state_row("split", "s-b", "live", True),
        state_row("old", "o-a", "live", True, ago_s=1500), state_row("old", "o-b", "backup", False, ago_s=1500),
    ])
    lh.overwrite("role_intervals", [open_interval("healthy", "h-a"), open_interval("lonely", "l-a"),
                                    open_interval("split", "s-a"), open_interval("split", "s-b"),
                                    open_interval("old", "o-a", ago_s=1500)])
    lh.overwrite("incidents", [dict(
        incident_id="inc-split-0001", cluster="split", kind="artemis", severity="critical", status="open",
        start_ts=NOW - timedelta(seconds=30), end_ts=NOW - timedelta(seconds=2), duration_s=28.0,
        title="split brain in split", narrative="s-a and s-b both live.", advice="Enable a quorum of at least 3 pairs.", instances="s-a,s-b",
        codes="split-brain", finding_count=1, has_split_brain=True, has_failover=False)])
    lh.overwrite("incident_evidence", [dict(
        incident_id="inc-split-0001", source_table="split_brain_windows", source_id="w1", code="split-brain",
        severity="critical", group_name="split", instance="s-a,s-b", start_ts=NOW - timedelta(seconds=30),
        end_ts=NOW - timedelta(seconds=2), message="s-a and s-b both live")])
    lh.overwrite("zk_quorum", [dict(
        interval_id="q1", ensemble="zk", status="lost", leader=None, epoch=None, start_ts=NOW - timedelta(seconds=20),
        start_lower=None, end_ts=NOW - timedelta(seconds=1), end_upper=None, rounds=5, voters=3, answering_min=1,
        healthy_min=1, bare_majority=False, is_open=True)])
    return lh


@pytest.fixture
def lakehouse(tmp_path) -> Lakehouse:
    return scenario_lakehouse(tmp_path / "lh")


@pytest.fixture
def server(lakehouse):
    gold = D.Gold(lakehouse, fresh_s=0, clock=lambda: NOW)
    with DashboardServer(create_app(gold, DashboardSettings(overview_refresh=1.0)), "127.0.0.1", 0) as srv:
        yield srv


CARDS_JS = """return Array.from(document.querySelectorAll('.group-card')).map(c => [c.dataset.group, c.dataset.state,
    c.querySelector('.reason').innerText, c.innerText]);"""


def cards(driver) -> list[tuple[str, str, str]]:
    """(group, state, reason) of every card, in page order (read in one go: the page re-renders itself)."""
    return [(g, s, r) for g, s, r, _ in driver.execute_script(CARDS_JS)]


def card_text(driver, group: str) -> str:
    return next(t for g, _, _, t in driver.execute_script(CARDS_JS) if g == group)


def test_overview_states_worst_first_with_reasons_and_links(server, browser, tmp_path):  # noqa: F811
    browser.get(server.url + "/")
    wait_text(browser, "#groups", "healthy")
    got = cards(browser)
    assert [(g, s) for g, s, _ in got] == [("split", "failing"), ("zk", "failing"), ("old", "unknown"),
                                          ("lonely", "degraded"), ("healthy", "ok")]
    reasons = {g: r for g, _, r in got}
    assert reasons["split"] == "split brain: s-a and s-b both live"
    assert reasons["zk"] == "quorum lost: no leader can be elected"
    assert reasons["old"].startswith("no data for 25 min") and "last seen live: o-a" in reasons["old"]
    assert reasons["lonely"] == "unprotected live l-a: backup l-b not answering"
    assert reasons["healthy"] == "live h-a, backup h-b waiting"
    old_card = card_text(browser, "old")
    assert "as last observed — live: o-a" in old_card and "(25 min ago)" in old_card
    keep_screenshot(browser, tmp_path, "overview-states")
    browser.execute_script("""document.querySelector('.group-card[data-group="split"] .reason a').click()""")
    assert "split brain in split" in wait_text(browser, "h2", "split brain in split")


def test_overview_refreshes_itself(server, browser, lakehouse):  # noqa: F811
    browser.get(server.url + "/")
    wait_text(browser, '.group-card[data-group="lonely"] .reason', "unprotected live")
    lakehouse.append("broker_state", [state_row("lonely", "l-b", "backup", False, ago_s=1.0)])  # the backup is back
    wait_text(browser, '.group-card[data-group="lonely"] .reason', "live l-a, backup l-b waiting", timeout=20)
    assert dict((g, s) for g, s, _ in cards(browser))["lonely"] == "ok"
