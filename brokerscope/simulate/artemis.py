"""Artemis brokers as Jolokia sees them (CATALOG §1): the broker MBean, queue MBeans (only once a
broker is active: a passive backup has none, §1.2) and the cluster connection's topology (§1.5).

Facts used: ObjectNames §1.1 (domain org.apache.activemq.artemis; broker/address/queue/routing-type/
name values always double-quoted; routing type lower case; registration order broker, component,
address, subcomponent, routing-type, queue); broker attributes and types §1.2 (Active, Backup,
ReplicaSync, NodeID, ActivationSequence, HAPolicy strings per version, DiskStoreUsage a fraction);
checkStarted() on the getters (isStarted and getHAPolicy excepted) → "Broker is not started. It can
not be managed yet"; queue attributes §1.3 (FirstMessageAge null on an empty queue); Topology text
§1.5: header, one `<nodeId> => TopologyMember[…]` line per member, `nodes=<n> members=<m>`.
Assumption (not in CATALOG): after activation a queue's counters restart with the messages loaded
from the journal counted as added.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from brokerscope.simulate.jolokia import MBean, Throws, quoted
from brokerscope.simulate.model import Member

DOMAIN = "org.apache.activemq.artemis"
NOT_STARTED = "Broker is not started. It can not be managed yet"
POLICIES_2_31 = ("Primary", "Backup")  # 2.18–2.31 names of the lock-manager policies (§1.2)
POLICIES_2_44 = ("Replication Primary w/lock manager", "Replication Backup w/lock manager")  # ≥2.33


@dataclass
class Queue:
    address: str
    name: str
    routing: str  # anycast | multicast
    added: int
    acked: int
    consumers: int
    delivering: int = 0
    killed: int = 0
    first_age_ms: int | None = None

    @property
    def count(self) -> int:
        return self.added - self.acked


@dataclass
class Broker:
    name: str
    version: str
    ha_policy: str
    node_id: str
    started_at: datetime
    started: bool = True
    active: bool = False
    backup: bool = True
    replica_sync: bool = False
    activation_sequence: int = 0
    connections: int = 0
    queues: list[Queue] | None = None  # None: no queue MBeans (passive backup)
    topology_nodes: int | None = None  # None: no cluster-connection MBean
    members: dict[str, str] = field(default_factory=dict)

    def registry(self, ts: datetime) -> list[MBean]:
        b = quoted(self.name)
        gate = (lambda v: v) if self.started else (lambda v: Throws(NOT_STARTED))  # checkStarted()
        queues = self.queues or []
        attributes = {
            "Active": gate(self.active),
            "Backup": gate(self.backup),
            "ReplicaSync": gate(self.replica_sync),
            "NodeID": gate(self.node_id),
            "ActivationSequence": gate(self.activation_sequence),
            "HAPolicy": self.ha_policy,
            "SharedStore": gate(False),
            "Started": self.started,
            "UptimeMillis": gate(int((ts - self.started_at).total_seconds() * 1000)),
            "ConnectionCount": gate(self.connections),
            "TotalConnectionCount": gate(self.connections + 4),
            "TotalMessageCount": gate(sum(x.count for x in queues)),
            "TotalMessagesAdded": gate(sum(x.added for x in queues)),
            "TotalMessagesAcknowledged": gate(sum(x.acked for x in queues)),
            "TotalConsumerCount": gate(sum(x.consumers for x in queues)),
            "DiskStoreUsage": gate(0.1834),
            "AddressMemoryUsagePercentage": gate(1 if queues else 0),
            "Version": gate(self.version),
        }
        out = [MBean(DOMAIN, [("broker", b)], attributes)]
        for x in queues:
            props = [("broker", b), ("component", "addresses"), ("address", quoted(x.address)),
                     ("subcomponent", "queues"), ("routing-type", quoted(x.routing)), ("queue", quoted(x.name))]
            out.append(MBean(DOMAIN, props, {
                "MessageCount": x.count, "ConsumerCount": x.consumers, "DeliveringCount": x.delivering,
                "ScheduledCount": 0, "MessagesAdded": x.added, "MessagesAcknowledged": x.acked,
                "MessagesKilled": x.killed, "MessagesExpired": 0, "FirstMessageAge": x.first_age_ms if x.count else None,
                "PreparedTransactionMessageCount": 0, "Paused": False,
            }))
        if self.topology_nodes is not None:
            props = [("broker", b), ("component", "cluster-connections"), ("name", quoted("my-cluster"))]
            out.append(MBean(DOMAIN, props, {"Topology": self.topology(), "Nodes": {}, "Started": True}))
        return out

    def topology(self) -> str:
        lines = [f"topology on Topology@5b3e0a7f[owner=ClusterConnectionImpl@1c6f2bd4[nodeUUID={self.node_id}, connector=TransportConfiguration(name=artemis, factory=org-apache-activemq-artemis-core-remoting-impl-netty-NettyConnectorFactory) ?port=61616&host={self.name}, address=, server=ActiveMQServerImpl::name={self.name}]]:"]
        for node, connector in self.members.items():
            lines.append(f"\t{node} => TopologyMember[id={node}, connector={connector}, backupGroupName=null, scaleDownGroupName=null]")
        lines.append(f"\tnodes={self.topology_nodes}\tmembers={len(self.members)}")
        return "\n".join(lines)


def connector_pair(primary: str, backup: str | None) -> str:
    tc = "TransportConfiguration(name=artemis, factory=org-apache-activemq-artemis-core-remoting-impl-netty-NettyConnectorFactory) ?port=61616&host={}"
    return f"Pair[a={tc.format(primary)}, b={tc.format(backup) if backup else 'null'}]"


# --- a simulated member → the broker Jolokia shows ---------------------------------------------


def sequence_at(member: Member, t: float) -> int:
    """The broker's local ActivationSequence: facts["sequence"] is [(from_t, value), …]."""
    value = 0
    for since, v in member.facts.get("sequence", [(-1e9, 1)]):
        if since <= t:
            value = v
    return value


def broker_at(member: Member, peers: list[Member], t: float, t0: datetime) -> Broker:
    """The Artemis broker of `member` at true time t: live while active; a passive backup (in sync
    while a live serves, no queue MBeans) otherwise. `peers`: the other members of its group."""
    active = member.is_active(t)
    started_at = t0 + timedelta(seconds=member.jvm_start(t))
    policies = member.facts.get("policies", POLICIES_2_44)
    primary = member.facts.get("primary", False)
    b = Broker(member.name, member.facts.get("version", "2.44.0"), policies[0] if primary else policies[1],
               member.facts["node_id"], started_at, active=active, backup=not active,
               activation_sequence=sequence_at(member, t))
    other_live = any(p.is_active(t) for p in peers)
    backups_up = [p.name for p in peers if not p.is_active(t) and not detached(p, t) and
                  not any(s.holds(t) for s in p.down)]
    if active:
        b.connections = 3
        b.replica_sync = bool(backups_up)
        b.queues = [queue_at(member, d, t) for d in member.destinations]
        b.topology_nodes = 1 + len(backups_up)
        b.members = {b.node_id: connector_pair(member.name, backups_up[0] if backups_up else None)}
    else:
        b.replica_sync = other_live and not detached(member, t)
    return b


def detached(member: Member, t: float) -> bool:
    """Replication to/from this member dropped (facts `detached`, or `detached_from` a time)."""
    return bool(member.facts.get("detached")) or member.facts.get("detached_from", float("inf")) <= t


def queue_at(member: Member, d, t: float) -> Queue:
    c = member.counters(d, t)
    address = d.logical or d.name
    return Queue(address, d.name, "anycast", c.enqueued, c.dequeued, c.consumers,
                 delivering=min(1, c.messages) if c.consumers else 0, first_age_ms=c.oldest_age_ms)


def registry(member: Member, peers: list[Member], t: float, ts: datetime, t0: datetime) -> list[MBean]:
    return broker_at(member, peers, t, t0).registry(ts)
