"""Lag job (issue P15): a full run vs an incremental run over 1 % new rows, at two history sizes, side by
side in one run — replication_stats + collector_health → gold replication_lag, replication_findings.

    python bench/bench_lag.py                       # 12 workers x 25 partitions x 1,000 / 4,000 scrapes (0.3 M, 1.2 M rows)
    python bench/bench_lag.py --scrapes 200,800     # a quick run

Per history size:
1. Generates silver rows as the silver job writes them: `--instances` Replicator / consumer workers
   scraped every 10 s (jitter, 3 % of scrapes unanswered), `--partitions` series each (lag that builds
   and drains, throughput that stops: STALL, WARN and lag findings); the history (`--scrapes` per
   worker) and 1 % more scrapes kept aside. Written with delta-rs, oldest first, in 10 commits.
2. A full run over the history (`run_lag(full=True)`): the state every later run starts from.
3. The 1 % appended; the incremental run (`run_lag()`: the carried state plus `read_appended`).
4. The full run over the same data (history + 1 %), on a copy of the lakehouse: what an incremental
   run saves. Asserts that both give replication_lag and replication_findings equal row for row, floats
   to the bit.
Times are wall seconds from the call to its return (reads, Python workers, writes, commits); the
Spark start and a warm-up on the smaller size's own data are not included.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from lakehouse.store import Lakehouse  # noqa: E402
from lakehouse.tables import contract  # noqa: E402

T0 = dt.datetime(2026, 11, 20, 0, 0, tzinfo=dt.timezone.utc)
STEP_S = 10


def generate(instances: int, partitions: int, first: int, scrapes: int, seed: int) -> tuple[pa.Table, pa.Table]:
    """(replication_stats, collector_health) of scrapes first … first + scrapes − 1 of every worker."""
    rng = np.random.default_rng(seed + first)
    k = np.arange(first, first + scrapes)
    repl, health = [], []
    for i in range(instances):
        inst = f"worker-{i:02d}"
        ts_us = (T0.timestamp() * 1e6 + (k * STEP_S * 1_000_000) + rng.integers(0, 900_000, len(k)) + i * 1000).astype("int64")
        answered = rng.random(len(k)) > 0.03
        dates = np.datetime_as_string(ts_us.astype("datetime64[us]"), unit="D").astype(object)
        keys = np.char.add(f"{inst}/", k.astype(str)).astype(object)
        ts = pa.array(ts_us, pa.timestamp("us", tz="UTC"))
        health.append(pa.table({
            "obs_key": keys, "ts": ts, "obs_date": dates, "kind": ["kafka"] * len(k), "target": [inst] * len(k),
            "instance": [inst] * len(k), "group_name": ["lag"] * len(k), "answered": answered,
            "items": np.ones(len(k), np.int32), "items_ok": np.ones(len(k), np.int32), "items_failed": np.zeros(len(k), np.int32),
        }))
        ok = np.flatnonzero(answered)
        for p in range(partitions):
            consumer = p % 4 == 3
            phase = np.sin((k[ok] + 7 * p) / (40 + p))
            lag = np.maximum(0.0, np.round(5000 * phase + rng.normal(0, 300, len(ok))))
            thr = np.round(rng.uniform(0, 900, len(ok)), 3) * (((k[ok] // 50) + p) % 6 != 0)  # throughput stops now and then
            n = len(ok)
            repl.append(pa.table({
                "obs_key": keys[ok], "ts": ts.take(pa.array(ok)), "obs_date": dates[ok], "kind": ["kafka"] * n,
                "group_name": ["lag"] * n, "instance": [inst] * n, "flow": ["consumer" if consumer else "replicator"] * n,
                "source_cluster": ["dc1"] * n, "target_cluster": ["dc2"] * n, "topic": [f"topic-{p // 5}"] * n,
                "partition": np.full(n, p % 5, np.int32), "client": ["app" if consumer else None] * n, "lag_messages": lag,
                "latency_ms": rng.uniform(5, 90_000, n) if p % 2 else np.full(n, np.nan),
                "throughput_per_s": np.full(n, np.nan) if consumer else thr,
            }))
    return (_conform(pa.concat_tables(repl, promote_options="default"), "replication_stats"),
            _conform(pa.concat_tables(health), "collector_health"))


def _conform(t: pa.Table, name: str) -> pa.Table:
    schema = contract(name).schema
    cols = []
    for f in schema:
        if f.name in t.column_names:
            col = t.column(f.name)
            if f.name == "latency_ms" or f.name == "throughput_per_s":
                col = pa.array(np.where(np.isnan(col.to_numpy(zero_copy_only=False)), None, col.to_numpy(zero_copy_only=False)), pa.float64())
            cols.append(col.cast(f.type))
        else:
            cols.append(pa.nulls(t.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def write_history(root, repl: pa.Table, health: pa.Table, commits: int = 10) -> Lakehouse:
    lh = Lakehouse(root)
    for part in range(commits):
        for name, t in (("replication_stats", repl), ("collector_health", health)):
            n = t.num_rows
            lh.append(name, t.slice(part * n // commits, (part + 1) * n // commits - part * n // commits))
    return lh


def rows_of(lh: Lakehouse, table: str) -> list:
    t = lh.read(table)
    return sorted(map(repr, t.to_pylist()))


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=12)
    ap.add_argument("--partitions", type=int, default=25)
    ap.add_argument("--scrapes", default="1000,4000", help="history sizes: scrapes per worker, comma-separated")
    ap.add_argument("--new", type=float, default=0.01, help="new rows as a share of the history")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)

    from analysis.lag import LagParams
    from analysis.lag_increment import run_lag
    from lakehouse.spark import SparkLakehouse, spark_session

    sizes = [int(s) for s in args.scrapes.split(",")]
    print(f"# bench_lag {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  host={platform.node()} cpus={os.cpu_count()} "
          f"python={platform.python_version()} loadavg(before)={','.join(f'{x:.2f}' for x in os.getloadavg())}")
    t = time.perf_counter()
    spark = spark_session("bench-lag", master="local[2]", conf={"spark.driver.memory": "3g"})
    print(f"spark start {time.perf_counter() - t:.1f} s")
    params = LagParams(window=10, lag_threshold=60.0, hole_s=60.0)
    work = tempfile.mkdtemp(prefix="bench-lag-")
    results = []
    try:
        # warm-up: a small history, full then incremental (JVM, Python workers, codegen)
        base, extra = generate(2, 5, 0, 50, 0), generate(2, 5, 50, 5, 0)
        lh = write_history(os.path.join(work, "warm"), *base)
        slh = SparkLakehouse(spark, lh)
        run_lag(slh, params, full=True)
        lh.append("replication_stats", extra[0])
        lh.append("collector_health", extra[1])
        run_lag(slh, params)
        print(f"delta access: {slh.mode}")
        for n in sizes:
            new = max(1, round(n * args.new))
            (repl, health), (more_repl, more_health) = (generate(args.instances, args.partitions, 0, n, 1),
                                                        generate(args.instances, args.partitions, n, new, 1))
            root = os.path.join(work, f"h{n}")
            lh = write_history(root, repl, health)
            slh = SparkLakehouse(spark, lh)
            full_history = timed(lambda: run_lag(slh, params, full=True))
            lh.append("replication_stats", more_repl)
            lh.append("collector_health", more_health)
            shutil.copytree(root, root + "-full")
            said: list[str] = []
            incremental = timed(lambda: run_lag(slh, params, progress=said.append))
            assert any("replication_lag (incremental" in m for m in said), said
            other = Lakehouse(root + "-full")
            full_all = timed(lambda: run_lag(SparkLakehouse(spark, other), params, full=True))
            for table in ("replication_lag", "replication_findings"):
                assert rows_of(lh, table) == rows_of(other, table), f"{table}: incremental != full"
            row = {"scrapes": n, "history_rows": repl.num_rows, "health_rows": health.num_rows, "new_rows": more_repl.num_rows,
                   "new_health": more_health.num_rows, "lag_rows": lh.count("replication_lag"),
                   "findings": lh.count("replication_findings"), "full_history_s": full_history,
                   "incremental_s": incremental, "full_s": full_all}
            results.append(row)
            print(f"history {n} scrapes/worker: {row['history_rows']:,} replication_stats rows + {row['health_rows']:,} "
                  f"collector_health; +{row['new_rows']:,} / +{row['new_health']:,} new (1 %): full over history "
                  f"{full_history:.1f} s | incremental {incremental:.1f} s | full over history + new {full_all:.1f} s "
                  f"({full_all / incremental:.1f}x); replication_lag {row['lag_rows']:,} rows, {row['findings']:,} "
                  f"findings: incremental == full", flush=True)
        print()
        print("| history (replication_stats rows) | new rows (1 %) | full run, s | incremental run, s | full / incremental |")
        print("|---:|---:|---:|---:|---:|")
        for r in results:
            print(f"| {r['history_rows']:,} | {r['new_rows']:,} | {r['full_s']:.1f} | {r['incremental_s']:.1f} | "
                  f"{r['full_s'] / r['incremental_s']:.1f}x |")
        print(f"loadavg(after)={','.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
