"""artemis-clients, artemis-clients-core: real clients through a failover of a real Artemis 2.40.0
shared-store pair — a producer (persistent messages, each acknowledged by the broker before the
next) and a consumer — while the primary is SIGKILLed and the backup takes over.

Variants (VARIANTS): ``artemis-clients`` runs STOMP 1.2 clients that fail over by themselves to
whichever broker accepts them (infra/failover_clients.py: RECEIPT per SEND, client-individual acks);
``artemis-clients-core`` runs what AMQ 7 / JBoss EAP applications run, the Core JMS client, failing
over through its URL ``(tcp://primary,tcp://backup)?ha=true&reconnectAttempts=…&retryInterval=…&
clientFailureCheckPeriod=…&connectionTTL=…`` (infra/core_clients.py: synchronous durable sends, a
transacted consumer, the client's own FailoverEventListener and ExceptionListener in its ledger).

Truth: the kill, the backup's AMQ221010, each client's view of its connections (STOMP: dialled,
CONNECTED, lost; Core: FAILURE_DETECTED, FAILOVER_COMPLETED), the broker's own list of its
connections before the kill and after the takeover (what ConnectionCount counts), and the Jepsen
ledger: sent, acknowledged, received (by the consumer, then by a final read that drains the queue
once the clients are gone), lost (acknowledged, never received), duplicated. Bar: the
failover as artemis-kill scores it (no restart), no acknowledged message lost, and brokerscope's
gold `client_shifts` row of the failover: the clients arrived on the backup — as many as the
backup's own list of its connections says came — first seen within one scrape of the broker
creating them (of their dial, STOMP, in recordings without that list), its shift bounds holding the
true one. What the clients themselves did (their failover events against their settings) is
reported beside it, as truth.

Measured, artemis-clients-core (six runs; docs/ARTEMIS_LAB.md fact 27), after the SIGKILL: the
clients' FAILURE_DETECTED at 0.03–0.13 s (the killed JVM's sockets close; clientFailureCheckPeriod
1 s and connectionTTL 5 s play no part), AMQ221010 at 0.8–3.8 s, the clients on the backup 0.08–0.18
s after it — unless a blocking call was in flight at the kill and the backup was slow: then that
client's failover completes only when the call times out (callTimeout: 5 s in the final runs,
FAILOVER_COMPLETED at +5.3 s, 2.2–2.7 s after AMQ221010; the default 30 s left one client stuck
past the drill's end in each of two earlier runs). 336–376 acknowledged, 0 lost (final read 0),
0 or 1 duplicated (the send in flight at the kill: stored, unacknowledged, sent again). The primary
counted 4 connections (its waiting backup's 2 and the clients'), the backup 2: client_shifts
"2 (50% of 4)", first seen 0.02–0.27 s after the broker created the last one, shift ≤ 1.7–5.6 s
against a true 1.3–5.3 s.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.artemis_kill import QUEUE, score_tables
from brokerscope.drills.common import Scorecard, epoch, fresh_workdir, rows, say, settle, start_collecting, write_truth
from infra.artemis.instance import ADMIN_USER
from infra.artemis_lab import ArtemisPair, log_times
from infra.core_clients import CoreClients, FailoverSettings
from infra.failover_clients import FailoverConsumer, FailoverProducer, Ledger

NAME = "artemis-clients"
SUMMARY = "producer and consumer through an Artemis shared-store failover (SIGKILL of the primary): lost, duplicated"
SUMMARIES = {
    "artemis-clients": "STOMP producer and consumer fail over with an Artemis shared-store pair (SIGKILL primary)",
    "artemis-clients-core": "Core JMS producer and consumer (ha=true URL) through an Artemis shared-store failover",
}
#: drill name → the clients it runs
VARIANTS = {"artemis-clients": "stomp", "artemis-clients-core": "core"}
RATE = 50.0  # producer messages per second
#: the Core clients' failover settings (their URL): a budget of 10 s of retries, far above a takeover;
#: callTimeout 5 s instead of 30: a client can wait that long for the failover check a just-activated
#: backup does not answer (docs/ARTEMIS_LAB.md fact 27), and the drill waits for every client's end
CORE_SETTINGS = FailoverSettings(reconnect_attempts=50, retry_interval_ms=200, client_failure_check_period_ms=1000,
                                 connection_ttl_ms=5000, call_timeout_ms=5000)


def run(workdir: Path, interval: float = 0.5, keep: bool = False, variant: str = NAME) -> tuple[Path, dict]:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}")
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": variant, "topology": "shared-store", "scrape_interval_s": interval, "rate": RATE,
                   "clients_kind": VARIANTS[variant]}
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
    # the Core clients' connectionTTL, so brokerscope's failover-duration risk uses it, not Artemis' default
    gc = {"gc": {"connection_ttl_ms": CORE_SETTINGS.connection_ttl_ms}} if truth["clients_kind"] == "core" else {}
    _cfg_path, col = start_collecting(workdir, [pair.target(n, **gc) for n in pair.names], interval)
    truth["connections_idle"] = {primary: pair.connections(primary)}
    clients = (CoreJmsClients if truth["clients_kind"] == "core" else StompClients)(pair, workdir, truth)
    with clients:
        settle(interval, 6, 3.0)
        truth["connections_before_kill"] = {primary: pair.connections(primary)}
        truth["kill_ts"] = time.time()
        truth["killed_pid"] = pair.kill(primary)
        say(f"SIGKILL {primary} (pid {truth['killed_pid']}) under {RATE:g} msg/s")
        truth["takeover_seen_ts"] = pair.wait_for_role(backup, "active", timeout=60)
        say(f"{backup} is active (seen by the drill's 20 Hz probe)")
        clients.wait_failed_over(truth)
        stop_producing(clients, pair, interval, truth)
    final_ledger(clients, pair, interval, truth, col)


def stop_producing(clients, pair: ArtemisPair, interval: float, truth: dict) -> None:
    """Once the clients work on the backup: let the collector see it, list the backup's connections,
    stop the producer and let the consumer drain the queue."""
    backup = truth["new_master"]
    settle(interval, 10, 5.0)
    truth["connections_after"] = {backup: pair.connections(backup)}
    clients.stop_producer()
    _drain(clients.last_received_at, idle_s=3.0, timeout=30.0)


def final_ledger(clients, pair: ArtemisPair, interval: float, truth: dict, col) -> None:
    """After the clients stopped: the final read on the backup, the Jepsen ledger, the collector stopped."""
    reader = _final_read(pair, truth["new_master"])
    truth["final_read"] = len(reader.received)
    truth.update(clients.truth(reader))
    ledger = truth["ledger"]
    say(f"clients: {ledger['attempted']} sent, {ledger['acked']} acknowledged, {ledger['received']} received "
        f"({ledger['distinct_received']} distinct), {len(ledger['lost'])} lost, {len(ledger['duplicated'])} duplicated")
    settle(interval)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def _drain(last_received_at, idle_s: float, timeout: float) -> None:
    """Until the consumer has received nothing for `idle_s` (the queue is empty) or `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and time.time() - last_received_at() < idle_s:
        time.sleep(0.1)


def _final_read(pair: ArtemisPair, name: str) -> FailoverConsumer:
    """Jepsen's final read: a fresh consumer drains the queue on `name` once the clients are gone
    (messages a client held unacknowledged go back to the queue when its connection closes), so a
    message is lost only if nobody can read it any more."""
    reader = FailoverConsumer([pair.brokers[name].stomp_url], f"/queue/{QUEUE}", login=ADMIN_USER,
                              passcode=pair.admin_password)
    reader.name = "final-read"
    with reader:
        time.sleep(2.0)
        _drain(lambda: reader.last_received_at, idle_s=2.0, timeout=30.0)
    say(f"final read: {len(reader.received)} message(s) left on {name}")
    return reader


def ledger_truth(producer, *consumers) -> dict:
    ledger = Ledger.of(producer, *consumers)
    return vars(ledger) | {"duplicated": {str(k): v for k, v in ledger.duplicated.items()}}


class StompClients:
    """The STOMP producer and consumer (infra/failover_clients.py), each failing over by itself."""

    def __init__(self, pair: ArtemisPair, workdir: Path, truth: dict) -> None:
        truth["stomp_urls"] = {n: pair.brokers[n].stomp_url for n in pair.names}
        urls, auth = list(truth["stomp_urls"].values()), {"login": ADMIN_USER, "passcode": pair.admin_password}
        self.consumer = FailoverConsumer(urls, f"/queue/{QUEUE}", **auth)
        self.producer = FailoverProducer(urls, f"/queue/{QUEUE}", rate=RATE, **auth)

    def __enter__(self) -> "StompClients":
        self.consumer.start()
        self.producer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.producer.stop()
        self.consumer.stop()

    def wait_failed_over(self, truth: dict) -> None:
        pass  # they retry every 100 ms for as long as the drill runs

    def stop_producer(self) -> None:
        self.producer.stop()

    def last_received_at(self) -> float:
        return self.consumer.last_received_at

    def truth(self, final_read: FailoverConsumer) -> dict:
        return {"clients": {c.name: [vars(x) for x in c.connections] for c in (self.producer, self.consumer)},
                "ledger": ledger_truth(self.producer, self.consumer, final_read)}


class CoreJmsClients:
    """The Core JMS producer and consumer JVMs (infra/core_clients.py) on the pair's failover URL."""

    PRODUCER, CONSUMER = "core-producer", "core-consumer"

    def __init__(self, pair: ArtemisPair, workdir: Path, truth: dict) -> None:
        url = CORE_SETTINGS.url([pair.acceptor_ports[n] for n in pair.names])
        truth["client_url"], truth["client_settings"] = url, CORE_SETTINGS.to_json()
        self.clients = CoreClients(workdir / "lab" / "clients", url, QUEUE, ADMIN_USER, pair.admin_password)

    def __enter__(self) -> "CoreJmsClients":
        self.clients.start_consumer(self.CONSUMER)
        self.clients.start_producer(self.PRODUCER, rate=RATE)
        return self

    def __exit__(self, *exc) -> None:
        self.clients.stop()

    def wait_failed_over(self, truth: dict) -> None:
        """Until each client's FailoverEventListener said FAILOVER_COMPLETED or FAILOVER_FAILED, at
        most its reconnect budget plus a blocking call's timeout (and 10 s) after the fault."""
        s, fault = CORE_SETTINGS, fault_at(truth)
        deadline = fault + (s.reconnect_budget_s or 60.0) + s.call_timeout_ms / 1000 + 10.0
        ends = ("FAILOVER_COMPLETED", "FAILOVER_FAILED")
        while time.time() < deadline:
            ledgers = [self.clients.ledger(n) for n in (self.PRODUCER, self.CONSUMER)]
            if all(any(e.get("type") in ends and e["t"] >= fault for e in c.events) for c in ledgers):
                break
            time.sleep(0.1)
        truth["clients_failed_over_waited_s"] = round(time.time() - fault, 3)

    def stop_producer(self) -> None:
        self.clients.thread_dumps()  # into each client's log: where a client stuck in a call is stuck
        self.clients.stop_client(self.PRODUCER)

    def last_received_at(self) -> float:
        return max(self.clients.ledger(self.CONSUMER).times("committed"), default=0.0)

    def truth(self, final_read: FailoverConsumer) -> dict:
        producer, consumer = self.clients.ledger(self.PRODUCER), self.clients.ledger(self.CONSUMER)
        return {"clients": {c.name: c.summary() for c in (producer, consumer)},
                "ledger": ledger_truth(producer, consumer, final_read)}


# --------------------------------------------------------------------------------------------------
# the truth of the clients' move
# --------------------------------------------------------------------------------------------------


def fault_at(truth: dict) -> float:
    """When the clients' broker failed: the SIGKILL, or the SIGSTOP of a silent live."""
    return truth["kill_ts"] if "kill_ts" in truth else truth["sigstop_ts"]


def reconnected_at(truth: dict, url: str, when: str = "dialed") -> float | None:
    """STOMP: when the last of the clients dialled (or got CONNECTED from) the broker at `url`."""
    at = [max((c[when] for c in conns if c["url"] == url), default=None) for conns in truth["clients"].values()]
    return None if None in at else max(at)


def core_event_times(truth: dict, kind: str, pick=min) -> dict[str, float | None]:
    """Core: per client, the first (`pick=max`: the last) FailoverEventListener event of `kind` after the fault."""
    return {name: pick((e["t"] for e in c["events"] if e.get("type") == kind and e["t"] >= fault_at(truth)),
                       default=None) for name, c in truth["clients"].items()}


def client_connections_listed(truth: dict) -> int | None:
    """How many connections the backup listed after the takeover (None: no list in the truth)."""
    listed = (truth.get("connections_after") or {}).get(truth["new_master"])
    return None if listed is None else len(listed)


def client_connections_created(truth: dict) -> float | None:
    """When the last client connection the backup listed after the takeover was created (the
    broker's own clock): from then on ConnectionCount held every client. Clients have sessions;
    the HA peer's connections have none (fact 27)."""
    listed = (truth.get("connections_after") or {}).get(truth["new_master"]) or []
    created = [c["created"] for c in listed if (c.get("sessions") or 0) > 0 and c.get("created")]
    return max(created) if created else None


def clients_back_at(truth: dict) -> tuple[float | None, str]:
    """(when the clients were back on the backup by their own account, what says so)."""
    if truth.get("clients_kind") == "core":
        done = core_event_times(truth, "FAILOVER_COMPLETED", pick=max).values()  # back for good
        return (None if None in done else max(done)), "their last FAILOVER_COMPLETED"
    return reconnected_at(truth, truth["stomp_urls"][truth["new_master"]]), "their dial"


# --------------------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------------------


def score(lh, truth: dict) -> Scorecard:
    card = score_tables(rows(lh, "failover_events"), rows(lh, "role_intervals"), rows(lh, "split_brain_windows"),
                        truth)
    _score_ledger(card, truth)
    if truth.get("clients_kind") == "core":
        _score_core_failover(card, truth)
    _score_shift(card, rows(lh, "client_shifts"), truth)
    return card


def _score_ledger(card: Scorecard, truth: dict) -> None:
    ledger = truth["ledger"]
    card.require(not ledger["lost"], f"acknowledged messages lost: {ledger['lost'][:20]}")
    card.facts["sent / acknowledged / received (distinct)"] = (ledger["attempted"], ledger["acked"],
                                                                f"{ledger['received']} ({ledger['distinct_received']})")
    card.facts["lost (acknowledged, never received)"] = len(ledger["lost"])
    card.facts["duplicated (received twice or more)"] = len(ledger["duplicated"])
    card.facts["sent without acknowledgement, delivered anyway"] = ledger["unacked_delivered"]
    card.facts["delivered, commit outcome unknown (AMQ219031, a timed-out commit), never again"] = ledger.get("commit_indeterminate", [])
    if "final_read" in truth:
        card.facts["left on the queue at the end (final read)"] = truth["final_read"]


def _score_core_failover(card: Scorecard, truth: dict) -> None:
    """The Core clients' own failover against their settings, as facts (what the clients did is
    truth, not a finding of brokerscope's): how it was detected (a SIGKILL closes the sockets, long
    before clientFailureCheckPeriod), how long the reconnection took against retryInterval ×
    reconnectAttempts and after the backup's AMQ221010, and which client never completed one."""
    s, kill = truth["client_settings"], fault_at(truth)
    detected, completed = core_event_times(truth, "FAILURE_DETECTED"), core_event_times(truth, "FAILOVER_COMPLETED")
    card.facts["sends unblocked by the failover (indeterminate, sent again)"] = sum(
        c.get("send_failed", 0) for c in truth["clients"].values())
    stuck = {n: c.get("last") for n, c in truth["clients"].items() if completed[n] is None}
    if stuck:  # e.g. run 3 of docs/ARTEMIS_LAB.md fact 27: a producer whose send never returned
        card.facts["clients without FAILOVER_COMPLETED (their last ledger event)"] = stuck
    card.facts["kill → FAILURE_DETECTED per client (s) vs clientFailureCheckPeriod"] = (
        {n: None if t is None else round(t - kill, 3) for n, t in detected.items()},
        s["client_failure_check_period_ms"] / 1000)
    took = {n: round(completed[n] - detected[n], 3) for n in completed if None not in (completed[n], detected[n])}
    card.facts["FAILURE_DETECTED → FAILOVER_COMPLETED (s) vs the reconnect budget"] = (took, s["reconnect_budget_s"])
    card.facts["retries at retryInterval (≈)"] = {n: int(t // (s["retry_interval_ms"] / 1000)) for n, t in took.items()}
    if truth.get("takeover_log_ts"):
        card.facts["AMQ221010 → FAILOVER_COMPLETED (s) vs retryInterval"] = (
            {n: round(t - truth["takeover_log_ts"], 3) for n, t in completed.items() if t is not None},
            s["retry_interval_ms"] / 1000)
    card.facts["connectionTTL (s): not what ended the old connections (the kill closed them)"] = (
        s["connection_ttl_ms"] / 1000)


def _score_shift(card: Scorecard, shifts: list[dict], truth: dict, left: float | None = None) -> None:
    """brokerscope's gold client_shifts row of the failover against the clients' reconnection, which
    began when they `left` the old live (default: the fault — a killed broker's sockets close)."""
    old, new = truth["master_before"], truth["new_master"]
    left = left or fault_at(truth)
    mine = [s for s in shifts if (s["from_instance"], s["to_instance"], s["event_type"]) == (old, new, "failover")]
    arrived_one = len(mine) == 1 and mine[0]["state"] == "arrived"
    if not card.detect("clients' move to the backup (gold client_shifts)", arrived_one, f"client_shifts rows {mine}"):
        return
    s = mine[0]
    arrived = epoch(s["arrived_ts"])
    card.facts["client_shifts: connections before → after (moved_fraction)"] = (
        s["connections_before"], s["connections_after"], s["moved_fraction"])
    card.facts["client_shifts: shift (s) lower … upper, quality"] = (
        s["shift_lower_s"], s["shift_upper_s"], s["quality"])
    back, source = clients_back_at(truth)
    created = client_connections_created(truth)
    listed = client_connections_listed(truth)
    if listed is not None:  # the clients that really came (a client may not have: fact 27, run 3)
        card.require(s["connections_after"] == listed, f"client_shifts counts {s['connections_after']} connections "
                     f"on {new}, the broker listed {listed}")
    if back is not None:
        card.facts[f"clients left → back by {source} (truth, s)"] = round(back - left, 3)
        card.facts[f"client_shifts.arrived_ts − {source} (s)"] = round(arrived - back, 3)
    card.facts["clients left → seen on the backup (brokerscope, s)"] = round(arrived - left, 3)
    if created is None:  # no listing from the broker (older recordings): the clients' own account
        card.boundary(f"clients on the backup (client_shifts.arrived_ts vs {source})", arrived, back)
        return
    # the broker counts a connection from its creation, before the client has finished its failover
    # (a Core client re-creates its sessions first): first seen from then on, within one scrape
    card.boundary("clients on the backup (client_shifts.arrived_ts vs the broker's creation of their connections)",
                  arrived, created, lo=-0.1)
    true_shift = created - left
    card.facts["true shift: clients left → last client connection on the backup (s)"] = round(true_shift, 3)
    lower, upper = s["shift_lower_s"] or 0.0, s["shift_upper_s"]
    card.require(upper is not None and lower - 0.1 <= true_shift <= upper + 0.1,
                 f"shift bounds {lower} … {upper} s do not hold the true shift {true_shift:.3f} s")
