"""ActiveMQ Classic pack (CATALOG §2). Jolokia: `http://<host>:8161/api/jolokia` (POST only since
5.19.7/6.2.6/6.3.0; strict Origin check since 5.17.3 — set `origin:` if yours differs).

Role: `Slave` on `org.apache.activemq:type=Broker,brokerName=<b>`. A waiting slave exposes the
broker MBean with `Slave=true` but throws "Broker is not yet started." for BrokerId, BrokerName and
the totals, so `Slave` is read on its own and the rest with `ignoreErrors` (a failure there is a
fact about a slave, not a broken scrape). Destination, Health, persistence-adapter and
network-bridge MBeans exist only on the master: their 404s on a slave are normal.

HA group: the configured `group`, else the master's store (the persistence adapter's `Name`,
e.g. `KahaDBPersistenceAdapter[/data/kahadb,Index:/data/kahadb]`): brokers sharing a store are one
logical broker. A waiting slave cannot tell its store; the job gives its rows the group its
instance reported as master (`fill_derived_groups`). Declare `group` for pairs that have not failed
over yet. `store` is kept on every master row, so a configured group whose members use different
stores (a misconfigured pair) is found (gold `ha_group_checks`).

`health` is `Health.CurrentStatus` ("Good" / "Getting Worried {…}"); ActiveMQ refreshes it only
when the `health()` operation is invoked, which brokerscope never does (read-only), so it is as
fresh as the last time someone (e.g. the web console) asked.

Destinations: queues, topics and temporary ones in one read (the key set `type, brokerName,
destinationType, destinationName` is exact, so consumer/producer endpoint MBeans do not match).
Advisory topics (`ActiveMQ.Advisory.*`, broker-internal) are left out of `destination_stats`.
Network bridges go to `replication_stats` (flow `network-bridge`): `lag_messages` =
EnqueueCounter − DequeueCounter, the messages the bridge took in but has not yet had acknowledged.
"""

from __future__ import annotations

from collectors.base import (MBeanRead, Observation, Rows, as_bool, as_int, base_row, iter_mbean_reads,
                             unanswered_state_row)
from collectors.objectname import decode_activemq

DOMAIN = "org.apache.activemq"
ADVISORY_PREFIX = "ActiveMQ.Advisory."

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

DESTINATION_ATTRIBUTES = [
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

BRIDGE_ATTRIBUTES = ["RemoteBrokerName", "RemoteAddress", "LocalBrokerName", "EnqueueCounter", "DequeueCounter"]

_DEST_TYPES = {"Queue": "queue", "Topic": "topic", "TempQueue": "temp-queue", "TempTopic": "temp-topic"}
_BROKER_KEYS = frozenset({"type", "brokerName"})
_DEST_KEYS = frozenset({"type", "brokerName", "destinationType", "destinationName"})
_HEALTH_KEYS = frozenset({"type", "brokerName", "service"})
_ADAPTER_KEYS = frozenset({"type", "brokerName", "service", "instanceName"})
_BRIDGE_KEYS = frozenset({"type", "brokerName", "connector", "networkConnectorName", "networkBridge"})


def _keys(read: MBeanRead) -> frozenset[str]:
    return frozenset(k for k, _ in read.mbean.props)


def _is(read: MBeanRead, keys: frozenset[str], **props: str) -> bool:
    m = read.mbean
    return m.domain == DOMAIN and m.get("type") == "Broker" and _keys(read) == keys and m.matches(**props)


def _read(mbean: str, attribute, ignore_errors: bool = True) -> dict:
    req = {"type": "read", "mbean": mbean, "attribute": attribute}
    if ignore_errors:
        req["config"] = {"ignoreErrors": True}
    return req


class ActiveMQPack:
    kind = "activemq"
    tables = ("broker_state", "destination_stats", "replication_stats")
    exclusive_roles = True
    backlog_attribute = "QueueSize"

    def requests(self, broker_name: str = "*") -> list[dict]:
        """Broker-level reads, sent every scrape."""
        b = f"{DOMAIN}:type=Broker,brokerName={broker_name}"
        return [
            _read(b, "Slave", ignore_errors=False),
            _read(b, list(BROKER_ATTRIBUTES)),
            _read(f"{b},service=Health", "CurrentStatus"),
            _read(f"{b},service=PersistenceAdapter,instanceName=*", "Name"),
            _read(f"{b},connector=networkConnectors,networkConnectorName=*,networkBridge=*", list(BRIDGE_ATTRIBUTES)),
        ]

    def destination_request(self, broker_name: str = "*") -> dict:
        """The wildcard read of every destination (the collector may sample instead, see scraper)."""
        pattern = f"{DOMAIN}:type=Broker,brokerName={broker_name},destinationType=*,destinationName=*"
        return _read(pattern, list(DESTINATION_ATTRIBUTES))

    def normalize(self, obs: Observation, obs_key: str) -> Rows:
        rows = Rows()
        if not obs.answered:
            rows.broker_state.append(unanswered_state_row(obs, obs_key))
            return rows
        reads = [r for r in iter_mbean_reads(obs.requests, obs.response)]
        brokers: dict[str, dict] = {}
        broker_errors: dict[str, list[str]] = {}
        missing_broker: list[str] = []
        for r in reads:
            if r.mbean.pattern:
                # A failed pattern read (404: nothing matches) names no MBean; only the broker
                # MBean's absence is news (a JVM that has not registered its broker yet).
                if r.item_error and _keys(r) == _BROKER_KEYS:
                    missing_broker.append(r.item_error)
                continue
            b = r.mbean.get("brokerName")
            if _is(r, _BROKER_KEYS):
                brokers.setdefault(b, {}).update(r.attributes)
                errs = [f"{k}: {v}" for k, v in r.errors.items()] + ([r.item_error] if r.item_error else [])
                if errs:
                    broker_errors.setdefault(b, []).extend(errs)
            elif _is(r, _HEALTH_KEYS, service="Health") and "CurrentStatus" in r.attributes:
                brokers.setdefault(b, {})["_health"] = r.attributes["CurrentStatus"]
            elif _is(r, _ADAPTER_KEYS, service="PersistenceAdapter"):
                store = r.attributes.get("Name") or decode_activemq(r.mbean["instanceName"])
                brokers.setdefault(b, {})["_store"] = store

        multiple = len([b for b, a in brokers.items() if "Slave" in a]) > 1

        def instance(broker: str) -> str:
            return f"{obs.target}/{decode_activemq(broker)}" if multiple else obs.target

        for broker, attrs in sorted(brokers.items()):
            if "Slave" not in attrs and not broker_errors.get(broker):
                continue  # a Health/adapter MBean without its broker MBean: nothing to say
            slave = as_bool(attrs.get("Slave"))
            store = attrs.get("_store")
            rows.broker_state.append(
                base_row(obs, obs_key, instance(broker))
                | {
                    "group_name": obs.group or store or obs.target,
                    "broker_name": attrs.get("BrokerName") or decode_activemq(broker),
                    "broker_id": attrs.get("BrokerId"),
                    "reachable": True,
                    "active": None if slave is None else not slave,
                    "role": "unknown" if slave is None else ("slave" if slave else "master"),
                    "uptime_ms": as_int(attrs.get("UptimeMillis")),
                    "connections": as_int(attrs.get("CurrentConnectionsCount")),
                    "total_enqueued": as_int(attrs.get("TotalEnqueueCount")),
                    "total_dequeued": as_int(attrs.get("TotalDequeueCount")),
                    "total_messages": as_int(attrs.get("TotalMessageCount")),
                    "consumers": as_int(attrs.get("TotalConsumerCount")),
                    "producers": as_int(attrs.get("TotalProducerCount")),
                    "store": store,
                    "health": attrs.get("_health"),
                    "error": ("; ".join(broker_errors.get(broker, [])) or None) if slave is None else None,
                    "scrape_ms": obs.elapsed_ms,
                }
            )
        if not rows.broker_state:
            # The JVM answered but has no broker MBean (yet): it is certainly not serving.
            rows.broker_state.append(
                base_row(obs, obs_key)
                | {
                    "reachable": True,
                    "active": False,
                    "role": "starting",
                    "error": "; ".join(missing_broker) or "no ActiveMQ broker MBean registered",
                    "scrape_ms": obs.elapsed_ms,
                }
            )
        group_of = {r["instance"]: r["group_name"] for r in rows.broker_state}

        for r in reads:
            if r.mbean.pattern or r.item_error:
                continue
            if _is(r, _DEST_KEYS) and r.mbean["destinationType"] in _DEST_TYPES:
                rows.destination_stats.append(self._destination_row(obs, obs_key, r, instance, group_of))
            elif _is(r, _BRIDGE_KEYS, connector="networkConnectors"):
                rows.replication_stats.append(self._bridge_row(obs, obs_key, r, instance, group_of))
        rows.destination_stats = [d for d in rows.destination_stats if d is not None]
        return rows

    @staticmethod
    def _destination_row(obs, obs_key, r: MBeanRead, instance, group_of) -> dict | None:
        m, a = r.mbean, r.attributes
        name = decode_activemq(m["destinationName"])
        if m["destinationType"] == "Topic" and name.startswith(ADVISORY_PREFIX):
            return None
        inst = instance(m["brokerName"])
        return base_row(obs, obs_key, inst) | {
            "group_name": group_of.get(inst, obs.group or obs.target),
            "destination": name,
            "logical_destination": name,
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

    @staticmethod
    def _bridge_row(obs, obs_key, r: MBeanRead, instance, group_of) -> dict:
        m, a = r.mbean, r.attributes
        inst = instance(m["brokerName"])
        enq, deq = as_int(a.get("EnqueueCounter")), as_int(a.get("DequeueCounter"))
        return base_row(obs, obs_key, inst) | {
            "group_name": group_of.get(inst, obs.group or obs.target),
            "flow": "network-bridge",
            "source_cluster": a.get("LocalBrokerName") or decode_activemq(m["brokerName"]),
            "target_cluster": a.get("RemoteBrokerName") or decode_activemq(m["networkBridge"]),
            "client": decode_activemq(m["networkConnectorName"]),
            "lag_messages": float(enq - deq) if enq is not None and deq is not None else None,
        }
