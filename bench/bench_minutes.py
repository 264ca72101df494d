"""The cost of gold broker_minutes (analysis/minutes.py).

Without options: bench_dashboard's 1 M broker_state rows (7 days, two instances): a full run, three
incremental runs each after appending one more minute of observations, and a full run again in the
warm session.

With --instances: a fleet of that many instances scraped every 5 s (the service's default) from
midnight for --hours of one day (no history before it), a full run, then --ticks analyses of
`brokerscope run` (30 s of new scrapes each, every instance), each timed and with the rows its
commit wrote: the rows of the partitions it replaced. At 50 HA groups (100 instances) and 23.5 h
the current day holds 141,000 minute rows and the current hour 3,000 to 6,000.

    python bench/bench_minutes.py
    python bench/bench_minutes.py --instances 100 --hours 23.5 --ticks 4 [--mode native|bridge]
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from analysis.minutes import run_minutes  # noqa: E402
from bench import bench_dashboard as B  # noqa: E402
from bench.machine import loadavg, machine_line  # noqa: E402
from lakehouse.spark import SparkLakehouse, spark_session  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402

SCRAPE_S = 5.0
TICK_S = 30.0
FLEET_DAY = datetime(2026, 11, 16, tzinfo=timezone.utc)


def fleet_state(instances: int, lo_s: float, hi_s: float) -> pa.Table:
    """broker_state of `instances` instances (pairs: the first of each active) scraped every 5 s,
    the scrapes with lo_s <= seconds after FLEET_DAY < hi_s; each instance on its own phase of the
    5-s grid, 0.3 % of the scrapes unanswered, a failover in every pair every 6 hours."""
    phase_us = (np.arange(instances) * 37_003) % int(SCRAPE_S * 1e6)
    k = np.arange(int(lo_s // SCRAPE_S), int(np.ceil(hi_s / SCRAPE_S)) + 1)
    us = (int(FLEET_DAY.timestamp() * 1e6) + k[None, :] * int(SCRAPE_S * 1e6) + phase_us[:, None])
    inst = np.repeat(np.arange(instances), k.size)
    us, kk = us.ravel(), np.tile(k, instances)
    keep = (us >= FLEET_DAY.timestamp() * 1e6 + lo_s * 1e6) & (us < FLEET_DAY.timestamp() * 1e6 + hi_s * 1e6)
    us, kk, inst = us[keep], kk[keep], inst[keep]
    answered = (kk * 7919 + inst * 104729) % 1000 >= 3
    active = answered & (((kk // 4320) + inst) % 2 == 0)
    ts = pa.array(us).cast(pa.timestamp("us", tz="UTC"))
    names = np.array([f"g{i // 2:04d}-{'ab'[i % 2]}" for i in range(instances)])
    return pa.table({
        "obs_key": pc.binary_join_element_wise(pa.array(names[inst]), pa.array(kk).cast(pa.string()), "#"),
        "ts": ts, "obs_date": pc.strftime(ts, format="%Y-%m-%d"), "kind": pa.array(["activemq"] * us.size),
        "group_name": pa.array(np.array([f"g{i // 2:04d}" for i in range(instances)])[inst]),
        "instance": pa.array(names[inst]), "reachable": pa.array(answered),
        "active": pa.array(active, mask=~answered),
        "role": pa.array(np.where(answered, np.where(active, "master", "slave"), "unknown")),
        "connections": pa.array(np.where(active, 40 + kk % 20, 0)),
        "total_enqueued": pa.array(kk * 50), "total_dequeued": pa.array(kk * 49),
    })


def written_rows(lh: Lakehouse) -> str:
    """Rows the table's latest commit wrote (its operation metrics, native or delta-rs)."""
    metrics = (lh.history("broker_minutes")[:1] or [{}])[0].get("operationMetrics") or {}
    return next((f"{int(metrics[k]):,}" for k in ("numOutputRows", "num_added_rows") if k in metrics), "?")


def fleet(args) -> None:
    print(machine_line(extra=f"mode={args.mode}"))
    work = tempfile.mkdtemp(prefix="bench-minutes-")
    lh = Lakehouse(os.path.join(work, "lh"))
    end_s = args.hours * 3600
    a = time.perf_counter()
    for lo in np.arange(0, end_s, 6 * 3600):  # as collectors append: oldest first, in parts
        lh.append("broker_state", fleet_state(args.instances, lo, min(end_s, lo + 6 * 3600)))
    print(f"fleet: {args.instances} instances every {SCRAPE_S:g} s, {args.hours:g} h of {FLEET_DAY:%Y-%m-%d}: "
          f"{lh.count('broker_state'):,} broker_state rows, written in {time.perf_counter() - a:.1f} s")
    spark = spark_session("bench-minutes")
    slh = SparkLakehouse(spark, lh, mode=args.mode)
    said: list[str] = []
    a = time.perf_counter(); run_minutes(slh, said.append); full = time.perf_counter() - a
    print(f"full: {lh.count('broker_minutes'):,} minute rows in {full:.1f} s ({said[-1]}; {slh.mode})")
    times = []
    for t in range(args.ticks):
        lo = end_s + t * TICK_S
        part = fleet_state(args.instances, lo, lo + TICK_S)
        lh.append("broker_state", part)
        a = time.perf_counter(); run_minutes(slh, said.append); times.append(time.perf_counter() - a)
        print(f"tick {t + 1} ({FLEET_DAY + timedelta(seconds=lo):%H:%M:%S}, +{part.num_rows:,} rows): {times[-1]:.2f} s, "
              f"{written_rows(lh)} minute rows written ({said[-1]}) loadavg={loadavg()}")
    print(f"ticks: median {float(np.median(times)):.2f} s, min {min(times):.2f}, max {max(times):.2f}; loadavg(after)={loadavg()}")
    spark.stop()
    shutil.rmtree(work)


def history() -> None:
    work = tempfile.mkdtemp(prefix="p15-minutes-")
    lh = Lakehouse(os.path.join(work, "lh"))
    t = B.broker_state(1_000_000 + 100 * 3, 7 * (1 + 300 / 1_000_000))
    us = t.column("ts").cast(pa.int64()).to_numpy()
    cut = int((B.T0 + timedelta(days=7)).timestamp() * 1e6)
    base = t.filter(pa.array(us < cut))
    extra = t.filter(pa.array(us >= cut))
    lh.overwrite("broker_state", base)
    spark = spark_session("p15-minutes")
    slh = SparkLakehouse(spark, lh)
    said = []
    a = time.perf_counter(); run_minutes(slh, said.append); full = time.perf_counter() - a
    print(f"full: {base.num_rows:,} rows → {lh.count('broker_minutes'):,} minutes in {full:.1f} s ({said[-1]})")
    xs = extra.column("ts").cast(pa.int64()).to_numpy()
    for k in range(3):
        part = extra.filter(pa.array((xs >= cut + k * 60_000_000) & (xs < cut + (k + 1) * 60_000_000)))
        lh.append("broker_state", part)
        a = time.perf_counter(); run_minutes(slh, said.append); inc = time.perf_counter() - a
        print(f"incremental {k + 1}: +{part.num_rows} rows (one minute) in {inc:.1f} s ({said[-1]})")
    a = time.perf_counter(); run_minutes(slh, said.append, full=True); full2 = time.perf_counter() - a
    print(f"full again (warm session): {lh.count('broker_minutes'):,} minutes in {full2:.1f} s")
    print("load average", os.getloadavg())
    spark.stop()
    shutil.rmtree(work)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, help="a fleet of this many instances (pairs) instead of the 1 M-row history")
    ap.add_argument("--hours", type=float, default=23.5, help="hours of the day before the ticks (default 23.5)")
    ap.add_argument("--ticks", type=int, default=4, help="analyses of 30 s of new scrapes each (default 4)")
    ap.add_argument("--mode", choices=("auto", "native", "bridge"), default="auto", help="Delta access (default auto)")
    args = ap.parse_args()
    fleet(args) if args.instances else history()
