"""The spine job: bronze_jolokia → silver broker_state/destination_stats → gold role_intervals,
failover_events, split_brain_windows.

Each step is a small pure function: DataFrame → DataFrame, or, for the sequence logic (intervals
of an instance, hand-overs in a group), Arrow table → Arrow table over whole columns with NumPy,
run by Spark in `mapInArrow` on partitions of whole groups sorted by group and time. A full run
reads broker_state once: one shuffle by group gives the intervals and the split-brain windows
with their traffic (gold_spine). `run_spine` only reads, calls
and writes: incrementally from each job's watermark (new input rows and the stored rows they
continue), or in full. Both give the same rows; reruns over the same data change nothing.
"""

from __future__ import annotations

import json
import math
import operator
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from functools import reduce
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from collectors.base import Observation, broker_clock_skew_s, collector_health_row
from collectors.packs import PACKS
from lakehouse.jobs.watermark import Watermark, fingerprint, read_watermark
from lakehouse.tables import (BROKER_STATE, FAILOVER_EVENTS, ROLE_INTERVALS, SILVER_FROM_JOLOKIA, SPLIT_BRAIN_WINDOWS, TS,
                              TableContract, contract)
from lakehouse.tables import Column as ContractColumn

# An uptime-derived JVM start moving forward by more than this means the JVM restarted.
RESTART_TOLERANCE_MS = 1500

# --- bronze → silver -------------------------------------------------------------------------------


def normalize_batch(batch: pa.RecordBatch, table: str, targets: dict[str, tuple[str, str | None]]) -> pa.RecordBatch:
    """Parse a batch of bronze_jolokia rows into rows of one silver `table`.

    `targets` maps target name → (kind, group) from the current config; it wins over what was
    stored at collection time, so a group can be declared after the fact.
    """
    c = contract(table)
    out: list[dict] = []
    cols = batch.to_pydict()
    skews, shifts = cols.get("clock_skew_s"), cols.get("shift_us")  # see clock_skews (absent: no shift)
    for i in range(batch.num_rows):
        target = cols["target"][i]
        kind, group = targets.get(target, (cols["kind"][i], cols["group_name"][i]))
        pack = PACKS.get(kind)
        if table != "collector_health" and (pack is None or table not in pack.tables):
            continue
        resp = cols["response_json"][i]
        shift = shifts[i] if shifts is not None and shifts[i] else 0
        obs = Observation(
            ts=cols["ts"][i] + timedelta(microseconds=shift) if shift else cols["ts"][i],
            target=target,
            kind=kind,
            group=group,
            requests=json.loads(cols["request_json"][i]),
            response=None if resp is None else json.loads(resp),
            error=cols["error"][i],
            elapsed_ms=cols["elapsed_ms"][i],
        )
        if table == "collector_health":
            row = collector_health_row(obs, cols["obs_key"][i], cols["error_kind"][i])
            row["collector_ts"] = cols["ts"][i]
            row["clock_skew_s"] = skews[i] if skews is not None else None
            out.append(row)
        else:
            out.extend(pack.normalize(obs, cols["obs_key"][i]).get(table))
    return pa.RecordBatch.from_pylist(out, schema=c.schema)


def to_silver(bronze: DataFrame, table: str, targets: dict[str, tuple[str, str | None]],
              skews: DataFrame | None = None) -> DataFrame:
    """`skews`: per obs_key the target's clock skew estimate and the shift to apply (clock_skews)."""
    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield normalize_batch(b, table, targets)

    if skews is not None:
        bronze = bronze.join(skews, "obs_key", "left")
    return bronze.mapInArrow(parse, contract(table).spark_schema())


# --- clock skew between collectors ------------------------------------------------------------------
#
# Observations carry the collector's clock; the Jolokia agent stamps every item with the broker
# JVM's clock (`timestamp`, whole epoch seconds). Per target, each answered scrape gives one sample
# of broker clock − collector clock: median item timestamp + 0.5 − observation ts (+0.5: the agent
# truncates to whole seconds, so the stamp is on average half a second behind). The estimate for a
# row is the median of the last SKEW_WINDOW samples of its target at or before it (causal: rows
# appended later never change it, so incremental runs equal full ones); rows before the target's
# SKEW_MIN_SAMPLES-th sample take the estimate at that sample, rows without an answer the last
# estimate before them. Silver rows of the target are placed on the brokers' clock, shifted by the
# estimate (whole ms), when |estimate| >= CLOCK_SKEW_THRESHOLD_S; below it (NTP noise, truncation,
# the scrape phase) nothing moves. collector_health keeps the estimate and the collector's time.
# Caveat: one target cannot tell a wrong collector clock from a wrong broker clock; both are
# aligned to the broker's.

CLOCK_SKEW_THRESHOLD_S = 1.0
SKEW_WINDOW = 60  # answered scrapes the running median covers
SKEW_MIN_SAMPLES = 5  # fewer: no estimate, no shift
STAMP_BIAS_S = 0.5  # the agent truncates to whole seconds: on average its stamp is half a second behind
SKEW_SAMPLES_SCHEMA = "obs_key string, target string, us long, sample double"
SKEW_SCHEMA = "obs_key string, clock_skew_s double, shift_us long"


def skew_sample_batch(batch: pa.RecordBatch, bias: float | None = None) -> pa.RecordBatch:
    """bronze rows → (obs_key, target, µs, sample): one skew sample per answered scrape (else null)."""
    bias = STAMP_BIAS_S if bias is None else bias
    us, _ = micros(batch.column("ts"))
    cols = batch.select(["obs_key", "target", "response_json", "error"]).to_pydict()
    samples = []
    for i, resp in enumerate(cols["response_json"]):
        sample = None
        if resp is not None and cols["error"][i] is None:
            try:
                items = json.loads(resp)
            except ValueError:
                items = None
            obs = Observation(datetime.fromtimestamp(int(us[i]) / 1e6, tz=timezone.utc), cols["target"][i], "", None, [], items, None)
            skew = broker_clock_skew_s(obs) if obs.answered else None
            sample = None if skew is None else skew + bias
        samples.append(sample)
    return pa.RecordBatch.from_arrays(
        [pa.array(cols["obs_key"], pa.string()), pa.array(cols["target"], pa.string()), pa.array(us, pa.int64()),
         pa.array(samples, pa.float64())], names=["obs_key", "target", "us", "sample"])


def skew_samples(bronze: DataFrame) -> DataFrame:
    bias = STAMP_BIAS_S  # read here: the Python workers import the module afresh

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield skew_sample_batch(b, bias)

    return bronze.select("obs_key", "target", "ts", "response_json", "error").mapInArrow(run, SKEW_SAMPLES_SCHEMA)


def estimate_skews(pdf: pd.DataFrame, threshold: float | None = None, window: int | None = None,
                   min_samples: int | None = None) -> pd.DataFrame:
    """One target's rows (obs_key, us, sample) → (obs_key, clock_skew_s, shift_us); see above."""
    threshold = CLOCK_SKEW_THRESHOLD_S if threshold is None else threshold
    window = SKEW_WINDOW if window is None else window
    min_samples = SKEW_MIN_SAMPLES if min_samples is None else min_samples
    pdf = pdf.sort_values(["us", "obs_key"], kind="stable").reset_index(drop=True)
    sample = pdf["sample"].astype("float64")
    known = sample.notna()
    est = pd.Series(np.nan, index=pdf.index)
    est[known] = sample[known].rolling(window, min_periods=min_samples).median()
    est = est.ffill().bfill()
    shift = np.where(est.abs().to_numpy() >= threshold, np.round(est.fillna(0).to_numpy() * 1000) * 1000, 0).astype(np.int64)
    return pd.DataFrame({"obs_key": pdf["obs_key"], "clock_skew_s": est.astype(object).where(est.notna(), None),
                         "shift_us": shift})


def skews_of(samples: DataFrame, threshold: float = CLOCK_SKEW_THRESHOLD_S) -> DataFrame:
    params = (threshold, SKEW_WINDOW, SKEW_MIN_SAMPLES)  # read here: the workers import the module afresh

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        return estimate_skews(pdf, *params)

    return samples.groupBy("target").applyInPandas(run, SKEW_SCHEMA)


def clock_skews(bronze: DataFrame, threshold: float = CLOCK_SKEW_THRESHOLD_S) -> DataFrame:
    """Per bronze row: its target's clock skew estimate and the shift its silver rows get (none
    below `threshold`; math.inf: estimate only)."""
    return skews_of(skew_samples(bronze), threshold)


def skews_increment(old: DataFrame, new: DataFrame, threshold: float = CLOCK_SKEW_THRESHOLD_S) -> DataFrame | None:
    """The skews of the `new` bronze rows, equal to what a full run gives them: the running median
    needs the last SKEW_WINDOW stored samples of their targets (a recent tail of stored rows, all
    stored rows of the targets it holds too few of). None when that would not be exact: new rows
    not later than stored ones of their target, or stored rows that wait for an estimate the new
    rows would give them."""
    fresh = skew_samples(new).cache()
    firsts = {r.target: r for r in fresh.groupBy("target").agg(
        F.min("us").alias("first"), F.count("sample").alias("n")).collect()}
    if not firsts:
        fresh.unpersist()
        return skews_of(fresh, threshold)
    names = F.broadcast(old.sparkSession.createDataFrame([(t,) for t in sorted(firsts)], "target string"))
    since = min(r.first for r in firsts.values()) - RESUME_TAIL_US
    tail = skew_samples(old.join(names, "target", "left_semi").where(F.col("ts") >= F.timestamp_micros(F.lit(since)))).cache()
    found = {r.target: r for r in tail.groupBy("target").agg(F.max("us").alias("last"), F.count("sample").alias("n")).collect()}
    if any(t in found and found[t].last >= r.first for t, r in firsts.items()):
        fresh.unpersist(); tail.unpersist()
        return None
    short = sorted(t for t in firsts if found.get(t) is None or found[t].n < SKEW_WINDOW)
    context = tail
    if short:
        few = F.broadcast(old.sparkSession.createDataFrame([(t,) for t in short], "target string"))
        every = skew_samples(old.join(few, "target", "left_semi"))
        stored = {r.target: r for r in every.groupBy("target").agg(F.count("*").alias("rows"), F.count("sample").alias("n")).collect()}
        if any(t in stored and stored[t].n < SKEW_MIN_SAMPLES and firsts[t].n > 0 for t in short):
            fresh.unpersist(); tail.unpersist()
            return None  # its stored rows have no estimate yet; the new samples would give them one
        context = tail.join(few, "target", "left_anti").unionByName(every)
    keys = fresh.select("obs_key")
    return skews_of(context.unionByName(fresh), threshold).join(keys, "obs_key", "left_semi")


def fill_derived_groups(state: DataFrame, configured: set[str], context: DataFrame | None = None) -> DataFrame:
    """Give a row whose group could not be derived the group its instance derived around it.

    Where the group comes from data (an Artemis NodeID, an ActiveMQ master's store), a scrape that
    got no answer, or a waiting ActiveMQ slave, cannot say which group it belongs to and falls
    back to the instance name; without this its instance's intervals would miss those rows.
    The nearest derived group before wins, else the nearest after. Configured groups are kept.
    `context`: earlier stored rows (instance, ts, group_name) that may be the nearest before."""
    if context is not None:
        marked = context.withColumn("_context", F.lit(True))
        filled = fill_derived_groups(state.withColumn("_context", F.lit(False)).unionByName(marked, allowMissingColumns=True), configured)
        return filled.where(~F.col("_context")).drop("_context")
    by_time = Window.partitionBy("instance").orderBy("ts")
    derived_group = F.when(F.col("group_name") != F.col("instance"), F.col("group_name"))
    filled = F.coalesce(
        F.last(derived_group, ignorenulls=True).over(by_time.rowsBetween(Window.unboundedPreceding, -1)),
        F.first(derived_group, ignorenulls=True).over(by_time.rowsBetween(1, Window.unboundedFollowing)),
        F.col("group_name"),
    )
    fallback = (F.col("group_name") == F.col("instance")) & ~F.col("instance").isin(sorted(configured))
    return state.withColumn("group_name", F.when(fallback, filled).otherwise(F.col("group_name")))


def ha_group_checks(state: DataFrame) -> DataFrame:
    """Cross-check HA groups against the identity the brokers report (ActiveMQ store, Artemis
    NodeID) on their active rows: members of one group serving different identities (a
    misconfigured pair: two masters, two stores), or one identity split over several groups."""
    ident = (
        # (not coalesce(...) IS NOT NULL: this form reaches Parquet, which skips all-null row groups)
        state.where(F.col("active") & (F.col("store").isNotNull() | F.col("node_id").isNotNull()))
        .select("kind", "group_name", "instance", "ts", F.coalesce(F.col("store"), F.col("node_id")).alias("identity"))
    )

    def finding(grouped, key: str, check: str, message, advice: str) -> DataFrame:
        """One row per group (or identity) where more than one `key` value was seen; `message`
        may use the aggregated `_groups`, `_instances`, `_identities` columns."""
        return grouped.agg(
            F.first("kind").alias("kind"),
            F.array_sort(F.collect_set("instance")).alias("_instances"),
            F.array_sort(F.collect_set("identity")).alias("_identities"),
            F.array_sort(F.collect_set("group_name")).alias("_groups"),
            F.min("ts").alias("first_seen"),
            F.max("ts").alias("last_seen"),
        ).where(F.size(f"_{key}") > 1).select(
            F.substring(F.sha2(F.concat_ws("/", F.lit(check), F.concat_ws(",", "_groups"), F.concat_ws(",", "_identities")), 256), 1, 32).alias("check_id"),
            "kind",
            F.lit(check).alias("check"),
            F.concat_ws(", ", "_groups").alias("group_name"),
            F.concat_ws(", ", "_instances").alias("instances"),
            F.concat_ws(", ", "_identities").alias("identities"),
            "first_seen",
            "last_seen",
            message.alias("message"),
            F.lit(advice).alias("advice"),
        )

    split_group = finding(
        ident.groupBy("group_name"),
        "identities",
        "group-members-disagree",
        F.format_string("members of HA group %s serve different stores/NodeIDs: %s", F.concat_ws(", ", "_groups"), F.concat_ws(" vs ", "_identities")),
        "the members do not share one store/NodeID, so both can be master at once: fix the "
        "store/lock configuration, or declare them as separate groups",
    )
    split_identity = finding(
        ident.groupBy("identity"),
        "groups",
        "identity-in-several-groups",
        F.format_string("one store/NodeID (%s) is served by instances of different groups: %s", F.concat_ws(", ", "_identities"), F.concat_ws(", ", "_groups")),
        "declare the instances that share a store/NodeID as one `group` in the config",
    )
    return split_group.unionByName(split_identity)


def nonexclusive_kinds() -> list[str]:
    """Kinds whose group members are all active by design (no split brain, per-member outages)."""
    return sorted(k for k, p in PACKS.items() if not p.exclusive_roles)


def typed_frame(rows: list[dict], c) -> pd.DataFrame:
    """A pandas frame with the contract's columns; timestamp columns as naive-UTC datetime64 so
    Arrow hands them to Spark unambiguously (the session time zone is UTC); string columns as
    objects with None for null (pandas makes a column nobody set float NaN, which Arrow cannot
    turn into a string)."""
    df = pd.DataFrame(rows, columns=c.column_names)
    for col in c.columns:
        if pa.types.is_timestamp(col.type):
            df[col.name] = pd.to_datetime(df[col.name], utc=True).dt.tz_localize(None)
        elif pa.types.is_string(col.type):
            df[col.name] = df[col.name].astype(object).where(df[col.name].notna(), None)
    return df


# --- vectorized sequence helpers ----------------------------------------------------------------------
#
# The gold steps work on whole columns of rows sorted by key and time (NumPy over Arrow), never row
# by row in Python: run boundaries are cumulative sums, bounds are shifted indexes, "the next/last
# row with X" is a running minimum/maximum of positions. Spark only partitions by group and sorts
# within partitions; `per_key` streams whole keys of a partition into one vectorized call.

STATE_LABELS = np.array(["unanswered", "inactive", "active"], dtype=object)  # index: state code + 1


def key_starts(t: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """True where a row starts a new key (rows sorted by `keys`; no keys: one key)."""
    starts = np.zeros(t.num_rows, dtype=bool)
    if t.num_rows:
        starts[0] = True
        for k in keys:
            col = t.column(k)
            starts[1:] |= pc.not_equal(col[1:], col[:-1]).fill_null(True).to_numpy(zero_copy_only=False)
    return starts


def micros(col) -> tuple[np.ndarray, np.ndarray]:
    """A timestamp column (any unit, naive = UTC) as int64 µs since the epoch, and its null mask."""
    us = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC"), safe=False), pa.int64())
    return us.fill_null(0).to_numpy(zero_copy_only=False), us.is_null().to_numpy(zero_copy_only=False)


def timestamps(us: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    return pa.array(us, pa.int64(), mask=null).cast(TS)


def texts(values: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    return pa.array(np.where(null, None, values) if null is not None else values, pa.string())


def seconds(us: np.ndarray) -> np.ndarray:
    """µs differences as float seconds, rounded as pandas' Timedelta.total_seconds() does (whole
    seconds + µs / 1e6), so reruns of older gold compare equal to the last bit."""
    whole, micro = np.divmod(us, 1_000_000)
    return whole + micro / 1e6


def state_codes(active) -> np.ndarray:
    """1 = observed active, 0 = observed not active, -1 = no usable answer."""
    known = ~active.is_null().to_numpy(zero_copy_only=False)
    return np.where(known, active.fill_null(False).to_numpy(zero_copy_only=False), -1).astype(np.int8)


def iso_times(us: np.ndarray) -> np.ndarray:
    """pandas' Timestamp.isoformat() of naive-UTC µs times: seconds, `.ffffff` only when not whole."""
    whole = np.datetime_as_string(us.astype("datetime64[us]").astype("datetime64[s]"), unit="s")
    frac = us % 1_000_000
    return np.where(frac == 0, whole, np.char.add(np.char.add(whole, "."), np.char.zfill(frac.astype(str), 6)))


def next_position(flags: np.ndarray) -> np.ndarray:
    """For every row, the position of the first row at or after it where `flags` holds (len: none)."""
    pos = np.where(flags, np.arange(len(flags)), len(flags))
    return np.minimum.accumulate(pos[::-1])[::-1]


def last_position(flags: np.ndarray) -> np.ndarray:
    """For every row, the position of the last row at or before it where `flags` holds (-1: none)."""
    return np.maximum.accumulate(np.where(flags, np.arange(len(flags)), -1))


def complete_keys(batches: Iterator[pa.RecordBatch], keys: Sequence[str]) -> Iterator[pa.Table]:
    """Regroup the sorted batches of one partition so that no key straddles two tables: the rows of
    a batch's last key wait for the next batch."""
    carry: pa.Table | None = None
    for batch in batches:
        t = pa.Table.from_batches([batch])
        if t.num_rows == 0:
            continue
        if carry is not None:
            t = pa.concat_tables([carry, t])
            # only the new rows (and the seam) can start keys: O(batch), not O(carry)
            seam = carry.num_rows - 1
            starts = seam + np.flatnonzero(key_starts(t.slice(seam), keys)[1:]) + 1
        else:
            starts = np.flatnonzero(key_starts(t, keys)[1:]) + 1
        if starts.size:
            cut = int(starts[-1])
            yield t.slice(0, cut)
            carry = t.slice(cut)
        else:
            carry = t
    if carry is not None and carry.num_rows:
        yield carry


def per_key(df: DataFrame, keys: Sequence[str], order: Sequence[str], fn, c) -> DataFrame:
    """Apply the vectorized `fn` (Arrow table of whole keys, sorted by keys + order → rows of
    contract `c`) to every key of `df`: partitioned by its first key, sorted within partitions."""
    keys, order = list(keys), list(order)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for t in complete_keys(batches, keys):
            yield from fn(t).to_batches()

    return df.repartition(keys[0]).sortWithinPartitions(*keys, *order).mapInArrow(run, c.spark_schema())


def contract_table(columns: dict, c) -> pa.Table:
    return pa.table([pc.cast(columns[f.name], f.type) for f in c.schema], schema=c.schema)


def arrow_frame(pdf: pd.DataFrame, c, columns: Sequence[str] | None = None) -> pa.Table:
    """pandas rows as Arrow with contract `c`'s types (naive timestamps are UTC)."""
    t = pa.Table.from_pandas(pdf[list(columns or c.column_names)], preserve_index=False)
    return pa.table([pc.cast(t.column(f), c.schema.field(f).type, safe=False) for f in t.column_names], names=t.column_names)


def pandas_frame(t: pa.Table) -> pd.DataFrame:
    """Arrow rows as pandas with naive-UTC timestamps (as Spark's applyInPandas hands them)."""
    df = t.to_pandas()
    for f in t.schema:
        if pa.types.is_timestamp(f.type):
            df[f.name] = pd.to_datetime(df[f.name], utc=True).dt.tz_localize(None)
    return df


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


def intervals_from_sorted(t: pa.Table) -> pa.Table:
    """Role intervals of every (group_name, instance) in `t` (ROLE_INPUT columns, rows sorted by
    group_name, instance, ts). Semantics: lakehouse/tables.py ROLE_INTERVALS."""
    return interval_bounds(t)[0]


def interval_bounds(t: pa.Table, starts_key: np.ndarray | None = None) -> tuple[pa.Table, dict[str, np.ndarray]]:
    """intervals_from_sorted, and what the split-brain windows need of each interval: its key's
    index and row range in `t`, its start and end, the neighbouring observations (its own first
    and last active ones where it has none), and the rows' µs times and key indexes.
    `starts_key`: where keys start, when known (else found by comparing names); string columns
    may be dictionary-encoded."""
    n = t.num_rows
    starts_key = key_starts(t, ["group_name", "instance"]) if starts_key is None else starts_key
    key = np.cumsum(starts_key) - 1
    key_first = np.flatnonzero(starts_key)
    key_last = np.append(key_first[1:], n) - 1
    ts, _ = micros(t.column("ts"))
    state = state_codes(t.column("active"))
    uptime = pc.cast(t.column("uptime_ms"), pa.float64()).to_numpy(zero_copy_only=False)
    jvm_start = (ts // 1000).astype(np.float64) - uptime  # ms; NaN where the uptime is unknown

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
    }
    bounds = {"key": k, "key_first": key_first, "key_last": key_last, "start": start_ts, "end": ts[p1],
              "lower": np.where(has_prev, ts[prev], start_ts), "upper": np.where(has_next, ts[nxt], ts[p1]),
              "ts": ts, "row_key": key}
    return contract_table(columns, ROLE_INTERVALS), bounds


def instance_intervals(pdf: pd.DataFrame) -> pd.DataFrame:
    """Active intervals of ONE instance from its broker_state rows (any order), as pandas."""
    pdf = pdf.sort_values("ts", kind="stable")
    return pandas_frame(intervals_from_sorted(arrow_frame(pdf, BROKER_STATE, ROLE_INPUT)))


def role_intervals(broker_state: DataFrame) -> DataFrame:
    """ROLE_INTERVALS of every instance in broker_state."""
    return by_group(broker_state, ROLE_INPUT, lambda t, starts: interval_bounds(t, starts)[0], ROLE_INTERVALS.spark_schema())


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


# --- gold: split brain ------------------------------------------------------------------------------


def overlapping_pairs(intervals: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Pairs of active intervals of two instances of one group that overlap, with their windows."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else nonexclusive
    intervals = intervals.where(~F.col("kind").isin(nonexclusive))
    a, b = intervals.alias("a"), intervals.alias("b")
    pairs = a.join(
        b,
        (F.col("a.group_name") == F.col("b.group_name"))
        & (F.col("a.instance") < F.col("b.instance"))
        & (F.col("a.start_ts") <= F.col("b.end_ts"))
        & (F.col("b.start_ts") <= F.col("a.end_ts")),
    ).select(
        F.col("a.kind").alias("kind"),
        F.col("a.group_name").alias("group_name"),
        F.col("a.instance").alias("instance_a"),
        F.col("b.instance").alias("instance_b"),
        F.greatest("a.start_ts", "b.start_ts").alias("certain_start"),
        F.least("a.end_ts", "b.end_ts").alias("certain_end"),
        F.greatest(F.coalesce("a.start_lower", "a.start_ts"), F.coalesce("b.start_lower", "b.start_ts")).alias("possible_start"),
        F.least(F.coalesce("a.end_upper", "a.end_ts"), F.coalesce("b.end_upper", "b.end_ts")).alias("possible_end"),
        F.col("a.interval_id").alias("_a_id"),
        F.col("b.interval_id").alias("_b_id"),
    )
    return pairs.withColumn("window_id", window_id())


def window_id() -> Column:
    return F.substring(
        F.sha2(F.concat_ws("/", "group_name", "instance_a", "instance_b", F.col("certain_start").cast("string")), 256), 1, 32)


def window_traffic(pairs: DataFrame, broker_state: DataFrame) -> DataFrame:
    """Per window: unanswered scrapes of either side inside the certain window, and the counter
    growth on each side's *active* observations inside the possible window.

    Each window is split into its two sides so the join with broker_state is an equi-join on
    (group, instance): a broadcast hash join of the windows against one pass over the
    observations; only the time range is checked per row."""
    window = ["window_id", "group_name", "certain_start", "certain_end", "possible_start", "possible_end"]
    sides = pairs.select(*window, F.col("instance_a").alias("instance"), F.lit(True).alias("side_a")).unionByName(
        pairs.select(*window, F.col("instance_b").alias("instance"), F.lit(False).alias("side_a")))
    rows = broker_state.select("group_name", "instance", "ts", "reachable", "active", "total_enqueued")
    joined = rows.join(F.broadcast(sides), ["group_name", "instance"]).where(
        F.col("ts").between(F.col("possible_start"), F.col("possible_end")))
    in_certain = F.col("ts").between(F.col("certain_start"), F.col("certain_end"))
    active = F.coalesce(F.col("active"), F.lit(False))

    def growth(side):
        counter = F.when(side & active, F.col("total_enqueued"))
        return (F.max(counter) - F.min(counter)).cast("long")

    return joined.groupBy("window_id").agg(
        F.sum(F.when(in_certain & ~F.col("reachable"), 1).otherwise(0)).alias("unanswered"),
        growth(F.col("side_a")).alias("enqueued_a"),
        growth(~F.col("side_a")).alias("enqueued_b"),
    )


def split_brain_windows(intervals: DataFrame, broker_state: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Overlapping active intervals of two instances of one group, with certainty and traffic.

    Traffic = counter growth on each side's *active* observations inside the possible window
    (not what a passive instance loaded from the journal before it took over)."""
    return windows_with_traffic(overlapping_pairs(intervals, nonexclusive), broker_state)


def windows_with_traffic(pairs: DataFrame, broker_state: DataFrame) -> DataFrame:
    """split_brain_windows rows for `pairs` (overlapping_pairs), traffic from `broker_state`."""
    return window_rows(pairs.join(window_traffic(pairs, broker_state), "window_id", "left"))


def window_rows(windows: DataFrame) -> DataFrame:
    """split_brain_windows rows from windows with their traffic (`unanswered`, `enqueued_a/b`)."""
    return windows.select(
        "window_id",
        "kind",
        "group_name",
        "instance_a",
        "instance_b",
        "certain_start",
        "certain_end",
        "possible_start",
        "possible_end",
        F.when(F.coalesce(F.col("unanswered"), F.lit(0)) > 0, "possible").otherwise("certain").alias("certainty"),
        ((F.unix_micros("certain_end") - F.unix_micros("certain_start")) / 1e6).alias("duration_s"),
        "enqueued_a",
        "enqueued_b",
    )


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


def sort_by_key(t: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """`t` sorted by group_name, instance, ts (names in byte order, as Spark sorts them; rows of
    one key and time keep their order), its name columns dictionary-encoded; and where keys start.

    Names are sorted once per distinct value, rows by integer codes: far cheaper than sorting
    the rows by their strings (in Spark or in Arrow)."""
    t = t.combine_chunks()
    codes = []
    for name in ("group_name", "instance"):
        enc = pc.dictionary_encode(t.column(name).combine_chunks())
        t = t.set_column(t.schema.get_field_index(name), name, enc)
        rank = np.empty(len(enc.dictionary), dtype=np.int64)
        rank[pc.sort_indices(enc.dictionary).to_numpy()] = np.arange(len(enc.dictionary))
        codes.append(np.where(enc.is_null().to_numpy(zero_copy_only=False), -1,
                              rank[enc.indices.fill_null(0).to_numpy(zero_copy_only=False)]))
    ts, _ = micros(t.column("ts"))
    order = np.lexsort((ts, codes[1], codes[0]))
    group, instance = codes[0][order], codes[1][order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (group[1:] != group[:-1]) | (instance[1:] != instance[:-1])
    return t.take(order), starts


def kind_codes(kinds: Sequence[str]) -> list[Column]:
    """`kind` as `_kind`, its position in `kinds` (1-based; 0: another kind, then in `_other_kind`):
    an integer instead of a string on every row that Spark shuffles and hands to Python."""
    code = F.array_position(F.array(*(F.lit(k) for k in kinds)), F.col("kind")).cast("byte")
    return [code.alias("_kind"), F.when(code == 0, F.col("kind")).alias("_other_kind")]


def decode_kinds(t: pa.Table, kinds: Sequence[str]) -> pa.Table:
    """kind_codes undone: `kind` as a dictionary-encoded column, in place of `_kind`, `_other_kind`."""
    code = pc.cast(t.column("_kind"), pa.int32()).to_numpy(zero_copy_only=False)
    other = t.column("_other_kind").combine_chunks()
    names = pa.concat_arrays([pa.array(["", *kinds], pa.string()), pc.unique(other.drop_null())])
    index = np.where(code > 0, code, len(kinds) + 1 + pc.index_in(other, names.slice(len(kinds) + 1)).fill_null(-len(kinds) - 1)
                     .to_numpy(zero_copy_only=False))
    kind = pa.DictionaryArray.from_arrays(pa.array(index, pa.int32(), mask=(index == 0)), names)
    return t.drop_columns(["_kind", "_other_kind"]).append_column("kind", kind)


def by_group(df: DataFrame, columns: Sequence[str], fn, schema, partitions: int | None = None) -> DataFrame:
    """Apply the vectorized `fn` (Arrow table of whole groups sorted by group_name, instance, ts;
    where its keys start → Arrow rows of `schema`) to every group of `df`. Spark only partitions
    by group; each partition is sorted in Python (sort_by_key), so it is held in memory whole:
    `partitions` bounds its size (default: spark.sql.shuffle.partitions). `kind` travels as a
    small integer (kind_codes)."""
    kinds = sorted(PACKS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = list(batches)
        if batches and sum(b.num_rows for b in batches):
            t, starts = sort_by_key(decode_kinds(pa.Table.from_batches(batches), kinds))
            del batches
            yield from fn(t, starts).to_batches()

    encoded = [*(c for c in columns if c != "kind"), *kind_codes(kinds)]
    shuffled = df.select(*encoded).repartition(*([partitions] if partitions else []), "group_name")
    return shuffled.mapInArrow(run, schema)


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
# Two jobs, each with its own watermark (lakehouse/jobs/watermark.py): silver reads bronze_jolokia,
# gold reads broker_state. An incremental run needs only appends to its input since the watermark;
# it reads the new rows plus the few stored rows that decide what they continue, and writes what
# changed. Whatever it could not do exactly (rows older than stored ones, a group derived for rows
# already stored, anything but appends) falls back to the full recompute, which is always right.

SILVER_JOB, GOLD_JOB = "spine-silver", "spine-gold"
GOLD_TABLES = ("role_intervals", "failover_events", "split_brain_windows", "ha_group_checks")
KEY = ["group_name", "instance"]
RESUME_TAIL_US = 10 * 60 * 1_000_000  # stored rows read first to resume from: 10 min before the new ones
# what the gold steps read of broker_state (no partition column: the bridge need not attach it)
GOLD_INPUT = [*ROLE_INPUT, "reachable", "total_enqueued", "store", "node_id"]


def code_sources() -> list[str]:
    """The code whose every edit makes the next run a full one: this job and the packs it runs."""
    modules = {__name__, "collectors.base", "collectors.packs", *(type(p).__module__ for p in PACKS.values())}
    return sorted(sys.modules[m].__file__ for m in modules if getattr(sys.modules.get(m), "__file__", None))


def pinned_read(slh, name: str, columns: Sequence[str] | None = None) -> tuple[DataFrame, int]:
    """The table at its current version, and that version (-1: no table yet)."""
    version = slh.lakehouse.version(name)
    return slh.read(name, version=version, columns=columns), -1 if version is None else version


def appended_since(slh, job: str, outputs: Sequence[str], input_table: str, fp: str, columns: Sequence[str] | None = None):
    """The input's rows split at the job's watermark, when an incremental run is possible."""
    mark = read_watermark(slh.lakehouse, job, outputs)
    if mark is None or mark.fingerprint != fp:
        return None
    return slh.read_appended(input_table, mark.input_version, columns)


def run_silver(slh, targets: dict[str, tuple[str, str | None]], say, full: bool = False,
               skew_threshold: float = math.inf) -> None:
    """bronze_jolokia → the silver tables; observations moved onto the broker's clock where the
    target's skew estimate reaches `skew_threshold` (math.inf: estimated and kept, never moved)."""
    fp = fingerprint(SILVER_JOB, sorted(targets.items()), repr(skew_threshold), sources=code_sources())
    appended = None if full else appended_since(slh, SILVER_JOB, SILVER_FROM_JOLOKIA, "bronze_jolokia", fp)
    if appended is not None and silver_increment(slh, appended, targets, Watermark(SILVER_JOB, appended.version, fp), say, skew_threshold):
        return
    bronze, version = pinned_read(slh, "bronze_jolokia")
    say("bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA) + " (full)")
    configured = {name for name, (_, group) in targets.items() if group}
    mark = Watermark(SILVER_JOB, version, fp).commit_info()
    skews = clock_skews(bronze, skew_threshold).cache()
    for table in SILVER_FROM_JOLOKIA:
        silver = to_silver(bronze, table, targets, skews)
        if table == "broker_state":
            silver = fill_derived_groups(silver, configured)
        slh.write(table, silver, commit_info=mark)
    skews.unpersist()


def silver_increment(slh, appended, targets, mark: Watermark, say, skew_threshold: float = math.inf) -> bool:
    """Append the silver rows of the new bronze rows; False when that would not be exact."""
    if appended.new.isEmpty():
        say("bronze → silver: no new bronze rows")
        return True
    configured = {name for name, (_, group) in targets.items() if group}
    skews = skews_increment(appended.old, appended.new, skew_threshold)
    if skews is None:
        say("bronze → silver: new rows change the clock skew of stored ones, recomputing")
        return False
    skews = skews.cache()
    state = to_silver(appended.new, "broker_state", targets, skews).cache()
    context = fill_context(state, slh.read("broker_state", columns=["instance", "group_name", "ts"]), configured)
    if context is None:
        state.unpersist()
        skews.unpersist()
        say("bronze → silver: new rows reach back into stored ones, recomputing")
        return False
    say("bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA) + f" (incremental: bronze up to version {mark.input_version})")
    before = (slh.spark.createDataFrame(context, "instance string, ts long, group_name string")
              .withColumn("ts", F.timestamp_micros("ts")))
    for table in SILVER_FROM_JOLOKIA:
        rows = fill_derived_groups(state, configured, before) if table == "broker_state" else to_silver(appended.new, table, targets, skews)
        slh.write(table, rows, mode="append", commit_info=mark.commit_info())
    state.unpersist()
    skews.unpersist()
    return True


def fill_context(new_state: DataFrame, stored: DataFrame, configured: set[str]) -> list[tuple] | None:
    """For every instance of new broker_state rows whose group is derived from data, its last
    stored row that had a derived group (instance, µs, group_name): what `fill_derived_groups`
    needs from before. None when the new rows would change stored ones: rows not later than
    stored ones, or the first derived group of an instance whose stored rows all wait for one.

    Reads a recent tail of the stored rows first (it holds every row a new one could precede,
    and mostly the last derived group); all stored rows only of instances it says nothing about."""
    derived = F.col("group_name") != F.col("instance")
    first_new = {r.instance: r for r in new_state.where(~F.col("instance").isin(sorted(configured))).groupBy("instance")
                 .agg(F.min(F.unix_micros("ts")).alias("first"), F.max(derived).alias("derived")).collect()}
    if not first_new:
        return []

    def summary(rows: DataFrame, instances) -> dict:
        names = F.broadcast(rows.sparkSession.createDataFrame([(i,) for i in instances], "instance string"))
        return {r.instance: r for r in rows.join(names, "instance").groupBy("instance").agg(
            F.max(F.unix_micros("ts")).alias("last_ts"),
            F.max(~derived).alias("waiting"),
            F.max(F.when(derived, F.struct(F.unix_micros("ts").alias("ts"), "group_name"))).alias("last_derived")).collect()}

    since = min(r.first for r in first_new.values()) - RESUME_TAIL_US
    found = summary(stored.where(F.col("ts") >= F.timestamp_micros(F.lit(since))), first_new)
    if any(i in found and found[i].last_ts >= r.first for i, r in first_new.items()):
        return None
    unknown = [i for i in first_new if i not in found or found[i].last_derived is None]
    if unknown:
        found.update(summary(stored, unknown))
    context = []
    for instance, new in first_new.items():
        old = found.get(instance)
        if old is None:
            continue
        if old.last_derived is None:
            if old.waiting and new.derived:
                return None
            continue
        context.append((instance, old.last_derived.ts, old.last_derived.group_name))
    return context


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
    since = min(first_new.values()) - RESUME_TAIL_US
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


def run_spine(slh, targets: dict[str, tuple[str, str | None]], progress=None, full: bool = False,
              skew_threshold: float = math.inf) -> dict[str, int]:
    """bronze → silver → gold; incremental from the jobs' watermarks unless `full`. Returns the
    rows each output table holds afterwards (what a rerun over the same data gives again).
    `skew_threshold`: see run_silver (config `analysis.clock_skew`)."""
    say = progress or (lambda msg: None)
    run_silver(slh, targets, say, full=full, skew_threshold=skew_threshold)
    run_gold(slh, say, full=full)
    return {t: slh.lakehouse.count(t) for t in (*SILVER_FROM_JOLOKIA, *GOLD_TABLES)}
