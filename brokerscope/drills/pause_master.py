"""pause-master: SIGSTOP the master of a shared-KahaDB pair for longer than the slave's takeover
time (a very long GC pause, a frozen VM), then SIGCONT.

What happens (measured here, recorded each run, never assumed): the stopped JVM keeps its file lock
(the kernel holds it for the process), so the slave stays slave, the master answers nothing while
stopped and carries on as master after SIGCONT. No failover, no dual-master window. The drill's
20 Hz probe of the slave and a producer on the master record this; the truth says what they saw.

Bar: the pause found as a run of unanswered scrapes of the master whose ends lie within one scrape
of SIGSTOP / SIGCONT, the master's role interval unbroken (same JVM), and the analysis agreeing with
what the brokers did: no failover and no split brain when the slave never became master.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import (Producer, Scorecard, activemq_targets, answered_at, describe_window, epoch,
                                       fresh_workdir, master_and_slave, rows, say, settle, start_collecting,
                                       write_truth)
from infra.lab import ActiveMQPair

NAME = "pause-master"
SUMMARY = "SIGSTOP the ActiveMQ master longer than the takeover time, then SIGCONT"
PAUSE_S = 4.0  # the slave takes over within ~1 s of a lost lock (lockAcquireSleepInterval 500 ms)


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:

    workdir = fresh_workdir(workdir, keep)
    pair = ActiveMQPair(workdir / "lab")
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "pause_s": PAUSE_S}
    try:
        say("starting ActiveMQ master/slave pair (shared KahaDB, shared-file lock)")
        pair.start(timeout=120)
        cfg_path, col = start_collecting(workdir, activemq_targets(pair), interval)
        master, slave = master_and_slave(pair, "before the pause")
        producer = Producer(pair.brokers[master].stomp_url, master).start()
        settle(interval)
        truth.update(master_before=master, slave=slave)
        truth["sigstop_ts"] = time.time()
        truth["paused_pid"] = pair.pause(master)
        say(f"SIGSTOP {master} (pid {truth['paused_pid']}) for {PAUSE_S:g} s")
        truth["slave_roles_during_pause"] = probe_roles(pair, slave, truth["sigstop_ts"] + PAUSE_S)
        truth["sigcont_ts"] = time.time()
        pair.resume(master)
        say(f"SIGCONT {master}")
        truth["master_answers_again_ts"] = pair.wait_for_role(master, "master", timeout=30)
        settle(interval)
        truth["producer"] = producer.stop()
        truth["producer_acked_during_pause"] = producer.sent_and_acked_between(truth["sigstop_ts"], truth["sigcont_ts"])
        truth["roles_after"] = pair.roles()
        truth["collector"] = col.stop().summary()
    finally:
        pair.stop()
    truth["slave_took_over"] = "master" in truth["slave_roles_during_pause"]
    truth["dual_master"] = truth["slave_took_over"]  # the stopped master is still master when it resumes
    say(f"during the pause {slave} was: {sorted(set(truth['slave_roles_during_pause']))}; "
        f"producer on {master}: {truth['producer_acked_during_pause']} sends made and acknowledged while stopped")
    write_truth(workdir, truth)
    return cfg_path, truth


def probe_roles(pair, name: str, until: float) -> list[str]:
    """The roles a 20 Hz probe of ``name`` saw until ``until`` (epoch)."""
    seen = []
    while time.time() < until:
        seen.append(pair.role(name, timeout=0.5))
        time.sleep(0.05)
    return seen


def unanswered_runs(states: list[dict]) -> list[tuple[dict, dict | None, dict | None]]:
    """Runs of unanswered scrapes of one instance: (first unanswered, last answered before, first answered after)."""
    states = sorted(states, key=lambda r: r["ts"])
    out, i = [], 0
    while i < len(states):
        if states[i]["reachable"]:
            i += 1
            continue
        j = i
        while j + 1 < len(states) and not states[j + 1]["reachable"]:
            j += 1
        out.append((states[i], states[i - 1] if i else None, states[j + 1] if j + 1 < len(states) else None))
        i = j + 1
    return out


def score_pause(card: Scorecard, lh, instance: str, stop: float, cont: float, what: str) -> dict | None:
    """The SIGSTOP..SIGCONT of `instance` as a run of its unanswered scrapes, both ends scored;
    the run's first unanswered row (None when there was no such run: a miss)."""
    states = [r for r in rows(lh, "broker_state") if r["instance"] == instance]
    runs = [r for r in unanswered_runs(states) if stop - 1.0 <= epoch(r[0]["ts"]) <= cont]
    if not card.detect(what, bool(runs), f"no unanswered scrape of {instance} in the pause"):
        return None
    first, _before, after = runs[0]
    card.boundary("pause start (first unanswered scrape vs SIGSTOP)", epoch(first["ts"]), stop, lo=-0.1)
    # a scrape sent during the pause is answered when the JVM runs again: its answer marks the end
    answered = answered_at(after) if after else None
    card.boundary("pause end (first answer vs SIGCONT)", answered, cont, lo=-0.1)
    return first


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    master, stop, cont = truth["master_before"], truth["sigstop_ts"], truth["sigcont_ts"]
    first = score_pause(card, lh, master, stop, cont, "outage of the paused master (unanswered scrapes)")
    if first is not None:
        card.latency("SIGSTOP → first unanswered scrape", epoch(first["ts"]) - stop)
    failovers = [f for f in rows(lh, "failover_events") if f["event_type"] != "restart"]
    windows = rows(lh, "split_brain_windows")
    if truth["dual_master"]:
        card.detect("split brain", bool(windows), "the slave took over while the master was stopped")
    else:
        card.expect_none("split brain", windows, describe_window)
        card.expect_none("failover", failovers, lambda f: f"{f['from_instance']} → {f['to_instance']}")
        mine = [i for i in rows(lh, "role_intervals") if i["instance"] == master]
        card.require(len(mine) == 1 and mine[0]["unanswered_inside"] > 0,
                     f"{master}'s mastership should be one interval with the pause inside it: {mine}")
    card.facts["slave took over during the pause"] = truth["slave_took_over"]
    card.facts["producer sends made and acknowledged while stopped"] = truth["producer_acked_during_pause"]
    return card
