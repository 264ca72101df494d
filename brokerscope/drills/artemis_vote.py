"""artemis-kill-vote: SIGKILL one primary of a real Artemis 2.40.0 cluster of three classic
replication pairs (infra.artemis_cluster: art-a/art-b, art-c/art-d, art-e/art-f, no lock manager):
its backup takes Artemis' classic quorum vote for real — one pair has nobody to ask (AMQ221083
"max cluster size is 1", docs/ARTEMIS_LAB.md fact 22) — and activates on the other primaries' say.

What Artemis does (fact 33, recorded each run, never assumed): the backup logs AMQ221066 "Initiating
quorum vote: PrimaryFailoverQuorumVote", AMQ221084 "Requested 2 quorum votes", one AMQ221061 per
primary that answered (vote=true: it does not see the dead primary either), AMQ221068 "Received all
quorum votes", AMQ221071 "Failing over based on quorum vote results", then AMQ221007. A primary
that has not yet noticed the death answers no: the round fails and the backup votes again after
vote-retry-wait (5 s by default).

Truth: the kill, the backup's vote lines and AMQ221007, the cluster's start time and the brokers'
resident memory (what fits on two cores), every broker's role after the takeover. Bar: as
artemis-kill without the restart — one failover art-a → art-b within one scrape of the kill and of
AMQ221007, no split brain, no other event in any group (the other pairs untouched, asserted by
their roles too) — and a real vote: at least two votes requested and answered.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from brokerscope.drills.artemis_kill import score_tables, send_then_kill
from brokerscope.drills.common import Scorecard, fresh_workdir, rows, say, start_collecting, write_truth
from infra.artemis_cluster import ArtemisCluster
from infra.artemis_lab import first_log_times, log_times
from infra.processes import rss_mib

NAME = "artemis-kill-vote"
SUMMARY = "SIGKILL a primary among three Artemis classic replication pairs: its backup takes a real quorum vote"
PAIRS = 3
#: the backup's vote, in the order Artemis logs it
VOTE_LINES = {"vote initiated (AMQ221066)": "AMQ221066", "votes requested (AMQ221084)": "AMQ221084",
              "all votes received (AMQ221068)": "AMQ221068", "failing over on the vote (AMQ221071)": "AMQ221071",
              "active (AMQ221007)": "AMQ221007"}


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "topology": "replication", "pairs": PAIRS, "scrape_interval_s": interval}
    cluster = ArtemisCluster(workdir / "lab", pairs=PAIRS)
    pair = cluster.pairs[0]
    try:
        _drive(cluster, workdir, interval, truth)
    finally:
        cluster.stop()
    primary, backup = pair.names
    found = log_times(pair.broker_log(backup), "AMQ221007", truth["kill_ts"])
    truth["takeover_log_ts"], truth["takeover_log_line"] = found[0] if found else (None, None)
    truth["vote_log_ts"] = first_log_times(pair, {k: (backup, code) for k, code in VOTE_LINES.items()},
                                           truth["kill_ts"])
    truth["vote_rounds"] = _vote_rounds(pair.broker_log(backup), truth["kill_ts"])
    write_truth(workdir, truth)
    return workdir / "brokerscope.yaml", truth


def _drive(cluster: ArtemisCluster, workdir: Path, interval: float, truth: dict) -> None:
    pair = cluster.pairs[0]
    primary = pair.names[0]
    say(f"starting {PAIRS} Artemis classic replication pairs in one cluster: "
        + ", ".join(f"{p.names[0]}/{p.names[1]}" for p in cluster.pairs))
    started = time.time()
    cluster.start(timeout=180)
    truth["cluster_start_s"] = round(time.time() - started, 1)
    truth["node_pids"] = {n: p.brokers[n].pid for p in cluster.pairs for n in p.names}
    truth["acceptor_ports"] = {n: p.acceptor_ports[n] for p in cluster.pairs for n in p.names}
    truth["rss_mib"] = {n: None if (m := rss_mib(pid)) is None else round(m, 1) for n, pid in truth["node_pids"].items()}
    say(f"cluster up in {truth['cluster_start_s']} s; resident memory {sum(truth['rss_mib'].values()):.0f} MiB")
    _cfg_path, col = start_collecting(workdir, [cluster.target(n) for n in cluster.names], interval)
    send_then_kill(pair, truth, interval)
    truth["roles_after"] = {n: p.role(n) for p in cluster.pairs for n in p.names if n != primary}
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def _vote_rounds(log: Path, since: float) -> list[dict]:
    """The backup's vote rounds in order: when each began (AMQ221066), how many votes it asked for
    (AMQ221084), each answer (voter address, vote: true = it no longer sees the primary either), and
    whether the round ended in the failover (AMQ221071). A round that does not is retried after
    vote-retry-wait."""
    rounds: list[dict] = []
    for t, line in log_times(log, "AMQ22106[16]|AMQ221084|AMQ221071", since):
        if "AMQ221066" in line:
            rounds.append({"ts": t, "requested": None, "answers": [], "failed_over": False})
        elif not rounds:
            continue
        elif m := re.search(r"Requested (\d+) quorum votes", line):
            rounds[-1]["requested"] = int(m.group(1))
        elif m := re.search(r"response from (\S+): .*vote=(true|false)", line):
            rounds[-1]["answers"].append([m.group(1), m.group(2) == "true"])
        elif "AMQ221071" in line:
            rounds[-1]["failed_over"] = True
    return rounds


def score(lh, truth: dict) -> Scorecard:
    card = score_tables(rows(lh, "failover_events"), rows(lh, "role_intervals"), rows(lh, "split_brain_windows"),
                        truth)
    rounds, kill = truth["vote_rounds"], truth["kill_ts"]
    card.require(bool(rounds) and all((r["requested"] or 0) >= 2 and len(r["answers"]) >= 2 for r in rounds),
                 f"the backup took no real vote (rounds {rounds}): did the cluster form?")
    moved = {n: r for n, r in truth["roles_after"].items() if n != truth["new_master"]}
    expected = {n: ("active" if i % 2 == 0 else "backup") for i, n in enumerate(sorted(moved))}
    card.require(moved == expected, f"the other pairs changed: {moved}")
    port_of = {str(port): n for n, port in truth["acceptor_ports"].items()}
    card.facts["vote rounds: s after the kill, votes requested, answers (yes: it no longer sees the primary), failed over"] = [
        (round(r["ts"] - kill, 3), r["requested"],
         {port_of.get(voter.rsplit(":", 1)[-1], voter): "yes" if yes else "no" for voter, yes in r["answers"]},
         r["failed_over"]) for r in rounds]
    card.facts["backup's vote after the kill (s)"] = {k: None if t is None else round(t - kill, 3)
                                                      for k, t in truth["vote_log_ts"].items()}
    card.facts["cluster start (s), resident memory of the six JVMs (MiB)"] = (
        truth["cluster_start_s"], round(sum(v for v in truth["rss_mib"].values() if v), 0))
    return card
