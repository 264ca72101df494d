"""The gold-on-gold jobs (risk, causes, incidents) on generated broker_state (bench/bench_spine.py's
generator: ActiveMQ pairs with failovers, restarts, split brains, missed scrapes), after the spine's
gold. Times each job's full run, and the no-op rerun (inputs unchanged: nothing written).

    python bench/bench_findings.py --groups 100 --obs 2000
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout this file is in

from analysis.params import analysis_params  # noqa: E402
from analysis.runner import run_findings  # noqa: E402
from analysis.spine import run_gold  # noqa: E402
from bench.bench_spine import generate  # noqa: E402
from lakehouse.spark import SparkLakehouse, spark_session  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402
from settings import config_from_dict  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--obs", type=int, default=2000)
    args = ap.parse_args()
    base, _ = generate(groups=args.groups, obs=args.obs, extra=0)
    root = tempfile.mkdtemp(prefix="bench-findings-")
    cfg = config_from_dict({"lakehouse": root, "scrape_interval": "1s"})
    lh = Lakehouse(root)
    lh.overwrite("broker_state", base)
    spark = spark_session()
    slh = SparkLakehouse(spark, lh)
    run_gold(slh, lambda m: None, full=True)
    print(f"broker_state {base.num_rows:,} rows; failover_events {lh.count('failover_events'):,}, "
          f"split_brain_windows {lh.count('split_brain_windows'):,}")
    stamps = []
    t = time.perf_counter()
    run_findings(slh, analysis_params(cfg), lambda m: stamps.append((m, time.perf_counter())), full=True)
    end = time.perf_counter()
    for (m, a), b in zip(stamps, [s for _, s in stamps[1:]] + [end]):
        print(f"  {m}: {b - a:.1f} s")
    print(f"full: {end - t:.1f} s; risk_findings {lh.count('risk_findings'):,}, incidents {lh.count('incidents'):,}, "
          f"incident_evidence {lh.count('incident_evidence'):,}")
    t = time.perf_counter()
    run_findings(slh, analysis_params(cfg), lambda m: None)
    print(f"rerun, inputs unchanged: {time.perf_counter() - t:.2f} s")
    spark.stop()


if __name__ == "__main__":
    main()
