"""Silver's per-tick clock-skew work on the driver (analysis/silver_carry.py): the skews of a tick's
new rows from each target's carried samples (`skews_from_carry`) and the carry's new summaries
(`target_summaries`), for a fleet of `--targets` with a full carry (SKEW_WINDOW samples each) and
`--rows` new scrapes per target (a 30 s tick at a 5 s scrape interval: 6).

    python bench/bench_silver_skews.py --targets 100,1000,5000

Run it in two checkouts side by side to compare versions (the functions' signatures are stable)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from analysis import clock_skew  # noqa: E402
from analysis.silver_carry import Carry, skews_from_carry, target_summaries  # noqa: E402
from bench.machine import machine_line  # noqa: E402

T0_US = 1_795_000_000_000_000


def fleet(targets: int, rows: int, seed: int = 3) -> tuple[pd.DataFrame, Carry]:
    rng = np.random.default_rng(seed)
    window = clock_skew.SKEW_WINDOW
    skew = rng.normal(0, 2, targets)
    carry = Carry({f"t{t:05d}": {"last_us": T0_US + (window - 1) * 5_000_000, "samples": 10_000,
                                 "window": [(T0_US + k * 5_000_000, float(skew[t] + rng.normal(0, 0.1))) for k in range(window)]}
                   for t in range(targets)})
    n = targets * rows
    t_idx = np.repeat(np.arange(targets), rows)
    k = np.tile(np.arange(rows), targets)
    sample = skew[t_idx] + rng.normal(0, 0.1, n)
    sample[rng.random(n) < 0.003] = np.nan  # missed scrapes
    samples = pd.DataFrame({"obs_key": [f"{t}-{j}" for t, j in zip(t_idx, k)], "target": [f"t{t:05d}" for t in t_idx],
                            "us": T0_US + (window + k) * 5_000_000 + t_idx, "sample": sample})
    return samples, carry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="100,1000,5000", help="comma-separated fleet sizes (default 100,1000,5000)")
    ap.add_argument("--rows", type=int, default=6, help="new scrapes per target per tick (default 6)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per size; the median is reported (default 5)")
    args = ap.parse_args(argv)
    print(machine_line())
    print(f"{'targets':>8} {'new rows':>9} {'skews_from_carry':>17} {'target_summaries':>17}  (median of {args.repeat}, s)")
    for targets in (int(x) for x in args.targets.split(",")):
        samples, carry = fleet(targets, args.rows)
        skew_s, summary_s = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            skews = skews_from_carry(samples, carry, clock_skew.CLOCK_SKEW_THRESHOLD_S)
            skew_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            target_summaries(samples, clock_skew.SKEW_WINDOW)
            summary_s.append(time.perf_counter() - t)
            assert skews is not None and len(skews) == len(samples)
        print(f"{targets:>8} {len(samples):>9} {statistics.median(skew_s):>17.3f} {statistics.median(summary_s):>17.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
