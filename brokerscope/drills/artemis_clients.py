"""artemis-clients: real clients through a failover of a real Artemis 2.40.0 shared-store pair — a
producer (persistent sends, each waiting for its RECEIPT) and a consumer (client-individual acks)
that fail over to whichever broker accepts them (infra/failover_clients.py) — while the primary is
SIGKILLed and the backup takes over.

Truth: the kill, the backup's AMQ221010, each client's connections (which broker, opened, lost), and
the Jepsen ledger: attempted, acknowledged, received, lost (acknowledged, never received),
duplicated, and sent-without-RECEIPT yet delivered. Bar: the failover as artemis-kill scores it (no
restart), no acknowledged message lost; beside it what brokerscope saw of the clients: the backup's
first scrape with both clients connected, against when they really reconnected.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.artemis_kill import QUEUE, score_tables
from brokerscope.drills.common import Scorecard, epoch, fresh_workdir, rows, say, settle, start_collecting, write_truth
from infra.artemis_lab import ArtemisPair, log_times
from infra.failover_clients import FailoverConsumer, FailoverProducer, Ledger

NAME = "artemis-clients"
SUMMARY = "a producer and a consumer fail over with an Artemis shared-store pair (SIGKILL of the primary): lost / duplicated messages"
RATE = 50.0  # producer messages per second


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "topology": "shared-store", "scrape_interval_s": interval, "rate": RATE}
    pair = ArtemisPair(workdir / "lab", "shared-store")
    try:
        _drive(pair, workdir, interval, truth)
    finally:
        pair.stop()
    found = log_times(pair.broker_log(truth["new_master"]), "AMQ221010", truth["kill_ts"])
    truth["takeover_log_ts"], truth["takeover_log_line"] = found[0] if found else (None, None)
    write_truth(workdir, truth)
    return workdir / "brokerscope.yaml", truth


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict) -> None:
    primary, backup = pair.names
    say(f"starting Artemis shared-store pair: {primary} primary, {backup} backup")
    pair.start(timeout=120)
    truth["master_before"], truth["new_master"] = primary, backup
    cfg_path, col = start_collecting(workdir, [pair.target(n) for n in pair.names], interval)
    truth["stomp_urls"] = {n: pair.brokers[n].stomp_url for n in pair.names}
    urls = list(truth["stomp_urls"].values())
    auth = {"login": "admin", "passcode": pair.admin_password}
    destination = f"/queue/{QUEUE}"
    with FailoverConsumer(urls, destination, **auth) as consumer, \
            FailoverProducer(urls, destination, rate=RATE, **auth) as producer:
        settle(interval, 6, 3.0)
        truth["kill_ts"] = time.time()
        truth["killed_pid"] = pair.kill(primary)
        say(f"SIGKILL {primary} (pid {truth['killed_pid']}) under {RATE:g} msg/s")
        truth["takeover_seen_ts"] = pair.wait_for_role(backup, "active", timeout=60)
        say(f"{backup} is active (seen by the drill's 20 Hz probe)")
        settle(interval, 10, 5.0)
        producer.stop()
        _drain(consumer, idle_s=3.0, timeout=30.0)
    truth["clients"] = {c.name: [vars(x) for x in c.connections] for c in (producer, consumer)}
    ledger = Ledger.of(producer, consumer)
    truth["ledger"] = vars(ledger) | {"duplicated": {str(k): v for k, v in ledger.duplicated.items()}}
    say(f"clients: {ledger.attempted} sent, {ledger.acked} acknowledged, {ledger.received} received "
        f"({ledger.distinct_received} distinct), {len(ledger.lost)} lost, {len(ledger.duplicated)} duplicated")
    settle(interval)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def _drain(consumer: FailoverConsumer, idle_s: float, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and time.time() - consumer.last_received_at < idle_s:
        time.sleep(0.1)


def reconnected_at(truth: dict, url: str, when: str = "dialed") -> float | None:
    """When the last of the clients dialled (or got CONNECTED from) the broker at `url`: from then
    on both were there. A broker counts a connection from its TCP accept, before CONNECTED goes
    back, so a scrape is compared with the dial (how the collector stamps a scrape: when asked)."""
    at = [max((c[when] for c in conns if c["url"] == url), default=None) for conns in truth["clients"].values()]
    return None if None in at else max(at)


def score(lh, truth: dict) -> Scorecard:
    card = score_tables(rows(lh, "failover_events"), rows(lh, "role_intervals"), rows(lh, "split_brain_windows"),
                        truth)
    ledger = truth["ledger"]
    card.require(not ledger["lost"], f"acknowledged messages lost: {ledger['lost'][:20]}")
    card.facts["sent / acknowledged / received (distinct)"] = (ledger["attempted"], ledger["acked"],
                                                                f"{ledger['received']} ({ledger['distinct_received']})")
    card.facts["lost (acknowledged, never received)"] = len(ledger["lost"])
    card.facts["duplicated (received twice or more)"] = len(ledger["duplicated"])
    card.facts["sent without RECEIPT, delivered anyway"] = ledger["unacked_delivered"]
    new = truth["new_master"]
    moved = reconnected_at(truth, truth["stomp_urls"][new])
    connected = reconnected_at(truth, truth["stomp_urls"][new], "opened")
    if moved is not None:
        card.facts["kill → both clients dialled the backup / CONNECTED (truth, s)"] = (
            round(moved - truth["kill_ts"], 3), round(connected - truth["kill_ts"], 3))
    seen = [r for r in rows(lh, "broker_state") if r["instance"] == new and (r["connections"] or 0) >= 2]
    if card.detect("clients seen arriving on the backup (broker_state connections ≥ 2)", bool(seen),
                   f"no scrape of {new} with both clients connected"):
        first = min(epoch(r["ts"]) for r in seen)
        card.facts["kill → both clients seen on the backup (brokerscope, s)"] = round(first - truth["kill_ts"], 3)
        if moved is not None:
            card.boundary("clients on the backup (first scrape with both vs their reconnection)", first, moved, lo=-0.1)
    return card
