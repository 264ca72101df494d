"""Recordings of real Artemis 2.40.0 drills (brokerscope.drills.artemis_kill, made by our collector
against the console Jolokia of infra.artemis_lab brokers), replayed: through the pack one exchange
at a time (what the broker really answered in each phase), and through the whole analysis, scored
against the drill's own ground truth (kill time, the takeover log line).

    tests/fixtures/artemis/drill_shared_store_kill.*   shared store: SIGKILL primary → AMQ221010 on
                                                        the backup; restart → failback (AMQ221008)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from brokerscope.analyze import analyze
from brokerscope.config import config_from_dict
from brokerscope.drills import artemis_kill
from collectors.artemis import ArtemisPack
from collectors.recording import observation_from_envelope, read_envelopes
from collectors.replay import replay
from lakehouse.store import Lakehouse
from tests.drill_checks import assert_passed

FIX = Path(__file__).parent / "fixtures" / "artemis"
PACK = ArtemisPack()


def load(stem: str):
    envs = sorted(read_envelopes(FIX / f"{stem}.jsonl.gz", strict=True), key=lambda e: e["ts"])
    truth = json.loads((FIX / f"{stem}.truth.json").read_text())
    return envs, truth


SHARED, SHARED_TRUTH = load("drill_shared_store_kill")


def states(envs, target: str) -> list[tuple[float, dict]]:
    """(epoch, broker_state row) of every scrape of ``target``."""
    out = []
    for env in envs:
        if env["target"] == target:
            rows = PACK.normalize(observation_from_envelope(env, "artemis", None), "k")
            (row,) = rows.broker_state
            out.append((row["ts"].timestamp(), row | {"_rows": rows}))
    return out


def test_before_the_kill_primary_live_backup_passive_one_node_id():
    kill = SHARED_TRUTH["kill_ts"]
    a = [r for t, r in states(SHARED, "art-a") if t < kill]
    b = [r for t, r in states(SHARED, "art-b") if t < kill]
    assert a and b
    assert {(r["role"], r["active"], r["backup"], r["ha_policy"]) for r in a} == {("live", True, False, "Shared Store Primary")}
    assert {(r["role"], r["active"], r["backup"], r["ha_policy"]) for r in b} == {("backup", False, True, "Shared Store Backup")}
    assert len({r["node_id"] for r in a + b}) == 1 and {r["group_name"] for r in a + b} == {a[0]["node_id"]}
    assert {r["activation_sequence"] for r in a + b} == {None}  # the broker answers -1 on a shared store
    assert all(r["_rows"].replication_stats == [] for r in a)  # ReplicaSync is false there: no "unprotected" rows
    assert all(r["_rows"].destination_stats == [] and r["error"] is None for r in b)
    last = a[-1]["_rows"].destination_stats
    assert {d["destination"]: d["messages"] for d in last}["brokerscope.lab"] == SHARED_TRUTH["sent_before_kill"]


def test_the_recorded_console_is_jolokia_2_1_with_canonical_names():
    env = SHARED[0]
    queue_item = env["response"][-1]
    assert queue_item["request"]["mbean"].startswith("org.apache.activemq.artemis:address=*,broker=*")  # echoed canonical
    assert all(k.startswith('org.apache.activemq.artemis:address="') for k in queue_item["value"])  # keys sorted too
    topology = next(iter(env["response"][3]["value"].values()))["Topology"]
    assert "\n\tnodes=2\tmembers=1" in topology  # a primary and its announced backup


def test_takeover_and_failback_phases_as_the_pack_reads_them():
    t = SHARED_TRUTH
    b = states(SHARED, "art-b")
    live = [(ts, r) for ts, r in b if r["role"] == "live"]
    assert live and t["kill_ts"] < live[0][0] < t["restart_ts"] + 10
    assert all(r["backup"] is False and r["ha_policy"] == "Shared Store Backup" for _, r in live)
    after = [r["_rows"] for ts, r in live]
    assert {d["destination"]: d["messages"] for d in after[-1].destination_stats}["brokerscope.lab"] == \
        t["sent_before_kill"] + t["sent_after_failover"]  # the same journal, now served by the backup
    # failback: the backup restarts as backup (its broker MBean is unregistered for a while: every item 404)
    stepping_aside = [r for ts, r in b if ts > t["restart_ts"] and r["role"] == "starting"]
    assert stepping_aside and all(r["active"] is False and r["reachable"] for r in stepping_aside)
    assert b[-1][1]["role"] == "backup"
    a = states(SHARED, "art-a")
    down = [r for ts, r in a if t["kill_ts"] < ts < t["restart_ts"]]
    assert down and all((r["reachable"], r["active"], r["role"]) == (False, None, "unknown") for r in down)
    assert a[-1][1]["role"] == "live"


@pytest.fixture(scope="module")
def analysed_shared(tmp_path_factory, spark):
    data = yaml.safe_load((FIX / "drill_shared_store_kill.yaml").read_text())
    data["lakehouse"] = str(tmp_path_factory.mktemp("artemis-shared") / "lh")
    cfg = config_from_dict(data)
    res = replay(cfg, FIX / "drill_shared_store_kill.jsonl.gz")
    assert res.envelopes == res.new_rows == len(SHARED)
    analyze(cfg, spark=spark)
    return Lakehouse(cfg.lakehouse_root())


def test_replayed_kill_is_found_within_one_scrape_of_the_truth(analysed_shared):
    card = assert_passed(artemis_kill.score(analysed_shared, SHARED_TRUTH))
    print("\n" + card.render())
    interval = SHARED_TRUTH["scrape_interval_s"]
    assert -interval - 0.1 <= card.boundaries["old primary last active (vs kill)"] <= 0
    assert -0.1 <= card.boundaries["backup first active (vs takeover log)"] <= interval + 0.1
    assert card.detected == {"no split brain": True, "failover": True, "failback": True}
    (ev,) = [e for e in analysed_shared.read("failover_events").to_pylist() if e["event_type"] == "failover"]
    assert ev["group_name"] == next(r["node_id"] for _, r in states(SHARED, "art-a") if r["node_id"])  # grouped by NodeID
    risks = analysed_shared.read("risk_findings").to_pylist() if analysed_shared.exists("risk_findings") else []
    assert [r for r in risks if r["code"] == "unprotected-live"] == []  # a waiting shared-store backup protects
