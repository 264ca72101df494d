"""The one-pass gold spine (gold_spine: intervals and split-brain windows with their traffic from
one shuffle, sorted in Python) gives the rows of the reference steps: intervals per instance in
pandas (instance_intervals) and windows by a Spark join of the intervals with broker_state."""

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analysis.frames import decode_kinds, sort_by_key
from analysis.intervals import instance_intervals
from analysis.spine_onepass import gold_spine, spine_intervals, spine_windows
from analysis.split_brain import overlapping_pairs, windows_with_traffic
from lakehouse.tables import BROKER_STATE, ROLE_INTERVALS

T0 = datetime(2026, 11, 21, 23, 59, 50, tzinfo=timezone.utc)
KINDS = ["activemq", "artemis", "weblogic", "custom-kind"]  # weblogic: no exclusive roles; the last: no pack


def random_state(seed: int) -> pd.DataFrame:
    """Groups of 1-3 instances (names out of order, non-ASCII too) with random states, restarts,
    gaps, counters that are sometimes null on active rows and rows in no particular order."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(int(rng.integers(3, 7))):
        group = f"grp-{g}" if g % 3 else f"grüppe-{g}"
        kind = KINDS[g % len(KINDS)]
        for name in rng.permutation(["b", "a", "é", "Z"])[: int(rng.integers(1, 4))]:
            jvm_start, enq = 1_000_000.0, 0
            n = int(rng.integers(1, 60))
            steps = rng.integers(1, 3000, n).cumsum()  # ms: irregular, no two rows of a key at one time
            p_active = rng.uniform(0.2, 0.9)
            for i in range(n):
                ts = T0 + timedelta(milliseconds=int(steps[i]))
                r = rng.random()
                answered = r > 0.1
                active = bool(rng.random() < p_active) if answered else None
                if rng.random() < 0.05:
                    jvm_start += 60_000  # restarted
                enq += int(rng.integers(0, 4)) if active else 0
                rows.append({
                    "obs_key": f"{group}/{name}/{i}", "ts": ts, "obs_date": ts.strftime("%Y-%m-%d"), "kind": kind,
                    "group_name": group, "instance": f"{group}-{name}", "reachable": answered, "active": active,
                    "role": "unknown" if not answered else ("master" if active else "slave"),
                    "uptime_ms": int(ts.timestamp() * 1000 - jvm_start) if answered and rng.random() > 0.1 else None,
                    "total_enqueued": enq if answered and rng.random() > 0.1 else None,
                })
    pdf = pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    for c in BROKER_STATE.column_names:
        if c not in pdf:
            pdf[c] = None
    return pdf[BROKER_STATE.column_names]


def as_rows(df) -> list:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.mark.parametrize("hole_us", [math.inf, 1_500_000])  # rows 1..3000 ms apart: 1.5 s makes many holes
def test_gold_spine_equals_the_reference_steps(spark, hole_us):
    for seed in range(4):
        pdf = random_state(seed)
        st = spark.createDataFrame(pdf, BROKER_STATE.spark_schema()).repartition(3)
        spine = gold_spine(st, nonexclusive=["weblogic"], partitions=2, hole_us=hole_us).cache()
        got_iv = spine_intervals(spine)
        expected_iv = pd.concat([instance_intervals(p, hole_us) for _, p in pdf.groupby(["group_name", "instance"])])
        ref_iv = spark.createDataFrame(expected_iv, ROLE_INTERVALS.spark_schema())
        assert as_rows(got_iv) == as_rows(ref_iv), seed
        ref_windows = windows_with_traffic(overlapping_pairs(ref_iv, ["weblogic"]), st, hole_us)
        got, ref = as_rows(spine_windows(spine)), as_rows(ref_windows)
        assert got == ref, seed
        spine.unpersist()


def test_sort_by_key_orders_names_bytewise_and_keeps_kinds():
    t = pa.table({
        "group_name": ["g", "g", "G", "g", "é", "g"],
        "instance": ["b", "a", "x", "a", "y", "é"],
        "ts": pa.array([3, 2, 1, 1, 5, 0], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "_kind": pa.array([1, 1, 2, 1, 0, 0], pa.int8()),
        "_other_kind": pa.array([None, None, None, None, "x-kind", None], pa.string()),
    })
    s, starts = sort_by_key(decode_kinds(t, ["activemq", "artemis"]))
    assert [(g, i, k) for g, i, k in zip(s.column("group_name").to_pylist(), s.column("instance").to_pylist(),
                                         s.column("kind").to_pylist())] == [
        ("G", "x", "artemis"), ("g", "a", "activemq"), ("g", "a", "activemq"), ("g", "b", "activemq"),
        ("g", "é", None), ("é", "y", "x-kind")]
    assert starts.tolist() == [True, True, False, True, True, True]
