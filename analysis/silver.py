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

from analysis import clock_skew, watermark
from analysis.clock_skew import skew_sample_batch, skew_samples, skews_increment, skews_of
from analysis.frames import cached
from analysis.groups import fill_derived_groups
from analysis.silver_carry import (Carry, carry_of, carry_table, fill_from_carry, instance_summaries, merged, shifted_columns,
                                   skews_from_carry, spark_instance_summaries, spark_target_summaries, target_summaries)
from analysis.watermark import Watermark, anchor_info, anchored_watermark, fingerprint, pinned_read
from collectors.base import Observation, collector_health_row
from collectors.packs import PACKS
from collectors.quarantine import normalize_checked, reasons_text
from lakehouse.spark import added_actions, added_rows, read_added
from lakehouse.tables import SILVER_FROM_JOLOKIA, contract

SILVER_JOB = "spine-silver"
#: silver_carry's commits record, beside the watermark, the versions the run left the four silver tables at
OUTPUT_VERSIONS = "brokerscope.silver_outputs"
#: new bronze rows up to this many are parsed on the driver (a tick: ~600 at 50 HA groups, ~6,000 at 500)
SMALL_APPEND_ROWS = 50_000
#: what parsing reads of bronze_jolokia
BRONZE_COLUMNS = ["obs_key", "ts", "target", "kind", "group_name", "request_json", "response_json", "error", "error_kind",
                  "elapsed_ms"]
# The spine's code (silver and gold jobs) and the broker packs: every edit makes the next run a full one.
SPINE_MODULES = ("analysis.silver", "analysis.silver_carry", "analysis.clock_skew", "analysis.groups", "analysis.frames", "analysis.intervals",
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
    return pa.RecordBatch.from_pylist(silver_rows(batch.to_pydict(), batch.num_rows, (table,), targets)[table],
                                      schema=contract(table).schema)


def silver_rows(cols: dict, n: int, tables: tuple[str, ...], targets: dict[str, tuple[str, str | None]]) -> dict[str, list[dict]]:
    """The rows of the silver `tables` of `n` bronze rows (`cols`: their columns as lists), each
    observation parsed once for all of them (an incremental run's one pass over its new rows)."""
    out: dict[str, list[dict]] = {t: [] for t in tables}
    health = "collector_health" in tables
    for i in range(n):
        target = cols["target"][i]
        kind, group = targets.get(target, (cols["kind"][i], cols["group_name"][i]))
        pack = PACKS.get(kind)
        wanted = () if pack is None else tuple(t for t in tables if t != "collector_health" and t in pack.tables)
        if not wanted and not health:
            continue
        obs = _observation(cols, i, target, kind, group)
        # collector_health counts what the pack set aside over all its tables: then parse them all
        checked = pack.tables if health and pack is not None and obs.answered else wanted
        rows, aside = normalize_checked(pack, obs, cols["obs_key"][i], checked) if checked else (None, [])
        for t in wanted:
            out[t].extend(rows.get(t))
        if health:
            out["collector_health"].append(_health_row(cols, i, obs, aside if pack is not None and obs.answered else []))
    return out


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


def _health_row(cols: dict, i: int, obs: Observation, aside: list) -> dict:
    """collector_health of one observation, with the broker values its silver rows set aside (`aside`)."""
    row = collector_health_row(obs, cols["obs_key"][i], cols["error_kind"][i])
    row["collector_ts"] = cols["ts"][i]
    skews = cols.get("clock_skew_s")
    row["clock_skew_s"] = skews[i] if skews is not None else None
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



def silver_watermark(lakehouse) -> Watermark | None:
    """The silver job's watermark: silver_carry's latest commit's, when the four silver tables are as
    that run left it (it commits only the tables it has rows for: watermark.anchored_watermark)."""
    return anchored_watermark(lakehouse, SILVER_JOB, "silver_carry", SILVER_FROM_JOLOKIA, OUTPUT_VERSIONS)


def run_silver(slh, targets: dict[str, tuple[str, str | None]], say, full: bool = False,
               skew_threshold: float = math.inf) -> None:
    """bronze_jolokia → the silver tables; observations moved onto the broker's clock where the
    target's skew estimate reaches `skew_threshold` (math.inf: estimated and kept, never moved).
    Incremental from the carry when that is exact: on the driver when the new rows are few, else in Spark."""
    fp = fingerprint(SILVER_JOB, sorted(targets.items()), repr(skew_threshold), sources=code_sources())
    stored = None if full else silver_watermark(slh.lakehouse)
    if stored is not None and stored.fingerprint == fp:
        done = driver_increment(slh, stored.input_version, targets, fp, say, skew_threshold)
        if done is None:
            appended = slh.read_appended("bronze_jolokia", stored.input_version)
            done = appended is not None and silver_increment(
                slh, appended, targets, Watermark(SILVER_JOB, appended.version, fp), say, skew_threshold)
        if done:
            return
    bronze, version = pinned_read(slh, "bronze_jolokia")
    say("bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA) + " (full)")
    configured = {name for name, (_, group) in targets.items() if group}
    mark = Watermark(SILVER_JOB, version, fp)
    # the samples cached too: the carry's per-target summaries read them again (parsing every answer twice otherwise)
    with cached(skew_samples(bronze)) as samples, cached(skews_of(samples, skew_threshold)) as skews:
        for table in SILVER_FROM_JOLOKIA:
            silver = to_silver(bronze, table, targets, skews)
            if table == "broker_state":
                silver = fill_derived_groups(silver, configured)
            slh.write(table, silver, commit_info=mark.commit_info())
        targets_carry = spark_target_summaries(samples)
    carry = merged(Carry(), targets_carry,
                   spark_instance_summaries(slh.read("broker_state", columns=["instance", "ts", "group_name"]), configured),
                   clock_skew.SKEW_WINDOW)
    write_carry(slh, carry, mark)


def write_carry(slh, carry: Carry, mark: Watermark) -> None:
    """silver_carry, last of the run's writes: its commit anchors the watermark."""
    slh.write_arrow("silver_carry", carry_table(carry),
                    commit_info=anchor_info(slh.lakehouse, mark.commit_info(), SILVER_FROM_JOLOKIA, OUTPUT_VERSIONS))


def driver_increment(slh, since: int, targets, fp: str, say, skew_threshold: float = math.inf) -> bool | None:
    """The silver rows of the bronze rows committed after version `since`, appended without Spark
    when they are few (SMALL_APPEND_ROWS): the files the commits added read by pyarrow, each
    observation parsed once for the four tables, its skew and group from the carry; a table without
    new rows gets no commit. False when only a full run is exact; None when the rows are many or
    the commits not plain appends (the Spark increment decides)."""
    lh = slh.lakehouse
    version = lh.version("bronze_jolokia")
    adds = None if version is None else added_actions(lh, "bronze_jolokia", since, version)
    if adds is None or any(a.get("deletionVector") for a in adds):
        return None
    try:
        if sum(added_rows(lh, "bronze_jolokia", a) for a in adds) > SMALL_APPEND_ROWS:
            return None
        bronze = new_bronze(read_added(lh, "bronze_jolokia", adds, BRONZE_COLUMNS))
    except (OSError, pa.ArrowException, KeyError):
        return None
    if not bronze.num_rows:
        say("bronze → silver: no new bronze rows")
        return True
    carry = carry_of(lh.read("silver_carry"))
    samples = skew_sample_batch(bronze).to_pandas()
    skews = skews_from_carry(samples, carry, skew_threshold)
    if skews is None:
        say("bronze → silver: new rows change the clock skew of stored ones, recomputing")
        return False
    bronze = shifted_columns(bronze, skews)
    rows = silver_rows(bronze.to_pydict(), bronze.num_rows, SILVER_FROM_JOLOKIA, targets)
    configured = {name for name, (_, group) in targets.items() if group}
    if not fill_from_carry(rows["broker_state"], configured, carry):
        say("bronze → silver: new rows reach back into stored ones, recomputing")
        return False
    mark = Watermark(SILVER_JOB, version, fp)
    say("bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA) + f" (incremental: bronze up to version {version}, "
        f"{bronze.num_rows} rows on the driver)")
    for table in SILVER_FROM_JOLOKIA:
        if rows[table]:  # no rows: no commit (the watermark goes with silver_carry)
            c = contract(table)
            slh.write(table, slh.spark.createDataFrame(pa.Table.from_pylist(rows[table], schema=c.schema), c.spark_schema()),
                      mode="append", commit_info=mark.commit_info())
    window = clock_skew.SKEW_WINDOW
    write_carry(slh, merged(carry, target_summaries(samples, window), instance_summaries(rows["broker_state"], configured), window), mark)
    return True


def new_bronze(tables: list[pa.Table]) -> pa.Table:
    """The files' bronze rows as one table of BRONZE_COLUMNS (a column a file lacks: null), ts in UTC µs."""
    schema = pa.schema([contract("bronze_jolokia").schema.field(n) for n in BRONZE_COLUMNS])
    fitted = [pa.table({f.name: (t.column(f.name) if f.name in t.column_names else pa.nulls(t.num_rows, f.type)).cast(f.type)
                        for f in schema}, schema=schema) for t in tables]
    return pa.concat_tables(fitted) if fitted else schema.empty_table()


def silver_increment(slh, appended, targets, mark: Watermark, say, skew_threshold: float = math.inf) -> bool:
    """Append the silver rows of the new bronze rows in Spark; False when that would not be exact."""
    if appended.new.isEmpty():
        say("bronze → silver: no new bronze rows")
        return True
    configured = {name for name, (_, group) in targets.items() if group}
    skews = skews_increment(appended.old, appended.new, skew_threshold)
    if skews is None:
        say("bronze → silver: new rows change the clock skew of stored ones, recomputing")
        return False
    with cached(skews) as skews, cached(to_silver(appended.new, "broker_state", targets, skews)) as state:
        context = fill_context(state, slh.read("broker_state", columns=["instance", "group_name", "ts"]), configured)
        if context is None:
            say("bronze → silver: new rows reach back into stored ones, recomputing")
            return False
        say("bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA) + f" (incremental: bronze up to version {mark.input_version})")
        before = (slh.spark.createDataFrame(context, "instance string, ts long, group_name string")
                  .withColumn("ts", F.timestamp_micros("ts")))
        filled = fill_derived_groups(state, configured, before)
        for table in SILVER_FROM_JOLOKIA:
            rows = filled if table == "broker_state" else to_silver(appended.new, table, targets, skews)
            slh.write(table, rows, mode="append", commit_info=mark.commit_info())
        carry = merged(carry_of(slh.lakehouse.read("silver_carry")), spark_target_summaries(skew_samples(appended.new)),
                       spark_instance_summaries(filled, configured), clock_skew.SKEW_WINDOW)
    write_carry(slh, carry, mark)
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
