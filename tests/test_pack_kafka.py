"""Kafka pack on captures synthesized from CATALOG facts (tests/fixtures/kafka/make_captures.py):
normalize on Jolokia 1.x and 2.x answers, then replay → analyze end to end.

Captures: kafka_controller_failover (1.x, prod-east: kafka-1 controller stops answering at step 6,
kafka-2 controller from step 8, kafka-1 back at step 12), kafka_dual_controller (2.x, prod-west:
west-1 and west-3 both report ActiveControllerCount=1 at steps 4–8), kafka_cross_cluster_lag
(mm2-worker 2.x, replicator-worker 1.x with a timeout at step 6, orders-app 2.x; peak at step 5).
All scrapes 5 s apart; target i of a capture is scraped i×2 ms after the step starts.
"""

import copy
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from analysis.runner import analyze
from collectors.base import MBeanRead
from collectors.kafka import KafkaPack, mm2_source_facts, replicator_facts
from collectors.objectname import parse_object_name
from collectors.recording import observation_from_envelope, read_envelopes
from collectors.replay import replay
from lakehouse.store import Lakehouse
from lakehouse.tables import contract
from settings import config_from_dict

FIX = Path(__file__).parent / "fixtures" / "kafka"
FAILOVER = FIX / "kafka_controller_failover.jsonl.gz"
DUAL = FIX / "kafka_dual_controller.jsonl.gz"
LAG = FIX / "kafka_cross_cluster_lag.jsonl.gz"

FAILOVER_T0 = datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)
LAG_T0 = datetime(2026, 11, 23, 11, 0, tzinfo=timezone.utc)
DUAL_T0 = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)

GROUPS = {
    "kafka-1": "prod-east", "kafka-2": "prod-east", "kafka-3": "prod-east",
    "west-1": "prod-west", "west-2": "prod-west", "west-3": "prod-west",
    "mm2-worker": "connect-dr", "replicator-worker": "connect-dr", "orders-app": None,
}
ORDER = {t: i for t, i in zip(GROUPS, [0, 1, 2] * 3)}  # scrape order inside each capture
PACK = KafkaPack()


def at(t0: datetime, step: int, target: str) -> datetime:
    return t0 + timedelta(seconds=5 * step, milliseconds=2 * ORDER[target])


def envelope_at(path: Path, target: str, step: int) -> dict:
    return [e for e in read_envelopes(path) if e["target"] == target][step]


def normalize_env(env: dict):
    return PACK.normalize(observation_from_envelope(env, "kafka", GROUPS[env["target"]]), "k")


def normalize(path: Path, target: str, step: int):
    return normalize_env(envelope_at(path, target, step))


def only(rows: list[dict]) -> dict:
    assert len(rows) == 1, rows
    return rows[0]


def by_tp(rows: list[dict], flow: str) -> dict:
    return {(r.get("topic"), r.get("partition")): r for r in rows if r["flow"] == flow}


ISR_COLUMNS = ("under_replicated", "under_min_isr", "at_min_isr", "offline_partitions", "active_controllers",
               "isr_shrinks_per_s", "isr_expands_per_s", "lag_max_messages")


def isr(row: dict) -> tuple:
    assert row["flow"] == "isr"
    return tuple(row[c] for c in ISR_COLUMNS)


# --- brokers, Jolokia 1.x -----------------------------------------------------------------------------


def test_controller_in_steady_state():
    rows = normalize(FAILOVER, "kafka-1", 3)
    b = only(rows.broker_state)
    assert (b["instance"], b["group_name"], b["role"], b["active"], b["reachable"], b["error"]) == (
        "kafka-1", "prod-east", "controller", True, True, None)
    # the 404s for MM2, Replicator and consumer MBeans are normal: no rows, no error
    r = only(rows.replication_stats)
    assert isr(r) == (0, 0, 0, 0, 1, 0.0, 0.0, 0.0)
    assert (r["instance"], r["group_name"], r.get("topic"), r.get("partition")) == ("kafka-1", "prod-east", None, None)


def test_survivors_during_the_outage():
    k2 = normalize(FAILOVER, "kafka-2", 9)
    assert (only(k2.broker_state)["role"], only(k2.broker_state)["active"]) == ("controller", True)
    assert isr(only(k2.replication_stats)) == (14, 3, 11, 2, 1, 0.215, 0.0, 0.0)
    k3 = normalize(FAILOVER, "kafka-3", 9)
    assert (only(k3.broker_state)["role"], only(k3.broker_state)["active"]) == ("broker", False)
    assert isr(only(k3.replication_stats)) == (13, 2, 11, 0, 0, 0.199, 0.0, 0.0)
    # before kafka-2 is elected nobody reports the controller role (cluster sum 0)
    assert [only(normalize(FAILOVER, t, 7).broker_state)["active"] for t in ("kafka-2", "kafka-3")] == [False, False]


def test_unanswered_broker_is_indeterminate():
    rows = normalize(FAILOVER, "kafka-1", 7)
    b = only(rows.broker_state)
    assert (b["reachable"], b["active"], b["role"]) == (False, None, "unknown")
    assert "connection refused" in b["error"]
    assert rows.replication_stats == []


def test_returning_broker_catches_up_and_isr_expands():
    lags = [isr(only(normalize(FAILOVER, "kafka-1", s).replication_stats))[-1] for s in (12, 13, 14)]
    assert lags == [15230.0, 4210.0, 0.0]
    assert (only(normalize(FAILOVER, "kafka-1", 12).broker_state)["role"]) == "broker"
    assert isr(only(normalize(FAILOVER, "kafka-2", 13).replication_stats)) == (6, 0, 6, 0, 1, 0.154, 0.133, 0.0)
    assert isr(only(normalize(FAILOVER, "kafka-2", 14).replication_stats)) == (0, 0, 0, 0, 1, 0.141, 0.233, 0.0)


def test_ignore_errors_markers_and_failed_controller_read():
    """1.x string marker on one gauge → that column null; a failed ActiveControllerCount item →
    active unknown, with the reason."""
    env = copy.deepcopy(envelope_at(FAILOVER, "kafka-2", 9))
    rm, ctl = env["response"][0], env["response"][2]
    assert rm["request"]["mbean"] == "kafka.server:name=*,type=ReplicaManager"  # 1.x canonical echo
    rm["value"]["kafka.server:name=UnderReplicatedPartitions,type=ReplicaManager"]["Value"] = (
        "ERROR: java.lang.IllegalStateException: shutting down (class javax.management.RuntimeMBeanException)")
    ctl.update(status=500, error_type="java.lang.IllegalStateException", error="shutting down")
    del ctl["value"]
    rows = normalize_env(env)
    b = only(rows.broker_state)
    assert (b["reachable"], b["active"], b["role"]) == (True, None, "broker")
    assert "500" in b["error"] and "UnderReplicatedPartitions" in b["error"]
    assert isr(only(rows.replication_stats)) == (None, 3, 11, 2, None, 0.215, 0.0, 0.0)


# --- brokers, Jolokia 2.x ------------------------------------------------------------------------------


def test_dual_controller_answers_in_2x_shapes():
    env = envelope_at(DUAL, "west-3", 5)
    rm = env["response"][0]
    assert "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions" in rm["value"]  # as registered
    assert env["response"][4][".error"] is True and env["response"][4]["status"] == 404
    for target in ("west-1", "west-3"):
        rows = normalize(DUAL, target, 5)
        assert (only(rows.broker_state)["role"], only(rows.broker_state)["active"]) == ("controller", True)
        assert isr(only(rows.replication_stats)) == (0, 0, 0, 0, 1, 0.0, 0.0, 0.0)
    assert only(normalize(DUAL, "west-2", 5).broker_state)["active"] is False


# --- cross-cluster and consumers ----------------------------------------------------------------------


def test_mirrormaker2_source_and_checkpoints_2x():
    rows = normalize(LAG, "mm2-worker", 5)
    assert rows.broker_state == []  # a Connect worker is not a broker
    src = by_tp(rows.replication_stats, "mirrormaker2")
    assert set(src) == {("primary.orders", 0), ("primary.orders", 1), ("primary.payments", 0), ("primary.payments", 1)}
    r = src[("primary.orders", 1)]
    assert (r["source_cluster"], r["target_cluster"], r["group_name"], r["instance"]) == (
        "primary", "backup", "connect-dr", "mm2-worker")
    assert (r["latency_ms"], r["latency_max_ms"], r["record_age_ms"], r["throughput_per_s"], r.get("lag_messages")) == (
        3900.0, 5460.0, 3865.0, 30.0, None)
    assert src[("primary.payments", 0)]["latency_ms"] == 2700.0 and src[("primary.payments", 0)]["throughput_per_s"] == 12.0
    ckpt = by_tp(rows.replication_stats, "mirrormaker2-checkpoint")
    c = ckpt[("primary.orders", 0)]
    assert (c["client"], c["latency_ms"], c["latency_max_ms"]) == ("orders-svc", 3400.0, 4000.0)


def test_replicator_1x():
    env = envelope_at(LAG, "replicator-worker", 5)
    keys = env["response"][8]["value"]
    assert ("confluent.replicator:confluent-replicator-name=replicator-dc1-dc2,confluent-replicator-task=0,"
            "confluent-replicator-task-topic-partition=1,confluent-replicator-topic-name=orders,"
            "type=confluent-replicator-task-metrics") in keys  # 1.x canonical: keys sorted
    rows = normalize_env(env)
    assert rows.broker_state == []
    rep = by_tp(rows.replication_stats, "replicator")
    r = rep[("orders", 1)]
    assert (r["source_cluster"], r["target_cluster"], r["client"]) == ("dc1", "dc2", "replicator-dc1-dc2/0")
    assert (r["lag_messages"], r["latency_ms"], r["throughput_per_s"]) == (7320.0, 11505.0, 180.0)
    assert (rep[("payments", 1)]["client"], rep[("payments", 1)]["lag_messages"]) == ("replicator-dc1-dc2/1", 1525.0)


def test_replicator_throughput_marker_2x():
    env = copy.deepcopy(envelope_at(LAG, "replicator-worker", 5))
    for attrs in env["response"][8]["value"].values():
        attrs["confluent-replicator-task-topic-partition-throughput"] = {
            ".error": True, "error_type": "java.lang.IllegalStateException", "error": "task stopping"}
    rep = by_tp(normalize_env(env).replication_stats, "replicator")
    assert (rep[("orders", 1)]["throughput_per_s"], rep[("orders", 1)]["lag_messages"]) == (None, 7320.0)


def test_consumer_lag():
    rows = normalize(LAG, "orders-app", 5)
    assert rows.broker_state == []
    per_tp = by_tp(rows.replication_stats, "consumer")
    assert per_tp[(None, None)]["lag_max_messages"] == 1503.0  # client-level records-lag-max
    assert (per_tp[("orders", 0)]["client"], per_tp[("orders", 0)]["lag_messages"], per_tp[("orders", 0)]["lag_max_messages"]) == (
        "orders-app-1", 1500.0, 1500.0)
    assert per_tp[("orders", 1)]["lag_messages"] == 1503.0
    assert per_tp[("orders", 0)]["group_name"] == "orders-app"  # no group configured: the target


def read_of(name: str, **attrs) -> MBeanRead:
    return MBeanRead(parse_object_name(name), attributes=attrs)


def test_unverified_replicator_key_forms_are_accepted():
    alt = read_of("confluent.replicator:type=confluent-replicator-task-metrics,confluent-replicator-name=r1,"
                  "confluent-replicator-task=2,confluent-replicator-topic=orders,confluent-replicator-partition=orders-3",
                  **{"confluent-replicator-task-topic-partition-message-lag": 5})
    f = replicator_facts(alt)
    assert (f["topic"], f["partition"], f["client"], f["lag_messages"], f["throughput_per_s"]) == ("orders", 3, "r1/2", 5.0, None)
    task_level = read_of("confluent.replicator:type=confluent-replicator-task-metrics,confluent-replicator-name=r1,"
                         "confluent-replicator-task=2")
    assert replicator_facts(task_level) is None


def test_mm2_before_kip911_and_empty_metric_window():
    old = read_of("kafka.connect.mirror:type=MirrorSourceConnector,target=backup,topic=primary.orders,partition=0",
                  **{"replication-latency-ms": 140, "replication-latency-ms-avg": math.nan, "record-age-ms": "95"})
    f = mm2_source_facts(old)
    assert (f["source_cluster"], f["target_cluster"], f["partition"]) == (None, "backup", 0)
    assert (f["latency_ms"], f["latency_max_ms"], f["record_age_ms"]) == (140.0, None, 95.0)


def test_every_row_fits_its_contract():
    for path in (FAILOVER, DUAL, LAG):
        for env in read_envelopes(path):
            rows = normalize_env(env)
            for table in PACK.tables:
                c = contract(table)
                for row in rows.get(table):
                    assert set(row) <= set(c.column_names), set(row) - set(c.column_names)
                pa.RecordBatch.from_pylist(rows.get(table), schema=c.schema)  # types and non-nulls
                keys = [tuple(r.get(k) for k in c.keys) for r in rows.get(table)]
                assert len(keys) == len(set(keys))


# --- end to end: replay → analyze -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def lakehouse(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("kafka") / "lh"
    cfg = config_from_dict({
        "lakehouse": str(root),
        "targets": [{"name": t, "kind": "kafka", "url": f"http://{t}:8778/jolokia", **({"group": g} if g else {})}
                    for t, g in GROUPS.items()],
    })
    for path in (FAILOVER, DUAL, LAG):
        replay(cfg, path)
    analyze(cfg, spark=spark)
    return Lakehouse(cfg.lakehouse_root())


def test_controller_move_is_a_failover(lakehouse):
    events = lakehouse.read("failover_events").to_pylist()
    e = only([e for e in events if e["group_name"] == "prod-east"])
    assert (e["kind"], e["event_type"], e["from_instance"], e["to_instance"], e["overlap"]) == (
        "kafka", "failover", "kafka-1", "kafka-2", False)
    assert e["old_last_active"] == at(FAILOVER_T0, 5, "kafka-1")
    assert e["old_first_unanswered"] == at(FAILOVER_T0, 6, "kafka-1")
    assert e["new_last_inactive"] == at(FAILOVER_T0, 7, "kafka-2")
    assert e["new_first_active"] == at(FAILOVER_T0, 8, "kafka-2")
    assert e["outage_upper_s"] == pytest.approx(15.002)  # 5 s before the controller move was seen …
    assert e["detection_s"] == pytest.approx(10.002)  # … 10 s after kafka-1's first missed scrape
    windows = lakehouse.read("split_brain_windows").to_pylist()
    assert [w for w in windows if w["group_name"] == "prod-east"] == []


def test_two_active_controllers_are_a_split_brain(lakehouse):
    w = only([w for w in lakehouse.read("split_brain_windows").to_pylist() if w["group_name"] == "prod-west"])
    assert (w["kind"], w["instance_a"], w["instance_b"], w["certainty"]) == ("kafka", "west-1", "west-3", "certain")
    assert w["certain_start"] == at(DUAL_T0, 4, "west-3")
    assert w["certain_end"] == at(DUAL_T0, 8, "west-1")
    assert w["possible_start"] == at(DUAL_T0, 3, "west-3")
    assert w["possible_end"] == at(DUAL_T0, 9, "west-1")
    assert w["duration_s"] == pytest.approx(19.996)
    # the controller then stays on west-3: recorded as a hand-over that overlapped
    e = only([e for e in lakehouse.read("failover_events").to_pylist() if e["group_name"] == "prod-west"])
    assert (e["from_instance"], e["to_instance"], e["overlap"]) == ("west-1", "west-3", True)


def series(rows: list[dict], flow: str, topic: str, partition: int, column: str, instance: str) -> list:
    picked = [r for r in rows if (r["flow"], r["topic"], r["partition"], r["instance"]) == (flow, topic, partition, instance)]
    return [r[column] for r in sorted(picked, key=lambda r: r["ts"])]


def test_cross_cluster_lag_grows_and_drains(lakehouse):
    rows = lakehouse.read("replication_stats").to_pylist()
    # Replicator orders-0: the timed-out scrape at step 6 has no row (not a zero)
    assert series(rows, "replicator", "orders", 0, "lag_messages", "replicator-worker") == [
        0.0, 0.0, 420.0, 1800.0, 5200.0, 6100.0, 650.0, 0.0, 0.0]
    assert series(rows, "replicator", "payments", 1, "latency_ms", "replicator-worker") == [
        50.0, 53.0, 915.0, 4215.0, 9815.0, 11515.0, 1415.0, 75.0, 55.0]
    assert series(rows, "mirrormaker2", "primary.orders", 1, "latency_ms", "mm2-worker") == [
        130.0, 130.0, 520.0, 1560.0, 3250.0, 3900.0, 2340.0, 780.0, 130.0, 130.0]
    assert series(rows, "mirrormaker2", "primary.payments", 0, "record_age_ms", "mm2-worker") == [
        55.0, 55.0, 325.0, 1045.0, 2215.0, 2665.0, 1585.0, 505.0, 55.0, 55.0]
    assert series(rows, "consumer", "orders", 1, "lag_messages", "orders-app") == [
        15.0, 13.0, 18.0, 243.0, 983.0, 1503.0, 703.0, 123.0, 11.0, 14.0]
    peak = [r for r in rows if r["ts"] == at(LAG_T0, 5, "mm2-worker") and r["flow"] == "mirrormaker2"]
    assert {(r["topic"], r["partition"]): r["latency_max_ms"] for r in peak} == {
        ("primary.orders", 0): 4620.0, ("primary.orders", 1): 5460.0,
        ("primary.payments", 0): 3780.0, ("primary.payments", 1): 3990.0}
    assert {r["group_name"] for r in rows if r["flow"] in ("mirrormaker2", "replicator")} == {"connect-dr"}


def test_collector_health_and_states_of_non_brokers(lakehouse):
    health = lakehouse.read("collector_health").to_pylist()
    mm2 = [h for h in health if h["target"] == "mm2-worker"]
    assert len(mm2) == 10 and {(h["items_ok"], h["items_failed"]) for h in mm2} == {(2, 7)}
    (timeout,) = [h for h in health if not h["answered"] and h["target"] == "replicator-worker"]
    assert timeout["error_kind"] == "timeout" and timeout["ts"] == at(LAG_T0, 6, "replicator-worker")
    state = lakehouse.read("broker_state").to_pylist()
    # Connect workers and consumer apps have no broker rows, except the indeterminate unanswered one
    assert [(s["instance"], s["role"], s["active"]) for s in state if s["group_name"] in ("connect-dr", "orders-app")] == [
        ("replicator-worker", "unknown", None)]
    roles = {(s["instance"], s["role"]) for s in state if s["group_name"] == "prod-east"}
    assert roles == {("kafka-1", "controller"), ("kafka-1", "unknown"), ("kafka-1", "broker"),
                     ("kafka-2", "broker"), ("kafka-2", "controller"), ("kafka-3", "broker")}
