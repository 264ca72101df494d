"""artemis-stale-backup-zk: a backup that fell behind must not activate. A real Artemis 2.40.0
replication pair under the ZooKeeper lock manager (session 4 s, the 3-node ensemble collected too):

1. SIGKILL the backup; the primary serves on alone and takes messages the backup never gets (the
   drill reads the primary's `ActivationSequence` before and after: does the primary move the
   coordinated sequence on when it loses its replica?);
2. SIGKILL the primary: no broker is active;
3. start the stale backup alone: with a local sequence behind the coordinated one it must not
   activate — an outage an SRE must be told the cause of ("backup stale, cannot take over");
4. start the primary again: it activates on its own journal, the backup resynchronizes.

Truth: the drill's kill and start times, the drill's 20 Hz console probe (every role change of
both brokers), the activation sequences read from each console, the brokers' own lines (the
backup's "Not a candidate" / AMQ221024 / AMQ221007, the primary's AMQ221007).
Bar: no failover and no split brain; the stale backup never in a role interval; the primary's
return after the outage as its own `restart` event (last active within one scrape before the kill;
first active again from its AMQ221007 to one scrape after its console is up); the stale backup,
seen waiting while the lock was free for longer than its session, as `zk.backup-not-taking-over`
(first seen from its "Not a candidate" line to one scrape after its console is up), in the
outage's incident.

Measured (Artemis 2.40.0, 4 runs, idle and with one core busy): the primary moved its ActivationSequence 1 → 2 0.13 s after
losing its backup; the stale backup logged "Not a candidate … local activation sequence 1 does not
match coordinated activation sequence 2" 2.1–5.5 s after its start and answered Backup true with NO
NodeID and ActivationSequence -1 (so `stale-backup` and `zk.backup-stale`, written from the source,
cannot fire on it: docs/ARTEMIS_LAB.md fact 28); the restarted primary activated on its own journal
and both ended on sequence 3.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.artemis_kill import QUEUE, _zk_targets, hand_overs
from brokerscope.drills.artemis_pause import (
    RoleProbe,
    run_on_replication_pair,
    start_pair_collecting,
    wait_role_or_none,
)
from brokerscope.drills.common import SLACK_S, Scorecard, describe_window, epoch, rows, say, scrape_end, settle
from collectors.scraper import scrape_timeout
from infra.artemis_lab import ArtemisPair, LabError, broker_values, console_read, first_log_times, stomp_send

NAME = "artemis-stale-backup-zk"
SUMMARY = ("SIGKILL the Artemis backup, then the primary (ZooKeeper lock manager); start the stale backup alone: "
           "it must not activate; start the primary: it serves again")
PRIMARY, BACKUP = "art-a", "art-b"
HOLD_S = 12.0  # how long the stale backup is left alone: several scrapes and three lock-manager sessions


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    return run_on_replication_pair(workdir, interval, keep, {"drill": NAME, "hold_s": HOLD_S},
                                   lambda pair, zk, wd, t: _drive(pair, wd, interval, t, _zk_targets(zk, pair)),
                                   fault_ts="backup_kill_ts", names=(PRIMARY, BACKUP))


def activation_sequence(pair: ArtemisPair, name: str) -> int | None:
    """The broker's own `ActivationSequence` from its console; None when it does not answer one."""
    b = pair.brokers.get(name)
    if b is None:
        return None
    try:
        item = console_read(b.jolokia_url, pair.monitor_user, pair.monitor_password, pair.origin,
                            attributes=("ActivationSequence",), timeout=1.0)
    except (OSError, ValueError, LabError):
        return None
    seq = (broker_values(item) or {}).get("ActivationSequence")
    return seq if isinstance(seq, int) else None


def _wait_sequence(pair: ArtemisPair, name: str, pred, timeout: float) -> tuple[int | None, float | None]:
    """(sequence, when first seen) once pred(sequence) holds; (last seen, None) after `timeout`."""
    deadline, seq = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        seq = activation_sequence(pair, name)
        if seq is not None and pred(seq):
            return seq, time.time()
        time.sleep(0.1)
    return seq, None


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict, zk_targets: list[dict]) -> None:
    col = start_pair_collecting(pair, workdir, interval, truth, zk_targets)
    before = {n: activation_sequence(pair, n) for n in pair.names}
    truth["sequences_before"] = before
    with RoleProbe(pair) as probe:
        truth["backup_kill_ts"] = time.time()
        pair.kill(BACKUP)
        say(f"SIGKILL {BACKUP} (the backup); {PRIMARY} serves alone")
        seq, seen = _wait_sequence(pair, PRIMARY, lambda s: s > (before[PRIMARY] or 0), timeout=20)
        truth["primary_sequence_after_backup_loss"], truth["primary_sequence_moved_ts"] = seq, seen
        say(f"{PRIMARY}'s ActivationSequence {before[PRIMARY]} → {seq}")
        truth["sent_while_unprotected"] = stomp_send(pair.brokers[PRIMARY].stomp_url, QUEUE,
                                                     (f"u{i}" for i in range(10)), login="admin",
                                                     passcode=pair.admin_password)
        settle(interval, 4, 2.0)
        truth["kill_ts"] = time.time()
        truth["killed_pid"] = pair.kill(PRIMARY)
        say(f"SIGKILL {PRIMARY} (the primary): no broker active")
        settle(interval, 4, 2.0)
        truth["stale_start_ts"] = time.time()
        pair.start_broker(BACKUP)
        say(f"started {BACKUP} alone (stale); it must not activate")
        truth["stale_seen_as_backup_ts"] = wait_role_or_none(pair, BACKUP, "backup", timeout=60)
        truth["stale_sequence"] = activation_sequence(pair, BACKUP)
        time.sleep(HOLD_S)
        truth["restart_ts"] = time.time()
        pair.start_broker(PRIMARY)
        truth["primary_back_seen_ts"] = wait_role_or_none(pair, PRIMARY, "active", timeout=120)
        say(f"{PRIMARY} " + ("is active again" if truth["primary_back_seen_ts"] else "did not become active"))
        target = activation_sequence(pair, PRIMARY)
        truth["backup_sequence_after"], truth["backup_caught_up_ts"] = _wait_sequence(
            pair, BACKUP, lambda s: target is not None and s >= target, timeout=60)
        settle(interval, 4, 2.0)
    truth["role_changes"] = {n: [[round(t, 3), r] for t, r in ch] for n, ch in probe.changes.items()}
    truth["backup_ever_active"] = BACKUP in probe.first_active
    truth["dual_active"] = bool(probe.both_active)
    truth["sequences_after"] = {n: activation_sequence(pair, n) for n in pair.names}
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}; sequences {truth['sequences_after']}")
    truth["log_ts"] = first_log_times(pair, LINES, truth["stale_start_ts"])


#: each broker's own lines from the stale start on (first of each; None when absent)
LINES = {
    "backup_not_candidate": (BACKUP, r"Not a candidate"),
    "backup_active": (BACKUP, r"AMQ221007"),
    "backup_synchronized": (BACKUP, r"AMQ221024"),
    "backup_console": (BACKUP, r"AMQ241002"),
    "primary_active": (PRIMARY, r"AMQ221007"),
    "primary_console": (PRIMARY, r"AMQ241002"),
}


# --------------------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------------------


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    card.require(not truth["backup_ever_active"], "Artemis activated the stale backup (probe): not this drill's case")
    card.require(truth["primary_back_seen_ts"] is not None, "the restarted primary never became active (probe)")
    failovers, states = rows(lh, "failover_events"), rows(lh, "broker_state")
    card.expect_none("failover", hand_overs(failovers),
                     lambda e: f"{e['event_type']} {e['from_instance']} → {e['to_instance']} at {e['new_first_active']}")
    card.expect_none("split brain", rows(lh, "split_brain_windows"), describe_window)
    card.expect_none("stale backup active", [iv for iv in rows(lh, "role_intervals") if iv["instance"] == BACKUP],
                     lambda iv: f"{iv['instance']} active from {iv['start_ts']}")
    back = [e for e in failovers if e["event_type"] == "restart" and e["to_instance"] == PRIMARY]
    if card.detect("the primary's return after the outage", len(back) == 1, f"no single restart of {PRIMARY} in {failovers}"):
        e, logs = back[0], truth["log_ts"]
        card.boundary("primary last active (vs kill)", epoch(e["old_last_active"]), truth["kill_ts"],
                      lo=-(card.interval + 0.1), hi=0.0)
        active = logs["primary_active"] or truth["primary_back_seen_ts"]
        _seen_from_console(card, "primary active again (vs its AMQ221007)",
                           scrape_end(epoch(e["new_first_active"]), PRIMARY, states), active, logs["primary_console"])
        card.facts["outage, kill → primary active again (AMQ221007, s)"] = round(active - truth["kill_ts"], 3)
        card.facts["reconstructed outage upper bound (s)"] = round(e["outage_upper_s"], 3)
    _score_stale(card, lh, truth)
    card.facts["ActivationSequence before / primary after losing its backup / stale backup / after"] = (
        truth["sequences_before"], truth["primary_sequence_after_backup_loss"], truth["stale_sequence"],
        truth["sequences_after"])
    card.facts["brokers' lines (s after the stale start)"] = {
        k: round(t - truth["stale_start_ts"], 3) for k, t in truth["log_ts"].items() if t is not None}
    return card


def _seen_from_console(card: Scorecard, what: str, answered: float | None, since: float, console: float | None) -> None:
    """A state a broker reaches before its console (its Jolokia) is up, first seen by a scrape that
    ANSWERED (`scrape_end`: a scrape sent just before the console logged AMQ241002 is answered once
    it is) from `since` on, and no later than one scrape after that line — one scrape being the
    longest a scrape takes (a console that accepts but does not answer yet runs it to its timeout)."""
    console = max(since, console or since)
    one_scrape = max(card.interval, scrape_timeout(float("inf"), card.interval))
    card.boundary(what, answered, since, lo=-0.1, hi=(console - since) + one_scrape + SLACK_S)


def _score_stale(card: Scorecard, lh, truth: dict) -> None:
    """The stale backup waiting while the lock was free: `zk.backup-not-taking-over` on it, first seen
    waiting between its "Not a candidate" line and one scrape after its console came up. (What
    `zk.backup-stale` and `stale-backup` would need — the backup's own ActivationSequence — a real
    2.40.0 stale backup does not report: -1, and no NodeID.)"""
    found = [z for z in rows(lh, "zk_findings") if z["code"] == "zk.backup-not-taking-over" and z["instance"] == BACKUP]
    waiting = truth["log_ts"]["backup_not_candidate"]
    if not card.require(waiting is not None, "the backup never logged 'Not a candidate': not a stale backup"):
        return
    if card.detect("stale backup not taking over (zk.backup-not-taking-over)", len(found) == 1,
                   f"{len(found)} zk.backup-not-taking-over findings on {BACKUP}"):
        _seen_from_console(card, "stale backup first seen waiting (vs 'Not a candidate')",
                           scrape_end(epoch(found[0]["start_ts"]), BACKUP, rows(lh, "broker_state")), waiting,
                           truth["log_ts"]["backup_console"])
        card.facts["zk.backup-not-taking-over"] = found[0]["message"]
        evidence = [e for e in rows(lh, "incident_evidence") if e["source_id"] == found[0]["finding_id"]]
        card.detect("in the outage's incident", bool(evidence), "the finding is in no incident")
    card.facts["stale backup reported (ActivationSequence, NodeID)"] = sorted(
        {(s["activation_sequence"], s["node_id"]) for s in rows(lh, "broker_state")
         if s["instance"] == BACKUP and s["role"] == "backup" and epoch(s["ts"]) >= truth["stale_start_ts"]
         and epoch(s["ts"]) < truth["restart_ts"]}, key=str)
