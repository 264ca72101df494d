"""Broker state runs for the incident timeline (dashboards/states.py) on tiny inputs: a failover as
the old master lives it — active, not answering, back as standby — and a hole in the data; the same
runs from broker_minutes rows, where a minute in which the state changed stays one run of its own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa

from dashboards.states import MIXED, minute_runs, state_runs
from lakehouse.tables import OBSERVED_STATES

T0 = datetime(2026, 11, 23, 11, 0, tzinfo=timezone.utc)


def obs(*rows: tuple) -> pa.Table:
    """rows of (seconds, instance, reachable, active, role)."""
    return pa.table({"ts": pa.array([T0 + timedelta(seconds=r[0]) for r in rows], pa.timestamp("us", tz="UTC")),
                     "instance": [r[1] for r in rows], "reachable": [r[2] for r in rows],
                     "active": [r[3] for r in rows], "role": [r[4] for r in rows]})


def brief(runs: list[dict]) -> list[tuple]:
    return [(r["instance"], r["state"], (r["start"] - T0).total_seconds(), (r["end"] - T0).total_seconds(),
             r["observations"]) for r in runs]


def test_the_old_master_is_active_then_unreachable_then_standby():
    t = obs((0, "amq-a", True, True, "master"), (1, "amq-a", True, True, "master"),
            (2, "amq-a", False, None, "unknown"), (3, "amq-a", False, None, "unknown"),
            (4, "amq-a", True, False, "starting"), (5, "amq-a", True, False, "slave"), (6, "amq-a", True, False, "slave"),
            (0, "amq-b", True, False, "slave"), (3, "amq-b", True, True, "master"))
    assert brief(state_runs(t, hole_s=15)) == [
        ("amq-a", "active", 0, 1, 2), ("amq-a", "unreachable", 2, 3, 2), ("amq-a", "starting", 4, 4, 1),
        ("amq-a", "standby", 5, 6, 2), ("amq-b", "standby", 0, 0, 1), ("amq-b", "active", 3, 3, 1)]


def test_a_gap_longer_than_the_hole_tolerance_is_unknown_not_continuity():
    t = obs((0, "a", True, False, "backup"), (1, "a", True, False, "backup"), (61, "a", True, False, "backup"))
    assert brief(state_runs(t, hole_s=15)) == [("a", "standby", 0, 1, 2), ("a", "unknown", 1, 61, 0),
                                               ("a", "standby", 61, 61, 1)]
    assert state_runs(t.slice(0, 0), hole_s=15) == []


def minutes(*rows: tuple) -> pa.Table:
    """broker_minutes rows of (minute, instance, first s, last s, max gap s, first state, changes, {state: n})."""
    ts = pa.timestamp("us", tz="UTC")
    at = [T0 + timedelta(minutes=r[0]) for r in rows]
    return pa.table({"minute": pa.array(at, ts), "instance": [r[1] for r in rows],
                     "first_ts": pa.array([a + timedelta(seconds=r[2]) for a, r in zip(at, rows)], ts),
                     "last_ts": pa.array([a + timedelta(seconds=r[3]) for a, r in zip(at, rows)], ts),
                     "max_gap_s": [float(r[4]) for r in rows], "first_state": [r[5] for r in rows],
                     "state_changes": [r[6] for r in rows], "observations": [sum(r[7].values()) for r in rows],
                     **{f"{s}_obs": [r[7].get(s, 0) for r in rows] for s in OBSERVED_STATES}})


def test_minutes_of_one_state_merge_and_a_minute_that_changed_stays_apart():
    t = minutes((0, "a", 0, 55, 5, "active", 0, {"active": 12}), (1, "a", 0, 55, 5, "active", 0, {"active": 12}),
                (2, "a", 0, 55, 5, "active", 2, {"active": 5, "unreachable": 6, "standby": 1}),
                (3, "a", 0, 55, 5, "standby", 1, {"standby": 10, "active": 2}),
                (4, "a", 0, 55, 5, "standby", 0, {"standby": 12}),
                (9, "a", 10, 55, 5, "standby", 0, {"standby": 10}),  # minutes 5-8: no row, a hole
                (10, "a", 0, 50, 40, "standby", 0, {"standby": 3}),  # a hole inside the minute
                (0, "b", 3, 58, 5, "standby", 0, {"standby": 12}))
    runs = minute_runs(t, hole_s=20)
    assert brief(runs) == [
        ("a", "active", 0, 115, 24), ("a", MIXED, 120, 235, 24), ("a", "standby", 240, 295, 12),
        ("a", "unknown", 295, 550, 0), ("a", "standby", 550, 595, 10), ("a", MIXED, 600, 650, 3),
        ("b", "standby", 3, 58, 12)]
    assert runs[1]["states"] == {"active": 7, "standby": 11, "unreachable": 6} and runs[5]["states"] == {"standby": 3}


def test_minute_runs_equal_state_runs_when_no_minute_holds_a_change():
    t = obs(*((s, "a", True, s < 120, "live" if s < 120 else "backup") for s in range(0, 240, 5)),
            *((s, "a", True, False, "backup") for s in range(300, 360, 5)))
    per_minute = {}
    for r in t.to_pylist():
        m = r["ts"].replace(second=0)
        per_minute.setdefault(m, []).append(r)
    rows = []
    for m, rs in per_minute.items():
        state = "active" if rs[0]["active"] else "standby"
        rows.append(((m - T0).total_seconds() / 60, "a", (rs[0]["ts"] - m).total_seconds(), (rs[-1]["ts"] - m).total_seconds(),
                     5 if len(rs) > 1 else 0, state, 0, {state: len(rs)}))
    assert brief(minute_runs(minutes(*rows), hole_s=20)) == brief(state_runs(t, hole_s=20))
