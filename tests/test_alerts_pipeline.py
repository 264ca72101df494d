"""The alert pipeline (alerts/pipeline.py): the pure stages (should_notify, reconcile, group) and
whole ticks over a real Delta lakehouse delivering to a real local HTTP receiver — once, with the
resolve, across a restart, through a receiver outage; and (slow) an alerter killed with SIGKILL
while a slow receiver holds its request, then restarted."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from alerts.notify_log import LogEntry, Tracked
from alerts.pipeline import (AlertPipeline, Decision, group_alerts, group_key_of, receiver_timing, reconcile,
                             should_notify)
from alerts.receivers import IDEMPOTENCY_HEADER
from alerts.rules import Alert
from lakehouse.store import Lakehouse
from settings import config_from_dict
from settings.alerts import AlertsConfig, ReceiverConfig
from tests.alert_servers import RecordingReceiver, wait_for
from tests.servers import free_port

T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


# --- should_notify: Alertmanager's timers and needsUpdate ----------------------------------------


def entry(firing=(), resolved=(), sent_s=0.0) -> LogEntry:
    return LogEntry("r", "{}:{}", 1, frozenset(firing), frozenset(resolved), at(sent_s))


def decide(e, firing, resolved=(), now_s=100.0, send_resolved=True, group_wait=0.0, group_interval=10.0,
           repeat=3600.0, since_s=0.0) -> Decision:
    return should_notify(e, set(firing), set(resolved), now=at(now_s), send_resolved=send_resolved,
                         group_wait=group_wait, group_interval=group_interval, repeat_interval=repeat,
                         group_since=at(since_s))


@pytest.mark.parametrize("e, firing, resolved, kw, expected", [
    (None, {"a"}, (), {}, Decision(True, "first notification")),
    (None, (), {"a"}, {}, Decision(False, "nothing firing, and nothing was sent before")),
    (None, {"a"}, (), {"group_wait": 30, "since_s": 90}, Decision(False, "group_wait: first notification at 12:02:00.000")),
    (None, {"a"}, (), {"group_wait": 30, "since_s": 70}, Decision(True, "first notification")),
    (entry({"a"}, sent_s=95), {"a", "b"}, (), {}, Decision(False, "group_interval: next flush at 12:01:45.000")),
    (entry({"a"}, sent_s=50), {"a", "b"}, (), {}, Decision(True, "new alerts added")),
    (entry({"a", "b"}, sent_s=50), {"a"}, {"b"}, {}, Decision(True, "some alerts resolved")),
    (entry({"a", "b"}, sent_s=50), {"a"}, {"b"}, {"send_resolved": False}, None),
    (entry({"a"}, sent_s=50), (), {"a"}, {"send_resolved": False}, Decision(True, "all alerts resolved")),
    (entry((), {"a"}, sent_s=50), (), (), {}, Decision(False, "all resolved, and already notified")),
    (entry({"a"}, sent_s=50), {"a"}, (), {}, Decision(False, "unchanged since 12:00:50.000; repeat at 13:00:50.000")),
    (entry({"a"}, sent_s=50), {"a"}, (), {"repeat": 40}, Decision(True, "repeat interval elapsed")),
    # after "all alerts resolved" the group is new (Alertmanager deletes it): group_wait from the first
    # alert, not group_interval from that notification
    (entry((), {"a"}, sent_s=95), {"b"}, (), {"since_s": 99}, Decision(True, "first notification")),
    (entry((), {"a"}, sent_s=95), {"b"}, (), {"group_wait": 30, "since_s": 99},
     Decision(False, "group_wait: first notification at 12:02:09.000")),
    (entry((), {"a"}, sent_s=95), (), {"b"}, {}, Decision(False, "all resolved, and already notified")),
])
def test_should_notify(e, firing, resolved, kw, expected):
    got = decide(e, firing, resolved, **kw)
    if expected is None:  # send_resolved false: a partial resolve waits for the next real change
        assert got.notify is False and got.reason.startswith("unchanged since")
    else:
        assert got == expected


def test_repeat_interval_is_rounded_up_to_group_interval_and_alertmanager_receivers_repush():
    acfg = AlertsConfig(group_interval=7, repeat_interval=60)
    assert receiver_timing(acfg, ReceiverConfig(name="w", type="webhook", url="http://x")) == (0.0, 7, 63)
    am = ReceiverConfig(name="am", type="alertmanager", url="http://x", repush_interval=20, push_ttl=90)
    assert receiver_timing(acfg, am) == (0.0, 0.0, 20)


# --- reconcile and group -------------------------------------------------------------------------


def alert(name, start_s=0.0, **labels) -> Alert:
    return Alert({"alertname": name, "severity": "warning", **labels}, {"summary": name}, at(start_s))


def test_reconcile_starts_keeps_and_resolves():
    a, b = alert("A", cluster="c1"), alert("B", cluster="c1")
    changes, state = reconcile({}, [a, b], at(10))
    assert [t.alert.status for t in changes] == ["firing", "firing"] and all(t.changed_at == at(10) for t in changes)
    later_a = alert("A", start_s=5, cluster="c1")
    later_a.annotations = {"summary": "A, updated"}
    changes, state2 = reconcile(state, [later_a], at(20))
    assert [(t.alert.alertname, t.alert.status, t.alert.ends_at) for t in changes] == [("B", "resolved", at(20))]
    kept = state2[a.fingerprint].alert
    assert kept.starts_at == at(0) and kept.annotations["summary"] == "A, updated"  # start kept, text fresh
    # a rule that failed resolves nothing
    changes, _ = reconcile(state, [], at(20), unknown={"A", "B"})
    assert changes == []
    # fires again after resolving: a new episode from now, not the old start
    changes, state3 = reconcile(state2, [alert("B", start_s=0, cluster="c1")], at(30))
    assert changes[0].alert.starts_at == at(30) and changes[0].alert.status == "firing"


def test_group_by_labels_match_and_resolves_under_the_group_that_was_told():
    r = ReceiverConfig(name="crit", type="webhook", url="http://x", match={"severity": ["critical", "warning"]})
    a1, a2, a3 = alert("A", cluster="c1"), alert("A", cluster="c2"), alert("B", cluster="c1")
    info = Alert({"alertname": "I", "severity": "info", "cluster": "c1"}, {}, at(0))
    gone = Alert({"alertname": "A", "severity": "warning", "cluster": "c3"}, {}, at(0), ends_at=at(5))
    state = {x.fingerprint: Tracked(x, at(1)) for x in (a1, a2, a3, info, gone)}
    told = LogEntry("crit", "{}:{old=\"key\"}", 3, frozenset({gone.fingerprint}), frozenset(), at(2))
    groups = group_alerts(r, ["alertname", "cluster"], state, [told])
    assert sorted(groups) == sorted([group_key_of({"alertname": "A", "cluster": "c1"}),
                                     group_key_of({"alertname": "A", "cluster": "c2"}),
                                     group_key_of({"alertname": "B", "cluster": "c1"}), '{}:{old="key"}'])
    assert group_key_of({"cluster": "c1", "alertname": "A"}) == '{}:{alertname="A", cluster="c1"}'
    assert [t.alert for t in groups['{}:{old="key"}'].resolved] == [gone]
    assert all(info.fingerprint not in [t.alert.fingerprint for t in g.firing] for g in groups.values())


def test_an_alert_that_came_and_went_while_its_group_was_held_goes_with_the_next_notification():
    """Alertmanager keeps a resolved alert in its group until a flush carried it: a short alert in a
    group whose receiver holds firing alerts is told (as resolved) with the next notification; in a
    new group, an alert only ever seen resolved is never sent alone."""
    r = ReceiverConfig(name="r", type="webhook", url="http://x")
    a = alert("A", cluster="c1", instance="i1")
    blip = Alert({"alertname": "A", "severity": "warning", "cluster": "c1", "instance": "i2"}, {}, at(3), ends_at=at(5))
    state = {a.fingerprint: Tracked(a, at(0)), blip.fingerprint: Tracked(blip, at(5))}
    key = group_key_of({"alertname": "A", "cluster": "c1"})
    told = LogEntry("r", key, 1, frozenset({a.fingerprint}), frozenset(), at(1))
    g = group_alerts(r, ["alertname", "cluster"], state, [told])[key]
    assert [t.alert for t in g.firing] == [a] and [t.alert for t in g.resolved] == [blip]
    d = should_notify(told, {a.fingerprint}, {blip.fingerprint}, now=at(11), send_resolved=True, group_wait=0,
                      group_interval=10, repeat_interval=3600, group_since=at(0))
    assert d == Decision(True, "some alerts resolved")
    # once carried (the next entry has it resolved), or resolved before the last notification: not again
    after = LogEntry("r", key, 2, frozenset({a.fingerprint}), frozenset({blip.fingerprint}), at(11))
    assert group_alerts(r, ["alertname", "cluster"], state, [after])[key].resolved == []
    later = LogEntry("r", key, 2, frozenset({a.fingerprint}), frozenset(), at(6))
    assert group_alerts(r, ["alertname", "cluster"], state, [later])[key].resolved == []
    # never told anything, or told "all alerts resolved": no lone resolved
    assert group_alerts(r, ["alertname", "cluster"], {blip.fingerprint: state[blip.fingerprint]}, []) == {}
    cleared = LogEntry("r", key, 2, frozenset(), frozenset({a.fingerprint}), at(1))
    assert group_alerts(r, ["alertname", "cluster"], {blip.fingerprint: state[blip.fingerprint]}, [cleared]) == {}


# --- whole ticks against a real receiver ------------------------------------------------------------


def stuck(fid: str, is_open: bool, destination="orders", group="store-1") -> dict:
    return {"finding_id": fid, "code": "no-consumers", "severity": "error", "certainty": "certain", "kind": "activemq",
            "group_name": group, "instance": "amq-b", "destination": destination, "start_ts": at(-60),
            "end_ts": at(-1), "is_open": is_open, "duration_s": 59.0, "messages": 5,
            "message": f"5 messages on {destination}, no consumer", "advice": "start a consumer"}


def setup(tmp_path, url: str, **alerts) -> tuple:
    root = tmp_path / "lh"
    receiver = {"name": "hook", "type": "webhook", "url": url + "/hook",
                "retry": {"attempts": 2, "backoff": "10ms", "max_backoff": "50ms"}} | alerts.pop("receiver", {})
    cfg = config_from_dict({"lakehouse": str(root), "alerts": {
        "group_by": ["alertname", "cluster"], "group_interval": "1s", "external_url": "http://bs.example",
        "receivers": [receiver], **alerts}})
    return cfg, Lakehouse(root)


def payloads(rx: RecordingReceiver) -> list[tuple[str, str, list]]:
    return [(b["status"], b["notification_reason"], sorted((a["labels"]["destination"], a["status"]) for a in b["alerts"]))
            for b in rx.bodies()]


def test_notified_once_then_resolved_also_after_a_restart(tmp_path):
    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url)
        lh.overwrite("stuck_messages", [stuck("s1", True)])
        p = AlertPipeline(cfg, lh)
        r = p.tick(at(0))
        assert [n.outcome for n in r.sent] == ["sent"] and len(r.started) == 1
        for s in (0.5, 2, 3):  # nothing new: nothing sent (group_interval, then unchanged)
            assert p.tick(at(s)).sent == []
        assert payloads(rx) == [("firing", "first notification", [("orders", "firing")])]
        # a second alert in the same group, then a restart: the new process knows what was told
        lh.overwrite("stuck_messages", [stuck("s1", True), stuck("s2", True, "audit")])
        assert p.tick(at(4)).sent
        p2 = AlertPipeline(cfg, lh)
        assert p2.tick(at(6)).sent == []
        lh.overwrite("stuck_messages", [stuck("s1", False), stuck("s2", True, "audit")])
        assert p2.tick(at(8)).sent
        lh.overwrite("stuck_messages", [stuck("s1", False), stuck("s2", False, "audit")])
        r = AlertPipeline(cfg, lh).tick(at(10))
        assert [a.labels["destination"] for a in r.resolved] == ["audit"]
        assert payloads(rx) == [
            ("firing", "first notification", [("orders", "firing")]),
            ("firing", "new alerts added", [("audit", "firing"), ("orders", "firing")]),
            ("firing", "some alerts resolved", [("audit", "firing"), ("orders", "resolved")]),
            ("resolved", "all alerts resolved", [("audit", "resolved")]),
        ]
        last = rx.bodies()[-1]["alerts"][0]
        assert last["endsAt"] == "2026-11-22T12:00:10.000Z" and last["startsAt"] == "2026-11-22T11:59:00.000Z"  # the finding's start
        ids = [r.headers[IDEMPOTENCY_HEADER] for r in rx.requests]
        assert len(set(ids)) == 4
        assert AlertPipeline(cfg, lh).tick(at(30)).sent == []  # and then silence
    hist = lh.read("alert_history").to_pylist()
    assert sorted((h["status"], json.loads(h["labels_json"])["destination"]) for h in hist) == [
        ("firing", "audit"), ("firing", "orders"), ("resolved", "audit"), ("resolved", "orders")]
    log = lh.read("alert_notifications").to_pylist()
    assert sorted(r["outcome"] for r in log) == ["sending"] * 4 + ["sent"] * 4
    assert {r["notification_id"] for r in log} == set(ids)


def test_receiver_down_then_up_delivers_everything_once(tmp_path):
    port = free_port()
    rx = RecordingReceiver(port=port).start()
    cfg, lh = setup(tmp_path, rx.url)
    p = AlertPipeline(cfg, lh, sleep=lambda s: None)
    lh.overwrite("stuck_messages", [stuck("s1", True)])
    assert p.tick(at(0)).sent
    rx.stop()  # down: connection refused
    lh.overwrite("stuck_messages", [stuck("s1", False), stuck("s2", True, "audit")])
    r = p.tick(at(2))
    assert [(n.outcome, n.attempts) for n in r.notifications] == [("failed", 2)]
    assert "ConnectError" in r.notifications[0].error and "/hook" not in r.notifications[0].error
    r = p.tick(at(2.01))  # backing off between ticks
    assert r.notifications[0].outcome == "suppressed" and r.notifications[0].decision.reason.startswith("delivery failed 1 time(s)")
    rx = RecordingReceiver(port=port, status=503).start()  # up, but failing
    assert [n.outcome for n in p.tick(at(4)).notifications] == ["failed"]
    rx.status = 200
    assert [n.outcome for n in p.tick(at(6)).notifications] == ["sent"]
    lh.overwrite("stuck_messages", [stuck("s1", False), stuck("s2", False, "audit")])
    assert [n.outcome for n in p.tick(at(8)).notifications] == ["sent"]
    for s in (9.5, 12, 20):
        assert p.tick(at(s)).sent == []
    ok = rx.bodies()[2:]  # the first two got a 503
    rx.stop()
    assert [(b["status"], b["notification_reason"]) for b in ok] == [("firing", "new alerts added"), ("resolved", "all alerts resolved")]
    assert sorted((a["labels"]["destination"], a["status"]) for a in ok[0]["alerts"]) == [("audit", "firing"), ("orders", "resolved")]
    # the 503 answers were the same notification as the one finally accepted: same idempotency key
    assert len(rx.requests) == 2 + 2 and len({r.headers[IDEMPOTENCY_HEADER] for r in rx.requests}) == 2
    log = lh.read("alert_notifications").to_pylist()
    assert sorted((r["attempt"], r["outcome"]) for r in log if r["notification_id"] == rx.requests[-2].headers[IDEMPOTENCY_HEADER]
                  and r["outcome"] != "sending") == [(1, "failed"), (2, "failed"), (3, "failed"), (4, "failed"), (5, "sent")]


def test_an_unreadable_table_resolves_nothing(tmp_path):
    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url)
        lh.overwrite("stuck_messages", [stuck("s1", True)])
        p = AlertPipeline(cfg, lh)
        assert p.tick(at(0)).sent
        # the table's folder turns into something that is not a Delta table
        path = Path(lh.uri("stuck_messages"))
        path.rename(path.with_suffix(".moved"))
        path.mkdir()
        (path / "junk.txt").write_text("x")
        r = p.tick(at(5))
        assert r.resolved == [] and len(r.firing) == 1
        assert "not a Delta table" in r.rule_errors["table stuck_messages"]
        assert len(rx.requests) == 1


def test_a_table_being_created_is_absent_and_a_damaged_log_stays_an_error(tmp_path):
    """A first Spark run creating a table leaves its folder without a `_delta_log` commit for a
    while: no alerts from it, and no error (the rules reading it still resolve what they should).
    A table whose log exists but cannot be read stays an error and resolves nothing."""
    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url)
        lh.overwrite("failover_events", [{
            "event_id": "e1", "kind": "activemq", "group_name": "store-1", "event_type": "failover",
            "from_instance": "amq-a", "to_instance": "amq-b", "old_last_active": at(-2),
            "new_first_active": at(-1), "outage_upper_s": 1.0, "overlap": False}])
        path = Path(lh.uri("stuck_messages"))
        (path / "obs_date=2026-11-22").mkdir(parents=True)
        (path / "obs_date=2026-11-22" / "part-00000-1b2c.c000.snappy.parquet").write_bytes(b"PAR1 half-written")
        (path / "obs_date=2026-11-22" / ".part-00000-1b2c.c000.snappy.parquet.crc").write_bytes(b"crc")
        (path / "_delta_log").mkdir()
        (path / "_delta_log" / ".00000000000000000000.json.3f1a.tmp").write_text('{"commitInfo":')
        p = AlertPipeline(cfg, lh)
        r = p.tick(at(0))
        assert r.rule_errors == {} and [a.alertname for a in r.firing] == ["FailoverHappened"]
        # the writer commits: the table is read from then on
        shutil.rmtree(path)
        lh.overwrite("stuck_messages", [stuck("s1", True)])
        r = p.tick(at(1))
        assert r.rule_errors == {} and sorted(a.alertname for a in r.started) == ["StuckMessages"]
        # a log that exists but is damaged: an error, and the alerts from it are kept, not resolved
        for f in (path / "_delta_log").glob("*.json"):
            f.write_text("{not json")
        r = p.tick(at(2))
        assert "corrupt" in r.rule_errors["table stuck_messages"] and r.resolved == []
        assert "StuckMessages" in [a.alertname for a in r.firing]


def test_a_new_alert_right_after_all_resolved_is_sent_at_once(tmp_path):
    """The bench's lost critical alert: "all alerts resolved" went out, the same group fired again
    within group_interval and resolved before the next flush. The group is new after its all-resolved
    notification, so with group_wait 0 the alert goes out at the first tick that sees it firing."""
    import pyarrow as pa

    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url, group_interval="10s", rules={"no_active_for": "0s"})
        p = AlertPipeline(cfg, lh)

        def live(s: float, a_active: bool):
            return pa.table({"ts": pa.array([at(s)] * 2, pa.timestamp("us", tz="UTC")), "kind": ["activemq"] * 2,
                             "group_name": ["store-1"] * 2, "instance": ["amq-a", "amq-b"], "reachable": [True, True],
                             "active": pa.array([a_active, False], pa.bool_())})

        def sent(s, a_active):
            r = p.tick(at(s), live_state=live(s, a_active))
            return [(n.decision.reason, len(n.firing), len(n.resolved)) for n in r.sent]

        assert sent(0, False) == [("first notification", 1, 0)]
        assert sent(1, True) == []  # resolved: held by group_interval
        assert sent(10, True) == [("all alerts resolved", 0, 1)]
        assert sent(10.7, False) == [("first notification", 1, 0)]  # was: held until 20 s …
        assert sent(12, True) == []  # … and resolved before that: never sent
        assert sent(20.7, True) == [("all alerts resolved", 0, 1)]
        assert [(b["status"], b["notification_reason"]) for b in rx.bodies()] == [
            ("firing", "first notification"), ("resolved", "all alerts resolved"),
            ("firing", "first notification"), ("resolved", "all alerts resolved")]
        assert len({b["alerts"][0]["fingerprint"] for b in rx.bodies()}) == 1


def test_group_wait_and_dry_run(tmp_path):
    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url, group_wait="5s")
        lh.overwrite("stuck_messages", [stuck("s1", True)])
        p = AlertPipeline(cfg, lh)
        r = p.tick(at(0), dry_run=True)
        assert [n.outcome for n in r.notifications] == ["suppressed"] and not lh.exists("alert_history")
        r = p.tick(at(1))
        assert r.notifications[0].decision.reason == "group_wait: first notification at 12:00:06.000"
        lh.overwrite("stuck_messages", [stuck("s1", True), stuck("s2", True, "audit")])
        assert p.tick(at(4)).sent == []
        r = p.tick(at(6.5), dry_run=True)
        assert [(n.outcome, n.decision.reason) for n in r.notifications] == [("dry-run", "first notification")]
        assert rx.requests == []
        assert len(p.tick(at(6.5)).sent) == 1
        assert sorted(a["labels"]["destination"] for a in rx.bodies()[0]["alerts"]) == ["audit", "orders"]


def test_secrets_go_to_the_receiver_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HOOK_TOKEN", "s3cr3t-t0ken")
    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url, receiver={"bearer_token_env": "HOOK_TOKEN", "headers": {"X-Team": "ha"}})
        lh.overwrite("stuck_messages", [stuck("s1", True)])
        AlertPipeline(cfg, lh).tick(at(0))
        h = rx.requests[0].headers
        assert h["Authorization"] == "Bearer s3cr3t-t0ken" and h["X-Team"] == "ha"
    for name in ("alert_notifications", "alert_history"):
        assert "s3cr3t" not in json.dumps(lh.read(name).to_pylist(), default=str)
    monkeypatch.delenv("HOOK_TOKEN")
    lh.overwrite("stuck_messages", [stuck("s1", False)])
    r = AlertPipeline(cfg, lh, sleep=lambda s: None).tick(at(5))
    assert r.notifications[0].outcome == "failed"
    assert "receiver hook: environment variable HOOK_TOKEN (bearer_token_env) is not set" in r.notifications[0].error


# --- kill -9 mid-send (a real process) -------------------------------------------------------------


def _spawn(cfg_path: Path, log: Path) -> subprocess.Popen:
    script = Path(__file__).parent / "fixtures" / "alerts" / "alerter_loop.py"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1]))
    return subprocess.Popen([sys.executable, str(script), str(cfg_path), "0.1"], stdout=open(log, "ab"),
                            stderr=subprocess.STDOUT, env=env, cwd=str(Path(__file__).parents[1]))


@pytest.mark.slow
def test_killed_mid_send_and_restarted_loses_nothing_and_repeats_only_the_one_in_flight(tmp_path):
    rx = RecordingReceiver(hold=60).start()
    root = tmp_path / "lh"
    lh = Lakehouse(root)
    cfg_path = tmp_path / "brokerscope.yaml"
    cfg_path.write_text(yaml.safe_dump({"lakehouse": str(root), "alerts": {
        "group_interval": "200ms", "receivers": [{"name": "hook", "type": "webhook", "url": rx.url + "/hook",
                                                  "timeout": "90s"}]}}))
    now = datetime.now(timezone.utc)
    row = lambda fid, dest, is_open: dict(stuck(fid, is_open, dest), start_ts=now, end_ts=now)  # noqa: E731
    lh.overwrite("stuck_messages", [row("s1", "orders", True)])
    procs = []
    try:
        p1 = _spawn(cfg_path, tmp_path / "alerter.log")
        procs.append(p1)
        assert rx.arrived.wait(60), (tmp_path / "alerter.log").read_text()
        in_flight = rx.requests[0].headers[IDEMPOTENCY_HEADER]
        os.kill(p1.pid, signal.SIGKILL)  # while the receiver holds the request
        p1.wait(10)
        rx.hold = 0
        rx.release.set()
        log = lh.read("alert_notifications").to_pylist()
        assert [(r["notification_id"], r["outcome"]) for r in log] == [(in_flight, "sending")]
        p2 = _spawn(cfg_path, tmp_path / "alerter.log")
        procs.append(p2)
        wait_for(lambda: len(rx.requests) >= 2, what="the in-flight notification sent again")
        lh.overwrite("stuck_messages", [row("s1", "orders", True), row("s2", "audit", True)])
        wait_for(lambda: len(rx.requests) >= 3, what="the new alert")
        lh.overwrite("stuck_messages", [row("s1", "orders", False), row("s2", "audit", False)])
        wait_for(lambda: any(b["status"] == "resolved" for b in rx.bodies()), what="the resolve")
        time.sleep(1.0)  # a few more ticks: nothing more may come
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)
        rx.stop()
    ids = [r.headers[IDEMPOTENCY_HEADER] for r in rx.requests]
    assert ids.count(in_flight) == 2 and ids[:2] == [in_flight, in_flight]
    assert len(ids) == len(set(ids)) + 1, f"only the in-flight notification may repeat: {ids}"
    assert [(b["status"], b["notification_reason"]) for b in rx.bodies()] == [
        ("firing", "first notification"), ("firing", "first notification"), ("firing", "new alerts added"),
        ("resolved", "all alerts resolved")]
    assert rx.bodies()[0] == rx.bodies()[1]
    sent = {r["notification_id"] for r in lh.read("alert_notifications").to_pylist() if r["outcome"] == "sent"}
    assert sent == set(ids)  # nothing recorded as sent that the receiver did not get, nothing lost
    assert "redelivery" in (tmp_path / "alerter.log").read_text()


# --- live state from the service, and the CLI ------------------------------------------------------


def test_live_state_passed_in_by_the_service(tmp_path):
    import pyarrow as pa

    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url)
        p = AlertPipeline(cfg, lh)
        now = at(0)
        live = pa.table({"ts": pa.array([now, now], pa.timestamp("us", tz="UTC")), "kind": ["activemq"] * 2,
                         "group_name": ["store-1"] * 2, "instance": ["amq-a", "amq-b"], "reachable": [False, True],
                         "active": pa.array([None, False], pa.bool_()), "role": ["unknown", "slave"],
                         "something_else": [1, 2]})
        r = p.tick(now, live_state=live)
        assert [a.alertname for a in r.started] == ["NoActiveInstance"] and len(r.sent) == 1
        assert rx.bodies()[0]["alerts"][0]["labels"]["cluster"] == "store-1"
        bad = live.set_column(live.column_names.index("active"), "active", pa.array(["yes", "no"]))
        with pytest.raises(ValueError, match=r"live_state=…\): column 'active' has type string, the broker_state contract says bool"):
            p.tick(now, live_state=bad)


def test_cli_evaluate_history_and_test_receiver(tmp_path, capsys):
    from brokerscope.cli import main

    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url)
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({"lakehouse": str(tmp_path / "lh"), "alerts": {
            "receivers": [{"name": "hook", "type": "webhook", "url": rx.url + "/hook"}]}}))
        now = datetime.now(timezone.utc)
        lh.overwrite("stuck_messages", [dict(stuck("s1", True), start_ts=now, end_ts=now)])
        assert main(["alerts", "evaluate", "-c", str(path), "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "dry-run" in out and "first notification" in out and rx.requests == []
        assert main(["alerts", "evaluate", "-c", str(path)]) == 0
        assert "sent" in capsys.readouterr().out and len(rx.requests) == 1
        assert main(["alerts", "history", "-c", str(path)]) == 0
        out = capsys.readouterr().out
        assert "firing" in out and "StuckMessages" in out and "5 messages on orders" in out
        assert main(["alerts", "history", "-c", str(path), "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["labels"]["destination"] == "orders"
        assert main(["alerts", "test-receiver", "-c", str(path), "hook"]) == 0
        assert capsys.readouterr().out.splitlines()[0].startswith("firing: ok (HTTP 200")
        assert [b["status"] for b in rx.bodies()[1:]] == ["firing", "resolved"]
        assert rx.bodies()[1]["alerts"][0]["labels"]["alertname"] == "BrokerscopeTestAlert"
        assert main(["alerts", "test-receiver", "-c", str(path), "nope"]) == 2
        assert "no receiver named 'nope'" in capsys.readouterr().err


def test_a_fast_hand_over_from_live_rows_is_not_a_split_brain(tmp_path):
    """The service passes the latest row per instance. amq-a is last scraped active just before it is
    killed, amq-b is scraped active (it took over) before amq-a's next, failed, scrape: both latest
    rows say active, but the runs never overlap in observed time — a clean failover, no SplitBrain."""
    import pyarrow as pa

    cfg, lh = setup(tmp_path, "http://127.0.0.1:9", receivers=[])
    p = AlertPipeline(cfg, lh)

    def live(*rows):
        return pa.table({"ts": pa.array([at(s) for _i, s, _a in rows], pa.timestamp("us", tz="UTC")),
                         "kind": ["activemq"] * len(rows), "group_name": ["store-1"] * len(rows),
                         "instance": [i for i, _s, _a in rows], "reachable": [a is not None for _i, _s, a in rows],
                         "active": pa.array([a for _i, _s, a in rows], pa.bool_())})

    ticks = [(0, live(("amq-a", 0, True), ("amq-b", 0, False))),
             (1, live(("amq-a", 0.9, True), ("amq-b", 0.95, False))),  # amq-a killed at 1.0
             (2, live(("amq-b", 1.9, True))),  # amq-b took over; amq-a's latest row still says active
             (3, live(("amq-a", 2.9, None), ("amq-b", 2.95, True)))]
    fired = [[a.alertname for a in p.tick(at(s), live_state=rows).firing if a.alertname == "SplitBrain"]
             for s, rows in ticks]
    assert fired == [[], [], [], []]
    # amq-a answers again as master while amq-b still is: two masters, seen overlapping
    r = p.tick(at(4), live_state=live(("amq-a", 3.9, True), ("amq-b", 3.95, True)))
    (sb,) = [a for a in r.firing if a.alertname == "SplitBrain"]
    assert sb.starts_at == at(1.9)  # amq-a was never seen inactive: the overlap began with amq-b's run


def test_live_rows_accumulate_across_ticks_for_the_unreachable_run(tmp_path):
    """The service passes only the latest row per instance; the run of unanswered scrapes is
    remembered across ticks, so CollectorCannotReachTarget fires after `unreachable_for`."""
    import pyarrow as pa

    cfg, lh = setup(tmp_path, "http://127.0.0.1:9", rules={"unreachable_for": "3s"}, receivers=[])
    p = AlertPipeline(cfg, lh)

    def live(s: float, reachable: bool):
        return pa.table({"ts": pa.array([at(s)], pa.timestamp("us", tz="UTC")), "kind": ["activemq"],
                         "group_name": ["store-1"], "instance": ["amq-a"], "reachable": [reachable],
                         "active": pa.array([True if reachable else None], pa.bool_())})

    fired = [bool([a for a in p.tick(at(s), live_state=live(s, s < 1)).firing if a.alertname == "CollectorCannotReachTarget"])
             for s in (0, 1, 2, 3, 4, 5)]
    assert fired == [False, False, False, False, True, True]
    resolved = [a.alertname for a in p.tick(at(6), live_state=live(6, True)).resolved]
    assert sorted(resolved) == ["CollectorCannotReachTarget", "NoActiveInstance"]  # amq-a is back, and active


# --- a real drill, replayed and analysed, alerted on tick by tick ------------------------------------


@pytest.mark.slow
def test_alerts_over_a_real_kill_master_drill(analysed_kill_master, tmp_path):
    """The recorded ActiveMQ drill (SIGKILL of the master, takeover, restart as slave) through
    replay → Spark → gold, then the pipeline ticked every 0.1 s across the drill's own times:
    what fires, when, and that every firing notification gets its resolve."""
    fix = Path(__file__).parent / "fixtures"
    truth = json.loads((fix / "drill_kill_master.truth.json").read_text())
    with RecordingReceiver() as rx:
        # replayed and analysed once for the session (tests/conftest.py); a copy: the pipeline writes its log
        cfg = analysed_kill_master.copy_to(tmp_path / "lh", alerts={
            "group_interval": "100ms", "rules": {"failover_hold": "2s", "unreachable_for": "1s"},
            "receivers": [{"name": "hook", "type": "webhook", "url": rx.url + "/hook"}]})
        lh = Lakehouse(cfg.lakehouse_root())
        p = AlertPipeline(cfg, lh)
        kill = datetime.fromtimestamp(truth["kill_ts"], timezone.utc)
        events: dict[str, list[tuple[str, datetime]]] = {}
        for i in range(-20, 100):  # from 2 s before the kill to 10 s after it
            r = p.tick(kill + timedelta(seconds=i / 10))
            for a in r.started:
                events.setdefault(a.alertname, []).append(("firing", r.now))
            for a in r.resolved:
                events.setdefault(a.alertname, []).append(("resolved", r.now))
    takeover = datetime.fromtimestamp(truth["takeover_log_ts"], timezone.utc)
    restart = datetime.fromtimestamp(truth["restart_ts"], timezone.utc)
    assert sorted(events) == ["CollectorCannotReachTarget", "FailoverHappened", "NoActiveInstance"], events
    (s1, t_fail), (s2, t_ok) = events["NoActiveInstance"]
    assert (s1, s2) == ("firing", "resolved") and kill < t_fail < takeover + timedelta(seconds=0.6) <= t_ok + timedelta(seconds=0.6)
    assert t_ok - takeover < timedelta(seconds=1)  # one scrape (0.5 s) after the takeover, at most
    (s1, t_fo), (s2, t_fo_end) = events["FailoverHappened"]
    assert s2 == "resolved" and timedelta(seconds=2) <= t_fo_end - t_fo <= timedelta(seconds=2.6)
    (s1, t_unr), (s2, t_back) = events["CollectorCannotReachTarget"]
    assert kill + timedelta(seconds=1) <= t_unr <= kill + timedelta(seconds=2) and restart <= t_back <= restart + timedelta(seconds=2)
    # the receiver got each firing notification and each resolve, once
    sent = [(b["groupLabels"]["alertname"], b["status"]) for b in rx.bodies()]
    assert sorted(sent) == sorted([(n, s) for n in events for s in ("firing", "resolved")]), sent
    failover = next(b for b in rx.bodies() if b["groupLabels"]["alertname"] == "FailoverHappened")
    assert failover["alerts"][0]["labels"]["broker"] == "amq-b"
    assert "failover in store-1: amq-a → amq-b" in failover["alerts"][0]["annotations"]["summary"]


def test_a_notification_log_that_cannot_be_written_holds_the_send_back(tmp_path):
    with RecordingReceiver() as rx:
        cfg, lh = setup(tmp_path, rx.url)
        lh.overwrite("stuck_messages", [stuck("s1", True)])
        lh.append("alert_notifications", [])  # nothing: the table does not exist yet
        p = AlertPipeline(cfg, lh)
        path = Path(lh.uri("alert_notifications"))
        path.mkdir(parents=True)
        (path / "junk.txt").write_text("not a Delta table")
        r = p.tick(at(0))
        assert [n.outcome for n in r.notifications] == ["failed"]
        assert "not a Delta table" in r.notifications[0].error and rx.requests == []
        (path / "junk.txt").unlink()
        assert [n.outcome for n in p.tick(at(1)).notifications] == ["sent"]
        assert len(rx.requests) == 1
