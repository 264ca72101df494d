"""ActiveMQ Classic brokers as Jolokia sees them (CATALOG §2), modeled on the real 5.17/5.18
answers recorded from the lab (tests/fixtures/activemq_*.json, drill_kill_master.jsonl.gz).

* Broker MBean `org.apache.activemq:type=Broker,brokerName=<b>` (§2.1), registered before the lock
  wait, so a waiting slave has it with `Slave=true` (§2.2); its BrokerId, BrokerName and totals go
  through safeGetBroker() → `IllegalStateException("Broker is not yet started.")`; UptimeMillis and
  CurrentConnectionsCount answer (as in the real slave capture).
* Health (`service=Health`, CurrentStatus "Good"), the persistence adapter (`service=
  PersistenceAdapter,instanceName=<adapter.toString()>` encoded by JMXSupport: `:` and `,` → `_`)
  and destinations (`destinationType=Queue,destinationName=<d>`) exist only on the master (§2.4).
"""

from __future__ import annotations

from datetime import datetime

from brokerscope.simulate.jolokia import MBean, Throws
from brokerscope.simulate.model import Member

DOMAIN = "org.apache.activemq"
NOT_YET_STARTED = "Broker is not yet started."


def encode(value: str) -> str:
    """JMXSupport.encodeObjectNamePart for the characters a store path contains (§2.1)."""
    for ch in ':,\'"':
        value = value.replace(ch, "_")
    return value


def broker_id(member: Member, t: float) -> str:
    return f"ID:{member.name}-{int(member.jvm_start(t) * 1000) % 10**13}-0:1"


def registry(member: Member, t: float, ts: datetime) -> list[MBean]:
    b = member.facts.get("broker_name", member.name)
    head = [("type", "Broker"), ("brokerName", b)]
    master = member.is_active(t)
    dests = [member.counters(d, t) for d in member.destinations] if master else []
    gate = (lambda v: v) if master else (lambda v: Throws(NOT_YET_STARTED))  # safeGetBroker()
    out = [MBean(DOMAIN, head, {
        "Slave": not master,
        "BrokerId": gate(broker_id(member, t)),
        "BrokerName": gate(b),
        "UptimeMillis": member.uptime_ms(t),
        "CurrentConnectionsCount": 2 if master else 0,
        "TotalEnqueueCount": gate(sum(c.enqueued for c in dests)),
        "TotalDequeueCount": gate(sum(c.dequeued for c in dests)),
        "TotalMessageCount": gate(sum(c.messages for c in dests)),
        "TotalConsumerCount": gate(sum(c.consumers for c in dests)),
        "TotalProducerCount": gate(len(dests)),
    })]
    if not master:
        return out
    store = member.facts.get("store", "/var/lib/activemq/kahadb")
    adapter = f"KahaDBPersistenceAdapter[{store},Index:{store}]"
    out.append(MBean(DOMAIN, head + [("service", "Health")], {"CurrentStatus": "Good"}))
    out.append(MBean(DOMAIN, head + [("service", "PersistenceAdapter"), ("instanceName", encode(adapter))], {"Name": adapter}))
    for d, c in zip(member.destinations, dests):
        out.append(MBean(DOMAIN, head + [("destinationType", "Queue"), ("destinationName", d.name)], {
            "QueueSize": c.messages, "ConsumerCount": c.consumers, "ProducerCount": 1,
            "EnqueueCount": c.enqueued, "DequeueCount": c.dequeued, "InFlightCount": min(1, c.messages) if c.consumers else 0,
            "DispatchCount": c.dequeued + (min(1, c.messages) if c.consumers else 0), "ExpiredCount": 0, "ForwardCount": 0,
        }))
    return out
