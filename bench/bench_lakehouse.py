"""Side-by-side: the Spark bridge vs plain delta-rs, on broker_state-like rows.

    python bench/bench_lakehouse.py [--rows 1000000] [--days 23] [--keep DIR]

What is measured (wall clock, best of --repeat runs, local Spark with BROKERSCOPE_SPARK_MASTER
or local[2]):

write
  delta-rs      `write_deltalake(uri, arrow_table, partition_by=["obs_date"])` (one process)
  bridge        `SparkLakehouse.write(name, df)`: Spark writes the Parquet files (partitionBy),
                delta-rs commits them (`create_table_with_add_actions` / `create_write_transaction`)
                — the DataFrame is cached first, so only the write is timed
  toArrow+rs    the naive alternative: `df.toArrow()` on the driver, then `write_deltalake`
  plain Spark   `df.write.partitionBy("obs_date").parquet(dir)` — Spark's own cost, no Delta
read
  delta-rs      `DeltaTable.to_pyarrow_table()` and `pa.table(DeltaTable.scan())`
  bridge        `SparkLakehouse.read(name)` materialised with the `noop` sink (all columns,
                partition column re-attached) — and `.toArrow()` to the driver, for comparison
  plain Spark   `spark.read.parquet(*files)` of the same files, no partition column
append_new (200k rows in the table, a 20k batch of which half is new)
  anti-join     keys of the touched partitions via a pruned scan, Arrow anti-join, append
  merge         delta-rs MERGE ... WHEN NOT MATCHED INSERT *

Numbers depend on cores: Spark's advantage is parallelism across executors, which a 2-core
box does not show; the point here is that the bridge costs about what Spark's own Parquet I/O
costs, not what a driver round trip costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from deltalake import DeltaTable, write_deltalake  # noqa: E402

from lakehouse.store import Lakehouse  # noqa: E402
from lakehouse.tables import contract  # noqa: E402


def broker_state_rows(n: int, days: int, seed: int = 0, offset: int = 0, span_rows: int | None = None) -> pa.Table:
    """n broker_state rows (two instances per observation); `span_rows` rows span `days` days,
    so row i always gets the same key, ts and partition whatever the slice."""
    c = contract("broker_state")
    rng = np.random.default_rng(seed)
    i = np.arange(offset, offset + n, dtype=np.int64)
    base_us = 1_714_521_600_000_000  # 2024-05-01T00:00:00Z
    step_us = days * 86_400_000_000 // max(span_rows or n, 1)
    ts = pa.array(base_us + i * step_us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    cols = {}
    for col in c.columns:
        t = col.type
        if col.name == "obs_key":
            cols[col.name] = pc.binary_join_element_wise("obs-", pa.array(i // 2).cast(pa.string()), "")
        elif col.name == "ts":
            cols[col.name] = ts
        elif col.name == "obs_date":
            cols[col.name] = pc.strftime(ts, format="%Y-%m-%d")
        elif col.name == "instance":
            cols[col.name] = pc.binary_join_element_wise("broker-", pa.array(i % 2).cast(pa.string()), "")
        elif pa.types.is_string(t):
            vals = pa.array([f"{col.name}-{k}" for k in range(8)])
            cols[col.name] = vals.take(pa.array(rng.integers(0, 8, n)))
        elif pa.types.is_boolean(t):
            cols[col.name] = pa.array(rng.integers(0, 2, n).astype(bool))
        elif pa.types.is_integer(t):
            cols[col.name] = pa.array(rng.integers(0, 1_000_000, n)).cast(t)
        elif pa.types.is_floating(t):
            cols[col.name] = pa.array(rng.random(n) * 100).cast(t)
        else:
            cols[col.name] = pa.nulls(n, t)
    return pa.Table.from_pydict(cols).cast(c.schema)


def best(fn, repeat: int, setup=None) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        if setup:
            setup()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def line(label: str, rows: int, secs: float, ref: float | None = None) -> None:
    ratio = f"  {secs / ref:5.2f}× delta-rs time" if ref else ""
    print(f"  {label:<34} {secs:7.2f} s  {rows / secs / 1e6:6.2f} M rows/s{ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--days", type=int, default=23)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", help="work folder to keep (default: a temp folder, removed)")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="bench-lakehouse-")
    n = args.rows
    data = broker_state_rows(n, args.days)
    print(f"{n:,} broker_state rows, {len(contract('broker_state').columns)} columns, "
          f"{len(pc.unique(data['obs_date']))} daily partitions, {data.nbytes / 1e6:.0f} MB in Arrow; work dir {work}")

    from lakehouse.spark import SparkLakehouse, spark_session

    t0 = time.perf_counter()
    spark = spark_session("brokerscope-bench", conf={"spark.driver.memory": "3g"})
    print(f"Spark {spark.version} started in {time.perf_counter() - t0:.1f} s, master {spark.sparkContext.master}")

    # ---- write ---------------------------------------------------------------------------------
    rs_lake = Lakehouse(os.path.join(work, "rs"))
    uri = rs_lake.uri("broker_state")

    def clear(path):
        return lambda: shutil.rmtree(path, ignore_errors=True)

    t_rs_w, _ = best(lambda: write_deltalake(uri, data, partition_by=["obs_date"], mode="overwrite"),
                     args.repeat, clear(uri))
    bridge_src = SparkLakehouse(spark, rs_lake, mode="bridge")
    df = bridge_src.read("broker_state").cache()
    assert df.count() == n

    br_lake = Lakehouse(os.path.join(work, "bridge"))
    br = SparkLakehouse(spark, br_lake, mode="bridge")
    t_br_w, written = best(lambda: br.write("broker_state", df), args.repeat, clear(br_lake.uri("broker_state")))
    assert written == n

    plain_dir = os.path.join(work, "plain-parquet")
    t_plain_w, _ = best(lambda: df.write.partitionBy("obs_date").parquet("file:" + plain_dir),
                        args.repeat, clear(plain_dir))

    naive_uri = os.path.join(work, "naive", "broker_state")
    t_naive_w, _ = best(lambda: write_deltalake(naive_uri, df.toArrow(), partition_by=["obs_date"], mode="overwrite"),
                        args.repeat, clear(naive_uri))
    df.unpersist()
    print("write")
    line("delta-rs write_deltalake", n, t_rs_w)
    line("bridge: Spark files + rs commit", n, t_br_w, t_rs_w)
    line("naive: toArrow + write_deltalake", n, t_naive_w, t_rs_w)
    line("plain Spark parquet, no commit", n, t_plain_w, t_rs_w)

    # ---- read ----------------------------------------------------------------------------------
    t_rs_r, tbl = best(lambda: DeltaTable(uri).to_pyarrow_table(), args.repeat)
    assert tbl.num_rows == n
    t_rs_scan, tbl = best(lambda: pa.table(DeltaTable(uri).scan()), args.repeat)
    assert tbl.num_rows == n
    del tbl
    t_br_r, _ = best(lambda: bridge_src.read("broker_state").write.format("noop").mode("overwrite").save(), args.repeat)
    t_br_arrow, got = best(lambda: bridge_src.read("broker_state").toArrow(), args.repeat)
    assert got.num_rows == n and got.column("obs_date").null_count == 0
    del got
    t_br_plain, _ = best(lambda: spark.read.parquet(*[
        "file:" + f for f in DeltaTable(uri).file_uris()]).write.format("noop").mode("overwrite").save(), args.repeat)
    print("read")
    line("delta-rs to_pyarrow_table", n, t_rs_r)
    line("delta-rs scan()", n, t_rs_scan, t_rs_r)
    line("bridge read → noop sink", n, t_br_r, t_rs_r)
    line("bridge read → toArrow (driver)", n, t_br_arrow, t_rs_r)
    line("plain Spark parquet, no part. col", n, t_br_plain, t_rs_r)

    # ---- append_new ----------------------------------------------------------------------------
    print("append_new (200k rows in table, 20k batch, half new)")
    base = broker_state_rows(200_000, 5, seed=1)
    batch = broker_state_rows(20_000, 5, seed=2, offset=190_000, span_rows=200_000)
    src = Lakehouse(os.path.join(work, "an-src"))
    src.append("broker_state", base)
    for strategy in ("antijoin", "merge"):
        dst = os.path.join(work, f"an-{strategy}")

        def setup(dst=dst):
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src.root, dst)

        t, added = best(lambda dst=dst, s=strategy: Lakehouse(dst)._append_new("broker_state", batch, strategy=s),
                        max(args.repeat, 3), setup)
        print(f"  {strategy:<10} {t * 1000:7.1f} ms  ({added} rows added)")

    spark.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.flush()
    # delta-rs' to_pyarrow_table can abort the interpreter at exit (delta-rs #2184)
    os._exit(0)


if __name__ == "__main__":
    main()
