"""artemis-gc-pause-zk: a stop-the-world full GC in the active primary of a real Artemis 2.40.0
replication pair under the ZooKeeper lock manager, longer than its ZooKeeper session — the failover
a GC pause causes, and whether brokerscope names the pause as its cause.

The primary runs the serial collector with a live set of small linked objects (infra/gc_ballast,
-javaagent); ``jcmd <pid> GC.run`` (as an operator's heap inspection or a System.gc() would) stops
it for seconds. The brokers' unified GC logs are tailed by the collector while it scrapes. What
Artemis then does is recorded by every run, never assumed (the SIGSTOP drill, docs/ARTEMIS_LAB.md
fact 19, saw the backup wait for the frozen primary and the primary stop itself once it woke up to
an expired session).

Truth: a probe of the primary's console every 50 ms, independent of the GC log (the read that hangs
marks the pause: written just after it began, answered just after it ended); the backup's AMQ221007;
the primary's "Quorum UNAVAILABLE" and exit; a 20 Hz role probe of both brokers (split brain iff both
were ever active at once). Bar: the pause in gc_events (≥ the session) with both ends within one
scrape of the probe's; one failover primary → backup, the backup first active within one scrape of
its AMQ221007; no split brain unless the probe saw one; and the pause named the failover's `likely`
cause in finding_causes.
"""

from __future__ import annotations

from pathlib import Path

from brokerscope.drills.artemis_kill import _zk_targets
from brokerscope.drills.artemis_pause import (RoleProbe, _wait_exit, run_on_replication_pair,
                                              score_split_brain, score_takeover, start_pair_collecting,
                                              wait_role_or_none)
from analysis.causes import GC_PAUSE_CODES
from brokerscope.drills.common import Scorecard, epoch, rows, say, settle
from brokerscope.drills.gc_pause import JolokiaProbe, full_gc, probe_truth, score_pause_event
from infra.artemis_lab import BROKER_MBEAN, ArtemisPair

NAME = "artemis-gc-pause-zk"
SUMMARY = "a full GC longer than the ZooKeeper session in the Artemis replication primary: failover, cause named"
# A serial full GC of the ballast alone took 13.2–13.7 s for 768 MiB and 18.7–19.7 s for 1 GiB here (2
# cores, idle; jcmd GC.run twice each): 384 MiB ≈ 6.5 s, longer under load — over the 4-s session either way
BALLAST_MB = 512  # 384 MiB paused 4.8–7.1 s in the broker (fact 29): too close to the session on a faster machine
PAUSE_CAUSES = (*GC_PAUSE_CODES, "zk.gc-pause-lost-lease")
HEAP = "2048m"  # room beside the live set: no full GC before the drill's own


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    truth = {"drill": NAME, "ballast_mb": BALLAST_MB, "heap": HEAP, "collector": "serial"}
    return run_on_replication_pair(workdir, interval, keep, truth,
                                   lambda pair, zk, wd, tr: _drive(pair, wd, interval, tr, _zk_targets(zk, pair)),
                                   fault_ts="jcmd_ts", heap=HEAP, ballast_mb={"art-a": BALLAST_MB})


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict, extra_targets: list[dict]) -> None:
    primary, backup = pair.names
    col = start_pair_collecting(pair, workdir, interval, truth, extra_targets, gc_logs=True)
    truth["broker"], truth["pid"] = primary, truth["node_pids"][primary]
    probe = JolokiaProbe(pair.jolokia_url(primary), {"type": "read", "mbean": BROKER_MBEAN, "attribute": "Active"},
                         user=pair.monitor_user, password=pair.monitor_password, headers={"Origin": pair.origin}).start()
    try:
        with RoleProbe(pair) as roles:
            roles.first_active.clear()
            settle(interval, 4, 2.0)
            full_gc(truth["pid"], truth)
            say(f"full GC of {primary} done after {truth['jcmd_done_ts'] - truth['jcmd_ts']:.2f} s")
            truth["takeover_seen_ts"] = wait_role_or_none(pair, backup, "active", 60)
            say(f"{backup} " + ("is active (seen by the drill's probe)" if truth["takeover_seen_ts"] else "did not become active"))
            truth["primary_exit_ts"] = _wait_exit(truth["pid"], timeout=30)
            say(f"{primary}'s JVM " + ("exited" if truth["primary_exit_ts"] else "is still running"))
            settle(interval, 4, 2.0)
    finally:
        probe.stop()
    truth["both_active_seen"] = [min(roles.both_active), max(roles.both_active)] if roles.both_active else None
    truth["dual_active"] = bool(roles.both_active)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")
    probe_truth(probe, truth)


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    pause = score_pause_event(card, lh, truth["broker"], truth, min_pause_ms=truth["zk_session_ms"])
    score_split_brain(card, lh, truth)
    failover = score_takeover(card, lh, truth)
    if pause is None or failover is None:
        return card
    causes = [c for c in rows(lh, "finding_causes") if c["effect_id"] == failover["event_id"]]
    # the pause itself (a GC finding) or the ZooKeeper job's "this pause cost the lease", begun with it
    named = [c for c in causes if c["confidence"] == "likely" and c["cause_code"] in PAUSE_CAUSES
             and abs(epoch(c["cause_ts"]) - epoch(pause["wall_time"])) <= truth["scrape_interval_s"]]
    card.detect("the GC pause named the failover's likely cause (finding_causes)", bool(named),
                f"causes of the failover: {[(c['cause_code'], c['confidence']) for c in causes]}")
    incident = [i for i in rows(lh, "incidents") if i["has_failover"]]
    card.facts["incident title"] = incident[0]["title"] if incident else None
    card.facts["causes"] = sorted({f"{c['cause_code']} ({c['confidence']})" for c in causes})
    card.facts["primary JVM exited after the pause (s)"] = (round(truth["primary_exit_ts"] - truth["pause_end_ts"], 3)
                                                          if truth["primary_exit_ts"] else None)
    takeover = truth["takeover_log_ts"] or truth["takeover_seen_ts"]
    card.facts["pause end → backup active (s)"] = round(takeover - truth["pause_end_ts"], 3) if takeover else None
    return card
