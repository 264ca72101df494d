"""The Kafka pack on what real Kafka 4.3.1 JVMs answered (tests/fixtures/kafka/real_kafka_4.3.1.json.gz:
the Jolokia 2.6.0 agent's answers to KafkaPack.requests() from infra.kafka_lab's three combined KRaft
nodes p1-p3, the DR node d1 and the MirrorMaker 2 worker, healthy and 6 s after a SIGKILL of p3).
No JVM needed; docs/KAFKA_LAB.md says how the file was captured."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.base import Observation
from collectors.kafka import KafkaPack, tidy_flows

CAPTURE = Path(__file__).parent / "fixtures" / "kafka" / "real_kafka_4.3.1.json.gz"


@pytest.fixture(scope="module")
def capture() -> dict:
    with gzip.open(CAPTURE, "rt") as fh:
        return json.load(fh)


def rows(capture: dict, phase: str, node: str):
    o = capture[phase][node]
    obs = Observation(datetime.fromtimestamp(o["ts"], timezone.utc), node, "kafka", "kafka-primary",
                      o["requests"], o["response"], None, 5.0)
    return KafkaPack().normalize(obs, f"{phase}-{node}")


def test_exactly_one_active_controller_among_the_combined_nodes(capture):
    roles = {n: rows(capture, "healthy", n).broker_state[0] for n in ("p1", "p2", "p3")}
    assert [n for n, r in roles.items() if r["active"]] == ["p1"]
    assert all(r["role"] == ("controller" if r["active"] else "broker") for r in roles.values())
    assert rows(capture, "healthy", "d1").broker_state[0]["active"] is True  # the DR cluster's own controller
    assert rows(capture, "healthy", "mm2").broker_state == []  # a Connect worker is no broker


def test_a_killed_broker_shows_as_under_replicated_partitions_on_the_survivors(capture):
    isr = {n: rows(capture, "p3_killed", n).replication_stats[0] for n in ("p1", "p2")}
    assert all(r["flow"] == "isr" for r in isr.values())
    # RF 3, min ISR 2: every partition p3 held is under-replicated and at min ISR, none under it
    assert sum(r["under_replicated"] for r in isr.values()) == 6
    assert sum(r["at_min_isr"] for r in isr.values()) == 4
    assert sum(r["under_min_isr"] for r in isr.values()) == 0
    # KRaft: the controller took the fenced broker out of the ISRs; the leaders' shrink meters did not count it
    assert all(r["isr_shrinks_per_s"] == 0.0 for r in isr.values())
    assert sum(r["active_controllers"] for r in isr.values()) == 1


def test_one_row_per_consumer_partition_and_no_internal_topics(capture):
    flows = rows(capture, "healthy", "mm2").replication_stats
    per_partition = [(r["client"], r["topic"], r["partition"]) for r in flows if r["flow"] == "consumer" and r.get("topic")]
    assert Counter(per_partition).most_common(1)[0][1] == 1
    topics = {t for _, t, _ in per_partition}
    assert topics == {"lab.orders"}  # not lab_orders, not mm2-offsets.primary.internal (25 partitions) …
    raw = json.dumps(capture["healthy"]["mm2"]["response"])
    assert "topic=lab_orders" in raw and "mm2-offsets.primary.internal" in raw  # … which the worker does report


def test_mirrormaker2_rows_carry_the_replication_consumers_lag(capture):
    flows = rows(capture, "healthy", "mm2").replication_stats
    mm2 = {r["partition"]: r for r in flows if r["flow"] == "mirrormaker2"}
    assert sorted(mm2) == [0, 1, 2]
    for r in mm2.values():
        assert (r["source_cluster"], r["target_cluster"], r["topic"]) == ("primary", "dr", "primary.lab.orders")
        assert r["lag_messages"] == 0.0 and r["latency_ms"] > 0
    checkpoints = [r for r in flows if r["flow"] == "mirrormaker2-checkpoint"]
    assert {(r["client"], r["partition"]) for r in checkpoints} == {("g1", 0), ("g1", 1), ("g1", 2)}


def test_tidy_flows_keeps_an_underscore_topic_that_has_no_dotted_twin():
    own = {"flow": "consumer", "client": "app", "topic": "orders_eu", "partition": 0, "lag_messages": 5.0}
    twin = {"flow": "consumer", "client": "app", "topic": "lab_x", "partition": 0, "lag_messages": 1.0}
    dotted = {"flow": "consumer", "client": "app", "topic": "lab.x", "partition": 0, "lag_messages": 1.0}
    assert tidy_flows([own, twin, dotted]) == [own, dotted]


def test_identity_replication_policy_lag_is_matched_too():
    consumer = {"flow": "consumer", "client": "east->west|MirrorSourceConnector-1|replication-consumer",
                "topic": "orders", "partition": 3, "lag_messages": 42.0}
    mm2 = {"flow": "mirrormaker2", "source_cluster": "east", "target_cluster": "west", "topic": "orders", "partition": 3}
    out = tidy_flows([consumer, mm2])
    assert out[1]["lag_messages"] == 42.0
