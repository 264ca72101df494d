"""Spine job (issue P5): broker_state → gold role_intervals, failover_events, split_brain_windows,
with our Spark job and with DuckDB computing the same in SQL, side by side in one run.

    pip install duckdb
    python bench/bench_spine.py                 # 500 groups x 2 instances x 10,000 observations
    python bench/bench_spine.py --groups 50     # a quick run (1 M rows)

What it does:
1. Generates `broker_state` rows (the silver table the gold steps read): per group two ActiveMQ
   instances scraped every second, with failovers (the live stops answering, the backup takes
   over, the old live restarts as slave: a new JVM), clean hand-overs, split brains (both active
   for a few scrapes), restarts of the live without failover and random missed scrapes. 1 % more
   observations per instance are generated too and kept aside. Written with delta-rs, oldest
   rows first (as collectors append them).
2. Spark (local[2]; native delta-spark and the delta-rs bridge, `--paths`), `run_gold(full=True)`: reads the table, writes the three gold tables
   (+ ha_group_checks). Timed from the first read to the last commit; the JVM start is not
   included (reported apart). Both engines are warmed up on a small table first, and the full
   runs are repeated (`--repeat`, the best of each counts).
3. DuckDB (2 threads) reads the same Parquet files and computes the same rows in SQL, materialised
   as tables. Its restart rule compares the uptime-derived JVM start with the previous known one
   in the run, where the job compares with the interval's first known one: the same on this data
   (jitter ≤ 20 ms against a 1.5 s tolerance), and the answers are asserted equal.
4. Asserts that both give the same intervals, failovers and split-brain windows (every boundary
   column, compared row by row), prints counts and a checksum of the boundaries.
5. Appends the 1 % (100 observations per instance) to broker_state and runs the job
   incrementally (`run_gold()`, watermark on the table's Delta version), then a full run on
   everything and DuckDB on everything, and asserts all three agree.

Memory: Spark driver heap 4 GB, DuckDB memory_limit 4 GB, the generated rows ~1 GB in this process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.machine import machine_line  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402

T0 = dt.datetime(2026, 11, 22, 22, 30, tzinfo=dt.timezone.utc)  # crosses midnight: two obs_date partitions
STEP_US = 1_000_000


# --- data -----------------------------------------------------------------------------------------------


def group_states(rng: np.random.Generator, ticks: int, event_every: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """States (1 active, 0 inactive, -1 unanswered) and JVM starts (ms, relative) of the two
    instances of one group over `ticks` scrapes: 4 to 11 events (failovers, hand-overs, split
    brains, restarts), or about one per `event_every` scrapes."""
    state = np.zeros((2, ticks), np.int8)
    jvm = np.zeros((2, ticks), np.float64)
    live = 0
    state[0, :] = 1
    slots = np.arange(60, ticks - 60, 40)
    count = int(rng.integers(4, 12)) if event_every is None else min(len(slots), max(1, round(ticks / event_every)))
    events = np.sort(rng.choice(slots, size=count, replace=False))
    for f in events:
        old, new = live, 1 - live
        kind = rng.choice(["crash", "clean", "split", "restart"], p=[0.55, 0.2, 0.15, 0.1])
        if kind == "restart":  # the live restarts; nobody takes over
            d = int(rng.integers(1, 4))
            state[old, f:f + d] = -1
            jvm[old, f + d:] += rng.integers(60_000, 600_000)
            continue
        if kind == "crash":  # old live dies, backup takes over, old comes back as slave (new JVM)
            down = int(rng.integers(2, 9))
            takeover = f + int(rng.integers(1, down + 1))
            state[old, f:f + down] = -1
            state[old, f + down:] = 0
            jvm[old, f + down:] += rng.integers(60_000, 600_000)
            state[new, takeover:] = 1
        elif kind == "clean":  # orderly hand-over
            state[old, f:] = 0
            state[new, f + 1:] = 1
        else:  # split brain: the backup activates while the live still serves
            state[new, f - int(rng.integers(2, 7)):] = 1
            state[old, f:] = 0
        live = new
    missed = rng.random((2, ticks)) < 0.003
    state[missed] = -1
    return state, jvm


def generate(groups: int, obs: int, extra: int, seed: int = 7) -> tuple[pa.Table, pa.Table]:
    """broker_state rows: `obs` observations per instance, then `extra` more (the new data)."""
    parts = generate_parts(groups, obs + extra, [slice(0, obs), slice(obs, obs + extra)], seed)
    return next(parts), next(parts)


def generate_parts(groups: int, ticks: int, parts: list[slice], seed: int = 7, event_every: int | None = None):
    """The rows of `generate` over `ticks` observations per instance, one table per slice of
    observations in `parts`, each sorted by time: a long history appended part by part (as
    collectors append it) without holding it all in memory as one table."""
    rng = np.random.default_rng(seed)
    n_inst = groups * 2
    states = np.empty((n_inst, ticks), np.int8)
    jvms = np.empty((n_inst, ticks), np.float64)
    for g in range(groups):
        states[2 * g:2 * g + 2], jvms[2 * g:2 * g + 2] = group_states(rng, ticks, event_every)
    offset_us = (rng.integers(0, 500_000, n_inst) // 1000) * 1000
    jitter_us = rng.integers(0, 30, (n_inst, ticks)) * 1000
    t0_us = int(T0.timestamp() * 1_000_000)
    ts = t0_us + np.arange(ticks)[None, :] * STEP_US + offset_us[:, None] + jitter_us
    jvm_start_ms = (t0_us // 1000 - rng.integers(3_600_000, 86_400_000, n_inst))[:, None] + jvms
    uptime = (ts // 1000) - jvm_start_ms + rng.integers(-10, 11, (n_inst, ticks))
    enqueued = np.cumsum((states == 1) * rng.integers(0, 6, (n_inst, ticks)), axis=1)

    def table(cols: slice) -> pa.Table:
        st = states[:, cols].ravel()
        n = st.size
        per = states[:, cols].shape[1]
        inst_idx = np.repeat(np.arange(n_inst), per)
        names = pa.array([f"g{g:04d}-{x}" for g in range(groups) for x in "ab"])
        instance = pa.DictionaryArray.from_arrays(pa.array(inst_idx, pa.int32()), names).cast(pa.string())
        group = pa.DictionaryArray.from_arrays(pa.array(inst_idx // 2, pa.int32()),
                                               pa.array([f"g{g:04d}" for g in range(groups)])).cast(pa.string())
        ts_col = pa.array(ts[:, cols].ravel(), pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        unknown = st == -1
        tick = np.tile(np.arange(cols.start or 0, (cols.start or 0) + per), n_inst)
        return pa.table({
            "obs_key": pc.binary_join_element_wise(instance, pc.cast(pa.array(tick), pa.string()), "/"),
            "ts": ts_col,
            "obs_date": pc.strftime(ts_col, "%Y-%m-%d"),
            "kind": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["activemq"])).cast(pa.string()),
            "group_name": group,
            "instance": instance,
            "reachable": pa.array(~unknown),
            "active": pa.array(st == 1, mask=unknown),
            "role": pa.array(np.where(unknown, "unknown", np.where(st == 1, "master", "slave")), pa.string()),
            "uptime_ms": pa.array(uptime[:, cols].ravel().astype(np.int64), mask=unknown),
            "total_enqueued": pa.array(enqueued[:, cols].ravel(), pa.int64(), mask=unknown),
        })

    def by_time(t: pa.Table) -> pa.Table:  # as collectors append them: oldest first
        return t.sort_by([("ts", "ascending")])

    for part in parts:
        yield by_time(table(part))


# --- DuckDB: the same intervals, failovers and overlaps in SQL ----------------------------------------------

DUCKDB_SQL = """
CREATE OR REPLACE TEMP TABLE s AS
SELECT group_name, instance, kind, epoch_us(ts) AS t,
       CASE WHEN active IS NULL THEN -1 WHEN active THEN 1 ELSE 0 END AS st,
       (epoch_us(ts) // 1000)::DOUBLE - uptime_ms AS js, reachable, total_enqueued
FROM read_parquet({files});

CREATE OR REPLACE TEMP TABLE r AS
SELECT *,
       row_number() OVER w AS rn,
       sum((st = 0)::INT) OVER w AS run,
       lag(t) OVER w AS prev_t, lag(st) OVER w AS prev_st,
       lead(t) OVER w AS next_t, lead(st) OVER w AS next_st
FROM s WINDOW w AS (PARTITION BY group_name, instance ORDER BY t);

CREATE OR REPLACE TEMP TABLE key_end AS
SELECT group_name, instance, max(rn) AS last_rn, arg_max(t, rn) AS last_t, arg_max(st, rn) AS last_st
FROM r GROUP BY ALL;

-- active rows; a JVM start more than 1.5 s after the previous known one in the run = restart
CREATE OR REPLACE TEMP TABLE a AS
SELECT *, sum(restart::INT) OVER (PARTITION BY group_name, instance, run ORDER BY t) AS seg
FROM (SELECT *, coalesce(js - last_value(js IGNORE NULLS) OVER (PARTITION BY group_name, instance, run ORDER BY t
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) > 1500, false) AS restart
      FROM r WHERE st = 1);

CREATE OR REPLACE TEMP TABLE seg AS
SELECT group_name, instance, any_value(kind) AS kind, run, seg,
       min(t) AS start_t, max(t) AS end_t, min(rn) AS rn0, max(rn) AS rn1, count(*) AS observations,
       arg_min_null(prev_t, rn) AS start_lower, arg_min_null(prev_st, rn) AS start_lower_st,
       arg_max_null(next_t, rn) AS end_upper, arg_max_null(next_st, rn) AS end_upper_st
FROM a GROUP BY group_name, instance, run, seg;

CREATE OR REPLACE TEMP TABLE iv AS
SELECT s.group_name, s.instance, s.kind, s.start_t, s.end_t,
       s.start_lower, CASE s.start_lower_st WHEN 1 THEN 'active' WHEN 0 THEN 'inactive' WHEN -1 THEN 'unanswered' END AS start_lower_state,
       s.end_upper,
       CASE WHEN nxt.rn0 = s.rn1 + 1 THEN 'restarted'
            ELSE CASE s.end_upper_st WHEN 1 THEN 'active' WHEN 0 THEN 'inactive' WHEN -1 THEN 'unanswered' END END AS end_upper_state,
       CASE WHEN nxt.rn0 IS NULL THEN fi.t END AS first_inactive_after,
       (s.end_t = k.last_t AND k.last_st = 1) AS is_open,
       s.observations, s.rn1 - s.rn0 + 1 - s.observations AS unanswered_inside
FROM seg s
JOIN key_end k USING (group_name, instance)
LEFT JOIN seg nxt ON nxt.group_name = s.group_name AND nxt.instance = s.instance AND nxt.run = s.run AND nxt.seg = s.seg + 1
LEFT JOIN (SELECT group_name, instance, run, min(t) AS t FROM r WHERE st = 0 GROUP BY ALL) fi
       ON fi.group_name = s.group_name AND fi.instance = s.instance AND fi.run = s.run + 1;

-- failovers: each interval against the earlier one of its group that ended last (first on ties)
CREATE OR REPLACE TEMP TABLE ivk AS
SELECT *, row_number() OVER (PARTITION BY group_name ORDER BY start_t, instance) AS k FROM iv;

CREATE OR REPLACE TEMP TABLE cand AS
SELECT c.*, p.instance AS prev_instance, p.end_t AS prev_end, p.is_open AS prev_open,
       p.end_upper AS prev_end_upper, p.end_upper_state AS prev_end_upper_state, p.first_inactive_after AS prev_first_inactive
FROM (SELECT *, arg_max(k, end_t::HUGEINT * 1000000 - k) OVER (PARTITION BY group_name ORDER BY k
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_k FROM ivk) c
JOIN ivk p ON p.group_name = c.group_name AND p.k = c.prev_k;

CREATE OR REPLACE TEMP TABLE fo AS
SELECT group_name, prev_instance AS from_instance, instance AS to_instance,
       CASE WHEN restart THEN 'restart'
            WHEN last_from = instance AND last_to = prev_instance THEN 'failback' ELSE 'failover' END AS event_type,
       prev_end AS old_last_active, start_t AS new_first_active,
       CASE WHEN prev_end_upper_state = 'unanswered' THEN prev_end_upper END AS old_first_unanswered,
       prev_first_inactive AS old_first_inactive,
       CASE WHEN start_lower_state = 'inactive' THEN start_lower END AS new_last_inactive,
       CASE WHEN NOT overlap THEN start_t - prev_end END AS outage_upper_us,
       overlap
FROM (SELECT *,
             last_value(CASE WHEN NOT restart THEN prev_instance END IGNORE NULLS) OVER w AS last_from,
             last_value(CASE WHEN NOT restart THEN instance END IGNORE NULLS) OVER w AS last_to
      FROM (SELECT *, prev_end >= start_t AS overlap, prev_instance = instance AS restart FROM cand
            WHERE NOT (prev_end >= start_t AND (prev_open OR prev_end >= end_t)))
      WINDOW w AS (PARTITION BY group_name ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING));

-- split brain: overlapping intervals of two instances, traffic on each side's active rows
CREATE OR REPLACE TEMP TABLE pairs AS
SELECT a.group_name, a.instance AS instance_a, b.instance AS instance_b,
       greatest(a.start_t, b.start_t) AS certain_start, least(a.end_t, b.end_t) AS certain_end,
       greatest(coalesce(a.start_lower, a.start_t), coalesce(b.start_lower, b.start_t)) AS possible_start,
       least(coalesce(a.end_upper, a.end_t), coalesce(b.end_upper, b.end_t)) AS possible_end
FROM iv a JOIN iv b ON a.group_name = b.group_name AND a.instance < b.instance
 AND a.start_t <= b.end_t AND b.start_t <= a.end_t;

CREATE OR REPLACE TEMP TABLE sb AS
WITH sides AS (
  SELECT *, instance_a AS instance, true AS side_a FROM pairs
  UNION ALL SELECT *, instance_b AS instance, false AS side_a FROM pairs)
SELECT d.group_name, d.instance_a, d.instance_b, d.certain_start, d.certain_end, d.possible_start, d.possible_end,
       CASE WHEN sum(CASE WHEN s.t BETWEEN d.certain_start AND d.certain_end AND NOT s.reachable THEN 1 ELSE 0 END) > 0
            THEN 'possible' ELSE 'certain' END AS certainty,
       max(CASE WHEN d.side_a AND s.st = 1 THEN s.total_enqueued END) - min(CASE WHEN d.side_a AND s.st = 1 THEN s.total_enqueued END) AS enqueued_a,
       max(CASE WHEN NOT d.side_a AND s.st = 1 THEN s.total_enqueued END) - min(CASE WHEN NOT d.side_a AND s.st = 1 THEN s.total_enqueued END) AS enqueued_b
FROM sides d JOIN s ON s.group_name = d.group_name AND s.instance = d.instance
 AND s.t BETWEEN d.possible_start AND d.possible_end
GROUP BY ALL;
"""


def duckdb_gold(files: list[str]) -> tuple[float, dict[str, pa.Table]]:
    import duckdb

    con = duckdb.connect(config={"threads": 2, "memory_limit": "4GB"})
    t = time.perf_counter()
    con.execute(DUCKDB_SQL.replace("{files}", "[" + ", ".join(f"'{f}'" for f in files) + "]"))
    out = {name: con.sql(f"SELECT * FROM {src}").to_arrow_table() for name, src in
           (("role_intervals", "iv"), ("failover_events", "fo"), ("split_brain_windows", "sb"))}
    elapsed = time.perf_counter() - t
    con.close()
    return elapsed, out


# --- comparing answers -------------------------------------------------------------------------------------

COMPARED = {
    "role_intervals": ["group_name", "instance", "start_ts", "end_ts", "start_lower", "start_lower_state", "end_upper",
                       "end_upper_state", "first_inactive_after", "is_open", "observations", "unanswered_inside"],
    "failover_events": ["group_name", "from_instance", "to_instance", "event_type", "old_last_active", "new_first_active",
                        "old_first_unanswered", "old_first_inactive", "new_last_inactive", "outage_upper_us", "overlap"],
    "split_brain_windows": ["group_name", "instance_a", "instance_b", "certain_start", "certain_end", "possible_start",
                            "possible_end", "certainty", "enqueued_a", "enqueued_b"],
}
DUCK_NAMES = {"start_ts": "start_t", "end_ts": "end_t"}


def spark_rows(lh: Lakehouse, table: str) -> list[tuple]:
    t = lh.read(table)
    if table == "failover_events":
        upper = pc.multiply(pc.cast(t.column("outage_upper_s"), pa.float64()), 1e6)
        t = t.append_column("outage_upper_us", pc.cast(pc.round(upper), pa.int64()))
    cols = []
    for c in COMPARED[table]:
        col = t.column(c)
        cols.append(pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC")), pa.int64()) if pa.types.is_timestamp(col.type) else col)
    return sorted(zip(*(c.to_pylist() for c in cols)), key=repr)


def duck_rows(t: pa.Table, table: str) -> list[tuple]:
    return sorted(zip(*(t.column(DUCK_NAMES.get(c, c)).to_pylist() for c in COMPARED[table])), key=repr)


def checksum(rows: list[tuple]) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def assert_same(lh: Lakehouse, duck: dict[str, pa.Table], label: str) -> dict[str, tuple[int, str]]:
    summary = {}
    for table in COMPARED:
        s, d = spark_rows(lh, table), duck_rows(duck[table], table)
        if s != d:
            diff = next((i for i, (x, y) in enumerate(zip(s, d)) if x != y), min(len(s), len(d)))
            raise AssertionError(f"{label}: {table} differs (spark {len(s)} rows, duckdb {len(d)}); first difference "
                                 f"at {diff}: spark {s[diff] if diff < len(s) else None} duckdb {d[diff] if diff < len(d) else None}")
        summary[table] = (len(s), checksum(s))
    return summary


# --- the run ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--obs", type=int, default=10_000, help="observations per instance")
    ap.add_argument("--new-pct", type=float, default=1.0, help="new data for the incremental run, %% of --obs")
    ap.add_argument("--repeat", type=int, default=2, help="timed full runs of each engine (the best counts)")
    ap.add_argument("--paths", default="native,bridge",
                    help="Delta paths Spark is timed on, each over its own copy of the table: native (delta-spark), "
                         "bridge (delta-rs commits); comma-separated")
    ap.add_argument("--workdir", help="keep the lakehouse here (default: a temp dir, removed)")
    ap.add_argument("--histories", help="instead: the same new rows (--new-rows, in --increments runs) after histories of "
                                        "these sizes, millions of rows, comma-separated (e.g. 1,10,50); full run per size")
    ap.add_argument("--new-rows", type=int, default=100_000, help="--histories: new rows per incremental run (default 100,000)")
    ap.add_argument("--increments", type=int, default=3, help="--histories: incremental runs per size (default 3)")
    args = ap.parse_args(argv)
    paths = [x.strip() for x in args.paths.split(",") if x.strip()]
    if not paths or any(x not in ("native", "bridge") for x in paths):
        ap.error(f"--paths takes native and/or bridge, not {args.paths!r}")

    from analysis.spine import run_gold
    from lakehouse.spark import SparkLakehouse, spark_session

    t_start = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", flush=True)

    import duckdb
    import pyspark

    from infra import delta_jars

    print(f"date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(machine_line(memory=True))
    print(f"versions: pyspark=={pyspark.__version__} delta-spark jars {delta_jars.coordinates()} duckdb=={duckdb.__version__} "
          f"pyarrow=={pa.__version__}")
    print(f"command: python bench/bench_spine.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())

    work = args.workdir or tempfile.mkdtemp(prefix="bench-spine-")
    try:
        if args.histories:
            return history_sweep(args, paths, say, work)
        extra = max(1, int(args.obs * args.new_pct / 100))
        base, new = generate(args.groups, args.obs, extra)
        lakes = {}
        for path in paths:  # the same rows, one lakehouse per path (gold written by that path only)
            lakes[path] = Lakehouse(os.path.join(work, f"lh-{path}"))
            lakes[path].overwrite("broker_state", base)
        say(f"generated broker_state: {base.num_rows:,} rows ({args.groups} groups x 2 instances x {args.obs:,}), "
            f"+{new.num_rows:,} new rows kept aside ({args.new_pct:g} %); one copy per path: {', '.join(paths)}")
        del base

        t = time.perf_counter()
        delta = "native" if "native" in paths else "bridge"
        spark = spark_session("bench-spine", master="local[2]", conf={"spark.driver.memory": "4g"}, delta=delta)
        slhs = {path: SparkLakehouse(spark, lakes[path], mode=path) for path in paths}
        for slh in slhs.values():
            slh.read("broker_state").limit(1).collect()
        say(f"Spark local[2] started in {time.perf_counter() - t:.1f} s (not counted; session delta={delta})")
        duckdb_gold(slh_files(warm_up(spark, work, paths)))
        say(f"warm-up done (DuckDB and Spark on {', '.join(paths)}, full and incremental, 80,000 rows; not counted)")

        def timed_spark(path: str, full: bool) -> float:
            t = time.perf_counter()
            run_gold(slhs[path], lambda m: None, full=full)
            return time.perf_counter() - t

        runs: dict[str, list[float]] = {path: [] for path in paths}
        runs["duckdb"] = []
        first = lakes[paths[0]]
        for i in range(args.repeat):  # interleaved, so load on the machine hits every engine alike
            for path in paths:
                runs[path].append(timed_spark(path, full=True))
                say(f"Spark {path:6} full run {i + 1}: {runs[path][-1]:7.2f} s  " + str({t: lakes[path].count(t) for t in COMPARED}))
            duck_s, duck = duckdb_gold(slh_files(first))
            runs["duckdb"].append(duck_s)
            say(f"DuckDB        full run {i + 1}: {duck_s:7.2f} s")
        for path in paths:
            same = assert_same(lakes[path], duck, f"full run ({path})")
        say("same answers (every path and DuckDB): " + ", ".join(f"{k} {n} rows #{h}" for k, (n, h) in same.items()))

        inc_s, full2_s = {}, {}
        for path in paths:
            lakes[path].append("broker_state", new)
            inc_s[path] = timed_spark(path, full=False)
            say(f"Spark {path:6} incremental (+{new.num_rows:,} rows): {inc_s[path]:7.2f} s")
            inc = {table: spark_rows(lakes[path], table) for table in COMPARED}
            full2_s[path] = timed_spark(path, full=True)
            say(f"Spark {path:6} full on everything: {full2_s[path]:7.2f} s")
            if any(spark_rows(lakes[path], table) != inc[table] for table in COMPARED):
                raise AssertionError(f"{path}: the incremental run differs from the full run")
        duck2_s, duck2 = duckdb_gold(slh_files(first))
        for path in paths:
            same2 = assert_same(lakes[path], duck2, f"after the incremental run ({path})")
        say(f"DuckDB full on everything: {duck2_s:7.2f} s; incremental = full = DuckDB on every path: "
            + ", ".join(f"{k} {n} rows #{h}" for k, (n, h) in same2.items()))
        best_duck = min(runs["duckdb"])
        print()
        print(f"rows {args.groups * 2 * args.obs:,} (+{new.num_rows:,} = {args.new_pct:g} % for the incremental run); "
              f"best of {args.repeat} full runs")
        print(f"{'engine':<16} {'full (best)':>12} {'runs':>22} {'/ DuckDB':>9} {'incremental':>12} {'full, all rows':>15}")
        for path in paths:
            best = min(runs[path])
            print(f"{'Spark ' + path:<16} {best:10.2f} s {', '.join(f'{x:.2f}' for x in runs[path]):>22} "
                  f"{best / best_duck:8.2f}x {inc_s[path]:10.2f} s {full2_s[path]:13.2f} s")
        print(f"{'DuckDB':<16} {best_duck:10.2f} s {', '.join(f'{x:.2f}' for x in runs['duckdb']):>22} "
              f"{1:8.2f}x {'-':>12} {duck2_s:13.2f} s")
        print(f"loadavg(after)={','.join(f'{x:.2f}' for x in os.getloadavg())}")
        spark.stop()
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def warm_up(spark, work: str, paths: list[str]) -> Lakehouse:
    """A full and an incremental run on a small table per path (not counted); the last lakehouse."""
    from analysis.spine import run_gold
    from lakehouse.spark import SparkLakehouse

    for path in paths:
        warm = Lakehouse(os.path.join(work, f"warm-up-{path}"))
        warm_base, warm_new = generate(20, 2000, 20)
        warm.overwrite("broker_state", warm_base)
        run_gold(SparkLakehouse(spark, warm, mode=path), lambda m: None, full=True)
        warm.append("broker_state", warm_new)
        run_gold(SparkLakehouse(spark, warm, mode=path), lambda m: None)
    return warm


def history_sweep(args, paths: list[str], say, work: str) -> int:
    """The same number of new rows after histories of different sizes: per size, a full run, then
    `--increments` incremental runs of `--new-rows` each, then a full run on everything that must
    give the same rows in every table the job writes (its gold and its carried state)."""
    from analysis.spine import GOLD_OUTPUTS, run_gold
    from lakehouse.spark import SparkLakehouse, spark_session

    sizes = [int(float(x) * 1_000_000) for x in args.histories.split(",")]
    instances = args.groups * 2
    step = max(1, args.new_rows // instances)  # new observations per instance and run
    spark = spark_session("bench-spine", master="local[2]", conf={"spark.driver.memory": "4g"},
                          delta="native" if "native" in paths else "bridge")
    results = []
    warm_up(spark, work, paths)
    say(f"Spark local[2] started and warmed up on {', '.join(paths)} (not counted)")
    for size in sizes:
        obs = size // instances
        chunks = [slice(lo, min(lo + 2_000, obs)) for lo in range(0, obs, 2_000)]  # 4 M rows per append at 1,000 instances
        parts = generate_parts(args.groups, obs + step * args.increments, [*chunks, slice(obs, obs + step * args.increments)],
                               event_every=1_000)  # the same density of events at every size
        history = [next(parts) for _ in chunks] if len(paths) > 1 else None
        extra = None
        for path in paths:
            lh = Lakehouse(os.path.join(work, f"history-{size}-{path}"))
            history_rows = 0
            for i, chunk in enumerate(history or (next(parts) for _ in chunks)):
                (lh.append if i else lh.overwrite)("broker_state", chunk)
                history_rows += chunk.num_rows
            if extra is None:
                extra = next(parts)
                ticks = pc.cast(pc.struct_field(pc.extract_regex(extra.column("obs_key"), r"/(?P<t>\d+)$"), "t"), pa.int64())
            slh = SparkLakehouse(spark, lh, mode=path)
            said: list[str] = []
            t = time.perf_counter()
            run_gold(slh, said.append, full=True)
            full_s = time.perf_counter() - t
            say(f"{path}: {history_rows:,} rows of history, full run {full_s:.2f} s")
            inc = []
            for i in range(args.increments):
                lo = obs + i * step
                part = extra.filter(pc.and_(pc.greater_equal(ticks, lo), pc.less(ticks, lo + step)))
                lh.append("broker_state", part)
                said.clear()
                t = time.perf_counter()
                run_gold(slh, said.append)
                inc.append(time.perf_counter() - t)
                if not any("incremental" in m for m in said):
                    raise AssertionError(f"increment {i + 1} was not incremental: {said}")
                say(f"{path}: +{part.num_rows:,} rows, incremental run {inc[-1]:.2f} s")
            after = {table: sorted(map(repr, lh.read(table).to_pylist())) for table in GOLD_OUTPUTS}
            t = time.perf_counter()
            run_gold(slh, lambda m: None, full=True)
            full2_s = time.perf_counter() - t
            if any(sorted(map(repr, lh.read(table).to_pylist())) != stored for table, stored in after.items()):
                raise AssertionError(f"{path}, {size:,} rows: the incremental runs differ from a full run")
            say(f"{path}: full run on everything {full2_s:.2f} s; incremental = full in " + ", ".join(
                f"{table} ({len(stored)})" for table, stored in after.items()))
            results.append((path, history_rows, full_s, full2_s, inc))
            shutil.rmtree(lh.root, ignore_errors=True)
        del history, extra
    spark.stop()
    print()
    print(f"new rows per incremental run: {step * instances:,} ({args.groups} groups x 2 instances x {step}); "
          f"{args.increments} runs per size, median")
    print(f"{'path':<8} {'history':>12} {'full (s)':>9} {'full, all (s)':>14} {'incremental runs (s)':>24} "
          f"{'median':>7} {'/ full':>7}")
    for path, n, full_s, full2_s, inc in results:
        med = float(np.median(inc))
        print(f"{path:<8} {n:>12,} {full_s:9.2f} {full2_s:14.2f} {', '.join(f'{x:.2f}' for x in inc):>24} "
              f"{med:7.2f} {med / full2_s:6.1%}")
    print(f"loadavg(after)={','.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def slh_files(lh: Lakehouse) -> list[str]:
    from deltalake import DeltaTable

    return DeltaTable(lh.uri("broker_state")).file_uris()


if __name__ == "__main__":
    sys.exit(main())
