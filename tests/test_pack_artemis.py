"""Artemis pack: normalize on single exchanges (Jolokia 1.x and 2.x shapes, 404/500 mixes, a pre-2.15
broker without `Active`), the Topology parser, and replays of the captures through the whole
pipeline (failover → failover_events, same NodeID both active → split_brain_windows).

Captures: tests/fixtures/artemis/ (built from CATALOG facts by make_captures.py there)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from analysis.runner import analyze
from collectors.artemis import ArtemisPack, Topology, backup_announced, parse_topology
from collectors.base import Observation, scrape_requests
from collectors.objectname import parse_object_name
from collectors.recording import observation_from_envelope, read_envelopes
from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.fixtures.artemis import make_captures as mk

FIX = Path(__file__).parent / "fixtures" / "artemis"
PACK = ArtemisPack()
NODE = mk.NODE_ID
TS = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)


def capture(name: str) -> list[dict]:
    return list(read_envelopes(FIX / name, strict=True))


FAILOVER_1 = capture("failover_jolokia1.jsonl.gz")
FAILOVER_2 = capture("failover_jolokia2.jsonl.gz")


def scrape(envs: list[dict], target: str, i: int):
    """Rows of the i-th scrape of `target` in a capture (no configured group)."""
    env = [e for e in envs if e["target"] == target][i]
    return PACK.normalize(observation_from_envelope(env, "artemis", None), "k")


def normalize(response, error=None, group=None, requests=None):
    obs = Observation(TS, "art-x", "artemis", group, requests or scrape_requests(PACK), response, error, 7.0)
    return PACK.normalize(obs, "k")


# --- requests ------------------------------------------------------------------------------------


def test_requests_split_role_reads_from_the_tolerant_bulk():
    reqs = scrape_requests(PACK)
    assert [r["attribute"] for r in reqs[:2]] == ["Active", "ActivationSequence"]
    assert all("config" not in r for r in reqs[:2])  # their 404 / 500 must stay visible
    assert all(r["config"] == {"ignoreErrors": True} for r in reqs[2:])
    names = [parse_object_name(r["mbean"]) for r in reqs]
    assert all(n.domain == "org.apache.activemq.artemis" and n.pattern and n["broker"] == "*" for n in names)
    assert names[3].as_dict() == {"broker": "*", "component": "cluster-connections", "name": "*"}
    assert names[4].as_dict() == {"broker": "*", "component": "addresses", "address": "*", "subcomponent": "queues",
                                  "routing-type": "*", "queue": "*"}  # the destination read comes last


def test_a_named_broker_is_quoted_as_artemis_registers_it():
    (active, *_rest, cluster, _queues) = scrape_requests(PACK, "0.0.0.0")
    assert active["mbean"] == 'org.apache.activemq.artemis:broker="0.0.0.0"'
    assert parse_object_name(cluster["mbean"])["broker"] == "0.0.0.0"


# --- one exchange at a time, from the failover capture --------------------------------------------


def test_live_with_synchronized_backup():
    rows = scrape(FAILOVER_1, "art-live", 2)
    (b,) = rows.broker_state
    assert (b["instance"], b["group_name"], b["broker_name"], b["role"], b["active"]) == ("art-live", NODE, "art-live", "live", True)
    assert (b["backup"], b["replica_sync"], b["node_id"], b["broker_id"]) == (False, True, NODE, NODE)
    assert (b["activation_sequence"], b["ha_policy"], b["uptime_ms"], b["connections"]) == (7, "Primary", 3_602_004, 3)
    # totals over orders 1220/1206, audit 410/0, DLQ 3/0, ExpiryQueue 0/0
    assert (b["total_enqueued"], b["total_dequeued"], b["total_messages"], b["consumers"]) == (1633, 1206, 427, 1)
    assert b["error"] is None and b["reachable"] is True

    dest = {d["destination"]: d for d in rows.destination_stats}
    assert set(dest) == {"orders", "audit-client.price-audit", "DLQ", "ExpiryQueue"}
    o = dest["orders"]
    assert (o["logical_destination"], o["destination_type"], o["messages"], o["in_flight"], o["consumers"]) == ("orders", "queue", 14, 2, 1)
    assert (o["enqueued"], o["dequeued"], o["expired"], o["oldest_message_age_ms"], o["paused"]) == (1220, 1206, 0, 3500, False)
    sub = dest["audit-client.price-audit"]
    assert (sub["logical_destination"], sub["destination_type"], sub["messages"], sub["consumers"]) == ("prices", "topic", 410, 0)
    assert dest["ExpiryQueue"]["oldest_message_age_ms"] is None  # empty queue: FirstMessageAge null
    assert {d["group_name"] for d in rows.destination_stats} == {NODE}

    (r,) = rows.replication_stats
    assert (r["flow"], r["instance"], r["group_name"], r["in_sync"], r["backup_announced"]) == ("artemis-replica", "art-live", NODE, True, True)


def test_live_before_its_backup_registered_is_unprotected():
    (r,) = scrape(FAILOVER_1, "art-live", 0).replication_stats
    assert (r["in_sync"], r["backup_announced"]) == (False, False)  # topology nodes=1 members=1
    (r,) = scrape(FAILOVER_1, "art-live", 1).replication_stats
    assert (r["in_sync"], r["backup_announced"]) == (False, True)  # announced, initial sync running


def test_passive_backup_shares_the_live_node_id_and_has_no_queues():
    rows = scrape(FAILOVER_1, "art-backup", 5)
    (b,) = rows.broker_state
    assert (b["role"], b["active"], b["backup"], b["replica_sync"]) == ("backup", False, True, True)
    assert (b["node_id"], b["group_name"], b["activation_sequence"], b["ha_policy"]) == (NODE, NODE, 7, "Backup")
    assert b["error"] is None  # queue / cluster-connection 404s are facts of a passive backup
    assert rows.destination_stats == [] and rows.replication_stats == []


def test_backup_still_starting_answers_500_and_markers():
    env = [e for e in FAILOVER_1 if e["target"] == "art-backup"][0]
    assert env["response"][0]["status"] == 500  # the "Broker is not started" item
    rows = scrape(FAILOVER_1, "art-backup", 0)
    (b,) = rows.broker_state
    assert (b["reachable"], b["active"], b["role"]) == (True, False, "starting")
    assert b["group_name"] == "art-backup"  # NodeID unreadable yet: no group to derive
    assert b["node_id"] is None and b["uptime_ms"] is None and b["ha_policy"] == "Backup"  # getHAPolicy has no checkStarted
    assert "Broker is not started. It can not be managed yet" in b["error"]
    assert rows.destination_stats == [] and rows.replication_stats == []


def test_backup_after_failover_is_live_with_the_queues():
    rows = scrape(FAILOVER_1, "art-backup", mk.BACKUP_ACTIVE)
    (b,) = rows.broker_state
    assert (b["role"], b["active"], b["backup"], b["replica_sync"], b["activation_sequence"]) == ("live", True, False, False, 8)
    assert b["group_name"] == NODE and b["ha_policy"] == "Backup"  # configured policy, not the role
    dest = {d["destination"]: d for d in rows.destination_stats}
    assert (dest["orders"]["messages"], dest["orders"]["oldest_message_age_ms"]) == (28, 14_500)
    (r,) = rows.replication_stats
    assert (r["in_sync"], r["backup_announced"]) == (False, False)  # nobody replicates to it now


def test_dead_live_is_indeterminate():
    (b,) = scrape(FAILOVER_1, "art-live", mk.LIVE_DIES).broker_state
    assert (b["reachable"], b["active"], b["role"]) == (False, None, "unknown")
    assert "connection refused" in b["error"]


FACTS = ("instance", "group_name", "broker_name", "reachable", "active", "role", "backup", "replica_sync", "node_id",
         "activation_sequence", "uptime_ms", "connections", "total_enqueued", "total_dequeued", "total_messages", "consumers")


def facts(envs):
    out = []
    for env in envs:
        rows = PACK.normalize(observation_from_envelope(env, "artemis", None), "k")
        out.append((
            [tuple(b.get(c) for c in FACTS) + (b["error"] is None,) for b in rows.broker_state],
            sorted(tuple(sorted(d.items())) for d in rows.destination_stats),
            [(r["in_sync"], r["backup_announced"]) for r in rows.replication_stats],
        ))
    return out


def test_jolokia_1_and_2_shapes_give_the_same_facts():
    one, two = FAILOVER_1[13 * 2 + 1], FAILOVER_2[13 * 2 + 1]
    item1, item2 = one["response"][4], two["response"][4]  # the queue read
    assert list(item1["value"])[0].startswith('org.apache.activemq.artemis:address="')  # canonical (sorted) keys
    assert list(item2["value"])[0].startswith('org.apache.activemq.artemis:broker="')  # as registered
    early1, early2 = FAILOVER_1[1]["response"][2]["value"], FAILOVER_2[1]["response"][2]["value"]
    assert isinstance(next(iter(early1.values()))["Backup"], str) and next(iter(early2.values()))["Backup"][".error"] is True
    assert facts(FAILOVER_1) == facts(FAILOVER_2)
    # the configured policy names differ by version only
    assert scrape(FAILOVER_2, "art-live", 3).broker_state[0]["ha_policy"] == "Replication Primary w/lock manager"


# --- hand-written exchanges: old versions, odd answers -----------------------------------------------


def old_broker_response(backup: bool) -> list[dict]:
    """Artemis 2.10 behind Jolokia 1.x: no Active (≈2.15) and no ActivationSequence (≈2.18) → 404."""
    anf = "javax.management.AttributeNotFoundException"

    def missing(attr):
        return {"request": {"mbean": "org.apache.activemq.artemis:broker=*", "attribute": attr, "type": "read"},
                "error_type": anf, "status": 404,
                "error": f"{anf} : No attribute found for any MBean matching org.apache.activemq.artemis:broker=* pattern"}

    values = {"Backup": backup, "ReplicaSync": not backup, "NodeID": NODE, "HAPolicy": "Replica" if backup else "Replicated",
              "SharedStore": False, "Started": True, "UptimeMillis": 5000, "ConnectionCount": 0 if backup else 4,
              "TotalMessageCount": 0, "TotalMessagesAdded": 0, "TotalMessagesAcknowledged": 0, "TotalConsumerCount": 0,
              "Version": "2.10.1"}
    bulk = {"request": {"mbean": "org.apache.activemq.artemis:broker=*", "attribute": scrape_requests(PACK)[2]["attribute"], "type": "read"},
            "value": {'org.apache.activemq.artemis:broker="old"': values}, "timestamp": 1795424400, "status": 200}
    nf = {"error_type": "javax.management.InstanceNotFoundException", "status": 404,
          "error": "javax.management.InstanceNotFoundException : No MBean with pattern … found for reading attributes"}
    return [missing("Active"), missing("ActivationSequence"), bulk, dict(nf), dict(nf)]


@pytest.mark.parametrize("backup, role, active", [(False, "live", True), (True, "backup", False)])
def test_without_active_attribute_the_role_is_derived_and_said_so(backup, role, active):
    (b,) = normalize(old_broker_response(backup)).broker_state
    assert (b["role"], b["active"], b["backup"], b["activation_sequence"], b["broker_name"]) == (role, active, backup, None, "old")
    assert "Active not reported (Artemis 2.10.1 < 2.15): active derived from Backup=" in b["error"]
    assert "ActivationSequence" not in b["error"]  # a version fact, not an error


def test_named_broker_on_jolokia_2_missing_attribute():
    """Named (non-wildcard) reads: the missing `Active` is a 404 item naming the broker."""
    reqs = PACK.requests("old")
    resp = old_broker_response(False)
    resp[0] = {"request": reqs[0], "status": 404, ".error": True, "error_type": "javax.management.AttributeNotFoundException",
               "error_type_jmx": "javax.management.AttributeNotFoundException", "error": "No such attribute: Active"}
    resp[2] = {"request": reqs[2], "value": resp[2]["value"]['org.apache.activemq.artemis:broker="old"'], "status": 200, "timestamp": 1}
    (b,) = normalize(resp, requests=reqs).broker_state
    assert (b["role"], b["active"], b["group_name"]) == ("live", True, NODE)


def test_one_failing_attribute_does_not_lose_the_others():
    env = FAILOVER_2[2 * 4]  # the live, Jolokia 2.x
    resp = [dict(i) for i in env["response"]]
    value = dict(next(iter(resp[2]["value"].values())))
    value["UptimeMillis"] = {".error": True, "error_type": "java.lang.SecurityException", "error": "User amq-view does not have permission"}
    resp[2]["value"] = {next(iter(resp[2]["value"])): value}
    (b,) = normalize(resp).broker_state
    assert (b["role"], b["active"], b["node_id"], b["uptime_ms"], b["connections"]) == ("live", True, NODE, None, 3)
    assert b["error"].startswith("UptimeMillis: java.lang.SecurityException")


def test_configured_group_wins_over_node_id():
    env = FAILOVER_1[0]
    rows = PACK.normalize(observation_from_envelope(env, "artemis", "pair-1"), "k")
    assert {r["group_name"] for r in rows.broker_state + rows.destination_stats + rows.replication_stats} == {"pair-1"}


def test_jvm_without_broker_mbean():
    nf = {"status": 404, "error_type": "javax.management.InstanceNotFoundException", "error": "No MBean with pattern … found"}
    (b,) = normalize([dict(nf) for _ in scrape_requests(PACK)]).broker_state
    assert (b["reachable"], b["active"], b["role"]) == (True, False, "starting")
    denied = {"status": 403, "error_type": "java.lang.SecurityException", "error": "Reading attribute … not allowed"}
    (b,) = normalize([dict(denied) for _ in scrape_requests(PACK)]).broker_state
    assert (b["reachable"], b["active"], b["role"]) == (True, None, "unknown") and "403" in b["error"]


def test_two_brokers_in_one_jvm_are_two_instances():
    ts = TS
    live, backup = mk.failover_pair(3, "2.44.0", mk.POLICIES_2_44)
    colocated = mk.Broker("colocated-backup", "2.44.0", "Colocated", "0c0c0c0c-8b6e-11f0-9c3a-0242ac110009", ts - timedelta(minutes=5))
    registry = live.registry(ts) + colocated.registry(ts)
    resp = [mk.answer(mk.Jolokia2(), r, registry, ts) for r in scrape_requests(PACK)]
    rows = normalize(resp)
    got = {(b["instance"], b["role"], b["group_name"]) for b in rows.broker_state}
    assert got == {("art-x/art-live", "live", NODE), ("art-x/colocated-backup", "backup", "0c0c0c0c-8b6e-11f0-9c3a-0242ac110009")}
    assert {d["instance"] for d in rows.destination_stats} == {"art-x/art-live"}


# --- Topology text (CATALOG §1.5) --------------------------------------------------------------------

TOPOLOGY = (
    "topology on Topology@2f1c7d9e[owner=ClusterConnectionImpl@6d2a…]:\n"
    "\tn1 => TopologyMember[id = n1, connector=Pair[a=TransportConfiguration(name=artemis, factory=…) ?port=61616&host=a, "
    "b=TransportConfiguration(name=artemis, factory=…) ?port=61616&host=b], backupGroupName=null, scaleDownGroupName=null]\n"
    "\tn2 => TopologyMember[id=n2, connector=Pair[primary, backup], backupGroupName=g2, scaleDownGroupName=null]\n"
    "\tnodes=4\tmembers=2"
)


def test_parse_topology_members_and_counts():
    t = parse_topology(TOPOLOGY)
    assert set(t.members) == {"n1", "n2"} and (t.nodes, t.member_count) == (4, 2)
    assert t.members["n2"].startswith("TopologyMember[id=n2,")
    assert parse_topology("nodes=1 members=1") == Topology({}, 1, 1)  # spaces instead of tabs
    assert parse_topology("topology on Topology@1:\n\tnodes=0\tmembers=0\tEmpty") == Topology({}, 0, 0)
    assert parse_topology(None) is None and parse_topology({"not": "text"}) is None


def test_backup_announced_only_where_the_counts_decide():
    assert backup_announced(parse_topology(TOPOLOGY), "n1") is True  # every member has a backup
    assert backup_announced(Topology({"n1": "…"}, 1, 1), "n1") is False
    assert backup_announced(Topology({"n1": "…", "n2": "…"}, 3, 2), "n1") is None  # one of two has one
    assert backup_announced(Topology({"n2": "…"}, 2, 1), "n1") is None  # not our member
    assert backup_announced(None, "n1") is None


# --- the whole pipeline --------------------------------------------------------------------------------


def at(base: datetime, seconds: int, ms: int) -> datetime:
    return base + timedelta(seconds=seconds, milliseconds=ms)


def utc(v: datetime) -> datetime:
    return v if v.tzinfo else v.replace(tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, spark):
    """Failover (Jolokia 1.x) and split-brain (2.x) captures replayed into one lakehouse, analysed once.
    Four targets of kind artemis and NO group: grouping comes from the NodeID."""
    root = tmp_path_factory.mktemp("artemis")
    cfg = config_from_dict({
        "lakehouse": str(root / "lh"),
        "targets": [{"name": n, "kind": "artemis", "url": f"http://{n}.example:8161/console/jolokia"}
                    for n in ("art-live", "art-backup", "art-a", "art-b")],
    })
    res = [replay(cfg, FIX / f) for f in ("failover_jolokia1.jsonl.gz", "split_brain.jsonl.gz")]
    assert [r.envelopes for r in res] == [r.new_rows for r in res] == [40, 24]
    analyze(cfg, spark=spark)
    lh = Lakehouse(cfg.lakehouse_root())
    return {t: lh.read(t).to_pylist() for t in (
        "broker_state", "destination_stats", "replication_stats", "collector_health", "role_intervals",
        "failover_events", "split_brain_windows")}


def test_replayed_failover_is_one_event_in_the_node_id_group(replayed):
    (e,) = [e for e in replayed["failover_events"] if e["group_name"] == NODE]
    assert (e["kind"], e["event_type"], e["from_instance"], e["to_instance"]) == ("artemis", "failover", "art-live", "art-backup")
    assert utc(e["old_last_active"]) == at(mk.T0, mk.LIVE_DIES - 1, mk.LIVE_OFFSET_MS)
    assert utc(e["new_first_active"]) == at(mk.T0, mk.BACKUP_ACTIVE, mk.BACKUP_OFFSET_MS)
    assert utc(e["new_last_inactive"]) == at(mk.T0, mk.BACKUP_ACTIVE - 1, mk.BACKUP_OFFSET_MS)
    assert e["overlap"] is False and e["outage_upper_s"] == pytest.approx(4.005)
    assert replayed["failover_events"] == [e]  # the split-brain pair hands nothing over
    assert not [w for w in replayed["split_brain_windows"] if w["group_name"] == NODE]


def test_replayed_failover_knows_when_the_live_stopped_answering(replayed):
    (e,) = [e for e in replayed["failover_events"] if e["group_name"] == NODE]
    assert utc(e["old_first_unanswered"]) == at(mk.T0, mk.LIVE_DIES, mk.LIVE_OFFSET_MS)
    assert e["detection_s"] == pytest.approx(
        (at(mk.T0, mk.BACKUP_ACTIVE, mk.BACKUP_OFFSET_MS) - at(mk.T0, mk.LIVE_DIES, mk.LIVE_OFFSET_MS)).total_seconds())


def test_replayed_split_brain_is_certain(replayed):
    (w,) = replayed["split_brain_windows"]
    assert (w["kind"], w["group_name"], w["instance_a"], w["instance_b"], w["certainty"]) == (
        "artemis", mk.SPLIT_NODE_ID, "art-a", "art-b", "certain")
    assert utc(w["certain_start"]) == at(mk.T1, mk.SPLIT_ACTIVE, mk.B_OFFSET_MS)
    assert utc(w["certain_end"]) == at(mk.T1, mk.SPLIT_STEPS - 1, mk.A_OFFSET_MS)
    assert w["duration_s"] == pytest.approx(4.995)
    # TotalMessagesAdded growth on each side's ACTIVE scrapes in the possible window:
    # a 1120 → 1220; b 10 (loaded from the journal on activation) → 70: 60 accepted while active
    assert (w["enqueued_a"], w["enqueued_b"]) == (100, 60)


def test_replayed_silver_rows(replayed):
    state = replayed["broker_state"]
    assert len(state) == 64
    backup = sorted((r for r in state if r["instance"] == "art-backup"), key=lambda r: r["ts"])
    assert [r["role"] for r in backup] == ["starting"] + ["backup"] * 12 + ["live"] * 7
    assert {r["group_name"] for r in backup[1:]} == {NODE}
    live = [r for r in state if r["instance"] == "art-live"]
    assert sum(r["reachable"] is False and r["active"] is None for r in live) == mk.STEPS - mk.LIVE_DIES

    dest = replayed["destination_stats"]
    on_backup = [d for d in dest if d["instance"] == "art-backup"]
    assert len(on_backup) == 4 * (mk.STEPS - mk.BACKUP_ACTIVE)  # only once it is live
    assert min(utc(d["ts"]) for d in on_backup) == at(mk.T0, mk.BACKUP_ACTIVE, mk.BACKUP_OFFSET_MS)
    last_orders = max((d for d in on_backup if d["destination"] == "orders"), key=lambda d: d["ts"])
    assert (last_orders["messages"], last_orders["enqueued"], last_orders["oldest_message_age_ms"]) == (40, 88, 20_500)

    repl = [r for r in replayed["replication_stats"] if r["group_name"] == NODE]
    assert {(r["instance"], r["in_sync"]) for r in repl} == {("art-live", False), ("art-live", True), ("art-backup", False)}
    assert len(repl) == mk.LIVE_DIES + (mk.STEPS - mk.BACKUP_ACTIVE)

    health = [h for h in replayed["collector_health"] if h["target"] in ("art-live", "art-backup")]
    refused = [h for h in health if not h["answered"]]
    assert len(refused) == 10 and {(h["target"], h["error_kind"]) for h in refused} == {("art-live", "refused")}
    passive = [h for h in health if h["target"] == "art-backup" and h["answered"] and h["items_failed"] == 2]
    assert len(passive) == mk.BACKUP_ACTIVE - 1 and all("404" in h["item_errors"] for h in passive)
