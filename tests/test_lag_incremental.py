"""The lag job incrementally (analysis/lag_increment.py): a recording analysed part by part, as it
arrives, gives replication_lag and replication_findings equal row for row (floats to the bit) to one
full run over all of it — on real drills (Kafka MirrorMaker 2 restart with the brokers' own log
end offsets, Artemis replication link cut), on the cross-cluster capture (Replicator, MM2, consumer)
and on generated series; rows older than stored ones fall back to the full run."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import yaml

from analysis.lag import LAG_TABLES, LagParams
from analysis.lag_increment import run_lag
from analysis.params import analysis_params
from analysis.readiness import run_readiness
from analysis.silver import run_silver
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from lakehouse.tables import contract
from tests.test_incremental import config, recording_lines
from tests.test_incremental_findings import full_run, in_parts

FIX = Path(__file__).parent / "fixtures"


def rows_of(lh: Lakehouse, table: str) -> list[tuple]:
    """The table's rows as tuples, sorted; floats as their bits (NaN equal to NaN, 0.1 + 0.2 ≠ 0.3)."""
    def cell(v):
        return ("f", np.float64(v).tobytes().hex()) if isinstance(v, float) else v
    return sorted((tuple(cell(v) for v in r.values()) for r in lh.read(table).to_pylist()), key=repr)


def lag_jobs(cfg, spark, said: list[str], full: bool = False) -> None:
    """What `brokerscope analyze` runs that the lag job reads: silver, readiness (kafka_offsets), then lag."""
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()))
    params = analysis_params(cfg)
    run_silver(slh, params.spine.targets, said.append, full=full, skew_threshold=params.spine.skew_threshold)
    if slh.lakehouse.exists("bronze_kafka"):
        run_readiness(slh, params.readiness, progress=said.append, full=full)
    run_lag(slh, params.lag, progress=said.append, full=full)


def assert_incremental_equals_full(inc: Lakehouse, full: Lakehouse) -> dict[str, list]:
    got = {t: rows_of(inc, t) for t in LAG_TABLES}
    want = {t: rows_of(full, t) for t in LAG_TABLES}
    for t in LAG_TABLES:
        assert len(got[t]) == len(want[t]), t
        assert got[t] == want[t], t
    return got


# cuts: line numbers of the recording where a part ends. At a Kafka-protocol round's first exchange (a
# round split across two parts is recomputed in full: its stored rows would change), where the silver
# job itself goes on incrementally.
DRILLS = [
    # Kafka MM2 restart: MM2's own lag (mirrormaker2), the brokers' log end offsets (mirror-offsets, DR's
    # copy stalls while MM2 is down), isr; cut before the restart and after MM2 is back
    pytest.param("kafka/drill_mm2_restart", [124, 336], {"consumer", "mirror-offsets", "mirrormaker2"}, {"consumer-stall"}, id="mm2_restart"),
    # Artemis replication: the link cut while the live stays up (replica-sync-gap); cut in and after the gap
    pytest.param("artemis/drill_replication_link_cut", [300, 650], set(), {"replica-sync-gap"}, id="link_cut"),
]


@pytest.mark.parametrize("stem, cuts, flows, codes", DRILLS)
def test_a_drill_analysed_in_parts_gives_the_full_runs_lag_rows_and_findings(stem, cuts, flows, codes, tmp_path, spark):
    data = yaml.safe_load((FIX / f"{stem}.yaml").read_text())
    lines = recording_lines([FIX / f"{stem}.jsonl.gz"])
    inc = config(data, tmp_path / "inc")
    said: list[str] = []
    in_parts(inc, lines, cuts, tmp_path, lambda: lag_jobs(inc, spark, said))
    increments = [m for m in said if "replication_lag (incremental" in m]
    assert len(increments) == len(cuts), [m for m in said if "recomputing" in m or "full" in m or "lag" in m]
    full = full_run(data, lines, tmp_path, lambda cfg: lag_jobs(cfg, spark, [], full=True))
    assert_incremental_equals_full(Lakehouse(inc.lakehouse_root()), full)
    assert set(full.read("replication_lag", columns=["flow"]).column("flow").to_pylist()) == flows
    assert codes <= set(full.read("replication_findings", columns=["code"]).column("code").to_pylist())


# --- generated series ----------------------------------------------------------------------------------------

T0 = datetime(2026, 11, 27, 8, 0, tzinfo=timezone.utc)


def generated(instances: int, series: int, scrapes: int, seed: int, start: int = 0) -> tuple[pa.Table, pa.Table]:
    """replication_stats (flows replicator, consumer) and collector_health of `instances` workers scraped
    every 10 s (±jitter), `series` partitions each: lag that builds up and drains, throughput that
    stops (STALL), scrapes that fail (not observed), partitions that go silent (STOP), a partition
    reported without throughput for a while (lag-only)."""
    rng = np.random.default_rng(seed)
    repl, health = [], []
    for i in range(instances):
        inst = f"worker-{i}"
        for k in range(start, start + scrapes):
            ts = T0 + timedelta(seconds=10 * k, milliseconds=int(rng.integers(0, 900)) + i)
            answered = rng.random() > 0.04
            date = ts.strftime("%Y-%m-%d")
            key = f"{inst}/{k}"
            health.append({"obs_key": key, "ts": ts, "obs_date": date, "kind": "kafka", "target": inst, "instance": inst,
                           "group_name": "lag", "answered": answered, "items": 1, "items_ok": 1, "items_failed": 0})
            if not answered:
                continue
            for p in range(series):
                if p == series - 1 and (k // 40) % 3 == 2:
                    continue  # silent for a while: STOP, then back
                phase = math.sin((k + 7 * p) / (15 + p))
                lag = max(0.0, round(4000 * phase + rng.normal(0, 300))) if p != series - 1 else 500.0 + k
                flow = "consumer" if p % 4 == 3 else "replicator"
                thr = float(round(rng.uniform(0, 900), 3)) if (k // 25 + p) % 5 else 0.0
                repl.append({"obs_key": key, "ts": ts, "obs_date": date, "kind": "kafka", "group_name": "lag", "instance": inst,
                             "flow": flow, "source_cluster": "dc1", "target_cluster": "dc2", "topic": f"t{p // 3}",
                             "partition": p % 3, "client": None if flow == "replicator" else "app",
                             "lag_messages": lag, "latency_ms": float(rng.uniform(5, 40_000)) if p % 2 else None,
                             "throughput_per_s": None if flow == "consumer" else thr})
    return (pa.Table.from_pylist(repl, schema=contract("replication_stats").schema),
            pa.Table.from_pylist(health, schema=contract("collector_health").schema))


def silver_lakehouse(root: Path, parts: list[tuple[pa.Table, pa.Table]]) -> Lakehouse:
    lh = Lakehouse(root)
    for repl, health in parts:
        lh.append("replication_stats", repl)
        lh.append("collector_health", health)
    return lh


PARAMS = LagParams(window=5, lookup_points=8, lag_threshold=20.0, hole_s=25.0)


def test_generated_series_appended_in_parts_give_the_full_runs_rows(tmp_path, spark):
    parts = [generated(3, 9, n, seed=s, start=a) for s, (a, n) in enumerate([(0, 130), (130, 3), (133, 47), (180, 60)])]
    full = silver_lakehouse(tmp_path / "full", parts)
    run_lag(SparkLakehouse(spark, full), PARAMS, full=True)
    inc = Lakehouse(tmp_path / "inc")
    slh = SparkLakehouse(spark, inc)
    said: list[str] = []
    for part in parts:
        silver_lakehouse(tmp_path / "inc", [part])
        run_lag(slh, PARAMS, progress=said.append)
    assert sum("(incremental" in m and "replication_lag" in m for m in said) == len(parts) - 1, said
    got = assert_incremental_equals_full(inc, full)
    codes = set(inc.read("replication_findings", columns=["code"]).column("code").to_pylist())
    assert {"replication-lag", "consumer-stop", "consumer-stall"} <= codes, codes
    assert any(r for r in got["replication_lag"])
    # nothing new: nothing written
    versions = {t: inc.version(t) for t in (*LAG_TABLES, "lag_carry")}
    run_lag(slh, PARAMS, progress=said.append)
    assert {t: inc.version(t) for t in versions} == versions


def test_rows_older_than_stored_ones_fall_back_to_the_full_run(tmp_path, spark):
    repl, health = generated(2, 4, 100, seed=5)
    ts = np.array([t.timestamp() for t in repl.column("ts").to_pylist()])
    hts = np.array([t.timestamp() for t in health.column("ts").to_pylist()])
    cut = T0.timestamp() + 600
    late = (ts < cut) & (np.arange(len(ts)) % 11 == 0)  # observations that arrive after later ones
    first = (repl.filter(pa.array(~late & (ts < cut + 200))), health.filter(pa.array(hts < cut + 200)))
    second = (repl.filter(pa.array(late | (ts >= cut + 200))), health.filter(pa.array(hts >= cut + 200)))
    inc = silver_lakehouse(tmp_path / "inc", [first])
    slh = SparkLakehouse(spark, inc)
    run_lag(slh, PARAMS)
    silver_lakehouse(tmp_path / "inc", [second])
    said: list[str] = []
    run_lag(slh, PARAMS, progress=said.append)
    assert any("rows not later than stored ones, recomputing" in m for m in said), said
    full = silver_lakehouse(tmp_path / "full", [(repl, health)])
    run_lag(SparkLakehouse(spark, full), PARAMS, full=True)
    assert_incremental_equals_full(inc, full)
    # and the carries it wrote let the next part go on incrementally again
    more = generated(2, 4, 20, seed=6, start=100)
    for lh in (inc, full):
        silver_lakehouse(lh.root, [more])
    said.clear()
    run_lag(slh, PARAMS, progress=said.append)
    run_lag(SparkLakehouse(spark, full), PARAMS, full=True)
    assert any("replication_lag (incremental" in m for m in said), said
    assert_incremental_equals_full(inc, full)


def test_the_carry_round_trips_floats_to_the_bit():
    """lag_carry keeps floats as JSON (Python's repr): every float64 comes back the same."""
    values = [0.1 + 0.2, 1 / 3, 5e-324, 1.7976931348623157e308, -0.0, math.inf, -math.inf]
    back = json.loads(json.dumps(values))
    assert [np.float64(v).tobytes() for v in back] == [np.float64(v).tobytes() for v in values]
    assert math.isnan(json.loads(json.dumps(math.nan)))


def test_a_sum_carried_across_parts_is_the_one_sum(monkeypatch):
    """derived_positions goes on from a carried (time, position) term by term: the same float64 as one sum."""
    from analysis.lag import derived_positions
    rng = np.random.default_rng(1)
    ts = np.cumsum(rng.uniform(0.1, 20, 500)) + 1.7e9
    thr = rng.uniform(0, 1e4, 500)
    whole = derived_positions(ts, thr)
    for cut in (1, 7, 250, 499):
        tail = derived_positions(ts[cut:], thr[cut:], (ts[cut - 1], whole[cut - 1]))
        assert whole[cut:].tobytes() == tail.tobytes()
    assert pd.Series(whole).is_monotonic_increasing


def quiet_health(instances: int, start: int, scrapes: int) -> pa.Table:
    """collector_health of ActiveMQ brokers that report no replication (master/slave pairs)."""
    rows = []
    for i in range(instances):
        inst = f"amq-{i}"
        for k in range(start, start + scrapes):
            ts = T0 + timedelta(seconds=10 * k, milliseconds=3 * i)
            rows.append({"obs_key": f"{inst}/{k}", "ts": ts, "obs_date": ts.strftime("%Y-%m-%d"), "kind": "activemq",
                         "target": inst, "instance": inst, "group_name": f"pair-{i // 2}", "answered": k % 17 != 3,
                         "items": 1, "items_ok": 1, "items_failed": 0})
    return pa.Table.from_pylist(rows, schema=contract("collector_health").schema)


def test_a_run_without_replication_rows_commits_only_lag_carry_and_equals_the_full_run(tmp_path, spark, monkeypatch):
    """Parts with no replication row (only scrapes of brokers without lag series) leave replication_lag and
    replication_findings as they are (no commit) and carry the instances' last scrapes in lag_carry; the
    run after them goes on incrementally from that lag_carry (its watermark differs from the one the
    other two outputs' last commits carry: the silver job's moved on); every table, lag_carry too, equals
    the full run's."""
    from analysis import lag_increment
    from analysis.silver import SILVER_JOB
    from analysis.watermark import Watermark, read_watermark

    silver_version = [0]  # the bronze version silver reflects: one more per part, as in `brokerscope run`
    monkeypatch.setattr(lag_increment, "read_watermark", lambda lh, job, outputs: Watermark(SILVER_JOB, silver_version[0], "s")
                        if job == SILVER_JOB else read_watermark(lh, job, outputs))
    repl, health = generated(2, 4, 60, seed=3)
    empty = repl.slice(0, 0)
    parts = [(repl, pa.concat_tables([health, quiet_health(4, 0, 60)])),
             (empty, quiet_health(4, 60, 5)), (empty, quiet_health(5, 65, 5))]  # a new instance in the third part
    more = generated(2, 4, 30, seed=4, start=60)
    parts.append((more[0], pa.concat_tables([more[1], quiet_health(5, 70, 3)])))
    inc = Lakehouse(tmp_path / "inc")
    slh = SparkLakehouse(spark, inc)
    for n, part in enumerate(parts):
        silver_lakehouse(tmp_path / "inc", [part])
        silver_version[0] = n
        before = {t: inc.version(t) for t in (*LAG_TABLES, "lag_carry")}
        said: list[str] = []
        run_lag(slh, PARAMS, progress=said.append)
        after = {t: inc.version(t) for t in before}
        if n in (1, 2):
            assert any("no replication rows since the last run" in m for m in said), said
            assert {t: after[t] for t in LAG_TABLES} == {t: before[t] for t in LAG_TABLES}, said
            assert after["lag_carry"] == before["lag_carry"] + 1
        if n == 3:
            assert any("(incremental" in m and "replication_lag" in m for m in said), said
        full = silver_lakehouse(tmp_path / f"full{n}", parts[:n + 1])
        run_lag(SparkLakehouse(spark, full), PARAMS, full=True)
        assert_incremental_equals_full(inc, full)
        assert rows_of(inc, "lag_carry") == rows_of(full, "lag_carry"), n
