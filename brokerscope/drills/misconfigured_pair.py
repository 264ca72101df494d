"""misconfigured-pair: two brokers declared as one HA group (``store-1``) but each given a KahaDB
directory of its own: nothing makes one of them wait, so both are master for as long as they run.

Truth: each broker's ``Apache ActiveMQ … started`` log line (it is master from then on), and when
the drill stopped each one. Bar: the split brain found (zero missed) with both ends within one
scrape interval, and the config cross-check `group-members-disagree` in ha_group_checks.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import (Scorecard, activemq_log, activemq_targets, epoch, first_log_time, fresh_workdir,
                                       pick, rows, say, settle, start_collecting, write_truth)
from brokerscope.drills.kill_master import STARTED
from infra.lab import ActiveMQPair, free_port

NAME = "misconfigured-pair"
SUMMARY = "two brokers declared one HA group but each on its own KahaDB: both master"
BOTH_S = 4.0


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:

    workdir = fresh_workdir(workdir, keep)
    ports = (free_port(), free_port())  # fixed, so the config names the second broker before it starts
    pair = ActiveMQPair(workdir / "lab", store="separate-kahadb", jolokia_ports=ports)
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "group": "store-1"}
    first, second = pair.names
    urls = {n: f"http://127.0.0.1:{p}/jolokia" for n, p in zip(pair.names, ports)}
    try:
        say("starting two ActiveMQ brokers declared one group, each on its own KahaDB")
        pair.start_broker(first, timeout=120)
        pair.wait_for_role(first, "master", 60)
        cfg_path, col = start_collecting(workdir, activemq_targets(pair, group="store-1", urls=urls), interval)
        settle(interval)
        truth["second_start_ts"] = time.time()
        pair.start_broker(second, timeout=120)
        truth["both_master_seen_ts"] = pair.wait_for_role(second, "master", 60)
        say(f"{first} and {second} both master; running for {BOTH_S:g} s")
        time.sleep(BOTH_S)
        truth["stopped"] = second
        truth["stop_ts"] = time.time()
        truth["stopped_pid"] = pair.kill(second)
        say(f"SIGKILL {second}: the double mastership ends")
        settle(interval)
        truth["collector"] = col.stop().summary()
    finally:
        pair.stop()
    truth["started_ts"] = {n: first_log_time(activemq_log(pair, n), STARTED) for n in pair.names}
    truth["dual_start_ts"] = truth["started_ts"][second]
    truth["stores"] = {n: str(pair.store_dir(n)) for n in pair.names}
    write_truth(workdir, truth)
    return cfg_path, truth


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    a, b = sorted(truth["started_ts"])
    windows = pick(rows(lh, "split_brain_windows"), instance_a=a, instance_b=b)
    if card.detect("split brain", bool(windows), "no split_brain_windows row for the pair"):
        w = min(windows, key=lambda r: r["certain_start"])
        start_truth = truth["dual_start_ts"] or truth["both_master_seen_ts"]
        card.boundary("split brain start (vs second master's 'started' log line)", epoch(w["certain_start"]), start_truth)
        card.boundary("split brain end (vs SIGKILL of one master)", epoch(w["certain_end"]), truth["stop_ts"],
                      lo=-(card.interval + 0.1), hi=0.0)
        card.latency("second master started (log) → split brain first observed", epoch(w["certain_start"]) - start_truth)
        card.facts["found window s"] = round(w["duration_s"], 3)
        card.facts["true window s"] = round(truth["stop_ts"] - start_truth, 3)
    checks = [c for c in rows(lh, "ha_group_checks") if c["check"] == "group-members-disagree"]
    if card.detect("group-members-disagree", bool(checks), "no ha_group_checks row"):
        card.require({i.strip() for i in checks[0]["instances"].split(",")} == {a, b}, f"wrong instances: {checks[0]['instances']}")
        card.facts["stores seen"] = checks[0]["identities"]
    return card
