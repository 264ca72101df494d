"""Role intervals and failovers on tiny hand-made observation sequences (pure pandas, no Spark)."""

from datetime import datetime, timedelta, timezone

import pandas as pd

from analysis.failovers import group_failovers
from analysis.intervals import instance_intervals

T0 = datetime(2026, 11, 21, 22, 32, 30, tzinfo=timezone.utc)


def obs(instance, seq, start_uptime=60_000, step=0.5, group="store-1"):
    """seq: string of M (active), S (standby), x (no answer), R (active after a restart)."""
    rows, uptime = [], start_uptime
    for i, c in enumerate(seq):
        ts = T0 + timedelta(seconds=i * step)
        if c == "R":
            uptime = 100
        active = {"M": True, "R": True, "S": False, "x": None}[c]
        rows.append({"ts": ts, "kind": "activemq", "group_name": group, "instance": instance, "active": active,
                     "uptime_ms": None if c == "x" else uptime})
        uptime += int(step * 1000)
    return pd.DataFrame(rows)


def t(i, step=0.5):
    return pd.Timestamp(T0 + timedelta(seconds=i * step)).tz_localize(None)


def test_kill_master_interval_bounds():
    iv = instance_intervals(obs("amq-a", "MMMMxxxxSS"))
    assert len(iv) == 1
    r = iv.iloc[0]
    assert r.start_ts == t(0) and r.end_ts == t(3)
    assert r.end_upper == t(4) and r.end_upper_state == "unanswered"
    assert r.first_inactive_after == t(8)
    assert not r.is_open and r.observations == 4 and r.unanswered_inside == 0


def test_gap_without_restart_keeps_interval_and_counts_it():
    iv = instance_intervals(obs("amq-a", "MMxxMM"))
    assert len(iv) == 1
    assert iv.iloc[0].unanswered_inside == 2
    assert iv.iloc[0].is_open


def test_restart_splits_interval():
    iv = instance_intervals(obs("amq-a", "MMxxRM"))
    assert len(iv) == 2
    assert iv.iloc[0].end_ts == t(1) and iv.iloc[0].end_upper_state == "unanswered"
    assert iv.iloc[1].start_ts == t(4)


def test_failover_then_failback():
    a = instance_intervals(obs("amq-a", "MMMxxSSSSSSSSSMMM"))
    b = instance_intervals(obs("amq-b", "SSSSSMMMMMxxxSSSS"))
    ev = group_failovers(pd.concat([a, b], ignore_index=True))
    assert list(ev.event_type) == ["failover", "failback"]
    first = ev.iloc[0]
    assert (first.from_instance, first.to_instance) == ("amq-a", "amq-b")
    assert first.old_last_active == t(2) and first.new_first_active == t(5)
    assert first.outage_upper_s == 1.5
    assert first.detection_s == 1.0  # a's first missed scrape (t3) → b active (t5)
    assert first.new_last_inactive == t(4)
    assert pd.isna(first.outage_lower_s)  # a was never seen inactive before b took over
    back = ev.iloc[1]
    assert (back.from_instance, back.to_instance) == ("amq-b", "amq-a")
    # a was seen standby at t5.., b last active t9 → a active t14: outage ≤ 2.5 s, ≥ (t13 - t13)
    assert back.outage_upper_s == 2.5


def test_clean_overlap_free_failover_has_no_overlap_flag_and_both_active_has_no_event():
    a = instance_intervals(obs("amq-a", "MMMMMM"))
    b = instance_intervals(obs("amq-b", "SSMMMM"))
    ev = group_failovers(pd.concat([a, b], ignore_index=True))
    assert ev.empty  # both stay active: split brain, not a hand-over
