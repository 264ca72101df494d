"""Broker state runs for the incident timeline (dashboards/states.py) on tiny inputs: a failover as
the old master lives it — active, not answering, back as standby — and a hole in the data."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa

from dashboards.states import state_runs

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
