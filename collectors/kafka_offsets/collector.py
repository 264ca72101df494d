"""The live Kafka-protocol collector: per replication of `failover_readiness.replications`, one round
of reads (collectors.kafka_offsets.client) every scrape interval, every exchange landed raw in
bronze_kafka and the recording, stamped with the round's tick.

A replication's round runs in a thread (librdkafka calls block); a round still running when the
next tick comes makes that tick skip, so a dead cluster delays only its own replication. Clients
(an AdminClient per cluster, the checkpoint reader) live as long as the collector.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient

from collectors.base import obs_key, parse_ts
from collectors.bronze import (BronzeBuffer, CollectorHost, flush_counted, flush_periodically, land_exchanges, land_or_spill,
                               recording_path)
from collectors.schedule import ticks
from collectors.kafka_offsets.checkpoint import CheckpointError, decode_key
from collectors.kafka_offsets.client import (
    DR,
    PRIMARY,
    SOURCE_CHECKPOINTS,
    SOURCE_COMMITTED,
    SOURCE_LOG_OFFSETS,
    SOURCES,
    CheckpointReader,
    KafkaExchange,
    committed,
    error_kind_of,
    list_groups,
    log_offsets,
    not_asked,
)
from settings import Replication

log = logging.getLogger("brokerscope.collect.kafka")
BRONZE_TABLE = "bronze_kafka"
KIND = "kafka"


def compact_json(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=False)


def bronze_kafka_row(env: dict, group: str | None, collector: str) -> dict:
    """The bronze_kafka row of one kafka.* envelope (live and replay share this, so keys match)."""
    ts = parse_ts(env["ts"])
    req = env["request"][0] if env.get("request") else {}
    resp = env.get("response")
    return {
        "obs_key": obs_key(env["source"], env["target"], ts, env["request"]),
        "ts": ts, "obs_date": ts.strftime("%Y-%m-%d"), "target": env["target"], "kind": KIND, "group_name": group,
        "source": env["source"], "cluster": req.get("cluster"), "call": req.get("call"), "endpoint": req.get("bootstrap"),
        "request_json": compact_json(env["request"]),
        "response_json": None if resp is None else compact_json(resp),
        "error": env.get("error"), "error_kind": error_kind_of(env.get("error")), "elapsed_ms": env.get("elapsed_ms"),
        "collector": collector,
    }


def validate_kafka_envelope(env: dict) -> str | None:
    """Why a kafka.* envelope cannot be ingested (None: fine)."""
    req = env.get("request")
    if not isinstance(req, list) or len(req) != 1 or not isinstance(req[0], dict):
        return f"{env['source']} envelope without a 'request' array of one object"
    if req[0].get("cluster") not in (PRIMARY, DR):
        return f"{env['source']} envelope whose request names no cluster (primary or dr)"
    if env.get("response") is None and not env.get("error"):
        return f"{env['source']} envelope with neither response nor error"
    if env.get("response") is not None and not isinstance(env["response"], dict):
        return f"{env['source']} response must be a JSON object"
    return None


@dataclass
class ReplicationClients:
    """What one replication keeps between rounds."""

    rep: Replication
    primary: AdminClient
    dr: AdminClient
    reader: CheckpointReader
    groups: list[str] = field(default_factory=list)  # the watched groups the last listing found

    @classmethod
    def open(cls, rep: Replication, here) -> "ReplicationClients":
        def admin(cluster: str) -> AdminClient:
            settings = getattr(rep, cluster).client_settings(f"failover_readiness.replications {rep.name} {cluster}", here)
            return AdminClient({**settings, "logger": log})

        dr = rep.dr.client_settings(f"failover_readiness.replications {rep.name} dr", here)
        return cls(rep, admin(PRIMARY), admin(DR), CheckpointReader(rep, dr),
                   [] if rep.groups == "all" else list(rep.groups))

    def close(self) -> None:
        self.reader.close()


def one_round(c: ReplicationClients, timeout: float) -> list[KafkaExchange]:
    """The round's exchanges, in the order of collectors.kafka_offsets.client's module doc."""
    rep = c.rep
    listed = list_groups(rep, c.primary, timeout)
    unknown: dict[str, str] = {}
    if listed.ok:
        names = {g["group"] for g in listed.response["groups"]}
        if rep.groups == "all":
            c.groups = sorted(names)
        else:
            unknown = {g: (f"{rep.name}: group {g} is not a consumer group on {PRIMARY} ({rep.primary.bootstrap}): it "
                           "has no members and no committed offsets there; check the name in `groups`")
                       for g in rep.groups if g not in names}
    groups = c.groups
    out = [listed]
    on_dr = committed(rep, c.dr, DR, groups, timeout)
    out.append(on_dr)
    cp_request = {"call": "checkpoints", "cluster": DR, "bootstrap": rep.dr.bootstrap, "topic": rep.checkpoints}
    checkpoints = c.reader.read(lambda g: g in groups, timeout) if on_dr.ok else \
        not_asked(SOURCE_CHECKPOINTS, cp_request, on_dr.error)
    out.append(checkpoints)
    p_request = {"call": "committed", "cluster": PRIMARY, "bootstrap": rep.primary.bootstrap, "groups": groups}
    on_primary = committed(rep, c.primary, PRIMARY, groups, timeout, unknown) if listed.ok else \
        not_asked(SOURCE_COMMITTED, p_request, listed.error)
    out.append(on_primary)
    partitions = sorted({(t, p) for g in (on_primary.response or {}).get("groups", {}).values() for t, p, _ in g["offsets"]})
    p_logs = {"call": "log_offsets", "cluster": PRIMARY, "bootstrap": rep.primary.bootstrap,
              "partitions": [list(p) for p in partitions], **({"topics": rep.topics} if rep.topics else {})}
    primary_logs = (log_offsets(rep, c.primary, PRIMARY, partitions, timeout, rep.topics) if on_primary.ok else
                    not_asked(SOURCE_LOG_OFFSETS, p_logs, on_primary.error))
    out.append(primary_logs)
    # the topics' partitions as the primary's metadata listed them (those it answered for)
    listed = {(t, p) for t, p, *_ in (primary_logs.response or {}).get("partitions", [])}
    mirrored = sorted({(rep.remote_topic(t), p) for t, p in set(partitions) | listed} | _dr_partitions(rep, on_dr, checkpoints))
    d_logs = {"call": "log_offsets", "cluster": DR, "bootstrap": rep.dr.bootstrap, "partitions": [list(p) for p in mirrored]}
    out.append(log_offsets(rep, c.dr, DR, mirrored, timeout) if on_dr.ok else
               not_asked(SOURCE_LOG_OFFSETS, d_logs, on_dr.error))
    return out


def _dr_partitions(rep: Replication, on_dr: KafkaExchange, checkpoints: KafkaExchange) -> set[tuple[str, int]]:
    """Mirrored partitions DR holds translations for (synced offsets and checkpoints)."""
    found = {(t, p) for g in (on_dr.response or {}).get("groups", {}).values() for t, p, _ in g["offsets"]
             if rep.source_topic(t) is not None}
    for r in (checkpoints.response or {}).get("records", []):
        try:
            key = decode_key(base64.b64decode(r["key_b64"]))
        except (CheckpointError, ValueError):
            continue
        found.add((key.topic, key.partition))
    return found


class KafkaOffsetsCollector:
    """Runs inside `collectors.scraper.Collector.run` for `failover_readiness.replications`."""

    def __init__(self, parent: CollectorHost, replications: list[Replication]) -> None:
        self.parent = parent
        self.config = parent.config
        self.replications = replications
        self._pending = BronzeBuffer(parent.lakehouse, BRONZE_TABLE)
        # secrets are resolved here: a missing environment variable stops the start, naming the key
        self.clients = {r.name: ReplicationClients.open(r, self.config._here) for r in replications}

    def _timeout(self, rep: Replication) -> float:
        # as the other collectors: a call may take up to the interval, never less than 1 s
        return min(rep.timeout, max(self.config.scrape_interval, 1.0))

    async def run(self, t_end: float | None) -> None:
        done = asyncio.Event()
        flusher = asyncio.create_task(flush_periodically(self.flush, done, self.config.flush_interval, self.parent.stats))
        try:
            await asyncio.gather(*(self._loop(self.clients[r.name], t_end) for r in self.replications))
        finally:
            done.set()
            await flusher
            land_or_spill(self.flush, self._pending, self.parent.stats, recording_path(self.parent.recorder),
                          self.parent.spill_dirs())
            for c in self.clients.values():
                await asyncio.to_thread(c.close)

    async def _loop(self, c: ReplicationClients, t_end: float | None) -> None:
        busy: asyncio.Task | None = None
        async for tick in ticks(self.config.scrape_interval, self.parent._stop, t_end):
            if busy is None or busy.done():
                busy = asyncio.create_task(self._round(c, tick))
        if busy is not None:
            await busy

    async def _round(self, c: ReplicationClients, tick: float) -> None:
        rep = c.rep
        try:
            exchanges = await asyncio.to_thread(one_round, c, self._timeout(rep))
        except Exception as e:  # noqa: BLE001 — a bug in one round must not end the replication's loop
            log.error("%s: a failover-readiness round failed (%s: %s); the next tick tries again", rep.name,
                      type(e).__name__, e)
            return
        land_exchanges(self.parent, self._pending, rep.name, tick, exchanges,
                       lambda env: bronze_kafka_row(env, rep.cluster_group, "collect"))

    def flush(self) -> int:
        return flush_counted(self._pending, self.parent.stats)


__all__ = ["BRONZE_TABLE", "KafkaOffsetsCollector", "SOURCES", "bronze_kafka_row", "one_round", "validate_kafka_envelope"]
