"""Cross-cluster lag from both clusters' own log end offsets (flow `mirror-offsets`): silver
kafka_offsets → replication_lag rows, per replication of `failover_readiness.replications`.

Why beside MirrorMaker 2's own figure: MM2 reports lag only through its replication consumer's
`records-lag`, which does not exist while MM2 is down or starting (26.5 s blind in the lab's
restart drill) and counts against the log end of its last fetch, so over a slow link it says 0
while DR falls 140–152 messages behind (docs/KAFKA_LAB.md fact 7). The brokers' log end offsets,
read by the Kafka-protocol collector every round, have neither limit.

Per round (analysis.readiness.replication_rounds) and partition of the primary whose mirror DR
holds: lag_messages = max(0, primary end − DR end), position = DR end. The collector reads the
primary's offsets before DR's, so DR may have moved on in between: the figure is a lower bound of
the lag when DR was read (never more than observed). The mirrored topic's offsets are taken to
line up with the source's (the mirror started with the topic, no transactions or compaction in
between), as analysis.readiness does. Both ends are the brokers' real offsets, so lag in time is
Kafka Lag Exporter's interpolation over the primary's (log end, time) points and every Burrow
rule applies (`status_basis` `log-offsets`): STALL here means DR's copy stood still while the
primary held more — replication stopped, not an idle topic (an idle one is caught up: OK).
A round in which either cluster's log offsets did not answer is an unanswered scrape of the
replication: nothing new is observed (analysis.lag's rules for a missed scrape).
"""

from __future__ import annotations

import pandas as pd

from analysis.readiness import DR, PRIMARY, replication_rounds
from settings import Replication

MIRROR_FLOW = "mirror-offsets"
KIND = "kafka"
_LINK = ("MirrorMaker 2 is not copying this partition: check that its workers run, the MirrorSourceConnector's tasks "
         "(Connect REST /connectors/<name>/status) and the link from DR to the primary; until it copies, a failover "
         "loses what DR lacks")
#: Burrow status → (what, advice) in words for DR's copy (analysis.lag's STATUS_ADVICE speaks of a consumer)
MIRROR_STATUS_ADVICE = {
    "WARN": ("DR's copy fell further behind at every observation of the window (Burrow WARN)",
             "MirrorMaker 2 copies less than the producers write: add tasks (tasks.max), check the link's bandwidth "
             "and latency, and DR's brokers"),
    "STOP": ("it stopped being observed with lag outstanding (Burrow STOP)",
             "the partition left the collector's view (topic deleted or no longer consumed by a watched group)"),
    "STALL": ("DR's copy did not grow over the window while the primary held more (Burrow STALL on the brokers' log "
              "end offsets)", _LINK),
    "REWIND": ("DR's log end went back and did not recover (Burrow REWIND): the mirrored topic was recreated or "
               "truncated", "check the mirrored topic on DR; offsets no longer line up with the primary's"),
}


def mirror_observations(facts: pd.DataFrame, rep: Replication, scrape_interval_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(observations, rounds) of ONE replication from its kafka_offsets facts: the observations in
    analysis.lag's shape plus `position`; rounds as (ts, instance, answered) like collector_health."""
    obs, rounds = [], []
    for ts, rnd in replication_rounds(facts, rep, scrape_interval_s):
        answered = rnd.answered(PRIMARY, "log_offsets")[0] and rnd.answered(DR, "log_offsets")[0]
        rounds.append({"ts": ts, "instance": rep.name, "answered": answered})
        if not answered:
            continue
        for (cluster, topic, partition), (_, primary_end) in sorted(rnd.logs.items()):
            dr_end = rnd.logs.get((DR, topic, partition), (None, None))[1]
            if cluster != PRIMARY or primary_end is None or dr_end is None:
                continue
            obs.append({
                "ts": ts, "kind": KIND, "group_name": rep.cluster_group, "instance": rep.name, "flow": MIRROR_FLOW,
                "source_cluster": rep.source_alias, "target_cluster": rep.dr_alias, "topic": topic,
                "partition": partition, "client": None, "lag_messages": float(max(0, primary_end - dr_end)),
                "latency_ms": None, "throughput_per_s": None, "position": float(dr_end),
            })
    columns = ["ts", "kind", "group_name", "instance", "flow", "source_cluster", "target_cluster", "topic", "partition",
               "client", "lag_messages", "latency_ms", "throughput_per_s", "position"]
    return pd.DataFrame(obs, columns=columns), pd.DataFrame(rounds, columns=["ts", "instance", "answered"])


__all__ = ["MIRROR_FLOW", "MIRROR_STATUS_ADVICE", "mirror_observations"]
