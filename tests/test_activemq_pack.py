"""ActiveMQ pack on real answers captured from the lab's master and waiting slave (ActiveMQ 5.17,
jolokia-core 1.7.1), and on the Jolokia ≥2.5 forms described in CATALOG §6.4."""

import copy
import json
from datetime import datetime, timezone
from pathlib import Path

from collectors.activemq import ActiveMQPack
from collectors.base import Observation, scrape_requests

CAPTURE = json.loads((Path(__file__).parent / "fixtures" / "activemq_bulk_master_slave.json").read_text())
TS = datetime(2026, 11, 21, 22, 0, tzinfo=timezone.utc)
PACK = ActiveMQPack()


def normalize(target, response, error=None):
    obs = Observation(TS, target, "activemq", "store-1", scrape_requests(PACK), response, error, 12.0)
    return PACK.normalize(obs, "k1")


def test_master():
    rows = normalize("amq-a", CAPTURE["amq-a"])
    (b,) = rows.broker_state
    assert (b["instance"], b["role"], b["active"], b["reachable"]) == ("amq-a", "master", True, True)
    assert b["broker_name"] == "amq-a" and b["broker_id"].startswith("ID:")
    assert b["uptime_ms"] > 0 and b["total_enqueued"] is not None and b["error"] is None
    (q,) = rows.destination_stats
    assert (q["destination"], q["destination_type"], q["messages"], q["consumers"]) == ("BROKERSCOPE.LAB", "queue", 0, 0)


def test_waiting_slave_is_a_fact_not_an_error():
    rows = normalize("amq-b", CAPTURE["amq-b"])
    (b,) = rows.broker_state
    assert (b["role"], b["active"], b["reachable"]) == ("slave", False, True)
    assert b["total_enqueued"] is None and b["broker_id"] is None  # "Broker is not yet started." markers
    assert b["broker_name"] == "amq-b"  # from the ObjectName when the attribute throws
    assert rows.destination_stats == []  # a slave has no queue MBeans


def test_unanswered_scrape_is_indeterminate():
    rows = normalize("amq-a", None, error="amq-a: connection refused")
    (b,) = rows.broker_state
    assert (b["reachable"], b["active"], b["role"]) == (False, None, "unknown")
    assert "refused" in b["error"]


def test_echo_decides_not_our_request_order():
    """A recording from another poller: items in another order, as-registered keys (Jolokia ≥2.5),
    object error markers (≥2.5), no `config` echoed."""
    resp = copy.deepcopy(CAPTURE["amq-b"])
    resp.reverse()
    for item in resp:
        item["value"] = {
            k.replace("brokerName=amq-b,type=Broker", "type=Broker,brokerName=amq-b"): {
                a: ({".error": True, "error_type": "java.lang.IllegalStateException", "error": "Broker is not yet started."}
                    if isinstance(v, str) and v.startswith("ERROR") else v)
                for a, v in vals.items()
            }
            for k, vals in (item.get("value") or {}).items()
        } if isinstance(item.get("value"), dict) else item.get("value")
    obs = Observation(TS, "amq-b", "activemq", "store-1", [], resp, None, 1.0)
    (b,) = PACK.normalize(obs, "k").broker_state
    assert (b["role"], b["active"], b["broker_name"], b["total_enqueued"]) == ("slave", False, "amq-b", None)


def test_jvm_without_broker_mbean_is_not_active():
    resp = [{"request": r, "status": 404, "error_type": "javax.management.InstanceNotFoundException",
             "error": "No MBean with pattern found"} for r in scrape_requests(PACK)]
    (b,) = normalize("amq-a", resp).broker_state
    assert (b["reachable"], b["active"], b["role"]) == (True, False, "starting")


CAPTURE2 = json.loads((Path(__file__).parent / "fixtures" / "activemq_topics_health_store.json").read_text())


def test_topics_health_and_store_from_a_real_master():
    obs = Observation(TS, "amq-a", "activemq", None, [], CAPTURE2["amq-a"], None, 5.0)
    rows = PACK.normalize(obs, "k")
    (b,) = rows.broker_state
    # no group configured: the logical broker is the store
    assert b["store"].startswith("KahaDBPersistenceAdapter[/") and b["group_name"] == b["store"]
    assert b["health"] == "Good"
    # advisory topics are broker-internal and left out; the application topic stays
    got = sorted((d["destination"], d["destination_type"], d["messages"], d["enqueued"]) for d in rows.destination_stats)
    assert got == [("BROKERSCOPE.LAB", "queue", 0, 0), ("ORDERS", "queue", 3, 3), ("PRICES", "topic", 0, 1)]


def test_a_waiting_slave_has_no_store_health_or_destinations():
    obs = Observation(TS, "amq-b", "activemq", None, [], CAPTURE2["amq-b"], None, 5.0)
    rows = PACK.normalize(obs, "k")
    (b,) = rows.broker_state
    assert (b["role"], b["active"], b["store"], b["health"], b["group_name"]) == ("slave", False, None, None, "amq-b")
    assert rows.destination_stats == [] and rows.replication_stats == []


def test_network_bridge_from_catalog_names():
    """CATALOG §2.1/§2.4: bridge MBean = network connector name + networkBridge=<remote address>."""
    name = ("org.apache.activemq:brokerName=amq-a,connector=networkConnectors,networkBridge=tcp_//10.0.0.7_61616,"
            "networkConnectorName=to-dc2,type=Broker")
    resp = [{"request": {"type": "read", "mbean": "org.apache.activemq:brokerName=*,type=Broker", "attribute": "Slave"},
             "value": {"org.apache.activemq:brokerName=amq-a,type=Broker": {"Slave": False}}, "status": 200},
            {"request": {"type": "read", "mbean": "org.apache.activemq:brokerName=*,connector=networkConnectors,"
                                                  "networkBridge=*,networkConnectorName=*,type=Broker"},
             "value": {name: {"RemoteBrokerName": "amq-dc2", "LocalBrokerName": "amq-a", "RemoteAddress": "tcp://10.0.0.7:61616",
                              "EnqueueCounter": 120, "DequeueCounter": 95}}, "status": 200}]
    rows = PACK.normalize(Observation(TS, "amq-a", "activemq", "store-1", [], resp, None, 1.0), "k")
    (br,) = rows.replication_stats
    assert (br["flow"], br["source_cluster"], br["target_cluster"], br["client"], br["lag_messages"]) == (
        "network-bridge", "amq-a", "amq-dc2", "to-dc2", 25.0)
    assert br["group_name"] == "store-1"


def test_the_1x_drill_recording_still_reads_as_1x_and_normalizes():
    """Jolokia 1.x stays covered by what was recorded from it: the kill-master drill recording
    (jolokia-core 1.7.1, the lab's agent when it was made) keeps its 1.x shapes — canonical keys,
    string markers — and every answered scrape of it becomes one row: master, slave, or starting
    (the restarted broker before its broker MBean is registered: 404, the 1.x text)."""
    from collectors.recording import observation_from_envelope, read_envelopes

    envs = list(read_envelopes(Path(__file__).parent / "fixtures" / "drill_kill_master.jsonl.gz"))
    answered = [e for e in envs if isinstance(e.get("response"), list)]
    assert len(answered) >= 30
    slave = next(e for e in answered if e["target"] == "amq-b")
    (totals,) = slave["response"][1]["value"]
    assert totals == "org.apache.activemq:brokerName=amq-b,type=Broker"  # canonical (1.x default)
    assert slave["response"][1]["value"][totals]["BrokerId"].startswith("ERROR: java.lang.IllegalStateException")
    roles = set()
    for env in answered:
        rows = PACK.normalize(observation_from_envelope(env, "activemq", "store-1"), "k").broker_state
        (row,) = rows
        roles.add((env["target"], row["role"]))
        if row["role"] == "starting":
            assert row["error"].endswith("found for reading attributes")
        else:
            assert row["error"] is None
    assert {("amq-a", "master"), ("amq-b", "slave"), ("amq-b", "master"), ("amq-a", "starting")} <= roles
