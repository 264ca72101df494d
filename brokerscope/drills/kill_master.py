"""kill-master: SIGKILL the master of a shared-KahaDB pair → the slave takes over; restart the old
master → it comes back as slave.

Truth: the kill time and PID (the drill's own), the takeover time from the new master's log line
``Apache ActiveMQ … started`` (printed only once it holds the lock; the drill's 20 Hz probe as a
fallback), the restart time. Bar: the failover found with both ends within one scrape, no split
brain, the old master back as slave.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import (QUEUE, Scorecard, activemq_log, activemq_targets, describe_window, epoch,
                                       first_log_time, fresh_workdir, master_and_slave, rows, say, scrape_end, settle,
                                       start_collecting, write_truth)
from infra.lab import ActiveMQPair, stomp_send

NAME = "kill-master"
SUMMARY = "SIGKILL the ActiveMQ master (shared-file lock) → failover; restart it → slave"
STARTED = r"Apache ActiveMQ \S+ \(.*\) started"


def run(workdir: Path, interval: float = 0.5, keep: bool = False, gc_logs: bool = False) -> tuple[Path, dict]:
    """Run the drill with live collection; returns (config path, ground truth). `gc_logs`: also
    tail both brokers' GC logs (the demo does; the drill's score does not need them)."""

    workdir = fresh_workdir(workdir, keep)
    pair = ActiveMQPair(workdir / "lab")
    truth: dict = {"drill": NAME, "scrape_interval_s": interval}
    try:
        say("starting ActiveMQ master/slave pair (shared KahaDB, shared-file lock)")
        pair.start(timeout=120)
        a, b = pair.names
        say(f"{a} is master, {b} is slave")
        cfg_path, col = start_collecting(workdir, activemq_targets(pair, gc_logs=gc_logs), interval)
        settle(interval)
        truth["sent_before_kill"] = stomp_send(pair.brokers[a].stomp_url, QUEUE, (f"m{i}" for i in range(20)))
        say(f"sent {truth['sent_before_kill']} persistent messages to {a}")
        settle(interval)
        kill_and_take_over(pair, truth)
        standby = truth["new_master"]
        truth["sent_after_failover"] = stomp_send(pair.brokers[standby].stomp_url, QUEUE, (f"n{i}" for i in range(10)))
        say(f"sent {truth['sent_after_failover']} more to {standby}")
        settle(interval, 4, 2.0)
        restart_as_slave(pair, truth)
        settle(interval, 4, 2.0)
        truth["collector"] = col.stop().summary()
        say(f"collector stopped: {truth['collector']}")
    finally:
        pair.stop()
    # read once the drill is over: the probe can see Slave=false a few ms before the line is written
    truth["takeover_log_ts"] = first_log_time(activemq_log(pair, truth["new_master"]), STARTED, truth["kill_ts"])
    write_truth(workdir, truth)
    return cfg_path, truth


def kill_and_take_over(pair, truth: dict) -> None:
    master, standby = master_and_slave(pair, "before the kill")
    truth["master_before"] = master
    truth["kill_ts"] = time.time()
    truth["killed_pid"] = pair.kill(master)
    say(f"SIGKILL {master} (pid {truth['killed_pid']})")
    truth["takeover_seen_ts"] = pair.wait_for_role(standby, "master", timeout=60)
    truth["new_master"] = standby
    say(f"{standby} is master (seen by the drill's 20 Hz probe)")


def restart_as_slave(pair, truth: dict) -> None:
    old = truth["master_before"]
    say(f"restarting {old}")
    truth["restart_ts"] = time.time()
    pair.start_broker(old, timeout=120)
    truth["back_as_slave_ts"] = pair.wait_for_role(old, "slave", timeout=60)
    say(f"{old} is back, as slave")


def score(lh, truth: dict) -> Scorecard:
    return score_tables(rows(lh, "failover_events"), rows(lh, "role_intervals"), rows(lh, "split_brain_windows"), truth,
                        states=rows(lh, "broker_state"))


def score_tables(failovers: list[dict], intervals: list[dict], split_brain: list[dict], truth: dict,
                 states: list[dict] | None = None) -> Scorecard:
    """The reconstruction against the truth (also used on the committed recording's replay);
    `states`: broker_state rows, for when the scrapes ended."""
    card = Scorecard(NAME, truth["scrape_interval_s"])
    interval = card.interval
    ev = [e for e in failovers if e["event_type"] == "failover"
          and (e["from_instance"], e["to_instance"]) == (truth["master_before"], truth["new_master"])]
    card.require(len([e for e in failovers if e["event_type"] == "failover"]) <= 1, f"more than one failover: {failovers}")
    card.expect_none("split brain", split_brain, describe_window)
    if not card.detect("failover", bool(ev), f"no failover {truth['master_before']} → {truth['new_master']} in {failovers}"):
        return card
    e = ev[0]
    kill = truth["kill_ts"]
    takeover = truth.get("takeover_log_ts") or truth["takeover_seen_ts"]
    card.facts["takeover_source"] = "broker log" if truth.get("takeover_log_ts") else "drill probe"
    # the reconstruction brackets the truth within one scrape on each side
    card.boundary("old master last active (vs kill)", epoch(e["old_last_active"]), kill, lo=-(interval + 0.1), hi=0.0)
    card.boundary("new master first active (vs takeover)", epoch(e["new_first_active"]), takeover, lo=-0.1)
    unanswered = epoch(e["old_first_unanswered"])
    card.require(unanswered is not None and scrape_end(unanswered, truth["master_before"], states) >= kill,
                 "the old master's first unanswered scrape ended before the kill")
    true_outage = takeover - kill
    card.facts["true_outage_s"] = round(true_outage, 3)
    card.facts["reconstructed_outage_upper_s"] = round(e["outage_upper_s"], 3)
    card.require(true_outage <= e["outage_upper_s"] <= true_outage + 2 * interval + 0.2,
                 f"outage bound {e['outage_upper_s']:.3f} s does not bracket the true {true_outage:.3f} s")
    card.require(not e["overlap"], "the failover is flagged as overlapping")
    card.latency("kill → first unanswered scrape", epoch(e["old_first_unanswered"]) - kill)
    card.latency("kill → new master first seen", epoch(e["new_first_active"]) - kill)
    old = [i for i in intervals if i["instance"] == truth["master_before"]]
    back = len(old) == 1 and not old[0]["is_open"] and old[0]["first_inactive_after"] is not None \
        and epoch(old[0]["first_inactive_after"]) >= truth["restart_ts"]
    card.require(back, f"{truth['master_before']} not seen back as slave after its restart: {old}")
    new = [i for i in intervals if i["instance"] == truth["new_master"]]
    card.require(len(new) == 1 and new[0]["is_open"], f"{truth['new_master']} not master to the end: {new}")
    return card
