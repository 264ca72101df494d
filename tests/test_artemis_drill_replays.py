"""Recordings of the real Artemis 2.40.0 drills beyond kill and failback (made by our collector
against infra.artemis_lab brokers), replayed through the whole analysis and scored against each
drill's own ground truth:

    tests/fixtures/artemis/drill_replication_zk_pause.*        replication + ZooKeeper lock manager
        (session 4 s), SIGSTOP of the primary for 12 s (brokerscope.drills.artemis_pause): the
        backup waits, the primary exits after SIGCONT
    tests/fixtures/artemis/drill_replication_zk_quorum_loss.*  the same pair, its ensemble without
        quorum for 8 s (brokerscope.drills.artemis_zk_quorum): the primary serves on, stops once the
        quorum is back; the backup takes over
    tests/fixtures/artemis/drill_shared_store_clients.*        a STOMP producer and consumer failing
        over with a shared-store pair (brokerscope.drills.artemis_clients): Jepsen counts
    tests/fixtures/artemis/drill_shared_store_core_clients.*   the same with the Core JMS client on an
        ha=true failover URL (drill artemis-clients-core): its own failover events, Jepsen counts, and
        brokerscope's gold client_shifts
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from analysis.runner import analyze
from brokerscope.drills import artemis_clients, artemis_pause, artemis_zk_quorum
from brokerscope.drills.common import epoch
from brokerscope.timeline import STATE_COLUMNS, build_timeline
from dashboards.data import Gold, load_incident
from dashboards.report import window_sentences
from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.drill_checks import assert_passed

FIX = Path(__file__).parent / "fixtures" / "artemis"


def replayed(stem: str, where: Path, spark) -> Lakehouse:
    """tests/fixtures/artemis/<stem>.jsonl.gz replayed with its config into a fresh lakehouse, analysed."""
    data = yaml.safe_load((FIX / f"{stem}.yaml").read_text())
    data["lakehouse"] = str(where / "lh")
    cfg = config_from_dict(data)
    assert replay(cfg, FIX / f"{stem}.jsonl.gz").new_rows > 0
    analyze(cfg, spark=spark)
    return Lakehouse(cfg.lakehouse_root())


def test_replayed_pause_of_the_replication_primary_is_told_as_a_silent_live_then_a_failover(tmp_path_factory, spark):
    """SIGSTOP of the primary for 12 s (3× its 4 s session): the drill's bar on the replay, the
    timeline says the live answered nothing for the pause (the failover's outage bound, ≤ 1.2 s,
    is about the role: the frozen primary answered `Active` once after SIGCONT), and the advice
    uses the configured session-ms, not Artemis' default."""
    truth = json.loads((FIX / "drill_replication_zk_pause.truth.json").read_text())
    lh = replayed("drill_replication_zk_pause", tmp_path_factory.mktemp("artemis-pause"), spark)
    card = assert_passed(artemis_pause.score(lh, truth))
    print("\n" + card.render())
    assert not truth["dual_active"] and not truth["backup_active_during_pause"]
    entries = build_timeline(lh.read("role_intervals"), lh.read("failover_events"), lh.read("split_brain_windows"),
                             lh.read("broker_state", columns=STATE_COLUMNS))
    (silent,) = [e for e in entries if e.what == "silent-while-active"]
    assert silent.instance == "art-a" and abs(silent.ts.timestamp() - truth["sigstop_ts"]) <= truth["scrape_interval_s"]
    assert silent.facts["until"].timestamp() <= truth["sigcont_ts"] and silent.facts["scrapes"] >= 10
    assert "state unknown" in silent.text
    risks = [r for r in lh.read("risk_findings").to_pylist() if r["code"] == "failover-duration"]
    assert risks and all("session-ms 4.0 s)" in r["message"] and "session-ms 18" not in r["message"] for r in risks)


def test_replayed_quorum_loss_under_the_pair_is_found_with_its_cause(tmp_path_factory, spark):
    """The ensemble without quorum for 8 s under the replication pair: the loss found within a round,
    no split brain (the primary served on through the loss and stopped only once the quorum was
    back and it learnt its session had expired), the backup's takeover found and caused by the
    lost quorum or the lock it took."""
    truth = json.loads((FIX / "drill_replication_zk_quorum_loss.truth.json").read_text())
    lh = replayed("drill_replication_zk_quorum_loss", tmp_path_factory.mktemp("artemis-zkq"), spark)
    card = assert_passed(artemis_zk_quorum.score(lh, truth))
    print("\n" + card.render())
    assert not truth["dual_active"] and truth["primary_quorum_unavailable_log_ts"] > truth["restarted_answers_ts"]
    assert card.detected["cause: the lost quorum or the lock it took"]


def test_replayed_failover_with_real_clients_loses_nothing_and_sees_them_move(tmp_path_factory, spark):
    """A producer (50 persistent msg/s, each waiting for its RECEIPT) and a consumer failing over with
    the shared-store pair: nothing acknowledged was lost or duplicated, and brokerscope's first scrape
    of the backup with both clients connected lies within one scrape of when they dialled it."""
    truth = json.loads((FIX / "drill_shared_store_clients.truth.json").read_text())
    lh = replayed("drill_shared_store_clients", tmp_path_factory.mktemp("artemis-clients"), spark)
    card = assert_passed(artemis_clients.score(lh, truth))
    print("\n" + card.render())
    ledger = truth["ledger"]
    assert ledger["acked"] > 250 and ledger["lost"] == [] and ledger["distinct_received"] == ledger["acked"]
    assert len(truth["clients"]["failover-producer"]) == 2  # the primary, then the backup


def test_replayed_core_clients_failover_is_measured_as_a_client_shift(tmp_path_factory, spark):
    """The Core JMS producer (synchronous durable sends) and transacted consumer on an ha=true URL
    through the SIGKILL of the shared-store primary. In this run the producer's send in flight at
    the kill was not released by the failure detection: it waited its callTimeout (5 s), so the
    producer reached the backup 2.6 s after the backup took over. brokerscope's gold client_shifts
    row has the clients' move, not the role's: 2 of the old primary's 4 connections (it also
    counted its waiting backup's 2) on the backup within one scrape of the broker creating the last
    one, the shift's bounds holding the true one; the timeline and the incident report carry it."""
    truth = json.loads((FIX / "drill_shared_store_core_clients.truth.json").read_text())
    lh = replayed("drill_shared_store_core_clients", tmp_path_factory.mktemp("artemis-core-clients"), spark)
    card = assert_passed(artemis_clients.score(lh, truth))
    print("\n" + card.render())
    assert truth["ledger"]["lost"] == [] and truth["ledger"]["acked"] > 300 and truth["final_read"] == 0
    before = truth["connections_before_kill"]["art-a"]
    assert len(before) == 4 and sorted(c["sessions"] for c in before) == [0, 0, 2, 2]  # the backup's 2 have no session
    producer = truth["clients"]["core-producer"]
    assert producer["send_failed"] == 1  # "AMQ219014: Timed out after waiting 5000 ms", then FAILOVER_COMPLETED

    (shift,) = lh.read("client_shifts").to_pylist()
    (failover,) = lh.read("failover_events").to_pylist()
    assert (shift["state"], shift["quality"]) == ("arrived", "bounded")
    assert (shift["connections_before"], shift["connections_after"], shift["moved_fraction"]) == (4, 2, 0.5)
    created = artemis_clients.client_connections_created(truth)
    assert epoch(shift["arrived_after"]) < created <= epoch(shift["arrived_ts"])
    assert epoch(shift["arrived_ts"]) <= created + truth["scrape_interval_s"] + 0.1
    assert epoch(shift["arrived_ts"]) - epoch(failover["new_first_active"]) > 2.0  # the clients came later than the role
    assert shift["shift_lower_s"] is None  # a SIGKILLed primary never shows it lost them
    assert shift["shift_upper_s"] >= created - truth["kill_ts"] > 5.0

    entries = build_timeline(lh.read("role_intervals"), lh.read("failover_events"), lh.read("split_brain_windows"),
                             lh.read("broker_state", columns=STATE_COLUMNS), client_shifts=lh.read("client_shifts"))
    (moved,) = [e for e in entries if e.what == "clients"]
    assert moved.instance == "art-b" and moved.ts == shift["arrived_ts"] and "50% of 4" in moved.text
    (incident,) = [i for i in lh.read("incidents").to_pylist() if i["has_failover"]]
    sentences = dict(window_sentences(load_incident(Gold(lh, fresh_s=0), incident["incident_id"])))
    assert "clients: 2 connection(s) (50% of 4) on art-b" in sentences["failover"]
