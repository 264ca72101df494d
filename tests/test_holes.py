"""A hole in a target's observations (no row at all for longer than the hole tolerance: a collector
that was down, rows lost) is unknown, never continuity: role intervals count it and say when a
bound lies across one, split-brain windows covering it are at most `possible` (still one window),
and a hand-over next to one says so."""

from datetime import timedelta

import pandas as pd
import pytest

from analysis.failovers import group_failovers
from analysis.intervals import instance_intervals, role_intervals
from analysis.split_brain import split_brain_windows
from lakehouse.tables import BROKER_STATE
from settings import config_from_dict
from tests.test_spine import T0

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
