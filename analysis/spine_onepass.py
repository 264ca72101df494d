"""Gold in one pass over broker_state: role intervals, split-brain windows with their traffic, and
the spine's carry, as rows of one internal contract (SPINE) that the runner splits (analysis/spine.py).

Each step is Arrow table → Arrow table over whole columns with NumPy, run by Spark in
`mapInArrow` on partitions of whole groups sorted by group and time (frames.by_group)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis.frames import by_group, contract_table, hole_before, key_starts, micros, sort_by_key, spark_times, timestamps
from analysis.groups import nonexclusive_kinds, sightings_of_rows
from analysis.intervals import ROLE_INPUT, interval_bounds
from analysis.spine_carry import CARRY_INPUT, OFFSETS, carry_rows
from lakehouse.tables import HA_IDENTITY_SIGHTINGS, ROLE_INTERVALS, SPINE_CARRY, SPLIT_BRAIN_WINDOWS, TableContract
from lakehouse.tables import Column as ContractColumn

# --- gold in one pass: intervals, and split-brain windows with their traffic -----------------------
#
# After the shuffle by group a partition holds whole groups, sorted by group, instance and time: the
# call that finds a group's intervals also pairs those of its instances that overlap and measures
# each window on the rows it already holds (ranges found by binary search, sums by prefix sums,
# counter growth by range max/min). No second pass over broker_state, no join.

SPINE_INPUT = (*ROLE_INPUT, "reachable", "total_enqueued")
INCREMENT_INPUT = (*CARRY_INPUT, "identity", "_new")  # identity: groups.identity() of the new rows
# `_part`: role_intervals rows (PART_INTERVAL), split-brain windows (PART_WINDOW: kind, group_name,
# instance = instance_a and the window columns, as in SPLIT_BRAIN_WINDOWS), spine_carry rows
# (PART_CARRY: group_name, instance, kind and the carry's columns), and of an incremental pass, per
# instance with new rows, where its recomputed intervals start (PART_RESUME: group_name, instance,
# ts) or that a new row is not later than its stored ones (PART_LATE), and the identity sightings of
# its new rows (PART_SIGHTING: the HA_IDENTITY_SIGHTINGS columns); every column nullable, the other
# parts' columns null
PART_INTERVAL, PART_WINDOW, PART_CARRY, PART_RESUME, PART_LATE, PART_SIGHTING = 0, 1, 2, 3, 4, 5
_WINDOW_COLUMNS = ("window_id", "instance_b", "certain_start", "certain_end", "possible_start", "possible_end", "certainty",
                   "duration_s", "enqueued_a", "enqueued_b")
_CARRY_COLUMNS = ("ts", "active", "uptime_ms", *OFFSETS)
_SIGHTING_COLUMNS = ("identity", "first_seen", "last_seen")
SPINE = TableContract(
    name="gold_spine", layer="internal", keys=(),
    doc="role intervals, split-brain windows and the carry of one pass over broker_state (gold_spine)",
    columns=(*(replace(c, nullable=True) for c in ROLE_INTERVALS.columns),
             *(replace(c, nullable=True) for c in SPLIT_BRAIN_WINDOWS.columns if c.name in _WINDOW_COLUMNS),
             *(replace(c, nullable=True) for c in SPINE_CARRY.columns if c.name in _CARRY_COLUMNS),
             *(replace(c, nullable=True) for c in HA_IDENTITY_SIGHTINGS.columns if c.name in _SIGHTING_COLUMNS),
             ContractColumn("_part", pa.int32(), "PART_INTERVAL | PART_WINDOW | PART_CARRY | PART_RESUME | PART_LATE | PART_SIGHTING")),
)


def spine_rows(part: int, columns: dict) -> pa.Table:
    """SPINE rows of one `part` from `columns` (a table or a dict of arrays); the columns not given are null."""
    if isinstance(columns, pa.Table):
        columns = {name: columns.column(name) for name in columns.column_names}
    n = len(next(iter(columns.values())))
    columns = {**columns, "_part": pa.array(np.full(n, part, dtype=np.int32))}
    return contract_table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in SPINE.schema}, SPINE)


def positions(ts: np.ndarray, row_key: np.ndarray, key: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """np.searchsorted of `values` among the rows of key `key` (rows sorted by key, then `ts`), as
    row positions: a monotonic (key, ts) code when it fits in int64, else key by key."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    lo, stride = int(ts.min()), int(ts.max()) - int(ts.min()) + 3  # codes 1..stride-2; 0 / stride-1: before / after all
    if (int(row_key.max()) + 1) * stride < 2**62:
        code = (ts - lo + 1) + row_key * stride
        return np.searchsorted(code, np.clip(values - lo + 1, 0, stride - 1) + key * stride, side)
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
    groups, sorted by group, instance, ts) from their intervals `iv` and `at` (interval_bounds),
    measured by window_traffic_sorted."""
    if not iv.num_rows:
        return SPINE.schema.empty_table()
    exclusive = ~pc.is_in(iv.column("kind"), pa.array(list(nonexclusive), pa.string())).to_numpy(zero_copy_only=False)
    a, b = overlapping_from_sorted(iv, at, exclusive)
    start, end, lower, upper = at["start"], at["end"], at["lower"], at["upper"]
    certain = np.maximum(start[a], start[b]), np.minimum(end[a], end[b])
    possible = np.maximum(lower[a], lower[b]), np.minimum(upper[a], upper[b])
    traffic = window_traffic_sorted(t, at["ts"], at["row_key"], at["hole"], (at["key"][a], at["key"][b]), certain, possible)
    rows = window_rows_of({
        "kind": iv.column("kind").take(a), "group_name": iv.column("group_name").take(a),
        "instance_a": iv.column("instance").take(a), "instance_b": iv.column("instance").take(b),
        "certain_start": certain[0], "certain_end": certain[1], "possible_start": possible[0], "possible_end": possible[1],
    }, *traffic)
    rows["instance"] = rows.pop("instance_a")
    return spine_rows(PART_WINDOW, rows)


def window_traffic_sorted(t: pa.Table, ts: np.ndarray, row_key: np.ndarray, hole: np.ndarray,
                          keys: tuple[np.ndarray, np.ndarray], certain: tuple[np.ndarray, np.ndarray],
                          possible: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """split_brain.window_traffic's rules over rows `t` (reachable, active, total_enqueued) sorted by
    key and time (`ts` µs, `row_key` their key codes, `hole` a hole before the row): per window, the
    unanswered scrapes and holes of either side inside the certain window, and each side's counter
    growth on its active observations inside the possible window (null: none). `keys`: each window's
    two sides as key codes (-1: no row of that side here); windows' bounds in µs."""
    unreachable = pc.invert(t.column("reachable")).fill_null(False).to_numpy(zero_copy_only=False)
    unanswered_before = np.concatenate([[0], np.cumsum(unreachable)])
    holes_before = np.concatenate([[0], np.cumsum(hole)])
    counter = t.column("total_enqueued")
    counted = (pc.fill_null(t.column("active"), False).to_numpy(zero_copy_only=False)
               & ~counter.is_null().to_numpy(zero_copy_only=False))
    counter = pc.cast(counter, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    counted_before = np.concatenate([[0], np.cumsum(counted)])
    info = np.iinfo(np.int64)
    high, low = np.where(counted, counter, info.min), np.where(counted, counter, info.max)

    def bounds(k: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row positions of [lo, hi] among key k's rows (empty where k < 0)."""
        first, last = np.zeros(len(k), dtype=np.int64), np.zeros(len(k), dtype=np.int64)
        has = k >= 0
        if len(ts) and has.any():
            first[has] = positions(ts, row_key, k[has], lo[has], "left")
            last[has] = positions(ts, row_key, k[has], hi[has], "right")
        return first, last

    unanswered = np.zeros(len(certain[0]), dtype=np.int64)
    growth = []
    for k in keys:
        c0, c1 = bounds(k, *certain)
        unanswered += unanswered_before[c1] - unanswered_before[c0]
        inner = np.minimum(c0 + 1, c1)  # a hole before row r lies inside when rows r-1 and r both do
        unanswered += holes_before[c1] - holes_before[inner]
        p0, p1 = bounds(k, *possible)
        none = counted_before[p1] == counted_before[p0]
        grown = range_reduce(np.maximum, high, p0, p1, info.min) - range_reduce(np.minimum, low, p0, p1, info.max)
        growth.append(pa.array(np.where(none, 0, grown), pa.int64(), mask=none))
    return unanswered, growth[0], growth[1]


def window_rows_of(windows: dict, unanswered: np.ndarray, enqueued_a: pa.Array, enqueued_b: pa.Array) -> dict:
    """split_brain.window_rows in Arrow: SPLIT_BRAIN_WINDOWS columns of `windows` (kind, group_name,
    instance_a, instance_b, bounds as µs arrays) and their traffic (window_traffic_sorted)."""
    start, end = windows["certain_start"], windows["certain_end"]
    ids = [hashlib.sha256("/".join(parts).encode()).hexdigest()[:32] for parts in zip(
        pc.cast(windows["group_name"], pa.string()).to_pylist(), pc.cast(windows["instance_a"], pa.string()).to_pylist(),
        pc.cast(windows["instance_b"], pa.string()).to_pylist(), spark_times(start))]
    return {**windows, "window_id": pa.array(ids, pa.string()),
            **{name: timestamps(windows[name]) for name in ("certain_start", "certain_end", "possible_start", "possible_end")},
            "certainty": pa.array(np.where(unanswered > 0, "possible", "certain"), pa.string()),
            "duration_s": pa.array((end - start).astype(np.float64) / 1e6, pa.float64()),
            "enqueued_a": enqueued_a, "enqueued_b": enqueued_b}


def windows_on_rows(bounds: pa.Table, rows: pa.Table, hole_us: float = math.inf) -> pa.Table:
    """SPLIT_BRAIN_WINDOWS rows of windows whose pair and bounds are known (`bounds`: window_bounds_of
    columns), measured on `rows` (group_name, instance, ts, reachable, active, total_enqueued): all
    the rows of both sides inside each possible window, in any order."""
    t, starts = sort_by_key(rows)
    first = np.flatnonzero(starts)
    code = {(g, i): k for k, (g, i) in enumerate(zip(pc.cast(t.column("group_name").take(first), pa.string()).to_pylist(),
                                                     pc.cast(t.column("instance").take(first), pa.string()).to_pylist()))}
    groups = bounds.column("group_name").to_pylist()
    keys = tuple(np.array([code.get(gi, -1) for gi in zip(groups, bounds.column(side).to_pylist())], dtype=np.int64)
                 for side in ("instance_a", "instance_b"))
    ts, _ = micros(t.column("ts"))
    us = {name: micros(bounds.column(name))[0] for name in ("certain_start", "certain_end", "possible_start", "possible_end")}
    traffic = window_traffic_sorted(t, ts, np.cumsum(starts) - 1, hole_before(ts, starts, hole_us), keys,
                                    (us["certain_start"], us["certain_end"]), (us["possible_start"], us["possible_end"]))
    columns = window_rows_of({**{name: bounds.column(name) for name in ("kind", "group_name", "instance_a", "instance_b")}, **us},
                             *traffic)
    return contract_table(columns, SPLIT_BRAIN_WINDOWS)


def window_bounds_of(intervals: pa.Table, nonexclusive: Sequence[str]) -> pa.Table:
    """The split-brain windows' bounds (kind, group_name, instance_a, instance_b, certain_start,
    certain_end, possible_start, possible_end) of role intervals held in Arrow: the same pairs as
    windows_from_sorted, without their traffic."""
    iv = intervals.sort_by([("group_name", "ascending"), ("instance", "ascending"), ("start_ts", "ascending")])
    start, _ = micros(iv.column("start_ts"))
    end, _ = micros(iv.column("end_ts"))
    lower, no_lower = micros(iv.column("start_lower"))
    upper, no_upper = micros(iv.column("end_upper"))
    key = np.cumsum(key_starts(iv, ["group_name", "instance"])) - 1
    exclusive = ~pc.is_in(iv.column("kind"), pa.array(list(nonexclusive), pa.string())).to_numpy(zero_copy_only=False)
    a, b = overlapping_from_sorted(iv, {"start": start, "end": end, "key": key}, exclusive)
    lower, upper = np.where(no_lower, start, lower), np.where(no_upper, end, upper)
    return pa.table({
        "kind": iv.column("kind").take(a), "group_name": iv.column("group_name").take(a),
        "instance_a": iv.column("instance").take(a), "instance_b": iv.column("instance").take(b),
        "certain_start": timestamps(np.maximum(start[a], start[b])), "certain_end": timestamps(np.minimum(end[a], end[b])),
        "possible_start": timestamps(np.maximum(lower[a], lower[b])), "possible_end": timestamps(np.minimum(upper[a], upper[b])),
    })


def spine_from_sorted(t: pa.Table, nonexclusive: Sequence[str] = (), starts_key: np.ndarray | None = None,
                      hole_us: float = math.inf) -> pa.Table:
    """Role intervals, split-brain windows and the carry of the whole groups in `t` (SPINE_INPUT
    columns, sorted by group_name, instance, ts), as SPINE rows."""
    starts_key = key_starts(t, ["group_name", "instance"]) if starts_key is None else starts_key
    iv, at = interval_bounds(t, starts_key, hole_us)
    return pa.concat_tables([spine_rows(PART_INTERVAL, iv), windows_from_sorted(t, iv, at, nonexclusive),
                             spine_rows(PART_CARRY, carry_rows(t, starts_key, iv, at, hole_us))])


def increment_from_sorted(t: pa.Table, starts_key: np.ndarray, hole_us: float = math.inf) -> pa.Table:
    """An incremental pass over whole keys sorted by group_name, instance, ts (INCREMENT_INPUT:
    the carried rows of every instance and the new rows, `_new` true), as SPINE rows: per instance
    with new rows, its intervals from where they may have changed on (PART_RESUME: its carried
    interval's start, else its first new row) and its new carry; the carry of every other instance
    as it was; the identity sightings of the new rows (PART_SIGHTING, when `t` has an `identity`
    column); PART_LATE for an instance with a new row not later than a carried one (then nothing
    else: only a full run is exact)."""
    new = t.column("_new").to_numpy(zero_copy_only=False)
    sightings = []
    if "identity" in t.column_names:
        sightings = [spine_rows(PART_SIGHTING, sightings_of_rows(t))]
        t = t.drop_columns(["identity"])
    t = t.drop_columns(["_new"])
    key = np.cumsum(starts_key) - 1
    touched = np.zeros(int(key[-1]) + 1 if len(key) else 0, dtype=bool)
    touched[key[new]] = True
    as_was = spine_rows(PART_CARRY, t.filter(pa.array(~touched[key])))
    t, starts_key, new = t.filter(pa.array(touched[key])), starts_key[touched[key]], new[touched[key]]
    if not t.num_rows:
        return pa.concat_tables([as_was, *sightings])
    key_first = np.flatnonzero(starts_key)
    ts, _ = micros(t.column("ts"))
    never, ever = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    first_new = np.minimum.reduceat(np.where(new, ts, never), key_first)
    last_carried = np.maximum.reduceat(np.where(new, ever, ts), key_first)
    starts_carried = ~new & t.column("observations_offset").is_valid().to_numpy(zero_copy_only=False)
    carried_start = np.maximum.reduceat(np.where(starts_carried, ts, ever), key_first)
    names = {c: t.column(c).take(key_first) for c in ("group_name", "instance")}
    late = last_carried >= first_new
    if late.any():
        return spine_rows(PART_LATE, {c: v.filter(pa.array(late)) for c, v in names.items()})
    resume = np.where(carried_start > ever, carried_start, first_new)
    iv, at = interval_bounds(t, starts_key, hole_us)
    recomputed = iv.filter(pa.array(at["start"] >= resume[at["key"]])) if iv.num_rows else iv
    return pa.concat_tables([as_was, spine_rows(PART_INTERVAL, recomputed),
                             spine_rows(PART_CARRY, carry_rows(t, starts_key, iv, at, hole_us)),
                             spine_rows(PART_RESUME, {**names, "ts": timestamps(resume)}), *sightings])


def gold_spine(broker_state: DataFrame, nonexclusive: list[str] | None = None, partitions: int | None = None,
               hole_us: float = math.inf) -> DataFrame:
    """One pass over broker_state: SPINE rows, role intervals, split-brain windows and the carry
    (split them with spine_intervals / spine_windows / spine_carry)."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else list(nonexclusive)
    return by_group(broker_state, SPINE_INPUT, lambda t, starts: spine_from_sorted(t, nonexclusive, starts, hole_us),
                    SPINE.spark_schema(), partitions)


def spine_intervals(spine: DataFrame) -> DataFrame:
    return spine.where(F.col("_part") == PART_INTERVAL).select(*ROLE_INTERVALS.column_names)


def spine_windows(spine: DataFrame) -> DataFrame:
    windows = spine.where(F.col("_part") == PART_WINDOW).withColumnRenamed("instance", "instance_a")
    return windows.select(*SPLIT_BRAIN_WINDOWS.column_names)


def spine_carry(spine: DataFrame) -> DataFrame:
    return spine.where(F.col("_part") == PART_CARRY).select(*SPINE_CARRY.column_names)
