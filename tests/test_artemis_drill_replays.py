"""Recordings of the real Artemis 2.40.0 drills beyond kill and failback (made by our collector
against infra.artemis_lab brokers), replayed through the whole analysis and scored against each
drill's own ground truth:

    tests/fixtures/artemis/drill_replication_zk_pause.*        replication + ZooKeeper lock manager
        (session 4 s), SIGSTOP of the primary for 12 s (brokerscope.drills.artemis_pause): the
        backup waits, the primary exits after SIGCONT
    tests/fixtures/artemis/drill_replication_zk_pause_core_clients.*  the same SIGSTOP under a Core JMS
        producer and consumer on the pair's failover URL (drill artemis-clients-core-pause-zk): a
        silent live — the clients detect it at connectionTTL, wait, are back on the resumed primary,
        then fail over to the backup
    tests/fixtures/artemis/drill_replication_zk_quorum_loss.*  the same pair, its ensemble without
        quorum for 8 s (brokerscope.drills.artemis_zk_quorum): the primary serves on, stops once the
        quorum is back; the backup takes over
    tests/fixtures/artemis/drill_shared_store_clients.*        a STOMP producer and consumer failing
        over with a shared-store pair (brokerscope.drills.artemis_clients): Jepsen counts
    tests/fixtures/artemis/drill_shared_store_core_clients.*   the same with the Core JMS client on an
        ha=true failover URL (drill artemis-clients-core): its own failover events, Jepsen counts, and
        brokerscope's gold client_shifts
    tests/fixtures/artemis/drill_replication_zk_link_cut.*     the replication link of the lock-manager
        pair cut silently for 150 s (brokerscope.drills.artemis_link_cut): the primary drops its
        backup at connection-ttl and serves on unprotected, the backup is refused by the activation
        sequence and resyncs after the heal
    tests/fixtures/artemis/drill_replication_link_cut.*        the same cut of a classic replication
        pair (quorum vote, one pair): the backup activates beside the primary — a real split brain
    tests/fixtures/artemis/drill_replication_zk_restart.*      the lock-manager pair, SIGKILL of the
        primary, its restart with failback off (brokerscope.drills.artemis_restart): it comes back
        as a backup, never active
    tests/fixtures/artemis/drill_replication_restart_split_brain.*  classic replication, the primary
        without check-for-active-server restarted after the failover: it comes back active — a real
        split brain, ended by SIGKILL
    tests/fixtures/artemis/drill_replication_classic_failback.*  the same classic pair, the primary
        with check-for-active-server=true (drill artemis-kill-classic): restarted, it comes back as
        a backup, resynchronizes and fails back — no split brain
    tests/fixtures/artemis/drill_replication_classic_3pairs_kill.*  three classic replication pairs in
        one cluster (infra.artemis_cluster), SIGKILL of one primary (drill artemis-kill-vote): its
        backup's quorum vote fails once (a primary had not noticed the death yet) and passes 5 s later
    tests/fixtures/artemis/drill_replication_zk_stale_backup.*  the lock-manager pair, SIGKILL of the
        backup, then of the primary; the stale backup started alone refuses to activate
        (brokerscope.drills.artemis_stale_backup); the primary's restart ends the outage
    tests/fixtures/artemis/drill_replication_zk_gc_pause.*  the lock-manager pair, a 5.7-s full GC
        in the primary (serial collector, 384 MiB live ballast; brokerscope.drills.artemis_gc_pause):
        the primary stops itself after the pause, the backup takes over
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerscope.drills import (
    artemis_clients,
    artemis_clients_pause,
    artemis_kill,
    artemis_gc_pause,
    artemis_link_cut,
    artemis_pause,
    artemis_restart,
    artemis_stale_backup,
    artemis_vote,
    artemis_zk_quorum,
)
from brokerscope.drills.common import epoch
from brokerscope.timeline import STATE_COLUMNS, build_timeline
from dashboards.data import Gold, load_incident
from dashboards.report import window_sentences
from lakehouse.store import Lakehouse
from tests import recordings
from tests.drill_checks import assert_passed

FIX = Path(__file__).parent / "fixtures" / "artemis"


def replayed(stem: str, analyses: recordings.Analyses) -> Lakehouse:
    """tests/fixtures/artemis/<stem>.jsonl.gz analysed: the worker's one analysis of it, shared (read
    only; a test reading it is in `recordings.group`)."""
    return analyses.lakehouse(FIX / f"{stem}.jsonl.gz")


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_pause"))
def test_replayed_pause_of_the_replication_primary_is_told_as_a_silent_live_then_a_failover(analysed_recordings):
    """SIGSTOP of the primary for 12 s (3× its 4 s session): the drill's bar on the replay, the
    timeline says the live answered nothing for the pause (the failover's outage bound, ≤ 1.2 s,
    is about the role: the frozen primary answered `Active` once after SIGCONT), and the advice
    uses the configured session-ms, not Artemis' default."""
    truth = json.loads((FIX / "drill_replication_zk_pause.truth.json").read_text())
    lh = replayed("drill_replication_zk_pause", analysed_recordings)
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
    # the backup waited beside a free lock because its link to the frozen primary stayed open: not stale
    (wait,) = [f for f in lh.read("zk_findings").to_pylist() if f["code"] == "zk.backup-not-taking-over"]
    assert "art-a was silent (its scrapes timed out" in wait["message"] and "stale" not in wait["message"]


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_pause_core_clients"))
def test_replayed_silent_live_under_core_clients_is_a_pause_then_a_failover_and_a_client_shift(analysed_recordings):
    """SIGSTOP of the lock-manager primary for 12 s under the Core clients (connectionTTL 5 s,
    clientFailureCheckPeriod 1 s): the drill's bar on the replay. What the clients did: no data for
    connectionTTL → FAILURE_DETECTED at +5–6 s (not at clientFailureCheckPeriod), their reconnection
    hung on the frozen JVM until SIGCONT, they were back on the resumed primary, left it when it
    stopped itself (session expired) and completed their failover on the backup within 0.3 s of its
    AMQ221007. brokerscope: the pause, one failover, a client shift measured from the primary's last
    answer with them (after SIGCONT), and the backup's long wait told as a silent live, not as a
    stale backup."""
    truth = json.loads((FIX / "drill_replication_zk_pause_core_clients.truth.json").read_text())
    lh = replayed("drill_replication_zk_pause_core_clients", analysed_recordings)
    card = assert_passed(artemis_clients_pause.score(lh, truth))
    print("\n" + card.render())
    ledger, ttl = truth["ledger"], truth["client_settings"]["connection_ttl_ms"] / 1000
    assert ledger["lost"] == [] and ledger["acked"] > 300 and truth["final_read"] == 0
    assert not truth["dual_active"] and not truth["backup_active_during_pause"]
    detected = artemis_clients.core_event_times(truth, "FAILURE_DETECTED")
    assert all(ttl <= t - truth["sigstop_ts"] <= 2 * ttl + 1.0 for t in detected.values())
    on_backup = truth["clients_on_backup"]
    assert all(x["left"] > truth["sigcont_ts"] and x["working"] > truth["takeover_log_ts"] for x in on_backup.values())

    (shift,) = lh.read("client_shifts").to_pylist()
    assert shift["state"] == "arrived" and epoch(shift["before_ts"]) > truth["sigcont_ts"]  # its answer after SIGCONT
    (wait,) = [f for f in lh.read("zk_findings").to_pylist() if f["code"] == "zk.backup-not-taking-over"]
    assert wait["instance"] == "art-b" and "art-a was silent (its scrapes timed out" in wait["message"]
    assert "stale" not in wait["message"] and "stop it (kill -9)" in wait["advice"]


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_classic_3pairs_kill"))
def test_replayed_kill_among_three_pairs_is_one_failover_after_a_real_quorum_vote(analysed_recordings):
    """Six brokers, three NodeIDs: the SIGKILL of art-a is one failover art-a → art-b and nothing in
    the other two groups. The truth of this run: the backup's first vote round 41 ms after the kill
    got one no (art-c still saw art-a) and one yes — no majority — and its second, vote-retry-wait
    (5 s) later, two yes: the outage was 5.7 s where one round takes 0.6 s; brokerscope's outage
    bound holds it."""
    truth = json.loads((FIX / "drill_replication_classic_3pairs_kill.truth.json").read_text())
    lh = replayed("drill_replication_classic_3pairs_kill", analysed_recordings)
    card = assert_passed(artemis_vote.score(lh, truth))
    print("\n" + card.render())
    first, second = truth["vote_rounds"]
    assert (first["failed_over"], second["failed_over"]) == (False, True)
    assert sorted(v for _, v in first["answers"]) == [False, True] and all(v for _, v in second["answers"])
    (failover,) = lh.read("failover_events").to_pylist()
    assert failover["outage_upper_s"] >= truth["takeover_log_ts"] - truth["kill_ts"] > 5.0
    groups = {r["instance"]: r["group_name"] for r in lh.read("broker_state", columns=["instance", "group_name"]).to_pylist()}
    assert len(set(groups.values())) == 3 and groups["art-a"] == groups["art-b"] != groups["art-c"] == groups["art-d"]


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_gc_pause"))
def test_replayed_gc_pause_of_the_primary_is_named_the_failovers_cause(analysed_recordings):
    """A full GC longer than the lock manager's session in the primary: the pause from its GC log
    within one scrape of the drill's console probe, the failover, and the incident told as that
    failover whose likely cause is the pause that cost the lease. The GC finding alone stays
    `possible`: the primary answered once more as active after the pause, before it stopped itself
    (the hand-over began after the pause)."""
    truth = json.loads((FIX / "drill_replication_zk_gc_pause.truth.json").read_text())
    lh = replayed("drill_replication_zk_gc_pause", analysed_recordings)
    card = assert_passed(artemis_gc_pause.score(lh, truth))
    print("\n" + card.render())
    assert not truth["dual_active"] and truth["primary_exit_ts"] > truth["pause_end_ts"]
    (incident,) = [i for i in lh.read("incidents").to_pylist() if i["has_failover"]]
    assert incident["title"].startswith("failover art-a → art-b in ")
    assert "likely cause: a GC pause cost the lock lease (art-a)" in incident["title"]
    gc_causes = {c["confidence"] for c in lh.read("finding_causes").to_pylist() if c["cause_table"] == "gc_findings"}
    assert gc_causes == {"possible"}
    # one cause for the one pause: the lease vanished, then was handed over — one finding that says both
    (lost,) = [f for f in lh.read("zk_findings").to_pylist() if f["code"] == "zk.gc-pause-lost-lease"]
    assert "vanished by" in lost["message"] and "was handed over by" in lost["message"], lost["message"]
    assert len(lost["related"].split(",")) == 3  # the GC finding and both lease events


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_quorum_loss"))
def test_replayed_quorum_loss_under_the_pair_is_found_with_its_cause(analysed_recordings):
    """The ensemble without quorum for 8 s under the replication pair: the loss found within a round,
    no split brain (the primary served on through the loss and stopped only once the quorum was
    back and it learnt its session had expired), the backup's takeover found and caused by the
    lost quorum or the lock it took."""
    truth = json.loads((FIX / "drill_replication_zk_quorum_loss.truth.json").read_text())
    lh = replayed("drill_replication_zk_quorum_loss", analysed_recordings)
    card = assert_passed(artemis_zk_quorum.score(lh, truth))
    print("\n" + card.render())
    assert not truth["dual_active"] and truth["primary_quorum_unavailable_log_ts"] > truth["restarted_answers_ts"]
    assert card.detected["cause: the lost quorum or the lock it took"]


@pytest.mark.xdist_group(recordings.group(FIX / "drill_shared_store_clients"))
def test_replayed_failover_with_real_clients_loses_nothing_and_sees_them_move(analysed_recordings):
    """A producer (50 persistent msg/s, each waiting for its RECEIPT) and a consumer failing over with
    the shared-store pair: nothing acknowledged was lost or duplicated, and brokerscope's first scrape
    of the backup with both clients connected lies within one scrape of when they dialled it."""
    truth = json.loads((FIX / "drill_shared_store_clients.truth.json").read_text())
    lh = replayed("drill_shared_store_clients", analysed_recordings)
    card = assert_passed(artemis_clients.score(lh, truth))
    print("\n" + card.render())
    ledger = truth["ledger"]
    assert ledger["acked"] > 250 and ledger["lost"] == [] and ledger["distinct_received"] == ledger["acked"]
    assert len(truth["clients"]["failover-producer"]) == 2  # the primary, then the backup


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_link_cut"))
def test_replayed_link_cut_under_the_lock_manager_is_an_unprotected_primary_not_a_split_brain(analysed_recordings):
    """The replication link of the lock-manager pair cut silently for 150 s: no split brain, no
    failover; the primary's time without a replica found from its AMQ222092 to the backup's
    AMQ221024 after the heal, and told as a lost link (the backup still claimed to be in sync)."""
    truth = json.loads((FIX / "drill_replication_zk_link_cut.truth.json").read_text())
    lh = replayed("drill_replication_zk_link_cut", analysed_recordings)
    card = assert_passed(artemis_link_cut.score(lh, truth))
    print("\n" + card.render())
    assert not truth["dual_active"] and truth["roles_after_heal"] == {"art-a": "active", "art-b": "backup"}
    cut = truth["cut_ts"]
    # Artemis, not us: the primary dropped the replica at connection-ttl (60 s) and a durable send
    # waited for that; the backup noticed 60-120 s after the cut and was refused by the sequence
    assert 45 <= truth["replica_dropped_log_ts"] - cut <= 62
    assert abs(truth["send_during_cut_receipt_ts"] - truth["replica_dropped_log_ts"]) < 1.0
    assert truth["backup_not_candidate_log_ts"] and truth["takeover_log_ts"] is None
    assert truth["resync_log_ts"] > truth["heal_ts"]
    assert card.detected["cause: the link (the backup kept answering)"]
    assert [r for r in lh.read("risk_findings").to_pylist() if r["code"] == "unprotected-live"] == []


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_link_cut"))
def test_replayed_link_cut_of_a_classic_pair_is_a_split_brain_caused_by_the_lost_link(analysed_recordings):
    """The same cut of a classic replication pair: the backup, alone in its vote, activates while the
    primary serves — a split brain found from the backup's AMQ221007 to the drill's kill of it, its
    likely cause the primary's lost replica; and the one-pair vote found as a risk."""
    truth = json.loads((FIX / "drill_replication_link_cut.truth.json").read_text())
    lh = replayed("drill_replication_link_cut", analysed_recordings)
    card = assert_passed(artemis_link_cut.score(lh, truth))
    print("\n" + card.render())
    assert truth["dual_active"] and truth["backup_vote_ignored_log_ts"] and truth["takeover_log_ts"]
    assert truth["takeover_log_ts"] < truth["heal_ts"]  # during the cut, not because of the heal
    # this run: the two learn of each other only through the healed link (AMQ222294 on both; in
    # another run neither said anything) and both stay active
    assert truth["heal_ts"] < truth["split_brain_warned_primary_log_ts"] < truth["heal_ts"] + 5
    assert truth["roles_after_heal"] == {"art-a": "active", "art-b": "active"}
    (cause,) = [c for c in lh.read("finding_causes").to_pylist() if c["effect_table"] == "split_brain_windows"]
    assert (cause["cause_code"], cause["instance"], cause["confidence"]) == ("replica-sync-gap", "art-a", "likely")
    assert cause["lead_s"] > 30  # the primary had dropped its backup about a minute before
    assert {r["code"] for r in lh.read("risk_findings").to_pylist()} >= {"quorum-too-small", "unprotected-live"}


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_restart"))
def test_replayed_restart_of_the_old_primary_under_the_lock_manager_stays_passive(analysed_recordings):
    """The restarted primary finds the coordinated activation sequence ahead of its own and restarts
    as a backup (failback off): one failover, the old primary never active again, seen as backup
    within a scrape of the probe; the sequence is 2 in ZooKeeper and on both brokers."""
    truth = json.loads((FIX / "drill_replication_zk_restart.truth.json").read_text())
    lh = replayed("drill_replication_zk_restart", analysed_recordings)
    card = assert_passed(artemis_restart.score(lh, truth))
    print("\n" + card.render())
    assert not truth["dual_active"] and truth["restart_log_ts"]["primary_not_candidate"]
    assert truth["restart_log_ts"]["primary_active"] is None and truth["restart_log_ts"]["backup_stepped_aside"] is None
    assert card.detected["no restarted primary active"] and card.detected["restarted primary seen as backup"]
    assert card.facts["last committed sequence in ZooKeeper"] == 2
    assert card.facts["last ActivationSequence per broker"] == {"art-a": 2, "art-b": 2}  # resynchronized
    # the backup's lease from its takeover on, one lease through the restart: the restarted primary never contends
    leases = [(c["ts"].timestamp(), c["lease_count"], c["holder_session"]) for c in lh.read("zk_coordination").to_pylist()]
    before = {h for t, n, h in leases if t < truth["kill_ts"]}
    after = {(n, h) for t, n, h in leases if t >= truth["takeover_log_ts"]}
    assert len(before) == 1 and len(after) == 1 and next(iter(after))[0] == 1 and next(iter(after))[1] not in before
    events = lh.read("failover_events").to_pylist()
    assert [e["event_type"] for e in events] == ["failover"]


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_restart_split_brain"))
def test_replayed_restart_without_check_for_active_server_is_a_certain_split_brain_with_its_cause(analysed_recordings):
    """Classic replication, one pair: the backup fails over without a vote, the restarted primary
    activates beside it. One certain window, both ends within a scrape of the probe, the traffic
    each side took, the restarted primary named as the cause, one critical incident."""
    truth = json.loads((FIX / "drill_replication_restart_split_brain.truth.json").read_text())
    lh = replayed("drill_replication_restart_split_brain", analysed_recordings)
    card = assert_passed(artemis_restart.score(lh, truth))
    print("\n" + card.render())
    assert truth["dual_active"] and truth["restart_log_ts"]["primary_split_brain_warning"]
    (w,) = lh.read("split_brain_windows").to_pylist()
    assert (w["instance_a"], w["instance_b"], w["certainty"]) == ("art-a", "art-b", "certain")
    sent = truth["sent_during_split"]
    assert (w["enqueued_a"], w["enqueued_b"]) == (sent["art-a"], sent["art-b"])
    (cause,) = [r for r in lh.read("risk_findings").to_pylist() if r["code"] == "check-for-live-server-off"]
    assert cause["instance"] == "art-a" and cause["certainty"] == "possible"  # the setting is in no MBean
    assert "check-for-active-server" in cause["advice"]
    incidents = lh.read("incidents").to_pylist()
    evidence = lh.read("incident_evidence").to_pylist()
    (incident_id,) = {e["incident_id"] for e in evidence if e["source_id"] == w["window_id"]}
    (incident,) = [i for i in incidents if i["incident_id"] == incident_id]
    assert incident["severity"] == "critical"
    assert {e["code"] for e in evidence if e["incident_id"] == incident_id} >= {"check-for-live-server-off"}


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_classic_failback"))
def test_replayed_restart_with_check_for_active_server_fails_back_without_a_split_brain(analysed_recordings):
    """The same classic pair with the primary's check-for-active-server=true (drill
    artemis-kill-classic): the restarted primary finds the active backup, starts as its backup
    (AMQ221109), resynchronizes (AMQ221024) and takes the role back — a failover and a failback
    within a scrape of the log lines, no split brain, and no check-for-live-server-off finding."""
    truth = json.loads((FIX / "drill_replication_classic_failback.truth.json").read_text())
    lh = replayed("drill_replication_classic_failback", analysed_recordings)
    card = assert_passed(artemis_kill.score(lh, truth))
    print("\n" + card.render())
    assert card.detected == {"no split brain": True, "failover": True, "failback": True}
    lines = truth["restart_log_ts"]  # backup first, synchronized, then active again
    assert truth["restart_ts"] < lines["started as backup (AMQ221109)"] < lines["synchronized (AMQ221024)"] \
        < truth["failback_log_ts"]
    assert lh.read("split_brain_windows").num_rows == 0
    assert not [r for r in lh.read("risk_findings").to_pylist() if r["code"] == "check-for-live-server-off"]
    (back,) = [e for e in lh.read("failover_events").to_pylist() if e["event_type"] == "failback"]
    assert (back["from_instance"], back["to_instance"]) == ("art-b", "art-a")


@pytest.mark.xdist_group(recordings.group(FIX / "drill_shared_store_core_clients"))
def test_replayed_core_clients_failover_is_measured_as_a_client_shift(analysed_recordings):
    """The Core JMS producer (synchronous durable sends) and transacted consumer on an ha=true URL
    through the SIGKILL of the shared-store primary. In this run the producer's send in flight at
    the kill was not released by the failure detection: it waited its callTimeout (5 s), so the
    producer reached the backup 2.6 s after the backup took over. brokerscope's gold client_shifts
    row has the clients' move, not the role's: 2 of the old primary's 4 connections (it also
    counted its waiting backup's 2) on the backup within one scrape of the broker creating the last
    one, the shift's bounds holding the true one; the timeline and the incident report carry it."""
    truth = json.loads((FIX / "drill_shared_store_core_clients.truth.json").read_text())
    lh = replayed("drill_shared_store_core_clients", analysed_recordings)
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


@pytest.mark.xdist_group(recordings.group(FIX / "drill_replication_zk_stale_backup"))
def test_replayed_stale_backup_refuses_and_the_outage_names_it(analysed_recordings):
    """The backup killed, the primary serving alone (it moves the activation sequence on at once),
    then killed: the stale backup started alone logs "Not a candidate" and waits — with no NodeID and
    ActivationSequence -1 on its console, so only ZooKeeper's free lock beside a waiting backup
    shows it. No failover, no split brain; the primary's return is its own restart; the outage's
    incident carries `zk.backup-not-taking-over` on the stale backup."""
    truth = json.loads((FIX / "drill_replication_zk_stale_backup.truth.json").read_text())
    lh = replayed("drill_replication_zk_stale_backup", analysed_recordings)
    card = assert_passed(artemis_stale_backup.score(lh, truth))
    print("\n" + card.render())
    assert truth["primary_sequence_after_backup_loss"] == truth["sequences_before"]["art-a"] + 1
    assert truth["stale_sequence"] == -1 and not truth["backup_ever_active"]
    assert card.facts["stale backup reported (ActivationSequence, NodeID)"] == [(None, None)]
    zk = lh.read("zk_findings").to_pylist()
    assert not [f for f in zk if f["code"] in ("zk.backup-stale", "zk.active-sequence-behind")]
    (stale,) = [f for f in zk if f["code"] == "zk.backup-not-taking-over"]
    assert stale["severity"] == "error" and stale["threshold"] == 4.0 + 2 * truth["scrape_interval_s"]
    assert "start the broker with the latest journal" in stale["advice"]
    (incident,) = lh.read("incidents").to_pylist()  # the outage: the primary's restart and why nobody took over
    assert incident["title"].startswith(f"no failover in {stale['group_name']}: backup art-b did not take the free lock")
    assert incident["severity"] == "error"
    assert {e["code"] for e in lh.read("incident_evidence").to_pylist()} >= {"restart", "zk.backup-not-taking-over",
                                                                              "zk.lease-count"}
