"""artemis-pause-zk: SIGSTOP the active primary of a real Artemis 2.40.0 replication pair under the
ZooKeeper lock manager for three times its ZooKeeper session, then SIGCONT.

What Artemis does (docs/ARTEMIS_LAB.md fact 19, re-measured and recorded by every run, never
assumed): the backup does not take over while the primary is stopped — it acts on losing the
replication link, which stays open to the frozen JVM, not on the primary's session expiring. On
SIGCONT the primary answers once more as active, learns that its session expired ("Quorum
UNAVAILABLE: async stopping broker"), stops, and its JVM exits; the backup then logs AMQ221007 and
becomes active. No split brain, but clients had no service for the whole pause and the takeover.

Truth: SIGSTOP/SIGCONT times (the drill's), the backup's AMQ221007 after SIGCONT, the primary's exit
(its pid gone), and the drill's 20 Hz console probe of both brokers (whether both were ever active
at once). Bar: the pause found as a run of unanswered scrapes of the primary, both ends within one
scrape of SIGSTOP / SIGCONT; one failover primary → backup, the backup first seen active within one
scrape of its AMQ221007; a split brain if and only if the probe saw both active.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from brokerscope.drills.artemis_kill import QUEUE, _ensemble, _zk_targets
from brokerscope.drills.common import (Scorecard, describe_window, epoch, fresh_workdir, rows, say, settle,
                                       start_collecting, write_truth)
from brokerscope.drills.pause_master import score_pause
from infra.artemis_lab import ArtemisPair, log_times, stomp_send
from infra.processes import proc_state

NAME = "artemis-pause-zk"
SUMMARY = "SIGSTOP the Artemis replication primary (ZooKeeper lock manager) for 3× its session, then SIGCONT"
SESSION_MS = 4000  # the lock manager's ZooKeeper session (session-ms); the pause is three of them
PAUSE_S = 3 * SESSION_MS / 1000


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    return run_on_replication_pair(workdir, interval, keep, {"drill": NAME, "pause_s": PAUSE_S},
                                   lambda pair, zk, wd, truth: _drive(pair, wd, interval, truth, _zk_targets(zk, pair)),
                                   fault_ts="sigstop_ts")


def run_on_replication_pair(workdir: Path, interval: float, keep: bool, truth: dict, drive, fault_ts: str,
                            topology: str = "replication-zk", **pair_options):
    """A drill on a fresh replication pair (lock manager, session SESSION_MS, and its 3-node ensemble;
    or with ``topology="replication"`` the classic quorum vote, no ensemble: zk is None):
    `drive(pair, zk, workdir, truth)`, everything stopped by PID, then the log truth after
    truth[fault_ts]; returns (config path, ground truth). ``pair_options`` go to ArtemisPair."""
    workdir = fresh_workdir(workdir, keep)
    truth = {"topology": topology, "scrape_interval_s": interval, **truth}
    zk = _ensemble(workdir, topology)
    if zk is not None:
        truth["zk_session_ms"] = SESSION_MS
    try:
        pair = ArtemisPair(workdir / "lab", topology, zk_connect=zk.connect_string if zk else None,
                           zk_session_ms=SESSION_MS, **pair_options)
        try:
            drive(pair, zk, workdir, truth)
        finally:
            pair.stop()
    finally:
        if zk is not None:
            zk.stop()
    truth_from_logs(pair, truth, truth[fault_ts])
    write_truth(workdir, truth)
    return workdir / "brokerscope.yaml", truth


class RoleProbe:
    """Both brokers' roles from their consoles at ~20 Hz in a thread: when each was seen active,
    and whether both ever were at once (the split-brain truth)."""

    def __init__(self, pair: ArtemisPair) -> None:
        self.pair, self.both_active, self.first_active = pair, [], {}
        self.changes: dict[str, list[tuple[float, str]]] = {n: [] for n in pair.names}  # (time, new role)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="artemis-role-probe", daemon=True)

    def __enter__(self) -> "RoleProbe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            now, roles = time.time(), {n: self.pair.role(n, timeout=0.5) for n in self.pair.names}
            for name, role in roles.items():
                if role == "active":
                    self.first_active.setdefault(name, now)
                if not self.changes[name] or self.changes[name][-1][1] != role:
                    self.changes[name].append((now, role))
            if all(r == "active" for r in roles.values()):
                self.both_active.append(now)


def start_pair_collecting(pair: ArtemisPair, workdir: Path, interval: float, truth: dict, extra_targets: list[dict],
                          gc_logs: bool = False, messages: int = 20, gc_options: dict | None = None):
    """Start the replication pair, collect it (and `extra_targets`; with `gc_logs`, the brokers' GC
    logs too; `gc_options`: more of each broker target's `gc:` settings), send `messages` to the
    primary over STOMP; the collector. Truth: master_before,
    new_master, node_pids, sent_before."""
    primary, backup = pair.names
    locked = pair.topology == "replication-zk"
    say("starting Artemis replication pair ("
        + (f"ZooKeeper lock manager, session {SESSION_MS} ms" if locked else "classic, quorum vote")
        + f"): {primary} primary, {backup} backup")
    pair.start(timeout=120)
    truth["master_before"], truth["new_master"] = primary, backup
    truth["node_pids"] = {n: b.pid for n, b in pair.brokers.items()}
    # the lock manager's session as configured, so findings use it rather than assume Artemis' default
    gc = ({"zk_session_ms": SESSION_MS} if locked else {}) | (gc_options or {})
    targets = [pair.target(n, **({"gc": gc} if gc else {}),
                           **({"gc_logs": [f"{pair.brokers[n].gc_log}*"]} if gc_logs else {})) for n in pair.names]
    tail = {"gc": {"poll_interval": f"{int(interval * 1000)}ms"}} if gc_logs else {}
    _cfg_path, col = start_collecting(workdir, targets + extra_targets, interval, **tail)
    settle(interval)
    if messages:
        truth["sent_before"] = stomp_send(pair.brokers[primary].stomp_url, QUEUE, (f"m{i}" for i in range(messages)),
                                          login="admin", passcode=pair.admin_password)
        settle(interval)
    return col


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict, extra_targets: list[dict]) -> None:
    primary, backup = pair.names
    col = start_pair_collecting(pair, workdir, interval, truth, extra_targets)
    with RoleProbe(pair) as probe:
        pause_until_taken_over(pair, probe, truth)
        settle(interval, 4, 2.0)
    truth["both_active_seen"] = [min(probe.both_active), max(probe.both_active)] if probe.both_active else None
    truth["dual_active"] = bool(probe.both_active)
    truth["sent_after_failover"] = stomp_send(pair.brokers[backup].stomp_url, QUEUE, (f"n{i}" for i in range(10)),
                                              login="admin", passcode=pair.admin_password)
    settle(interval)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def pause_until_taken_over(pair: ArtemisPair, probe: RoleProbe, truth: dict, under: str = "") -> None:
    """SIGSTOP the primary for PAUSE_S, SIGCONT, wait until the backup is active and the primary's
    JVM is gone. Truth: sigstop_ts, backup_active_during_pause, sigcont_ts, takeover_seen_ts,
    primary_exit_ts (None: still running after 60 s)."""
    primary, backup = pair.names
    probe.first_active.clear()
    truth["sigstop_ts"] = time.time()
    pair.pause(primary)
    say(f"SIGSTOP {primary} for {PAUSE_S:g} s (3× the {SESSION_MS} ms ZooKeeper session){under}")
    time.sleep(PAUSE_S)
    truth["backup_active_during_pause"] = backup in probe.first_active
    truth["sigcont_ts"] = time.time()
    pair.resume(primary)
    say(f"SIGCONT {primary}")
    truth["takeover_seen_ts"] = pair.wait_for_role(backup, "active", timeout=60)
    say(f"{backup} is active (seen by the drill's probe)")
    truth["primary_exit_ts"] = _wait_exit(truth["node_pids"][primary], timeout=60)
    say(f"{primary}'s JVM " + ("exited" if truth["primary_exit_ts"] else "is still running"))


def wait_role_or_none(pair: ArtemisPair, name: str, role: str, timeout: float) -> float | None:
    """When the probe first saw `name` in `role`; None when it did not within `timeout` (an outcome
    to record, not an error)."""
    try:
        return pair.wait_for_role(name, role, timeout=timeout)
    except Exception:  # noqa: BLE001
        return None


def _wait_exit(pid: int, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc_state(pid) in (None, "Z", "X"):  # gone, or exited and not yet reaped
            return time.time()
        time.sleep(0.05)
    return None


def truth_from_logs(pair: ArtemisPair, truth: dict, since: float) -> None:
    """The backup's first AMQ221007 and the primary's first "Quorum UNAVAILABLE" after `since`."""
    primary, backup = pair.names
    found = log_times(pair.broker_log(backup), "AMQ221007", since)
    truth["takeover_log_ts"], truth["takeover_log_line"] = found[0] if found else (None, None)
    quorum = log_times(pair.broker_log(primary), "Quorum UNAVAILABLE", since)
    truth["primary_quorum_unavailable_log_ts"] = quorum[0][0] if quorum else None


def score_split_brain(card: Scorecard, lh, truth: dict) -> None:
    """A split brain found if and only if the drill's probe saw both brokers active."""
    windows = rows(lh, "split_brain_windows")
    if truth["dual_active"]:
        card.detect("split brain", bool(windows), "the probe saw both brokers active")
    else:
        card.expect_none("split brain", windows, describe_window)


def score_takeover(card: Scorecard, lh, truth: dict) -> dict | None:
    """One failover master_before → new_master, the new one first active within one scrape of its
    AMQ221007 (else of the drill's probe seeing it active); the failover_events row or None."""
    old, new = truth["master_before"], truth["new_master"]
    moves = [e for e in rows(lh, "failover_events") if e["event_type"] == "failover"]
    ev = [e for e in moves if (e["from_instance"], e["to_instance"]) == (old, new)]
    if not card.detect("failover", len(ev) == 1, f"no single failover {old} → {new} in {moves}"):
        return None
    takeover = truth["takeover_log_ts"] or truth["takeover_seen_ts"]
    card.boundary("backup first active (vs its AMQ221007)", epoch(ev[0]["new_first_active"]), takeover, lo=-0.1)
    card.facts["reconstructed_outage_upper_s"] = round(ev[0]["outage_upper_s"], 3)
    return ev[0]


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    old = truth["master_before"]
    stop, cont = truth["sigstop_ts"], truth["sigcont_ts"]
    score_pause(card, lh, old, stop, cont, "the frozen primary (unanswered scrapes)")
    score_split_brain(card, lh, truth)
    score_takeover(card, lh, truth)
    card.facts["backup took over during the pause"] = truth["backup_active_during_pause"]
    card.facts["service gap SIGSTOP → backup active (s)"] = round((truth["takeover_log_ts"] or truth["takeover_seen_ts"])
                                                                  - stop, 3)
    card.facts["SIGCONT → backup active (s)"] = round((truth["takeover_log_ts"] or truth["takeover_seen_ts"]) - cont, 3)
    card.facts["primary JVM exited after SIGCONT (s)"] = (round(truth["primary_exit_ts"] - cont, 3)
                                                          if truth["primary_exit_ts"] else None)
    return card
