"""The lag job's runs: full, or incremental from what the last run carried (gold replication_lag,
replication_findings; state lag_carry).

A full run evaluates every series from its first observation. An incremental run reads only the
silver rows appended since the last run (`read_appended`) and, per series, what the last run
carried in lag_carry (analysis/lag.py `series_lag_carried`: the integrated position, the lookup
table's points, Burrow's last `window` commits, the last evaluation time, the commit count and
last lag — everything a replication_lag row depends on besides the new rows). It appends the new
rows' replication_lag rows: with no late row they are the rows a full run writes at those ticks,
bit for bit (the sums go on term by term in the same order), and a full run's stored rows do not
change.

Findings are rewritten whole when they changed (one row per run of a condition: far fewer than lag
rows, but the one part of an incremental run that grows with the history), from what is kept and
what is recomputed:
- per series with new lag rows: its findings from the new rows alone, in the same step. A series
  carries its last row and, per finding code, the run still open at it (start, the bound before it,
  largest value, certainty, ns of holes so far: analysis.lag.finding_rows' `carried`): an open
  finding goes on from there (kept ones are the closed ones: new rows cannot change them), a new run
  starts after the last row. Nothing of the stored replication_lag is read back.
- Kafka cluster health and Artemis replica sync (flows isr, artemis-replica): recomputed from the
  whole history of each group with new rows. They need it: scrape rounds are fitted to a group's
  history (the median gap between a broker's scrapes and the widest gap between the brokers'
  phases: a new row can move every round's boundary), and the replica-sync words use the median
  step of the live's scrapes. Bounded to those groups and to the columns the rules read.
- failover readiness: recomputed from gold failover_readiness whenever it changed (the readiness
  job rewrites it whole anyway), else kept.

mirror-offsets (kafka_offsets, which the readiness job rewrites whole when bronze_kafka grows): per
replication, the facts from the first one of its last round on (rounds are formed in time order
from their first fact: starting there gives the full run's rounds); the new facts must not join
that round and no new bronze_kafka row may be older than it.

Machinery: the new rows come from the Delta log (`read_appended`: the files added since a version;
both Delta modes, no change data feed needed), the state is a Delta table written with the outputs'
watermark. Structured Streaming's `applyInPandasWithState` has this shape (state per group over
micro-batches) but keeps its state in a checkpoint's state store rather than a table of the
lakehouse, needs delta-spark's streaming source (not the bridge), and has no notion of "this batch
holds a row older than the state: recompute everything"; it was not tried. Delta MERGE would spare
rewriting replication_findings whole, but the bridge has none; not measured either.

A run writes only what changed: no empty append to replication_lag, no rewrite of unchanged
findings; lag_carry, always written last, carries the watermark and the versions the run left the
other two at (`stored_mark`: a later run trusts the outputs when each either carries the same
watermark or is still at that version). A run whose new rows are only scrapes of instances without
series (a fleet without replication, e.g. ActiveMQ master/slave pairs: before, two Spark jobs, an
applyInPandas over every instance's scrapes, and three commits per tick) needs no Spark at all
(`lag_quiet`): the files the commits since added (`lakehouse.spark.added_actions`, from the commits'
JSON) show no replication row, the instances' last scrapes are read from them with pyarrow, and
lag_carry alone is committed — the rows the incremental run would write.

Whatever cannot be exact falls back to the full run, which is always right: no carry or another
watermark (config, code), a silver table rewritten (not only appended), a new row not later than a
stored row of its instance, a series whose basis the new rows change (lag-only ↔ derived), a series
reported again after it expired, a readiness rewrite with another fingerprint or of non-appended
bronze_kafka, new facts that join the last stored round.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from analysis import lag as lag_module
from analysis import mirror_lag as mirror_module
from analysis import runs as runs_module
from analysis.frames import cached
from analysis.lag import (LAG_FLOWS, LAG_JOB, LAG_TABLES, SERIES_KEY, LagParams, LagRules, NotExact, broker_findings,
                          instance_lag_carried, readiness_findings, series_findings_carried, series_key)
from analysis.mirror_lag import MIRROR_FLOW, mirror_observations
from analysis.runs import contract_frame, utc_ns
from analysis.silver import silver_watermark
from analysis.readiness import READINESS_JOB, READINESS_TABLES
from analysis.watermark import Watermark, anchor_info, anchored_watermark, fingerprint, read_watermark
from analysis.zookeeper import round_ids
from lakehouse.spark import Appended, added_actions, added_rows, read_added
from lakehouse.tables import LAG_CARRY, REPLICATION_FINDINGS, REPLICATION_LAG

OUTPUTS = (*LAG_TABLES, "lag_carry")
SILVER_INPUTS = ("replication_stats", "collector_health", "broker_state")
GROUP_FLOWS = ("isr", "artemis-replica")
_OBS = ["ts", "kind", "group_name", *SERIES_KEY, "lag_messages", "latency_ms", "throughput_per_s"]  # of a lag flow
_CARRY_COLUMNS = LAG_CARRY.column_names
_NO_CARRY = pd.DataFrame(columns=_CARRY_COLUMNS)  # a full run: every series from its first observation
#: what the per-instance step reads: observations, scrapes and carries, told apart by `_scope`
_IN = T.StructType([T.StructField("_scope", T.StringType()), *(f for f in REPLICATION_LAG.spark_schema().fields if f.name in _OBS),
                    T.StructField("throughput_per_s", T.DoubleType()), T.StructField("answered", T.BooleanType()),
                    T.StructField("_carry", T.StringType())])
#: what it gives: replication_lag rows (`_scope` null), the findings of their series (`_scope` finding) and
#: carries (`_scope` series | instance | round | fallback)
_OUT = T.StructType([*(T.StructField(f.name, f.dataType, True) for f in REPLICATION_LAG.spark_schema().fields),
                     *(T.StructField(f.name, f.dataType, True) for f in REPLICATION_FINDINGS.spark_schema().fields
                       if f.name not in REPLICATION_LAG.column_names),
                     T.StructField("_scope", T.StringType()), T.StructField("_carry", T.StringType())])


def code_fingerprint(params: LagParams) -> str:
    return fingerprint(LAG_JOB, repr(params), sources=[lag_module.__file__, __file__, runs_module.__file__, mirror_module.__file__])


# --- per instance (pandas, inside applyInPandas) -------------------------------------------------------------


def _ns(ts) -> int:
    return int(pd.Timestamp(ts).value)  # ns since the epoch (UTC), naive or aware


def _carry_rows(instance: str, carries: dict[tuple, dict], last_ns: int | None, extra: list[dict] = ()) -> list[dict]:
    rows = [{**dict(zip(SERIES_KEY, c["key"])), "_scope": "series", "kind": c["kind"], "group_name": c["group_name"],
             "ts": pd.Timestamp(c["last_obs_ns"]), "_carry": json.dumps(c)} for c in carries.values()]
    if last_ns is not None:
        rows.append({"_scope": "instance", "instance": instance, "ts": pd.Timestamp(last_ns), "_carry": "{}"})
    return rows + list(extra)


def _out(lag: pd.DataFrame, carries: list[dict], findings: pd.DataFrame | None = None) -> pd.DataFrame:
    parts = [lag.assign(_scope=None, _carry=None), pd.DataFrame(carries, columns=[f.name for f in _OUT.fields])]
    if findings is not None and len(findings):
        parts.append(findings.assign(_scope="finding", _carry=None))
    parts = [p.dropna(axis=1, how="all") for p in parts if len(p)]  # all-null columns come back by name below
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    frame = frame.reindex(columns=[f.name for f in _OUT.fields])
    for f in _OUT.fields:
        if isinstance(f.dataType, T.TimestampType):
            frame[f.name] = pd.to_datetime(frame[f.name])
        elif isinstance(f.dataType, (T.BooleanType, T.StringType)):  # None for null (a float NaN is no string)
            frame[f.name] = frame[f.name].astype(object).where(frame[f.name].notna(), None)
    return frame


def _fallback(why: str) -> pd.DataFrame:
    return _out(contract_frame([], REPLICATION_LAG), [{"_scope": "fallback", "_carry": why}])


def _split(pdf: pd.DataFrame) -> tuple[dict[tuple, dict], int | None]:
    carried = pdf[pdf["_scope"] == "series"]
    carries = {series_key(k): json.loads(c) for k, c in zip(carried[SERIES_KEY].itertuples(index=False), carried["_carry"])}
    inst = pdf.loc[pdf["_scope"] == "instance", "ts"]
    return carries, (_ns(inst.iloc[0]) if len(inst) else None)


def with_findings(lag: pd.DataFrame, before: dict[tuple, dict], after: dict[tuple, dict], params: LagParams
                  ) -> tuple[pd.DataFrame, dict[tuple, dict]]:
    """The findings of the series with new rows in `lag` (analysis.lag.series_findings_carried, from what
    `before` carried), and the carries of those series (`after`'s, with what the findings carry)."""
    found, changed = [], {}
    for k, rows in (lag.groupby(SERIES_KEY, dropna=False, sort=False) if len(lag) else []):
        key = series_key(k)
        old = before.get(key)
        frame, carry = series_findings_carried(rows, lag_threshold_s=params.lag_threshold, hole_s=params.hole_s,
                                               carried=None if old is None else old["findings"])
        found += frame
        changed[key] = {**after[key], "findings": carry}
    return contract_frame(found, REPLICATION_FINDINGS), changed


def instance_step(pdf: pd.DataFrame, params: LagParams) -> pd.DataFrame:
    """replication_lag rows and carries of ONE instance from its new lag observations and scrapes
    and what it carried (none: a full run, or a new instance)."""
    instance = pdf["instance"].iloc[0]
    carries, stored_until = _split(pdf)
    obs = pdf[pdf["_scope"] == "obs"]
    health = pdf[pdf["_scope"] == "scrape"]
    new_ts = utc_ns(pd.concat([obs["ts"], health["ts"]]))
    if stored_until is not None and len(new_ts) and new_ts.min().astype("int64") <= stored_until:
        return _fallback(f"{instance}: rows not later than stored ones")
    try:
        lag, after = instance_lag_carried(obs, health, rules=LagRules.of(params), carries=carries, stored_until_ns=stored_until)
    except NotExact as e:
        return _fallback(str(e))
    findings, changed = with_findings(lag, carries, after, params)
    last_ns = max([stored_until or -(2**63), *(new_ts.astype("int64"))]) if len(new_ts) or stored_until is not None else None
    return _out(lag, _carry_rows(instance, changed, last_ns), findings)


def replication_step(pdf: pd.DataFrame, params: LagParams) -> pd.DataFrame:
    """mirror-offsets rows and carries of ONE replication from its kafka_offsets facts since the first of
    its last stored round (all of them: a full run) and what it carried."""
    name = pdf["replication"].iloc[0]
    rep = params.replications.get(name)
    if rep is None:  # no longer configured: its remote topic names are unknown (analysis.lag.mirror_lag)
        return _out(contract_frame([], REPLICATION_LAG), [])
    carries, stored_until = _split(pdf.rename(columns={"replication": "instance"}).assign(instance=name))
    stored_round = pdf.loc[pdf["_scope"] == "round", "_carry"]
    last_round = json.loads(stored_round.iloc[0]) if len(stored_round) else None
    facts = pdf[pdf["_scope"] == "fact"].drop(columns=["_scope", "_carry"]).sort_values("ts", kind="stable")
    cadence = np.timedelta64(int(params.scrape_interval_s * 1e9), "ns")
    ticks = round_ids(utc_ns(facts["ts"]), None, cadence)
    firsts = utc_ns(facts["ts"])[np.flatnonzero(np.diff(ticks, prepend=-1))].astype("int64") if len(facts) else np.zeros(0, np.int64)
    counts = np.bincount(ticks) if len(ticks) else np.zeros(0, np.int64)
    obs, rounds = mirror_observations(facts, rep, params.scrape_interval_s)
    if last_round is not None:
        if not len(firsts) or firsts[0] != last_round["first_ns"] or counts[0] != last_round["facts"]:
            return _fallback(f"{name}: new facts join its last stored round")
        done = pd.Timestamp(last_round["first_ns"])
        obs = obs[utc_ns(obs["ts"]) != done.to_datetime64()]
        rounds = rounds[utc_ns(rounds["ts"]) != done.to_datetime64()]
    try:
        lag, after = instance_lag_carried(obs, rounds, rules=LagRules.of(params), carries=carries, stored_until_ns=stored_until)
    except NotExact as e:
        return _fallback(str(e))
    findings, changed = with_findings(lag, carries, after, params)
    extra = []
    if len(firsts):
        extra.append({"_scope": "round", "instance": name, "ts": pd.Timestamp(int(firsts[-1])),
                      "_carry": json.dumps({"first_ns": int(firsts[-1]), "facts": int(counts[-1])})})
    last_ns = int(firsts[-1]) if len(firsts) else stored_until
    return _out(lag, _carry_rows(name, changed, last_ns, extra), findings)


# --- Spark wiring --------------------------------------------------------------------------------------------


def _carry_frame(spark, carry: pd.DataFrame) -> DataFrame:
    return spark.createDataFrame(contract_frame(carry, LAG_CARRY), LAG_CARRY.spark_schema())


def lag_rows(spark, repl: DataFrame, health: DataFrame, carry: pd.DataFrame, params: LagParams) -> DataFrame:
    """The per-instance step over new (or all) observations and scrapes with the carries of their instances."""
    reported = F.col("lag_messages").isNotNull() | F.col("latency_ms").isNotNull()
    obs = (repl.where(F.col("flow").isin(list(LAG_FLOWS)) & reported).select(*_OBS)
           .withColumn("_scope", F.lit("obs")).withColumn("answered", F.lit(None).cast("boolean")))
    scrapes = health.select("ts", "instance", "answered").withColumn("_scope", F.lit("scrape"))
    rows = obs.unionByName(scrapes, allowMissingColumns=True)
    if len(carry):  # the carries of the instances with new rows
        stored = _stored(spark, carry, ["series", "instance"]).join(rows.select("instance").distinct(), "instance", "left_semi")
        rows = rows.unionByName(stored, allowMissingColumns=True)

    def step(pdf: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark inspects it (a partial warns)
        return instance_step(pdf, params)

    return _shaped(rows, _IN).groupBy("instance").applyInPandas(step, _OUT)


def mirror_rows(spark, offsets: DataFrame, carry: pd.DataFrame, params: LagParams) -> DataFrame:
    """The per-replication step over kafka_offsets facts from each replication's last stored round on."""
    rounds = carry[carry["scope"] == "round"]
    cut = {i: json.loads(c)["first_ns"] for i, c in zip(rounds["instance"], rounds["carry"])}
    facts = offsets.withColumn("_scope", F.lit("fact"))
    if cut:
        since = spark.createDataFrame([(k, v // 1000) for k, v in cut.items()], "replication string, _since long")
        facts = (facts.where(F.col("ts") >= F.timestamp_micros(F.lit(min(cut.values()) // 1000)))  # Parquet skips the rest
                 .join(F.broadcast(since), "replication", "left")
                 .where(F.col("_since").isNull() | (F.unix_micros("ts") >= F.col("_since"))).drop("_since"))
    rows = facts
    if len(rounds):  # the carries of the replications
        stored = (_stored(spark, carry, ["series", "instance", "round"]).withColumnRenamed("instance", "replication")
                  .join(F.broadcast(spark.createDataFrame([(i,) for i in cut], "replication string")), "replication", "left_semi")
                  .where(F.col("_scope").isin("round", "instance") | (F.col("flow") == MIRROR_FLOW)))
        rows = rows.unionByName(stored, allowMissingColumns=True)
    schema = T.StructType([*offsets.schema.fields, *(f for f in _IN.fields if f.name in ("_scope", "_carry")),
                           *(T.StructField(c, T.StringType()) for c in ("flow", "source_cluster", "target_cluster", "client", "kind"))])

    def step(pdf: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark inspects it (a partial warns)
        return replication_step(pdf, params)

    return _shaped(rows, schema).groupBy("replication").applyInPandas(step, _OUT)


def _shaped(rows: DataFrame, schema: T.StructType) -> DataFrame:
    """`rows` with exactly the columns of `schema`, in its order (null where a part had none)."""
    return rows.select(*(F.col(f.name).cast(f.dataType) if f.name in rows.columns else F.lit(None).cast(f.dataType).alias(f.name)
                         for f in schema.fields))


def _stored(spark, carry: pd.DataFrame, scopes: list[str]) -> DataFrame:
    return (_carry_frame(spark, carry[carry["scope"].isin(scopes)])
            .withColumnRenamed("scope", "_scope").withColumnRenamed("carry", "_carry"))


def replication_lag(repl: DataFrame, health: DataFrame, rules: LagRules) -> DataFrame:
    """replication_lag rows of the replication_stats flows, all of them (the full run's step)."""
    params = LagParams(**{k: getattr(rules, k) for k in LagRules.__dataclass_fields__})
    return _lag_part(lag_rows(repl.sparkSession, repl, health, _NO_CARRY, params))


def mirror_lag(offsets: DataFrame, params: LagParams) -> DataFrame:
    """replication_lag rows of flow mirror-offsets (analysis.mirror_lag) from silver kafka_offsets, all of them."""
    return _lag_part(mirror_rows(offsets.sparkSession, offsets, _NO_CARRY, params))


def _lag_part(out: DataFrame) -> DataFrame:
    return out.where(F.col("_scope").isNull()).select(*REPLICATION_LAG.column_names)


def _findings_part(out: DataFrame) -> DataFrame:
    return out.where(F.col("_scope") == "finding").select(*REPLICATION_FINDINGS.column_names)


def _carries(out: DataFrame) -> pd.DataFrame:
    """The carries a step gave (collected: one row per series, instance and round), fallback rows included."""
    rows = out.where(F.col("_scope").isNotNull() & (F.col("_scope") != "finding")).select(
        F.col("_scope").alias("scope"), *(c for c in _CARRY_COLUMNS if c not in ("scope", "carry")), F.col("_carry").alias("carry"))
    return rows.toPandas()


def _input_row(versions: dict, kafka: dict, fact_groups: list[str]) -> dict:
    return {"scope": "input", "carry": json.dumps({"versions": versions, "kafka": kafka, "fact_groups": sorted(fact_groups)})}


def _versions(slh) -> dict[str, int]:
    return {t: -1 if slh.lakehouse.version(t) is None else slh.lakehouse.version(t)
            for t in (*SILVER_INPUTS, "kafka_offsets", "failover_readiness")}


def _kafka_mark(slh) -> dict:
    """The readiness job's watermark: which bronze_kafka version (and fingerprint) kafka_offsets reflects."""
    mark = read_watermark(slh.lakehouse, READINESS_JOB, READINESS_TABLES)
    return {"bronze_kafka": None if mark is None else mark.input_version, "fingerprint": None if mark is None else mark.fingerprint}


def run_lag(slh, params: LagParams, progress=None, full: bool = False) -> dict[str, int]:
    """Replication lag and findings from silver: skipped when no input changed since the last run,
    incremental from the carries when that is exact, else (or with `full`) recomputed whole."""
    say = progress or (lambda m: None)
    fp = code_fingerprint(params)
    silver = silver_watermark(slh.lakehouse)
    mark = Watermark(LAG_JOB, -1 if silver is None else silver.input_version, fp)
    versions = _versions(slh)
    stored = stored_mark(slh.lakehouse)
    carry = (slh.lakehouse.read("lag_carry").to_pandas() if stored is not None and stored.fingerprint == fp
             and not full else None)
    inputs = None
    if carry is not None:
        row = carry[carry["scope"] == "input"]
        inputs = json.loads(row["carry"].iloc[0]) if len(row) else None
    if not full and stored == mark and inputs is not None and inputs["versions"] == versions:
        say("gold replication_lag, replication_findings: silver unchanged since the last run")
        return {t: slh.lakehouse.count(t) for t in LAG_TABLES}
    if inputs is not None:
        counts = lag_quiet(slh, mark, versions, carry, inputs, say)
        if counts is None:
            counts = lag_increment(slh, params, mark, versions, carry, inputs, say)
        if counts is not None:
            return counts
    return lag_full(slh, params, mark, versions, say)


def lag_full(slh, params: LagParams, mark: Watermark, versions: dict, say) -> dict[str, int]:
    spark, info = slh.spark, mark.commit_info()
    repl = slh.read("replication_stats")
    say("gold replication_lag")
    with cached(lag_rows(spark, repl, slh.read("collector_health"), _NO_CARRY, params).unionByName(
            mirror_rows(spark, slh.read("kafka_offsets"), _NO_CARRY, params))) as out:
        counts = {"replication_lag": slh.write("replication_lag", _lag_part(out), commit_info=info)}
        carries = _carries(out)
        say("gold replication_findings")
        findings = broker_findings(slh.read("broker_state"), repl, follower_lag_messages=params.follower_lag_messages,
                                   grace_s=params.replica_sync_grace, hole_s=params.hole_s).unionByName(
            _findings_part(out)).unionByName(
            readiness_findings(slh.read("failover_readiness"), stale_after_s=params.stale_after_s, hole_s=params.hole_s))
        counts["replication_findings"] = slh.write("replication_findings", findings, commit_info=info)
    groups = [r.group_name for r in repl.where(F.col("flow").isin(*GROUP_FLOWS)).select("group_name").distinct().collect()]
    carries = pd.concat([carries, pd.DataFrame([_input_row(versions, _kafka_mark(slh), groups)])], ignore_index=True)
    _write_carry(slh, carries, info)
    return counts


def lag_increment(slh, params: LagParams, mark: Watermark, versions: dict, carry: pd.DataFrame, inputs: dict,
                  say) -> dict[str, int] | None:
    """Bring replication_lag and replication_findings up to date from the carries and the rows appended
    since (module doc); None when only a full run is exact."""
    spark, then = slh.spark, inputs["versions"]
    appended = {}
    for t in SILVER_INPUTS:
        if then[t] < 0:  # no table then: whatever it holds now is new
            appended[t] = Appended(slh.read(t).limit(0), slh.read(t), versions[t])
        else:
            appended[t] = slh.read_appended(t, then[t])
        if appended[t] is None:
            say(f"gold replication_lag: {t} was rewritten since the last run, recomputing")
            return None
    kafka_now, kafka_then = _kafka_mark(slh), inputs["kafka"]
    kafka_changed = versions["kafka_offsets"] != then["kafka_offsets"]
    if kafka_changed and (kafka_now["fingerprint"] != kafka_then["fingerprint"] or kafka_then["bronze_kafka"] is None
                          or not _kafka_appended(slh, kafka_then["bronze_kafka"], carry)):
        say("gold replication_lag: kafka_offsets no longer holds the facts it held, recomputing")
        return None
    new_repl, new_health = appended["replication_stats"].new, appended["collector_health"].new
    parts = lag_rows(spark, new_repl, new_health, carry, params)
    if kafka_changed:
        parts = parts.unionByName(mirror_rows(spark, slh.read("kafka_offsets"), carry, params))
    with cached(parts) as out:
        fresh = _carries(out)
        fallback = fresh[fresh["scope"] == "fallback"]
        if len(fallback):
            say(f"gold replication_lag: {fallback['carry'].iloc[0]}, recomputing")
            return None
        say(f"gold replication_lag (incremental: silver up to bronze version {mark.input_version})")
        info = mark.commit_info()
        lag_part = _lag_part(out)
        if not lag_part.isEmpty():  # no new row: no commit (the watermark goes with lag_carry: stored_mark)
            slh.write("replication_lag", lag_part, mode="append", commit_info=info)
        counts = {"replication_lag": slh.lakehouse.count("replication_lag")}

        say("gold replication_findings (incremental)")
        touched = set(_key_of(fresh[fresh["scope"] == "series"]))
        stored = slh.lakehouse.read("replication_findings").to_pandas()
        groups_new = {r.group_name for r in new_repl.where(F.col("flow").isin(*GROUP_FLOWS)).select("group_name").distinct().collect()}
        fact_groups = set(inputs["fact_groups"]) | groups_new
        state_groups = {r.group_name for r in appended["broker_state"].new.select("group_name").distinct().collect()}
        groups = sorted(groups_new | (state_groups & fact_groups))
        readiness_changed = versions["failover_readiness"] != then["failover_readiness"]
        kept = kept_findings(stored, touched, groups, readiness_changed)
        findings = spark.createDataFrame(contract_frame(kept, REPLICATION_FINDINGS), REPLICATION_FINDINGS.spark_schema()).unionByName(
            _findings_part(out))
        if groups:
            names = F.broadcast(spark.createDataFrame([(g,) for g in groups], "group_name string"))
            findings = findings.unionByName(broker_findings(
                slh.read("broker_state").join(names, "group_name", "left_semi"),
                slh.read("replication_stats").where(F.col("flow").isin(*GROUP_FLOWS)).join(names, "group_name", "left_semi"),
                follower_lag_messages=params.follower_lag_messages, grace_s=params.replica_sync_grace, hole_s=params.hole_s))
        if readiness_changed:
            findings = findings.unionByName(readiness_findings(slh.read("failover_readiness"), stale_after_s=params.stale_after_s,
                                                               hole_s=params.hole_s))
        table = findings.toArrow().select(REPLICATION_FINDINGS.column_names).cast(REPLICATION_FINDINGS.schema)
        if same_rows(table, slh.lakehouse.read("replication_findings")):  # unchanged: no commit
            counts["replication_findings"] = table.num_rows
        else:
            counts["replication_findings"] = slh.write_arrow("replication_findings", table, commit_info=info)
    _write_carry(slh, _merged_carry(carry, fresh, versions, kafka_now, fact_groups), info)
    return counts


def _merged_carry(carry: pd.DataFrame, fresh: pd.DataFrame, versions: dict, kafka: dict, fact_groups) -> pd.DataFrame:
    """The stored carries with those a run gave in their place, and the run's input row."""
    replaced = set(_carry_keys(fresh))
    old = carry[carry["scope"] != "input"]
    old = old[[k not in replaced for k in _carry_keys(old)]]
    return pd.concat([old, fresh, pd.DataFrame([_input_row(versions, kafka, fact_groups)])], ignore_index=True)


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """The same rows (in any order; floats to the bit, NaN equal to NaN)."""
    if a.num_rows != b.num_rows or a.schema.names != b.schema.names:
        return False

    def rows(t: pa.Table) -> list[tuple]:
        def cell(v):
            return ("f", np.float64(v).tobytes().hex()) if isinstance(v, float) else v
        return sorted((tuple(cell(v) for v in r.values()) for r in t.to_pylist()), key=repr)

    return rows(a) == rows(b)


def _carry_keys(carry: pd.DataFrame) -> list[tuple]:
    return [(scope, *series_key(k)) for scope, k in zip(carry["scope"], carry[SERIES_KEY].itertuples(index=False))]


def _kafka_appended(slh, since: int, carry: pd.DataFrame) -> bool:
    """bronze_kafka only grew since version `since`, and by no row older than a replication's last stored round."""
    appended = slh.read_appended("bronze_kafka", since, columns=["target", "ts"])
    if appended is None:
        return False
    rounds = carry[carry["scope"] == "round"]
    cut = {i: json.loads(c)["first_ns"] for i, c in zip(rounds["instance"], rounds["carry"])}
    for r in appended.new.groupBy("target").agg(F.min(F.unix_micros("ts")).alias("first")).collect():
        if r.target in cut and r.first * 1000 < cut[r.target]:
            return False
    return True


# --- findings: what is kept ------------------------------------------------------------------------------------


def _key_of(frame: pd.DataFrame) -> list[tuple]:
    return [series_key(k) for k in frame[SERIES_KEY].itertuples(index=False)]


def kept_findings(stored: pd.DataFrame, touched: set[tuple], groups: list[str], readiness_changed: bool) -> pd.DataFrame:
    """Stored findings an incremental run leaves as they are: of series without new rows, and the closed
    ones of the others (their open ones come again, gone on: analysis.lag.finding_rows' `carried`); of
    groups without new rows; readiness ones when failover_readiness did not change."""
    if stored.empty:
        return stored
    flow = stored["flow"]
    reopened = [k in touched and bool(o) for k, o in zip(_key_of(stored), stored["is_open"])]
    keep = np.where(flow.isin(GROUP_FLOWS), ~stored["group_name"].isin(groups),
                    np.where(flow == "failover-readiness", not readiness_changed, ~np.asarray(reopened, dtype=bool)))
    return stored[keep.astype(bool)]


# --- the watermark: lag_carry's latest commit -------------------------------------------------------------

#: lag_carry's commits record, beside the watermark, the versions replication_lag and replication_findings
#: had after the run: a run that changed neither (no new lag row, the same findings) commits only lag_carry
OUTPUT_VERSIONS = "brokerscope.lag_outputs"


def stored_mark(lakehouse) -> Watermark | None:
    """The lag job's watermark: lag_carry's latest commit's, when replication_lag and replication_findings
    are as that run left them (analysis.watermark.anchored_watermark)."""
    return anchored_watermark(lakehouse, LAG_JOB, "lag_carry", LAG_TABLES, OUTPUT_VERSIONS)


def _write_carry(slh, carries: pd.DataFrame, info: dict) -> None:
    """lag_carry, last of the run's outputs, with the watermark and the versions of the other two."""
    table = pa.Table.from_pandas(contract_frame(carries, LAG_CARRY), preserve_index=False).select(
        LAG_CARRY.column_names).cast(LAG_CARRY.schema, safe=False)
    slh.write_arrow("lag_carry", table, commit_info=anchor_info(slh.lakehouse, info, LAG_TABLES, OUTPUT_VERSIONS))


# --- a tick without replication input ---------------------------------------------------------------------


def lag_quiet(slh, mark: Watermark, versions: dict, carry: pd.DataFrame, inputs: dict, say) -> dict[str, int] | None:
    """A run whose new rows can change nothing but the instances' carries (a fleet without replication:
    ActiveMQ master/slave pairs), without Spark: no new replication_stats row, kafka_offsets and
    failover_readiness unchanged, no group with isr / artemis-replica facts, and no instance with new
    scrapes that carries a series. Then replication_lag and replication_findings stay as they are (a
    full run gives the same rows) and lag_carry takes the instances' last scrapes (read from the files
    the new commits added: `lakehouse.spark.added_actions`) and the input versions — what the
    incremental run would write. None when that does not hold (or a new scrape is not later than a
    stored one: the incremental run then says why and recomputes)."""
    then, lh = inputs["versions"], slh.lakehouse
    if inputs["fact_groups"] or any(versions[t] != then[t] for t in ("kafka_offsets", "failover_readiness")):
        return None
    # None: a commit since removed files, or a table that did not exist then
    added = {t: [] if versions[t] == then[t] else added_actions(lh, t, then[t], versions[t]) for t in SILVER_INPUTS}
    if any(a is None or any(x.get("deletionVector") for x in a) for a in added.values()):
        return None
    try:
        if sum(added_rows(lh, "replication_stats", a) for a in added["replication_stats"]):
            return None
        health = _instances_and_ts(read_added(lh, "collector_health", added["collector_health"], ["instance", "ts"]))
    except (OSError, pa.ArrowException, KeyError):
        return None
    if health.column("instance").null_count:
        return None
    series = set(carry.loc[carry["scope"] == "series", "instance"])
    if series & set(health.column("instance").to_pylist()):
        return None
    stored = {i: _ns(t) for i, t in zip(carry.loc[carry["scope"] == "instance", "instance"], carry.loc[carry["scope"] == "instance", "ts"])}
    spans = health.rename_columns(["instance", "ns"]).group_by("instance").aggregate([("ns", "min"), ("ns", "max")])
    fresh = []
    for inst, first, last in zip(*(spans.column(c).to_pylist() for c in ("instance", "ns_min", "ns_max"))):
        if inst in stored and first <= stored[inst]:
            return None
        fresh.append({"scope": "instance", "instance": inst, "ts": pd.Timestamp(max(last, stored.get(inst, last))), "carry": "{}"})
    say(f"gold replication_lag, replication_findings: no replication rows since the last run (silver up to bronze "
        f"version {mark.input_version}), {len(fresh)} instances' last scrapes carried")
    fresh = pd.DataFrame(fresh, columns=_CARRY_COLUMNS)
    _write_carry(slh, _merged_carry(carry, fresh, versions, _kafka_mark(slh), inputs["fact_groups"]), mark.commit_info())
    return {t: lh.count(t) for t in LAG_TABLES}


def _instances_and_ts(files: list[pa.Table]) -> pa.Table:
    """instance and ts (ns since the epoch, UTC) of collector_health files read by read_added."""
    parts = []
    for t in files:
        ts = t.column("ts")  # UTC instants (a naive type, e.g. INT96: the same numbers)
        parts.append(pa.table({"instance": t.column("instance").cast(pa.string()),
                               "ts": ts.cast(pa.timestamp("ns", ts.type.tz)).cast(pa.int64())}))
    if not parts:
        return pa.table({"instance": pa.array([], pa.string()), "ts": pa.array([], pa.int64())})
    return pa.concat_tables(parts)
