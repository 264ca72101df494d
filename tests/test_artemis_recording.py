"""Recordings of real Artemis 2.40.0 drills (brokerscope.drills.artemis_kill, made by our collector
against the console Jolokia of infra.artemis_lab brokers), replayed: through the pack one exchange
at a time (what the broker really answered in each phase), and through the whole analysis, scored
against the drill's own ground truth (kill time, the takeover log line).

    tests/fixtures/artemis/drill_shared_store_kill.*   shared store: SIGKILL primary → AMQ221010 on
                                                        the backup; restart → failback (AMQ221008)
    tests/fixtures/artemis/drill_replication_zk_kill.*  replication + ZooKeeper lock manager: SIGKILL
                                                        primary → AMQ221037/AMQ221007 once its session
                                                        expired; restart → resync, failback (AMQ221039);
                                                        with the ensemble member holding the lock watch
    (the other Artemis drill recordings: tests/test_artemis_drill_replays.py)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerscope.drills import artemis_kill
from collectors.artemis import ArtemisPack
from collectors.recording import observation_from_envelope, read_envelopes
from tests import recordings
from tests.drill_checks import assert_passed
from tests.test_artemis_drill_replays import replayed as replayed_artemis

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
    # between the kill and Active=true the backup already says Backup=false: activating, not serving
    switching = [r for ts, r in b if t["kill_ts"] < ts < live[0][0] and r["backup"] is False]
    assert switching and {(r["role"], r["active"]) for r in switching} == {("starting", False)}
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
def analysed_shared(analysed_recordings):
    """The worker's one analysis of the recording, shared (read only: tests/recordings.py `Analyses`)."""
    drill = analysed_recordings(FIX / "drill_shared_store_kill.jsonl.gz")
    assert drill.result.envelopes == drill.result.new_rows == len(SHARED)
    return drill.lh


@pytest.mark.xdist_group(recordings.group(FIX / "drill_shared_store_kill"))
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


# --- replication with the ZooKeeper lock manager --------------------------------------------------

REPL, REPL_TRUTH = load("drill_replication_zk_kill")


def test_replication_pair_sequence_sync_and_takeover_as_the_pack_reads_them():
    t = REPL_TRUTH
    a, b = states(REPL, "art-a"), states(REPL, "art-b")
    # (the last scrape sent before the kill can be cut by it: observation time is the send time)
    before = [r for ts, r in a if ts < t["kill_ts"] and r["reachable"]]
    assert {(r["role"], r["ha_policy"], r["activation_sequence"]) for r in before} == {("live", "Replication Primary w/lock manager", 1)}
    assert all(r["_rows"].replication_stats[0]["in_sync"] is True for r in before)  # its backup is synchronized
    waiting = [r for ts, r in b if ts < t["kill_ts"]]
    assert {(r["role"], r["replica_sync"], r["activation_sequence"]) for r in waiting} == {("backup", True, 1)}
    assert {r["ha_policy"] for r in waiting} == {"Replication Backup w/lock manager"}
    took_over = [r for ts, r in b if t["kill_ts"] < ts < t["restart_ts"] and r["role"] == "live"]
    assert took_over and {(r["backup"], r["activation_sequence"]) for r in took_over} == {(False, 2)}
    # the returning primary resyncs as a replica, then takes the role back: sequence 3
    assert a[-1][1]["role"] == "live" and a[-1][1]["activation_sequence"] == 3
    assert b[-1][1]["role"] == "backup"


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_kill"))
def test_replayed_replication_kill_is_found_and_zookeeper_agrees(analysed_recordings):
    lh = replayed_artemis("drill_replication_zk_kill", analysed_recordings)
    card = assert_passed(artemis_kill.score(lh, REPL_TRUTH))
    print("\n" + card.render())
    zk = lh.read("zk_findings").to_pylist() if lh.exists("zk_findings") else []
    assert {f["code"] for f in zk} <= {"zk.lease-count", "zk.lock-handover", "zk.lease-vanished"}
    assert all(f["severity"] != "error" for f in zk), zk  # sequences agree, never two holders
    handover = [f for f in zk if f["code"] == "zk.lock-handover"]
    assert handover and min(f["start_ts"].timestamp() for f in handover) >= REPL_TRUTH["kill_ts"] - 0.5


def test_a_candidates_lease_inside_the_mutex_is_not_a_second_holder():
    """Transcribed from a real snapshot (Artemis 2.40.0, 2.2 s after SIGKILL of the primary): the
    dead primary's lease still there (its session not expired yet), the backup's try beside it,
    the backup's session inside Curator's acquisition mutex."""
    from collectors.zookeeper.parse import lease_facts

    root = "/brokerscope-lab/1471a9f2-e91e-11f1-9299-02fc00000001"
    dead, backup = 216172867238625280, 72057679157985280
    held = "_c_e71ad7ed-6372-4c0e-8bd1-71f49ece92b2-lease-0000000000"
    trying = "_c_134ba7fa-7e25-4c61-bd03-23009e1a6643-lease-0000000008"
    mutex = "_c_5f80d530-ff9b-48eb-803a-ba5a313c2651-lock-0000000008"

    def node(path, owner=0, children=None, data=b""):
        import base64
        rec = {"path": path, "exists": True, "data_b64": base64.b64encode(data).decode(), "stat": {"ephemeralOwner": owner}}
        return rec | ({"children": children} if children is not None else {})

    nodes = {n["path"]: n for n in [
        node(f"{root}/locks/leases", children=[held, trying]),
        node(f"{root}/locks/leases/{held}", dead, data=b"77d4c924-8ca5-42c3-a0f1-77b5d9e74b64"),
        node(f"{root}/locks/leases/{trying}", backup, data=b"16f41d62-5659-4475-bb7f-8a04a7c02a58"),
        node(f"{root}/locks/locks", children=[mutex]),
        node(f"{root}/locks/locks/{mutex}", backup),
    ]}
    facts = lease_facts(nodes, root)
    assert (facts["lease_count"], facts["holder_session"], facts["lease_sessions"]) == (1, f"0x{dead:x}", f"0x{dead:x}")
    assert [lease.get("contending", False) for lease in json.loads(facts["leases_json"])] == [False, True]
    del nodes[f"{root}/locks/locks/{mutex}"]  # without the mutex owner: two holders, as before
    assert lease_facts(nodes, root)["lease_count"] == 2
