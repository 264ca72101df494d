"""Spark session start-up with native Delta (delta-spark jars on the classpath) and without (the
delta-rs bridge), and the first read of a small table through each, side by side.

    python bench/bench_spark_start.py --repeat 3

Each sample is a fresh Python process (a fresh JVM): `spark_session(delta=...)` is timed to the
session object, then the first `SparkLakehouse.read(...).count()` of a 10,000-row broker_state
written by delta-rs (what the first job of `brokerscope analyze` pays). Samples of the two paths
alternate, so load from other processes hits both alike; the median counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

ONE = """
import json, sys, time
t0 = time.perf_counter()
from lakehouse.spark import SparkLakehouse, spark_session
from lakehouse.store import Lakehouse
t1 = time.perf_counter()
spark = spark_session("bench-start", delta=sys.argv[1])
t2 = time.perf_counter()
slh = SparkLakehouse(spark, Lakehouse(sys.argv[2]), mode=sys.argv[1])
n = slh.read("broker_state").count()
t3 = time.perf_counter()
spark.stop()
print(json.dumps({"import": t1 - t0, "session": t2 - t1, "first_read": t3 - t2, "rows": n, "mode": slh.mode}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="samples per path (fresh process each)")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from bench.bench_spine import generate
    from lakehouse.store import Lakehouse

    with tempfile.TemporaryDirectory(prefix="bench-start-") as work:
        base, _ = generate(5, 1000, 1)
        Lakehouse(work).overwrite("broker_state", base)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
        got: dict[str, list[dict]] = {"native": [], "bridge": []}
        print(f"loadavg(before)={','.join(f'{x:.2f}' for x in os.getloadavg())}")
        for i in range(args.repeat):
            for mode in got:
                run = subprocess.run([sys.executable, "-c", ONE, mode, work], env=env, capture_output=True, text=True)
                if run.returncode != 0:
                    raise SystemExit(f"{mode}: {run.stderr[-2000:]}")
                got[mode].append(json.loads(run.stdout.strip().splitlines()[-1]))
                s = got[mode][-1]
                print(f"{mode:6} sample {i + 1}: session {s['session']:.2f} s, first read {s['first_read']:.2f} s "
                      f"({s['rows']:,} rows, mode {s['mode']})", flush=True)
        print(f"loadavg(after)={','.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'path':8} {'session (median)':>17} {'first read (median)':>20} {'total':>8}")
        for mode, samples in got.items():
            s = statistics.median(x["session"] for x in samples)
            r = statistics.median(x["first_read"] for x in samples)
            print(f"{mode:8} {s:15.2f} s {r:18.2f} s {s + r:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
