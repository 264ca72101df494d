"""Clock skew between collectors: each target's offset (broker clock − collector clock) estimated
from the Jolokia agents' item `timestamp`s, and the target's silver rows shifted by it before the
gold steps order observations — on tiny frames (the estimator), and through the spine on the
simulator's clock-skew scenario (the shift, the contract columns, incremental == full)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analysis import clock_skew as skew_module
from analysis import watermark as watermark_module
from analysis.clock_skew import estimate_skews, estimate_skews_by_target, rolling_medians, skew_sample_batch
from brokerscope.simulate import Spec, build
from brokerscope.simulate.jolokia import jsonl
from brokerscope.simulate.render import config as scenario_config
from brokerscope.simulate.render import envelopes
from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.test_incremental import snapshot, spine

T0 = 1_795_000_000.0  # epoch seconds


def frame(collector_ts, broker_ts, answered=None) -> pd.DataFrame:
    """One target's samples as the spine makes them: agent stamp (whole s) + 0.5 − collector ts."""
    collector_ts = np.asarray(collector_ts, dtype=float)
    samples = np.floor(np.asarray(broker_ts, dtype=float)) + 0.5 - collector_ts
    if answered is not None:
        samples = np.where(answered, samples, np.nan)
    return pd.DataFrame({"obs_key": [f"k{i:04d}" for i in range(len(collector_ts))],
                         "us": np.round(collector_ts * 1e6).astype(np.int64), "sample": samples})


def scrapes(n: int, skew: float, seed: int = 0) -> pd.DataFrame:
    """n scrapes 1 s apart whose sub-second phase varies (a real collector's drift); the broker's
    clock runs `skew` seconds ahead of the collector's."""
    rng = np.random.default_rng(seed)
    true = T0 + np.arange(n) + rng.uniform(0, 1, n)
    return frame(true - skew, true)


# --- the estimator ------------------------------------------------------------------------------------


@pytest.mark.parametrize("skew", [3.4, -2.7, 1.25])
def test_skew_is_estimated_within_a_fraction_of_a_second_and_applied(skew):
    out = estimate_skews(scrapes(120, skew))
    est = out["clock_skew_s"].iloc[-1]
    assert abs(est - skew) < 0.25, est
    assert out["shift_us"].iloc[-1] == round(est * 1000) * 1000  # whole ms
    assert (out["shift_us"] != 0).all()


def test_skew_below_the_threshold_is_recorded_but_moves_nothing():
    out = estimate_skews(scrapes(120, 0.3))
    assert out["clock_skew_s"].notna().all() and abs(out["clock_skew_s"].iloc[-1] - 0.3) < 0.25
    assert (out["shift_us"] == 0).all()
    # a configured threshold
    assert (estimate_skews(scrapes(120, 0.3), threshold=0.1)["shift_us"] != 0).all()


def test_too_few_samples_give_no_estimate_and_no_shift():
    out = estimate_skews(scrapes(skew_module.SKEW_MIN_SAMPLES - 1, 3.4))
    assert out["clock_skew_s"].isna().all() and (out["shift_us"] == 0).all()
    unanswered = frame(T0 + np.arange(10), T0 + np.arange(10), answered=np.zeros(10, dtype=bool))
    out = estimate_skews(unanswered)
    assert out["clock_skew_s"].isna().all() and (out["shift_us"] == 0).all()


def test_early_and_unanswered_rows_take_their_targets_estimate():
    df = scrapes(20, 3.4)
    df.loc[[0, 1, 10, 11], "sample"] = np.nan  # unanswered scrapes: before any answer, and in between
    out = estimate_skews(df.iloc[::-1])  # any input order
    by_key = out.set_index("obs_key")["clock_skew_s"]
    known = df["sample"].dropna()
    first = known.iloc[: skew_module.SKEW_MIN_SAMPLES].median()  # rows before the 5th sample: its estimate
    for i in range(2, 2 + skew_module.SKEW_MIN_SAMPLES):
        assert by_key[f"k{i:04d}"] == pytest.approx(first)
    assert by_key["k0000"] == by_key["k0001"] == pytest.approx(first)
    assert by_key["k0010"] == by_key["k0011"] == by_key["k0009"]  # the last estimate before
    assert (out["shift_us"] != 0).all()  # every row of the target moves, answered or not


def test_the_estimate_is_causal_so_appending_rows_changes_no_stored_one():
    df = scrapes(200, -3.4, seed=3)
    whole = estimate_skews(df).set_index("obs_key")
    for cut in (skew_module.SKEW_MIN_SAMPLES, 37, 150):
        part = estimate_skews(df.iloc[:cut]).set_index("obs_key")
        pd.testing.assert_frame_equal(part, whole.loc[part.index])


@pytest.mark.parametrize("window,min_periods,chunk", [(60, 5, 32_768), (4, 2, 7), (1, 1, 3)])
def test_rolling_medians_of_many_keys_are_pandas_rolling_medians_exactly(monkeypatch, window, min_periods, chunk):
    monkeypatch.setattr(skew_module, "ROLLING_CHUNK_ROWS", chunk)
    rng = np.random.default_rng(7)
    keys = np.sort(rng.integers(0, 9, 700))
    values = np.round(rng.normal(0, 3, len(keys)), 2)  # ties, so the even-count means are exercised
    expect = pd.Series(values).groupby(keys).rolling(window, min_periods=min_periods).median().reset_index(level=0, drop=True)
    np.testing.assert_array_equal(rolling_medians(keys, values, window, min_periods), expect.sort_index().to_numpy())


def test_every_target_at_once_is_each_target_on_its_own():
    parts = [scrapes(90, skew, seed=i).assign(target=f"t{i}", obs_key=lambda d, i=i: f"{i}-" + d["obs_key"])
             for i, skew in enumerate((-3.4, 0.2, 2.5))]
    parts[1].loc[parts[1].index[::4], "sample"] = np.nan  # unanswered scrapes: the estimate before them
    together = estimate_skews_by_target(pd.concat(parts).sample(frac=1, random_state=1)).set_index("obs_key")
    for part in parts:
        alone = estimate_skews(part.drop(columns="target")).set_index("obs_key")
        pd.testing.assert_frame_equal(together.loc[alone.index].drop(columns="target"), alone)


def test_the_running_median_follows_a_clock_step():
    df = pd.concat([scrapes(200, 0.0, seed=1), scrapes(200, 5.0, seed=2).assign(
        us=lambda d: d["us"] + 200_000_000, obs_key=lambda d: "m" + d["obs_key"])])
    out = estimate_skews(df)
    assert (out["shift_us"].iloc[:200] == 0).all()
    assert abs(out["clock_skew_s"].iloc[-1] - 5.0) < 0.25  # a window after the step: the new offset


def test_one_sample_per_answered_scrape_from_the_agents_timestamps():
    ts = datetime(2026, 11, 23, 9, 0, 0, 250_000, tzinfo=timezone.utc)
    items = [{"timestamp": int(ts.timestamp()) + 3, "status": 200}, {"timestamp": int(ts.timestamp()) + 4, "status": 200},
             {"timestamp": int(ts.timestamp()) + 3, "status": 404}]
    batch = pa.RecordBatch.from_pydict({
        "obs_key": ["a", "b", "c"], "target": ["t", "t", "t"],
        "ts": pa.array([ts, ts, ts], pa.timestamp("us", tz="UTC")),
        "response_json": [json.dumps(items), None, json.dumps({"error": "x"})],
        "error": [None, "refused", None]})
    out = skew_sample_batch(batch).to_pydict()
    assert out["obs_key"] == ["a", "b", "c"]
    assert out["sample"][0] == pytest.approx(3 + 0.5 - 0.25)  # median stamp + 0.5 − ts
    assert out["sample"][1:] == [None, None]


# --- through the spine, on the simulator's clock-skew scenario ------------------------------------------


def skew_scenario(skew: float | None = None):
    sc = build("clock-skew", replace(Spec("activemq", seed=1, interval=1.0, duration=30.0), skew=skew))
    lines = [line.rstrip("\n") for line in jsonl(e for e in envelopes(sc) if e["source"] == "jolokia")]
    return sc, lines


def load(sc, lines: list[str], root: Path, workdir: Path):
    cfg = config_from_dict({**scenario_config(sc), "lakehouse": str(root)})
    path = workdir / f"{root.name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    replay(cfg, path)
    return cfg


def test_the_skewed_collectors_rows_are_placed_on_the_brokers_clock(tmp_path, spark):
    sc, lines = skew_scenario()
    cfg = load(sc, lines, tmp_path / "lh", tmp_path)
    spine(cfg, spark, full=True)
    lh = Lakehouse(cfg.lakehouse_root())
    a, b = (m.name for m in sc.members)
    health = lh.read("collector_health").to_pylist()
    for row in health:
        if row["target"] == b:  # its collector 3.4 s behind; the phase (ms after the second) costs 0.49 s
            assert row["clock_skew_s"] == pytest.approx(3.4, abs=0.5)
            assert row["ts"] - row["collector_ts"] == timedelta(milliseconds=round(row["clock_skew_s"] * 1000))
        else:  # in step: below the threshold, recorded, nothing moved
            assert abs(row["clock_skew_s"]) < skew_module.CLOCK_SKEW_THRESHOLD_S and row["ts"] == row["collector_ts"]
    shifted = {r["obs_key"]: r["ts"] for r in health}
    assert all(r["ts"] == shifted[r["obs_key"]] for r in lh.read("broker_state").to_pylist())
    assert lh.read("split_brain_windows").num_rows == 0
    (fo,) = lh.read("failover_events").to_pylist()
    assert (fo["from_instance"], fo["to_instance"]) == (a, b)


@pytest.mark.parametrize("window, tail_s, cuts", [
    (5, 600, [14, 45]),  # the running median's context from the recent tail
    (5, 1, [14, 45]),  # the tail too short: stored rows of the target read
])
def test_incremental_equals_full_with_skew(window, tail_s, cuts, tmp_path, spark, monkeypatch):
    monkeypatch.setattr(skew_module, "SKEW_WINDOW", window)
    monkeypatch.setattr(watermark_module, "RESUME_TAIL_US", tail_s * 1_000_000)
    sc, lines = skew_scenario()
    inc_cfg = None
    said: list[str] = []
    for i, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(lines)])):
        part = tmp_path / f"part{i}.jsonl"
        part.write_text("\n".join(lines[lo:hi]) + "\n")
        if inc_cfg is None:
            inc_cfg = config_from_dict({**scenario_config(sc), "lakehouse": str(tmp_path / "inc")})
        replay(inc_cfg, part)
        spine(inc_cfg, spark, said)
    assert any("bronze → silver" in m and "incremental" in m for m in said), said
    full_cfg = load(sc, lines, tmp_path / "full", tmp_path)
    spine(full_cfg, spark, full=True)
    assert snapshot(Lakehouse(inc_cfg.lakehouse_root())) == snapshot(Lakehouse(full_cfg.lakehouse_root()))
