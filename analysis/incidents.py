"""Incidents: every gold finding → gold incidents and incident_evidence.

Rules (gap: the config's `analysis.incidents`).

* Evidence: failover_events (failover, failback: error; restart: warn), split_brain_windows
  (critical), and the findings of risk_findings, stuck_messages, replication_findings,
  gc_findings (those with a time), zk_findings, ha_group_checks — all but `info` ones — plus
  finding_causes rows. Outages are critical whatever their table says: split brain, ZooKeeper quorum
  lost, a Kafka cluster without controller or with offline partitions.
* Cluster: the finding's HA group (a GC finding's target group, else the target; a ZooKeeper
  ensemble finding's ensemble). A GC or ZooKeeper finding that is the cause of an HA event joins the
  event's incident (its cause row too), wherever it would fall by itself.
* Grouping: per cluster, findings in start order; one incident while the next starts within `gap`
  (5 min) of the latest end so far. Standing conditions (configuration facts over the whole history:
  quorum-too-small, shutdown-on-failure-off, ha_group_checks, zk.ensemble-too-small) would glue
  every event of their cluster into one incident, so each is an incident of its own.
* `incident_id` = hash of the cluster and its first finding (earliest start, then table and id): the
  same on every rerun, and for incremental and `--full` runs (their gold is identical).
* Severity: the worst finding's; status `open` while a finding is still open (`is_open`, a
  split-brain window without a possible end). The narrative tells each finding in time order, a
  cause sentence replacing the bare GC/ZooKeeper finding it explains; advice is de-duplicated.

Shape: `evidence` normalizes each table to one frame (DataFrame → DataFrame); its rows (gold on
gold: thousands) come to the driver, where `assign_incidents` (per cluster) and `summarize_incidents`
(all incidents in one pass) make both tables (`incident_tables`). `run_incidents` recomputes them
from the gold findings every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis.causes import hms as _hms
from analysis.runs import contract_frame, fmt_ts, stable_id
from lakehouse.tables import INCIDENT_EVIDENCE, INCIDENTS

SEVERITY_ORDER = ("critical", "error", "warn", "info")
CRITICAL_CODES = ("split-brain", "zk.quorum-lost", "no-controller", "offline-partitions")
STANDING_CODES = ("quorum-too-small", "shutdown-on-failure-off", "group-members-disagree", "identity-in-several-groups",
                  "zk.ensemble-too-small")
FINDING_TABLES = ("risk_findings", "stuck_messages", "replication_findings")
SPLIT_BRAIN_ADVICE = ("stop one of the two live brokers now, then reconcile the messages each side accepted; find why "
                      "both could activate (lock, quorum, check-for-live-server)")

EVIDENCE_COLUMNS = [*INCIDENT_EVIDENCE.column_names[1:], "cluster", "kind", "advice", "is_open", "headline", "attach_to",
                    "confidence"]
EVIDENCE_SCHEMA = (
    "source_table string, source_id string, code string, severity string, group_name string, instance string, "
    "start_ts timestamp, end_ts timestamp, message string, cluster string, kind string, advice string, is_open boolean, "
    "headline string, attach_to string, confidence string"
)
ASSIGNED_SCHEMA = "incident_id string, " + EVIDENCE_SCHEMA


def _secs(col: str | Column) -> Column:
    return F.format_string("%.1f s", col)


def _row(source_table: str, source_id, code, severity, group, instance, start, end, message, cluster, kind, advice,
         is_open, headline) -> list[Column]:
    """An evidence row's columns (attach_to and confidence: only for causes)."""
    lit = lambda v: v if isinstance(v, Column) else F.lit(v)  # noqa: E731
    cols = [F.lit(source_table), source_id, code, severity, group, instance, start, end, message, cluster, kind, advice,
            is_open, headline, F.lit(None).cast("string"), F.lit(None).cast("string")]
    return [lit(c).alias(n) for c, n in zip(cols, EVIDENCE_COLUMNS)]


def _severity(code: Column, severity: Column) -> Column:
    return F.when(code.isin(*CRITICAL_CODES), "critical").otherwise(severity)


def failover_evidence(events: DataFrame) -> DataFrame:
    outage = F.when(F.col("outage_upper_s").isNotNull(), F.format_string(" (outage ≤ %.1f s)", "outage_upper_s")).otherwise("")
    moved = F.format_string("%s %s → %s", "event_type", "from_instance", "to_instance")
    silent = F.when(F.col("old_first_unanswered").isNotNull(), F.format_string(
        " (stopped answering %s)", _hms("old_first_unanswered"))).otherwise("")
    restart = F.col("event_type") == "restart"
    message = F.when(restart, F.format_string(
        "%s active again after a restart: last seen active %s%s, again from %s%s", "to_instance", _hms("old_last_active"),
        silent, _hms("new_first_active"), outage)).otherwise(F.format_string(
            "%s: %s last seen active %s%s, %s first seen active %s%s", moved, "from_instance", _hms("old_last_active"),
            silent, "to_instance", _hms("new_first_active"), outage))
    advice = F.when(restart, F.format_string("find out why %s restarted (its log, GC log, host)", "to_instance")).otherwise(
        F.format_string("find out why %s lost the active role (its log, GC log, host) and check that it is back as "
                        "standby", "from_instance"))
    return events.select(*_row(
        "failover_events", F.col("event_id"), F.col("event_type"), F.when(restart, "warn").otherwise("error"),
        F.col("group_name"), F.concat_ws(",", "from_instance", "to_instance"), F.col("old_last_active"),
        F.col("new_first_active"), message, F.col("group_name"), F.col("kind"), advice, F.lit(False),
        F.format_string("%s in %s%s", moved, "group_name", outage)))


def split_brain_evidence(windows: DataFrame) -> DataFrame:
    upper = F.when(F.col("possible_end").isNotNull() & F.col("possible_start").isNotNull(), F.format_string(
        ", at most %.1f s", (F.unix_micros("possible_end") - F.unix_micros("possible_start")) / 1e6)).otherwise("")
    traffic = F.when(F.col("enqueued_a").isNotNull() | F.col("enqueued_b").isNotNull(), F.format_string(
        "; messages accepted: %s %d, %s %d", "instance_a", F.coalesce("enqueued_a", F.lit(0)), "instance_b",
        F.coalesce("enqueued_b", F.lit(0)))).otherwise("")
    message = F.format_string("SPLIT BRAIN (%s): %s and %s both active from %s to %s (%s observed%s)%s", "certainty",
                              "instance_a", "instance_b", _hms("certain_start"), _hms("certain_end"), _secs("duration_s"),
                              upper, traffic)
    return windows.select(*_row(
        "split_brain_windows", F.col("window_id"), F.lit("split-brain"), F.lit("critical"), F.col("group_name"),
        F.concat_ws(",", "instance_a", "instance_b"), F.col("certain_start"), F.col("certain_end"), message,
        F.col("group_name"), F.col("kind"), F.lit(SPLIT_BRAIN_ADVICE), F.col("possible_end").isNull(),
        F.format_string("split brain in %s (%s, %s)", "group_name", "certainty", _secs("duration_s"))))


def finding_evidence(df: DataFrame, table: str) -> DataFrame:
    """risk_findings, stuck_messages, replication_findings: the shared finding shape."""
    return df.where(F.col("severity") != "info").select(*_row(
        table, F.col("finding_id"), F.col("code"), _severity(F.col("code"), F.col("severity")), F.col("group_name"),
        F.col("instance"), F.col("start_ts"), F.col("end_ts"), F.col("message"), F.col("group_name"), F.col("kind"),
        F.col("advice"), F.col("is_open"), F.format_string("%s in %s", "code", "group_name")))


def gc_evidence(gc: DataFrame, kinds: dict[str, str]) -> DataFrame:
    ends = F.when(F.col("unit") == "ms", F.timestamp_micros(F.unix_micros("ts") + (F.col("value") * 1000).cast("long"))).otherwise(F.col("ts"))
    cluster = F.coalesce("group_name", "target")
    kind = F.coalesce(F.create_map(*[F.lit(x) for kv in kinds.items() for x in kv])[F.col("target")], F.lit("unknown")) \
        if kinds else F.lit("unknown")
    return gc.where((F.col("severity") != "info") & F.col("ts").isNotNull()).select(*_row(
        "gc_findings", F.col("finding_id"), F.col("code"), F.col("severity"), cluster, F.col("target"), F.col("ts"), ends,
        F.format_string("%s: %s", "target", "message"), cluster, kind, F.col("advice"), F.lit(False),
        F.format_string("%s on %s", "code", "target")))


def zk_evidence(zk: DataFrame, kinds: dict[str, str]) -> DataFrame:
    ensemble_level = F.col("ensemble").isNotNull() & (F.col("group_name") == F.col("ensemble"))
    broker_kind = F.coalesce(F.create_map(*[F.lit(x) for kv in kinds.items() for x in kv])[F.col("instance")], F.lit("artemis")) \
        if kinds else F.lit("artemis")
    return zk.where(F.col("severity") != "info").select(*_row(
        "zk_findings", F.col("finding_id"), F.col("code"), _severity(F.col("code"), F.col("severity")), F.col("group_name"),
        F.col("instance"), F.col("start_ts"), F.col("end_ts"), F.col("message"), F.col("group_name"),
        F.when(ensemble_level, "zookeeper").otherwise(broker_kind), F.col("advice"), F.lit(False),
        # an outage nobody took over has no failover to title it: say what did not happen
        F.when(F.col("code") == "zk.backup-not-taking-over", F.format_string(
            "no failover in %s: backup %s did not take the free lock (seen waiting %.1f s)", "group_name", "instance",
            "value")).otherwise(F.format_string("%s in %s", "code", "group_name"))))


def group_check_evidence(checks: DataFrame) -> DataFrame:
    return checks.select(*_row(
        "ha_group_checks", F.col("check_id"), F.col("check"), F.lit("error"), F.col("group_name"), F.col("instances"),
        F.col("first_seen"), F.col("last_seen"), F.col("message"), F.col("group_name"), F.col("kind"), F.col("advice"),
        F.lit(False), F.format_string("%s in %s", "check", "group_name")))


def cause_evidence(causes: DataFrame) -> DataFrame:
    row = _row("finding_causes", F.col("cause_id"), F.col("cause_code"), F.lit("info"), F.col("group_name"), F.col("instance"),
               F.col("cause_ts"), F.col("cause_ts"), F.format_string("%s cause: %s", "confidence", "message"),
               F.col("group_name"), F.lit(None).cast("string"), F.lit(None).cast("string"), F.lit(False),
               F.split(F.col("message"), ";").getItem(0))  # the cause in words: 'amq-a paused 21.3 s in a full GC at …'
    return causes.select(*row[:-2], F.col("effect_id").alias("attach_to"), F.col("confidence"))


def attach_causes(ev: DataFrame, causes: DataFrame) -> DataFrame:
    """The GC / ZooKeeper findings that caused an HA event join its incident: its cluster, attached
    to the event (the first event by id when a finding caused several). So do the other GC findings
    of the same pause (same target and start: one cause row names the most telling of them)."""
    link = causes.groupBy(F.col("cause_id_ref").alias("source_id")).agg(
        F.min(F.struct("effect_id", "group_name")).alias("_to"))
    linked = ev.join(link, "source_id", "left")
    is_gc = F.col("source_table") == "gc_findings"
    pauses = (linked.where(is_gc & F.col("_to").isNotNull()).groupBy("instance", "start_ts")
              .agg(F.min("_to").alias("_pause_to")))
    linked = linked.join(pauses, ["instance", "start_ts"], "left").withColumn(
        "_to", F.coalesce(F.col("_to"), F.when(is_gc, F.col("_pause_to"))))
    return (linked.withColumn("cluster", F.coalesce(F.col("_to.group_name"), F.col("cluster")))
            .withColumn("attach_to", F.coalesce(F.col("attach_to"), F.col("_to.effect_id")))
            .select(*EVIDENCE_COLUMNS))


def evidence(tables: dict[str, DataFrame], kinds: dict[str, str] | None = None) -> DataFrame:
    """Every finding of the gold `tables` (name → DataFrame; missing ones are empty) as evidence rows."""
    kinds = kinds or {}
    parts = [failover_evidence(tables["failover_events"]), split_brain_evidence(tables["split_brain_windows"]),
             *(finding_evidence(tables[t], t) for t in FINDING_TABLES), gc_evidence(tables["gc_findings"], kinds),
             zk_evidence(tables["zk_findings"], kinds), group_check_evidence(tables["ha_group_checks"]),
             cause_evidence(tables["finding_causes"])]
    ev = parts[0]
    for p in parts[1:]:
        ev = ev.unionByName(p)
    return attach_causes(ev, tables["finding_causes"])


# --- per cluster: which findings form one incident ----------------------------------------------------------


def assign_incidents(ev: pd.DataFrame, gap_s: float) -> pd.DataFrame:
    """ONE cluster's evidence rows with their incident_id (module doc: grouping, standing conditions,
    attached causes)."""
    if ev.empty:
        return ev.assign(incident_id=pd.Series(dtype=object))[["incident_id", *EVIDENCE_COLUMNS]]
    ev = ev.sort_values(["start_ts", "source_table", "source_id"], kind="stable").reset_index(drop=True)
    cluster = ev["cluster"].iloc[0]
    standing = ev["code"].isin(STANDING_CODES).to_numpy()
    attached = ev["attach_to"].notna().to_numpy() & ~standing
    swept = ~standing & ~attached
    ids = np.full(len(ev), None, dtype=object)
    start = ev["start_ts"].to_numpy(dtype="datetime64[ns]")
    end = np.maximum(ev["end_ts"].to_numpy(dtype="datetime64[ns]"), start)
    gap = np.timedelta64(int(gap_s * 1e9), "ns")
    latest = None
    for i in np.flatnonzero(swept):
        if latest is None or start[i] > latest + gap:
            current = stable_id(cluster, ev.at[i, "source_table"], ev.at[i, "source_id"])
            latest = end[i]
        else:
            latest = max(latest, end[i])
        ids[i] = current
    for i in np.flatnonzero(standing):
        ids[i] = stable_id(cluster, ev.at[i, "source_table"], ev.at[i, "source_id"])
    of_source = dict(zip(ev["source_id"][swept], ids[swept]))
    for i in np.flatnonzero(attached):
        ids[i] = of_source.get(ev.at[i, "attach_to"]) or stable_id(cluster, ev.at[i, "source_table"], ev.at[i, "source_id"])
    return ev.assign(incident_id=ids)[["incident_id", *EVIDENCE_COLUMNS]]


# --- per incident: its row -------------------------------------------------------------------------------------


def worst(severities) -> str:
    return min(severities, key=lambda s: SEVERITY_ORDER.index(s) if s in SEVERITY_ORDER else len(SEVERITY_ORDER))


def _distinct(values) -> list[str]:
    """Non-empty values in first-seen order, each once."""
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and v))


HA_EVENT_TABLES = ("split_brain_windows", "failover_events")


def narrative(ev: list[dict]) -> str:
    """One line per finding in time order (`ev`: one incident's rows, sorted); a GC/ZooKeeper finding
    a cause row explains (it is attached to the event) is told by that row."""
    return "\n".join(f"{fmt_ts(r['start_ts'])[11:-1]}  {r['message']}" for r in ev
                     if r["source_table"] == "finding_causes" or not isinstance(r["attach_to"], str))


def title(ev: list[dict], severity: str) -> str:
    """The worst finding's headline — among equals the HA event (what happened: a failover the GC
    pauses around it explain), then the earliest — with a likely cause when there is one (`ev`: one
    incident's rows, sorted by start)."""
    events = [r for r in ev if r["source_table"] != "finding_causes" and r["severity"] == severity]
    events.sort(key=lambda r: r["source_table"] not in HA_EVENT_TABLES)  # stable: the earliest first among equals
    head = (events or ev)[0]["headline"]
    likely = [r for r in ev if r["source_table"] == "finding_causes" and r["confidence"] == "likely"]
    if likely:
        head += f" — likely cause: {likely[0]['headline']}"
    return head


def _known(values) -> list:
    return [v for v in values if v is not None and not pd.isna(v)]


def incident_row(ev: list[dict]) -> dict:
    """The incidents row of ONE incident's evidence rows (sorted by start, table, id)."""
    severity = worst([r["severity"] for r in ev])
    kinds = [r["kind"] for r in ev if isinstance(r["kind"], str) and r["kind"] != "unknown"]
    start = min(_known(r["start_ts"] for r in ev))
    end = max(_known([*(r["start_ts"] for r in ev), *(r["end_ts"] for r in ev)]))
    instances = sorted({i for r in ev if isinstance(r["instance"], str) for i in r["instance"].split(",") if i})
    codes = [r["code"] for r in ev]
    return {
        "incident_id": ev[0]["incident_id"],
        "cluster": ev[0]["cluster"],
        "kind": max(sorted(set(kinds)), key=kinds.count) if kinds else "unknown",
        "severity": severity,
        "status": "open" if any(bool(v) for v in _known(r["is_open"] for r in ev)) else "closed",
        "start_ts": start,
        "end_ts": end,
        "duration_s": (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds(),
        "title": title(ev, severity),
        "narrative": narrative(ev),
        "advice": "\n".join(_distinct(r["advice"] for r in ev)),
        "instances": ",".join(instances) or None,
        "codes": ",".join(sorted(set(codes))),
        "finding_count": len(ev),
        "has_split_brain": any(r["source_table"] == "split_brain_windows" for r in ev),
        "has_failover": any(r["source_table"] == "failover_events" and r["code"] in ("failover", "failback") for r in ev),
    }


def summarize_incidents(assigned: pd.DataFrame) -> pd.DataFrame:
    """The incidents rows of evidence rows with their incident_id: one sort and one pass over plain
    rows for every incident at once (a pandas frame per incident cost ~8 ms each: 4 s at 500 groups)."""
    ev = assigned.sort_values(["incident_id", "start_ts", "source_table", "source_id"], kind="stable")
    rows = ev.to_dict("records")
    out, first = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i]["incident_id"] != rows[first]["incident_id"]:
            out.append(incident_row(rows[first:i]))
            first = i
    return contract_frame(out, INCIDENTS)


def summarize_incident(ev: pd.DataFrame) -> pd.DataFrame:
    """The incidents row of ONE incident's evidence rows."""
    return summarize_incidents(ev)


# --- the wiring: on the driver -----------------------------------------------------------------------------------


def incident_tables(found: DataFrame, gap_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(incidents, incident_evidence) of the evidence rows (`evidence`), computed on the driver:
    gold findings number in the thousands (~1,000 on a day of 500 groups), and one pandas pass over
    them costs less than Spark's per-cluster and per-incident Python calls (~10 s at 500 groups)."""
    ev = found.toPandas()
    parts = [assign_incidents(p, gap_s) for _, p in ev.groupby("cluster", sort=False)]
    assigned = pd.concat(parts, ignore_index=True) if parts else assign_incidents(ev, gap_s)
    return summarize_incidents(assigned), contract_frame(assigned[INCIDENT_EVIDENCE.column_names], INCIDENT_EVIDENCE)


SOURCE_TABLES = ("failover_events", "split_brain_windows", *FINDING_TABLES, "gc_findings", "zk_findings", "ha_group_checks",
                 "finding_causes")


@dataclass(frozen=True)
class IncidentParams:
    """The incident job's parameters (analysis/params.py): findings closer than `gap_s` are one
    incident; `kinds`: target → kind from the config (GC findings name only their target)."""

    gap_s: float = 300.0
    kinds: tuple[tuple[str, str], ...] = ()


def run_incidents(slh, params: IncidentParams, progress=None, commit_info: dict | None = None) -> dict[str, int]:
    """All gold findings → incidents, incident_evidence (whole tables every run)."""
    (progress or (lambda m: None))("gold incidents, incident_evidence")
    found, rows = incident_tables(evidence({t: slh.read(t) for t in SOURCE_TABLES}, dict(params.kinds)), params.gap_s)
    spark = slh.spark
    return {"incidents": slh.write("incidents", spark.createDataFrame(found, INCIDENTS.spark_schema()), commit_info=commit_info),
            "incident_evidence": slh.write("incident_evidence", spark.createDataFrame(rows, INCIDENT_EVIDENCE.spark_schema()),
                                           commit_info=commit_info)}
