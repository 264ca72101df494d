"""ActiveMQ Artemis pack — Apache ActiveMQ Artemis 2.x = Red Hat AMQ Broker 7 (CATALOG §1, §6, §8).

Endpoint (§1.8): `http://<http.host>:8161/console/jolokia` (`JOLOKIA_PATH`). `artemis create` writes a
jolokia-access.xml with `<strict-checking/>`, so every request must carry an `Origin` matching
`*://${http.host}*` or the console answers HTTP 403; the target's `origin:` (default: the URL's
scheme://host) is sent as that header.

Requests (one bulk POST, §6.1). Artemis quotes ObjectName values (`broker="b1"`, §1.1); the
pattern `broker=*` matches them, and so does the unquoted `broker=artemis` of jmx-use-broker-name=false.
 1. `Active` alone — no ignoreErrors, so its item status says *why* it has no value: 404 = the
    attribute does not exist (Artemis < 2.15), 500 `IllegalStateException: Broker is not started`
    = early in startup (`checkStarted()`, §1.2).
 2. `ActivationSequence` alone — 404 before ≈2.18 is a version fact, not an error.
 3. the other broker attributes with ignoreErrors: one failing getter (not started, RBAC) becomes
    an error marker and the rest still arrive.
 4. queues (`component=addresses,…,subcomponent=queues`) and 5. cluster connections, both
    wildcard reads with ignoreErrors. A passive backup has no queue MBeans (they appear with
    `initialisePart2` on activation): its 404 is a normal fact and yields no destination rows.

broker_state (§1.2, §8.1):
 * `active` = `Active`. Where `Active` does not exist (< 2.15) it is derived as
   `Backup == false and Started` — `Backup` reflects the *runtime* HA policy, which is swapped on
   failover — and the row's `error` says it was derived. A broker answering "not started"
   (`Started=false` or the 500) is `active=false, role=starting`: it serves nothing.
 * `role` = live (active) | backup (started, not active) | starting | unknown (role unreadable).
 * `ha_policy` is the *configured* policy name, passed through verbatim; its strings changed across
   versions (≤2.17 `Live Only`/`Replicated`/`Replica`/`Shared Store Master`/`Shared Store Slave`/
   `Colocated`; 2.18–2.31 adds `Primary`/`Backup` for the lock manager; 2.32 `Primary Only`,
   `… w/pluggable quorum voting`; ≥2.33 `Replication Primary w/lock manager`, `Shared Store Primary`…).
   It never decides the role.
 * `group_name` = the configured group, else the `NodeID`: a backup carries its live's NodeID, so
   both halves of a pair land in one group without configuration (two *active* brokers with one
   NodeID are a split brain, §8.1).
 * totals: total_enqueued = TotalMessagesAdded, total_dequeued = TotalMessagesAcknowledged,
   total_messages = TotalMessageCount, consumers = TotalConsumerCount, connections = ConnectionCount.

destination_stats (§1.3), one row per queue MBean: destination = queue name, logical_destination =
address name, destination_type from the routing type — `anycast` → "queue" (point-to-point),
`multicast` → "topic" (the queue is one subscription of a publish/subscribe address, so several
rows can share one logical_destination). messages = MessageCount (includes scheduled, paged and
in-delivery), in_flight = DeliveringCount, enqueued/dequeued = MessagesAdded/MessagesAcknowledged,
expired = MessagesExpired, oldest_message_age_ms = FirstMessageAge (null on an empty queue),
paused = Paused,
prepared_tx_messages = PreparedTransactionMessageCount. ScheduledCount and MessagesKilled stay in bronze.

replication_stats: one `artemis-replica` row per *live* broker: in_sync = `ReplicaSync` (false
while the initial sync runs and when no backup is attached, §8.2); backup_announced from the
cluster connections' `Topology` (`parse_topology`, read only as far as §1.5 documents it: member
lines `<nodeId> => TopologyMember[…]` and the `nodes=<n> members=<m>` trailer).

Accepted both ways (UNVERIFIED in CATALOG or version-dependent):
 * Jolokia 1.x (console ≤2.39) and 2.x (≥2.40) shapes: canonical or as-registered ObjectName keys,
   string or object ignoreErrors markers (both handled by collectors.base / objectname).
 * a missing attribute in a wildcard read: 404 `AttributeNotFoundException` (§6.3) or a 400
   naming the attribute; a missing attribute in a named read: 404 or an AttributeNotFound marker.
 * the Topology member line `id=` or `id = `; tabs or spaces between `nodes=` and `members=`.
 * cluster-connection MBeans on a passive backup: present or 404 — neither is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from collectors.base import (MBeanRead, Observation, Rows, as_bool, as_int, base_row, iter_mbean_reads,
                             unanswered_state_row)
from collectors.objectname import ObjectName, quote_if_needed

DOMAIN = "org.apache.activemq.artemis"
JOLOKIA_PATH = "/console/jolokia"
NOT_STARTED = "Broker is not started"  # checkStarted(): "Broker is not started. It can not be managed yet"

# Read alone (no ignoreErrors): whether they exist depends on the version.
ACTIVE = "Active"  # ≈2.15+
ACTIVATION_SEQUENCE = "ActivationSequence"  # ≈2.18+

BROKER_ATTRIBUTES = [
    "Backup",
    "ReplicaSync",
    "NodeID",
    "HAPolicy",
    "SharedStore",
    "Started",
    "UptimeMillis",
    "ConnectionCount",
    "TotalConnectionCount",
    "TotalMessageCount",
    "TotalMessagesAdded",
    "TotalMessagesAcknowledged",
    "TotalConsumerCount",
    "DiskStoreUsage",
    "AddressMemoryUsagePercentage",
    "Version",
]

QUEUE_ATTRIBUTES = [
    "MessageCount",
    "ConsumerCount",
    "DeliveringCount",
    "ScheduledCount",
    "MessagesAdded",
    "MessagesAcknowledged",
    "MessagesKilled",
    "MessagesExpired",
    "FirstMessageAge",
    "PreparedTransactionMessageCount",
    "Paused",
]

CLUSTER_CONNECTION_ATTRIBUTES = ["Topology", "Nodes", "Started"]

DESTINATION_TYPES = {"anycast": "queue", "multicast": "topic"}

_BROKER_KEYS = frozenset({"broker"})
_QUEUE_KEYS = frozenset({"broker", "component", "address", "subcomponent", "routing-type", "queue"})
_CLUSTER_KEYS = frozenset({"broker", "component", "name"})


def quote_value(value: str) -> str:
    """ObjectName.quote() as Artemis applies it to every broker/address/queue/name value; '*' stays
    a wildcard."""
    if value == "*":
        return value
    quoted = quote_if_needed(value)  # escapes and quotes values with special characters
    return quoted if quoted != value else f'"{value}"'


# --- Topology text (ClusterConnectionControl.Topology, CATALOG §1.5) -------------------------------

_MEMBER_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(TopologyMember\[.*\])\s*$")
_COUNTS = re.compile(r"\bnodes\s*=\s*(\d+)\s+members\s*=\s*(\d+)")


@dataclass(frozen=True)
class Topology:
    members: dict[str, str]  # nodeId → its TopologyMember[…] text (not parsed further)
    nodes: int | None  # primary + backup connectors known
    member_count: int | None  # live/backup pairs (one per nodeId)


def parse_topology(text: Any) -> Topology | None:
    """The member lines and the `nodes=<n> members=<m>` trailer of `Topology.describe()`."""
    if not isinstance(text, str):
        return None
    members = {m.group(1): m.group(2) for m in map(_MEMBER_LINE.match, text.splitlines()) if m}
    counts = _COUNTS.search(text)
    nodes, count = (int(counts.group(1)), int(counts.group(2))) if counts else (None, None)
    return Topology(members, nodes, count)


def backup_announced(topology: Topology | None, node_id: str | None) -> bool | None:
    """Whether the topology holds a backup connector for `node_id`, where the counts decide it:
    no member has a backup (nodes == members) or every member has one (nodes == 2 × members)."""
    if topology is None or node_id not in topology.members or topology.nodes is None or not topology.member_count:
        return None
    if topology.nodes == topology.member_count:
        return False
    if topology.nodes == 2 * topology.member_count:
        return True
    return None


# --- reading one observation ---------------------------------------------------------------------


@dataclass
class _Broker:
    """What one observation says about one broker MBean."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # attribute → why it has no value
    announced: list[bool | None] = field(default_factory=list)  # per cluster connection


def _keys(mbean: ObjectName) -> frozenset[str]:
    return frozenset(k for k, _ in mbean.props)


def _is(mbean: ObjectName, keys: frozenset[str], component: str | None = None) -> bool:
    return (
        mbean.domain == DOMAIN
        and not mbean.pattern
        and _keys(mbean) == keys
        and (component is None or mbean.get("component") == component)
    )


def _is_queue(mbean: ObjectName) -> bool:
    return (
        _is(mbean, _QUEUE_KEYS, "addresses")
        and mbean["subcomponent"] == "queues"
        and mbean["routing-type"] in DESTINATION_TYPES
    )


def _is_absence(error: str | None) -> bool:
    """The attribute does not exist in this version (not: it failed)."""
    if error is None:
        return True
    return (
        error.startswith("404")
        or "AttributeNotFoundException" in error
        or (error.startswith("400") and "attribute" in error.lower())
    )


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _activity(b: _Broker) -> tuple[bool | None, str, str | None]:
    """(active, role, note) of one broker; the note says when `active` was inferred."""
    a = b.attributes
    active, started, backup = as_bool(a.get(ACTIVE)), as_bool(a.get("Started")), as_bool(a.get("Backup"))
    active_error = b.errors.get(ACTIVE)
    if active is not None:
        return active, "live" if active else ("starting" if started is False else "backup"), None
    if started is False or (active_error and NOT_STARTED in active_error):
        return False, "starting", None
    if _is_absence(active_error) and backup is not None and started is not None:
        derived = started and not backup
        version = _text(a.get("Version")) or "?"
        note = (
            f"Active not reported (Artemis {version} < 2.15): active derived from "
            f"Backup={str(backup).lower()} and Started=true"
        )
        return derived, "live" if derived else "backup", note
    return None, "unknown", None


def _error_summary(errors: dict[str, str]) -> str | None:
    """`attr, attr: message; …` — one entry per distinct message."""
    by_message: dict[str, list[str]] = {}
    for attr, message in errors.items():
        by_message.setdefault(message, []).append(attr)
    return "; ".join(f"{', '.join(sorted(attrs))}: {msg}" for msg, attrs in by_message.items()) or None


def _reported_errors(b: _Broker) -> dict[str, str]:
    """Attribute errors worth reporting: version-dependent absences of Active/ActivationSequence are
    facts (the derivation note covers Active)."""
    return {
        attr: msg
        for attr, msg in b.errors.items()
        if not (attr in (ACTIVE, ACTIVATION_SEQUENCE) and _is_absence(msg))
    }


class ArtemisPack:
    kind = "artemis"
    tables = ("broker_state", "destination_stats", "replication_stats")
    exclusive_roles = True
    backlog_attribute = "MessageCount"

    def requests(self, broker_name: str = "*") -> list[dict]:
        broker = f"{DOMAIN}:broker={quote_value(broker_name)}"
        tolerant = {"ignoreErrors": True}
        return [
            {"type": "read", "mbean": broker, "attribute": ACTIVE},
            {"type": "read", "mbean": broker, "attribute": ACTIVATION_SEQUENCE},
            {"type": "read", "mbean": broker, "attribute": list(BROKER_ATTRIBUTES), "config": dict(tolerant)},
            {
                "type": "read",
                "mbean": f"{broker},component=cluster-connections,name=*",
                "attribute": list(CLUSTER_CONNECTION_ATTRIBUTES),
                "config": dict(tolerant),
            },
        ]

    def destination_request(self, broker_name: str = "*") -> dict:
        """Every queue (the collector may sample instead, see scraper)."""
        return {
            "type": "read",
            "mbean": f"{DOMAIN}:broker={quote_value(broker_name)},component=addresses,address=*,subcomponent=queues,routing-type=*,queue=*",
            "attribute": list(QUEUE_ATTRIBUTES),
            "config": {"ignoreErrors": True},
        }

    def normalize(self, obs: Observation, obs_key: str) -> Rows:
        rows = Rows()
        if not obs.answered:
            rows.broker_state.append(unanswered_state_row(obs, obs_key))
            return rows
        brokers, broker_item_errors, queues, clusters = self._sort_reads(obs)
        for b in brokers.values():
            for asked, error in broker_item_errors:
                for attr in asked:
                    b.errors.setdefault(attr, error)
        for mbean, read in clusters:
            owner = brokers.get(mbean["broker"])
            if owner is not None and as_bool(read.attributes.get("Started")) is not False:
                topology = parse_topology(read.attributes.get("Topology"))
                owner.announced.append(backup_announced(topology, _text(owner.attributes.get("NodeID"))))

        multiple = len(brokers) > 1

        def instance(broker: str) -> str:
            return f"{obs.target}/{broker}" if multiple else obs.target

        def group(broker: str) -> str:
            b = brokers.get(broker)
            return obs.group or (_text(b.attributes.get("NodeID")) if b else None) or obs.target

        for name, b in sorted(brokers.items()):
            state = self._broker_row(obs, obs_key, b, instance(name), group(name))
            rows.broker_state.append(state)
            if state["active"]:  # a live replicates to its backup (if any)
                rows.replication_stats.append(
                    base_row(obs, obs_key, instance(name))
                    | {
                        "group_name": group(name),
                        "flow": "artemis-replica",
                        "in_sync": as_bool(b.attributes.get("ReplicaSync")),
                        "backup_announced": _any_known(b.announced),
                    }
                )
        if not brokers:
            rows.broker_state.append(self._no_broker_row(obs, obs_key, [e for _, e in broker_item_errors]))

        for mbean, read in queues:
            rows.destination_stats.append(
                base_row(obs, obs_key, instance(mbean["broker"]))
                | {"group_name": group(mbean["broker"])}
                | _destination_facts(mbean, read.attributes)
            )
        return rows

    @staticmethod
    def _sort_reads(obs: Observation):
        """Broker facts by broker name, item errors of broker reads (with the attributes asked),
        queue and cluster-connection reads."""
        brokers: dict[str, _Broker] = {}
        broker_item_errors: list[tuple[list[str], str]] = []
        queues: list[tuple[ObjectName, MBeanRead]] = []
        clusters: list[tuple[ObjectName, MBeanRead]] = []
        for read in iter_mbean_reads(obs.requests, obs.response):
            asked = list(read.requested or ())
            m = read.mbean
            if read.item_error is not None:
                # A broker read that failed as a whole; a failed queue / cluster-connection pattern
                # (404 on a passive backup) is a normal fact and names nothing.
                if m.domain == DOMAIN and _keys(m) == _BROKER_KEYS:
                    broker_item_errors.append((asked, read.item_error))
                continue
            if _is(m, _BROKER_KEYS):
                b = brokers.setdefault(m["broker"], _Broker(m["broker"]))
                b.attributes.update(read.attributes)
                b.errors.update(read.errors)
            elif _is_queue(m):
                queues.append((m, read))
            elif _is(m, _CLUSTER_KEYS, "cluster-connections"):
                clusters.append((m, read))
        return brokers, broker_item_errors, queues, clusters

    @staticmethod
    def _broker_row(obs: Observation, obs_key: str, b: _Broker, instance: str, group: str) -> dict:
        a = b.attributes
        active, role, note = _activity(b)
        problems = [p for p in (note, _error_summary(_reported_errors(b))) if p]
        node_id = _text(a.get("NodeID"))
        return base_row(obs, obs_key, instance) | {
            "group_name": group,
            "broker_name": b.name,
            "broker_id": node_id,
            "reachable": True,
            "active": active,
            "role": role,
            "backup": as_bool(a.get("Backup")),
            "replica_sync": as_bool(a.get("ReplicaSync")),
            "node_id": node_id,
            "activation_sequence": as_int(a.get(ACTIVATION_SEQUENCE)),
            "ha_policy": _text(a.get("HAPolicy")),
            "uptime_ms": as_int(a.get("UptimeMillis")),
            "connections": as_int(a.get("ConnectionCount")),
            "total_enqueued": as_int(a.get("TotalMessagesAdded")),
            "total_dequeued": as_int(a.get("TotalMessagesAcknowledged")),
            "total_messages": as_int(a.get("TotalMessageCount")),
            "consumers": as_int(a.get("TotalConsumerCount")),
            "error": "; ".join(problems) or None,
            "scrape_ms": obs.elapsed_ms,
        }

    @staticmethod
    def _no_broker_row(obs: Observation, obs_key: str, errors: list[str]) -> dict:
        """The JVM answered without a broker MBean. It is registered before activation
        (initialisePart1), so when every read says 404 the broker is certainly not serving yet;
        any other failure (403, 500) leaves the role unknown."""
        missing = bool(errors) and all(e.startswith("404") for e in errors)
        return base_row(obs, obs_key) | {
            "reachable": True,
            "active": False if missing else None,
            "role": "starting" if missing else "unknown",
            "error": "; ".join(dict.fromkeys(errors))
            or f"no Artemis broker MBean ({DOMAIN}:broker=…) in the answer; is the URL the console's {JOLOKIA_PATH}?",
            "scrape_ms": obs.elapsed_ms,
        }


def _any_known(values: list[bool | None]) -> bool | None:
    """True if any cluster connection says so, False if the ones that can tell all say no."""
    if any(v is True for v in values):
        return True
    return False if any(v is False for v in values) else None


def _destination_facts(mbean: ObjectName, a: dict) -> dict:
    return {
        "destination": mbean["queue"],
        "logical_destination": mbean["address"],
        "destination_type": DESTINATION_TYPES[mbean["routing-type"]],
        "messages": as_int(a.get("MessageCount")),
        "consumers": as_int(a.get("ConsumerCount")),
        "enqueued": as_int(a.get("MessagesAdded")),
        "dequeued": as_int(a.get("MessagesAcknowledged")),
        "in_flight": as_int(a.get("DeliveringCount")),
        "expired": as_int(a.get("MessagesExpired")),
        "oldest_message_age_ms": as_int(a.get("FirstMessageAge")),
        "paused": as_bool(a.get("Paused")),
        "prepared_tx_messages": as_int(a.get("PreparedTransactionMessageCount")),
    }
