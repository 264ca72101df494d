"""zk-leader-loss and zk-quorum-loss on a real 3-node ZooKeeper 3.8 ensemble (infra.zk_lab).

zk-leader-loss: SIGKILL the leader; the other two elect a new one. Truth: the kill time, the new
leader and when the drill's 20 ms probe first saw it lead. Bar: a zk_elections row old → new whose
``old_gone_seen`` is within one scrape of the kill and whose new leader's first round is within one
scrape of the probe's sighting.

zk-quorum-loss: SIGKILL two of the three nodes (a follower, then the leader): the survivor stops
serving; restart one: quorum and a leader again. Truth: the second kill, the restart, when the probe
saw a leader again. Bar: one zk_quorum ``lost`` interval that starts within one scrape of the second
kill and ends within one scrape of the quorum's return, and its `zk.quorum-lost` finding.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import Scorecard, epoch, fresh_workdir, rows, say, settle, start_collecting, write_truth
from infra.zk_lab import ZkEnsemble

VARIANTS = ("zk-leader-loss", "zk-quorum-loss")
NAME = "zk-leader-loss"
SUMMARY = "SIGKILL the ZooKeeper leader (election) / two of three nodes until one returns (quorum loss)"
SUMMARIES = {"zk-leader-loss": "SIGKILL the ZooKeeper leader of a 3-node ensemble → election",
             "zk-quorum-loss": "SIGKILL two of three ZooKeeper nodes → quorum lost until one returns"}
ENSEMBLE = "zk-lab"


def zk_targets(zk) -> list[dict]:
    return [{"name": name, "kind": "zookeeper", "url": f"zk://{node.endpoint}", "group": ENSEMBLE, "timeout": "1s",
             "zookeeper": {"admin_url": node.admin_url}} for name, node in zk.nodes.items()]


def run(workdir: Path, interval: float = 0.5, keep: bool = False, variant: str = "zk-leader-loss") -> tuple[Path, dict]:

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    workdir = fresh_workdir(workdir, keep)
    zk = ZkEnsemble(workdir / "lab")
    truth: dict = {"drill": variant, "scrape_interval_s": interval, "ensemble": ENSEMBLE}
    try:
        say("starting a 3-node ZooKeeper ensemble")
        zk.start(timeout=120)
        cfg_path, col = start_collecting(workdir, zk_targets(zk), interval)
        settle(interval, 4, 2.0)
        (lose_leader if variant == "zk-leader-loss" else lose_quorum)(zk, truth)
        settle(interval, 4, 2.0)
        truth["collector"] = col.stop().summary()
    finally:
        zk.stop()
    write_truth(workdir, truth)
    return cfg_path, truth


def lose_leader(zk, truth: dict) -> None:
    leader = zk.leader()
    if leader is None:
        raise RuntimeError(f"no leader before the kill: {zk.modes()}")
    truth["old_leader"] = leader
    truth["kill_ts"] = zk.kill(leader)
    say(f"SIGKILL leader {leader}")
    truth["new_leader"], truth["new_leader_seen_ts"] = zk.wait_for_leader(timeout=60, exclude={leader})
    say(f"{truth['new_leader']} leads")


def lose_quorum(zk, truth: dict, hold_s: float = 4.0) -> None:
    """SIGKILL a follower, then the leader (1 of 3 left: no quorum), wait `hold_s`, restart the follower."""
    leader = zk.leader()
    if leader is None:
        raise RuntimeError(f"no leader before the kills: {zk.modes()}")
    follower = next(n for n in zk.names if n != leader)
    truth["leader_before"] = leader
    truth["kill1_ts"], truth["killed1"] = zk.kill(follower), follower
    say(f"SIGKILL follower {follower}: 2 of 3 left, quorum kept")
    time.sleep(2.0)
    truth["kill2_ts"], truth["killed2"] = zk.kill(leader), leader
    say(f"SIGKILL leader {leader}: 1 of 3 left, quorum lost for {hold_s:g} s")
    time.sleep(hold_s)
    restore_quorum(zk, follower, truth)


def restore_quorum(zk, follower: str, truth: dict) -> None:
    """Restart `follower`; truth: restart_ts, restarted_answers_ts, leader_after, quorum_back_seen_ts."""
    truth["restart_ts"] = time.time()
    zk.start_node(follower, wait=False)
    # stamped when the answering request was SENT, as the collector stamps its scrapes: a node still
    # starting accepts the connection and answers up to a second later (0.72 s measured at load 6),
    # and its listening socket already ends "nothing listens" (the definition of `lost`)
    truth["restarted_answers_ts"] = zk.wait_for(follower, lambda m: m != "down", 60, "to answer after its restart",
                                                stamp="asked", answer_timeout=2.0)
    truth["leader_after"] = zk.wait_for_quorum(60)
    truth["quorum_back_seen_ts"] = time.time()
    say(f"restarted {follower}: quorum back, {truth['leader_after']} leads")


def score(lh, truth: dict) -> Scorecard:
    return (score_leader_loss if truth["drill"] == "zk-leader-loss" else score_quorum_loss)(lh, truth)


def score_leader_loss(lh, truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    ev = [e for e in rows(lh, "zk_elections") if e["old_leader"] == truth["old_leader"]]
    if not card.detect("leader election", bool(ev), f"no zk_elections row after {truth['old_leader']}"):
        return card
    e = ev[0]
    card.require(e["new_leader"] == truth["new_leader"], f"new leader {e['new_leader']}, truth {truth['new_leader']}")
    card.boundary("old leader gone (first round without it vs kill)", epoch(e["old_gone_seen"]), truth["kill_ts"], lo=-0.1)
    card.boundary("new leader first seen (vs probe)", epoch(e["new_first_seen"]), truth["new_leader_seen_ts"])
    card.latency("kill → election found (first round with the new leader)", epoch(e["new_first_seen"]) - truth["kill_ts"])
    card.facts["election s (truth: kill → probe)"] = round(truth["new_leader_seen_ts"] - truth["kill_ts"], 3)
    card.facts["election bounds s"] = (e["duration_lower_s"], e["duration_upper_s"])
    card.facts["zk election_time ms"] = e["zk_election_ms"]
    card.require(len(ev) == 1, f"{len(ev)} elections after one kill")
    return card


def score_quorum_loss(lh, truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    lost = [q for q in rows(lh, "zk_quorum") if q["status"] == "lost"]
    if not card.detect("quorum loss", bool(lost), "no zk_quorum interval with status lost"):
        return card
    q = lost[0]
    card.require(len(lost) == 1, f"{len(lost)} quorum-lost intervals for one loss")
    card.boundary("quorum lost (first lost round vs second kill)", epoch(q["start_ts"]), truth["kill2_ts"], lo=-0.1)
    # `lost` = fewer than a majority answering: it ends when the restarted node answers again
    card.boundary("quorum lost ends (first round after vs restarted node answering)", epoch(q["end_upper"]),
                  truth["restarted_answers_ts"])
    card.latency("second kill → quorum loss found", epoch(q["start_ts"]) - truth["kill2_ts"])
    found = [f for f in rows(lh, "zk_findings") if f["code"] == "zk.quorum-lost"]
    card.detect("zk.quorum-lost finding", bool(found), "no zk.quorum-lost row in zk_findings")
    card.latency("restarted node answering → leader again (probe)", truth["quorum_back_seen_ts"] - truth["restarted_answers_ts"])
    card.facts["true loss s (kill → quorum back seen)"] = round(truth["quorum_back_seen_ts"] - truth["kill2_ts"], 3)
    return card
