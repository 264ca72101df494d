"""The Kafka lab's real client (confluent-kafka, librdkafka): topics, producers, consumer groups and
the AdminClient view the drills take as ground truth (end offsets, committed offsets)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from infra.processes import LabError

__all__ = ["admin_client", "broker_ids", "committed_offsets", "consume", "create_topic", "end_offsets", "fail_over", "produce",
           "readiness", "topic_names"]


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 2000})


def broker_ids(bootstrap: str, timeout: float = 2.0) -> set[int] | None:
    """The ids of the brokers the cluster's metadata lists now; None when nothing answers."""
    try:
        md = admin_client(bootstrap).list_topics(timeout=timeout)
    except KafkaException:
        return None
    return set(md.brokers)


def topic_names(bootstrap: str, timeout: float = 2.0) -> set[str] | None:
    try:
        return set(admin_client(bootstrap).list_topics(timeout=timeout).topics)
    except KafkaException:
        return None


def create_topic(bootstrap: str, topic: str, partitions: int, replication: int, config: dict[str, str] | None = None,
                 timeout: float = 30) -> None:
    """Create ``topic`` (an existing one is fine) and wait until every partition has a leader."""
    admin = admin_client(bootstrap)  # held: a collected client ends its pending requests (_DESTROY)
    fut = admin.create_topics([NewTopic(topic, partitions, replication, config=config or {})])[topic]
    try:
        fut.result(timeout)
    except KafkaException as e:
        if e.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise LabError(f"could not create topic {topic} on {bootstrap}: {e}") from e
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    raise LabError(f"topic {topic} on {bootstrap}: not every partition has a leader after {timeout:.0f}s")


def produce(bootstrap: str, topic: str, count: int, *, acks: str = "all", prefix: str = "m", timeout: float = 30) -> int:
    """``count`` messages, keyed round-robin over partitions; returns how many the brokers acknowledged."""
    acked = 0

    def done(err, msg) -> None:
        nonlocal acked
        if err is None:
            acked += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "enable.idempotence": acks == "all",
                  "message.timeout.ms": int(timeout * 1000)})
    for i in range(count):
        p.produce(topic, value=f"{prefix}{i}".encode(), key=str(i).encode(), on_delivery=done)
        p.poll(0)
    p.flush(timeout)
    return acked


def consume(bootstrap: str, topic: str, group: str, count: int, timeout: float = 30,
            reset: str = "earliest") -> list[tuple[int, int]]:
    """Read up to ``count`` messages in consumer group ``group`` and commit them (synchronously);
    returns the (partition, offset) of each message read."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": reset,
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    seen: list[tuple[int, int]] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        pending = False
        while len(seen) < count and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            seen.append((msg.partition(), msg.offset()))
            pending = True
            if len(seen) % 10 == 0:
                c.commit(asynchronous=False)
                pending = False
        if pending:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return seen


def end_offsets(bootstrap: str, topic: str, partitions: Iterable[int], timeout: float = 10) -> dict[int, int]:
    """The log-end offset of each partition (AdminClient ListOffsets, latest)."""
    req = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
    admin = admin_client(bootstrap)
    futs = admin.list_offsets(req, request_timeout=timeout)
    return {tp.partition: f.result(timeout).offset for tp, f in futs.items()}


def committed_offsets(bootstrap: str, group: str, timeout: float = 10) -> dict[tuple[str, int], int]:
    """The group's committed offset per (topic, partition) (AdminClient ListConsumerGroupOffsets)."""
    admin = admin_client(bootstrap)
    fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout)[group]
    res = fut.result(timeout)
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}


def readiness(primary: str, dr: str, group: str, topic: str, mirrored: str) -> list[dict]:
    """Failover readiness of ``group`` now, from both clusters' AdminClients: per partition the offset
    committed on the primary, the translated one MirrorMaker 2 wrote for the group on DR
    (sync.group.offsets), and what the group would re-read (translated below committed) or skip
    (above) if it moved to DR now; with no translated offset both are None: the group would start
    where its ``auto.offset.reset`` says (earliest: re-read all, latest: skip all). Offsets of ``topic`` and ``mirrored`` are taken to line up one to
    one (the lab's mirrored topic starts empty with the source; no transactions)."""
    committed = {p: o for (t, p), o in committed_offsets(primary, group).items() if t == topic}
    translated = {p: o for (t, p), o in committed_offsets(dr, group).items() if t == mirrored}
    out = []
    for p in sorted(set(committed) | set(translated)):
        c, t = committed.get(p), translated.get(p)
        out.append({"partition": p, "committed": c, "translated": t,
                    "re_read": max(0, c - t) if c is not None and t is not None else None,
                    "skipped": max(0, t - c) if c is not None and t is not None else None})
    return out


def fail_over(dr: str, group: str, mirrored: str, timeout: float = 20) -> dict[int, list[int]]:
    """What ``group`` really reads on DR, from its translated offsets to the end of ``mirrored``:
    the offsets per partition (nothing committed: a dry run that leaves the translation in place)."""
    c = Consumer({"bootstrap.servers": dr, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "enable.partition.eof": True, "session.timeout.ms": 6000})
    seen: dict[int, list[int]] = {}
    try:
        c.subscribe([mirrored])
        ends: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    ends.add(msg.partition())
                    if len(ends) == len(c.assignment()) and c.assignment():
                        break
                continue
            seen.setdefault(msg.partition(), []).append(msg.offset())
    finally:
        c.close()
    return seen
