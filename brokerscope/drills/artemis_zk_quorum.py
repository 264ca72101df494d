"""artemis-zk-quorum-loss: the ZooKeeper ensemble under a real Artemis 2.40.0 replication pair
(lock manager, session 4 s) loses its quorum — SIGKILL a follower, then the leader — for twice the
session; then the follower is restarted and the quorum comes back.

What Artemis does is recorded by every run, never assumed: whether the live primary stops when its
lock manager loses ZooKeeper ("Quorum UNAVAILABLE"), whether its JVM exits, whether the backup
takes the role once the quorum is back, and whether both were ever active at once (the drill's
20 Hz console probe of both brokers).

Truth: the kill and restart times, when the restarted node answers and the quorum is back (the
ensemble probe), the primary's "Quorum UNAVAILABLE" log line and exit, the backup's AMQ221007.
Bar: the quorum loss as in zk-quorum-loss (its zk_quorum `lost` interval within one round of the
second kill and of the restarted node's first answer, the zk.quorum-lost finding); a split brain if
and only if the probe saw both brokers active; when the backup took over, one failover primary →
backup with the backup first seen within one scrape of its AMQ221007, named as caused by the lost
quorum or the lock it took away (finding_causes).
"""

from __future__ import annotations

from pathlib import Path

from brokerscope.drills.artemis_kill import _zk_targets
from brokerscope.drills.artemis_pause import (SESSION_MS, RoleProbe, _wait_exit, run_on_replication_pair,
                                               score_split_brain, start_pair_collecting, wait_role_or_none)
from brokerscope.drills.common import (Scorecard, epoch, rows, say, settle)
from brokerscope.drills.zk_loss import lose_quorum, score_quorum_loss
from infra.artemis_lab import ArtemisPair

NAME = "artemis-zk-quorum-loss"
SUMMARY = "the ZooKeeper ensemble under an Artemis replication pair loses its quorum for 2× the session, then regains it"
LOSS_S = 2 * SESSION_MS / 1000
#: the causes that explain a failover here (analysis/causes.py codes)
QUORUM_CAUSES = {"zk.quorum-lost", "zk.lock-handover", "zk.lease-vanished", "zk.lease-count"}


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    return run_on_replication_pair(workdir, interval, keep, {"drill": NAME, "loss_s": LOSS_S},
                                   lambda pair, zk, wd, truth: _drive(pair, zk, wd, interval, truth, _zk_targets(zk, pair)),
                                   fault_ts="kill2_ts")


def _drive(pair: ArtemisPair, zk, workdir: Path, interval: float, truth: dict, zk_targets: list[dict]) -> None:
    primary, backup = pair.names
    # every ensemble member is watched here, so the rounds see the quorum from all three
    col = start_pair_collecting(pair, workdir, interval, truth, zk_targets)
    with RoleProbe(pair) as probe:
        probe.first_active.clear()
        lose_quorum(zk, truth, hold_s=LOSS_S)
        truth["takeover_seen_ts"] = wait_role_or_none(pair, backup, "active", timeout=30)
        say(f"{backup} " + ("is active" if truth["takeover_seen_ts"] else "did not become active within 30 s"))
        truth["primary_exit_ts"] = _wait_exit(truth["node_pids"][primary], timeout=5)
        settle(interval, 4, 2.0)
    truth["roles_after"] = pair.roles()
    truth["role_changes"] = {n: [[round(t, 3), r] for t, r in ch] for n, ch in probe.changes.items()}
    truth["both_active_seen"] = [min(probe.both_active), max(probe.both_active)] if probe.both_active else None
    truth["dual_active"] = bool(probe.both_active)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}; roles now {truth['roles_after']}")


def score(lh, truth: dict) -> Scorecard:
    card = score_quorum_loss(lh, truth)
    old, new = truth["master_before"], truth["new_master"]
    score_split_brain(card, lh, truth)
    moves = [e for e in rows(lh, "failover_events") if e["event_type"] == "failover"]
    took_over = truth["takeover_log_ts"] or truth["takeover_seen_ts"]
    if took_over:
        ev = [e for e in moves if (e["from_instance"], e["to_instance"]) == (old, new)]
        if card.detect("failover", len(ev) == 1, f"no single failover {old} → {new} in {moves}"):
            card.boundary("backup first active (vs its AMQ221007)", epoch(ev[0]["new_first_active"]), took_over, lo=-0.1)
            causes = {c["cause_code"] for c in rows(lh, "finding_causes") if c["effect_id"] == ev[0]["event_id"]}
            card.detect("cause: the lost quorum or the lock it took", bool(causes & QUORUM_CAUSES),
                        f"causes named: {sorted(causes)}")
    else:
        card.expect_none("failover", moves, lambda e: f"{e['from_instance']} → {e['to_instance']}")
    stopped = truth["primary_quorum_unavailable_log_ts"]
    card.facts["primary logged Quorum UNAVAILABLE after the second kill (s)"] = (
        round(stopped - truth["kill2_ts"], 3) if stopped else None)
    card.facts["backup active after the quorum came back (s)"] = (
        round(took_over - truth["quorum_back_seen_ts"], 3) if took_over else None)
    card.facts["primary JVM exited"] = truth["primary_exit_ts"] is not None
    card.facts["primary's roles (probe, s after the second kill)"] = [
        (round(t - truth["kill2_ts"], 2), r) for t, r in truth["role_changes"][old]]
    card.facts["backup's roles (probe, s after the second kill)"] = [
        (round(t - truth["kill2_ts"], 2), r) for t, r in truth["role_changes"][new]]
    card.facts["roles after"] = truth["roles_after"]
    return card
