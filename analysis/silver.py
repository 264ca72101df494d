"""bronze_jolokia → silver broker_state, destination_stats, replication_stats, collector_health:
each broker pack's normalize over Arrow batches, full or incremental from the silver job's watermark."""

from __future__ import annotations

import importlib.util
import json
import math
from datetime import timedelta
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import watermark
from analysis.clock_skew import clock_skews, skews_increment
from analysis.groups import fill_derived_groups
from analysis.watermark import Watermark, appended_since, fingerprint, pinned_read
from collectors.base import Observation, collector_health_row
from collectors.packs import PACKS
from collectors.quarantine import normalize_checked, reasons_text
from lakehouse.tables import SILVER_FROM_JOLOKIA, contract

SILVER_JOB = "spine-silver"
# The spine's code (silver and gold jobs) and the broker packs: every edit makes the next run a full one.
SPINE_MODULES = ("analysis.silver", "analysis.clock_skew", "analysis.groups", "analysis.frames", "analysis.intervals",
                 "analysis.failovers", "analysis.split_brain", "analysis.spine", "analysis.spine_onepass", "analysis.spine_carry",
                 "analysis.spine_increment", "collectors.base", "collectors.packs", "collectors.quarantine")


def code_sources() -> list[str]:
    """The files of the spine's modules and of every broker pack (found, not imported)."""
    modules = {*SPINE_MODULES, *(type(p).__module__ for p in PACKS.values())}
    return sorted(importlib.util.find_spec(m).origin for m in modules)


# --- bronze → silver -------------------------------------------------------------------------------


def normalize_batch(batch: pa.RecordBatch, table: str, targets: dict[str, tuple[str, str | None]]) -> pa.RecordBatch:
    """Parse a batch of bronze_jolokia rows into rows of one silver `table`.

    `targets` maps target name → (kind, group) from the current config; it wins over what was
    stored at collection time, so a group can be declared after the fact.
    """
    c = contract(table)
    out: list[dict] = []
    cols = batch.to_pydict()
    for i in range(batch.num_rows):
        target = cols["target"][i]
        kind, group = targets.get(target, (cols["kind"][i], cols["group_name"][i]))
        pack = PACKS.get(kind)
        if table != "collector_health" and (pack is None or table not in pack.tables):
            continue
        obs = _observation(cols, i, target, kind, group)
        if table == "collector_health":
            out.append(_health_row(cols, i, obs, pack))
        else:
            out.extend(normalize_checked(pack, obs, cols["obs_key"][i], (table,))[0].get(table))
    return pa.RecordBatch.from_pylist(out, schema=c.schema)


def _observation(cols: dict, i: int, target: str, kind: str, group: str | None) -> Observation:
    """Row `i` of a bronze batch as an Observation, moved by its clock shift (see clock_skews)."""
    shifts = cols.get("shift_us")  # absent: no shift
    shift = shifts[i] if shifts is not None and shifts[i] else 0
    resp = cols["response_json"][i]
    return Observation(
        ts=cols["ts"][i] + timedelta(microseconds=shift) if shift else cols["ts"][i],
        target=target,
        kind=kind,
        group=group,
        requests=json.loads(cols["request_json"][i]),
        response=None if resp is None else json.loads(resp),
        error=cols["error"][i],
        elapsed_ms=cols["elapsed_ms"][i],
    )


def _health_row(cols: dict, i: int, obs: Observation, pack) -> dict:
    """collector_health of one observation, with the broker values its silver rows set aside."""
    row = collector_health_row(obs, cols["obs_key"][i], cols["error_kind"][i])
    row["collector_ts"] = cols["ts"][i]
    skews = cols.get("clock_skew_s")
    row["clock_skew_s"] = skews[i] if skews is not None else None
    aside = normalize_checked(pack, obs, cols["obs_key"][i], pack.tables)[1] if pack is not None and obs.answered else []
    row["values_quarantined"] = len(aside)
    row["quarantined"] = reasons_text(aside)
    return row


def to_silver(bronze: DataFrame, table: str, targets: dict[str, tuple[str, str | None]],
              skews: DataFrame | None = None) -> DataFrame:
    """`skews`: per obs_key the target's clock skew estimate and the shift to apply (clock_skews)."""
    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield normalize_batch(b, table, targets)

    if skews is not None:
        bronze = bronze.join(skews, "obs_key", "left")
    return bronze.mapInArrow(parse, contract(table).spark_schema())



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

    since = min(r.first for r in first_new.values()) - watermark.RESUME_TAIL_US
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
