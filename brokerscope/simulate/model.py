"""The simulated cluster: members (JVMs) with what they do over true time, and the traffic they carry.

Times are seconds since the scenario's start (`t0`). Every fact a renderer shows at an observation
time is a pure function of the member and that time, so a scenario is deterministic and its ground
truth is simply the spans it was built from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from collectors.schedule import period


@dataclass(frozen=True)
class Span:
    """[start, end) in seconds since t0; end = inf: until the end of the run."""

    start: float
    end: float = math.inf

    def holds(self, t: float) -> bool:
        return self.start <= t < self.end

    def overlap(self, a: float, b: float) -> float:
        """Seconds of this span inside [a, b)."""
        return max(0.0, min(self.end, b) - max(self.start, a))


def within(spans: list[Span], t: float) -> bool:
    return any(s.holds(t) for s in spans)


@dataclass
class Destination:
    """A queue (or distributed-queue member) on one member. While the member serves, producers send
    `rate_in` messages/s; consumers keep the depth at `depth`. Inside a `no_consumers` span nobody
    takes anything: the depth grows by every message sent; when consumers return they drain the
    backlog before the next scrape."""

    name: str
    logical: str | None = None
    rate_in: float = 5.0
    depth: int = 2
    consumers: int = 1
    no_consumers: list[Span] = field(default_factory=list)


@dataclass
class Counters:
    enqueued: int
    dequeued: int
    messages: int
    consumers: int
    oldest_age_ms: int | None  # age of the head message (where the broker reports it)


@dataclass
class Member:
    """One JVM. `active`: holds the live/master/controller role (WebLogic: its JMS server serves).
    `down`: the process is gone (connection refused). `frozen`: a stop-the-world pause (the agent
    answers nothing within the timeout). `dropped`: scrapes lost by the collector (no envelope at
    all: a scrape gap). `jvm_starts`: when the JVM (re)started (uptime and counters reset).
    `skew_s`: the collector's clock for this target minus true time."""

    name: str
    kind: str
    group: str
    url: str
    offset_ms: int = 0
    active: list[Span] = field(default_factory=list)
    down: list[Span] = field(default_factory=list)
    frozen: list[Span] = field(default_factory=list)
    dropped: list[Span] = field(default_factory=list)
    jvm_starts: list[float] = field(default_factory=lambda: [-3600.0])
    skew_s: float = 0.0
    destinations: list[Destination] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # per-kind knobs (NodeID, sequences, partitions …)

    def is_active(self, t: float) -> bool:
        return within(self.active, t) and not within(self.down, t)

    def jvm_start(self, t: float) -> float:
        return max(s for s in self.jvm_starts if s <= t)

    def uptime_ms(self, t: float) -> int:
        return int(round((t - self.jvm_start(t)) * 1000))

    def served_s(self, a: float, b: float) -> float:
        """Seconds this member was active inside [a, b) (builders end `active` where `down` begins)."""
        return sum(s.overlap(a, b) for s in self.active)

    def counters(self, d: Destination, t: float) -> Counters:
        """The destination's counters since the JVM started (what a restarted broker reports)."""
        start = self.jvm_start(t)
        served = self.served_s(start, t)
        enqueued = int(d.rate_in * served) + d.depth
        stuck = next((s for s in d.no_consumers if s.holds(t)), None)
        if stuck is None:
            messages, consumers, age = d.depth, d.consumers, 1000 * min(1.0, d.depth / max(d.rate_in, 1e-9))
        else:
            held = self.served_s(max(stuck.start, start), t)
            messages, consumers, age = d.depth + int(d.rate_in * held), 0, 1000 * (t - stuck.start) + 1000.0
        return Counters(enqueued, enqueued - messages, messages, consumers, int(age) if messages else None)


@dataclass
class Scenario:
    """A built scenario: its members, the scrape grid and the ground truth."""

    name: str
    kind: str
    seed: int
    interval: float
    duration: float
    members: list[Member]
    truth: dict
    jolokia_generation: int = 2
    zookeeper: list[Member] = field(default_factory=list)  # ensemble servers (kind zookeeper)
    gc_logs: dict[str, list[dict]] = field(default_factory=dict)  # target → GC events (see gclog)
    config_extra: dict = field(default_factory=dict)  # analysis / gc sections of the scenario config

    def ticks(self) -> int:
        """Scrapes per target in `duration` (the collector's period is a little under the interval)."""
        return int(math.floor(self.duration / period(self.interval)))
