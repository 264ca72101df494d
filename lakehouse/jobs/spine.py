"""The spine job: bronze_jolokia → silver broker_state/destination_stats → gold role_intervals,
failover_events, split_brain_windows.

Each step is a small pure function (DataFrame → DataFrame, or pandas frame → pandas frame for the
per-instance/per-group sequence logic run inside `applyInPandas`), composed by `run_spine`, which
only reads, calls and writes. Reruns overwrite the outputs with the same rows (idempotent).
"""

from __future__ import annotations

import json
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from collectors.base import Observation, collector_health_row
from collectors.packs import PACKS
from lakehouse.tables import FAILOVER_EVENTS, ROLE_INTERVALS, SILVER_FROM_JOLOKIA, contract

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
    for i in range(batch.num_rows):
        target = cols["target"][i]
        kind, group = targets.get(target, (cols["kind"][i], cols["group_name"][i]))
        pack = PACKS.get(kind)
        if table != "collector_health" and (pack is None or table not in pack.tables):
            continue
        resp = cols["response_json"][i]
        obs = Observation(
            ts=cols["ts"][i],
            target=target,
            kind=kind,
            group=group,
            requests=json.loads(cols["request_json"][i]),
            response=None if resp is None else json.loads(resp),
            error=cols["error"][i],
            elapsed_ms=cols["elapsed_ms"][i],
        )
        if table == "collector_health":
            out.append(collector_health_row(obs, cols["obs_key"][i], cols["error_kind"][i]))
        else:
            out.extend(pack.normalize(obs, cols["obs_key"][i]).get(table))
    return pa.RecordBatch.from_pylist(out, schema=c.schema)


def to_silver(bronze: DataFrame, table: str, targets: dict[str, tuple[str, str | None]]) -> DataFrame:
    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield normalize_batch(b, table, targets)

    return bronze.mapInArrow(parse, contract(table).spark_schema())


def fill_derived_groups(state: DataFrame, configured: set[str]) -> DataFrame:
    """Give a row whose group could not be derived the group its instance derived around it.

    Where the group comes from data (an Artemis NodeID, an ActiveMQ master's store), a scrape that
    got no answer, or a waiting ActiveMQ slave, cannot say which group it belongs to and falls
    back to the instance name; without this its instance's intervals would miss those rows.
    The nearest derived group before wins, else the nearest after. Configured groups are kept."""
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
        state.where(F.col("active") & F.coalesce(F.col("store"), F.col("node_id")).isNotNull())
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
    Arrow hands them to Spark unambiguously (the session time zone is UTC)."""
    df = pd.DataFrame(rows, columns=c.column_names)
    for col in c.columns:
        if pa.types.is_timestamp(col.type):
            df[col.name] = pd.to_datetime(df[col.name], utc=True).dt.tz_localize(None)
    return df


# --- silver → gold: role intervals --------------------------------------------------------------------

def _state_codes(pdf: pd.DataFrame) -> np.ndarray:
    """1 = observed active, 0 = observed not active, -1 = no usable answer."""
    active = pdf["active"]
    codes = np.full(len(pdf), -1, dtype=np.int8)
    known = active.notna().to_numpy()
    codes[known] = np.where(active[known].astype(bool).to_numpy(), 1, 0)
    return codes


def instance_intervals(pdf: pd.DataFrame) -> pd.DataFrame:
    """Active intervals of ONE instance from its broker_state rows (any order)."""
    pdf = pdf.sort_values("ts", kind="stable").reset_index(drop=True)
    n = len(pdf)
    if n == 0:
        return typed_frame([], ROLE_INTERVALS)
    ts = pd.to_datetime(pdf["ts"], utc=True).dt.tz_localize(None).to_numpy()  # naive UTC, ns
    state = _state_codes(pdf)
    uptime = pd.to_numeric(pdf.get("uptime_ms"), errors="coerce").to_numpy(dtype="float64")
    ts_ms = ts.astype("datetime64[ms]").astype(np.int64).astype("float64")
    jvm_start = ts_ms - uptime  # NaN where uptime unknown
    kind, group, instance = pdf["kind"].iloc[0], pdf["group_name"].iloc[0], pdf["instance"].iloc[0]

    def label(i: int) -> str:
        return {1: "active", 0: "inactive", -1: "unanswered"}[int(state[i])]

    out: list[dict] = []
    cur: dict | None = None
    last_active = -1
    pending_unknown = 0

    def close(upper_idx: int | None, upper_state: str | None, first_inactive: int | None) -> None:
        assert cur is not None
        cur["end_ts"] = ts[last_active]
        cur["end_upper"] = ts[upper_idx] if upper_idx is not None else None
        cur["end_upper_state"] = upper_state
        cur["first_inactive_after"] = ts[first_inactive] if first_inactive is not None else None
        out.append(cur)

    for i in range(n):
        s = state[i]
        if s == 1:
            if cur is not None:
                restarted = (
                    not np.isnan(jvm_start[i])
                    and not np.isnan(cur["_jvm_start"])
                    and jvm_start[i] - cur["_jvm_start"] > RESTART_TOLERANCE_MS
                )
                if restarted:
                    nxt = last_active + 1
                    close(nxt, "restarted" if nxt == i else label(nxt), None)
                    cur = None
            if cur is None:
                prev = i - 1
                cur = {
                    "kind": kind,
                    "group_name": group,
                    "instance": instance,
                    "start_ts": ts[i],
                    "start_lower": ts[prev] if prev >= 0 else None,
                    "start_lower_state": label(prev) if prev >= 0 else None,
                    "observations": 0,
                    "unanswered_inside": 0,
                    "_jvm_start": jvm_start[i],
                }
            else:
                cur["unanswered_inside"] += pending_unknown
                if np.isnan(cur["_jvm_start"]):
                    cur["_jvm_start"] = jvm_start[i]
            cur["observations"] += 1
            pending_unknown = 0
            last_active = i
        elif s == 0:
            if cur is not None:
                nxt = last_active + 1
                close(nxt, label(nxt), i)
                cur = None
            pending_unknown = 0
        else:
            if cur is not None:
                pending_unknown += 1
    if cur is not None:
        nxt = last_active + 1
        close(nxt if nxt < n else None, label(nxt) if nxt < n else None, None)

    for iv in out:
        iv.pop("_jvm_start", None)
        iv["is_open"] = bool(iv["end_ts"] == ts[-1] and state[-1] == 1)
        iv["interval_id"] = f"{group}/{instance}/{pd.Timestamp(iv['start_ts']).isoformat()}"
    return typed_frame(out, ROLE_INTERVALS)


def role_intervals(broker_state: DataFrame) -> DataFrame:
    cols = ["ts", "kind", "group_name", "instance", "active", "uptime_ms"]
    return (
        broker_state.select(*cols)
        .groupBy("group_name", "instance")
        .applyInPandas(instance_intervals, ROLE_INTERVALS.spark_schema())
    )


# --- gold: failovers -----------------------------------------------------------------------------------

def _secs(a, b) -> float | None:
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return None
    return (pd.Timestamp(b) - pd.Timestamp(a)).total_seconds()


def group_failovers(iv: pd.DataFrame) -> pd.DataFrame:
    """Hand-overs of the active role inside ONE group, from its role intervals."""
    iv = iv.sort_values(["start_ts", "instance"], kind="stable").reset_index(drop=True)
    events: list[dict] = []
    last_move: tuple[str, str] | None = None  # (from, to) of the previous failover
    for k in range(1, len(iv)):
        cur = iv.iloc[k]
        earlier = iv.iloc[:k]
        prev = earlier.loc[earlier["end_ts"].idxmax()]
        overlap = bool(prev["end_ts"] >= cur["start_ts"])
        if overlap and (bool(prev["is_open"]) or prev["end_ts"] >= cur["end_ts"]):
            continue  # both stay active: a split brain, not a hand-over
        if prev["instance"] == cur["instance"]:
            etype = "restart"
        elif last_move == (cur["instance"], prev["instance"]):
            etype = "failback"
        else:
            etype = "failover"
        others = iv[(iv.index != k) & (iv["interval_id"] != prev["interval_id"])]
        covered = bool(((others["start_ts"] < cur["start_ts"]) & (others["end_ts"] > prev["end_ts"])).any())
        outage = not overlap and not covered
        old_unanswered = prev["end_upper"] if prev["end_upper_state"] == "unanswered" else None
        new_inactive = cur["start_lower"] if cur["start_lower_state"] == "inactive" else None
        old_inactive = prev["first_inactive_after"]
        lower = None
        if outage and new_inactive is not None and old_inactive is not None and not pd.isna(old_inactive):
            if old_inactive <= new_inactive:
                lower = _secs(old_inactive, new_inactive)
        events.append(
            {
                "event_id": f"{cur['group_name']}/{cur['interval_id']}",
                "kind": cur["kind"],
                "group_name": cur["group_name"],
                "event_type": etype,
                "from_instance": prev["instance"],
                "to_instance": cur["instance"],
                "old_last_active": prev["end_ts"],
                "old_first_unanswered": old_unanswered,
                "old_first_inactive": old_inactive,
                "new_last_inactive": new_inactive,
                "new_first_active": cur["start_ts"],
                "outage_start": prev["end_ts"] if outage else None,
                "outage_end": cur["start_ts"] if outage else None,
                "outage_upper_s": _secs(prev["end_ts"], cur["start_ts"]) if outage else None,
                "outage_lower_s": lower,
                "detection_s": _secs(old_unanswered, cur["start_ts"]) if old_unanswered is not None else None,
                "overlap": overlap,
            }
        )
        if etype != "restart":
            last_move = (prev["instance"], cur["instance"])
    return typed_frame(events, FAILOVER_EVENTS)


def failover_events(intervals: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Hand-overs per group; for kinds without exclusive roles, per member (outage → `restart`)."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else nonexclusive
    unit = F.when(F.col("kind").isin(nonexclusive), F.col("instance")).otherwise(F.lit(""))
    return (
        intervals.withColumn("_unit", unit)
        .groupBy("group_name", "_unit")
        .applyInPandas(group_failovers, FAILOVER_EVENTS.spark_schema())
    )


# --- gold: split brain ------------------------------------------------------------------------------


def split_brain_windows(intervals: DataFrame, broker_state: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Overlapping active intervals of two instances of one group, with certainty and traffic.

    Traffic = counter growth on each side's *active* observations inside the possible window
    (not what a passive instance loaded from the journal before it took over)."""
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
    )
    pairs = pairs.withColumn(
        "window_id",
        F.substring(
            F.sha2(F.concat_ws("/", "group_name", "instance_a", "instance_b", F.col("certain_start").cast("string")), 256), 1, 32
        ),
    )
    bs = broker_state.select("group_name", "instance", "ts", "reachable", "active", "total_enqueued").alias("s")
    p = pairs.alias("p")
    joined = p.join(
        bs,
        (F.col("s.group_name") == F.col("p.group_name"))
        & ((F.col("s.instance") == F.col("p.instance_a")) | (F.col("s.instance") == F.col("p.instance_b")))
        & (F.col("s.ts") >= F.col("p.possible_start"))
        & (F.col("s.ts") <= F.col("p.possible_end")),
    )
    side_a = F.col("s.instance") == F.col("p.instance_a")
    active = F.coalesce(F.col("s.active"), F.lit(False))
    in_certain = (F.col("s.ts") >= F.col("p.certain_start")) & (F.col("s.ts") <= F.col("p.certain_end"))

    def growth(side):
        counter = F.when(side & active, F.col("s.total_enqueued"))
        return F.max(counter) - F.min(counter)

    stats = joined.groupBy("p.window_id").agg(
        F.sum(F.when(in_certain & ~F.col("s.reachable"), 1).otherwise(0)).alias("unanswered"),
        growth(side_a).alias("enqueued_a"),
        growth(~side_a).alias("enqueued_b"),
    )
    out = pairs.join(stats, "window_id", "left").select(
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
        F.col("enqueued_a").cast("long").alias("enqueued_a"),
        F.col("enqueued_b").cast("long").alias("enqueued_b"),
    )
    return out


# --- the runner ------------------------------------------------------------------------------------------


def run_spine(slh, targets: dict[str, tuple[str, str | None]], progress=None) -> dict[str, int]:
    """Read bronze, compute silver and gold, write them (overwrite = idempotent rerun)."""
    say = progress or (lambda msg: None)
    bronze = slh.read("bronze_jolokia")
    counts: dict[str, int] = {}
    say("bronze → silver " + ", ".join(SILVER_FROM_JOLOKIA))
    configured = {name for name, (_, group) in targets.items() if group}
    for table in SILVER_FROM_JOLOKIA:
        silver = to_silver(bronze, table, targets)
        if table == "broker_state":
            silver = fill_derived_groups(silver, configured)
        counts[table] = slh.write(table, silver)
    state = slh.read("broker_state").cache()
    say("silver → gold role_intervals")
    counts["role_intervals"] = slh.write("role_intervals", role_intervals(state))
    intervals = slh.read("role_intervals").cache()
    say("gold failover_events, split_brain_windows, ha_group_checks")
    counts["failover_events"] = slh.write("failover_events", failover_events(intervals))
    counts["split_brain_windows"] = slh.write("split_brain_windows", split_brain_windows(intervals, state))
    counts["ha_group_checks"] = slh.write("ha_group_checks", ha_group_checks(state))
    state.unpersist()
    intervals.unpersist()
    return counts
