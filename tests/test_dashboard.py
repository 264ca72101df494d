"""The dashboard's pure parts on tiny gold tables written per contract: data selection and
aggregation, figures, layouts, auth, routing and the CLI. Fast; the browser tests are in
tests/test_dashboard_browser.py."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from dash import dcc

from brokerscope.cli import main
from dashboards import data as D
from dashboards.clock import UTC_CLOCK, Clock
from dashboards import layout as L
from dashboards.overview import group_statuses
from dashboards.app import PagePrefetch, create_app, referred_path, route, view_range, zoomed_range
from dashboards.figures import esc, incident_timeline, timeline_margins
from lakehouse.store import Lakehouse
from settings.dashboard import DashboardAuth, DashboardSettings, check_exposure

T0 = datetime(2026, 11, 23, 11, 0, tzinfo=timezone.utc)
XSS = '<img src=x onerror="document.title=\'pwned\'">'
INCIDENT = "inc-split-1"


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def tiny_lakehouse(root, xss: str = XSS) -> Lakehouse:
    """A split brain in group `pair` (art-a, art-b), one GC pause, a stuck queue named `xss`, the
    incident and its evidence: gold tables written per contract, plus a broker_state series."""
    lh = Lakehouse(root)
    lh.overwrite("role_intervals", [
        dict(interval_id="ia", kind="artemis", group_name="pair", instance="art-a", start_ts=at(0), end_ts=at(11),
             start_lower=None, end_upper=None, is_open=True, observations=12, unanswered_inside=0),
        dict(interval_id="ib", kind="artemis", group_name="pair", instance="art-b", start_ts=at(6), end_ts=at(11),
             start_lower=at(5), start_lower_state="inactive", is_open=True, observations=6, unanswered_inside=0),
    ])
    lh.overwrite("split_brain_windows", [dict(
        window_id="w1", kind="artemis", group_name="pair", instance_a="art-a", instance_b="art-b",
        certain_start=at(6.009), certain_end=at(11.004), possible_start=at(5.009), possible_end=None,
        certainty="certain", duration_s=4.995, enqueued_a=100, enqueued_b=60)])
    lh.overwrite("failover_events", [])
    lh.overwrite("gc_findings", [dict(
        finding_id="gc1", code="gc.pause-over-third-session", severity="error", target="art-a", group_name="pair",
        ts=at(4), file_id="f1", value=7000.0, threshold=6000.0, unit="ms", message="art-a paused 7.0 s",
        advice="tune the heap")])
    lh.overwrite("stuck_messages", [dict(
        finding_id="st1", code="no-consumers", severity="warn", certainty="certain", kind="artemis", group_name="pair",
        instance="art-b", destination=xss, start_ts=at(6), end_ts=at(11), is_open=True, duration_s=5.0,
        messages=40, message=f"{xss} holds 40 messages with no consumer", advice="add a consumer")])
    lh.overwrite("finding_causes", [dict(
        cause_id="c1", effect_table="split_brain_windows", effect_id="w1", cause_table="gc_findings",
        cause_id_ref="gc1", cause_code="gc.pause-over-third-session", group_name="pair", instance="art-a",
        cause_ts=at(4), effect_ts=at(6.009), lead_s=2.0, confidence="likely",
        message="art-a paused 7.0 s in a full GC at 11:00:04; art-b activated at 11:00:06")])
    lh.overwrite("incidents", [dict(
        incident_id=INCIDENT, cluster="pair", kind="artemis", severity="critical", status="open", start_ts=at(4),
        end_ts=at(11.004), duration_s=7.004, title="split brain in pair (certain, 5.0 s)",
        narrative="art-a paused 7.0 s in a full GC.\nart-b activated while art-a stayed live: both took messages.",
        advice="Enable a quorum of at least 3 pairs.\nKeep GC pauses under a third of session-ms.",
        instances="art-a,art-b", codes="split-brain,gc.pause-over-third-session,no-consumers", finding_count=3,
        has_split_brain=True, has_failover=False)])
    lh.overwrite("incident_evidence", [
        dict(incident_id=INCIDENT, source_table="split_brain_windows", source_id="w1", code="split-brain",
             severity="critical", group_name="pair", instance="art-a,art-b", start_ts=at(6.009), end_ts=at(11.004),
             message="art-a and art-b both live for 5.0 s"),
        dict(incident_id=INCIDENT, source_table="gc_findings", source_id="gc1", code="gc.pause-over-third-session",
             severity="error", group_name="pair", instance="art-a", start_ts=at(4), end_ts=at(4),
             message="art-a paused 7.0 s"),
        dict(incident_id=INCIDENT, source_table="stuck_messages", source_id="st1", code="no-consumers",
             severity="warn", group_name="pair", instance="art-b", start_ts=at(6), end_ts=at(11),
             message=f"{xss} holds 40 messages with no consumer"),
    ])
    state = []
    for i in range(12):
        for inst, active, enq in (("art-a", True, 1000 + 20 * i), ("art-b", i >= 6, 15 * max(0, i - 6))):
            ts = at(i + (0.004 if inst == "art-a" else 0.009))
            state.append(dict(obs_key=f"{inst}-{i}", ts=ts, obs_date=ts.date().isoformat(), kind="artemis",
                              group_name="pair", instance=inst, reachable=True, active=active,
                              role="live" if active else "backup", replica_sync=i < 4, connections=2 if active else 0,
                              total_enqueued=enq, total_dequeued=enq - 10))
    lh.overwrite("broker_state", state)
    return lh


@pytest.fixture
def gold(tmp_path):
    return D.Gold(tiny_lakehouse(tmp_path / "lh"), fresh_s=0)


def texts(component) -> str:
    """All text a person would read in a Dash component tree."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return " ".join(texts(c) for c in component)
    return texts(getattr(component, "children", None))


def find(component, cid: str):
    if isinstance(component, (list, tuple)):
        return next((f for f in (find(c, cid) for c in component) if f is not None), None)
    if getattr(component, "id", None) == cid:
        return component
    return find(getattr(component, "children", None), cid) if hasattr(component, "children") else None


# --- data ---------------------------------------------------------------------------------------------


def test_incident_bundle_gathers_evidence_findings_and_causes(gold):
    b = D.load_incident(gold, INCIDENT)
    assert [r["source_id"] for r in b.evidence] == ["gc1", "st1", "w1"]  # by start
    assert [w["window_id"] for w in b.findings["split_brain_windows"]] == ["w1"]
    assert [c["cause_id"] for c in b.causes] == ["c1"]
    tl = b.timeline
    assert tl.instances == ["art-a", "art-b"]
    assert [w["window_id"] for w in tl.split_brains] == ["w1"] and [g["finding_id"] for g in tl.gc_pauses] == ["gc1"]
    assert tl.bucket_s == 0 and set(tl.series) == {"art-a", "art-b"}
    # one point per observation; rates from the counters: art-a +20 per second
    assert len(tl.series["art-a"]["ts"]) == 12 and tl.series["art-a"]["in_per_s"][1:3].tolist() == [20.0, 20.0]


def test_new_table_versions_show_up_after_fresh_s(gold):
    assert len(D.incident_list(gold)) == 1
    rows = gold.lh.read("incidents").to_pylist()
    gold.lh.append("incidents", [{**rows[0], "incident_id": "inc-2", "title": "later"}])
    assert len(D.incident_list(gold)) == 2  # fresh_s=0: every read looks the version up
    slow = D.Gold(gold.lh, fresh_s=3600)
    assert len(D.incident_list(slow)) == 2
    gold.lh.append("incidents", [{**rows[0], "incident_id": "inc-3", "title": "even later"}])
    assert len(D.incident_list(slow)) == 2  # the cached version, until fresh_s has passed


def test_unknown_incident_and_missing_table_say_what_to_do(gold, tmp_path):
    with pytest.raises(D.NotFound, match="no incident 'nope'"):
        D.load_incident(gold, "nope")
    empty = D.Gold(Lakehouse(tmp_path / "empty"))
    with pytest.raises(D.MissingTable) as e:
        D.incident_list(empty)
    assert e.value.table == "incidents" and "brokerscope analyze" in str(e.value)


def test_a_unique_start_of_an_incident_id_opens_it_everywhere(gold):
    """The timeline and `brokerscope incidents` print 8 characters; the page, the report and the CLI take them."""
    assert D.load_incident(gold, "inc-spli").incident["incident_id"] == INCIDENT
    assert "split brain in pair" in texts(route(gold, "/incident/inc-spli"))
    assert client(gold).get("/report/inc-spli.md").status_code == 200
    assert D.resolve_incident_id(["abcd1234", "abcd9999"], "abcd1") == "abcd1234"
    with pytest.raises(D.NotFound, match=r"'abcd' is the start of 2 incident ids \(abcd1234, abcd9999\)"):
        D.resolve_incident_id(["abcd1234", "abcd9999"], "abcd")
    with pytest.raises(D.NotFound, match="at least its first 4 characters"):
        D.resolve_incident_id(["abcd1234"], "abc")


def test_long_ranges_are_aggregated_server_side():
    import pyarrow as pa

    n = 50_000
    ts = [T0 + timedelta(milliseconds=100 * i) for i in range(n)]
    state = pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "instance": ["a"] * n,
                      "connections": list(range(n)), "total_enqueued": [10 * i for i in range(n)],
                      "total_dequeued": [5 * i for i in range(n)]})
    series, bucket_s = D.bucketed_series(state, ts[0], ts[-1], 500)
    s = series["a"]
    assert bucket_s == pytest.approx(10.0, rel=0.01) and 490 <= len(s["ts"]) <= 501
    assert s["connections"][1] == pytest.approx(199, abs=1)  # the bucket's largest value
    assert s["in_per_s"][5] == pytest.approx(100.0)  # 10 messages per 0.1 s, whatever the bucket


def test_rates_are_not_negative_across_a_restart():
    import pyarrow as pa

    ts = [T0 + timedelta(seconds=i) for i in range(4)]
    state = pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "instance": ["a"] * 4,
                      "connections": [1, 1, 1, 1], "total_enqueued": [10, 20, 0, 5], "total_dequeued": [0, 0, 0, 0]})
    series, _ = D.bucketed_series(state, ts[0], ts[-1], 100)
    assert np.array_equal(series["a"]["in_per_s"], [np.nan, 10.0, np.nan, 5.0], equal_nan=True)


def test_overview_puts_the_worst_group_first(gold):
    lh = gold.lh
    lh.append("role_intervals", [dict(interval_id="q", kind="activemq", group_name="calm", instance="amq-a",
                                      start_ts=at(0), end_ts=at(11), is_open=True, observations=3, unanswered_inside=0)])
    groups = group_statuses(gold)
    assert [g["group"] for g in groups] == ["pair", "calm"]
    pair = groups[0]
    assert sorted(pair["live"]) == ["art-a", "art-b"] and [i["incident_id"] for i in pair["incidents"]] == [INCIDENT]
    card = texts(L.group_card(pair))
    assert "more than one live" in card and "art-b: live" in card


def test_overview_cards_say_the_state_why_and_how_old_and_refresh_themselves(gold):
    gold.clock = lambda: at(12)  # one second after the last observation: the data is fresh
    (pair,) = group_statuses(gold)
    assert pair["health"].state == "failing" and pair["health"].reason == "split brain: art-a and art-b both live"
    card = L.group_card(pair)
    assert card.to_plotly_json()["props"]["data-state"] == "failing"
    link = card.children[1].children  # the reason line, a link to the incident
    assert link.href == L.incident_href(INCIDENT) and link.children == pair["health"].reason
    gold.clock = lambda: at(12) + timedelta(minutes=25)  # nothing collected since: never "ok", never "failing"
    (pair,) = group_statuses(gold)
    assert pair["health"].state == "unknown" and pair["health"].reason.startswith("no data for 25 min")
    assert "as last observed — live: art-a, art-b" in texts(L.group_card(pair))
    c = client(gold)
    got = json.dumps(callback(c, "overview-body.children", {"overview-refresh.n_intervals": 3}, {},
                              "overview-refresh.n_intervals"))
    assert "no data for 25 min" in got and "unknown" in got


def test_finding_views_filter_by_group_and_time_and_link_to_incidents(gold):
    view = D.VIEW_BY_PATH["/stuck"]
    got, total, groups = D.finding_rows(gold, view, group="pair")
    assert total == 1 and groups == ["pair"] and got[0]["destination"] == XSS
    assert D.finding_rows(gold, view, group="other")[1] == 0
    assert D.finding_rows(gold, view, since=at(7))[1] == 0
    assert D.incident_of_findings(gold)["st1"] == INCIDENT
    page = route(gold, "/stuck")
    table = find(page, "findings")
    assert XSS in texts(table) and "open incident" in texts(table)


# --- figures --------------------------------------------------------------------------------------------


def test_timeline_figure_draws_roles_windows_markers_and_series(gold):
    fig = incident_timeline(D.load_incident(gold, INCIDENT).timeline, "split brain in <b>pair</b>")
    names = [t.name for t in fig.data]
    assert "active (observed)" in names and "GC pause" in names
    assert {"art-a connections", "art-b in/s", "art-b out/s"} <= set(names)
    shapes = {s.name: s for s in fig.layout.shapes}
    certain, possible = shapes["split brain (certain)"], shapes["split brain (possible)"]
    assert certain.fillcolor != possible.fillcolor and possible.line.dash == "dot"
    assert certain.x0 == wall(at(6.009)) and certain.x1 == wall(at(11.004))  # Plotly positions: naive UTC
    assert fig.layout.title.text == "split brain in &lt;b&gt;pair&lt;/b&gt;"
    assert [b.label for b in fig.layout.xaxis.rangeselector.buttons] == ["all", "1 h", "10 min", "1 min"]
    # the state bars tell the whole story: art-b waited as backup until 11:00:06, then was live
    standby = next(t for t in fig.data if t.name == "state: standby")
    assert list(standby.y) == ["art-b"] and standby.base[0] == wall(at(0.009)) and standby.x[0] == 5000.0
    active = next(t for t in fig.data if t.name == "state: active")
    assert sorted(active.y) == ["art-a", "art-b"]
    assert fig.layout.xaxis3.title.text == "time (UTC)" and " UTC<br>" in standby.hovertext[0] + "<br>"


def wall(ts: datetime, zone: str = "UTC") -> datetime:
    return ts.astimezone(ZoneInfo(zone)).replace(tzinfo=None)


def test_timeline_in_the_browser_zone_moves_every_position_and_names_the_zone(gold):
    clk = Clock.named("America/New_York")  # 2026-11-23: UTC-5
    fig = incident_timeline(D.load_incident(gold, INCIDENT).timeline, "t", clk)
    shapes = {s.name: s for s in fig.layout.shapes}
    assert shapes["split brain (certain)"].x0 == at(6.009).replace(tzinfo=None) - timedelta(hours=5)
    standby = next(t for t in fig.data if t.name == "state: standby")
    assert standby.base[0] == wall(at(0.009), "America/New_York") and standby.x[0] == 5000.0
    assert "06:00:00.009 America/New_York" in standby.hovertext[0]
    series = next(t for t in fig.data if t.name == "art-a connections")
    plain = next(t for t in incident_timeline(D.load_incident(gold, INCIDENT).timeline, "t").data if t.name == series.name)
    assert (np.asarray(plain.x, dtype="datetime64[us]") - np.asarray(series.x, dtype="datetime64[us]")
            == np.timedelta64(5, "h")).all()
    assert fig.layout.xaxis.range[0] == wall(D.load_incident(gold, INCIDENT).timeline.start, "America/New_York")
    assert fig.layout.xaxis3.title.text == "time (America/New_York)"


def test_a_zone_the_machine_does_not_know_is_utc_not_a_guess():
    assert Clock.named("Mars/Olympus_Mons") is UTC_CLOCK and Clock.named("") is UTC_CLOCK
    clk = Clock.named("Asia/Kolkata")
    assert clk.to_utc(datetime(2026, 11, 23, 16, 30)) == datetime(2026, 11, 23, 11, 0, tzinfo=timezone.utc)


def test_user_names_are_escaped_in_every_figure_string(tmp_path):
    evil = "<script>alert(1)</script>"
    lh = tiny_lakehouse(tmp_path / "lh")
    rows = lh.read("role_intervals").to_pylist()
    for r in rows:
        r["instance"] = evil + r["instance"]
    lh.overwrite("role_intervals", rows)
    fig = incident_timeline(D.load_incident(D.Gold(lh), INCIDENT).timeline, evil)
    strings = list(_strings(json.loads(fig.to_json())))
    assert not [s for s in strings if "<script" in s]
    assert any(esc(evil) + "art-a" in s for s in strings)  # tick labels, hover text
    assert esc(evil) in fig.layout.title.text


def _strings(o):
    if isinstance(o, dict):
        for v in o.values():
            yield from _strings(v)
    elif isinstance(o, list):
        for v in o:
            yield from _strings(v)
    elif isinstance(o, str):
        yield o


def test_view_ranges_and_zoom(gold):
    inc = D.incident(gold, INCIDENT)
    lo, hi = view_range(gold, inc, "incident")
    assert lo < at(4) and hi > at(11.004)
    assert view_range(gold, inc, "1h") == (at(4) - timedelta(hours=1), at(11.004) + timedelta(hours=1))
    assert zoomed_range(["2026-11-23 11:00:03.5", "2026-11-23 11:00:07"]) == (at(3.5), at(7))
    assert zoomed_range("reset") is None and zoomed_range(["x", "y"]) is None


# --- layouts --------------------------------------------------------------------------------------------


def test_incident_layout_shows_narrative_windows_advice_and_evidence_as_text(gold):
    page = route(gold, "/incident/" + INCIDENT)
    assert texts(find(page, "incident-title")) == "split brain in pair (certain, 5.0 s)"
    assert "both took messages" in texts(find(page, "narrative"))
    windows = texts(find(page, "windows"))
    assert "2026-11-23 11:00:06.009 UTC → 2026-11-23 11:00:11.004 UTC" in windows and "art-a + art-b" in windows
    assert "Enable a quorum of at least 3 pairs." in texts(find(page, "advice"))
    evidence = find(page, "evidence")
    assert f"{XSS} holds 40 messages" in texts(evidence)
    assert not any(isinstance(c, dcc.Markdown) for c in _walk(page))  # text only, never markup
    assert find(page, "report-html").href == f"/report/{INCIDENT}.html"


def _walk(c):
    yield c
    kids = getattr(c, "children", None)
    for k in kids if isinstance(kids, (list, tuple)) else [kids] if kids is not None else []:
        if not isinstance(k, str):
            yield from _walk(k)


def test_missing_incident_tables_give_a_page_naming_table_and_command(tmp_path):
    lh = tiny_lakehouse(tmp_path / "lh")
    import shutil

    shutil.rmtree(lh.uri("incidents"))
    gold = D.Gold(lh)
    page = route(gold, "/incident/" + INCIDENT)
    assert texts(find(page, "missing-command")) == "brokerscope analyze -c CFG"
    assert "incidents" in texts(page)
    overview = route(gold, "/")
    assert "pair" in texts(overview) and "brokerscope analyze -c CFG" in texts(overview)


def test_an_empty_lakehouse_says_how_to_fill_it(tmp_path):
    page = route(D.Gold(Lakehouse(tmp_path / "lh")), "/")
    assert "brokerscope analyze" in texts(page) and "brokerscope replay" in texts(page)


# --- app, auth, settings, CLI ----------------------------------------------------------------------------


def client(gold, auth: DashboardAuth | None = None, password=None):
    app = create_app(gold, DashboardSettings(auth=auth or DashboardAuth()), password)
    return app.server.test_client()


def test_report_route_serves_html_and_markdown(gold):
    c = client(gold)
    r = c.get(f"/report/{INCIDENT}.html")
    assert r.status_code == 200 and r.mimetype == "text/html" and "split brain in pair" in r.get_data(as_text=True)
    md = c.get(f"/report/{INCIDENT}.md")
    assert md.status_code == 200 and "attachment" in md.headers["Content-Disposition"]
    assert c.get("/report/nope.html").status_code == 404
    assert c.get(f"/report/{INCIDENT}.pdf").status_code == 404


def test_basic_auth_guards_pages_callbacks_and_reports(gold):
    c = client(gold, DashboardAuth(mode="basic", username="sre", password_env="X"), "s3cret")
    for path in ("/", f"/report/{INCIDENT}.html", "/_dash-layout"):
        assert c.get(path).status_code == 401
    bad = base64.b64encode(b"sre:wrong").decode()
    assert c.get("/", headers={"Authorization": f"Basic {bad}"}).status_code == 401
    good = base64.b64encode(b"sre:s3cret").decode()
    r = c.get("/", headers={"Authorization": f"Basic {good}"})
    assert r.status_code == 200 and r.headers["X-Frame-Options"] == "DENY"


def test_proxy_auth_trusts_only_the_proxy_and_its_header(gold):
    c = client(gold, DashboardAuth(mode="proxy", proxy_header="X-Auth-User", trusted_proxies=["127.0.0.1"]))
    assert c.get("/").status_code == 401  # from the proxy's address, without the header
    assert c.get("/", headers={"X-Auth-User": "ana"}).status_code == 200
    assert c.get("/", headers={"X-Auth-User": "ana"}, environ_base={"REMOTE_ADDR": "10.1.2.3"}).status_code == 403


def test_exposure_and_password_errors_name_the_fix(tmp_path, monkeypatch):
    check_exposure(DashboardSettings(), "127.0.0.1")
    with pytest.raises(ValueError, match="refusing to listen on 0.0.0.0 without authentication"):
        check_exposure(DashboardSettings(), "0.0.0.0")
    check_exposure(DashboardSettings(auth=DashboardAuth(mode="basic", password_env="P")), "0.0.0.0")
    monkeypatch.delenv("P", raising=False)
    with pytest.raises(ValueError, match="environment variable P is not set"):
        DashboardAuth(mode="basic", password_env="P").password()
    (tmp_path / "pw").write_text("hunter2\n")
    assert DashboardAuth(mode="basic", password_file=tmp_path / "pw").password() == "hunter2"


def _config(tmp_path, lakehouse) -> str:
    p = tmp_path / "bs.yaml"
    p.write_text(f"lakehouse: {lakehouse}\ntargets: []\n")
    return str(p)


def test_cli_report_writes_a_file_and_refuses_unknown_ids(tmp_path, capsys):
    tiny_lakehouse(tmp_path / "lh")
    cfg = _config(tmp_path, tmp_path / "lh")
    assert main(["report", INCIDENT, "-c", cfg, "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "split brain in pair" in (tmp_path / "r.md").read_text()
    assert main(["report", "nope", "-c", cfg]) == 2
    assert "no incident 'nope'" in capsys.readouterr().err


def test_cli_dashboard_refuses_exposure_and_a_missing_lakehouse(tmp_path, capsys):
    cfg = _config(tmp_path, tmp_path / "nothing-here")
    assert main(["dashboard", "-c", cfg, "--host", "0.0.0.0"]) == 2
    assert "without authentication" in capsys.readouterr().err
    assert main(["dashboard", "-c", cfg]) == 2
    err = capsys.readouterr().err
    assert "no lakehouse at" in err and "brokerscope analyze" in err


def test_every_page_renders_and_says_what_is_missing(gold):
    lh = gold.lh
    lh.overwrite("replication_findings", [dict(
        finding_id="rf1", code="replication-lag", severity="warn", certainty="certain", kind="kafka", group_name="dc1",
        flow="mirrormaker2", topic=XSS, partition=0, start_ts=at(1), end_ts=at(9), is_open=False, duration_s=8.0,
        value_max=120.0, unit="s", message="lag 120 s", advice="scale the connector")])
    lh.overwrite("replication_lag", [dict(
        ts=at(i), obs_date=at(i).date().isoformat(), kind="kafka", group_name="dc1", instance="mm2", flow="mirrormaker2",
        topic=XSS, partition=0, observed=True, lag_s=float(10 * i), lag_s_method="interpolated", window_commits=1,
        window_complete=1.0) for i in range(10)])
    lag = route(gold, "/lag")
    assert "lag 120 s" in texts(find(lag, "findings")) and XSS in texts(find(lag, "findings"))
    fig = find(lag, "lag-figure").figure
    assert fig.data[0].name == esc(f"mirrormaker2 {XSS} 0") and list(fig.data[0].y) == [float(10 * i) for i in range(10)]
    # the lag chart follows the page's filters (a group without lag says so)
    filtered = callback(client(gold), "findings-content.children", {"f-group.value": "elsewhere", "f-since.value": "",
                                                                   "f-until.value": ""}, {"url.pathname": "/lag"},
                        "f-group.value")
    assert "No replication lag observed for this group and time range." in json.dumps(filtered)
    assert "art-a paused 7.0 s" in texts(route(gold, "/gc"))
    assert "open incident" in texts(find(route(gold, "/gc"), "findings"))  # gc1 is evidence of the incident
    assert texts(find(route(gold, "/zookeeper"), "missing-command")) == "brokerscope analyze -c CFG"
    assert "brokerscope run -c CFG" in texts(find(route(gold, "/alerts"), "missing-command"))
    assert "There is no page /nope" in texts(route(gold, "/nope"))


def callback(c, output: str, inputs: dict, state: dict, changed: str):
    """POST one Dash callback as the browser does; the JSON answer."""
    cid, prop = output.split(".")
    body = {"output": output, "outputs": {"id": cid, "property": prop},
            "inputs": [{"id": k.split(".")[0], "property": k.split(".")[1], "value": v} for k, v in inputs.items()],
            "state": [{"id": k.split(".")[0], "property": k.split(".")[1], "value": v} for k, v in state.items()],
            "changedPropIds": [changed]}
    r = c.post("/_dash-update-component", json=body)
    assert r.status_code in (200, 204), r.get_data(as_text=True)[:500]
    return r.get_json() if r.status_code == 200 else None


def test_callbacks_filter_views_and_redraw_the_timeline(gold):
    c = client(gold)
    got = callback(c, "findings-content.children", {"f-group.value": "pair", "f-since.value": "", "f-until.value": ""},
                   {"url.pathname": "/stuck"}, "f-group.value")
    assert "1 finding(s)" in json.dumps(got) and json.dumps(XSS)[1:-1] in json.dumps(got)  # as a text child
    got = callback(c, "findings-content.children", {"f-group.value": None, "f-since.value": "2026-11-23T11:00:07Z",
                                                     "f-until.value": ""}, {"url.pathname": "/stuck"}, "f-since.value")
    assert "0 finding(s)" in json.dumps(got) and "No stuck messages findings for this group and time range." in json.dumps(got)
    got = callback(c, "findings-content.children", {"f-group.value": None, "f-since.value": "yesterday-ish",
                                                     "f-until.value": ""}, {"url.pathname": "/stuck"}, "f-since.value")
    assert "time filter:" in json.dumps(got) and "is not a time" in json.dumps(got)
    fig, err, since, until = timeline_callback(c, "range-choice.value", **{"range-choice": "1h"})
    assert fig["layout"]["xaxis"]["range"][0].startswith("2026-11-23T10:00:04") and (err, since, until) == ("", "", "")
    fig, *_ = timeline_callback(c, "zoom.data", **{"range-choice": "1h", "zoom": ["2026-11-23 11:00:05", "2026-11-23 11:00:08"]})
    assert [r[:19] for r in fig["layout"]["xaxis"]["range"]] == ["2026-11-23T11:00:05", "2026-11-23T11:00:08"]



def layout_page(layout: dict):
    """(the page's children, page-path) of a /_dash-layout answer."""
    kids = {k["props"]["id"]: k["props"] for k in layout["props"]["children"]}
    return kids["page"].get("children"), kids["page-path"].get("data")


def test_a_typed_url_gets_its_first_view_in_the_layout_without_the_callback_chain(gold):
    """/_dash-layout carries the page of the URL that asked (its Referer): the browser draws the
    incident from the layout, with no callback round trip before the first paint."""
    c = client(gold)
    page = c.get(f"/incident/{INCIDENT}")  # the HTML: starts the page's server side (PagePrefetch)
    assert page.status_code == 200 and page.headers["Referrer-Policy"] == "same-origin"
    got = c.get("/_dash-layout", headers={"Referer": f"http://localhost/incident/{INCIDENT}"})
    children, path = layout_page(got.get_json())
    assert path == f"/incident/{INCIDENT}"
    text = json.dumps(children)
    assert '"incident-title"' in text and "split brain in pair" in text and '"timeline"' in text and '"evidence"' in text
    # no Referer (or another origin's): the empty shell, the page then comes from the callback, as before
    for headers in ({}, {"Referer": f"http://evil.example/incident/{INCIDENT}"}, {"Referer": "not a url"}):
        assert layout_page(c.get("/_dash-layout", headers=headers).get_json()) == (None, None), headers
    deps = c.get("/_dash-dependencies").get_json()
    (ask,) = [d for d in deps if d["output"] == "page-request.data"]  # url → page-request: in the browser
    assert ask["clientside_function"] and ask["inputs"] == [{"id": "url", "property": "pathname"}]
    assert ask["state"] == [{"id": "page-path", "property": "data"}]
    (build,) = [d for d in deps if "page.children" in d["output"]]  # only a path the page does not hold
    assert build["inputs"] == [{"id": "page-request", "property": "data"}] and build["prevent_initial_call"]
    # an in-app link: the callback renders the page and says which one the page holds now
    body = {"output": "..page.children...page-path.data..",
            "outputs": [{"id": "page", "property": "children"}, {"id": "page-path", "property": "data"}],
            "inputs": [{"id": "page-request", "property": "data", "value": "/stuck"}], "state": [],
            "changedPropIds": ["page-request.data"]}
    r = c.post("/_dash-update-component", json=body).get_json()["response"]
    assert r["page-path"]["data"] == "/stuck" and "1 finding(s)" in json.dumps(r["page"]["children"])


def test_referred_path_and_the_page_prefetch():
    assert referred_path("http://127.0.0.1:8050/incident/a%20b?x=1", "127.0.0.1:8050") == "/incident/a%20b"
    assert referred_path("http://127.0.0.1:8050/incident/x", "localhost:8050") is None
    assert referred_path("javascript:alert(1)", "127.0.0.1:8050") is None and referred_path(None, "h") is None
    built = []

    def build(path):
        built.append(path)
        return f"page {path}"

    pre = PagePrefetch(build, ttl_s=60)
    pre.start("/incident/a%20b")
    pre.start("/incident/a b")  # the same page, pending: not built twice
    assert pre.take("/incident/a b") == "page /incident/a%20b" and built == ["/incident/a%20b"]
    assert pre.take("/incident/a b") == "page /incident/a b" and len(built) == 2  # used once: built again
    stale = PagePrefetch(build, ttl_s=0)
    stale.start("/x")
    assert stale.take("/x") == "page /x" and built[-2:] == ["/x", "/x"]  # too old: built again


def test_the_timeline_margins_hold_its_legend_and_labels():
    """Plotly grows a margin that is too narrow by drawing the figure a second time; the margins
    are estimated wide enough from the texts (the browser test checks Plotly kept them)."""
    narrow = timeline_margins([], [], ["a"])
    assert narrow == dict(l=14 + 7 * 5, r=10, t=90, b=70)
    m = timeline_margins([type("T", (), {"name": "x" * 20, "showlegend": None})()],
                         [dict(name="no live instance (possible)", showlegend=True)], ["a-much-longer-broker-name"])
    assert m["l"] >= 7 * 25 and m["r"] >= 6 * len("no live instance (possible)") + 45


def timeline_callback(c, changed: str, **values):
    """The incident timeline's callback as the browser posts it: (figure, error, from, until)."""
    inputs = {"range-choice.value": "incident", "zoom.data": None, "range-from.value": "", "range-until.value": "",
              "zone-choice.value": "utc"}
    inputs.update({k + (".data" if k == "zoom" else ".value"): v for k, v in values.items() if k != "browser_zone"})
    body = {"output": "..timeline.figure...range-error.children...range-from.value...range-until.value..",
            "outputs": [{"id": i, "property": p} for i, p in (("timeline", "figure"), ("range-error", "children"),
                                                              ("range-from", "value"), ("range-until", "value"))],
            "inputs": [{"id": k.split(".")[0], "property": k.split(".")[1], "value": v} for k, v in inputs.items()],
            "state": [{"id": "incident-id", "property": "data", "value": INCIDENT},
                      {"id": "browser-zone", "property": "data", "value": values.get("browser_zone")}],
            "changedPropIds": [changed]}
    r = c.post("/_dash-update-component", json=body)
    assert r.status_code == 200, r.get_data(as_text=True)[:500]
    got = r.get_json()["response"]
    return (got.get("timeline", {}).get("figure"), got.get("range-error", {}).get("children"),
            got.get("range-from", {}).get("value"), got.get("range-until", {}).get("value"))


def test_a_typed_range_in_the_browser_zone_is_drawn_in_that_zone(gold):
    c = client(gold)
    # 06:00:02 to 06:00:09 in New York is 11:00:02 to 11:00:09 UTC (2026-11-23, UTC-5)
    fig, err, since, until = timeline_callback(c, "range-from.value", **{
        "range-from": "2026-11-23 06:00:02", "range-until": "2026-11-23T06:00:09", "zone-choice": "local",
        "browser_zone": "America/New_York"})
    assert err == "" and (since, until) == ("2026-11-23 06:00:02", "2026-11-23T06:00:09")
    assert [r[:19] for r in fig["layout"]["xaxis"]["range"]] == ["2026-11-23T06:00:02", "2026-11-23T06:00:09"]
    assert fig["layout"]["xaxis3"]["title"]["text"] == "time (America/New_York)"
    # the same text in UTC is five hours later on the axis; an offset in the text wins over the zone
    fig, *_ = timeline_callback(c, "zone-choice.value", **{"range-from": "2026-11-23 11:00:02",
                                                           "range-until": "2026-11-23T11:00:09-00:00"})
    assert [r[:19] for r in fig["layout"]["xaxis"]["range"]] == ["2026-11-23T11:00:02", "2026-11-23T11:00:09"]
    # a zoom on the New York axis comes back to UTC correctly
    fig, *_ = timeline_callback(c, "zoom.data", **{"zoom": ["2026-11-23 06:00:05", "2026-11-23 06:00:08"],
                                                   "zone-choice": "local", "browser_zone": "America/New_York"})
    assert [r[:19] for r in fig["layout"]["xaxis"]["range"]] == ["2026-11-23T06:00:05", "2026-11-23T06:00:08"]
    # bad input says what is wrong and keeps the figure; a range button clears what was typed
    fig, err, *_ = timeline_callback(c, "range-until.value", **{"range-from": "11:00", "range-until": ""})
    assert fig is None and "is not a time" in err
    fig, err, *_ = timeline_callback(c, "range-until.value", **{"range-from": "2026-11-23T11:00:09Z",
                                                                "range-until": "2026-11-23T11:00:02Z"})
    assert fig is None and "must be before" in err
    fig, err, since, until = timeline_callback(c, "range-choice.value", **{"range-choice": "incident",
                                                                           "range-from": "2026-11-23T11:00:09Z"})
    assert fig is not None and (err, since, until) == ("", "", "")


def test_alerts_show_on_the_timeline_overview_and_history_with_links(gold):
    ann = json.dumps({"summary": f"split brain in pair on {XSS}", "incident_id": INCIDENT})
    gold.lh.overwrite("alert_history", [
        dict(fingerprint="fp1", alertname="SplitBrain", severity="critical", cluster="pair", status="firing",
             starts_at=at(6.009), changed_at=at(7), labels_json="{}", annotations_json=ann),
        dict(fingerprint="fp2", alertname="FailoverHappened", severity="warning", cluster="pair", status="firing",
             starts_at=at(1), changed_at=at(2), labels_json="{}", annotations_json="{}"),
        dict(fingerprint="fp2", alertname="FailoverHappened", severity="warning", cluster="pair", status="resolved",
             starts_at=at(1), ends_at=at(3), changed_at=at(3), labels_json="{}", annotations_json="{}"),
        dict(fingerprint="fp9", alertname="SplitBrain", severity="critical", cluster="other", status="firing",
             starts_at=at(1), changed_at=at(1), labels_json="{}", annotations_json="{}"),
    ])
    gold.lh.overwrite("alert_notifications", [
        dict(notification_id="n1", receiver="oncall", receiver_type="webhook", group_key="{}", seq=1, status="firing",
             reason="first notification", firing_fingerprints=["fp1"], resolved_fingerprints=[], attempt=1,
             outcome="sent", sent_at=at(7.5)),
        dict(notification_id="n2", receiver="oncall", receiver_type="webhook", group_key="{}", seq=1, status="firing",
             reason="first notification", firing_fingerprints=["fp9"], resolved_fingerprints=[], attempt=1,
             outcome="sent", sent_at=at(7.5)),
    ])
    tl = D.load_incident(gold, INCIDENT).timeline
    assert [a["text"] for a in tl.alerts] == ["firing: FailoverHappened", "resolved: FailoverHappened",
                                              "firing: SplitBrain", "sent to oncall (firing)"]
    fig = incident_timeline(tl, "t")
    assert "🔔 sent to oncall (firing)" in [a.text for a in fig.layout.annotations]
    groups = {g["group"]: g for g in group_statuses(gold)}
    assert groups["pair"]["alerts"] == 1 and groups["other"]["alerts"] == 1  # fp2 was resolved
    page = route(gold, "/alerts")
    table = find(page, "findings")
    assert f"split brain in pair on {XSS}" in texts(table) and "open incident" in texts(table)


def test_zookeeper_elections_and_lease_handovers_are_markers(gold):
    gold.lh.overwrite("zk_findings", [dict(
        finding_id="zf1", code="zk.lock-handover", severity="warn", ensemble="zk1", group_name="pair", instance="art-b",
        start_ts=at(5.5), end_ts=at(6.2), observations=2, message="the lock passed from art-a's session to art-b")])
    gold.lh.overwrite("zk_elections", [dict(
        election_id="e1", ensemble="zk1", old_leader="zk-1", new_leader="zk-2", old_last_seen=at(3), old_gone_seen=at(4),
        new_first_seen=at(5), elected_at=at(4.6), duration_upper_s=1.6, cause="old leader unanswered")])
    fig = incident_timeline(D.load_incident(gold, INCIDENT).timeline, "t")
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["ZooKeeper election"].y) == ["ZooKeeper zk1"]
    assert "zk-1 → zk-2" in by_name["ZooKeeper election"].hovertext[0]
    assert list(by_name["lease handover / loss"].y) == ["ZooKeeper zk1"]
    assert "ZooKeeper zk1" in fig.layout.yaxis.categoryarray


def test_an_ensemble_only_incident_draws_zookeeper_rows(gold):
    gold.lh.append("incidents", [dict(
        incident_id="inc-zk", cluster="zk1", kind="zookeeper", severity="error", status="closed", start_ts=at(3),
        end_ts=at(5), duration_s=2.0, title="quorum lost in zk1", narrative="zk-1 stopped answering.",
        advice="run 5 servers", instances="zk-1,zk-2", codes="zk.quorum-lost", finding_count=0,
        has_split_brain=False, has_failover=False)])
    gold.lh.overwrite("zk_elections", [dict(
        election_id="e1", ensemble="zk1", old_leader="zk-1", new_leader="zk-2", old_last_seen=at(3), old_gone_seen=at(4),
        new_first_seen=at(5), elected_at=None, duration_upper_s=2.0, cause="quorum lost")])
    page = route(gold, "/incident/inc-zk")
    assert texts(find(page, "incident-title")) == "quorum lost in zk1" and texts(find(page, "windows")) == ""
    fig = find(page, "timeline").figure
    assert [t.name for t in fig.data] == ["ZooKeeper election"] and list(fig.data[0].y) == ["ZooKeeper zk1"]


# --- DNS rebinding and Content-Security-Policy (P11) -----------------------------------------------


def test_host_header_is_checked_against_the_bind_address_on_a_real_server(gold):
    """A page on evil.example whose name re-resolves to 127.0.0.1 sends `Host: evil.example`: refused."""
    import http.client

    from dashboards.app import DashboardServer

    with DashboardServer(create_app(gold, DashboardSettings(), bind_host="127.0.0.1"), "127.0.0.1", 0) as srv:
        def get(host: str) -> tuple[int, str]:
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            conn.request("GET", "/", headers={"Host": host})
            r = conn.getresponse()
            body = r.read().decode()
            conn.close()
            return r.status, body

        for host in (f"127.0.0.1:{srv.port}", f"localhost:{srv.port}", "LOCALHOST"):
            assert get(host)[0] == 200, host
        status, body = get(f"evil.example:{srv.port}")
        assert status == 421 and "dashboard.allowed_hosts" in body and "evil.example" in body
        assert get("127.0.0.1.evil.example")[0] == 421


def test_allowed_hosts_setting_names_the_hosts_served(gold):
    c = create_app(gold, DashboardSettings(allowed_hosts=["dash.example.org"])).server.test_client()
    assert c.get("/", headers={"Host": "dash.example.org:8443"}).status_code == 200
    assert c.get("/", headers={"Host": "localhost"}).status_code == 421
    anyhost = create_app(gold, DashboardSettings(allowed_hosts=["*"])).server.test_client()
    assert anyhost.get("/", headers={"Host": "whatever"}).status_code == 200


def test_pages_carry_a_content_security_policy_that_allows_only_our_scripts(gold):
    c = client(gold)
    csp = c.get("/").headers["Content-Security-Policy"]
    assert "script-src 'self' 'sha256-" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    report = c.get(f"/report/{INCIDENT}.html").headers["Content-Security-Policy"]
    assert report.startswith("default-src 'none'") and "connect-src" not in report  # self-contained: fetches nothing


def test_overview_lists_a_replication_cluster_the_kafka_protocol_reads_cannot_reach(gold):
    def answer(s, cluster, call, error=None):
        return dict(obs_key=f"k{s}{cluster}{call}", ts=at(s), obs_date=at(s).date().isoformat(), replication="orders-dr",
                    group_name="kafka-primary", cluster=cluster, call=call, fact="answer", answered=error is None,
                    error=error, error_kind=None if error is None else "timeout")
    refused = "orders-dr: dr (127.0.0.1:9093): no answer within the timeout (2s); is the cluster up?"
    gold.lh.append("kafka_offsets", [answer(1, "dr", "committed"), answer(1, "primary", "groups"),
                                     answer(2, "dr", "committed", refused), answer(2, "primary", "groups"),
                                     answer(2, "dr", "log_offsets", f"not asked in this round: {refused}")])
    groups = {g["group"]: g for g in group_statuses(gold)}
    (err,) = groups["kafka-primary"]["collector_errors"]
    assert err["target"] == "orders-dr/dr" and err["error"] == refused
    assert "collector: orders-dr/dr not answering (timeout)" in texts(L.group_card(groups["kafka-primary"]))
    gold.lh.append("kafka_offsets", [answer(3, "dr", "committed"), answer(3, "primary", "groups")])
    assert "kafka-primary" not in {g["group"] for g in group_statuses(gold)}  # answering again: nothing to say
