"""Kafka pack (CATALOG §3): brokers and controllers, MirrorMaker 2, Confluent Replicator, consumer lag.

One request set serves every `kind: kafka` target; each JVM answers what it has and the rest comes
back as per-item 404s, which are normal facts (a broker has no MirrorMaker 2 MBeans, a Connect
worker no ReplicaManager).

Brokers (§3.1, Yammer metrics: gauges expose `Value`, meters `Count` and `OneMinuteRate`):
- `broker_state`: one row per broker observation. The role is the controller role:
  `kafka.controller:type=KafkaController,name=ActiveControllerCount` = 1 → role `controller`,
  `active=true`; 0 → role `broker`, `active=false`. The generic gold jobs therefore treat the
  controller like a live role: a controller move is a failover in the cluster's group, two brokers
  both reporting 1 at once is a split-brain window (§8.8: cluster-wide sum ≠ 1 = no controller /
  split). ZooKeeper-mode and KRaft controllers expose the same name. If the count cannot be
  read, `active` is null (indeterminate). Kafka reports no uptime here, so a broker restart is
  not seen by the role-interval job (only the unanswered scrapes around it).
- `replication_stats` flow `isr`: the broker's ReplicaManager gauges and ISR shrink/expand rates,
  `lag_max_messages` = `ReplicaFetcherManager MaxLag(clientId=Replica)`, and the controller gauges.

**Declare each Kafka cluster as one group** (`group:` = the cluster name on every broker target):
the MBeans in §3 carry no cluster id, so the group cannot be derived from data. Without it every
broker is its own group and controller moves are not seen as failovers. A JVM that answers without
any broker MBean (a Connect worker, a consumer application) gets no `broker_state` row; one that
does not answer at all gets the usual indeterminate row, as it may be a broker.

Cross-cluster flows, one `replication_stats` row per topic-partition:
- `mirrormaker2` (§3.3) from `kafka.connect.mirror:type=MirrorSourceConnector,…`: `topic` is the
  *remote* topic as MM2 tags it. The `source` tag exists only since KIP-911 (≈ Kafka 3.5); older
  workers have `target,topic,partition` only, so the read is a property-list pattern and
  `source_cluster` is null there. MM2 itself reports no lag in messages; `lag_messages` comes from
  its replication consumer (below).
  `latency_ms` / `record_age_ms` are the window averages (`-avg`) where reported, else the
  latest value; `latency_max_ms` = `replication-latency-ms-max`; `throughput_per_s` = `record-rate`.
- `mirrormaker2-checkpoint` from `…type=MirrorCheckpointConnector,source,target,group,topic,partition`:
  `client` = consumer group, `latency_ms` = `checkpoint-latency-ms` (offset replication latency).
- `replicator` (§3.4) from `confluent.replicator:type=confluent-replicator-task-metrics,…`:
  `lag_messages` = `…-message-lag`, `latency_ms` = `…-latency`, `throughput_per_s` = `…-throughput`,
  clusters from the string attributes `confluent-replicator-source-cluster` /
  `-destination-cluster`, `topic` = the origin topic (MBean key), `client` = `<connector>/<task>`.
  UNVERIFIED in CATALOG, so both plausible forms are accepted: the four ObjectName keys
  (topic from `confluent-replicator-topic-name` or `confluent-replicator-topic`, partition from
  `confluent-replicator-task-topic-partition` or `confluent-replicator-partition`, its value a
  number or `<topic>-<n>`), the `-throughput` attribute name (null when absent), and the latency
  unit (taken as milliseconds).

Consumers (§3.2, `kafka.consumer:type=consumer-fetch-manager-metrics`): flow `consumer`,
`client` = client-id; per partition `lag_messages` = `records-lag`, `lag_max_messages` =
`records-lag-max`; the client-level MBean gives `lag_max_messages` with null topic/partition.
Lag is position-based, not commit-based.

Checked on real Kafka 4.3.1 brokers and a MirrorMaker 2 worker through the Jolokia 2.6.0 agent
(infra.kafka_lab; the answers are tests/fixtures/kafka/real_kafka_4.3.1.json.gz):
- Kafka 4 clients register every per-topic consumer metric twice: with the topic as named and with
  its dots replaced by underscores (`topic=lab.orders` and `topic=lab_orders`, the older form kept
  beside KIP-1109's). Only the named form is kept when both are there, so a partition is one row.
- MirrorMaker 2's own consumers and Connect's log readers report lag on the worker's internal
  topics (`mm2-offsets.<alias>.internal` with 25 partitions, `…status…`, `…configs…`,
  `mm2-offset-syncs.<alias>.internal`); those rows are dropped (names ending `.internal`,
  `-internal` or starting `__`, as `DefaultReplicationPolicy.isInternalTopic` has it).
- MirrorMaker 2's replication consumer (client-id `<source>-><target>|MirrorSourceConnector-<n>|
  replication-consumer`) reports `records-lag` per *source* topic-partition: the messages on the
  source not yet fetched by MirrorMaker. That is the cross-cluster lag in messages the
  `mirrormaker2` row lacked; it becomes that row's `lag_messages` (remote topic
  `<source>.<topic>`, DefaultReplicationPolicy, or the same name, IdentityReplicationPolicy).
"""

from __future__ import annotations

from typing import Any, Callable

from collectors.base import (MBeanRead, Observation, Rows, as_float, as_int, base_row, iter_mbean_reads,
                             unanswered_state_row)
from collectors.objectname import ObjectName

SERVER = "kafka.server"
CONTROLLER = "kafka.controller"
CONSUMER = "kafka.consumer"
MIRROR = "kafka.connect.mirror"
REPLICATOR = "confluent.replicator"

FETCH_MANAGER = "consumer-fetch-manager-metrics"
REPLICATOR_TYPE = "confluent-replicator-task-metrics"
REPLICATOR_KEY_PREFIX = "confluent-replicator-"
REPLICATOR_TP = "confluent-replicator-task-topic-partition-"

MM2_SOURCE_ATTRIBUTES = [
    "record-count",
    "record-rate",
    "record-age-ms",
    "record-age-ms-avg",
    "record-age-ms-max",
    "replication-latency-ms",
    "replication-latency-ms-avg",
    "replication-latency-ms-max",
]
MM2_CHECKPOINT_ATTRIBUTES = ["checkpoint-latency-ms", "checkpoint-latency-ms-avg", "checkpoint-latency-ms-max"]
REPLICATOR_ATTRIBUTES = [
    REPLICATOR_TP + "message-lag",
    REPLICATOR_TP + "latency",
    REPLICATOR_TP + "throughput",
    REPLICATOR_TP + "byte-throughput",
    "confluent-replicator-source-cluster",
    "confluent-replicator-destination-cluster",
    "confluent-replicator-destination-topic-name",
]

# Broker-side Yammer metrics, keyed "<type>.<name>" once read.
_BROKER_TYPES = frozenset({"ReplicaManager", "ReplicaFetcherManager", "KafkaController"})
ACTIVE_CONTROLLER_COUNT = "KafkaController.ActiveControllerCount"


def _read(mbean: str, attribute: str | list[str], ignore_errors: bool = False) -> dict:
    """A read; `ignore_errors` makes one failing attribute a value marker instead of failing the item."""
    req = {"type": "read", "mbean": mbean, "attribute": attribute}
    if ignore_errors:
        req["config"] = {"ignoreErrors": True}
    return req


def window_avg(attrs: dict, metric: str) -> float | None:
    """`<metric>-avg` where the client reports it, else the latest `<metric>` value."""
    avg = as_float(attrs.get(f"{metric}-avg"))
    return avg if avg is not None else as_float(attrs.get(metric))


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


# --- brokers -----------------------------------------------------------------------------------


def _broker_metric_key(m: ObjectName) -> str | None:
    """"<type>.<name>" for the broker MBeans this pack reads (MaxLag only for clientId=Replica)."""
    if m.domain not in (SERVER, CONTROLLER) or m.get("type") not in _BROKER_TYPES or m.get("name") is None:
        return None
    if m.get("type") == "ReplicaFetcherManager" and m.get("clientId") != "Replica":
        return None
    return f"{m['type']}.{m['name']}"


def broker_metrics(reads: list[MBeanRead]) -> tuple[dict[str, dict], list[str]]:
    """Attributes of the broker metrics answered, by "<type>.<name>", and what failed reading them."""
    found: dict[str, dict] = {}
    errors: list[str] = []
    for r in reads:
        if r.mbean.domain not in (SERVER, CONTROLLER):
            continue
        if r.item_error:
            errors.append(r.item_error)
            continue
        key = _broker_metric_key(r.mbean)
        if key is None:
            continue
        found.setdefault(key, {}).update(r.attributes)
        errors.extend(f"{key}.{attr}: {err}" for attr, err in r.errors.items())
    return found, errors


def _value(metrics: dict[str, dict], key: str, attr: str = "Value") -> Any:
    return metrics.get(key, {}).get(attr)


def broker_state_row(obs: Observation, obs_key: str, metrics: dict[str, dict], errors: list[str]) -> dict:
    count = as_int(_value(metrics, ACTIVE_CONTROLLER_COUNT))
    active = None if count is None else count > 0
    return base_row(obs, obs_key) | {
        "reachable": True,
        "active": active,
        "role": "controller" if active else "broker",
        "error": ("; ".join(errors) or None) if active is None else None,
        "scrape_ms": obs.elapsed_ms,
    }


def isr_facts(metrics: dict[str, dict]) -> dict:
    def gauge(name: str) -> int | None:
        return as_int(_value(metrics, name))

    return {
        "flow": "isr",
        "under_replicated": gauge("ReplicaManager.UnderReplicatedPartitions"),
        "under_min_isr": gauge("ReplicaManager.UnderMinIsrPartitionCount"),
        "at_min_isr": gauge("ReplicaManager.AtMinIsrPartitionCount"),
        "offline_partitions": gauge("KafkaController.OfflinePartitionsCount"),
        "active_controllers": gauge(ACTIVE_CONTROLLER_COUNT),
        "isr_shrinks_per_s": as_float(_value(metrics, "ReplicaManager.IsrShrinksPerSec", "OneMinuteRate")),
        "isr_expands_per_s": as_float(_value(metrics, "ReplicaManager.IsrExpandsPerSec", "OneMinuteRate")),
        "lag_max_messages": as_float(_value(metrics, "ReplicaFetcherManager.MaxLag")),
    }


# --- per topic-partition flows: each reader returns the flow's columns, or None if not its MBean --


def _keys(m: ObjectName) -> set[str]:
    return {k for k, _ in m.props}


def _partition(value: str | None) -> int | None:
    """A partition number written as `<n>` or `<topic>-<n>`."""
    if value is None:
        return None
    n = as_int(value)
    return n if n is not None else as_int(value.rsplit("-", 1)[-1])


def mm2_source_facts(read: MBeanRead) -> dict | None:
    m = read.mbean
    if not m.matches(MIRROR, type="MirrorSourceConnector", target="*", topic="*", partition="*"):
        return None
    a = read.attributes
    return {
        "flow": "mirrormaker2",
        "source_cluster": m.get("source"),
        "target_cluster": m["target"],
        "topic": m["topic"],
        "partition": as_int(m["partition"]),
        "latency_ms": window_avg(a, "replication-latency-ms"),
        "latency_max_ms": as_float(a.get("replication-latency-ms-max")),
        "record_age_ms": window_avg(a, "record-age-ms"),
        "throughput_per_s": as_float(a.get("record-rate")),
    }


def mm2_checkpoint_facts(read: MBeanRead) -> dict | None:
    m = read.mbean
    if not m.matches(MIRROR, type="MirrorCheckpointConnector", group="*", topic="*", partition="*"):
        return None
    a = read.attributes
    return {
        "flow": "mirrormaker2-checkpoint",
        "source_cluster": m.get("source"),
        "target_cluster": m.get("target"),
        "topic": m["topic"],
        "partition": as_int(m["partition"]),
        "client": m["group"],
        "latency_ms": window_avg(a, "checkpoint-latency-ms"),
        "latency_max_ms": as_float(a.get("checkpoint-latency-ms-max")),
    }


def _replicator_key(m: ObjectName, *suffixes: str) -> str | None:
    """The first of `confluent-replicator-<suffix>` keys present (key names are UNVERIFIED)."""
    for s in suffixes:
        v = m.get(REPLICATOR_KEY_PREFIX + s)
        if v is not None:
            return v
    return None


def replicator_facts(read: MBeanRead) -> dict | None:
    m = read.mbean
    if m.domain != REPLICATOR or m.get("type") != REPLICATOR_TYPE:
        return None
    topic = _replicator_key(m, "topic-name", "topic")
    partition = _partition(_replicator_key(m, "task-topic-partition", "partition"))
    if topic is None or partition is None:
        return None  # a task-level MBean, not one topic-partition
    connector, task = _replicator_key(m, "name"), _replicator_key(m, "task")
    a = read.attributes
    return {
        "flow": "replicator",
        "source_cluster": _text(a.get("confluent-replicator-source-cluster")),
        "target_cluster": _text(a.get("confluent-replicator-destination-cluster")),
        "topic": topic,
        "partition": partition,
        "client": "/".join(p for p in (connector, task) if p is not None) or None,
        "lag_messages": as_float(a.get(REPLICATOR_TP + "message-lag")),
        "latency_ms": as_float(a.get(REPLICATOR_TP + "latency")),
        "throughput_per_s": as_float(a.get(REPLICATOR_TP + "throughput")),
    }


def consumer_facts(read: MBeanRead) -> dict | None:
    m = read.mbean
    if m.domain != CONSUMER or m.get("type") != FETCH_MANAGER:
        return None
    a = read.attributes
    if _keys(m) == {"type", "client-id"}:
        return {"flow": "consumer", "client": m["client-id"], "lag_max_messages": as_float(a.get("records-lag-max"))}
    if _keys(m) == {"type", "client-id", "topic", "partition"}:
        return {
            "flow": "consumer",
            "client": m["client-id"],
            "topic": m["topic"],
            "partition": as_int(m["partition"]),
            "lag_messages": as_float(a.get("records-lag")),
            "lag_max_messages": as_float(a.get("records-lag-max")),
        }
    return None


def _internal_topic(topic: str | None) -> bool:
    """MirrorMaker 2 / Connect / Kafka internal topics (either form of the name)."""
    return topic is not None and (topic.endswith((".internal", "-internal", "_internal")) or topic.startswith("__"))


def _mm2_replication(client: str | None) -> tuple[str, str] | None:
    """(source, target) from a MirrorMaker 2 replication consumer's client-id, else None."""
    if not client or not client.endswith("|replication-consumer") or "|MirrorSourceConnector-" not in client:
        return None
    flow = client.split("|", 1)[0]
    source, arrow, target = flow.partition("->")
    return (source, target) if arrow and source and target else None


def tidy_flows(facts: list[dict]) -> list[dict]:
    """The flow rows of one scrape as the real brokers' answers need them (see the module doc):
    the underscore twin of a consumer topic dropped, internal topics dropped, MirrorMaker 2's
    replication-consumer lag moved onto its `mirrormaker2` rows."""
    consumers = [f for f in facts if f["flow"] == "consumer"]
    # (client, partition, the dots-to-underscores form) of every topic whose name has a dot
    dotted = {(f["client"], f.get("partition"), f["topic"].replace(".", "_"))
              for f in consumers if f.get("topic") and "." in f["topic"]}

    def twin(f: dict) -> bool:
        return "." not in f["topic"] and (f["client"], f.get("partition"), f["topic"]) in dotted

    lag: dict[tuple, float | None] = {}
    out = []
    for f in facts:
        if f["flow"] == "consumer" and f.get("topic") is not None:
            if twin(f) or _internal_topic(f["topic"]):
                continue
            pair = _mm2_replication(f["client"])
            if pair is not None:
                lag[(*pair, f["topic"], f["partition"])] = f.get("lag_messages")
        out.append(f)
    for f in out:
        if f["flow"] == "mirrormaker2" and f.get("source_cluster"):
            src, tgt, remote, part = f["source_cluster"], f["target_cluster"], f["topic"], f["partition"]
            for topic in (remote.removeprefix(f"{src}.") if remote.startswith(f"{src}.") else None, remote):
                if topic is not None and (src, tgt, topic, part) in lag:
                    f["lag_messages"] = lag[(src, tgt, topic, part)]
                    break
    return out


FLOW_READERS: tuple[Callable[[MBeanRead], dict | None], ...] = (
    mm2_source_facts,
    mm2_checkpoint_facts,
    replicator_facts,
    consumer_facts,
)


def flow_facts(read: MBeanRead) -> dict | None:
    for reader in FLOW_READERS:
        facts = reader(read)
        if facts is not None:
            return facts
    return None


class KafkaPack:
    kind = "kafka"
    tables = ("broker_state", "replication_stats")
    exclusive_roles = True
    backlog_attribute = None  # no destination reads: topic lag lives in replication_stats

    def requests(self, broker_name: str = "*") -> list[dict]:
        """The bulk read for any Kafka JVM (`broker_name` has no meaning for Kafka)."""
        return [
            _read(f"{SERVER}:type=ReplicaManager,name=*", ["Value", "Count", "OneMinuteRate"], ignore_errors=True),
            _read(f"{SERVER}:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica", "Value"),
            _read(f"{CONTROLLER}:type=KafkaController,name=ActiveControllerCount", "Value"),
            _read(f"{CONTROLLER}:type=KafkaController,name=OfflinePartitionsCount", "Value"),
            _read(f"{CONSUMER}:type={FETCH_MANAGER},client-id=*", ["records-lag-max"], ignore_errors=True),
            _read(
                f"{CONSUMER}:type={FETCH_MANAGER},client-id=*,topic=*,partition=*",
                ["records-lag", "records-lag-max"],
                ignore_errors=True,
            ),
            _read(f"{MIRROR}:type=MirrorSourceConnector,*", list(MM2_SOURCE_ATTRIBUTES), ignore_errors=True),
            _read(f"{MIRROR}:type=MirrorCheckpointConnector,*", list(MM2_CHECKPOINT_ATTRIBUTES), ignore_errors=True),
            _read(f"{REPLICATOR}:type={REPLICATOR_TYPE},*", list(REPLICATOR_ATTRIBUTES), ignore_errors=True),
        ]

    def destination_request(self, broker_name: str = "*") -> None:
        return None

    def normalize(self, obs: Observation, obs_key: str) -> Rows:
        rows = Rows()
        if not obs.answered:
            rows.broker_state.append(unanswered_state_row(obs, obs_key))
            return rows
        reads = list(iter_mbean_reads(obs.requests, obs.response))
        metrics, errors = broker_metrics(reads)
        if metrics:
            rows.broker_state.append(broker_state_row(obs, obs_key, metrics, errors))
            rows.replication_stats.append(base_row(obs, obs_key) | isr_facts(metrics))
        flows = [f for r in reads if not (r.item_error or r.mbean.pattern) and (f := flow_facts(r)) is not None]
        for facts in tidy_flows(flows):
            rows.replication_stats.append(base_row(obs, obs_key) | facts)
        return rows
