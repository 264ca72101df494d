"""Scenarios: a cluster of one kind and the faults injected into it, with the ground truth.

Each builder returns a `Scenario`: members whose spans (active, down, frozen, dropped scrapes,
restarts) ARE the truth, and a truth dict derived from those same spans. Fault times are drawn
from a seeded RNG off the scrape grid, so boundaries fall between scrapes as in real life.

Truth (all times ISO 8601 UTC, ms; see `truth_json`):
  failovers        [{group, from, to, event_type, old_live_lost, new_live_active}]
  split_brain      [{group, instances, start, end}]
  outages          [{group, start, end}]   no instance of the group active
  stuck            [{group, instance, destination, code, start, end}]
  lag              [{group, code, instance, start, end}]   end null: still so at the end
  gc_pauses        [{target, start, ms, over_threshold, caused_failover}]   caused_failover: index into failovers
  stale_backups    [{group, instance, start, end}]
  scrape_gaps      [{target, start, end}]
  skew             [{target, offset_s}]
  expect           what a correct analysis must (not) report, in words and numbers
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from random import Random
from typing import Callable

from brokerscope.simulate.gclog import Pause
from brokerscope.simulate.kafka import ReplicatorFlow
from brokerscope.simulate.model import Destination, Member, Scenario, Span, within
from collectors.schedule import period

T0 = datetime(2026, 11, 23, 9, 0, 0, tzinfo=timezone.utc)
NODE_ID = "a1f0c2d4-8b6e-11f0-9c3a-0242ac110002"
ZK_SESSION_MS = 6000.0  # the lock manager's session-ms in the GC scenario (default 18000, CATALOG §1.6)


class ScenarioError(ValueError):
    """An unknown scenario, or one that does not apply to the kind; names the choices."""


# --- members of each kind --------------------------------------------------------------------------

URLS = {
    "activemq": "http://{}.example:8161/api/jolokia",
    "artemis": "http://{}.example:8161/console/jolokia",
    "kafka": "http://{}.example:8778/jolokia",
    "weblogic": "http://{}.example:7003/jolokia",
}
NAMES = {
    "activemq": ("amq-a", "amq-b"),
    "artemis": ("art-a", "art-b"),
    "kafka": ("kafka-1", "kafka-2", "kafka-3"),
    "weblogic": ("ms1", "ms2"),
}
GROUPS = {"activemq": "store-1", "artemis": "pair-1", "kafka": "prod-east", "weblogic": "cluster-1"}
QUEUE = {"activemq": "orders", "artemis": "orders", "weblogic": "OrdersQueue"}


def members_of(spec: "Spec", rng: Random) -> list[Member]:
    """The kind's members, each scraped a few ms apart (a concurrent scraper never sends at once).
    `spec.prefix` makes names, groups, NodeIDs and stores unique when scenarios share one recording."""
    kind, p = spec.kind, spec.prefix
    out = []
    for i, name in enumerate(NAMES[kind]):
        m = Member(p + name, kind, p + GROUPS[kind], URLS[kind].format(p + name), offset_ms=3 + 5 * i + rng.randrange(3))
        if kind in QUEUE:
            m.destinations = [Destination(QUEUE[kind], rate_in=4.0 + i, depth=2)]
        if kind == "artemis":
            node_id = str(uuid.uuid5(uuid.UUID(NODE_ID), p)) if p else NODE_ID
            m.facts.update(node_id=node_id, primary=i == 0, sequence=[(-1e9, 7)])
        if kind == "activemq":
            m.facts.update(store=f"/srv/activemq/{p}shared/kahadb")
        out.append(m)
    return out


def iso(t: float) -> str | None:
    if t is None or t == float("inf"):
        return None
    ts = T0 + timedelta(seconds=t)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def at_ms(t: float) -> float:
    """Fault times have ms resolution, like every recorded time."""
    return round(t, 3)


def empty_truth() -> dict:
    return {k: [] for k in ("failovers", "split_brain", "outages", "stuck", "lag", "gc_pauses", "stale_backups",
                            "scrape_gaps", "skew")} | {"expect": {}}


@dataclass
class Spec:
    """What the CLI passes to a builder."""

    kind: str
    seed: int
    interval: float
    duration: float
    split_length: float | None = None  # split brain length (s); default 6 intervals
    skew: float | None = None  # collector clock offset (s); default −3.4 intervals
    prefix: str = ""  # prepended to member and group names (several scenarios in one recording)
    jolokia: int = 2  # agent generation: 1 (ActiveMQ ≤5.19, Artemis console ≤2.39) or 2 (≥2.5 defaults)


def _scenario(name: str, spec: Spec, members: list[Member], truth: dict, **kw) -> Scenario:
    return Scenario(name, spec.kind, spec.seed, spec.interval, spec.duration, members, truth,
                    jolokia_generation=spec.jolokia, **kw)


def _fault_time(spec: Spec, rng: Random, share: float) -> float:
    """A time at `share` of the run, moved off the scrape grid by a random fraction of an interval."""
    return at_ms(spec.duration * share + rng.uniform(0.15, 0.85) * spec.interval)


def _hand_over(truth: dict, group: str, a: Member, b: Member, lost: float, active: float, event: str = "failover") -> None:
    truth["failovers"].append({"group": group, "from": a.name, "to": b.name, "event_type": event,
                               "old_live_lost": iso(lost), "new_live_active": iso(active)})
    truth["outages"].append({"group": group, "start": iso(lost), "end": iso(active)})


# --- clean failover ------------------------------------------------------------------------------------


def clean_failover(spec: Spec, name: str = "clean-failover") -> Scenario:
    """The live dies (process killed: connection refused from then on); the backup takes over after
    1.5 scrape intervals (lock acquired / vote / controller election). Nothing else happens."""
    rng = Random(spec.seed)
    members = members_of(spec, rng)
    a, b = members[0], members[1]
    kill = _fault_time(spec, rng, 0.4)
    takeover = at_ms(kill + 1.5 * spec.interval)
    a.active, a.down = [Span(0.0 - 3600, kill)], [Span(kill)]
    b.active = [Span(takeover)]
    truth = empty_truth()
    _hand_over(truth, a.group, a, b, kill, takeover)
    if spec.kind == "artemis":
        b.facts["sequence"] = [(-1e9, 7), (takeover, 8)]
    if spec.kind == "kafka":
        kafka_broker_lost(spec, members, truth, lost=a, kill=kill, takeover=takeover)
    truth["expect"] = {"split_brain": 0, "failovers": 1}
    return _scenario(name, spec, members, truth)


def kafka_broker_lost(spec: Spec, brokers: list[Member], truth: dict, lost: Member, kill: float, takeover: float) -> None:
    """The survivors lead partitions whose replica on the lost broker left the ISR once the new
    controller acted: under-replicated (by their leader) from the takeover on; no controller between
    the kill and the takeover (a round there sums ActiveControllerCount 0)."""
    for i, m in enumerate(x for x in brokers if x is not lost):
        m.facts["urp"] = [(Span(takeover), 6 + i)]
    group = lost.group
    truth["lag"].append({"group": group, "code": "under-replicated", "instance": None, "start": iso(takeover), "end": None})
    truth["lag"].append({"group": group, "code": "no-controller", "instance": None, "start": iso(kill), "end": iso(takeover)})


# --- failback ---------------------------------------------------------------------------------------


def failback(spec: Spec) -> Scenario:
    """Failover A → B, A restarts as backup, then the role returns to A: ActiveMQ — B is stopped and
    A takes the lock; Artemis — allow-failback: B restarts as backup (AMQ221039) and A activates."""
    rng = Random(spec.seed)
    a, b = members_of(spec, rng)
    kill = _fault_time(spec, rng, 0.25)
    takeover = at_ms(kill + 1.5 * spec.interval)
    restart = at_ms(kill + 6 * spec.interval)
    back_lost = _fault_time(spec, rng, 0.65)
    back_active = at_ms(back_lost + 1.5 * spec.interval)
    a.active = [Span(-3600, kill), Span(back_active)]
    a.down, a.jvm_starts = [Span(kill, restart)], [-3600.0, restart]
    b.active = [Span(takeover, back_lost)]
    if spec.kind == "artemis":  # B hands back and restarts as backup
        b.down, b.jvm_starts = [Span(back_lost, at_ms(back_lost + 0.5 * spec.interval))], [-3600.0, at_ms(back_lost + 0.5 * spec.interval)]
        a.facts["sequence"] = [(-1e9, 7), (back_active, 9)]
        # B replicates from A again: the initial sync brings it A's sequence one scrape later
        b.facts["sequence"] = [(-1e9, 7), (takeover, 8), (at_ms(back_active + spec.interval), 9)]
    else:  # the operator stops B; A (slave since its restart) takes the lock
        b.down = [Span(back_lost)]
    truth = empty_truth()
    _hand_over(truth, a.group, a, b, kill, takeover)
    _hand_over(truth, a.group, b, a, back_lost, back_active, event="failback")
    truth["expect"] = {"split_brain": 0, "failovers": 1, "failbacks": 1}
    return _scenario("failback", spec, [a, b], truth)


# --- split brain ------------------------------------------------------------------------------------


def split_brain(spec: Spec) -> Scenario:
    """B activates while A stays active (Artemis: replication dropped and B won its vote; ActiveMQ: a
    shared-file lock lost on NFS; Kafka: a zombie controller) for `split_length`; then B is shut down
    (Kafka: B resigns). Both sides take messages meanwhile."""
    rng = Random(spec.seed)
    members = members_of(spec, rng)
    a, b = members[0], members[1]
    length = spec.split_length or 6 * spec.interval
    start = _fault_time(spec, rng, 0.35)
    end = at_ms(start + length)
    a.active = [Span(-3600)]
    b.active = [Span(start, end)]
    if spec.kind == "kafka":
        pass  # the zombie controller resigns and stays a broker
    else:
        b.down = [Span(end)]
    if spec.kind == "artemis":
        b.facts.update(sequence=[(-1e9, 7), (start, 8)])
        a.facts["detached"] = True
        b.facts["detached"] = True
    truth = empty_truth()
    truth["split_brain"].append({"group": a.group, "instances": sorted([a.name, b.name]), "start": iso(start), "end": iso(end)})
    if spec.kind == "kafka":
        truth["lag"].append({"group": a.group, "code": "multiple-controllers", "instance": None, "start": iso(start), "end": iso(end)})
    truth["expect"] = {"split_brain": 1, "split_brain_length_s": length}
    return _scenario("split-brain", spec, members, truth)


# --- GC-caused failover -------------------------------------------------------------------------------


def gc_failover(spec: Spec) -> Scenario:
    """Artemis with the ZooKeeper lock manager (session-ms 6 s): the live stops the world in a full GC
    longer than the session; ZooKeeper expires its session, the backup takes the lock and activates;
    when the pause ends the live finds its lock gone ("Quorum UNAVAILABLE: async stopping broker")
    and stops. Both JVMs also do short young pauses all along (no finding)."""
    rng = Random(spec.seed)
    a, b = members_of(spec, rng)
    pause_start = _fault_time(spec, rng, 0.4)
    pause = Pause(pause_start, round(1.35 * ZK_SESSION_MS, 3), full=True)
    takeover = at_ms(pause_start + ZK_SESSION_MS / 1000 + 0.4)
    a.active, a.frozen, a.down = [Span(-3600, pause_start)], [Span(pause_start, pause.end)], [Span(pause.end)]
    b.active = [Span(takeover)]
    b.facts["sequence"] = [(-1e9, 7), (takeover, 8)]
    truth = empty_truth()
    _hand_over(truth, a.group, a, b, pause_start, takeover)
    gc = {}
    for m in (a, b):
        young = [Pause(at_ms(t), round(rng.uniform(8, 40), 3)) for t in _every(3.0 + rng.random(), spec.duration)
                 if not (pause_start - 1 < t < pause.end + 1) and not within(m.down, t)]
        gc[m.name] = young + ([pause] if m is a else [])
    truth["gc_pauses"].append({"target": a.name, "start": iso(pause_start), "ms": pause.ms, "over_threshold": True,
                               "caused_failover": 0})
    truth["expect"] = {"split_brain": 0, "failovers": 1, "gc_findings_over_threshold": 1}
    for m in (a, b):  # per target: scenarios sharing one recording keep their own thresholds
        m.facts["target_config"] = {"gc": {"zk_session_ms": int(ZK_SESSION_MS)}}
    return _scenario("gc-failover", spec, [a, b], truth, gc_logs=gc)


def _every(step: float, until: float) -> list[float]:
    out, t = [], step
    while t < until:
        out.append(t)
        t += step
    return out


# --- stale backup (Artemis + ZooKeeper) ---------------------------------------------------------------


def stale_backup(spec: Spec) -> Scenario:
    """Artemis lock manager on a 3-server ensemble. Replication to the backup drops; the live
    re-activates (its ZooKeeper session was renewed) and commits activation sequence 8; the backup
    keeps 7: local ≠ coordinated, it is Stale and cannot take over (CATALOG §1.6)."""
    rng = Random(spec.seed)
    a, b = members_of(spec, rng)
    when = _fault_time(spec, rng, 0.4)
    a.active = [Span(-3600)]
    a.facts["sequence"] = [(-1e9, 7), (when, 8)]
    b.facts["detached_from"] = when
    p = spec.prefix
    zk = [Member(f"{p}zk{i}", "zookeeper", f"{p}zk-sim", f"zk://{p}zk{i}.example:2181", offset_ms=1 + i) for i in (1, 2, 3)]
    zk[0].active = [Span(-3600)]  # zk1 leads throughout
    truth = empty_truth()
    truth["stale_backups"].append({"group": a.group, "instance": b.name, "start": iso(when), "end": None})
    truth["expect"] = {"split_brain": 0, "failovers": 0, "stale_backup_grace_s": stale_grace(spec)}
    extra = {"analysis": {"risk": {"stale_backup_grace": stale_grace(spec)}}}
    return _scenario("stale-backup", spec, [a, b], truth, zookeeper=zk, config_extra=extra)


def stale_grace(spec: Spec) -> float:
    """Short enough for the run, longer than one sample (never a finding from one scrape)."""
    return round(5 * spec.interval, 3)


# --- stuck member -------------------------------------------------------------------------------------


def stuck_member(spec: Spec) -> Scenario:
    """The consumers of one member's queue go away while producers keep sending; they return later
    and drain it. WebLogic: the other member keeps its consumers (stranded-member); ActiveMQ /
    Artemis: the live's queue has no consumer (no-consumers)."""
    rng = Random(spec.seed)
    members = members_of(spec, rng)
    start = _fault_time(spec, rng, 0.2)
    end = _fault_time(spec, rng, 0.75)
    holder = members[0]
    holder.destinations[0].no_consumers = [Span(start, end)]
    for m in members:
        m.active = [Span(-3600)] if (spec.kind == "weblogic" or m is holder) else []
    truth = empty_truth()
    code = "stranded-member" if spec.kind == "weblogic" else "no-consumers"
    dest = f"SystemModule!JMSServer-{holder.name}@OrdersQueue" if spec.kind == "weblogic" else QUEUE[spec.kind]
    truth["stuck"].append({"group": holder.group, "instance": holder.name, "destination": dest, "code": code,
                           "start": iso(start), "end": iso(end)})
    truth["expect"] = {"split_brain": 0, "failovers": 0, "stuck_threshold_s": stuck_threshold(spec)}
    return _scenario("stuck-member", spec, members, truth, config_extra={"analysis": {"stuck": {"threshold": stuck_threshold(spec)}}})


def stuck_threshold(spec: Spec) -> float:
    return round(5 * spec.interval, 3)


# --- lag spike (Kafka) --------------------------------------------------------------------------------


def lag_spike(spec: Spec) -> Scenario:
    """A follower (kafka-3) falls behind: its ReplicaFetcherManager MaxLag climbs far above the
    threshold and the leaders report its partitions under-replicated; then it catches up. Later,
    Confluent Replicator (on its own Connect worker) stalls for 8 intervals and catches up at three
    times the origin's rate: lag in time above the threshold (3 intervals) for a while. The stall is
    shorter than Burrow's window (10), so no consumer status finding is due."""
    rng = Random(spec.seed)
    brokers = members_of(spec, rng)
    start = _fault_time(spec, rng, 0.3)
    end = _fault_time(spec, rng, 0.6)
    brokers[0].active = [Span(-3600)]
    brokers[2].facts["max_lag"] = [(Span(start, end), 25_000)]
    for i, m in enumerate(brokers[:2]):
        m.facts["urp"] = [(Span(start, end), 5 + i)]
    worker = Member(spec.prefix + "replicator-worker", "kafka", spec.prefix + "replicator-worker",
                    URLS["kafka"].format(spec.prefix + "replicator-worker"), offset_ms=19)
    stall_start = _fault_time(spec, rng, 0.55)
    flow = ReplicatorFlow(rate=100.0, stall=Span(stall_start, at_ms(stall_start + 8 * spec.interval)))
    worker.facts["replicator"] = flow
    threshold = lag_threshold(spec)
    over = flow.over(threshold)
    truth = empty_truth()
    g = brokers[0].group
    truth["lag"] += [{"group": g, "code": "follower-lag", "instance": None, "start": iso(start), "end": iso(end)},
                     {"group": g, "code": "under-replicated", "instance": None, "start": iso(start), "end": iso(end)}]
    truth["lag"] += [{"group": worker.group, "code": "replication-lag", "instance": worker.name, "topic": topic,
                      "partition": partition, "start": iso(over.start), "end": iso(over.end)}
                     for topic, partition in flow.partitions]
    truth["expect"] = {"split_brain": 0, "failovers": 0, "lag_threshold_s": threshold}
    extra = {"analysis": {"lag": {"follower_lag_messages": 1000, "lag_threshold": threshold}}}
    return _scenario("lag-spike", spec, brokers + [worker], truth, config_extra=extra)


def lag_threshold(spec: Spec) -> float:
    return round(3 * spec.interval, 3)


# --- scrape gaps ----------------------------------------------------------------------------------------


def scrape_gaps(spec: Spec) -> Scenario:
    """A clean failover, with the collector losing scrapes: three in a row of each member while
    nothing changes (no envelope at all), and one timed-out scrape of the backup. A missed scrape is
    indeterminate: no restart, no extra failover, no split brain."""
    sc = clean_failover(spec, name="scrape-gaps")
    a, b = sc.members[0], sc.members[1]
    gaps = [(a, 0.15), (b, 0.2), (b, 0.75)]
    for m, share in gaps:
        s = at_ms(spec.duration * share + 0.5 * spec.interval)
        span = Span(s, at_ms(s + 3 * spec.interval))
        m.dropped.append(span)
        sc.truth["scrape_gaps"].append({"target": m.name, "start": iso(span.start), "end": iso(span.end)})
    t = at_ms(spec.duration * 0.3 + 0.5 * spec.interval)
    b.frozen.append(Span(t, at_ms(t + 0.9 * spec.interval)))
    sc.truth["scrape_gaps"].append({"target": b.name, "start": iso(t), "end": iso(t + 0.9 * spec.interval), "timeout": True})
    return sc


# --- clock skew -------------------------------------------------------------------------------------------


def clock_skew(spec: Spec) -> Scenario:
    """A clean failover seen by two collectors whose clocks disagree: the backup's collector runs
    `skew` seconds off (default 3.4 intervals behind: more than the 1.5-interval outage, and off
    the scrape grid). Envelope times carry each collector's clock;
    the agents' item `timestamp`s (epoch seconds) carry true time. A correct analysis aligns the
    collectors (e.g. by the agents' timestamps) and reports one failover, no split brain, with
    boundaries within one interval of the true times."""
    sc = clean_failover(spec, name="clock-skew")
    sc.config_extra = {"analysis": {"clock_skew": {"correct": True}}}  # two collectors: align them
    b = sc.members[1]
    b.skew_s = spec.skew if spec.skew is not None else round(-3.4 * spec.interval, 3)
    sc.truth["skew"].append({"target": b.name, "offset_s": b.skew_s})
    sc.truth["expect"]["note"] = (
        f"{b.name}'s collector clock is {b.skew_s:+.3f} s off; the truth is in true time. A correct analysis "
        "estimates each collector's offset from the agents' item `timestamp` (epoch seconds, the broker's "
        "clock), e.g. the median of envelope ts − item timestamp per target, shifts that target's "
        "observations by it, and then finds one failover within one interval and no split brain")
    return sc


@dataclass(frozen=True)
class Entry:
    build: Callable[[Spec], Scenario]
    kinds: tuple[str, ...]
    summary: str


SCENARIOS: dict[str, Entry] = {
    "clean-failover": Entry(clean_failover, ("activemq", "artemis", "kafka"), "the live dies, the backup takes over"),
    "failback": Entry(failback, ("activemq", "artemis"), "failover, then the role returns to the restarted live"),
    "split-brain": Entry(split_brain, ("activemq", "artemis", "kafka"), "two actives for --split-length seconds"),
    "gc-failover": Entry(gc_failover, ("artemis",), "a full GC longer than session-ms costs the live its lock"),
    "stale-backup": Entry(stale_backup, ("artemis",), "the backup's activation sequence falls behind ZooKeeper's"),
    "stuck-member": Entry(stuck_member, ("weblogic", "activemq", "artemis"), "a queue (member) loses its consumers"),
    "lag-spike": Entry(lag_spike, ("kafka",), "a follower falls behind: follower lag and under-replicated partitions"),
    "scrape-gaps": Entry(scrape_gaps, ("activemq", "artemis", "kafka"), "a clean failover with lost and timed-out scrapes"),
    "clock-skew": Entry(clock_skew, ("activemq", "artemis"), "a clean failover seen by two collectors with skewed clocks"),
}


def build(name: str, spec: Spec) -> Scenario:
    entry = SCENARIOS.get(name)
    if entry is None:
        raise ScenarioError(f"unknown scenario {name!r}; choose one of: {', '.join(SCENARIOS)} (see `brokerscope simulate --list`)")
    if spec.kind not in entry.kinds:
        raise ScenarioError(f"scenario {name!r} does not apply to kind {spec.kind!r}; it applies to: {', '.join(entry.kinds)}")
    if spec.jolokia not in (1, 2):
        raise ScenarioError(f"Jolokia generation {spec.jolokia!r} is not simulated; use 1 or 2")
    if spec.interval <= 0 or spec.duration < 20 * spec.interval:
        raise ScenarioError(f"--duration ({spec.duration:g} s) must be at least 20 scrape intervals "
                            f"(--interval {spec.interval:g} s) so every fault has scrapes before and after it")
    sc = entry.build(spec)
    sc.truth = {"scenario": sc.name, "kind": sc.kind, "seed": sc.seed, "interval_s": sc.interval,
                "duration_s": sc.duration, "t0": iso(0.0), "end": iso(sc.ticks() * period(sc.interval))} | sc.truth
    sc.truth["groups"] = sorted({m.group for m in sc.members + sc.zookeeper})
    sc.truth["targets"] = [m.name for m in sc.members + sc.zookeeper]
    return sc


def suite(spec: Spec) -> list[Scenario]:
    """Every scenario for every kind it applies to, prefixed so they share one recording and one
    analysis: `<scenario>.<kind>.` (e.g. `split-brain.artemis.art-a`)."""
    return [build(name, replace(spec, kind=kind, prefix=f"{name}.{kind}."))
            for name, entry in SCENARIOS.items() for kind in entry.kinds]
