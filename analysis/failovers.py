"""Failover events: hand-overs of the active role inside an HA group, from its role intervals."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis.frames import (arrow_frame, contract_table, key_starts, last_position, micros, pandas_frame, per_key,
                             seconds, timestamps)
from analysis.groups import nonexclusive_kinds
from lakehouse.tables import FAILOVER_EVENTS, ROLE_INTERVALS

# --- gold: failovers -----------------------------------------------------------------------------------


def failovers_from_sorted(iv: pa.Table, keys: Sequence[str] = ()) -> pa.Table:
    """Hand-overs of the active role inside every unit (`keys`; none: one unit) of role intervals
    sorted by keys, start_ts, instance. Semantics: lakehouse/tables.py FAILOVER_EVENTS.

    Each interval after a unit's first is compared with the earlier interval that ended last (the
    first such on ties): still active together past its end = split brain, no event; same
    instance = restart; back to where the previous failover came from = failback."""
    n = iv.num_rows
    unit_start = key_starts(iv, keys)
    unit = np.cumsum(unit_start) - 1
    unit_first = np.flatnonzero(unit_start)[unit] if n else np.zeros(0, dtype=np.int64)
    start, _ = micros(iv.column("start_ts"))
    end, _ = micros(iv.column("end_ts"))
    inst = np.unique(iv.column("instance").to_numpy(zero_copy_only=False), return_inverse=True)[1] if n else np.zeros(0, np.int64)
    is_open = iv.column("is_open").fill_null(False).to_numpy(zero_copy_only=False)

    longest_so_far = pd.Series(end).groupby(unit).cummax().to_numpy()
    new_longest = unit_start.copy()
    new_longest[1:] |= end[1:] > longest_so_far[:-1]
    ended_last = last_position(new_longest)  # per row: the interval up to it that ended last

    cur = np.flatnonzero(~unit_start)
    prev = ended_last[cur - 1]
    overlap = end[prev] >= start[cur]
    both_stay = overlap & (is_open[prev] | (end[prev] >= end[cur]))
    cur, prev, overlap = cur[~both_stay], prev[~both_stay], overlap[~both_stay]

    restart = inst[prev] == inst[cur]
    move_from = np.full(n, -1)
    move_from[cur[~restart]] = prev[~restart]  # by the row of the interval a move went to
    prior = last_position(move_from >= 0)[cur - 1]  # the previous move (-1 or before the unit: none)
    prior = np.where(prior >= unit_first[cur], prior, -1)
    failback = ~restart & (prior >= 0) & (inst[move_from[prior]] == inst[cur]) & (inst[prior] == inst[prev])
    event_type = np.where(restart, "restart", np.where(failback, "failback", "failover"))

    def ts_col(name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        us, null = micros(iv.column(name))
        return us[rows], null[rows]

    def flag(name: str, rows: np.ndarray) -> np.ndarray:
        return iv.column(name).fill_null(False).to_numpy(zero_copy_only=False)[rows]

    def state_is(name: str, rows: np.ndarray, value: str) -> np.ndarray:
        return pc.equal(iv.column(name), value).fill_null(False).to_numpy(zero_copy_only=False)[rows]

    old_unanswered, no_old_unanswered = ts_col("end_upper", prev)
    no_old_unanswered |= ~state_is("end_upper_state", prev, "unanswered")
    new_inactive, no_new_inactive = ts_col("start_lower", cur)
    no_new_inactive |= ~state_is("start_lower_state", cur, "inactive")
    old_inactive, no_old_inactive = ts_col("first_inactive_after", prev)
    outage = ~overlap
    no_lower = ~outage | no_new_inactive | no_old_inactive | (old_inactive > new_inactive)

    group = iv.column("group_name").take(cur)
    columns = {
        "event_id": pc.binary_join_element_wise(group, iv.column("interval_id").take(cur), "/"),
        "kind": iv.column("kind").take(cur),
        "group_name": group,
        "event_type": pa.array(event_type, pa.string()),
        "from_instance": iv.column("instance").take(prev),
        "to_instance": iv.column("instance").take(cur),
        "old_last_active": timestamps(end[prev]),
        "old_first_unanswered": timestamps(old_unanswered, no_old_unanswered),
        "old_first_inactive": timestamps(old_inactive, no_old_inactive),
        "new_last_inactive": timestamps(new_inactive, no_new_inactive),
        "new_first_active": timestamps(start[cur]),
        "outage_start": timestamps(end[prev], ~outage),
        "outage_end": timestamps(start[cur], ~outage),
        "outage_upper_s": pa.array(seconds(start[cur] - end[prev]), pa.float64(), mask=~outage),
        "outage_lower_s": pa.array(seconds(new_inactive - old_inactive), pa.float64(), mask=no_lower),
        "detection_s": pa.array(seconds(start[cur] - old_unanswered), pa.float64(), mask=no_old_unanswered),
        "overlap": pa.array(overlap, pa.bool_()),
        "unobserved": pa.array(flag("end_unobserved", prev) | flag("start_unobserved", cur), pa.bool_()),
    }
    return contract_table(columns, FAILOVER_EVENTS)


def group_failovers(iv: pd.DataFrame) -> pd.DataFrame:
    """Hand-overs of the active role inside ONE group, from its role intervals (pandas)."""
    iv = iv.sort_values(["start_ts", "instance"], kind="stable")
    return pandas_frame(failovers_from_sorted(arrow_frame(iv, ROLE_INTERVALS)))


def failover_events(intervals: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Hand-overs per group; for kinds without exclusive roles, per member (outage → `restart`)."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else nonexclusive
    unit = F.when(F.col("kind").isin(nonexclusive), F.col("instance")).otherwise(F.lit(""))
    keys = ["group_name", "_unit"]
    return per_key(intervals.withColumn("_unit", unit), keys, ["start_ts", "instance"],
                   lambda t: failovers_from_sorted(t, keys), FAILOVER_EVENTS)


def failovers_of(intervals: pa.Table, nonexclusive: list[str] | None = None) -> pa.Table:
    """failover_events of a few role intervals held in Arrow (an incremental run's groups): the same
    units and order as failover_events, in one call."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else nonexclusive
    unit = pc.if_else(pc.is_in(intervals.column("kind"), pa.array(nonexclusive, pa.string())), intervals.column("instance"), "")
    keys = ["group_name", "_unit"]
    ordered = intervals.append_column("_unit", unit).sort_by([(k, "ascending") for k in (*keys, "start_ts", "instance")])
    return failovers_from_sorted(ordered, keys)
