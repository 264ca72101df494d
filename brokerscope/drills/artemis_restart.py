"""artemis-restart-zk and artemis-restart-split-brain: SIGKILL the primary of a real Artemis 2.40.0
replication pair, let the backup take over, then restart the old primary — once where it must not
come back active, once misconfigured so that it does (a real split brain).

* ``artemis-restart-zk``: replication under the ZooKeeper lock manager (session 4 s, the 3-node
  ensemble collected too), the backup with ``allow-failback=false``. What Artemis does: the
  restarted primary finds the coordinated activation sequence ahead of its own ("Not a candidate
  for NodeID … local activation sequence 1 does not match coordinated activation sequence 2"),
  logs "This broker cannot become primary … restarting as backup", moves its journal aside,
  resynchronizes from the new active (AMQ221024) and waits as its backup; with failback off, the
  active stays. The activation sequence — not `check-for-active-server`, false here — is what
  keeps it passive.
* ``artemis-restart-split-brain``: classic replication (no lock manager: the backup activates on a
  quorum vote), the primary with ``check-for-active-server=false`` — Artemis's default. What
  Artemis does: with one pair there is nobody to vote ("AMQ221083: ignoring quorum vote as max
  cluster size is 1"), so the backup takes over; the restarted primary activates on its own
  journal without asking the cluster (AMQ221007), both log AMQ222294 "possible split brain on
  nodeID …" and both serve clients. The drill puts messages on each side, then ends the split brain
  as an operator would: SIGKILL of the restarted primary.

What was tried and did NOT give two active brokers after a restart (docs/ARTEMIS_LAB.md fact 26):
a lock-manager pair whose backup uses another `namespace` — the backup's takeover finds
coordinated sequence 0 against its 1, "Not a candidate", AMQ221070 "Restarting as backup": no
failover at all, the primary's return makes it active again; the activation sequence keeps a
restarted primary out too. (Peers with different `coordination-id`s are both active from the
start, as two NodeIDs: another misconfiguration, not a restart.)

Truth: the kill and restart times (the drill's), the backup's AMQ221007, the restarted primary's
own lines (above), and the drill's 20 Hz console probe of both brokers: every role change, and
when both were active (from–to). Bar, both: one failover primary → backup within one scrape of the
kill and of the backup's AMQ221007. Restart-zk: the restarted primary never reported active (no
interval, no failback, no split brain), first seen as backup within one scrape of the probe. Split
brain: one window, `certain`, both ends within one scrape of the probe's first and last sighting of
both active, in an incident, with the cause named (risk finding `check-for-live-server-off` on the
restarted primary: `possible`, as check-for-active-server is not in any MBean).

Measured (2 shared cores, load 20–28, two runs each; docs/ARTEMIS_LAB.md facts 23–24):
restart-zk — the backup's AMQ221007 6.6 / 5.4 s after the kill (ZooKeeper had sequence 2 and its
lease 2.9 / 1.3 s earlier); the restarted primary "Not a candidate" 13.1 / 12.9 s after its restart,
a backup on its console at 21.3 / 18.8 s, synchronized (AMQ221024) at 23.1 / 20.3 s, sequence 2 on
both brokers and in ZooKeeper, one lease (the new active's) throughout; boundaries: old primary
−0.04 / −0.15 s before the kill, backup +0.37 / +0.45 s after AMQ221007, restarted primary seen as
backup −0.06 / −0.21 s from the probe. Split brain — the backup skipped the vote 0.03 s after the
kill and logged AMQ221007 at 2.6 / 1.7 s; the restarted primary AMQ221007 8.3 / 8.7 s after its
restart, its console active 1.7 / 2.5 s later; both active for 3.96 / 4.02 s (probe), found as one
certain window of 3.81 / 3.74 s, start −0.14 / +0.24 s, end −0.29 / −0.04 s; 7 and 4 messages taken.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from brokerscope.drills.artemis_kill import QUEUE, _zk_targets, hand_overs, kill_until_taken_over, score_failover
from brokerscope.drills.artemis_pause import (
    RoleProbe,
    run_on_replication_pair,
    start_pair_collecting,
    wait_role_or_none,
)
from brokerscope.drills.common import Scorecard, describe_window, epoch, nearest_in_scrape, rows, say, settle
from infra.artemis_lab import ArtemisPair, first_log_times, stomp_send

NAME = "artemis-restart-zk"
SUMMARY = "SIGKILL the Artemis replication primary, restart it: passive again (lock manager) or split brain (classic)"
SUMMARIES = {
    "artemis-restart-zk": "SIGKILL the Artemis replication primary (ZooKeeper lock manager, no failback), restart it: "
                          "it must come back passive",
    "artemis-restart-split-brain": "SIGKILL the Artemis classic replication primary (check-for-active-server false), "
                                   "restart it: it comes back active beside the backup — a real split brain",
}
PRIMARY, BACKUP = "art-a", "art-b"
#: messages each side takes while both are active (different, so the sides can be told apart)
SPLIT_SENDS = {PRIMARY: 7, BACKUP: 4}


@dataclass(frozen=True)
class Variant:
    topology: str
    comes_back_as: str  # what the restarted primary must become: backup | active
    ha_overrides: dict = field(default_factory=dict)  # broker → HaSpec fields (infra.artemis.instance)


VARIANTS = {
    "artemis-restart-zk": Variant("replication-zk", "backup", {BACKUP: {"allow_failback": False}}),
    "artemis-restart-split-brain": Variant("replication", "active", {PRIMARY: {"check_for_active": False}}),
}


def run(workdir: Path, interval: float = 0.5, keep: bool = False, variant: str = NAME) -> tuple[Path, dict]:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}")
    v = VARIANTS[variant]
    truth = {"drill": variant, "comes_back_as": v.comes_back_as, "ha_overrides": v.ha_overrides}
    return run_on_replication_pair(workdir, interval, keep, truth,
                                   lambda pair, zk, wd, t: _drive(pair, wd, interval, t, _zk_targets(zk, pair), v),
                                   fault_ts="kill_ts", topology=v.topology, names=(PRIMARY, BACKUP),
                                   ha_overrides=v.ha_overrides)


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict, zk_targets: list[dict], v: Variant) -> None:
    primary = pair.names[0]
    col = start_pair_collecting(pair, workdir, interval, truth, zk_targets)
    with RoleProbe(pair) as probe:
        kill_until_taken_over(pair, truth, interval)
        truth["restart_ts"] = time.time()
        pair.start_broker(primary)
        say(f"restarted {primary}; waiting for it to be {v.comes_back_as}")
        truth["comeback_seen_ts"] = wait_role_or_none(pair, primary, v.comes_back_as, timeout=120)
        say(f"{primary} is {v.comes_back_as}" if truth["comeback_seen_ts"] else f"{primary} did not become {v.comes_back_as}")
        if v.comes_back_as == "active" and truth["comeback_seen_ts"]:
            _hold_split_brain(pair, interval, truth)
        else:
            settle(interval, 16, 8.0)  # long enough to see that it stays as it is
    truth["role_changes"] = {n: [[round(t, 3), r] for t, r in ch] for n, ch in probe.changes.items()}
    truth["both_active_seen"] = [min(probe.both_active), max(probe.both_active)] if probe.both_active else None
    truth["dual_active"] = bool(probe.both_active)
    truth["roles_after"] = pair.roles()
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}; roles now {truth['roles_after']}")
    _restart_log_truth(pair, truth)


def _hold_split_brain(pair: ArtemisPair, interval: float, truth: dict) -> None:
    """Both active: let the collector see it, put messages on each side, then end it as an operator
    would — SIGKILL the restarted primary — and let the collector see the end."""
    primary = pair.names[0]
    settle(interval, 2, 1.0)
    truth["sent_during_split"] = {
        n: stomp_send(pair.brokers[n].stomp_url, QUEUE, (f"{n}-split-{i}" for i in range(count)),
                      login="admin", passcode=pair.admin_password)
        for n, count in SPLIT_SENDS.items()}
    settle(interval, 4, 2.0)
    truth["end_kill_ts"] = time.time()
    truth["end_killed_pid"] = pair.kill(primary)
    say(f"split brain ended: SIGKILL {primary} (pid {truth['end_killed_pid']})")
    settle(interval, 4, 2.0)


#: the restarted primary's and the backup's own lines after the restart (first of each)
RESTART_LINES = {
    "primary_not_candidate": (PRIMARY, r"Not a candidate for NodeID"),
    "primary_restarting_as_backup": (PRIMARY, r"cannot become primary .* restarting as backup"),
    "primary_synchronized": (PRIMARY, r"AMQ221024"),
    "primary_active": (PRIMARY, r"AMQ221007"),
    "primary_split_brain_warning": (PRIMARY, r"AMQ222294"),
    "backup_split_brain_warning": (BACKUP, r"AMQ222294"),
    "backup_stepped_aside": (BACKUP, r"AMQ221039|AMQ221008"),
}


def _restart_log_truth(pair: ArtemisPair, truth: dict) -> None:
    """Log times after the restart (and the backup's vote line after the kill), None when absent."""
    truth["restart_log_ts"] = first_log_times(pair, RESTART_LINES, truth["restart_ts"])
    truth["backup_vote_log_ts"] = first_log_times(pair, {"vote": (BACKUP, r"AMQ221083|AMQ221071")}, truth["kill_ts"])["vote"]


# --------------------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------------------


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    failovers = rows(lh, "failover_events")
    score_failover(card, failovers, truth)
    card.require(len(hand_overs(failovers)) == 1, f"expected the failover only, got {hand_overs(failovers)}")
    if truth["comes_back_as"] == "backup":
        _score_stays_passive(card, lh, truth)
    else:
        _score_split_brain(card, lh, truth)
    _restart_facts(card, lh, truth)
    return card


def _after_restart(truth: dict, name: str) -> list[list]:
    """The probe's role changes of `name` from the restart on."""
    return [[t, r] for t, r in truth["role_changes"][name] if t >= truth["restart_ts"]]


def _first_seen(truth: dict, name: str, role: str) -> float | None:
    """The earliest sighting of `name` in `role` after the restart by the drill's pollers (the 20 Hz
    probe, or the drill's own wait for that role): the console's truth."""
    seen = [t for t, r in _after_restart(truth, name) if r == role]
    if truth["comeback_seen_ts"] is not None and truth["comes_back_as"] == role:
        seen.append(truth["comeback_seen_ts"])
    return min(seen, default=None)


def _score_stays_passive(card: Scorecard, lh, truth: dict) -> None:
    old = truth["master_before"]
    card.require(not any(r == "active" for _, r in _after_restart(truth, old)),
                 "Artemis brought the restarted primary back active (probe)")
    card.expect_none("split brain", rows(lh, "split_brain_windows"), describe_window)
    card.expect_none("failback", [e for e in hand_overs(rows(lh, "failover_events")) if e["event_type"] == "failback"],
                     lambda e: f"{e['from_instance']} → {e['to_instance']} at {e['new_first_active']}")
    back = [iv for iv in rows(lh, "role_intervals")
            if iv["instance"] == old and epoch(iv["start_ts"]) >= truth["restart_ts"]]
    card.expect_none("restarted primary active", back, lambda iv: f"{iv['instance']} active from {iv['start_ts']}")
    seen = [s for s in rows(lh, "broker_state")
            if s["instance"] == old and s["role"] == "backup" and epoch(s["ts"]) >= truth["restart_ts"]]
    if card.detect("restarted primary seen as backup", bool(seen), "no backup observation after the restart"):
        first, probe = min(seen, key=lambda s: s["ts"]), _first_seen(truth, old, "backup")
        card.boundary("restarted primary first seen as backup (its first scrape's send … answer vs the probe)",
                      nearest_in_scrape(first, probe), probe)


def _score_split_brain(card: Scorecard, lh, truth: dict) -> None:
    old = truth["master_before"]
    if not card.require(truth["dual_active"], "Artemis never had both brokers active (probe): no split brain"):
        return
    windows = rows(lh, "split_brain_windows")
    if not card.detect("split brain", len(windows) == 1, f"{len(windows)} windows: {windows}"):
        return
    w, (first, last) = windows[0], truth["both_active_seen"]
    card.boundary("split brain start (vs the probe)", epoch(w["certain_start"]), first)
    card.boundary("split brain end (vs the probe)", epoch(w["certain_end"]), last)
    card.require(w["certainty"] == "certain", f"split brain window {w['certainty']}, both were seen active")
    card.facts["split brain seen by the probe (s)"] = round(last - first, 3)
    card.facts["split brain certain window (s)"] = round(w["duration_s"], 3)
    card.facts["enqueued during it (a, b) vs sent"] = ((w["enqueued_a"], w["enqueued_b"]), truth["sent_during_split"])
    causes = [r for r in rows(lh, "risk_findings") if r["code"] == "check-for-live-server-off" and r["instance"] == old]
    card.detect("cause: a restarted primary that does not check for an active server", bool(causes),
                "no check-for-live-server-off finding on the restarted primary")
    evidence = [e for e in rows(lh, "incident_evidence") if e["source_id"] == w["window_id"]]
    card.detect("incident", bool(evidence), "the split brain is in no incident")


def _restart_facts(card: Scorecard, lh, truth: dict) -> None:
    """What Artemis did after the restart (s after it), and the activation sequences seen."""
    restart, vote = truth["restart_ts"], truth["backup_vote_log_ts"]
    if vote is not None:
        card.facts["backup skipped the quorum vote (AMQ221083/221071), s after the kill"] = round(vote - truth["kill_ts"], 3)
    card.facts["restarted primary's lines (s after restart)"] = {
        k: round(t - restart, 3) for k, t in truth["restart_log_ts"].items() if t is not None}
    card.facts["restarted primary's roles (probe, s after restart)"] = [
        (round(t - restart, 2), r) for t, r in _after_restart(truth, truth["master_before"])]
    sequences: dict[str, int] = {}
    for s in sorted(rows(lh, "broker_state"), key=lambda s: s["ts"]):
        if s.get("activation_sequence") is not None:
            sequences[s["instance"]] = s["activation_sequence"]
    if sequences:  # none on classic replication: -1 (no activation sequence) is read as null
        card.facts["last ActivationSequence per broker"] = sequences
    snapshots = [c for c in sorted(rows(lh, "zk_coordination"), key=lambda c: c["ts"]) if c["answered"] and c["node_id"] != "*"]
    if snapshots:
        coordinated = [c["committed_sequence"] for c in snapshots if c["committed_sequence"] is not None]
        card.facts["last committed sequence in ZooKeeper"] = coordinated[-1] if coordinated else None
        card.facts["lock leases after the restart (count, holder session)"] = sorted(
            {(c["lease_count"], c["holder_session"]) for c in snapshots if epoch(c["ts"]) >= restart}, key=str)
