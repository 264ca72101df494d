"""artemis-kill: SIGKILL the active primary of a real Artemis 2.40.0 pair → its backup takes over;
with ``restart``, start the old primary again → it takes the role back (failback: allow-failback
is true by default; with the lock manager the returning primary first resyncs as a replica).

Topologies (infra.artemis_lab): ``shared-store`` (file lock on one journal), ``replication-zk``
(replication, ZooKeeper lock manager on a real 3-node ensemble from infra.zk_lab) and, for
``artemis-kill-classic``, ``replication`` (classic: no lock manager, the backup's quorum vote) with
the primary's ``check-for-active-server=true`` — the setting whose absence makes
``artemis-restart-split-brain``'s restarted primary come back active beside the backup.

Truth: the kill time and pid (the drill's own); the takeover time from the backup's log line —
AMQ221010 "Backup Server is now active" (shared store) or AMQ221007 "Server is now active"
(replication, after AMQ221037 "… to become 'active'"); the drill's 20 Hz console probe as a
fallback; with ``restart``, the restart time, the backup stepping aside (AMQ221008 shared store,
AMQ221039 replication) and the primary's AMQ221007. With replication the ensemble's nodes are
targets too, the first reading the lock manager's znodes (lease, activation sequence). Bar: the failover found within one scrape interval of the truth at both ends, no split
brain; with ``restart``, the failback found after the restart.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import (
    SLACK_S,
    Scorecard,
    describe_window,
    epoch,
    fresh_workdir,
    rows,
    say,
    settle,
    start_collecting,
    write_truth,
)
from collectors.scraper import scrape_timeout
from infra.artemis_lab import ArtemisPair, first_log_times, log_times, stomp_send
from infra.zk_lab import ZkEnsemble

NAME = "artemis-kill"
SUMMARY = "SIGKILL the Artemis primary → backup takes over (shared store or replication + ZooKeeper); restart → failback"
SUMMARIES = {
    "artemis-kill": "SIGKILL the Artemis shared-store primary → backup takes over (AMQ221010); restart → failback",
    "artemis-kill-zk": "SIGKILL the Artemis replication primary (ZooKeeper lock manager) → backup takes over; restart → failback",
    "artemis-kill-classic": "SIGKILL the Artemis classic replication primary (check-for-active-server true) → backup "
                            "takes over; restart → it resyncs as backup, then fails back (no split brain)",
}
QUEUE = "brokerscope.lab"
PRIMARY = "art-a"  # infra.artemis_lab.ArtemisPair's default names: primary first
TAKEOVER = {"shared-store": r"AMQ221010", "replication-zk": r"AMQ221007", "replication": r"AMQ221007"}
#: drill name → (topology, restart the old primary afterwards, broker → its own HaSpec fields)
VARIANTS = {"artemis-kill": ("shared-store", True, {}), "artemis-kill-zk": ("replication-zk", True, {}),
            "artemis-kill-classic": ("replication", True, {PRIMARY: {"check_for_active": True}})}
#: the backup's log line when it steps aside for the returning primary (failback)
ASIDE = {"shared-store": r"AMQ221008", "replication-zk": r"AMQ221039", "replication": r"AMQ221039"}


def run(workdir: Path, interval: float = 0.5, keep: bool = False, variant: str = "artemis-kill",
        topology: str | None = None, restart: bool | None = None) -> tuple[Path, dict]:
    """Run the drill with live collection; returns (config path, ground truth). ``topology`` and
    ``restart`` override what the variant says."""

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}")
    topology = topology or VARIANTS[variant][0]
    restart = VARIANTS[variant][1] if restart is None else restart
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": variant, "topology": topology, "scrape_interval_s": interval}
    zk = _ensemble(workdir, topology)
    try:
        pair = ArtemisPair(workdir / "lab", topology, zk_connect=zk.connect_string if zk else None,
                           ha_overrides=VARIANTS[variant][2])
        try:
            _drive(pair, workdir, interval, truth, restart, _zk_targets(zk, pair))
        finally:
            pair.stop()
    finally:
        if zk is not None:
            zk.stop()
    _truth_from_logs(pair, truth)
    write_truth(workdir, truth)
    return workdir / "brokerscope.yaml", truth


def _ensemble(workdir: Path, topology: str):
    if topology != "replication-zk":
        return None

    zk = ZkEnsemble(workdir / "lab" / "zk")
    say(f"ZooKeeper ensemble: leader {zk.start()}")
    return zk


def _zk_targets(zk, pair) -> list[dict]:
    """The ensemble's nodes as targets; the first also reads the lock manager's znodes."""
    if zk is None:
        return []
    watch = {"preset": "artemis-lock-manager", "namespace": pair.ha[pair.names[0]].zk_namespace}
    return [{"name": name, "kind": "zookeeper", "url": f"zk://{node.endpoint}", "group": "zk-lab", "timeout": "1s",
             "zookeeper": {"admin_url": node.admin_url, **({"watch": [watch]} if i == 0 else {})}}
            for i, (name, node) in enumerate(zk.nodes.items())]


def _drive(pair, workdir: Path, interval: float, truth: dict, restart: bool, extra_targets: list[dict]) -> None:

    primary, backup = pair.names
    say(f"starting Artemis {pair.topology} pair: {primary} primary, {backup} backup")
    pair.start(timeout=120)
    truth["node_pids"] = {n: b.pid for n, b in pair.brokers.items()}
    cfg_path, col = start_collecting(workdir, [pair.target(n) for n in pair.names] + extra_targets, interval)
    send_then_kill(pair, truth, interval)
    if restart:
        truth["restart_ts"] = time.time()
        pair.start_broker(primary, "active", timeout=90)
        truth["failback_seen_ts"] = pair.wait_for_role(backup, "backup", timeout=60)
        say(f"{primary} is active again, {backup} is backup again")
        settle(interval, 4, 2.0)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def send_then_kill(pair, truth: dict, interval: float) -> None:
    """With the collector running: 20 persistent messages to the primary, then
    `kill_until_taken_over`. Truth: sent_before_kill, master_before, new_master and its keys."""
    primary, backup = pair.names
    settle(interval)
    truth["sent_before_kill"] = stomp_send(pair.brokers[primary].stomp_url, QUEUE, (f"m{i}" for i in range(20)),
                                           login="admin", passcode=pair.admin_password)
    settle(interval)
    truth["master_before"], truth["new_master"] = primary, backup
    kill_until_taken_over(pair, truth, interval)


def kill_until_taken_over(pair, truth: dict, interval: float) -> None:
    """SIGKILL the primary, wait until the backup is active, send it 10 messages, let the collector
    see it. Truth: kill_ts, killed_pid, takeover_seen_ts, sent_after_failover."""
    primary, backup = pair.names
    truth["kill_ts"] = time.time()
    truth["killed_pid"] = pair.kill(primary)
    say(f"SIGKILL {primary} (pid {truth['killed_pid']})")
    truth["takeover_seen_ts"] = pair.wait_for_role(backup, "active", timeout=60)
    say(f"{backup} is active (seen by the drill's 20 Hz probe)")
    truth["sent_after_failover"] = stomp_send(pair.brokers[backup].stomp_url, QUEUE, (f"n{i}" for i in range(10)),
                                              login="admin", passcode=pair.admin_password)
    settle(interval, 4, 2.0)


def _truth_from_logs(pair, truth: dict) -> None:
    """Log times, read once the drill is over (the probe can see a role a few ms before the line)."""

    primary, backup = pair.names
    kill = truth["kill_ts"]
    found = log_times(pair.broker_log(backup), TAKEOVER[pair.topology], kill)
    truth["takeover_log_ts"] = found[0][0] if found else None
    truth["takeover_log_line"] = found[0][1] if found else None
    if "restart_ts" in truth:
        # a primary starts its web console (and so its Jolokia) only after activating: 0.7-1.3 s
        # after AMQ221007 here, so that is when a scrape can first see it active. A replication
        # primary returns as a backup first (AMQ221109), resynchronizes (AMQ221024), then asks for the
        # role back; a shared-store primary just waits for the file lock (neither line).
        truth.update(first_log_times(pair, {"failback_aside_log_ts": (backup, ASIDE[pair.topology]),
                                            "failback_log_ts": (primary, "AMQ221007"),
                                            "failback_console_log_ts": (primary, "AMQ241002")}, truth["restart_ts"]))
        truth["restart_log_ts"] = first_log_times(pair, {"started as backup (AMQ221109)": (primary, "AMQ221109"),
                                                         "synchronized (AMQ221024)": (primary, "AMQ221024")},
                                                  truth["restart_ts"])


def score(lh, truth: dict) -> Scorecard:
    failovers = rows(lh, "failover_events")
    card = score_tables(failovers, rows(lh, "role_intervals"), rows(lh, "split_brain_windows"), truth)
    if "restart_ts" in truth:
        _restart_facts(card, rows(lh, "broker_state"), failovers, truth)
    return card


def _restart_facts(card: Scorecard, states: list[dict], failovers: list[dict], truth: dict) -> None:
    """What the returning primary did before it took the role back (its own log lines, s after the
    restart) and how often a scrape saw it as a backup in between (a fact, not a bar: on classic
    replication with check-for-active-server its console answers as a backup for under 0.1 s)."""
    restart, old = truth["restart_ts"], truth["master_before"]
    lines = {k: round(t - restart, 3) for k, t in (truth.get("restart_log_ts") or {}).items() if t is not None}
    if lines:
        card.facts["restarted primary's lines (s after restart)"] = lines
    back = [epoch(e["new_first_active"]) for e in hand_overs(failovers) if e["event_type"] == "failback"]
    until = min(back, default=float("inf"))
    card.facts["restarted primary seen as backup before the failback (scrapes)"] = sum(
        1 for s in states if s["instance"] == old and s["role"] == "backup" and restart <= epoch(s["ts"]) < until)


def score_tables(failovers: list[dict], intervals: list[dict], split_brain: list[dict], truth: dict) -> Scorecard:
    """The reconstruction against the truth (also used on the committed recording's replay)."""
    card = Scorecard(truth.get("drill", NAME), truth["scrape_interval_s"])
    card.expect_none("split brain", split_brain, describe_window)
    if score_failover(card, failovers, truth) is None:
        return card
    if "restart_ts" in truth:
        _score_failback(card, hand_overs(failovers), truth)
    else:
        card.require(len(hand_overs(failovers)) == 1, f"more than one failover: {hand_overs(failovers)}")
    return card


def hand_overs(failovers: list[dict]) -> list[dict]:
    return [e for e in failovers if e["event_type"] in ("failover", "failback")]


def score_failover(card: Scorecard, failovers: list[dict], truth: dict) -> dict | None:
    """The one failover primary → backup after the SIGKILL: the old primary last seen active within
    one scrape before the kill, the backup first seen active within one scrape after its takeover
    line (the probe's sighting without one). Returns the event (None when not found)."""
    old, new = truth["master_before"], truth["new_master"]
    ev = [e for e in hand_overs(failovers)
          if e["event_type"] == "failover" and (e["from_instance"], e["to_instance"]) == (old, new)]
    if not card.detect("failover", len(ev) == 1, f"no single failover {old} → {new} in {failovers}"):
        return None
    e, kill = ev[0], truth["kill_ts"]
    takeover = truth.get("takeover_log_ts") or truth["takeover_seen_ts"]
    card.facts["takeover_source"] = truth.get("takeover_log_line") or "drill probe"
    card.boundary("old primary last active (vs kill)", epoch(e["old_last_active"]), kill, lo=-(card.interval + 0.1), hi=0.0)
    card.boundary("backup first active (vs takeover log)", epoch(e["new_first_active"]), takeover, lo=-0.1)
    card.require(not e["overlap"], "the failover is flagged as overlapping")
    card.facts["true_outage_s"] = round(takeover - kill, 3)
    card.facts["reconstructed_outage_upper_s"] = round(e["outage_upper_s"], 3)
    card.latency("kill → new active first seen", epoch(e["new_first_active"]) - kill)
    return e


def _score_failback(card: Scorecard, moves: list[dict], truth: dict) -> None:
    old, new = truth["master_before"], truth["new_master"]
    back = [e for e in moves if e["event_type"] == "failback" and (e["from_instance"], e["to_instance"]) == (new, old)]
    card.require(len(moves) == 2, f"expected a failover and a failback, got {moves}")
    if card.detect("failback", len(back) == 1, f"no failback {new} → {old} in {moves}"):
        first = epoch(back[0]["new_first_active"])
        active = truth.get("failback_log_ts") or truth["failback_seen_ts"]
        console = max(active, truth.get("failback_console_log_ts") or active)
        # a primary's console (its Jolokia) starts after activation: seen from AMQ221007 on, and no
        # later than one scrape after the console's AMQ241002 line — where a scrape of a console
        # that accepts but does not answer yet runs to its timeout first (measured: two 1 s
        # timeouts while Jetty came up at load 9), so "one scrape" is the longest a scrape takes
        one_scrape = max(card.interval, scrape_timeout(float("inf"), card.interval))
        card.boundary("primary first active again (vs its AMQ221007)", first, active, lo=-0.1,
                      hi=(console - active) + one_scrape + SLACK_S)
        card.facts["primary console up after AMQ221007 (AMQ241002) s"] = round(console - active, 3)
