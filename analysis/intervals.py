"""Role intervals: the runs of one instance's state (active, inactive, unanswered) with their bounds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from analysis.frames import (STATE_LABELS, arrow_frame, by_group, contract_table, hole_before, iso_times, key_starts,
                             micros, next_position, pandas_frame, state_codes, texts, timestamps)
from lakehouse.tables import BROKER_STATE, ROLE_INTERVALS

# An uptime-derived JVM start moving forward by more than this means the JVM restarted.
RESTART_TOLERANCE_MS = 1500

# --- silver → gold: role intervals --------------------------------------------------------------------

ROLE_INPUT = ("group_name", "instance", "kind", "ts", "active", "uptime_ms")


def restart_segments(run: np.ndarray, jvm_start: np.ndarray) -> np.ndarray:
    """Where intervals start among a run-sorted sequence of active observations (True = starts one).

    Every run starts one, and so does every observation whose uptime-derived JVM start lies more
    than RESTART_TOLERANCE_MS after its interval's reference, the first known JVM start in that
    interval (a restart). Each round finds the first restart in every interval; the next round
    measures from it. Rounds = most restarts inside one run, normally 0 or 1."""
    m = len(run)
    seg_start = np.ones(m, dtype=bool)
    seg_start[1:] = run[1:] != run[:-1]
    pos = np.arange(m)
    known_at = np.where(np.isnan(jvm_start), m, pos)
    while m:
        starts = np.flatnonzero(seg_start)
        seg = np.cumsum(seg_start) - 1
        ref_at = np.minimum.reduceat(known_at, starts)
        ref = np.where(ref_at < m, jvm_start[np.minimum(ref_at, m - 1)], np.nan)
        with np.errstate(invalid="ignore"):
            restarted = jvm_start - ref[seg] > RESTART_TOLERANCE_MS
        first = np.minimum.reduceat(np.where(restarted, pos, m), starts)
        first = first[first < m]
        if not first.size:
            break
        seg_start[first] = True
    return seg_start


def intervals_from_sorted(t: pa.Table, hole_us: float = math.inf) -> pa.Table:
    """Role intervals of every (group_name, instance) in `t` (ROLE_INPUT columns, rows sorted by
    group_name, instance, ts). Semantics: lakehouse/tables.py ROLE_INTERVALS."""
    return interval_bounds(t, hole_us=hole_us)[0]


def interval_bounds(t: pa.Table, starts_key: np.ndarray | None = None,
                    hole_us: float = math.inf) -> tuple[pa.Table, dict[str, np.ndarray]]:
    """intervals_from_sorted, and what the split-brain windows need of each interval: its key's
    index and row range in `t`, its start and end, the neighbouring observations (its own first
    and last active ones where it has none), and the rows' µs times and key indexes.
    `starts_key`: where keys start, when known (else found by comparing names); string columns
    may be dictionary-encoded. `hole_us`: no observation of an instance for longer than this is
    a hole (frames.hole_before); an interval runs through it but counts it (`unobserved_s`), and
    says when its neighbouring observation lies across one."""
    n = t.num_rows
    starts_key = key_starts(t, ["group_name", "instance"]) if starts_key is None else starts_key
    key = np.cumsum(starts_key) - 1
    key_first = np.flatnonzero(starts_key)
    key_last = np.append(key_first[1:], n) - 1
    ts, _ = micros(t.column("ts"))
    state = state_codes(t.column("active"))
    uptime = pc.cast(t.column("uptime_ms"), pa.float64()).to_numpy(zero_copy_only=False)
    jvm_start = (ts // 1000).astype(np.float64) - uptime  # ms; NaN where the uptime is unknown
    hole = hole_before(ts, starts_key, hole_us)
    unobserved_before = np.concatenate([[0], np.cumsum(np.where(hole, np.diff(ts, prepend=ts[:1]), 0))])  # µs

    active = np.flatnonzero(state == 1)
    if not active.size:
        return ROLE_INTERVALS.schema.empty_table(), {}
    run = np.cumsum(starts_key | (state == 0))[active]  # an inactive observation ends a run
    seg_start = restart_segments(run, jvm_start[active])
    first = np.flatnonzero(seg_start)
    last = np.append(first[1:], active.size) - 1
    p0, p1 = active[first], active[last]  # row positions of each interval's first/last active row
    k = key[p0]
    observations = last - first + 1

    # bounds: the neighbouring rows; how each interval ended decides what the row after it means
    has_prev = p0 > key_first[k]
    prev = np.maximum(p0 - 1, 0)
    nxt = p1 + 1
    has_next = nxt <= key_last[k]
    nxt = np.minimum(nxt, n - 1)
    next_start = np.append(p0[1:], -1)
    by_restart = np.append(run[first[1:]] == run[first[:-1]], False)
    inactive_at = next_position(state == 0)[nxt]
    by_inactive = has_next & ~by_restart & (inactive_at <= key_last[k])
    end_upper_state = np.where(by_restart & (nxt == next_start), "restarted", STATE_LABELS[state[nxt] + 1])

    group, instance = (pc.cast(t.column(c).take(p0), pa.string()) for c in ("group_name", "instance"))
    start_ts = ts[p0]
    columns = {
        "interval_id": pc.binary_join_element_wise(group, instance, pa.array(iso_times(start_ts), pa.string()), "/"),
        "kind": pc.cast(t.column("kind").take(key_first[k]), pa.string()),
        "group_name": group,
        "instance": instance,
        "start_ts": timestamps(start_ts),
        "start_lower": timestamps(ts[prev], ~has_prev),
        "start_lower_state": texts(STATE_LABELS[state[prev] + 1], ~has_prev),
        "end_ts": timestamps(ts[p1]),
        "end_upper": timestamps(ts[nxt], ~has_next),
        "end_upper_state": texts(end_upper_state, ~has_next),
        "first_inactive_after": timestamps(ts[np.minimum(inactive_at, n - 1)], ~by_inactive),
        "is_open": pa.array((ts[p1] == ts[key_last[k]]) & (state[key_last[k]] == 1)),
        "observations": pa.array(observations, pa.int64()),
        "unanswered_inside": pa.array((p1 - p0 + 1) - observations, pa.int64()),
        "unobserved_s": pa.array((unobserved_before[p1 + 1] - unobserved_before[p0 + 1]) / 1e6, pa.float64()),
        "start_unobserved": pa.array(has_prev & hole[p0]),
        "end_unobserved": pa.array(has_next & hole[nxt]),
    }
    bounds = {"key": k, "key_first": key_first, "key_last": key_last, "start": start_ts, "end": ts[p1],
              "lower": np.where(has_prev, ts[prev], start_ts), "upper": np.where(has_next, ts[nxt], ts[p1]),
              "ts": ts, "row_key": key, "hole": hole, "p0": p0, "p1": p1, "state": state, "jvm_start": jvm_start,
              "unobserved_us": unobserved_before[p1 + 1] - unobserved_before[p0 + 1]}
    if "observations_offset" in t.column_names:  # rows carried from an earlier run (analysis/spine_carry.py)
        columns, bounds["unobserved_us"] = carried_counts(t, p0, columns, bounds["unobserved_us"])
    return contract_table(columns, ROLE_INTERVALS), bounds


def carried_counts(t: pa.Table, p0: np.ndarray, columns: dict, unobserved_us: np.ndarray) -> tuple[dict, np.ndarray]:
    """The counts of intervals that start on a carried row, plus what the rows the carry left out
    stand for (that row's offsets); in integers, so they equal a full run's to the last bit."""
    def offset(name: str) -> np.ndarray:
        return pc.cast(t.column(name), pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)[p0]

    unobserved_us = unobserved_us + offset("unobserved_offset_us")
    return {**columns,
            "observations": pa.array(columns["observations"].to_numpy() + offset("observations_offset"), pa.int64()),
            "unanswered_inside": pa.array(columns["unanswered_inside"].to_numpy() + offset("unanswered_offset"), pa.int64()),
            "unobserved_s": pa.array(unobserved_us / 1e6, pa.float64())}, unobserved_us


def instance_intervals(pdf: pd.DataFrame, hole_us: float = math.inf) -> pd.DataFrame:
    """Active intervals of ONE instance from its broker_state rows (any order), as pandas."""
    pdf = pdf.sort_values("ts", kind="stable")
    return pandas_frame(intervals_from_sorted(arrow_frame(pdf, BROKER_STATE, ROLE_INPUT), hole_us))


def role_intervals(broker_state: DataFrame, hole_us: float = math.inf) -> DataFrame:
    """ROLE_INTERVALS of every instance in broker_state."""
    return by_group(broker_state, ROLE_INPUT, lambda t, starts: interval_bounds(t, starts, hole_us)[0],
                    ROLE_INTERVALS.spark_schema())
