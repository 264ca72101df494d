"""A hole in a target's observations (no row at all for longer than the hole tolerance: a collector
that was down, rows lost) is unknown, never continuity: role intervals count it and say when a
bound lies across one, split-brain windows covering it are at most `possible` (still one window),
and a hand-over next to one says so. The findings built from runs (stuck messages, replication
lag, risk) go on across a hole, count it in `unobserved_s` and are then at most `possible`."""

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from analysis.failovers import group_failovers
from analysis.intervals import instance_intervals, role_intervals
from analysis.lag import replica_sync_gaps
from analysis.risk import RiskParams, group_state_risks
from analysis.runs import observed_certainty, run_bounds
from analysis.split_brain import split_brain_windows
from analysis.stuck import DEST_COLUMNS, group_stuck
from analysis.stuck import STATE_COLUMNS as STATE_COLUMNS_STUCK
from lakehouse.tables import BROKER_STATE
from settings import config_from_dict
from tests.test_risk import at, master_with_slave, state
from tests.test_spine import T0
from tests.test_stuck import findings, stranded_scenario

HOLE_US = 3_000_000  # 3 s; the frames below observe every second


def rows(seq: str, instance: str = "a") -> pd.DataFrame:
    """One instance, one character a second: M active, S standby, x no answer, _ no row at all."""
    out = []
    for i, c in enumerate(seq):
        if c == "_":
            continue
        out.append({"obs_key": f"{instance}{i}", "ts": T0 + timedelta(seconds=i), "obs_date": "2026-11-21", "kind": "activemq",
                    "group_name": "g",
                    "instance": instance, "reachable": c != "x", "active": {"M": True, "S": False, "x": None}[c],
                    "role": "master" if c == "M" else "slave", "uptime_ms": 10_000_000 + i * 1000 if c != "x" else None})
    pdf = pd.DataFrame(out)
    for col in BROKER_STATE.column_names:
        if col not in pdf:
            pdf[col] = None
    return pdf[BROKER_STATE.column_names]


def test_an_interval_runs_through_a_hole_and_counts_it():
    (iv,) = instance_intervals(rows("MM_____MMS"), HOLE_US).to_dict("records")
    assert (iv["start_ts"], iv["end_ts"]) == (T0.replace(tzinfo=None), T0.replace(tzinfo=None) + timedelta(seconds=8))
    assert iv["unobserved_s"] == 6.0 and iv["unanswered_inside"] == 0
    assert not iv["start_unobserved"] and not iv["end_unobserved"]


def test_a_gap_within_the_tolerance_is_no_hole():
    (iv,) = instance_intervals(rows("MM__MMS"), HOLE_US).to_dict("records")
    assert iv["unobserved_s"] == 0.0


def test_bounds_across_a_hole_say_so_and_the_hand_over_too():
    a, b = rows("MMM_____SSS", "a"), rows("SSSS____MMM", "b")
    iv = pd.concat([instance_intervals(a, HOLE_US), instance_intervals(b, HOLE_US)])
    by = {r["instance"]: r for r in iv.to_dict("records")}
    assert by["a"]["end_unobserved"] and not by["a"]["start_unobserved"]
    assert by["b"]["start_unobserved"]
    (ev,) = group_failovers(iv).to_dict("records")
    assert ev["unobserved"] and ev["outage_upper_s"] == 6.0
    (clean,) = group_failovers(pd.concat([instance_intervals(rows("MMMSSS", "a"), HOLE_US),
                                          instance_intervals(rows("SSSMMM", "b"), HOLE_US)])).to_dict("records")
    assert not clean["unobserved"]


@pytest.mark.parametrize("a_seq, certainty", [
    ("MMMMMMMMMMSS", "certain"),  # observed active together all along
    ("MMM_____MMSS", "possible"),  # a was not observed for 6 s inside the overlap: one window, possible
])
def test_a_hole_inside_an_overlap_makes_the_one_window_possible(spark, a_seq, certainty):
    st = spark.createDataFrame(pd.concat([rows(a_seq, "a"), rows("SSMMMMMMMMMM", "b")]), BROKER_STATE.spark_schema())
    (w,) = [r.asDict() for r in split_brain_windows(role_intervals(st, HOLE_US), st, hole_us=HOLE_US).collect()]
    assert w["certainty"] == certainty
    assert (w["certain_start"], w["certain_end"]) == (T0.replace(tzinfo=None) + timedelta(seconds=2),
                                                       T0.replace(tzinfo=None) + timedelta(seconds=9))


def test_the_same_overlap_without_a_tolerance_was_claimed_certain(spark):
    """What the hole rule changes: with no tolerance (the old behaviour) the unobserved stretch
    counted as continuity and the window as certain."""
    gap = spark.createDataFrame(pd.concat([rows("MMM_____MMSS", "a"), rows("SSMMMMMMMMMM", "b")]),
                                BROKER_STATE.spark_schema())
    (w,) = [r.asDict() for r in split_brain_windows(role_intervals(gap), gap).collect()]
    assert w["certainty"] == "certain"


def test_the_default_tolerance_is_three_scrapes_plus_the_longest_timeout():
    cfg = config_from_dict({"scrape_interval": "500ms", "targets": [
        {"name": "a", "kind": "activemq", "url": "http://127.0.0.1:1/j", "timeout": "2s"},
        {"name": "b", "kind": "activemq", "url": "http://127.0.0.1:2/j"}]})
    assert cfg.hole_tolerance() == 3 * 0.5 + 5.0  # b's default timeout, 5 s
    assert config_from_dict({"analysis": {"hole_tolerance": "10s"}}).hole_tolerance() == 10.0


# --- the same rule in the findings built from runs (stuck messages, lag, risk) -------------------------------


def test_a_run_counts_its_holes_and_is_then_at_most_possible():
    ts = np.array([T0.replace(tzinfo=None) + timedelta(seconds=s) for s in (0, 1, 2, 9, 10, 20)], "datetime64[ns]")
    b = run_bounds(ts, np.array([0, 5]), np.array([4, 5]), hole_s=3.0)
    assert b["unobserved_s"].tolist() == [7.0, 0.0]  # 2 → 9 is a hole; 10 → 20 lies outside both runs
    assert observed_certainty(np.array(["certain", "certain"]), b["unobserved_s"]).tolist() == ["possible", "certain"]
    assert observed_certainty("possible", 0.0) == "possible"  # never raised
    assert run_bounds(ts, np.array([0]), np.array([4]))["unobserved_s"].tolist() == [0.0]  # no tolerance: no hole


def test_stuck_messages_across_a_hole_are_possible_and_say_it():
    seen = stranded_scenario(2, seconds=(0, 30, 60, 90, 200, 230))  # nothing observed from 90 to 200
    (f,) = group_stuck(pd.DataFrame(seen, columns=DEST_COLUMNS), pd.DataFrame(columns=STATE_COLUMNS_STUCK),
                       threshold_s=60, forward_delays={}, member_kinds=["weblogic"], hole_s=45).to_dict("records")
    assert (f["code"], f["unobserved_s"], f["certainty"]) == ("stranded-member", 110.0, "possible")
    assert "110 s of it unobserved" in f["message"]
    (before,) = findings(seen).to_dict("records")  # without a tolerance the stretch counted as observed
    assert before["certainty"] == "certain" and before["unobserved_s"] == 0.0


def test_an_unprotected_live_across_a_hole_is_possible():
    certain = [r for r in master_with_slave(lambda s: (False, "starting" if 100 <= s < 200 else "slave", True))
               if not (r["instance"] == "amq-a" and at(130) <= r["ts"] < at(170))]
    params = RiskParams(unprotected_grace_s=60, stale_backup_grace_s=60, scrape_interval_s=5, hole_s=15)
    (f,) = group_state_risks(state(certain), params).to_dict("records")
    assert (f["certainty"], f["unobserved_s"]) == ("possible", 45.0)  # the live unobserved from 125 to 170
    (g,) = group_state_risks(state(certain), RiskParams(unprotected_grace_s=60, stale_backup_grace_s=60,
                                                        scrape_interval_s=5)).to_dict("records")
    assert g["certainty"] == "certain"  # the same rows with no tolerance: the old claim


def test_a_replica_sync_gap_across_a_hole_is_possible():
    flags = [True, False, False, False, False, True]
    replica = pd.DataFrame({"ts": [T0.replace(tzinfo=None) + timedelta(seconds=s) for s in (0, 30, 60, 200, 230, 260)],
                            "kind": "artemis", "group_name": "pair", "instance": "live", "in_sync": flags,
                            "backup_announced": True})
    no_state = pd.DataFrame(columns=["ts", "group_name", "instance", "reachable"])
    (f,) = replica_sync_gaps(replica, no_state, grace_s=60, hole_s=90).to_dict("records")
    assert (f["certainty"], f["unobserved_s"]) == ("possible", 140.0)
    assert replica_sync_gaps(replica, no_state, grace_s=60).iloc[0]["certainty"] == "certain"
