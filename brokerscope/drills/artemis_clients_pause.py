"""artemis-clients-core-pause-zk: Core JMS clients against a *silent* live — SIGSTOP the active
primary of a real Artemis 2.40.0 replication pair (ZooKeeper lock manager) under a Core producer and
consumer on the pair's failover URL, for three times the lock manager's session, then SIGCONT.

Unlike a SIGKILL (artemis-clients-core), nothing closes the clients' sockets: the stopped JVM's
kernel keeps them open and answers nothing, so the clients learn of the failure only from their own
pings (clientFailureCheckPeriod), and where they reconnect depends on what answers then: the backup
does not take over while the primary is stopped (fact 19, artemis-pause-zk), so the clients' retries
(reconnectAttempts × retryInterval) run while no broker serves. What Artemis and the clients really
do is recorded each run (docs/ARTEMIS_LAB.md fact 32), never assumed.

Truth: SIGSTOP/SIGCONT (the drill's), the backup's AMQ221007 and the primary's "Quorum UNAVAILABLE"
after SIGSTOP, the primary's exit, the drill's 20 Hz console probe of both brokers, each client's
ledger (its FailoverEventListener and ExceptionListener events, and when it worked again: the
producer's first acknowledged send, the consumer's first commit, after the backup's activation),
the backup's own list of its connections, and the Jepsen ledger with a final read.
Bar: the pause found as unanswered scrapes of the primary (both ends within one scrape), one
failover to the backup first seen active within one scrape of its AMQ221007, a split brain if and
only if the probe saw both active, no acknowledged message lost, and gold client_shifts: the
clients arrived on the backup as the backup listed them, first seen within one scrape of the broker
creating their connections, its shift bounds holding SIGSTOP → that creation.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.artemis_clients import (CORE_SETTINGS, RATE, CoreJmsClients, _score_ledger, _score_shift,
                                                core_event_times, final_ledger, stop_producing)
from brokerscope.drills.artemis_kill import _zk_targets
from brokerscope.drills.artemis_pause import (PAUSE_S, RoleProbe, pause_until_taken_over, run_on_replication_pair,
                                              score_split_brain, score_takeover, start_pair_collecting)
from brokerscope.drills.common import Scorecard, rows, say, settle
from brokerscope.drills.pause_master import score_pause
from infra.artemis_lab import ArtemisPair

NAME = "artemis-clients-core-pause-zk"
SUMMARY = ("Core JMS producer and consumer while the Artemis replication primary (ZooKeeper lock manager) "
           "is SIGSTOPped for 3× its session: a silent live")


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    truth = {"drill": NAME, "pause_s": PAUSE_S, "rate": RATE, "clients_kind": "core"}
    return run_on_replication_pair(workdir, interval, keep, truth,
                                   lambda pair, zk, wd, t: _drive(pair, wd, interval, t, _zk_targets(zk, pair)),
                                   fault_ts="sigstop_ts")


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict, zk_targets: list[dict]) -> None:
    primary, backup = pair.names
    # the clients' connectionTTL, so brokerscope's failover-duration risk uses it instead of Artemis' default
    col = start_pair_collecting(pair, workdir, interval, truth, zk_targets, messages=0,
                                gc_options={"connection_ttl_ms": CORE_SETTINGS.connection_ttl_ms})
    truth["connections_idle"] = {primary: pair.connections(primary)}
    with CoreJmsClients(pair, workdir, truth) as clients, RoleProbe(pair) as probe:
        settle(interval, 6, 3.0)
        truth["connections_before_pause"] = {primary: pair.connections(primary)}
        pause_until_taken_over(pair, probe, truth, under=f" under {RATE:g} msg/s")
        truth["backup_connector"] = f"127.0.0.1:{pair.acceptor_ports[backup]}"
        truth["clients_on_backup"] = _wait_on_backup(clients, truth)
        say(f"clients on {backup}: {truth['clients_on_backup']}")
        stop_producing(clients, pair, interval, truth)
    truth["both_active_seen"] = [min(probe.both_active), max(probe.both_active)] if probe.both_active else None
    truth["dual_active"] = bool(probe.both_active)
    final_ledger(clients, pair, interval, truth, col)


def _budget_s() -> float:
    """The longest a client can take to fail over: its retries plus a blocking call's timeout."""
    return (CORE_SETTINGS.reconnect_budget_s or 60.0) + CORE_SETTINGS.call_timeout_ms / 1000


def _wait_on_backup(clients: CoreJmsClients, truth: dict) -> dict[str, dict]:
    """Per client, from its ledger: its failover to the backup's connector after SIGSTOP
    (`completed`), the failure it detected last before it (`left`: when it left the broker it was on),
    its first piece of work there (`working`: the producer's acknowledged send, the consumer's
    commit), and the work it did between SIGCONT and that failover (on the resumed primary). Waits
    until every client works on the backup, one failed for good, or its longest failover is over."""
    work = {CoreJmsClients.PRODUCER: "acked", CoreJmsClients.CONSUMER: "committed"}
    deadline = truth["sigcont_ts"] + _budget_s() + 10.0
    while True:
        seen = {n: _on_backup(clients.clients.ledger(n), ev, truth) for n, ev in work.items()}
        if all(x["working"] is not None or x["gave_up"] for x in seen.values()) or time.time() > deadline:
            return seen
        time.sleep(0.1)


def _on_backup(ledger, work_event: str, truth: dict) -> dict:
    stop, cont, backup = truth["sigstop_ts"], truth["sigcont_ts"], truth["backup_connector"]
    events = [e for e in ledger.failovers() if e["t"] >= stop]
    completed = next((e["t"] for e in events if e.get("type") == "FAILOVER_COMPLETED" and e.get("remote") == backup),
                     None)
    before = [e["t"] for e in events if e.get("type") == "FAILURE_DETECTED" and (completed is None or e["t"] <= completed)]
    done = ledger.times(work_event)
    return {"completed": completed, "left": max(before, default=None),
            "working": None if completed is None else min((t for t in done if t >= completed), default=None),
            "work_on_resumed_primary": sum(1 for t in done if cont <= t < (completed or float("inf"))),
            "gave_up": any(e.get("type") == "FAILOVER_FAILED" or e["ev"] == "fatal" for e in events)}


def clients_left_at(truth: dict) -> float | None:
    """When the first client left the broker it was on for the backup: its last detected failure
    before its failover there (after SIGCONT a client can be back on the resumed primary first)."""
    left = [x["left"] for x in truth["clients_on_backup"].values() if x["left"] is not None]
    return min(left) if left else None


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    old, stop, cont = truth["master_before"], truth["sigstop_ts"], truth["sigcont_ts"]
    score_pause(card, lh, old, stop, cont, "the frozen primary (unanswered scrapes)")
    score_split_brain(card, lh, truth)
    score_takeover(card, lh, truth)
    _score_ledger(card, truth)
    _score_silent_failover(card, truth)
    _score_shift(card, rows(lh, "client_shifts"), truth, left=clients_left_at(truth))
    return card


def _score_silent_failover(card: Scorecard, truth: dict) -> None:
    """What the clients did against a silent live, as facts (truth, not brokerscope's findings):
    detection against connectionTTL (the Core client fails a connection that brought no data for
    connectionTTL, checking every clientFailureCheckPeriod: ClientSessionFactoryImpl.PingRunnable),
    their failover events in order, and the service gap each had, SIGSTOP → working on the backup."""
    s, stop = truth["client_settings"], truth["sigstop_ts"]
    takeover = truth["takeover_log_ts"] or truth["takeover_seen_ts"]
    detected = core_event_times(truth, "FAILURE_DETECTED")
    ttl, period = s["connection_ttl_ms"] / 1000, s["client_failure_check_period_ms"] / 1000
    card.facts["SIGSTOP → FAILURE_DETECTED per client (s) vs connectionTTL … 2×connectionTTL + clientFailureCheckPeriod"] = (
        {n: None if t is None else round(t - stop, 3) for n, t in detected.items()}, ttl, 2 * ttl + period)
    card.facts["client events after SIGSTOP (s: type → connector)"] = {
        n: [(round(e["t"] - stop, 2), e.get("type") or e["ev"], e.get("remote")) for e in c["events"] if e["t"] >= stop]
        for n, c in truth["clients"].items()}
    card.facts["backup took over during the pause"] = truth["backup_active_during_pause"]
    card.facts["SIGCONT → backup active (s)"] = round(takeover - truth["sigcont_ts"], 3)
    on_backup = truth["clients_on_backup"]
    card.facts["service gap per client, SIGSTOP → working on the backup (s)"] = {
        n: None if x["working"] is None else round(x["working"] - stop, 3) for n, x in on_backup.items()}
    card.facts["backup active (AMQ221007) → clients working on it (s)"] = {
        n: None if x["working"] is None else round(x["working"] - takeover, 3) for n, x in on_backup.items()}
    card.facts["sends acknowledged / commits by the resumed primary before it stopped"] = {
        n: x["work_on_resumed_primary"] for n, x in on_backup.items()}
    card.facts["primary JVM exited after SIGCONT (s)"] = (round(truth["primary_exit_ts"] - truth["sigcont_ts"], 3)
                                                          if truth["primary_exit_ts"] else None)
