"""The incident timeline's long views drawn from gold broker_minutes (dashboards/data.py): the same
state runs as from every observation where no minute holds a change, series whose every point is
what its minutes observed, an honest MIXED run where a minute does hold one (checked on a real
recording), and broker_state read instead — with the figure saying why — when the rollup is
missing or behind, or the view is short."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from analysis.minutes import run_minutes
from bench import bench_dashboard as B
from dashboards import data as D
from dashboards.figures import incident_timeline, source_text
from dashboards.states import MIXED, STATES, observation_states, state_runs
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from tests import recordings
from tests.spark_fixtures import spark  # noqa: F401

RECORDING = Path(__file__).parent / "fixtures" / "artemis" / "drill_replication_link_cut.jsonl.gz"
DAYS = 1.0


def bench_state(events: int = 40_000) -> pa.Table:
    """bench_dashboard's broker_state (two instances, failing over every 6 h on the minute, ~4.3 s apart)
    over one day, without the observations of 00:20-00:27 (a hole)."""
    t = B.broker_state(events, DAYS)
    us = t.column("ts").cast(pa.int64()).to_numpy() - int(B.T0.timestamp() * 1e6)
    return t.filter(pa.array((us < 20 * 60e6) | (us >= 27 * 60e6)))


@pytest.fixture(scope="module")
def rolled_up(tmp_path_factory, spark) -> Lakehouse:
    """bench_state and bench_dashboard's gold tables, broker_minutes built by the job. Read only."""
    lh = Lakehouse(tmp_path_factory.mktemp("rolled-up") / "lh")
    lh.overwrite("broker_state", bench_state())
    for name, rows in B.gold_tables(DAYS).items():
        lh.overwrite(name, rows)
    run_minutes(SparkLakehouse(spark, lh))
    return lh


def long_view(gold: D.Gold) -> D.TimelineData:
    return D.load_incident(gold, B.LONG).timeline  # the whole day and a quarter on each side


def test_a_long_view_draws_the_same_runs_from_minutes_as_from_every_observation(rolled_up):
    data = long_view(D.Gold(rolled_up, fresh_s=0))
    assert data.source == D.ROLLUP and data.source_note is None
    state = rolled_up.read("broker_state", columns=["ts", "instance", "reachable", "active", "role"])
    assert data.states == state_runs(state, D.Gold(rolled_up).hole_s)
    assert [r["state"] for r in data.states if r["instance"] == B.A] == ["active", "unknown", "active", "standby",
                                                                        "active", "standby"]
    assert data.events_behind == state.num_rows
    text = source_text(data)
    assert f"{state.num_rows:,} observations, per minute from broker_minutes, in 180 s buckets" in text
    assert "zoom in below 16 h 40 min" in text
    assert any(a.text == text for a in incident_timeline(data, "t").layout.annotations)


def test_every_point_of_a_series_from_minutes_is_what_its_minutes_observed(rolled_up):
    data = long_view(D.Gold(rolled_up, fresh_s=0))
    state = rolled_up.read("broker_state", columns=["ts", "instance", "connections", "total_enqueued"])
    t_us = state.column("ts").cast(pa.int64()).to_numpy()
    width_us = int(data.bucket_s * 1e6)
    first_us = int(data.start.replace(second=0, microsecond=0).timestamp() * 1e6)
    for inst in (B.A, B.B):
        s = data.series[inst]
        mine = pc.equal(state.column("instance"), inst).to_numpy(zero_copy_only=False)
        bucket = (t_us - first_us) // width_us
        last_us = s["ts"].astype("datetime64[us]").astype(np.int64)
        for k in (3, len(last_us) // 2, len(last_us) - 1):  # a bucket's last time, largest connections and counter
            inside = mine & (bucket == (last_us[k] - first_us) // width_us)
            assert last_us[k] == t_us[inside].max()
            assert s["connections"][k] == state.column("connections").to_numpy()[inside].max()
            prev = mine & (bucket == (last_us[k - 1] - first_us) // width_us)
            enq = state.column("total_enqueued").to_numpy()
            grow = (enq[inside].max() - enq[prev].max()) / ((last_us[k] - last_us[k - 1]) / 1e6)
            assert s["in_per_s"][k] == pytest.approx(grow, abs=1e-3)
        assert len(s["ts"]) <= 1000


def test_broker_state_is_read_when_the_rollup_is_behind_missing_or_the_view_short(rolled_up, tmp_path, spark):
    import shutil

    shutil.copytree(rolled_up.root, tmp_path / "lh")
    lh = Lakehouse(tmp_path / "lh")
    gold = D.Gold(lh, fresh_s=0)
    later = B.broker_state(20, DAYS).slice(0, 2)  # two rows more, not rolled up yet
    lh.append("broker_state", later.set_column(0, "obs_key", pa.array(["late-1", "late-2"])))
    behind = long_view(gold)
    assert behind.source == "broker_state" and "broker_minutes is behind broker_state" in behind.source_note
    assert "Read from every observation: the per-minute rollup broker_minutes is behind" in source_text(behind)
    assert behind.states == state_runs(lh.read("broker_state"), gold.hole_s)  # nothing made up meanwhile
    run_minutes(SparkLakehouse(spark, lh))
    assert long_view(gold).source == D.ROLLUP
    short = D.load_incident(gold, B.SHORT).timeline  # ~1 min: every observation
    assert short.source == "broker_state" and short.source_note is None and short.bucket_s == 0
    shutil.rmtree(Path(lh.root) / "gold" / "broker_minutes")
    missing = long_view(D.Gold(lh, fresh_s=0))
    assert missing.source == "broker_state" and "is not built yet (`brokerscope analyze -c CFG` builds it)" in missing.source_note


@pytest.mark.xdist_group(recordings.group(RECORDING))
def test_a_minute_that_held_a_change_is_one_mixed_run_with_what_was_observed(analysed_recordings):
    """The link-cut drill (its broker_minutes written by analyze): every run drawn from minutes lies
    inside the run of the same state drawn from every observation; a MIXED run counts exactly the
    observations per state inside it."""
    drill = analysed_recordings(RECORDING)
    gold = D.Gold(drill.lh, max_points=2)  # 2 points: views over 2 minutes come from broker_minutes
    group = drill.lh.read("broker_minutes", columns=["group_name"]).column("group_name")[0].as_py()
    state = drill.lh.read("broker_state", filter=f"group_name = '{group}'")
    start, end = pc.min(state.column("ts")).as_py(), pc.max(state.column("ts")).as_py()
    data = D.timeline_data(gold, {"cluster": group, "start_ts": start, "end_ts": end}, [], start, end)
    assert data.source == D.ROLLUP
    fine = state_runs(state, gold.hole_s)
    mixed = [r for r in data.states if r["state"] == MIXED]
    assert mixed and len(mixed) < len(data.states)
    ts = state.column("ts").to_pylist()
    codes = observation_states(state)
    for r in data.states:
        if r["state"] == MIXED:
            inside = [STATES[c] for t, i, c in zip(ts, state.column("instance").to_pylist(), codes)
                      if i == r["instance"] and r["start"] <= t <= r["end"]]
            assert {k: inside.count(k) for k in set(inside)} == r["states"]
        else:
            assert any(s["instance"] == r["instance"] and s["state"] == r["state"] and s["start"] <= r["start"]
                       and r["end"] <= s["end"] for s in fine), r
    assert data.events_behind == state.num_rows
    assert D.timeline_data(gold, {"cluster": group, "start_ts": start, "end_ts": end}, [], start,
                           start + timedelta(seconds=60)).source == "broker_state"
