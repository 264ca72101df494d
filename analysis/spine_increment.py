"""The spine's incremental run: gold brought up to date with rows appended to broker_state, at a
cost that follows the new rows, not the history.

One Spark pass reads the new rows and every instance's carried rows (state spine_carry,
analysis/spine_carry.py) and gives, per instance with new rows, its intervals from where they
may have changed on, its new carry, and the identity sightings of its new rows
(spine_onepass.increment_from_sorted): the new rows are read once. Everything else is small and
handled in Arrow on the driver, without a Spark job: the stored gold (a few rows per failover, not
per observation), the hand-overs of the groups concerned, their split-brain windows — only a window
whose bounds moved is measured again (spine_onepass.windows_on_rows), on the stored rows inside it
read through delta-rs — and the sightings merged with the stored ones, and ha_group_checks from
them (groups.ha_group_checks, as the full run). Nothing else of broker_state is read."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from pyspark.sql import functions as F

from analysis.failovers import failovers_of
from analysis.frames import by_group, sort_by_key
from analysis.groups import ha_group_checks, identity, merged_sightings, nonexclusive_kinds
from analysis.intervals import ROLE_INPUT
from analysis.spine_carry import OFFSETS
from analysis.spine_onepass import (INCREMENT_INPUT, PART_CARRY, PART_INTERVAL, PART_LATE, PART_RESUME, PART_SIGHTING, SPINE,
                                    increment_from_sorted, window_bounds_of, windows_on_rows)
from analysis.watermark import Watermark
from lakehouse.tables import (BROKER_STATE, FAILOVER_EVENTS, HA_GROUP_CHECKS, HA_IDENTITY_SIGHTINGS, ROLE_INTERVALS, SPINE_CARRY,
                              SPLIT_BRAIN_WINDOWS, TableContract)

KEY = ["group_name", "instance"]
# new rows up to which an incremental run's pass runs on the driver (increment_pass): 2 M rows of
# 500 HA groups are 33 min of 1 s scrapes, held in a few hundred MB
DRIVER_ROWS = 2_000_000
# what window traffic reads of broker_state
WINDOW_INPUT = ["group_name", "instance", "ts", "reachable", "active", "total_enqueued"]
# what decides a split-brain window's row: its pair and bounds (the rows inside cannot change: new rows are later)
WINDOW_BOUNDS = ["group_name", "instance_a", "instance_b", "certain_start", "certain_end", "possible_start", "possible_end"]


def gold_increment(slh, appended, mark: Watermark, say, hole_us: float = math.inf) -> bool:
    """Bring gold up to date with rows appended to broker_state; False when that would not be exact
    (a new row not later than a stored one of its instance: the caller recomputes in full)."""
    spine = increment_pass(slh, appended.new, hole_us)
    part = spine.column("_part")
    if pc.any(pc.equal(part, PART_LATE)).as_py():
        say("silver → gold: rows older than stored ones, recomputing")
        return False
    resume = spine.filter(pc.equal(part, PART_RESUME)).select([*KEY, "ts"]).rename_columns([*KEY, "_resume"])
    if not resume.num_rows:
        say("silver → gold: no new broker_state rows")
        return True
    say(f"silver → gold (incremental: broker_state up to version {mark.input_version}, {resume.num_rows} instances with new rows)")
    lh = slh.lakehouse
    recomputed = conform(spine.filter(pc.equal(part, PART_INTERVAL)), ROLE_INTERVALS)
    intervals = pa.concat_tables([kept_intervals(lh.read("role_intervals"), resume), recomputed])
    groups = pc.unique(resume.column("group_name"))
    touched = intervals.filter(pc.is_in(intervals.column("group_name"), groups))

    def untouched(table: pa.Table) -> pa.Table:
        return table.filter(pc.invert(pc.is_in(table.column("group_name"), groups)))

    failovers = pa.concat_tables([untouched(lh.read("failover_events")), conform(failovers_of(touched), FAILOVER_EVENTS)])
    windows = split_brain_windows(lh, lh.read("split_brain_windows"), touched, groups, mark.input_version, hole_us)
    sightings = merged_sightings(lh.read("ha_identity_sightings"), spine.filter(pc.equal(part, PART_SIGHTING)))

    info = mark.commit_info()
    for name, table, c in (("role_intervals", intervals, ROLE_INTERVALS), ("failover_events", failovers, FAILOVER_EVENTS),
                           ("split_brain_windows", windows, SPLIT_BRAIN_WINDOWS),
                           ("spine_carry", spine.filter(pc.equal(part, PART_CARRY)), SPINE_CARRY),
                           ("ha_identity_sightings", sightings, HA_IDENTITY_SIGHTINGS),
                           ("ha_group_checks", ha_group_checks(sightings), HA_GROUP_CHECKS)):
        slh.write_arrow(name, conform(table, c), commit_info=info)
    return True


def increment_pass(slh, new, hole_us: float) -> pa.Table:
    """increment_from_sorted over the new rows (`new`, a DataFrame) and every instance's carried
    ones, as SPINE rows: on the driver when the new rows are at most DRIVER_ROWS (what a run every
    few seconds or minutes brings: one Spark job, which reads them), else in one Spark pass by group
    (frames.by_group: a shuffle and a Python worker per partition, whatever the size)."""
    new = new.select(*ROLE_INPUT, *(F.lit(None).cast("long").alias(c) for c in OFFSETS), identity().alias("identity"),
                     F.lit(True).alias("_new"))
    few = new.limit(DRIVER_ROWS + 1).toArrow()
    if few.num_rows > DRIVER_ROWS:
        rows = slh.read("spine_carry").withColumns({"identity": F.lit(None).cast("string"), "_new": F.lit(False)}).unionByName(new)
        return by_group(rows, INCREMENT_INPUT, lambda t, starts: increment_from_sorted(t, starts, hole_us),
                        SPINE.spark_schema()).toArrow()
    carried = conform(slh.lakehouse.read("spine_carry"), SPINE_CARRY)
    carried = carried.append_column("identity", pa.nulls(carried.num_rows, pa.string())).append_column(
        "_new", pa.array(np.zeros(carried.num_rows, dtype=bool)))
    schema = pa.schema([carried.schema.field(name).with_nullable(True) for name in INCREMENT_INPUT])
    t, starts = sort_by_key(pa.concat_tables([carried.select(list(INCREMENT_INPUT)).cast(schema),
                                              few.select(list(INCREMENT_INPUT)).cast(schema)]))
    return increment_from_sorted(t, starts, hole_us)


def conform(table: pa.Table, c: TableContract) -> pa.Table:
    """`table`'s columns of contract `c`, with its types."""
    return table.select(c.column_names).cast(c.schema)


def kept_intervals(stored: pa.Table, resume: pa.Table) -> pa.Table:
    """The stored intervals an incremental run keeps: all of an instance without new rows, those
    starting before its resume point (µs, `_resume`) otherwise."""
    joined = stored.join(resume, KEY, join_type="left outer")
    start = pc.cast(joined.column("start_ts"), pa.int64())
    keep = pc.or_kleene(pc.is_null(joined.column("_resume")), pc.less(start, pc.cast(joined.column("_resume"), pa.int64())))
    return conform(joined.filter(keep), ROLE_INTERVALS)


def split_brain_windows(lh, stored: pa.Table, touched: pa.Table, groups: pa.Array, version: int,
                        hole_us: float) -> pa.Table:
    """split_brain_windows after an increment: the stored ones of other groups; of the groups
    concerned, a stored window whose pair and bounds are found again as it is, and the others
    measured on broker_state's rows inside them at `version` (read by time range: delta-rs skips
    the files and row groups outside by their statistics)."""
    bounds = window_bounds_of(touched, nonexclusive_kinds())
    mine = stored.filter(pc.is_in(stored.column("group_name"), groups))
    unchanged = as_keys(mine).join(as_keys(bounds), WINDOW_BOUNDS, join_type="left semi")
    fresh = as_keys(bounds).join(as_keys(mine).select(WINDOW_BOUNDS), WINDOW_BOUNDS, join_type="left anti")
    parts = [stored.filter(pc.invert(pc.is_in(stored.column("group_name"), groups))), conform(unchanged, SPLIT_BRAIN_WINDOWS)]
    if fresh.num_rows:
        fresh = with_timestamps(fresh)
        rows = rows_inside(lh, version, groups, fresh.column("possible_start"), fresh.column("possible_end"))
        parts.append(windows_on_rows(fresh, rows, hole_us))
    return pa.concat_tables([conform(p, SPLIT_BRAIN_WINDOWS) for p in parts])


def rows_inside(lh, version: int, groups: pa.Array, starts, ends) -> pa.Table:
    """broker_state rows (what window traffic reads) of `groups` at `version` inside one of the
    spans [starts, ends]."""
    lo, hi = pc.min(starts).as_py(), pc.max(ends).as_py()
    table = DeltaTable(lh.uri("broker_state"), version=version, storage_options=lh.storage_options)
    rows = pa.table(table.scan(columns=WINDOW_INPUT, predicate=f"ts >= '{lo:%Y-%m-%dT%H:%M:%S.%fZ}' AND ts <= '{hi:%Y-%m-%dT%H:%M:%S.%fZ}'"))
    rows = rows.cast(pa.schema([BROKER_STATE.schema.field(name) for name in WINDOW_INPUT]))  # delta-rs: string views
    rows = rows.filter(pc.is_in(rows.column("group_name"), groups))
    ts = pc.cast(rows.column("ts"), pa.int64()).to_numpy(zero_copy_only=False)
    inside = np.zeros(len(ts), dtype=bool)
    for a, b in zip(pc.cast(starts, pa.int64()).to_pylist(), pc.cast(ends, pa.int64()).to_pylist()):
        inside |= (ts >= a) & (ts <= b)
    return rows.filter(pa.array(inside))


def as_keys(table: pa.Table) -> pa.Table:
    """Timestamps as µs integers, so tables join on them exactly."""
    return pa.table({n: pc.cast(table.column(n), pa.int64()) if pa.types.is_timestamp(table.schema.field(n).type)
                     else table.column(n) for n in table.column_names})


def with_timestamps(table: pa.Table) -> pa.Table:
    return pa.table({n: pc.cast(table.column(n), pa.timestamp("us", tz="UTC")) if n.endswith(("_start", "_end"))
                     else table.column(n) for n in table.column_names})
