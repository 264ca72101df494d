"""The cost of gold broker_minutes (analysis/minutes.py) on bench_dashboard's 1 M broker_state rows
(7 days, two instances): a full run, three incremental runs each after appending one more minute of
observations (about what `brokerscope run` appends between two analyses), and a full run again in
the warm session. No options.

    python bench/bench_minutes.py
"""
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from analysis.minutes import run_minutes  # noqa: E402
from bench import bench_dashboard as B  # noqa: E402
from lakehouse.spark import SparkLakehouse, spark_session  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402

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
