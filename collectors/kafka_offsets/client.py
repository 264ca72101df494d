"""Talking to the two clusters of a replication with the Kafka protocol (confluent-kafka, librdkafka):
one round of the failover-readiness reads, each call an exchange that never raises.

A round, in this order (so a group committing meanwhile can only make the re-read estimate high,
never invent a skip: what DR translated is read before what the primary committed):
1. `kafka.groups`      primary  ListConsumerGroups (which groups exist; `groups: all` watches them all)
2. `kafka.committed`   dr       ListConsumerGroupOffsets of the watched groups: the synced offsets
                                MirrorMaker 2 wrote for them (sync.group.offsets)
3. `kafka.checkpoints` dr       the new records of `<source>.checkpoints.internal`, read on from the
                                last round; the response holds the latest record per watched
                                (group, topic, partition), raw, with its timestamp
4. `kafka.committed`   primary  ListConsumerGroupOffsets of the watched groups
5. `kafka.log_offsets` primary  earliest and latest offset of the partitions they committed and of
                                every partition of the replication's `topics` (from the metadata)
6. `kafka.log_offsets` dr       the same for the mirrored partitions

A cluster that does not answer one call is not asked again in that round: its other calls become
error exchanges saying so. Errors name the replication, the cluster and what to do; their class
(refused, timeout, auth, forbidden, unknown-group, unknown-topic, tls, other) is in the text.
"""

from __future__ import annotations

import base64
import logging
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from collectors.jolokia import error_kind_of as jolokia_error_kind_of
from collectors.kafka_offsets.checkpoint import CheckpointError, decode_key
from settings import Replication

SOURCE_GROUPS, SOURCE_COMMITTED, SOURCE_CHECKPOINTS, SOURCE_LOG_OFFSETS = (
    "kafka.groups", "kafka.committed", "kafka.checkpoints", "kafka.log_offsets")
SOURCES = (SOURCE_GROUPS, SOURCE_COMMITTED, SOURCE_CHECKPOINTS, SOURCE_LOG_OFFSETS)
PRIMARY, DR = "primary", "dr"
NOT_ASKED = "not asked in this round"

#: error classes of the texts below (collectors.jolokia's phrases, then these)
KAFKA_KINDS = (
    ("authentication failed", "auth"),
    ("not authorized", "forbidden"),
    ("TLS handshake failed", "tls"),
    ("is not a consumer group on", "unknown-group"),
    ("has no topic", "unknown-topic"),
)

log = logging.getLogger("brokerscope.collect.kafka")
_CONNECT = {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "NETWORK_EXCEPTION", "_NO_OFFSET", "BROKER_NOT_AVAILABLE"}
_TIMEOUT = {"_TIMED_OUT", "REQUEST_TIMED_OUT", "_TIMED_OUT_QUEUE"}
_AUTH = {"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "ILLEGAL_SASL_STATE", "UNSUPPORTED_SASL_MECHANISM"}


def error_kind_of(message: str | None) -> str | None:
    """The class of an error text this module wrote (recordings keep only the text)."""
    return jolokia_error_kind_of(message, KAFKA_KINDS)


@dataclass
class KafkaExchange:
    """One call to one cluster and what came back (the envelope's request, response, error)."""

    source: str
    request: dict
    started: float
    response: Any = None
    error: str | None = None
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def describe(rep: Replication, cluster: str, what: str, exc: BaseException, timeout: float) -> str:
    """An error text naming the replication, the cluster, what was asked, the cause and the fix."""
    where = f"{rep.name}: {what} on {cluster} ({getattr(rep, cluster).bootstrap})"
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError) else None
    name = err.name() if err is not None else type(exc).__name__
    text = err.str() if err is not None else str(exc)
    if isinstance(exc, (FutureTimeout, TimeoutError)) or name in _TIMEOUT:
        return (f"{where}: no answer within the timeout ({timeout:g}s) ({name}: {text}); is the cluster up and "
                "`bootstrap` right? — state unknown, not 'down'")
    if name in _CONNECT:
        return (f"{where}: connection refused or lost ({name}: {text}); no broker answers — is the cluster up and "
                "`bootstrap` right? (state unknown, not 'down')")
    if name in _AUTH:
        return f"{where}: authentication failed ({name}: {text}); check sasl_mechanism, sasl_username and the password"
    if "AUTHORIZATION" in name:
        return (f"{where}: not authorized ({name}: {text}); grant the monitoring user Describe on the groups "
                "and topics, and Read on the checkpoints topic")
    if name == "_SSL" or "SSL" in text[:40]:
        return f"{where}: TLS handshake failed ({name}: {text}); check ssl_ca_file and verify_hostname"
    if name == "UNKNOWN_TOPIC_OR_PART":
        return f"{where}: the cluster has no topic or partition asked for ({name}: {text})"
    if name in ("GROUP_ID_NOT_FOUND", "INVALID_GROUP_ID"):
        return f"{where}: not a consumer group ({name}: {text})"
    return f"{where}: failed ({name}: {text})"


def _started(source: str, request: dict) -> tuple[KafkaExchange, float]:
    return KafkaExchange(source, request, time.time()), time.perf_counter()


def _done(ex: KafkaExchange, t0: float) -> KafkaExchange:
    ex.elapsed_ms = (time.perf_counter() - t0) * 1000.0
    return ex


def _wait(fut: Future, deadline: float) -> Any:
    return fut.result(timeout=max(0.001, deadline - time.monotonic()))


# --- the calls -----------------------------------------------------------------------------------


def list_groups(rep: Replication, admin: AdminClient, timeout: float) -> KafkaExchange:
    ex, t0 = _started(SOURCE_GROUPS, {"call": "groups", "cluster": PRIMARY, "bootstrap": rep.primary.bootstrap})
    try:
        res = _wait(admin.list_consumer_groups(request_timeout=timeout), time.monotonic() + timeout + 1)
        if res.errors:  # a broker that did not answer: the listing is incomplete, so no group can be called unknown
            first = res.errors[0]
            raise first if isinstance(first, Exception) else KafkaException(first)
        ex.response = {"groups": sorted(({"group": g.group_id, "state": _state(g.state),
                                          "simple": bool(g.is_simple_consumer_group)} for g in res.valid),
                                        key=lambda g: g["group"])}
    except Exception as e:  # noqa: BLE001 — any client failure is an error observation
        ex.error = describe(rep, PRIMARY, "listing the consumer groups", e, timeout)
    return _done(ex, t0)


def _state(state: Any) -> str | None:
    return None if state is None else str(getattr(state, "name", state)).lower()


def committed(rep: Replication, admin: AdminClient, cluster: str, groups: list[str], timeout: float,
              unknown: dict[str, str] | None = None) -> KafkaExchange:
    """The groups' committed offsets on `cluster`; per group an error of its own (an unknown group,
    a group the user may not describe). `unknown`: groups known not to exist, with why."""
    ex, t0 = _started(SOURCE_COMMITTED, {"call": "committed", "cluster": cluster,
                                         "bootstrap": getattr(rep, cluster).bootstrap, "groups": groups})
    out: dict[str, dict] = {g: {"offsets": [], "error": why} for g, why in (unknown or {}).items() if g in groups}
    asked = [g for g in groups if g not in out]
    try:
        futs = {g: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=timeout)[g]
                for g in asked}
        deadline = time.monotonic() + timeout + 1
        for g, fut in futs.items():
            try:
                res = _wait(fut, deadline)
                out[g] = {"offsets": sorted([tp.topic, tp.partition, tp.offset] for tp in res.topic_partitions
                                            if tp.offset >= 0 and tp.error is None), "error": None}
            except KafkaException as e:
                err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
                if err is not None and (err.name() in _CONNECT | _TIMEOUT or err.name() in _AUTH):
                    raise  # the cluster, not the group: the whole exchange failed
                out[g] = {"offsets": [], "error": describe(rep, cluster, f"the committed offsets of group {g}", e, timeout)}
        ex.response = {"groups": {g: out[g] for g in groups}}
    except Exception as e:  # noqa: BLE001
        ex.error = describe(rep, cluster, "listing committed offsets", e, timeout)
    return _done(ex, t0)


def log_offsets(rep: Replication, admin: AdminClient, cluster: str, partitions: list[tuple[str, int]],
                timeout: float, topics: list[str] | tuple = ()) -> KafkaExchange:
    """Earliest and latest offset of each (topic, partition), and of every partition of `topics`
    (looked up in the cluster's metadata); a partition or topic the cluster does not have is an
    error of its own (a topic not mirrored yet)."""
    request = {"call": "log_offsets", "cluster": cluster, "bootstrap": getattr(rep, cluster).bootstrap,
               "partitions": [list(p) for p in partitions]}
    ex, t0 = _started(SOURCE_LOG_OFFSETS, {**request, "topics": list(topics)} if topics else request)
    try:
        errors: dict[str, str] = {}
        deadline = time.monotonic() + timeout + 1
        if topics:
            listed, missing = topic_partitions(admin, topics, timeout)
            partitions = sorted(set(partitions) | listed)
            errors.update({t: f"{rep.name}: {cluster} ({getattr(rep, cluster).bootstrap}) has no topic {t}; check "
                              "`topics` of the replication" for t in missing})
        out: dict[tuple[str, int], list] = {p: [None, None] for p in partitions}
        for i, spec in enumerate((OffsetSpec.earliest(), OffsetSpec.latest())):
            if not partitions:
                break
            futs = admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions}, request_timeout=timeout)
            for tp, fut in futs.items():
                try:
                    out[(tp.topic, tp.partition)][i] = _wait(fut, deadline).offset
                except KafkaException as e:
                    err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
                    if err is not None and err.name() in _CONNECT | _TIMEOUT | _AUTH:
                        raise
                    errors[f"{tp.topic}-{tp.partition}"] = describe(rep, cluster, f"the offsets of {tp.topic}-{tp.partition}", e, timeout)
        ex.response = {"partitions": [[t, p, s, e] for (t, p), (s, e) in sorted(out.items()) if s is not None or e is not None],
                       "errors": errors}
    except Exception as e:  # noqa: BLE001
        ex.error = describe(rep, cluster, "listing log offsets", e, timeout)
    return _done(ex, t0)


def topic_partitions(admin: AdminClient, topics, timeout: float) -> tuple[set[tuple[str, int]], list[str]]:
    """(every (topic, partition) of `topics`, the topics the cluster does not have) from its metadata."""
    meta = admin.list_topics(timeout=timeout)
    found, missing = set(), []
    for t in topics:
        md = meta.topics.get(t)
        if md is None or md.error is not None or not md.partitions:
            missing.append(t)
        else:
            found |= {(t, p) for p in md.partitions}
    return found, missing


@dataclass
class CheckpointReader:
    """Reads `<source>.checkpoints.internal` on DR on from where the last round stopped, keeping the
    latest record per (group, topic, partition) of the watched groups (raw bytes, its timestamp and
    offset). The topic is compacted, so the first round reads at most one record per key and a
    little history; later rounds read what MM2 wrote since."""

    rep: Replication
    settings: dict
    consumer: Consumer | None = None
    positions: dict[int, int] = field(default_factory=dict)  # partition → next offset to read
    latest: dict[bytes, dict] = field(default_factory=dict)  # raw key → record
    undecodable: int = 0

    def _open(self) -> Consumer:
        if self.consumer is None:
            # librdkafka wants a group.id; with assign() and no commit none is created on the cluster.
            # fetch.wait.max.ms short: a round waits for the records MM2 wrote, not for a fetch to time out
            self.consumer = Consumer({**self.settings, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                      "enable.partition.eof": False, "group.id": f"brokerscope-unused-{self.rep.name}",
                                      "fetch.wait.max.ms": 50, "logger": log})
        return self.consumer

    def read(self, watched, timeout: float) -> KafkaExchange:
        topic = self.rep.checkpoints
        ex, t0 = _started(SOURCE_CHECKPOINTS, {"call": "checkpoints", "cluster": DR, "bootstrap": self.rep.dr.bootstrap,
                                               "topic": topic})
        deadline = time.monotonic() + timeout
        try:
            c = self._open()
            md = c.list_topics(topic, timeout=timeout).topics.get(topic)
            if md is None or md.error is not None or not md.partitions:
                why = md.error.str() if md is not None and md.error is not None else "unknown topic"
                raise LookupError(f"the DR cluster has no topic {topic} ({why}); check source_alias (MirrorMaker 2's alias of "
                                  "the primary) or set checkpoints_topic — MM2 writes it only with emit.checkpoints.enabled=true")
            ends: dict[int, tuple[int, int]] = {}
            for p in sorted(md.partitions):
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=max(0.1, deadline - time.monotonic()))
                if self.positions.get(p, 0) > hi or self.positions.get(p, 0) < lo:  # recreated or compacted away
                    self.positions[p] = lo
                    self.latest = {k: r for k, r in self.latest.items() if r["partition"] != p}
                ends[p] = (lo, hi)
            c.assign([TopicPartition(topic, p, self.positions.get(p, ends[p][0])) for p in sorted(ends)])
            try:
                read = self._drain(c, ends, deadline)
            finally:
                # no fetch left waiting on the broker between rounds: it would hold up the next
                # round's metadata and watermark requests by fetch.wait.max.ms (500 ms, measured)
                c.unassign()
            caught_up = all(self.positions.get(p, lo) >= hi for p, (lo, hi) in ends.items())
            records = [r for r in self.latest.values() if watched(r["group"])]
            ex.response = {"topic": topic, "read": read, "caught_up": caught_up, "undecodable": self.undecodable,
                           "partitions": {str(p): {"start": lo, "end": hi, "position": self.positions.get(p, lo)}
                                          for p, (lo, hi) in ends.items()},
                           "records": sorted(({k: v for k, v in r.items() if k != "group"} for r in records),
                                             key=lambda r: (r["partition"], r["offset"]))}
        except LookupError as e:
            ex.error = f"{self.rep.name}: reading checkpoints on {DR} ({self.rep.dr.bootstrap}): {e}"
        except Exception as e:  # noqa: BLE001
            ex.error = describe(self.rep, DR, f"reading {topic}", e, timeout)
        return _done(ex, t0)

    def _drain(self, c: Consumer, ends: dict[int, tuple[int, int]], deadline: float) -> int:
        read = 0
        while any(self.positions.get(p, lo) < hi for p, (lo, hi) in ends.items()) and time.monotonic() < deadline:
            for msg in c.consume(500, timeout=min(0.5, max(0.01, deadline - time.monotonic()))):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(msg.error())
                read += 1
                self.positions[msg.partition()] = msg.offset() + 1
                self._keep(msg)
        return read

    def _keep(self, msg) -> None:
        key, value = msg.key() or b"", msg.value()
        try:
            group = decode_key(key).group
        except CheckpointError:
            self.undecodable += 1
            return
        if value is None:  # a tombstone: the checkpoint was deleted
            self.latest.pop(key, None)
            return
        _, ts = msg.timestamp()
        self.latest[key] = {"group": group, "partition": msg.partition(), "offset": msg.offset(),
                            "timestamp_ms": ts if ts and ts > 0 else None,
                            "key_b64": base64.b64encode(key).decode(), "value_b64": base64.b64encode(value).decode()}

    def close(self) -> None:
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception:  # noqa: BLE001 — closing a broken client must not hide the real error
                pass
            self.consumer = None


def not_asked(source: str, request: dict, why: str) -> KafkaExchange:
    """A call skipped because its cluster already failed in this round: an error exchange saying so."""
    return KafkaExchange(source, request, time.time(), error=f"{NOT_ASKED}: {why.removeprefix(NOT_ASKED + ': ')}")
