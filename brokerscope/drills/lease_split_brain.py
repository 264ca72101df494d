"""lease-split-brain: two ActiveMQ brokers on one JDBC store in PostgreSQL with the lease database
locker; each reaches PostgreSQL through its own small TCP proxy (infra.tcp_proxy). Cut the
master's path (its proxy stops forwarding bytes), heal it later.

What happens (measured here): the master's lease renewal hangs on the cut path, so it stays master;
its lease expires and the slave takes it — both report ``Slave=false`` and both acknowledge sends —
until the heal lets the old master's renewal through, which finds the lease taken and gives up
("no longer able to keep the exclusive lock"), restarting as slave.

Truth, from the brokers' own logs: the new master's ``Apache ActiveMQ … started`` line after the cut
(it took the lease at ``becoming master with lease expiry``, then needs a moment to start: only then
are its connectors open and ``Slave=false``) and the old master's last ``Connector … stopped`` line
after its ``giving up being a master`` bound the dual-master window. Not the giving-up line itself:
BrokerService.stop() first stops the broker's services, then its transport connectors, and only
then sets ``slave = true`` — until that moment the old master still accepts clients and reports
``Slave=false`` (on a loaded machine a run saw ``Slave=false`` 0.95 s after the giving-up line,
which failed the drill when that line was the truth). A producer pinned
to each broker records its acknowledged sends; the cut and heal times are the drill's.
Bar: the split brain found (zero missed), both ends within one scrape interval.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import (Producer, Scorecard, activemq_log, activemq_targets, epoch, first_log_time,
                                       fresh_workdir, log_times, master_and_slave, pick, rows, say, settle,
                                       start_collecting, write_truth)
from infra.lab import ActiveMQPair
from infra.pg_lab import PgCluster
from infra.tcp_proxy import TcpProxy

NAME = "lease-split-brain"
SUMMARY = "cut the ActiveMQ master's path to PostgreSQL (lease locker) until the slave takes over, heal it"
LEASE_MS = 2000  # lease-database-locker lockAcquireSleepInterval: lease duration and the slave's retry period
KEEP_ALIVE_MS = 500  # jdbcPersistenceAdapter lockKeepAlivePeriod: the master's renewal period
DUAL_S = 3.0  # how long to leave both masters running once the slave has taken over
BECOMING_MASTER = r"becoming master with lease expiry"
STARTED = r"Apache ActiveMQ \S+ \(.*\) started"
GIVING_UP = r"no longer able to keep the exclusive lock so giving up being a master"
CONNECTOR_STOPPED = r"Connector \S+ stopped"
SHUT_DOWN = r"\) is shutdown"


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:

    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "lease_ms": LEASE_MS, "keep_alive_ms": KEEP_ALIVE_MS}
    say("starting PostgreSQL (own cluster in the workdir) and one TCP proxy per broker")
    pg = PgCluster(workdir / "lab" / "pg")
    proxies = {}
    pair = None
    try:
        pg.start()
        names = ("amq-a", "amq-b")
        proxies = {n: TcpProxy(("127.0.0.1", pg.port), name=n).start() for n in names}
        pair = ActiveMQPair(workdir / "lab", names=names, store="jdbc-lease", lock_acquire_sleep_ms=LEASE_MS,
                            lock_keep_alive_ms=KEEP_ALIVE_MS,
                            jdbc_urls={n: pg.jdbc_url(proxies[n].port) for n in names})
        say("starting ActiveMQ pair on the JDBC store (lease-database-locker)")
        pair.start(timeout=120)
        cfg_path, col = start_collecting(workdir, activemq_targets(pair), interval)
        master, slave = master_and_slave(pair, "before the cut")
        truth.update(master_before=master, slave=slave, pg_pid=pg.pid)
        producers = {n: Producer(pair.brokers[n].stomp_url, n).start() for n in names}
        settle(interval)
        truth["cut_ts"] = proxies[master].cut()
        say(f"cut {master}'s path to PostgreSQL")
        truth["slave_master_seen_ts"] = pair.wait_for_role(slave, "master", timeout=60)
        say(f"{slave} is master too (seen by the drill's probe); {master} says {pair.role(master)}")
        time.sleep(DUAL_S)
        truth["heal_ts"] = proxies[master].heal()
        say(f"healed {master}'s path")
        truth["old_master_slave_seen_ts"] = pair.wait_for_role(master, "slave", timeout=60)
        say(f"{master} gave up and is slave again")
        settle(interval)
        truth["producers"] = {n: p.stop() for n, p in producers.items()}
        truth["collector"] = col.stop().summary()
    finally:
        if pair is not None:
            pair.stop()
        for p in proxies.values():
            p.close()
        pg.stop()
    logs = {n: activemq_log(pair, n) for n in pair.names}
    truth["lease_taken_ts"] = first_log_time(logs[slave], BECOMING_MASTER, truth["cut_ts"])
    # the new master serves (connectors open, Slave=false) once it has started, not when it took the lease
    truth["dual_start_ts"] = first_log_time(logs[slave], STARTED, truth["cut_ts"])
    truth["giving_up_ts"] = first_log_time(logs[master], GIVING_UP, truth["cut_ts"])
    truth["dual_end_ts"] = connectors_closed(logs[master], truth["giving_up_ts"])
    truth["dual_master"] = None not in (truth["dual_start_ts"], truth["dual_end_ts"])
    add_producer_view(truth, producers)
    write_truth(workdir, truth)
    return cfg_path, truth


def connectors_closed(log: Path, giving_up: float | None) -> float | None:
    """When the old master stopped serving: its last `Connector … stopped` line of the stop that
    followed the giving-up line (BrokerService sets `slave = true` right after them)."""
    if giving_up is None:
        return None
    shut = first_log_time(log, SHUT_DOWN, giving_up)
    closed = [t for t in log_times(log, CONNECTOR_STOPPED, giving_up) if shut is None or t <= shut]
    return max(closed, default=None)


def add_producer_view(truth: dict, producers: dict) -> None:
    """What the clients saw: sends acknowledged by each side inside the dual-master window."""
    start, end = truth["dual_start_ts"], truth["dual_end_ts"]
    if start is None or end is None:
        return
    acked = {n: p.acked_between(start, end) for n, p in producers.items()}
    truth["acked_in_window"] = {n: len(v) for n, v in acked.items()}
    truth["both_sides_acked"] = all(acked.values())
    say(f"dual-master window {end - start:.2f} s (broker logs); sends acknowledged in it: {truth['acked_in_window']}")


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    windows = rows(lh, "split_brain_windows")
    if not card.require(truth["dual_master"], "the fault did not produce two masters (see the broker logs)"):
        return card
    pair = tuple(sorted((truth["master_before"], truth["slave"])))
    mine = pick(windows, instance_a=pair[0], instance_b=pair[1])
    if not card.detect("split brain", bool(mine), f"no split_brain_windows row for {pair}: {windows}"):
        return card
    w = min(mine, key=lambda r: r["certain_start"])
    card.boundary("split brain start (vs new master's 'started' log line)", epoch(w["certain_start"]), truth["dual_start_ts"])
    card.boundary("split brain end (vs old master's last 'Connector … stopped' line)", epoch(w["certain_end"]),
                  truth["dual_end_ts"])
    card.latency("cut → split brain first observed", epoch(w["certain_start"]) - truth["cut_ts"])
    card.latency("takeover (log) → split brain first observed", epoch(w["certain_start"]) - truth["dual_start_ts"])
    card.facts["lease taken → started s"] = round(truth["dual_start_ts"] - truth["lease_taken_ts"], 3)
    if truth.get("giving_up_ts") is not None:
        card.facts["giving up → connectors closed s"] = round(truth["dual_end_ts"] - truth["giving_up_ts"], 3)
    card.facts["true window s"] = round(truth["dual_end_ts"] - truth["dual_start_ts"], 3)
    card.facts["found window s"] = round(w["duration_s"], 3)
    card.facts["certainty"] = w["certainty"]
    card.facts["sends acknowledged in the window (producers)"] = truth.get("acked_in_window")
    card.require(len(mine) == 1, f"the one split brain is split into {len(mine)} windows")
    return card
