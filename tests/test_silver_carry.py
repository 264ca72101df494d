"""The silver job's incremental runs from its carry (analysis/silver_carry.py): the new bronze rows
parsed once, on the driver when they are few (else in Spark), their clock skews and derived groups
from what the last run carried instead of stored rows read back, a table without new rows left
without a commit — and silver equal to one full run row for row, the carry too; late rows fall back
to the full run. Pure parts on tiny frames; the job on the simulator's clock-skew scenario (one
collector 3.4 s behind; a bad value and control characters in one answer) and the Artemis captures
(groups derived from the NodeID)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from analysis import clock_skew as skew_module
from analysis import silver as silver_module
from analysis.clock_skew import estimate_skews
from analysis.groups import fill_derived_groups
from analysis.params import spine_params
from analysis.silver import run_silver, silver_watermark
from analysis.silver_carry import (Carry, fill_from_carry, instance_summaries, merged, micros_of, skews_from_carry,
                                   target_summaries)
from collectors.replay import replay
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from lakehouse.tables import SILVER_FROM_JOLOKIA
from settings import config_from_dict
from tests.test_clock_skew import scenario_config, skew_scenario
from tests.test_incremental import artemis, config, snapshot

SILVER = (*SILVER_FROM_JOLOKIA, "silver_carry")


# --- the carry on tiny frames ------------------------------------------------------------------------------


def samples_frame(n: int, seed: int) -> pd.DataFrame:
    """One target's samples: a clock step half-way, a fifth of the scrapes unanswered."""
    rng = np.random.default_rng(seed)
    sample = np.where(np.arange(n) < n // 2, 0.2, 3.1) + rng.normal(0, 0.3, n)
    sample[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({"obs_key": [f"k{i:04d}" for i in range(n)], "target": "t",
                         "us": 1_000_000 * np.arange(n, dtype="int64") + rng.integers(0, 999, n), "sample": sample})


@pytest.mark.parametrize("window", [5, 60])
def test_skews_from_the_carry_equal_the_running_median_over_every_row(window, monkeypatch):
    monkeypatch.setattr(skew_module, "SKEW_WINDOW", window)
    rows = samples_frame(200, seed=window)
    full = estimate_skews(rows, 1.0, window, skew_module.SKEW_MIN_SAMPLES).set_index("obs_key")
    carry, got = Carry(), []
    for lo, hi in [(0, 12), (12, 13), (13, 90), (90, 200)]:  # parts as ticks bring them, one of a single row
        part = rows.iloc[lo:hi]
        skews = skews_from_carry(part, carry, 1.0)
        assert skews is not None
        got.append(skews)
        carry = merged(carry, target_summaries(part, window), {}, window)
    got = pd.concat(got).set_index("obs_key")
    pd.testing.assert_frame_equal(got.loc[full.index], full, check_dtype=False)
    assert carry.targets["t"] == target_summaries(rows, window)["t"]  # merged part by part = summarised at once


def test_late_rows_and_stored_rows_waiting_for_an_estimate_are_not_continued():
    rows = samples_frame(40, seed=1)
    carry = merged(Carry(), target_summaries(rows.iloc[:20], 60), {}, 60)
    assert skews_from_carry(rows.iloc[19:], carry, 1.0) is None  # a row not later than a stored one
    waiting = rows.iloc[:30].assign(sample=np.nan)
    waiting.loc[waiting.index[:3], "sample"] = 0.5  # 3 samples stored: below SKEW_MIN_SAMPLES, no estimate yet
    carry = merged(Carry(), target_summaries(waiting, 60), {}, 60)
    assert skews_from_carry(rows.iloc[30:], carry, 1.0) is None  # its samples would give the stored rows one
    assert skews_from_carry(rows.iloc[30:].assign(sample=np.nan), carry, 1.0) is not None


def state_rows(seed: int, n: int = 60) -> list[dict]:
    """broker_state rows of three instances: unanswered ones (group = the instance) between derived groups."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2026-11-27", tz="UTC").to_pydatetime()
    rows = []
    for k in range(n):
        instance = f"i{k % 3}"
        group = instance if rng.random() < 0.5 else f"g{rng.integers(0, 2)}"
        rows.append({"instance": instance, "group_name": group, "ts": t0 + pd.Timedelta(seconds=k).to_pytimedelta()})
    rows.append({"instance": "i3", "group_name": "i3", "ts": t0})  # never derived: waits for a group
    return rows


def test_groups_filled_from_the_carry_equal_a_fill_over_every_row(spark):
    rows = state_rows(seed=4)
    configured = {"i2"}
    frame = spark.createDataFrame(pd.DataFrame(rows))
    want = {(r.instance, r.us): r.group_name for r in fill_derived_groups(frame, configured).select(
        "instance", F.unix_micros("ts").alias("us"), "group_name").collect()}
    carry, got = Carry(), {}
    for lo, hi in [(0, 10), (10, 11), (11, len(rows) - 1)]:
        part = [dict(r) for r in rows[lo:hi]]
        assert fill_from_carry(part, configured, carry)
        got.update({(r["instance"], micros_of(r["ts"])): r["group_name"] for r in part})
        carry = merged(carry, {}, instance_summaries(part, configured), 60)
    last = [dict(rows[-1])]
    assert fill_from_carry(last, configured, carry)  # i3 is new
    got[("i3", micros_of(last[0]["ts"]))] = last[0]["group_name"]
    assert got == want
    carry = merged(carry, {}, instance_summaries(last, configured), 60)
    later = rows[-2]["ts"] + pd.Timedelta(seconds=1).to_pytimedelta()
    assert not fill_from_carry([{"instance": "i0", "group_name": "g1", "ts": rows[0]["ts"]}], configured, carry)  # late
    assert not fill_from_carry([{"instance": "i3", "group_name": "g0", "ts": later}], configured, carry)  # i3's rows wait
    assert fill_from_carry([{"instance": "i3", "group_name": "i3", "ts": later}], configured, carry)


# --- the job ------------------------------------------------------------------------------------------------


def silver(cfg, spark, said: list[str], full: bool = False, mode: str = "auto") -> None:
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()), mode=mode)
    params = spine_params(cfg)
    run_silver(slh, params.targets, said.append, full=full, skew_threshold=params.skew_threshold)


def in_parts(cfg, lines: list[str], cuts: list[int], workdir, spark, mode: str = "auto") -> tuple[list[str], list[dict]]:
    """Replay the lines part by part, the silver job after each; what it said, and the tables' versions after each."""
    said, versions = [], []
    for i, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(lines)])):
        part = workdir / f"part{i}.jsonl"
        part.write_text("\n".join(lines[a:b]) + "\n")
        replay(cfg, part)
        silver(cfg, spark, said, mode=mode)
        lh = Lakehouse(cfg.lakehouse_root())
        versions.append({t: lh.version(t) for t in SILVER})
    return said, versions


def poisoned(lines: list[str], at: int) -> list[str]:
    """The lines with a number for a text attribute and control characters in a store name, in line `at`."""
    bad = lines[at].replace('"BrokerName":"amq-a"', '"BrokerName":42', 1).replace('"BrokerName":"amq-b"', '"BrokerName":42', 1)
    bad = bad.replace('KahaDBPersistenceAdapter[', 'KahaDBPersistenceAdapter[\\u0007\\u001b', 1)
    assert bad != lines[at]
    return [*lines[:at], bad, *lines[at + 1:]]


@pytest.mark.parametrize("small_rows, mode", [(silver_module.SMALL_APPEND_ROWS, "native"), (0, "native"),  # on the driver / in Spark
                                              (silver_module.SMALL_APPEND_ROWS, "bridge")])  # delta-rs commits
def test_silver_in_parts_equals_one_full_run_with_skew_and_bad_values(small_rows, mode, tmp_path, spark, monkeypatch):
    monkeypatch.setattr(skew_module, "SKEW_WINDOW", 5)  # the running median's context spans parts
    monkeypatch.setattr(silver_module, "SMALL_APPEND_ROWS", small_rows)
    sc, lines = skew_scenario()
    lines = poisoned(lines, 51)
    inc = config_from_dict({**scenario_config(sc), "lakehouse": str(tmp_path / "inc")})
    said, versions = in_parts(inc, lines, [14, 30, 31, 45], tmp_path, spark, mode)
    assert sum("(full)" in m for m in said) == 1 and sum("(incremental" in m for m in said) == 4, said
    assert all(("on the driver" in m) == bool(small_rows) for m in said if "(incremental" in m), said
    full = config_from_dict({**scenario_config(sc), "lakehouse": str(tmp_path / "full")})
    (tmp_path / "all.jsonl").write_text("\n".join(lines) + "\n")
    replay(full, tmp_path / "all.jsonl")
    silver(full, spark, [], full=True)
    got, want = snapshot(Lakehouse(inc.lakehouse_root()), SILVER), snapshot(Lakehouse(full.lakehouse_root()), SILVER)
    assert got == want
    assert any(r["values_quarantined"] for r in got["collector_health"])
    assert any(r["clock_skew_s"] and abs(r["clock_skew_s"]) > 3 for r in got["collector_health"])
    if small_rows:  # no replication rows: replication_stats keeps its first commit, the watermark goes on in silver_carry
        assert {v["replication_stats"] for v in versions} == {versions[0]["replication_stats"]}
        assert len({v["silver_carry"] for v in versions}) == len(versions)
        lh = Lakehouse(inc.lakehouse_root())
        assert silver_watermark(lh).input_version == lh.version("bronze_jolokia")


def test_silver_on_the_driver_derives_groups_as_the_full_run(artemis_in_full, tmp_path, spark):
    data, lines = artemis()
    inc = config(data, tmp_path / "inc")
    # each target has SKEW_MIN_SAMPLES answers stored before its next part (else the full run: its stored rows
    # would take the estimate the new samples give); parts of the first and of the second capture, and across both
    said, _ = in_parts(inc, lines, [12, 26, 52, 58], tmp_path, spark)
    assert sum("on the driver" in m for m in said) == 4, said
    assert snapshot(Lakehouse(inc.lakehouse_root()), SILVER) == snapshot(artemis_in_full, SILVER)


def test_late_bronze_rows_fall_back_to_the_full_run(tmp_path, spark):
    sc, lines = skew_scenario()
    inc = config_from_dict({**scenario_config(sc), "lakehouse": str(tmp_path / "inc")})
    said, _ = in_parts(inc, [*lines[:14], *lines[30:], *lines[14:30]], [14, len(lines) - 16], tmp_path, spark)
    assert said[-2:] == ["bronze → silver: new rows change the clock skew of stored ones, recomputing",
                         "bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA) + " (full)"], said
