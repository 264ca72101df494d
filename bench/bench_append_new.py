"""A collector's flush into a day of bronze (issue 20): `Lakehouse.append_new` of one flush's
exchanges into bronze_jolokia already holding `--hours` of the day, with the key check reading only
the files whose ts range reaches the batch (contract `key_includes_ts`) and, side by side in the same
run, reading the keys of the whole day's partition (the window switched off).

    python bench/bench_append_new.py --targets 1000 --hours 1,6,12

The day is written as a collector leaves it, one file per `--file-minutes` of scrapes (every target
every 5 s, oldest first); each measure appends the next flush (2 s of scrapes: ~400 exchanges at
1,000 targets) and a replay of an old flush (nothing new), alternating window on/off, `--repeat` times.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import lakehouse.store as store_module  # noqa: E402
from bench.machine import machine_line  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402
from lakehouse.tables import contract  # noqa: E402

T0 = dt.datetime(2026, 11, 27, tzinfo=dt.timezone.utc)
SCRAPE_S = 5.0
FLUSH_S = 2.0


def exchanges(targets: int, lo_s: float, hi_s: float) -> pa.Table:
    """Every target's scrapes with lo_s <= t < hi_s (seconds of the day)."""
    rows = []
    k = int(lo_s // SCRAPE_S)
    while k * SCRAPE_S < hi_s:
        for t in range(targets):
            s = k * SCRAPE_S + t * SCRAPE_S / targets  # phases spread over the interval, as the collector spreads them
            if lo_s <= s < hi_s:
                ts = T0 + dt.timedelta(seconds=s)
                rows.append((hashlib.sha256(f"t{t}|{s}".encode()).hexdigest()[:32], ts, f"amq-{t:04d}"))
        k += 1
    keys, ts, names = zip(*rows) if rows else ((), (), ())
    n = len(keys)
    c = contract("bronze_jolokia")
    cols = {"obs_key": pa.array(keys), "ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "obs_date": pa.array([T0.strftime("%Y-%m-%d")] * n),
            "target": pa.array(names), "kind": pa.array(["activemq"] * n), "request_json": pa.array(["[]"] * n),
            "response_json": pa.array(['[{"status":200}]'] * n), "collector": pa.array(["bench"] * n)}
    return pa.table({f.name: cols.get(f.name, pa.nulls(n, f.type)) for f in c.schema}).cast(c.schema)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=int, default=1000, help="scraped targets (default 1000: 500 HA groups)")
    ap.add_argument("--hours", default="1,6,12", help="hours of the day already in bronze, comma-separated (default 1,6,12)")
    ap.add_argument("--file-minutes", type=float, default=1.0, help="minutes of scrapes per stored file (default 1)")
    ap.add_argument("--repeat", type=int, default=5, help="flushes per variant and size (default 5)")
    args = ap.parse_args(argv)
    print(machine_line())
    print(f"{args.targets} targets every {SCRAPE_S:g} s, a flush every {FLUSH_S:g} s; medians of {args.repeat}, s")
    print(f"{'day so far':>11} {'files':>6} {'rows':>10} {'flush: window':>14} {'whole day':>10} {'ratio':>6} "
          f"{'replay: window':>15} {'whole day':>10}")
    root = tempfile.mkdtemp(prefix="bench-append-new-")
    window = store_module._ts_window
    try:
        lh = Lakehouse(root)
        stored_s, files = 0.0, 0
        for hours in sorted(int(h) for h in args.hours.split(",")):
            step = args.file_minutes * 60
            while stored_s < hours * 3600:
                lh.append("bronze_jolokia", exchanges(args.targets, stored_s, stored_s + step))
                stored_s += step
                files += 1
            rows = lh.count("bronze_jolokia")
            times: dict[str, list[float]] = {k: [] for k in ("flush on", "flush off", "replay on", "replay off")}
            at = stored_s
            for i in range(args.repeat):
                for on in (True, False) if i % 2 == 0 else (False, True):
                    store_module._ts_window = window if on else (lambda c, tbl: None)
                    batch = exchanges(args.targets, at, at + FLUSH_S)
                    t = time.perf_counter()
                    assert lh.append_new("bronze_jolokia", batch) == batch.num_rows
                    times[f"flush {'on' if on else 'off'}"].append(time.perf_counter() - t)
                    at += FLUSH_S
                    old = exchanges(args.targets, 600.0, 600.0 + FLUSH_S)
                    t = time.perf_counter()
                    assert lh.append_new("bronze_jolokia", old) == 0
                    times[f"replay {'on' if on else 'off'}"].append(time.perf_counter() - t)
            store_module._ts_window = window
            stored_s = at
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{hours:>9} h {files:>6} {rows:>10,} {med['flush on']:>14.3f} {med['flush off']:>10.3f} "
                  f"{med['flush off'] / med['flush on']:>5.1f}x {med['replay on']:>15.3f} {med['replay off']:>10.3f}", flush=True)
    finally:
        store_module._ts_window = window
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
