"""The overview's group state (dashboards/health.py) on tiny hand-made inputs: ok only on fresh data
that shows a live broker with a waiting backup; unknown, with the age, when the data is old."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dashboards.health import age_text, group_health, stale_after

NOW = datetime(2026, 11, 26, 3, 0, tzinfo=timezone.utc)
STALE = stale_after(5.0, 30.0)  # 45 s


def member(role: str, active: bool, reachable: bool = True, ago_s: float = 2.0, sync: bool | None = True) -> dict:
    return {"ts": NOW - timedelta(seconds=ago_s), "role": role, "active": active, "reachable": reachable,
            "replica_sync": sync}


def group(members: dict, kind: str = "artemis", live=None, **extra) -> dict:
    seen = [m["ts"] for m in members.values()]
    return {"group": "pair", "kind": kind, "members": members, "live": live if live is not None else
            [i for i, m in members.items() if m["active"]], "incidents": [], "risks": [], "quorum": None,
            "alerts": 0, "collector_errors": [], "last_seen": max(seen) if seen else None, **extra}


def test_stale_after_is_three_scrapes_plus_the_analysis_interval():
    assert stale_after(5.0, 30.0) == 45.0 and stale_after(1.0, 0.0) == 3.0


def test_healthy_pair_is_ok():
    h = group_health(group({"a": member("live", True), "b": member("backup", False)}), NOW, STALE)
    assert (h.state, h.reason) == ("ok", "live a, backup b waiting")
    assert h.age_s == pytest.approx(2.0)


def test_old_data_is_unknown_and_says_how_old_even_when_it_looked_healthy():
    h = group_health(group({"a": member("live", True, ago_s=1500), "b": member("backup", False, ago_s=1500)}),
                     NOW, STALE)
    assert h.state == "unknown"
    assert h.reason.startswith("no data for 25 min") and "last seen live: a" in h.reason
    assert h.age_s == pytest.approx(1500)


def test_never_observed_is_unknown():
    assert group_health(group({}), NOW, STALE).state == "unknown"


def test_backup_not_answering_is_an_unprotected_live():
    h = group_health(group({"a": member("live", True), "b": member("backup", False, reachable=False)}), NOW, STALE)
    assert (h.state, h.reason) == ("degraded", "unprotected live a: backup b not answering")


def test_backup_not_in_sync_is_degraded():
    h = group_health(group({"a": member("live", True), "b": member("backup", False, sync=False)}), NOW, STALE)
    assert h.state == "degraded" and "NOT synchronized" in h.reason


def test_a_member_with_old_data_among_fresh_ones_is_not_counted_as_a_backup():
    h = group_health(group({"a": member("live", True), "b": member("backup", False, ago_s=600)}), NOW, STALE)
    assert h.state == "degraded" and "no backup observed" in h.reason and "no recent data from b" in h.reason


def test_no_live_is_failing_and_names_what_each_member_said():
    h = group_health(group({"a": member("master", False, reachable=False), "b": member("slave", False, reachable=False)},
                           kind="activemq", live=["b"]), NOW, STALE)
    assert (h.state, h.reason) == ("failing", "no live broker: a not answering, b not answering")


def test_two_live_is_a_split_brain_linked_to_its_incident():
    grp = group({"a": member("live", True), "b": member("live", True)},
                incidents=[{"incident_id": "inc/1", "severity": "critical", "title": "split brain"}])
    h = group_health(grp, NOW, STALE)
    assert (h.state, h.reason, h.href) == ("failing", "split brain: a and b both live", "/incident/inc%2F1")


def test_an_open_risk_on_a_healthy_looking_pair_is_degraded_and_links_to_the_risks():
    risk = {"code": "stale-backup", "severity": "warn", "instance": "b", "message": "b's activation sequence is behind"}
    h = group_health(group({"a": member("live", True), "b": member("backup", False)}, risks=[risk]), NOW, STALE)
    assert (h.state, h.href) == ("degraded", "/risks")
    assert h.reason == "stale-backup on b: b's activation sequence is behind"


def test_zookeeper_quorum_states():
    def zk(quorum):
        return group({}, kind="zookeeper", quorum=quorum, last_seen=NOW - timedelta(seconds=3))

    present = {"status": "present", "leader": "zk1", "bare_majority": False, "voters": 3}
    assert group_health(zk(present), NOW, STALE).state == "ok"
    bare = group_health(zk({**present, "bare_majority": True}), NOW, STALE)
    assert bare.state == "degraded" and bare.reason.startswith("quorum at risk")
    assert group_health(zk({**present, "status": "lost", "leader": None}), NOW, STALE).state == "failing"


def test_kafka_members_all_serve():
    both = {"k1": member("broker", True), "k2": member("broker", True)}
    assert group_health(group(both, kind="kafka"), NOW, STALE).state == "ok"
    one_down = {"k1": member("broker", True), "k2": member("broker", False, reachable=False)}
    h = group_health(group(one_down, kind="kafka"), NOW, STALE)
    assert (h.state, h.reason) == ("degraded", "k2 not answering; k1 up")


@pytest.mark.parametrize("seconds, text", [(42, "42 s"), (1500, "25 min"), (11400, "3 h 10 min"), (187200, "2 d 4 h")])
def test_age_text(seconds, text):
    assert age_text(seconds) == text
