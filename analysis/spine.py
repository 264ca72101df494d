"""The spine job: bronze_jolokia → silver broker_state/destination_stats → gold role_intervals,
failover_events, split_brain_windows.

Each step is a small pure function: DataFrame → DataFrame, or, for the sequence logic (intervals
of an instance, hand-overs in a group), Arrow table → Arrow table over whole columns with NumPy,
run by Spark in `mapInArrow` on partitions of whole groups sorted by group and time. A full run
reads broker_state once: one shuffle by group gives the intervals and the split-brain windows
with their traffic (gold_spine). `run_spine` only reads, calls
and writes: incrementally from each job's watermark (new input rows and the stored rows they
continue), or in full. Both give the same rows; reruns over the same data change nothing."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace
from functools import reduce
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis import watermark
from analysis.failovers import failover_events
from analysis.frames import by_group, contract_table, key_starts, timestamps
from analysis.groups import ha_group_checks, nonexclusive_kinds
from analysis.intervals import ROLE_INPUT, interval_bounds, role_intervals
from analysis.silver import code_sources, run_silver
from analysis.split_brain import overlapping_pairs, window_id, window_rows, windows_with_traffic
from analysis.watermark import Watermark, appended_since, fingerprint, pinned_read
from lakehouse.tables import ROLE_INTERVALS, SILVER_FROM_JOLOKIA, SPLIT_BRAIN_WINDOWS, TableContract
from lakehouse.tables import Column as ContractColumn

# --- gold in one pass: intervals, and split-brain windows with their traffic -----------------------
#
# After the shuffle by group a partition holds whole groups, sorted by group, instance and time: the
# call that finds a group's intervals also pairs those of its instances that overlap and measures
# each window on the rows it already holds (ranges found by binary search, sums by prefix sums,
# counter growth by range max/min). No second pass over broker_state, no join.

SPINE_INPUT = (*ROLE_INPUT, "reachable", "total_enqueued")
# role_intervals rows (`_window` false) and split-brain windows (true: kind, group_name, instance =
# instance_a and the window columns, as in SPLIT_BRAIN_WINDOWS); every column nullable, the other
# kind's columns null
_WINDOW_COLUMNS = ("instance_b", "certain_start", "certain_end", "possible_start", "possible_end", "enqueued_a", "enqueued_b")
SPINE = TableContract(
    name="gold_spine", layer="internal", keys=(),
    doc="role intervals and split-brain windows of one pass over broker_state (gold_spine)",
    columns=(*(replace(c, nullable=True) for c in ROLE_INTERVALS.columns),
             *(replace(c, nullable=True) for c in SPLIT_BRAIN_WINDOWS.columns if c.name in _WINDOW_COLUMNS),
             ContractColumn("unanswered", pa.int64(), "windows: unanswered scrapes of either side inside the certain window"),
             ContractColumn("_window", pa.bool_(), "true: a split-brain window row")),
)


def spine_rows(n: int, columns: dict) -> pa.Table:
    """`n` SPINE rows from `columns`; the columns not given are null."""
    return contract_table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in SPINE.schema}, SPINE)


def positions(ts: np.ndarray, row_key: np.ndarray, key: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """np.searchsorted of `values` among the rows of key `key` (rows sorted by key, then `ts`), as
    row positions: a monotonic (key, ts) code when it fits in int64, else key by key."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    lo, stride = int(ts.min()), int(ts.max()) - int(ts.min()) + 1
    if (int(row_key.max()) + 1) * stride < 2**62:
        code = (ts - lo) + row_key * stride
        return np.searchsorted(code, (np.clip(values, lo, lo + stride - 1) - lo) + key * stride, side)
    first = np.searchsorted(row_key, key, "left")
    last = np.searchsorted(row_key, key, "right")
    return np.array([f + np.searchsorted(ts[f:e], v, side) for f, e, v in zip(first, last, values)], dtype=np.int64)


def range_reduce(ufunc, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, empty) -> np.ndarray:
    """`ufunc`.reduce of values[lo:hi] for every range (`empty` where lo >= hi)."""
    if not len(lo):
        return np.zeros(0, dtype=values.dtype)
    padded = np.append(values, values[:1] if len(values) else [empty])  # reduceat indexes up to len
    bounds = np.empty(2 * len(lo), dtype=np.int64)
    bounds[0::2], bounds[1::2] = lo, hi
    return np.where(hi > lo, ufunc.reduceat(padded, bounds)[0::2], empty)


def overlapping_from_sorted(iv: pa.Table, at: dict[str, np.ndarray], exclusive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (a, b) of overlapping intervals of two instances of one group (positions in `iv`,
    sorted by group, instance, start; instance of a < instance of b), among the `exclusive` ones.

    In start order, an interval overlaps exactly the later ones of its group that start by its
    end: those are counted with one lexsort of starts and ends, then enumerated."""
    cand = np.flatnonzero(exclusive)
    group = (np.cumsum(key_starts(iv, ["group_name"])) - 1)[cand]
    start, end = at["start"][cand], at["end"][cand]
    order = np.lexsort((start, group))
    q = len(order)
    g, s, e = group[order], start[order], end[order]
    merged = np.lexsort((np.repeat([0, 1], q), np.concatenate([s, e]), np.concatenate([g, g])))
    starts_before = np.cumsum(merged < q)  # a start sorts before an end at the same time: counted
    reach = np.empty(q, dtype=np.int64)
    reach[merged[merged >= q] - q] = starts_before[merged >= q]  # per interval: the later ones up to here
    count = np.maximum(reach - np.arange(1, q + 1), 0)
    i = np.repeat(np.arange(q), count)
    j = i + 1 + np.arange(len(i)) - np.repeat(np.cumsum(count) - count, count)
    x, y = cand[order[i]], cand[order[j]]
    key = at["key"]
    other = key[x] != key[y]
    x, y = x[other], y[other]
    first = key[x] < key[y]  # keys are sorted by instance within a group
    return np.where(first, x, y), np.where(first, y, x)


def windows_from_sorted(t: pa.Table, iv: pa.Table, at: dict[str, np.ndarray], nonexclusive: Sequence[str] = ()) -> pa.Table:
    """Split-brain windows (SPINE rows) of the groups in `t` (SPINE_INPUT columns, whole
    groups, sorted by group, instance, ts) from their intervals `iv` and `at` (interval_bounds).
    Traffic as window_traffic: unanswered scrapes of either side inside the certain window, counter
    growth on each side's active observations inside the possible window."""
    if not iv.num_rows:
        return SPINE.schema.empty_table()
    exclusive = ~pc.is_in(iv.column("kind"), pa.array(list(nonexclusive), pa.string())).to_numpy(zero_copy_only=False)
    a, b = overlapping_from_sorted(iv, at, exclusive)
    start, end, lower, upper = at["start"], at["end"], at["lower"], at["upper"]
    certain = np.maximum(start[a], start[b]), np.minimum(end[a], end[b])
    possible = np.maximum(lower[a], lower[b]), np.minimum(upper[a], upper[b])

    ts, row_key = at["ts"], at["row_key"]
    unreachable = pc.invert(t.column("reachable")).fill_null(False).to_numpy(zero_copy_only=False)
    unanswered_before = np.concatenate([[0], np.cumsum(unreachable)])
    counter = t.column("total_enqueued")
    counted = (pc.fill_null(t.column("active"), False).to_numpy(zero_copy_only=False)
               & ~counter.is_null().to_numpy(zero_copy_only=False))
    counter = pc.cast(counter, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    counted_before = np.concatenate([[0], np.cumsum(counted)])
    info = np.iinfo(np.int64)
    high, low = np.where(counted, counter, info.min), np.where(counted, counter, info.max)

    unanswered = np.zeros(len(a), dtype=np.int64)
    growth = []
    for side in (a, b):
        k = at["key"][side]
        c0, c1 = positions(ts, row_key, k, certain[0], "left"), positions(ts, row_key, k, certain[1], "right")
        unanswered += unanswered_before[c1] - unanswered_before[c0]
        p0, p1 = positions(ts, row_key, k, possible[0], "left"), positions(ts, row_key, k, possible[1], "right")
        none = counted_before[p1] == counted_before[p0]
        grown = range_reduce(np.maximum, high, p0, p1, info.min) - range_reduce(np.minimum, low, p0, p1, info.max)
        growth.append(pa.array(np.where(none, 0, grown), pa.int64(), mask=none))

    return spine_rows(len(a), {
        "kind": iv.column("kind").take(a), "group_name": iv.column("group_name").take(a),
        "instance": iv.column("instance").take(a), "instance_b": iv.column("instance").take(b),
        "certain_start": timestamps(certain[0]), "certain_end": timestamps(certain[1]),
        "possible_start": timestamps(possible[0]), "possible_end": timestamps(possible[1]),
        "unanswered": pa.array(unanswered, pa.int64()), "enqueued_a": growth[0], "enqueued_b": growth[1],
        "_window": pa.array(np.ones(len(a), dtype=bool)),
    })


def spine_from_sorted(t: pa.Table, nonexclusive: Sequence[str] = (), starts_key: np.ndarray | None = None) -> pa.Table:
    """Role intervals and split-brain windows of the whole groups in `t` (SPINE_INPUT columns,
    sorted by group_name, instance, ts), as SPINE rows."""
    iv, at = interval_bounds(t, starts_key)
    intervals = spine_rows(iv.num_rows, {**{name: iv.column(name) for name in iv.column_names},
                                         "_window": pa.array(np.zeros(iv.num_rows, dtype=bool))})
    return pa.concat_tables([intervals, windows_from_sorted(t, iv, at, nonexclusive)])


def gold_spine(broker_state: DataFrame, nonexclusive: list[str] | None = None, partitions: int | None = None) -> DataFrame:
    """One pass over broker_state: SPINE rows, role intervals and split-brain windows
    (split them with spine_intervals / spine_windows)."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else list(nonexclusive)
    return by_group(broker_state, SPINE_INPUT, lambda t, starts: spine_from_sorted(t, nonexclusive, starts),
                    SPINE.spark_schema(), partitions)


def spine_intervals(spine: DataFrame) -> DataFrame:
    return spine.where(~F.col("_window")).select(*ROLE_INTERVALS.column_names)


def spine_windows(spine: DataFrame) -> DataFrame:
    windows = spine.where(F.col("_window")).withColumnRenamed("instance", "instance_a")
    return window_rows(windows.withColumn("window_id", window_id()))


# --- the runner ------------------------------------------------------------------------------------------
#
# Two jobs, each with its own watermark (analysis/watermark.py): silver (analysis/silver.py) reads bronze_jolokia,
# gold reads broker_state. An incremental run needs only appends to its input since the watermark;
# it reads the new rows plus the few stored rows that decide what they continue, and writes what
# changed. Whatever it could not do exactly (rows older than stored ones, a group derived for rows
# already stored, anything but appends) falls back to the full recompute, which is always right.

GOLD_JOB = "spine-gold"
GOLD_TABLES = ("role_intervals", "failover_events", "split_brain_windows", "ha_group_checks")
KEY = ["group_name", "instance"]
# what the gold steps read of broker_state (no partition column: the bridge need not attach it)
GOLD_INPUT = [*ROLE_INPUT, "reachable", "total_enqueued", "store", "node_id"]


def run_gold(slh, say, full: bool = False) -> None:
    """broker_state → role_intervals, failover_events, split_brain_windows, ha_group_checks."""
    fp = fingerprint(GOLD_JOB, nonexclusive_kinds(), sources=code_sources())
    appended = None if full else appended_since(slh, GOLD_JOB, GOLD_TABLES, "broker_state", fp, GOLD_INPUT)
    if appended is not None and gold_increment(slh, appended, Watermark(GOLD_JOB, appended.version, fp), say):
        return
    state, version = pinned_read(slh, "broker_state", GOLD_INPUT)
    mark = Watermark(GOLD_JOB, version, fp).commit_info()
    say("silver → gold role_intervals (full)")
    spine = gold_spine(state).cache()  # one pass, while role_intervals is written; the next steps reuse it
    intervals = spine_intervals(spine)
    slh.write("role_intervals", intervals, commit_info=mark)
    say("gold failover_events, split_brain_windows, ha_group_checks")
    slh.write("failover_events", failover_events(intervals), commit_info=mark)
    slh.write("split_brain_windows", spine_windows(spine), commit_info=mark)
    slh.write("ha_group_checks", ha_group_checks(state), commit_info=mark)
    spine.unpersist()


def gold_increment(slh, appended, mark: Watermark, say) -> bool:
    """Bring gold up to date with rows appended to broker_state; False when that would not be exact.

    Per (group, instance) with new rows, the role intervals are recomputed from its last stored
    *inactive* observation on (there the interval scan starts afresh: nothing before it can change
    what comes after); that re-reads the open interval, the overlap it needs. Hand-overs are
    recomputed for the groups concerned from all their intervals (few), split-brain windows only
    where an interval of theirs changed; every other gold row is kept as it is."""
    if appended.new.isEmpty():
        say("silver → gold: no new broker_state rows")
        return True
    old, new = appended.old, appended.new
    keys = resume_points(old, new, slh.read("role_intervals"))
    if keys is None:
        say("silver → gold: rows older than stored ones, recomputing")
        return False
    say(f"silver → gold (incremental: broker_state up to version {mark.input_version}, {len(keys)} instances with new rows)")
    spark = slh.spark
    anchors = F.broadcast(spark.createDataFrame(keys, "group_name string, instance string, anchor long")
                          .withColumn("_affected", F.lit(True)))
    earliest = None if any(k[2] is None for k in keys) else min(k[2] for k in keys)
    pruned = old if earliest is None else old.where(F.col("ts") >= F.timestamp_micros(F.lit(earliest)))  # Parquet skips the rest
    after_anchor = F.unix_micros("ts") >= F.coalesce(F.col("anchor"), F.lit(-(2**63)))
    rows = pruned.join(anchors, KEY).where(after_anchor).drop("anchor", "_affected").unionByName(new)

    recomputed = role_intervals(rows).cache()
    kept = (slh.read("role_intervals").join(anchors, KEY, "left")
            .where(F.col("_affected").isNull() | (F.unix_micros("start_ts") < F.col("anchor")))
            .drop("anchor", "_affected"))
    intervals = kept.unionByName(recomputed).cache()
    intervals.count()  # materialised before role_intervals, which it was read from, is rewritten
    groups = F.broadcast(spark.createDataFrame(sorted({(k[0],) for k in keys}), "group_name string"))
    touched = intervals.join(groups, "group_name", "left_semi")

    def untouched(table: str) -> DataFrame:
        return slh.read(table).join(groups, "group_name", "left_anti")

    pairs = flag_changed_pairs(overlapping_pairs(touched), recomputed).cache()
    fresh = pairs.where("_changed")
    spans = [(r.possible_start, r.possible_end) for r in fresh.select("possible_start", "possible_end").collect()]
    window_rows = old.where(ts_within(spans)).join(groups, "group_name", "left_semi").unionByName(new)
    unchanged = slh.read("split_brain_windows").join(pairs.where(~F.col("_changed")).select("window_id"), "window_id", "left_semi")

    info = mark.commit_info()
    slh.write("role_intervals", intervals, commit_info=info)
    slh.write("failover_events", untouched("failover_events").unionByName(failover_events(touched)), commit_info=info)
    slh.write("split_brain_windows", untouched("split_brain_windows").unionByName(unchanged)
              .unionByName(windows_with_traffic(fresh, window_rows)), commit_info=info)
    slh.write("ha_group_checks", ha_group_checks(old.unionByName(new)), commit_info=info)
    for df in (recomputed, intervals, pairs):
        df.unpersist()
    return True


def resume_points(old: DataFrame, new: DataFrame, intervals: DataFrame) -> list[tuple] | None:
    """(group, instance, anchor µs) for every key with new rows: where its interval scan restarts,
    at a stored *inactive* observation (None: from its first row). None when a new row is not
    later than all stored rows of its key (late data: only a full run is exact).

    Reads only a recent tail of the stored rows: it holds every stored row a new one could
    precede, and for most keys an inactive row. For the others the key's last stored interval
    says where one is (the inactive row after it, or right before it); only keys it cannot tell
    about are looked up in all stored rows."""
    first_new = {(k.group_name, k.instance): k.first_new for k in
                 new.groupBy(*KEY).agg(F.min(F.unix_micros("ts")).alias("first_new")).collect()}
    since = min(first_new.values()) - watermark.RESUME_TAIL_US
    tail = {(k.group_name, k.instance): k for k in last_rows(old.where(F.col("ts") >= F.timestamp_micros(F.lit(since))))}
    if any(key in tail and tail[key].last_ts >= first for key, first in first_new.items()):
        return None
    anchors = {key: tail[key].last_inactive for key in first_new if key in tail and tail[key].last_inactive is not None}
    last = F.max_by(F.struct(F.unix_micros("first_inactive_after").alias("after"), F.unix_micros("start_lower").alias("before"),
                             "start_lower_state"), "start_ts")
    for k in intervals.groupBy(*KEY).agg(last.alias("last")).collect():
        key = (k.group_name, k.instance)
        if key in first_new and key not in anchors:
            after, before, state = k["last"]
            anchor = after if after is not None else before if state == "inactive" else None
            if anchor is not None:
                anchors[key] = anchor
    unknown = [key for key in first_new if key not in anchors]
    if unknown:
        keys = F.broadcast(old.sparkSession.createDataFrame(unknown, "group_name string, instance string"))
        anchors.update({(k.group_name, k.instance): k.last_inactive for k in last_rows(old.join(keys, KEY))})
    return [(*key, anchors.get(key)) for key in sorted(first_new)]


def last_rows(rows: DataFrame) -> list:
    """Per key: its last observation and its last inactive observation (µs)."""
    return rows.groupBy(*KEY).agg(
        F.max(F.unix_micros("ts")).alias("last_ts"),
        F.max(F.when(~F.col("active"), F.unix_micros("ts"))).alias("last_inactive")).collect()


def ts_within(spans: list[tuple], most: int = 256) -> Column:
    """`ts` inside one of `spans` (merged; beyond `most`, their hull): Parquet skips the row
    groups outside, so a few short windows read a few row groups."""
    merged: list[list] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    if len(merged) > most:
        merged = [[merged[0][0], max(hi for _, hi in merged)]]
    return reduce(operator.or_, (F.col("ts").between(F.lit(lo), F.lit(hi)) for lo, hi in merged), F.lit(False))


def flag_changed_pairs(pairs: DataFrame, recomputed: DataFrame) -> DataFrame:
    """`_changed`: one of the pair's intervals was recomputed (its window must be too)."""
    changed = F.broadcast(recomputed.select(F.col("interval_id").alias("_id")).withColumn("_hit", F.lit(True)))
    for side in ("_a_id", "_b_id"):
        pairs = pairs.join(changed.withColumnRenamed("_id", side).withColumnRenamed("_hit", side + "_hit"), side, "left")
    return pairs.withColumn("_changed", F.col("_a_id_hit").isNotNull() | F.col("_b_id_hit").isNotNull()).drop("_a_id_hit", "_b_id_hit")


@dataclass(frozen=True)
class SpineParams:
    """The spine's parameters (analysis/params.py): each target's (kind, configured group), and
    the clock skew at which observations move onto the broker's clock (math.inf: never; see
    analysis/silver.py run_silver)."""

    targets: dict[str, tuple[str, str | None]]
    skew_threshold: float = math.inf


def run_spine(slh, params: SpineParams, progress=None, full: bool = False) -> dict[str, int]:
    """bronze → silver → gold; incremental from the jobs' watermarks unless `full`. Returns the
    rows each output table holds afterwards (what a rerun over the same data gives again)."""
    say = progress or (lambda msg: None)
    run_silver(slh, params.targets, say, full=full, skew_threshold=params.skew_threshold)
    run_gold(slh, say, full=full)
    return {t: slh.lakehouse.count(t) for t in (*SILVER_FROM_JOLOKIA, *GOLD_TABLES)}
