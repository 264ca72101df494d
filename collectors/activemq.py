"""ActiveMQ Classic pack (CATALOG §2).

Role: `Slave` on `org.apache.activemq:type=Broker,brokerName=<b>`. A waiting slave exposes the
broker MBean with `Slave=true` but throws "Broker is not yet started." for BrokerId, BrokerName and
the totals, so `Slave` is read on its own and the rest with `ignoreErrors` (a failure there is a
fact about a slave, not a broken scrape). Queue MBeans exist only on the master: a 404 for the
queue pattern on a slave is normal.
"""

from __future__ import annotations

from collectors.base import MBeanRead, Observation, Rows, as_bool, as_int, base_row, iter_mbean_reads, unanswered_state_row
from collectors.objectname import decode_activemq

DOMAIN = "org.apache.activemq"

BROKER_ATTRIBUTES = [
    "BrokerId",
    "BrokerName",
    "UptimeMillis",
    "CurrentConnectionsCount",
    "TotalEnqueueCount",
    "TotalDequeueCount",
    "TotalMessageCount",
    "TotalConsumerCount",
    "TotalProducerCount",
]

QUEUE_ATTRIBUTES = [
    "QueueSize",
    "ConsumerCount",
    "ProducerCount",
    "EnqueueCount",
    "DequeueCount",
    "InFlightCount",
    "DispatchCount",
    "ExpiredCount",
    "ForwardCount",
]

_DEST_TYPES = {"Queue": "queue", "Topic": "topic", "TempQueue": "temp-queue", "TempTopic": "temp-topic"}


def _is_broker_mbean(read: MBeanRead) -> bool:
    keys = {k for k, _ in read.mbean.props}
    return read.mbean.domain == DOMAIN and read.mbean.get("type") == "Broker" and keys == {"type", "brokerName"}


def _is_destination_mbean(read: MBeanRead) -> bool:
    m = read.mbean
    keys = {k for k, _ in m.props}
    return (
        m.domain == DOMAIN
        and m.get("type") == "Broker"
        and m.get("destinationType") in _DEST_TYPES
        and keys == {"type", "brokerName", "destinationType", "destinationName"}
    )


class ActiveMQPack:
    kind = "activemq"
    tables = ("broker_state", "destination_stats")
    exclusive_roles = True

    def requests(self, broker_name: str = "*") -> list[dict]:
        broker = f"{DOMAIN}:type=Broker,brokerName={broker_name}"
        return [
            {"type": "read", "mbean": broker, "attribute": "Slave"},
            {"type": "read", "mbean": broker, "attribute": list(BROKER_ATTRIBUTES), "config": {"ignoreErrors": True}},
            {
                "type": "read",
                "mbean": f"{DOMAIN}:type=Broker,brokerName={broker_name},destinationType=Queue,destinationName=*",
                "attribute": list(QUEUE_ATTRIBUTES),
                "config": {"ignoreErrors": True},
            },
        ]

    def normalize(self, obs: Observation, obs_key: str) -> Rows:
        rows = Rows()
        if not obs.answered:
            rows.broker_state.append(unanswered_state_row(obs, obs_key))
            return rows
        reads = list(iter_mbean_reads(obs.requests, obs.response))
        # Merge all attributes per broker MBean (Slave and the rest come from different items).
        brokers: dict[str, dict] = {}
        broker_errors: dict[str, list[str]] = {}
        pattern_errors: list[str] = []
        for r in reads:
            if r.mbean.pattern:
                # A failed pattern read (404: no MBean matches yet) names no broker or queue.
                if r.item_error and r.mbean.get("destinationType") is None:
                    pattern_errors.append(r.item_error)
                continue
            if _is_broker_mbean(r):
                b = r.mbean["brokerName"]
                brokers.setdefault(b, {}).update(r.attributes)
                errs = [f"{k}: {v}" for k, v in r.errors.items()]
                if r.item_error:
                    errs.append(r.item_error)
                if errs:
                    broker_errors.setdefault(b, []).extend(errs)

        multiple = len(brokers) > 1
        for broker, attrs in sorted(brokers.items()):
            instance = f"{obs.target}/{decode_activemq(broker)}" if multiple else obs.target
            slave = as_bool(attrs.get("Slave"))
            role = "unknown" if slave is None else ("slave" if slave else "master")
            rows.broker_state.append(
                base_row(obs, obs_key, instance)
                | {
                    "broker_name": attrs.get("BrokerName") or decode_activemq(broker),
                    "broker_id": attrs.get("BrokerId"),
                    "reachable": True,
                    "active": None if slave is None else not slave,
                    "role": role,
                    "uptime_ms": as_int(attrs.get("UptimeMillis")),
                    "connections": as_int(attrs.get("CurrentConnectionsCount")),
                    "total_enqueued": as_int(attrs.get("TotalEnqueueCount")),
                    "total_dequeued": as_int(attrs.get("TotalDequeueCount")),
                    "total_messages": as_int(attrs.get("TotalMessageCount")),
                    "consumers": as_int(attrs.get("TotalConsumerCount")),
                    "producers": as_int(attrs.get("TotalProducerCount")),
                    "error": ("; ".join(broker_errors.get(broker, [])) or None) if slave is None else None,
                    "scrape_ms": obs.elapsed_ms,
                }
            )
        if not brokers:
            # The JVM answered but has no broker MBean (yet): it is certainly not serving.
            rows.broker_state.append(
                base_row(obs, obs_key)
                | {
                    "reachable": True,
                    "active": False,
                    "role": "starting",
                    "error": "; ".join(pattern_errors) or "no ActiveMQ broker MBean registered",
                    "scrape_ms": obs.elapsed_ms,
                }
            )

        for r in reads:
            if r.mbean.pattern or r.item_error or not _is_destination_mbean(r):
                continue
            m, a = r.mbean, r.attributes
            broker = m["brokerName"]
            rows.destination_stats.append(
                base_row(obs, obs_key, f"{obs.target}/{decode_activemq(broker)}" if multiple else obs.target)
                | {
                    "destination": decode_activemq(m["destinationName"]),
                    "logical_destination": decode_activemq(m["destinationName"]),
                    "destination_type": _DEST_TYPES[m["destinationType"]],
                    "messages": as_int(a.get("QueueSize")),
                    "consumers": as_int(a.get("ConsumerCount")),
                    "producers": as_int(a.get("ProducerCount")),
                    "enqueued": as_int(a.get("EnqueueCount")),
                    "dequeued": as_int(a.get("DequeueCount")),
                    "in_flight": as_int(a.get("InFlightCount")),
                    "dispatched": as_int(a.get("DispatchCount")),
                    "expired": as_int(a.get("ExpiredCount")),
                    "forwarded": as_int(a.get("ForwardCount")),
                }
            )
        return rows
