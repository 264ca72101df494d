"""Failover readiness: bronze_kafka → silver kafka_offsets → gold failover_readiness (what each consumer
group would re-read or skip if it failed over to DR now, per round and partition).

Small pure steps: row parsing is `collectors.kafka_offsets.parse` (mapInArrow); the per-replication
join of a round's facts is `replication_readiness` (pandas, run by `applyInPandas`; tested on tiny
frames); `run_readiness` reads, calls, writes (overwrite: reruns give the same tables), and not at
all when bronze_kafka, the config and this code are as at its last run.

Per round (the replication's tick: the answers stamped within half a scrape interval of the
round's first) and (group, partition of the primary's topic):
- committed: the group's offset on the primary, known when the primary's `committed` call answered
  for the group; translated: per `translation` — `synced` the group's offset on DR (MM2's
  sync.group.offsets, what a consumer that fails over really starts from), `checkpoint` the latest
  checkpoint's downstream offset (what RemoteClusterUtils.translateOffsets gives), `auto` the synced
  one where there is one, else the checkpoint — only where DR answered that it holds none (a rewind
  leaves a synced offset above the commit while the checkpoint follows: drill kafka-consumer-rewind).
  Known as none when the calls it needs answered and
  hold nothing for the partition; unknown when one of them did not answer.
- re_read = min(committed, dr_log_end) − translated (≥ 0): the messages DR holds now that the group
  already read (commits DR does not hold yet are said in `detail`: read again if they are still
  mirrored, never if the primary is lost); skipped = translated − committed (≥ 0). The mirrored
  topic's offsets are taken to line up with the source's (the mirror started with the topic, no
  transactions or compaction in between) — as MM2's own translation does within offset.lag.max.
- no translation: auto.offset.reset decides — earliest: re-read from DR's earliest offset
  (min(committed, dr_log_end) − dr_log_start); latest: start at DR's end (skipped = dr_log_end −
  committed); unknown: both null.
- status (first that applies): unknown (the primary or DR did not answer: nothing assumed) |
  not-committed | lossy (skipped > 0) | no-translation | stale (the latest checkpoint is older than
  `stale_after` and for an older commit than the group's: the translation has stopped following the
  group — MM2's checkpoint connector or its replication is down, or MM2 holds no offset sync near
  the group's position: MM2 writes a checkpoint only when a translation moves, and its offset-sync
  store keeps syncs sparser the further they lie behind the log end, so the translation of a group
  lagging 150–250 messages stood still for up to 9 s in the lab while MM2 ran) | ready.
- A (group, topic, partition) seen in any round is carried in every later round of its
  replication, so a round in which nothing answered shows it `unknown`, never absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame

from analysis.runs import contract_frame, utc_ns
from analysis.watermark import Watermark, fingerprint, pinned_read, read_watermark
from analysis.zookeeper import round_ids
from collectors.kafka_offsets.parse import offset_facts
from lakehouse.tables import FAILOVER_READINESS, KAFKA_OFFSETS
from settings import Replication

READINESS_JOB = "readiness"
READINESS_TABLES = ("kafka_offsets", "failover_readiness")
PRIMARY, DR = "primary", "dr"
STATUSES = ("ready", "stale", "no-translation", "lossy", "not-committed", "unknown")


@dataclass(frozen=True)
class ReadinessParams:
    """What the job needs from the config (analysis/params.py builds it)."""

    replications: dict[str, Replication] = field(default_factory=dict)
    stale_after_s: float = 60.0
    scrape_interval_s: float = 0.0  # the collector's tick; 0: a round is the answers of one stamp


# --- bronze → silver -------------------------------------------------------------------------------------


def offsets_silver(bronze: DataFrame, params: ReadinessParams) -> DataFrame:
    """bronze_kafka → kafka_offsets facts (rows of replications no longer configured keep their stored group)."""
    groups = {name: rep.cluster_group for name, rep in params.replications.items()}

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                out.extend(offset_facts(row, row["target"], groups.get(row["target"], row["group_name"] or row["target"])))
            yield pa.RecordBatch.from_pylist(out, schema=KAFKA_OFFSETS.schema)

    return bronze.mapInArrow(parse, KAFKA_OFFSETS.spark_schema())


# --- silver → gold (one replication) ---------------------------------------------------------------------


def _int(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


class Round:
    """The facts of one round of one replication, looked up by what the rules ask."""

    def __init__(self, facts: pd.DataFrame, rep: Replication) -> None:
        self.answers: dict[tuple, tuple[bool, str | None]] = {}
        self.committed: dict[tuple, int] = {}
        self.synced: dict[tuple, int] = {}
        self.checkpoints: dict[tuple, tuple] = {}
        self.logs: dict[tuple, tuple] = {}
        for r in facts.itertuples(index=False):
            where = (r.cluster, r.call)
            if r.fact == "answer":
                what = (*where, r.consumer_group if isinstance(r.consumer_group, str) else None,
                        r.topic if isinstance(r.topic, str) else None)
                self.answers[what] = (bool(r.answered), r.error if isinstance(r.error, str) else None)
            elif r.fact == "committed":
                topic = r.topic if r.cluster == PRIMARY else rep.source_topic(r.topic)
                if topic is not None:
                    (self.committed if r.cluster == PRIMARY else self.synced)[(r.consumer_group, topic, int(r.partition))] = int(r.offset)
            elif r.fact == "checkpoint":
                topic = rep.source_topic(r.topic)
                if topic is not None:
                    self.checkpoints[(r.consumer_group, topic, int(r.partition))] = (
                        int(r.offset), _int(r.upstream_offset), r.checkpoint_ts)
            elif r.fact == "log":
                topic = r.topic if r.cluster == PRIMARY else rep.source_topic(r.topic)
                if topic is not None:
                    self.logs[(r.cluster, topic, int(r.partition))] = (_int(r.log_start), _int(r.offset))

    def answered(self, cluster: str, call: str, group: str | None = None) -> tuple[bool, str | None]:
        """Did `call` on `cluster` answer (for `group`)? (False, why) otherwise; not in the round: unknown."""
        ok, why = self.answers.get((cluster, call, None, None), (False, f"no {call} answer from {cluster} in this round"))
        if ok and group is not None:
            ok_g, why_g = self.answers.get((cluster, call, group, None), (True, None))
            return ok_g, why_g
        return ok, why


def replication_rounds(facts: pd.DataFrame, rep: Replication, scrape_interval_s: float) -> list[tuple[object, Round]]:
    """(tick, Round) of one replication's facts in time order: a round is the answers within half a
    scrape interval of its first, whatever their stamps."""
    facts = facts.sort_values("ts", kind="stable")
    tick = round_ids(utc_ns(facts["ts"]), None, np.timedelta64(int(scrape_interval_s * 1e9), "ns"))
    return [(f["ts"].iloc[0], Round(f, rep)) for _, f in facts.groupby(tick, sort=True)]


def translation(rnd: Round, rep: Replication, key: tuple) -> tuple[bool, int | None, str | None, str | None]:
    """(known, translated offset, where from, why unknown) of one (group, topic, partition)."""
    group = key[0]
    synced_ok, synced_why = rnd.answered(DR, "committed", group)
    cp_ok, cp_why = rnd.answered(DR, "checkpoints")
    synced = rnd.synced.get(key) if synced_ok else None
    cp = rnd.checkpoints.get(key, (None,))[0] if cp_ok else None
    if rep.translation in ("auto", "synced") and synced is not None:
        return True, synced, "synced-offset", None
    # auto: the checkpoint only where DR said it holds no synced offset — with DR's answer missing a
    # synced offset may be there, and the group would start from it (a rewind leaves it above the commit)
    if cp is not None and (rep.translation == "checkpoint" or (rep.translation == "auto" and synced_ok)):
        return True, cp, "checkpoint", None
    need = {"auto": [(synced_ok, synced_why), (cp_ok, cp_why)], "synced": [(synced_ok, synced_why)],
            "checkpoint": [(cp_ok, cp_why)]}[rep.translation]
    missing = [why for ok, why in need if not ok]
    return (not missing), None, None, (missing[0] if missing else None)


def readiness_row(ts, rep: Replication, key: tuple, rnd: Round, stale_after_s: float) -> dict:
    """The failover_readiness row of one (group, topic, partition) in one round (module doc)."""
    group, topic, partition = key
    p_ok, p_why = rnd.answered(PRIMARY, "committed", group)
    committed = rnd.committed.get(key) if p_ok else None
    t_known, translated, source, t_why = translation(rnd, rep, key)
    cp_ok, _ = rnd.answered(DR, "checkpoints")
    cp_offset, cp_upstream, cp_ts = rnd.checkpoints.get(key, (None, None, None)) if cp_ok else (None, None, None)
    age = None if cp_ts is None or pd.isna(cp_ts) else max(0.0, (pd.Timestamp(ts) - pd.Timestamp(cp_ts)).total_seconds())
    synced_ok, _ = rnd.answered(DR, "committed", group)
    dr_start, dr_end = rnd.logs.get((DR, topic, partition), (None, None)) if rnd.answered(DR, "log_offsets")[0] else (None, None)
    p_end = rnd.logs.get((PRIMARY, topic, partition), (None, None))[1] if rnd.answered(PRIMARY, "log_offsets")[0] else None
    row = {
        "ts": ts, "replication": rep.name, "group_name": rep.cluster_group, "source_cluster": rep.source_alias,
        "target_cluster": rep.dr_alias, "consumer_group": group, "topic": topic, "remote_topic": rep.remote_topic(topic),
        "partition": partition, "committed": committed, "primary_log_end": p_end, "translated": translated,
        "translated_from": source, "synced_offset": rnd.synced.get(key) if synced_ok else None,
        "checkpoint_offset": cp_offset, "checkpoint_upstream": cp_upstream, "checkpoint_ts": cp_ts, "checkpoint_age_s": age,
        "dr_log_start": dr_start, "dr_log_end": dr_end, "re_read": None, "skipped": None,
    }
    status, detail = _judge(row, p_ok, p_why, t_known, t_why, rep, stale_after_s)
    row.update(status=status, detail=detail)
    return row


def _judge(row: dict, p_ok: bool, p_why: str | None, t_known: bool, t_why: str | None, rep: Replication,
           stale_after_s: float) -> tuple[str, str]:
    """status and detail; sets re_read / skipped where they are known."""
    c, t, end = row["committed"], row["translated"], row["dr_log_end"]
    if not p_ok or not t_known:
        return "unknown", f"{'primary' if not p_ok else 'DR'} did not answer: {p_why if not p_ok else t_why}"
    if c is None:
        return "not-committed", ("DR holds a translation the group has no commit for on the primary (reset or deleted there)"
                                 if t is not None else "the group has no commit for this partition on the primary now")
    reach = c if end is None else min(c, end)  # what DR holds of what the group already read
    note = "" if end is None or end >= c else (f"; {c - end} message(s) it committed are not on DR yet (read again if "
                                               "they are still mirrored, never if the primary is lost)")
    if end is None:
        note = "; DR's log end unknown: commits not mirrored yet are counted as re-read"
    if t is None:
        reset, start = rep.auto_offset_reset, row["dr_log_start"]
        if reset == "earliest" and start is not None:
            row["re_read"], row["skipped"] = max(0, reach - start), max(0, start - c)
            return ("lossy" if row["skipped"] else "no-translation",
                    f"no translated offset: auto.offset.reset=earliest starts at DR's earliest offset {start}{note}")
        if reset == "latest" and end is not None:
            row["re_read"], row["skipped"] = 0, max(0, end - c)
            return ("lossy" if row["skipped"] else "no-translation",
                    f"no translated offset: auto.offset.reset=latest starts at DR's latest offset {end}")
        return "no-translation", ("no translated offset: where the group starts on DR depends on its auto.offset.reset "
                                  f"({'not configured' if reset == 'unknown' else f'{reset}, but DR gave no log offsets'})")
    row["re_read"], row["skipped"] = max(0, reach - t), max(0, t - c)
    if row["skipped"]:
        cp, up = row["checkpoint_offset"], row["checkpoint_upstream"]
        # after a rewind MM2 checkpoints the new commit but never moves a synced offset back (drill
        # kafka-consumer-rewind): the checkpoint is then the way back to the commit
        back = ("" if row["translated_from"] != "synced-offset" or cp is None or up != c or cp > c else
                f"; MM2's latest checkpoint translates this commit to {cp}: setting the group's offset on DR to it "
                f"re-reads {max(0, reach - cp)} instead")
        return "lossy", (f"the translated offset {t} ({row['translated_from']}) is above the commit {c}: "
                         f"{t - c} message(s) would be skipped{back}")
    age, upstream = row["checkpoint_age_s"], row["checkpoint_upstream"]
    if age is not None and age > stale_after_s and (upstream is None or upstream < c):
        return "stale", (f"the last checkpoint is {age:.0f} s old and translates commit {upstream}, the group has committed "
                         f"{c}: the translation has stopped following the group (MirrorMaker 2 down, or no offset sync "
                         f"near its position){note}")
    if age is None:
        return "ready", f"translated from the {row['translated_from']}; no checkpoint seen, so its age is unknown{note}"
    return "ready", f"translated from the {row['translated_from']}{note}"


def replication_readiness(facts: pd.DataFrame, *, params: ReadinessParams) -> pd.DataFrame:
    """failover_readiness rows of ONE replication from all its kafka_offsets facts (module doc)."""
    if facts.empty or facts["replication"].iloc[0] not in params.replications:
        return contract_frame([], FAILOVER_READINESS)
    rep = params.replications[facts["replication"].iloc[0]]
    out, first_seen = [], {}
    for ts, rnd in replication_rounds(facts, rep, params.scrape_interval_s):
        for key in (*rnd.committed, *rnd.synced, *rnd.checkpoints):
            first_seen.setdefault(key, ts)
        out += [readiness_row(ts, rep, key, rnd, params.stale_after_s) for key in sorted(first_seen)]
    df = contract_frame(out, FAILOVER_READINESS)
    df["obs_date"] = pd.DatetimeIndex(pd.to_datetime(df["ts"], utc=True)).strftime("%Y-%m-%d")
    return df


def readiness(facts: DataFrame, params: ReadinessParams) -> DataFrame:
    def per_replication(pdf: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark inspects it (a partial warns)
        return replication_readiness(pdf, params=params)

    return facts.groupBy("replication").applyInPandas(per_replication, FAILOVER_READINESS.spark_schema())


# --- the runner -----------------------------------------------------------------------------------------


def run_readiness(slh, params: ReadinessParams, progress=None, full: bool = False) -> dict[str, int]:
    """bronze_kafka → kafka_offsets → failover_readiness (whole; skipped when nothing changed)."""
    say = progress or (lambda m: None)
    bronze, version = pinned_read(slh, "bronze_kafka")
    mark = Watermark(READINESS_JOB, version,
                     fingerprint(READINESS_JOB, repr(params), sources=[__file__, offset_facts.__code__.co_filename]))
    if not full and read_watermark(slh.lakehouse, READINESS_JOB, READINESS_TABLES) == mark:
        say("silver kafka_offsets, gold failover_readiness: bronze_kafka unchanged since the last run")
        return {t: slh.lakehouse.count(t) for t in READINESS_TABLES}
    info = mark.commit_info()
    say("bronze_kafka → silver kafka_offsets")
    counts = {"kafka_offsets": slh.write("kafka_offsets", offsets_silver(bronze, params), commit_info=info)}
    say("silver → gold failover_readiness")
    counts["failover_readiness"] = slh.write("failover_readiness", readiness(slh.read("kafka_offsets"), params),
                                             commit_info=info)
    return counts


__all__ = ["ReadinessParams", "Round", "readiness", "readiness_row", "replication_readiness", "replication_rounds",
           "run_readiness", "STATUSES"]
