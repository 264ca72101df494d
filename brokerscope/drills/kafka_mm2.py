"""kafka-mm2-restart: MirrorMaker 2 (dedicated mode, primary → dr) stopped while a producer keeps
writing to the primary, then started again: the cross-cluster lag grows, and drains after the restart.

MirrorMaker 2 has no lag metric of its own; the Kafka pack takes its replication consumer's
``records-lag`` per source partition as the ``mirrormaker2`` row's lag in messages (collectors/kafka.py).

Truth: Kafka's own AdminClient, 4 times a second: the end offset of each partition of ``lab.orders``
on the primary minus that of ``primary.lab.orders`` on DR (the mirrored topic was empty when MM2
started and the producer writes no transactions, so offsets line up one to one), as bounds: the
source read before and after the mirror (LagProbe). Bar: every
``mirrormaker2`` lag the collector recorded lies within the AdminClient's lag over one scrape interval
around it (the scrape and the probe are not simultaneous; the consumer's lag counts what MM2 has
fetched as replicated, so up to ``IN_FLIGHT`` messages less are allowed); MM2 unanswered while it
was stopped; the drain (lag 0 everywhere) found within one scrape interval of the AdminClient's.
The Kafka-protocol collector reads both clusters' log end offsets too (flow ``mirror-offsets``,
analysis/mirror_lag.py): within the AdminClient's ±IN_FLIGHT on every round and observed throughout
the outage, its lag in time before the restart within one scrape of the time since the stop, and
DR's standing copy a Burrow STALL once the window (10 rounds) after the stop is full: from one
scrape before to 2 s after (MM2 flushes what it fetched before it stops).
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from brokerscope.drills.common import (
    Periodic,
    Scorecard,
    epoch,
    fresh_workdir,
    rows,
    run_in_lab,
    say,
    settle,
    start_collecting,
)
from infra.kafka_clients import admin_client
from settings import LagSettings
from infra.kafka_lab import DR, MM2, PRIMARY, KafkaLab

NAME = "kafka-mm2-restart"
SUMMARY = "stop MirrorMaker 2 under load → cross-cluster lag grows; restart → drains (lag vs AdminClient end offsets)"
RATE = 10  # messages per producer tick (every 0.2 s: 50/s)
#: what MM2 may have fetched but not yet written to DR when a scrape reads its consumer's lag
IN_FLIGHT = 2 * RATE
REPLICATION = "orders-dr"


class Load(Periodic):
    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__("kafka-load", 0.2)
        self.topic, self.sent = topic, 0
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})

    def tick(self) -> None:
        for _ in range(RATE):
            self.producer.produce(self.topic, value=f"x{self.sent}".encode(), key=str(self.sent).encode())
            self.sent += 1
        self.producer.poll(0)

    def stop(self) -> int:
        super().stop()
        self.producer.flush(30)
        return self.sent  # what was produced (acks=all, flushed)


def replication_config(lab: KafkaLab, name: str, **over) -> dict:
    """The lab's primary → DR replication as `failover_readiness.replications` holds it."""
    return {"name": name, "group": f"kafka-{PRIMARY}", "source_alias": PRIMARY, "target_alias": DR,
            "primary": {"bootstrap": lab.bootstrap(PRIMARY)}, "dr": {"bootstrap": lab.bootstrap(DR)},
            "timeout": "2s", **over}


class LagProbe(Periodic):
    """4 times a second, from both clusters' AdminClients, per partition the bounds of the true lag:
    the source's end offsets read before and after the mirror's, so ``before − mirror`` ≤ the lag at
    the moment the mirror was read ≤ ``after − mirror`` (the two reads are not simultaneous; under
    load they can be 100s of ms apart, and one source read alone gave a lag below zero)."""

    def __init__(self, lab: KafkaLab) -> None:
        super().__init__("kafka-lag-probe", 0.25)
        self.lab = lab
        self.src, self.dst = admin_client(lab.bootstrap(PRIMARY)), admin_client(lab.bootstrap(DR))
        self.samples: list[tuple[float, dict[int, tuple[int, int]]]] = []
        self.lock = threading.Lock()

    def _ends(self, admin, topic: str) -> dict[int, int]:
        futs = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(self.lab.partitions)},
                                  request_timeout=2)
        return {tp.partition: f.result(3).offset for tp, f in futs.items()}

    def tick(self) -> None:
        try:
            before = self._ends(self.src, self.lab.topic)
            t = time.time()
            dst = self._ends(self.dst, self.lab.mirrored_topic)
            after = self._ends(self.src, self.lab.topic)
        except Exception:  # noqa: BLE001 — a sample that could not be taken is no sample
            return
        with self.lock:
            self.samples.append((t, {p: (max(0, before[p] - dst.get(p, 0)), after[p] - dst.get(p, 0)) for p in after}))


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "in_flight_allowed": IN_FLIGHT}
    lab = KafkaLab(workdir / "lab", mirror=True)
    return run_in_lab(lab, workdir, truth, lambda: _drive(lab, workdir, interval, truth))


def _drive(lab: KafkaLab, workdir: Path, interval: float, truth: dict) -> None:
    say("starting Kafka: primary (3 KRaft nodes), dr (1), MirrorMaker 2")

    def restart_mm2() -> None:
        truth["stop_ts"] = time.time()
        lab.kill(MM2, signal.SIGTERM)
        say("MirrorMaker 2 stopped (SIGTERM)")
        time.sleep(8)
        truth["restart_ts"] = time.time()
        lab.start_node(MM2, wait=True)
        say(f"MirrorMaker 2 answering again {time.time() - truth['restart_ts']:.1f}s after the restart")
        time.sleep(6)

    drive_under_load(lab, workdir, interval, truth, restart_mm2)


def drive_under_load(lab: KafkaLab, workdir: Path, interval: float, truth: dict, fault, calm_s: float = 3.0) -> None:
    """Start the lab, 50 msg/s on the primary, the AdminClient lag probe and the collector; after
    `calm_s` of steady replication, `fault()`; then stop the producer and wait until DR has caught up.
    Truth: startup_s, load_stop_ts, produced, drained_ts, probe, max_true_lag (and the fault's own)."""
    truth["startup_s"] = lab.start()
    truth["mirror_offsets"] = True
    load = Load(lab.bootstrap(PRIMARY), lab.topic).start()
    probe = LagProbe(lab).start()
    # the brokers' own log end offsets too (flow mirror-offsets), read by the Kafka-protocol collector
    mirror = {"replications": [replication_config(lab, REPLICATION, topics=[lab.topic])]}
    _, col = start_collecting(workdir, [lab.target(n) for n in lab.names], interval, failover_readiness=mirror)
    try:
        settle(interval, int(calm_s / interval), calm_s)
        fault()
        truth["load_stop_ts"] = time.time()
        truth["produced"] = load.stop()
        truth["drained_ts"] = _wait_drained(probe, truth["load_stop_ts"], 60)
        say(f"drained {truth['drained_ts'] - truth['load_stop_ts']:.2f}s after the producer stopped")
        settle(interval, 4, 2.0)
    finally:
        load.stop()  # idempotent: also when the drill failed half way
        truth["collector"] = col.stop().summary()
        probe.stop()
    with probe.lock:
        truth["probe"] = [[round(t, 3), lags] for t, lags in probe.samples]
    truth["max_true_lag"] = max((sum(hi for _, hi in lags.values()) for _, lags in probe.samples), default=0)
    say(f"collector stopped: {truth['collector']}; largest true lag {truth['max_true_lag']} messages")


def _wait_drained(probe: LagProbe, since: float, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with probe.lock:
            done = next((t for t, lags in probe.samples if t >= since and lags and not any(hi for _, hi in lags.values())), None)
        if done:
            return done
        time.sleep(0.1)
    raise RuntimeError(f"the mirrored topic did not catch up within {timeout:.0f}s (last: {probe.samples[-1:]})")


def score(lh, truth: dict) -> Scorecard:
    repl = [r for r in rows(lh, "replication_stats") if r["flow"] == "mirrormaker2"]
    card = score_rows(repl, [r for r in rows(lh, "broker_state") if r["instance"] == MM2], truth)
    if truth.get("mirror_offsets"):  # recordings before the Kafka-protocol reads were added have none
        stop, restart = truth["stop_ts"], truth["restart_ts"]
        score_mirror_offsets(card, lh, probe_samples(truth), truth, (stop, restart))
        # DR stood still from the stop: at the last round before the restart it was that long behind
        gold = [r for r in rows(lh, "replication_lag") if r["flow"] == "mirror-offsets" and r["observed"]
                and epoch(r["ts"]) <= restart and r["lag_s"] is not None]
        if card.detect("mirror-offsets lag in time before the restart", bool(gold), "no mirror-offsets lag_s"):
            last = max(epoch(r["ts"]) for r in gold)
            behind = max(r["lag_s"] for r in gold if epoch(r["ts"]) == last)
            card.boundary("mirror-offsets lag_s before the restart (vs time since the stop)", behind, last - stop)
        # DR's copy stands still while MM2 is down: STALL once Burrow's window holds only such rounds
        stalls = [epoch(f["start_ts"]) for f in rows(lh, "replication_findings")
                  if f["flow"] == "mirror-offsets" and f["code"] == "consumer-stall" and epoch(f["start_ts"]) >= stop]
        if card.detect("DR's copy stalled (mirror-offsets, Burrow STALL)", bool(stalls), "no consumer-stall finding"):
            # the window must hold only rounds of a standing DR: the 10th round after MM2 stopped
            # copying, which it does at most ~2 s after SIGTERM (flushing what it had fetched)
            filled = stop + LagSettings().window * card.interval
            card.boundary("stall found (vs stop + Burrow's window)", min(stalls), filled, lo=-(card.interval + 0.05), hi=2.0)
    return card


def score_rows(repl: list[dict], state: list[dict], truth: dict) -> Scorecard:
    """``state``: MM2's broker_state rows — a Connect worker has one only for an unanswered scrape."""
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    probe = probe_samples(truth)
    score_lag_values(card, repl, probe, truth)
    # MM2 stopped: its scrapes go unanswered from the stop on, until it answers again after the restart
    stop, restart = truth["stop_ts"], truth["restart_ts"]
    down = sorted(epoch(h["ts"]) for h in state if h["reachable"] is False and epoch(h["ts"]) >= stop - card.interval)
    if card.detect("MirrorMaker 2 stopped", bool(down), "no unanswered MM2 scrape after the stop"):
        card.boundary("MM2 first unanswered (vs stop)", down[0], stop, lo=0.0)
        card.facts["MM2 unanswered scrapes"] = len(down)
    first = min((epoch(r["ts"]) for r in repl if epoch(r["ts"]) > restart), default=None)
    if card.detect("MirrorMaker 2 replicating again", first is not None, "no mirrormaker2 row after the restart"):
        card.facts["restart → first mirrormaker2 metrics (s)"] = round(first - restart, 2)
        at = [sum(hi for _, hi in lags.values()) for t, lags in probe if t <= first]
        card.facts["true lag when its metrics came back (messages)"] = at[-1] if at else None
        card.facts["largest lag MM2 reported after the restart"] = max(
            (r["lag_messages"] or 0 for r in repl if epoch(r["ts"]) > restart), default=0)
    card.boundary("drained (vs AdminClient)", _first_all_zero(repl, truth["load_stop_ts"]), truth["drained_ts"])
    return card


def probe_samples(truth: dict) -> list[tuple[float, dict[int, tuple[int, int]]]]:
    """The LagProbe's samples from the truth: (time, {partition: (lower, upper) true lag})."""
    return [(t, {int(p): tuple(v) for p, v in lags.items()}) for t, lags in truth["probe"]]


def score_lag_values(card: Scorecard, repl: list[dict], probe: list, truth: dict, since: float = 0.0,
                     until: float = float("inf"), what: str = "") -> None:
    """Every mirrormaker2 lag value (scraped between `since` and `until`) within the AdminClient's
    lag over one scrape interval around it, less IN_FLIGHT (what MM2 fetched and had not yet written)."""
    misses, checked, worst = [], 0, 0.0
    for r in repl:
        if r.get("lag_messages") is None or not since <= epoch(r["ts"]) <= until:
            continue
        ts, p, got = epoch(r["ts"]), r["partition"], r["lag_messages"]
        near = [lags[p] for t, lags in probe if abs(t - ts) <= card.interval and p in lags]
        if not near:
            continue
        checked += 1
        lo, hi = min(b[0] for b in near) - IN_FLIGHT, max(b[1] for b in near)
        off = 0.0 if lo <= got <= hi else (lo - got if got < lo else got - hi)
        worst = max(worst, off)
        if off:
            misses.append(f"p{p} at {ts:.3f}: {got:g} not in [{lo}, {hi}]")
    card.facts[f"mm2 lag rows checked against the AdminClient{what}"] = checked
    card.facts[f"worst miss (messages){what}"] = worst
    card.facts["largest true lag (messages, all partitions)"] = truth["max_true_lag"]
    card.require(checked >= 10, f"only {checked} mirrormaker2 lag rows to check{what}")
    card.require(not misses, f"{len(misses)} of {checked} lag values outside the AdminClient's{what}: {misses[:3]}")


def score_mirror_offsets(card: Scorecard, lh, probe: list, truth: dict, fault: tuple[float, float]) -> None:
    """The brokers' own lag (gold replication_lag, flow mirror-offsets: primary log end − DR log end,
    read by the Kafka-protocol collector) against the AdminClient from one scrape interval before the
    row's round to one after its reads ended (the round's exchanges' elapsed time), ± IN_FLIGHT; it
    must be observed throughout the fault `(start, end)` — where MM2's own metrics go blind or say 0."""
    gold = [r for r in rows(lh, "replication_lag") if r["flow"] == "mirror-offsets"]
    seen = [r for r in gold if r["observed"]]
    # a round's rows carry its tick; its reads ran from the tick for as long as its exchanges took
    took: dict[float, float] = {}
    for b in rows(lh, "bronze_kafka"):
        took[epoch(b["ts"])] = took.get(epoch(b["ts"]), 0.0) + (b["elapsed_ms"] or 0.0) / 1000
    card.facts["Kafka-protocol round: longest (s)"] = round(max(took.values(), default=0.0), 3)
    misses, checked, worst = [], 0, 0.0
    for r in seen:
        ts, p, got = epoch(r["ts"]), r["partition"], r["lag_messages"]
        near = [lags[p] for t, lags in probe if ts - card.interval <= t <= ts + took.get(ts, 0.0) + card.interval and p in lags]
        if not near:
            continue
        checked += 1
        # the probe samples every 0.25 s: between two samples the producer writes up to IN_FLIGHT more
        # (a peak MM2 copies away before the next sample); the primary is read before DR: up to as much less
        lo, hi = min(b[0] for b in near) - IN_FLIGHT, max(b[1] for b in near) + IN_FLIGHT
        off = 0.0 if lo <= got <= hi else (lo - got if got < lo else got - hi)
        worst = max(worst, off)
        if off:
            misses.append(f"p{p} at {ts:.3f}: {got:g} not in [{lo}, {hi}]")
    start, end = fault
    during = [r for r in seen if start <= epoch(r["ts"]) <= end]
    card.facts["mirror-offsets rows checked against the AdminClient"] = checked
    card.facts["mirror-offsets worst miss (messages)"] = worst
    card.facts["mirror-offsets largest lag during the fault (messages, one partition)"] = max(
        (r["lag_messages"] for r in during), default=None)
    card.require(checked >= 10, f"only {checked} mirror-offsets rows to check")
    card.require(not misses, f"{len(misses)} of {checked} mirror-offsets lags outside the AdminClient's: {misses[:3]}")
    rounds = sorted({epoch(r["ts"]) for r in during})
    widest = max((b - a for a, b in zip([start, *rounds], [*rounds, end])), default=end - start)
    card.require(widest <= 3 * card.interval, f"mirror-offsets unobserved for {widest:.2f} s during the fault")
    card.facts["mirror-offsets: widest gap during the fault (s)"] = round(widest, 2)
    card.facts["mirror-offsets lag_s during the fault: largest (s), methods"] = (
        round(max((r["lag_s"] for r in during if r["lag_s"] is not None), default=0.0), 3),
        sorted({r["lag_s_method"] for r in during}))


def _first_all_zero(repl: list[dict], since: float) -> float | None:
    """The first scrape after ``since`` whose every mirrormaker2 row has lag 0."""
    by_ts: dict[float, list[float]] = {}
    for r in repl:
        if r.get("lag_messages") is not None and epoch(r["ts"]) >= since:
            by_ts.setdefault(epoch(r["ts"]), []).append(r["lag_messages"])
    return next((t for t in sorted(by_ts) if not any(by_ts[t])), None)
