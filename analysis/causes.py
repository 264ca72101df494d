"""Causes: gold gc_findings (P3), zk_findings (P4) and replication_findings joined onto
failover_events and split_brain_windows → gold finding_causes.

Rules (window: the config's `analysis.causes`).

* Effects: a failover or failback (the instance that lost its role: `from_instance`; when:
  `new_first_active`) and a split-brain window (either instance; from `certain_start` to
  `certain_end`). Restarts are not effects: the same JVM came back.
* GC causes: a stop-the-world pause (gc_findings with a pause in ms: over ⅓ of session-ms, over
  connection-ttl, a full GC, a long non-GC safepoint, to-space exhausted, evacuation / concurrent
  mode failure, allocation stall; one per pause, the most telling code) on an instance of the
  effect that began no earlier than the look-back before it, max(`scrapes` × scrape interval,
  pause + `slack`), and not after it (a split brain: not after its end). `likely` when the pause
  was still going on in the hand-over (between the old live's last active observation and the new
  live's first; for a split brain, when it began before the window and ran into its possible
  start: the paused live woke up to find a new one), else `possible`.
* ZooKeeper causes: zk_findings about the effect's group (coordination findings carry the broker
  group) or its ensemble (found through zk_coordination's NodeIDs and broker_state), overlapping
  [effect − look-back, effect end] with look-back max(`scrapes` × scrape interval, `slack`).
  `likely` for the lock and quorum codes (lease vanished or handed over, a GC pause that lost the
  lease, quorum lost, lease count ≠ 1, an active broker behind the sequence), `possible` for
  elections forced by GC and latency spikes.
* Replication causes: a split brain of a group whose live had lost its replica (`replica-sync-gap`)
  before the window began, still so within the look-back: a backup activates beside a serving live
  only once it lost that live — the replication link between them (measured on Artemis 2.40.0 with
  classic replication: the live drops the backup at connection-ttl, the backup votes alone and
  activates 60-120 s after a silent cut; docs/ARTEMIS_LAB.md 23). `likely`. A gap that begins with
  the window (the second live's own, without a backup) is its consequence, not a cause.

Shape: DataFrame → DataFrame joins (`gc_causes`, `zk_causes`) over the small gold tables;
`run_causes` reads, calls and writes the whole table every run (gold on gold: reruns, incremental
runs and `--full` give the same rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lakehouse.tables import FINDING_CAUSES

# pause codes, most telling first: one cause per pause
GC_PAUSE_CODES = ("gc.pause-over-connection-ttl", "gc.pause-over-third-session", "gc.safepoint-not-gc",
                  "gc.to-space-exhausted", "gc.evacuation-failure", "gc.concurrent-mode-failure", "gc.full",
                  "gc.allocation-stall")
ZK_LIKELY = {
    "zk.lease-vanished": "the lock lease vanished",
    "zk.lock-handover": "the lock was handed over",
    "zk.gc-pause-lost-lease": "a GC pause cost the lock lease",
    "zk.quorum-lost": "the ZooKeeper ensemble lost its quorum",
    "zk.lease-count": "the lock had not exactly one lease",
    "zk.active-sequence-behind": "an active broker ran on a superseded activation sequence",
}
ZK_POSSIBLE = {
    "zk.gc-pause-election": "a GC pause on a ZooKeeper server forced a leader election",
    "zk.latency-spike": "ZooKeeper request latency spiked",
    "zk.outstanding-spike": "ZooKeeper requests queued up",
}


@dataclass(frozen=True)
class CauseParams:
    scrape_interval_s: float = 5.0
    scrapes: float = 2.0
    slack_s: float = 30.0

    @property
    def min_lookback_s(self) -> float:
        return self.scrapes * self.scrape_interval_s




def hms(col: str | Column) -> Column:
    """A time column as HH:MM:SS.s (UTC: the session time zone) for messages."""
    return F.date_format(col, "HH:mm:ss.S")


def _id(*cols) -> Column:
    return F.substring(F.sha2(F.concat_ws("/", *cols), 256), 1, 32)


def _plus_s(ts: str | Column, s: Column) -> Column:
    return F.timestamp_micros(F.unix_micros(ts if isinstance(ts, Column) else F.col(ts)) + (s * 1e6).cast("long"))


def effects(failovers: DataFrame, windows: DataFrame) -> DataFrame:
    """One row per (effect, instance concerned): effect_table, effect_id, group_name, instance,
    effect_ts, effect_end, the hand-over span a cause is `likely` in, and the effect in words."""
    f = failovers.where(F.col("event_type").isin("failover", "failback")).select(
        F.lit("failover_events").alias("effect_table"), F.col("event_id").alias("effect_id"), "group_name",
        F.col("from_instance").alias("instance"), F.col("new_first_active").alias("effect_ts"),
        F.col("new_first_active").alias("effect_end"), F.col("old_last_active").alias("likely_from"),
        F.col("new_first_active").alias("likely_to"),
        F.format_string("%s took over at %s", "to_instance", hms("new_first_active")).alias("effect_words"))
    w = windows.select(
        F.lit("split_brain_windows").alias("effect_table"), F.col("window_id").alias("effect_id"), "group_name",
        F.explode(F.array("instance_a", "instance_b")).alias("instance"), F.col("certain_start").alias("effect_ts"),
        F.col("certain_end").alias("effect_end"), F.coalesce("possible_start", "certain_start").alias("likely_from"),
        F.col("certain_start").alias("likely_to"),
        F.format_string("split brain of %s and %s began at %s", "instance_a", "instance_b", hms("certain_start")).alias("effect_words"))
    return f.unionByName(w)


def gc_pauses(gc: DataFrame) -> DataFrame:
    """One row per stop-the-world pause with a finding: its most telling finding."""
    rank = F.array_position(F.array(*map(F.lit, GC_PAUSE_CODES)), F.col("code"))
    by_pause = Window.partitionBy("target", "file_id", "event_seq").orderBy(rank, "finding_id")
    return (gc.where(F.col("code").isin(*GC_PAUSE_CODES) & (F.col("unit") == "ms") & F.col("ts").isNotNull()
                     & F.col("event_seq").isNotNull() & F.col("value").isNotNull())
            .withColumn("_n", F.row_number().over(by_pause)).where("_n = 1").drop("_n"))


def pause_words(event_type: Column, cause: Column) -> Column:
    """'a full GC', 'a young GC', 'a safepoint (RevokeBias)': what the JVM stopped for."""
    return (F.when(event_type == "safepoint", F.format_string("a safepoint (%s)", F.coalesce(cause, F.lit("not GC"))))
            .when(event_type == "allocation-stall", F.lit("an allocation stall"))
            .otherwise(F.format_string("a %s GC", F.regexp_replace(event_type, "-", " "))))


def cause_rows(joined: DataFrame, cause_table: str, cause_id_ref: Column, code: Column, instance: Column,
               cause_ts: Column, confidence: Column, message: Column) -> DataFrame:
    """FINDING_CAUSES rows from effects joined with causes."""
    return joined.select(
        _id("effect_id", cause_id_ref).alias("cause_id"), "effect_table", "effect_id", F.lit(cause_table).alias("cause_table"),
        cause_id_ref.alias("cause_id_ref"), code.alias("cause_code"), "group_name", instance.alias("instance"),
        cause_ts.alias("cause_ts"), F.col("effect_ts"),
        ((F.unix_micros("effect_ts") - F.unix_micros(cause_ts)) / 1e6).alias("lead_s"),
        confidence.alias("confidence"), message.alias("message"))


def gc_causes(eff: DataFrame, gc: DataFrame, params: CauseParams) -> DataFrame:
    p = gc_pauses(gc).select(F.col("finding_id").alias("gc_id"), F.col("target").alias("instance"), F.col("ts").alias("pause_ts"),
                             (F.col("value") / 1000).alias("pause_s"), F.col("code").alias("gc_code"), "event_type", "cause")
    lookback = F.greatest(F.lit(params.min_lookback_s), F.col("pause_s") + F.lit(params.slack_s))
    pause_end = _plus_s("pause_ts", F.col("pause_s"))
    joined = eff.join(p, "instance").where(
        (F.col("pause_ts") >= _plus_s("effect_ts", -lookback)) & (F.col("pause_ts") <= F.col("effect_end")))
    during_handover = (F.col("pause_ts") <= F.col("likely_to")) & (pause_end >= F.col("likely_from"))
    message = F.format_string("%s paused %.1f s in %s at %s; %s", "instance", "pause_s",
                              pause_words(F.col("event_type"), F.col("cause")), hms("pause_ts"), "effect_words")
    return cause_rows(joined, "gc_findings", F.col("gc_id"), F.col("gc_code"), F.col("instance"), F.col("pause_ts"),
                      F.when(during_handover, "likely").otherwise("possible"), message)


def group_ensembles(zk: DataFrame, coordination: DataFrame, state: DataFrame) -> DataFrame:
    """(group_name, ensemble) pairs: coordination findings name both; else a broker's NodeID whose
    lock the ensemble holds."""
    from_findings = zk.where(F.col("ensemble").isNotNull() & (F.col("group_name") != F.col("ensemble"))).select("group_name", "ensemble")
    nodes = coordination.where(F.col("node_id") != "*").select("ensemble", "node_id").distinct()
    from_nodes = state.where(F.col("node_id").isNotNull()).select("node_id", "group_name").distinct().join(nodes, "node_id")
    return from_findings.unionByName(from_nodes.select("group_name", "ensemble")).distinct()


def _words(mapping: dict[str, str], code: Column) -> Column:
    return F.create_map(*chain.from_iterable((F.lit(k), F.lit(v)) for k, v in mapping.items()))[code]


def zk_causes(eff: DataFrame, zk: DataFrame, ensembles: DataFrame, params: CauseParams) -> DataFrame:
    codes = {**ZK_LIKELY, **ZK_POSSIBLE}
    z = zk.where(F.col("code").isin(*codes)).select(
        F.col("finding_id").alias("zk_id"), F.col("code").alias("zk_code"), F.col("group_name").alias("zk_group"),
        "ensemble", F.col("instance").alias("zk_instance"), "node_id", F.col("start_ts").alias("zk_start"), F.col("end_ts").alias("zk_end"))
    groups = eff.select("effect_table", "effect_id", "group_name", "effect_ts", "effect_end", "effect_words").distinct()
    by_group = groups.join(z, F.col("zk_group") == F.col("group_name"))
    by_ensemble = (groups.join(ensembles, "group_name").join(z.drop("ensemble").withColumnRenamed("zk_group", "ensemble"), "ensemble")
                   .withColumn("zk_group", F.col("ensemble")))
    lookback = F.lit(max(params.min_lookback_s, params.slack_s))
    joined = (by_group.unionByName(by_ensemble, allowMissingColumns=True)
              .where((F.col("zk_start") <= F.col("effect_end")) & (F.col("zk_end") >= _plus_s("effect_ts", -lookback)))
              .dropDuplicates(["effect_id", "zk_id"]))
    where = F.coalesce("zk_instance", "node_id", "zk_group")
    message = F.format_string("%s (%s) at %s; %s", _words(codes, F.col("zk_code")), where, hms("zk_start"), "effect_words")
    return cause_rows(joined, "zk_findings", F.col("zk_id"), F.col("zk_code"), F.col("zk_instance"), F.col("zk_start"),
                      F.when(F.col("zk_code").isin(*ZK_LIKELY), "likely").otherwise("possible"), message)


def replication_causes(eff: DataFrame, repl: DataFrame, params: CauseParams) -> DataFrame:
    r = repl.where(F.col("code") == "replica-sync-gap").select(
        F.col("finding_id").alias("repl_id"), F.col("code").alias("repl_code"), F.col("group_name").alias("repl_group"),
        F.col("instance").alias("repl_instance"), F.col("start_ts").alias("repl_start"), F.col("end_ts").alias("repl_end"),
        F.coalesce("detail", F.lit("no other instance seen")).alias("repl_detail"))
    windows = (eff.where(F.col("effect_table") == "split_brain_windows")
               .select("effect_table", "effect_id", "group_name", "effect_ts", "effect_end", "effect_words").distinct())
    lookback = F.lit(max(params.min_lookback_s, params.slack_s))
    joined = windows.join(r, F.col("repl_group") == F.col("group_name")).where(
        (F.col("repl_start") < F.col("effect_ts")) & (F.col("repl_end") >= _plus_s("effect_ts", -lookback)))
    message = F.format_string("%s lost its replica at %s (ReplicaSync false; %s); %s", "repl_instance", hms("repl_start"),
                              "repl_detail", "effect_words")
    return cause_rows(joined, "replication_findings", F.col("repl_id"), F.col("repl_code"), F.col("repl_instance"),
                      F.col("repl_start"), F.lit("likely"), message)


def finding_causes(failovers: DataFrame, windows: DataFrame, gc: DataFrame, zk: DataFrame, ensembles: DataFrame,
                   params: CauseParams, repl: DataFrame | None = None) -> DataFrame:
    eff = effects(failovers, windows)
    out = gc_causes(eff, gc, params).unionByName(zk_causes(eff, zk, ensembles, params))
    if repl is not None:
        out = out.unionByName(replication_causes(eff, repl, params))
    return out.select(*FINDING_CAUSES.column_names)


def run_causes(slh, params: CauseParams, progress=None, commit_info: dict | None = None) -> dict[str, int]:
    """failover_events, split_brain_windows × gc_findings, zk_findings, replication_findings → finding_causes
    (whole table)."""
    (progress or (lambda m: None))("gold finding_causes")
    zk = slh.read("zk_findings")
    ensembles = group_ensembles(zk, slh.read("zk_coordination", columns=["ensemble", "node_id"]),
                                slh.read("broker_state", columns=["node_id", "group_name"]))
    df = finding_causes(slh.read("failover_events"), slh.read("split_brain_windows"), slh.read("gc_findings"), zk,
                        ensembles, params, repl=slh.read("replication_findings"))
    return {"finding_causes": slh.write("finding_causes", df, commit_info=commit_info)}
