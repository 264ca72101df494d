"""Kafka brokers as Jolokia sees them (CATALOG §3.1): Yammer metrics `<pkg>:type=<Class>,name=<Metric>
[,tags]` (KafkaMetricsGroup); gauges expose `Value`, meters `Count`, `MeanRate`, `OneMinuteRate`,
`FiveMinuteRate`, `FifteenMinuteRate`. `kafka.server:type=ReplicaManager,name=<gauge|meter>`,
`kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica` (long),
`kafka.controller:type=KafkaController,name=ActiveControllerCount` (0/1), `…,name=OfflinePartitionsCount`.
A broker runs no Connect worker or consumer: the MM2, Replicator and consumer reads answer 404.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokerscope.simulate.jolokia import MBean, written_props
from brokerscope.simulate.model import Member, Span


def yammer(domain: str, type_: str, name: str, **tags: str) -> str:
    return f"{domain}:type={type_},name={name}" + "".join(f",{k}={v}" for k, v in tags.items())


def gauge(value: float) -> dict:
    return {"Value": value}


def meter(count: int, one_minute_rate: float) -> dict:
    mean = round(count / 3600.0, 4)
    return {
        "Count": count,
        "MeanRate": mean,
        "OneMinuteRate": one_minute_rate,
        "FiveMinuteRate": round(one_minute_rate / 5, 4),
        "FifteenMinuteRate": round(one_minute_rate / 15, 4),
    }


@dataclass
class BrokerMetrics:
    controller: int
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0
    leaders: int = 13
    partitions: int = 40
    shrinks: tuple[int, float] = (4, 0.0)  # (Count, OneMinuteRate)
    expands: tuple[int, float] = (4, 0.0)
    max_lag: int = 0
    offline_partitions: int = 0


def broker_mbeans(b: BrokerMetrics) -> dict[str, dict]:
    """Registered name (as Kafka writes it) → attributes."""
    rm = lambda name: yammer("kafka.server", "ReplicaManager", name)  # noqa: E731
    return {
        rm("UnderReplicatedPartitions"): gauge(b.under_replicated),
        rm("UnderMinIsrPartitionCount"): gauge(b.under_min_isr),
        rm("AtMinIsrPartitionCount"): gauge(b.at_min_isr),
        rm("OfflineReplicaCount"): gauge(0),
        rm("LeaderCount"): gauge(b.leaders),
        rm("PartitionCount"): gauge(b.partitions),
        rm("ReassigningPartitions"): gauge(0),
        rm("IsrShrinksPerSec"): meter(*b.shrinks),
        rm("IsrExpandsPerSec"): meter(*b.expands),
        rm("FailedIsrUpdatesPerSec"): meter(0, 0.0),
        yammer("kafka.server", "ReplicaFetcherManager", "MaxLag", clientId="Replica"): gauge(b.max_lag),
        yammer("kafka.controller", "KafkaController", "ActiveControllerCount"): gauge(b.controller),
        yammer("kafka.controller", "KafkaController", "OfflinePartitionsCount"): gauge(b.offline_partitions),
    }


def as_registry(mbeans: dict[str, dict]) -> list[MBean]:
    """Registered names → MBeans (properties in the order written)."""
    return [MBean(name.split(":", 1)[0], written_props(name), attrs) for name, attrs in mbeans.items()]


def value_at(series: list[tuple[Span, int]], t: float) -> int:
    """facts series [(span, value), …] → the value at t (0 outside every span)."""
    return next((v for s, v in series if s.holds(t)), 0)


def metrics_at(member: Member, t: float) -> BrokerMetrics:
    """A broker's metrics at t from its facts: `urp` / `under_min_isr` / `max_lag` / `offline` are
    [(span, value)] series; ISR shrinks counted once per span that began before t."""
    urp = value_at(member.facts.get("urp", []), t)
    shrinks = sum(v for s, v in member.facts.get("urp", []) if s.start <= t)
    return BrokerMetrics(
        controller=int(member.is_active(t)),
        under_replicated=urp,
        under_min_isr=value_at(member.facts.get("under_min_isr", []), t),
        at_min_isr=urp,
        leaders=member.facts.get("leaders", 13),
        shrinks=(4 + shrinks, round(shrinks / 60.0, 3)),
        max_lag=value_at(member.facts.get("max_lag", []), t),
        offline_partitions=value_at(member.facts.get("offline", []), t) if member.is_active(t) else 0,
    )


def registry(member: Member, t: float) -> list[MBean]:
    """A broker's Yammer metrics; a Connect worker (facts `replicator`) has only Replicator's."""
    if "replicator" in member.facts:
        return replicator_registry(member, t)
    return as_registry(broker_mbeans(metrics_at(member, t)))


# --- Confluent Replicator on a Connect worker (CATALOG §3.4) -------------------------------------------
# `confluent.replicator:type=confluent-replicator-task-metrics` with the four keys CATALOG gives as
# likely (`confluent-replicator-name`, `-task`, `-topic-name`, `-task-topic-partition`; UNVERIFIED),
# numeric `…-message-lag` (messages produced to the origin not yet replicated), `…-latency` (ms),
# `…-throughput` (messages/s; name UNVERIFIED), `…-byte-throughput`, and the string attributes.

REPLICATOR_TP = "confluent-replicator-task-topic-partition-"


@dataclass(frozen=True)
class ReplicatorFlow:
    """Origin producing `rate` messages/s per partition; replication stalls during `stall`, then
    catches up at 3× the rate (lag shrinking by 2× the rate) until it is back at zero."""

    rate: float
    stall: Span
    partitions: tuple[tuple[str, int], ...] = (("orders", 0), ("orders", 1))

    def lag(self, t: float) -> float:
        s = self.stall
        if t < s.start:
            return 0.0
        if t < s.end:
            return self.rate * (t - s.start)
        return max(0.0, self.rate * (s.end - s.start) - 2 * self.rate * (t - s.end))

    def throughput(self, t: float) -> float:
        if self.stall.holds(t):
            return 0.0
        return 3 * self.rate if t >= self.stall.end and self.lag(t) > 0 else self.rate

    def lag_s(self, t: float) -> float:
        """Lag in time: the origin's log end grows at `rate`, so lag / rate."""
        return self.lag(t) / self.rate

    def over(self, threshold_s: float) -> Span:
        """When lag_s exceeds the threshold: from stall start + threshold until the catch-up brings it back."""
        s = self.stall
        return Span(s.start + threshold_s, s.end + (s.end - s.start - threshold_s) / 2)


def replicator_mbean(task: str, topic: str, partition: int, lag: float, latency_ms: float,
                     throughput: float) -> tuple[str, dict]:
    """(registered name, attributes) of one Replicator task-topic-partition."""
    name = (f"confluent.replicator:type=confluent-replicator-task-metrics,"
            f"confluent-replicator-name=replicator-dc1-dc2,confluent-replicator-task={task},"
            f"confluent-replicator-topic-name={topic},confluent-replicator-task-topic-partition={partition}")
    return name, {
        REPLICATOR_TP + "message-lag": lag,
        REPLICATOR_TP + "latency": latency_ms,
        REPLICATOR_TP + "throughput": throughput,
        REPLICATOR_TP + "byte-throughput": throughput * 1024,
        "confluent-replicator-source-cluster": "dc1",
        "confluent-replicator-destination-cluster": "dc2",
        "confluent-replicator-destination-topic-name": topic,
    }


def replicator_registry(member: Member, t: float) -> list[MBean]:
    flow: ReplicatorFlow = member.facts["replicator"]
    return as_registry(dict(
        replicator_mbean(str(task), topic, partition, float(round(flow.lag(t))), round(flow.lag_s(t) * 1000 + 35.0, 1),
                         flow.throughput(t))
        for task, (topic, partition) in enumerate(flow.partitions)))
