"""kafka-broker-kill / kafka-controller-kill: SIGKILL one node of a real Kafka 4.3.1 KRaft cluster
(infra.kafka_lab: three combined broker+controller nodes), then start it again.

- ``kafka-broker-kill`` kills a node that is not the active controller: its partitions become
  under-replicated once the controller fences it (broker session 3 s), those of ``lab.strict``
  (RF 3, ``min.insync.replicas=3``) also under min ISR; the restarted node catches up and the ISRs
  expand again.
- ``kafka-controller-kill`` kills the active controller: another voter becomes the active
  controller (a controller failover), and as the node is a broker too, its partitions are
  under-replicated until it is back.

Truth: the kill and restart (the drill's own), the new controller's ``Becoming the active controller``
log line, and Kafka's own AdminClient view polled at 10 Hz (the partitions whose ISR is shorter than
their replica list, and shorter than their topic's ``min.insync.replicas``) — independent of the
Jolokia scrapes. Bar: the under-replicated and under-min-ISR episodes found in replication_findings
with start and end within one scrape interval of the AdminClient's; for the controller kill, one
failover old → new controller with the new one first seen active within one interval of its log
line, and no split brain.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import KafkaException

from brokerscope.drills.common import (
    Periodic,
    Scorecard,
    describe_window,
    epoch,
    fresh_workdir,
    rows,
    run_in_lab,
    say,
    settle,
    start_collecting,
)
from infra.kafka_clients import admin_client, create_topic, produce
from infra.kafka_lab import PRIMARY, KafkaLab, log_times

NAME = "kafka-broker-kill"
SUMMARY = "SIGKILL a Kafka KRaft broker → under-replicated / under-min-ISR partitions; restart → ISRs expand"
SUMMARIES = {
    "kafka-broker-kill": SUMMARY,
    "kafka-controller-kill": "SIGKILL the active KRaft controller (a combined node) → controller failover; restart → rejoins",
}
#: drill name → kill the active controller?
VARIANTS = {"kafka-broker-kill": False, "kafka-controller-kill": True}
GROUP = f"kafka-{PRIMARY}"
STRICT = "lab.strict"  # every partition under min ISR while one replica is missing
MIN_ISR = {"lab.orders": 2, STRICT: 3}  # the lab's topics; every other topic has the broker default 1
BECOMING_ACTIVE = r"Becoming the active controller at epoch"


class AdminProbe(Periodic):
    """Kafka's own view, 10 times a second: (time, under-replicated, under-min-ISR partitions) from
    the cluster metadata the AdminClient gets (ISR vs replicas of every partition)."""

    def __init__(self, bootstrap: str, period: float = 0.1) -> None:
        super().__init__("kafka-admin-probe", period)
        self.admin = admin_client(bootstrap)
        self.samples: list[tuple[float, int, int]] = []
        self.lock = threading.Lock()

    def tick(self) -> None:
        t = time.time()
        try:
            md = self.admin.list_topics(timeout=1.0)
        except KafkaException:
            return
        urp = under = 0
        for name, topic in md.topics.items():
            for p in topic.partitions.values():
                urp += len(p.isrs) < len(p.replicas)
                under += len(p.isrs) < MIN_ISR.get(name, 1)
        with self.lock:
            self.samples.append((t, urp, under))

    def first(self, since: float, pred) -> tuple[float, int, int] | None:
        with self.lock:
            return next((s for s in self.samples if s[0] >= since and pred(s)), None)

    def wait(self, since: float, pred, timeout: float, what: str) -> tuple[float, int, int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.first(since, pred)
            if found:
                return found
            time.sleep(0.05)
        raise RuntimeError(f"AdminClient never saw {what} within {timeout:.0f}s (last: {self.samples[-1:]})")


def run(workdir: Path, interval: float = 0.5, keep: bool = False, variant: str = NAME) -> tuple[Path, dict]:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}")
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": variant, "scrape_interval_s": interval, "min_isr": MIN_ISR}
    lab = KafkaLab(workdir / "lab", mirror=False)
    return run_in_lab(lab, workdir, truth, lambda: _drive(lab, workdir, interval, truth, VARIANTS[variant]))


def _drive(lab: KafkaLab, workdir: Path, interval: float, truth: dict, kill_controller: bool) -> None:
    say("starting Kafka: 3 combined KRaft nodes")
    truth["startup_s"] = lab.start()
    bootstrap = lab.bootstrap(PRIMARY)
    create_topic(bootstrap, STRICT, 3, 3, {"min.insync.replicas": "3"})
    controller = lab.active_controller()
    truth["controller_before"] = controller
    names = [n for n in lab.names if lab.nodes[n].cluster == PRIMARY]
    victim = controller if kill_controller else sorted(n for n in names if n != controller)[-1]
    truth["victim"] = victim
    truth["node_pids"] = {n: lab.nodes[n].pid for n in names}
    truth["produced_before"] = produce(bootstrap, lab.topic, 200)
    probe = AdminProbe(bootstrap).start()
    _, col = start_collecting(workdir, [lab.target(n) for n in names], interval)
    try:
        settle(interval, 4, 2.0)
        truth["kill_ts"] = time.time()
        truth["killed_pid"] = lab.kill(victim)
        say(f"SIGKILL {victim} (pid {truth['killed_pid']}){' — the active controller' if kill_controller else ''}")
        t, urp, under = probe.wait(truth["kill_ts"], lambda s: s[1] > 0, 30, "under-replicated partitions")
        truth["urp_start_ts"], truth["urp_seen"] = t, urp
        say(f"AdminClient: {urp} partitions under-replicated, {under} under min ISR, {t - truth['kill_ts']:.2f}s after the kill")
        if kill_controller:
            truth["controller_after"] = _wait_new_controller(lab, victim)
        settle(interval, 6, 3.0)
        truth["restart_ts"] = time.time()
        lab.start_node(victim)
        t, _, _ = probe.wait(truth["restart_ts"], lambda s: s[1] == 0 and s[2] == 0, 60, "every ISR full again")
        truth["recovered_ts"] = t
        say(f"{victim} is back; every ISR full again {t - truth['restart_ts']:.2f}s after the restart")
        settle(interval, 4, 2.0)
    finally:
        truth["collector"] = col.stop().summary()
        probe.stop()
    _episodes(probe, truth)
    if kill_controller:
        new = truth["controller_after"]
        found = log_times(lab.node_log(new), BECOMING_ACTIVE, truth["kill_ts"])
        truth["takeover_log_ts"] = found[0][0] if found else None
        truth["takeover_log_line"] = found[0][1] if found else None
    say(f"collector stopped: {truth['collector']}")


def _wait_new_controller(lab: KafkaLab, old: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = lab.active_controller()
        if new not in (None, old):
            say(f"{new} is the active controller")
            return new
        time.sleep(0.05)
    raise RuntimeError(f"no new active controller within {timeout:.0f}s after killing {old}")


def _episodes(probe: AdminProbe, truth: dict) -> None:
    """Truth episodes from the AdminClient samples: the first sample showing the condition after the
    kill, the first not showing it after that (a sample that could not be taken is no sample)."""
    for key, col in (("urp", 1), ("under_min_isr", 2)):
        start = probe.first(truth["kill_ts"], lambda s, c=col: s[c] > 0)
        end = probe.first(start[0], lambda s, c=col: s[c] == 0) if start else None
        truth[f"{key}_episode"] = {"start_ts": start[0] if start else None, "end_ts": end[0] if end else None,
                                   "max": max((s[col] for s in probe.samples if s[0] >= truth["kill_ts"]), default=0)}
    truth["probe_samples"] = len(probe.samples)


def score(lh, truth: dict) -> Scorecard:
    return score_tables(rows(lh, "replication_findings"), rows(lh, "failover_events"), rows(lh, "split_brain_windows"), truth)


def score_tables(findings: list[dict], failovers: list[dict], split_brain: list[dict], truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    cluster = [f for f in findings if f["group_name"] == GROUP]
    for code, key in (("under-replicated", "urp"), ("under-min-isr", "under_min_isr")):
        want = truth[f"{key}_episode"]
        if want["start_ts"] is None:
            card.expect_none(code, [f for f in cluster if f["code"] == code], lambda f: f"{f['code']} {f['start_ts']}")
            continue
        got = [f for f in cluster if f["code"] == code]
        if not card.detect(code, len(got) == 1, f"expected one {code} finding, got {len(got)}: {got[:2]}"):
            continue
        f = got[0]
        card.boundary(f"{code} start (vs AdminClient)", epoch(f["start_ts"]), want["start_ts"])
        card.boundary(f"{code} end (vs AdminClient)", epoch(f["end_upper"]), want["end_ts"])
        card.facts[f"{code} max: findings / AdminClient"] = f"{f['value_max']:g} / {want['max']}"
        card.latency(f"kill → {code} first seen", epoch(f["start_ts"]) - truth["kill_ts"])
    card.expect_none("split brain", [w for w in split_brain if w["group_name"] == GROUP], describe_window)
    moves = [e for e in failovers if e["group_name"] == GROUP and e["event_type"] in ("failover", "failback")]
    if "controller_after" not in truth:
        card.expect_none("controller move", moves, lambda e: f"{e['from_instance']} → {e['to_instance']}")
        return card
    old, new = truth["controller_before"], truth["controller_after"]
    ev = [e for e in moves if (e["from_instance"], e["to_instance"]) == (old, new)]
    if card.detect("controller failover", len(ev) == 1 and len(moves) == 1, f"expected one {old} → {new} in {moves}"):
        e = ev[0]
        takeover = truth.get("takeover_log_ts")
        card.facts["takeover_source"] = truth.get("takeover_log_line") or "drill probe"
        card.boundary("old controller last active (vs kill)", epoch(e["old_last_active"]), truth["kill_ts"],
                      lo=-(card.interval + 0.1), hi=0.0)
        # an observation is stamped when its request is sent and read while the JVM answers: under
        # load (two cores, three Kafka JVMs and Spark) a scrape sent 0.11 s before the log line took
        # 159 ms and saw the new controller, so the bar is one scrape interval either way
        card.boundary("new controller first active (vs its log line)", epoch(e["new_first_active"]), takeover)
        card.facts["true_controller_gap_s"] = round(takeover - truth["kill_ts"], 3) if takeover else None
        card.latency("kill → new controller first seen", epoch(e["new_first_active"]) - truth["kill_ts"])
    return card
