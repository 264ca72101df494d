"""Prometheus exporter: the current HA state on `/metrics`, for the Grafana people already have.

Names follow what jmx_exporter users know: one `brokerscope_` prefix, base units (`_seconds`,
plain counts of messages), `_total` for counters, `group`/`broker`/`kind` labels on everything
about a broker (`broker`, not `instance`: Prometheus sets `instance` to the exporter's address).
`broker` is the one label naming a monitored JVM — the target's configured name — on instance,
scrape and GC metrics alike (never `target=`); `brokerscope_build_info` says which brokerscope.
The whole list, with labels, is `METRICS` (the README table is made from it).

Values come from a `StateSnapshot`: the latest silver row per instance (broker_state, its
destinations, its replication facts), the collector's own scrape counters, and the gold findings
that are still open. `brokerscope run` fills it from memory at every scrape (the fast path) and
from gold after every analysis run; `LakehouseState` fills it from the Delta tables alone.

Cardinality is bounded: destination, topic and stuck-message series are capped
(`max_destination_series`, default 50 per metric, the largest values kept); the rest of each
instance is folded into one series with `destination="other"` (summed counts, the largest age).
Every other label takes values from the config (targets, groups) or a closed set (roles, codes).
"""

from __future__ import annotations

import logging
import platform
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from importlib.metadata import PackageNotFoundError, version
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector as PromCollector

from alerts.finding_counts import FindingTallies
from alerts.rules import split_brain  # the one "active runs overlap" test, shared with the SplitBrain rule
from collectors.packs import PACKS
from lakehouse.tables import BROKER_STATE

log = logging.getLogger("brokerscope.exporter")

OTHER = "other"  # the label value of folded series (as kube-state-metrics and jmx_exporter users expect a plain word)
DEFAULT_MAX_DESTINATION_SERIES = 50
GC_MAX_WINDOW = timedelta(minutes=10)  # brokerscope_gc_pause_max_seconds looks back this far
RECENT_DAYS = 1  # LakehouseState reads silver partitions of today and this many days before

INSTANCE = ("group", "broker", "kind")  # not `instance`: Prometheus sets that to the exporter's address
GROUP = ("group", "kind")
TARGET = ("broker", "kind", "group")  # scrape metrics: `broker` is the target's configured name, as on INSTANCE
DESTINATION = ("group", "broker", "kind", "destination", "type")
LAG = ("group", "broker", "kind", "flow", "source_cluster", "target_cluster", "topic", "partition", "client")

# name → (type, labels, help); the single source of the documentation table
METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "brokerscope_instance_reachable": ("gauge", INSTANCE, "1 when the instance answered its last scrape with usable JSON"),
    "brokerscope_instance_active": ("gauge", INSTANCE, "1 when serving as live/master/controller at its last scrape, 0 when not; absent while unknown (no answer)"),
    "brokerscope_instance_role": ("gauge", INSTANCE + ("role",), "always 1; `role` is the kind's name for the role at the last scrape (master, slave, live, backup, controller, broker, starting, unknown)"),
    "brokerscope_instance_replica_sync": ("gauge", INSTANCE, "1 when the backup is in sync with its live (Artemis ReplicaSync); absent where not reported"),
    "brokerscope_instance_uptime_seconds": ("gauge", INSTANCE, "broker uptime as reported"),
    "brokerscope_instance_connections": ("gauge", INSTANCE, "current client connections"),
    "brokerscope_instance_consumers": ("gauge", INSTANCE, "current consumers"),
    "brokerscope_instance_messages": ("gauge", INSTANCE, "messages currently held by the broker"),
    "brokerscope_instance_messages_enqueued_total": ("counter", INSTANCE, "messages enqueued since the broker started (resets with it)"),
    "brokerscope_instance_messages_dequeued_total": ("counter", INSTANCE, "messages dequeued since the broker started (resets with it)"),
    "brokerscope_instance_last_observation_timestamp_seconds": ("gauge", INSTANCE, "when the instance was last scraped (answer or not)"),
    "brokerscope_group_instances": ("gauge", GROUP, "instances of the group seen by the collector"),
    "brokerscope_group_active_instances": ("gauge", GROUP, "instances observed active at their last scrape"),
    "brokerscope_group_unknown_instances": ("gauge", GROUP, "instances whose last scrape got no answer (state unknown, not 'down')"),
    "brokerscope_group_no_active_instance": ("gauge", GROUP, "1 when no instance of the group was observed active at its last scrape: an outage, or all unknown"),
    "brokerscope_group_split_brain": ("gauge", GROUP, "1 when two instances of a live/backup group are active with overlapping observations (never for WebLogic clusters, active by design)"),
    "brokerscope_group_failovers_total": ("counter", GROUP, "failovers reconstructed by the analysis (gold failover_events, event_type failover; distinct events seen by this process)"),
    "brokerscope_group_last_failover_timestamp_seconds": ("gauge", GROUP, "when the last reconstructed failover's new live was first seen active"),
    "brokerscope_group_last_failover_outage_seconds": ("gauge", GROUP, "the last failover's outage, upper bound (no instance active at most this long)"),
    "brokerscope_group_split_brain_windows_total": ("counter", GROUP, "split-brain windows reconstructed by the analysis (gold split_brain_windows; distinct windows seen by this process)"),
    "brokerscope_destination_messages": ("gauge", DESTINATION, "messages on the destination (capped series, see `destination=\"other\"`)"),
    "brokerscope_destination_consumers": ("gauge", DESTINATION, "consumers of the destination (capped series)"),
    "brokerscope_destination_oldest_message_age_seconds": ("gauge", DESTINATION, "age of the oldest message where the broker reports it (Artemis FirstMessageAge; capped series)"),
    "brokerscope_stuck_messages": ("gauge", ("group", "broker", "kind", "destination", "code", "severity"), "messages held by an open stuck-messages finding (gold stuck_messages; capped series)"),
    "brokerscope_stuck_age_seconds": ("gauge", ("group", "broker", "kind", "destination", "code", "severity"), "how long they have been stuck, at least"),
    "brokerscope_replication_lag_messages": ("gauge", LAG, "replication / consumer lag in messages at the last evaluation (gold replication_lag; capped series)"),
    "brokerscope_replication_lag_seconds": ("gauge", LAG, "replication / consumer lag in time (gold replication_lag; absent where nothing supports a value)"),
    "brokerscope_kafka_under_replicated_partitions": ("gauge", INSTANCE, "Kafka UnderReplicatedPartitions at the last scrape"),
    "brokerscope_kafka_under_min_isr_partitions": ("gauge", INSTANCE, "Kafka UnderMinIsrPartitionCount at the last scrape"),
    "brokerscope_kafka_offline_partitions": ("gauge", INSTANCE, "Kafka OfflinePartitionsCount at the last scrape (controller)"),
    "brokerscope_kafka_active_controllers": ("gauge", INSTANCE, "Kafka ActiveControllerCount reported by the broker at the last scrape"),
    "brokerscope_zookeeper_quorum": ("gauge", ("ensemble", "status"), "1 for the ensemble's current quorum status (present, election, lost, unknown), 0 for the others (gold zk_quorum)"),
    "brokerscope_zookeeper_voters": ("gauge", ("ensemble",), "voting members of the ensemble"),
    "brokerscope_zookeeper_bare_majority": ("gauge", ("ensemble",), "1 when exactly a majority is in quorum: one more loss loses it"),
    "brokerscope_zookeeper_server_serving": ("gauge", ("ensemble", "server", "state"), "1 when the server serves clients at its last round (silver zk_server_state); `state` is leader, follower, …"),
    "brokerscope_gc_pause_seconds": ("summary", ("broker", "group"), "stop-the-world GC pauses read from the JVM's GC log (count and sum over the history in gc_events)"),
    "brokerscope_gc_pause_max_seconds": ("gauge", ("broker", "group"), "longest stop-the-world pause in the last 10 minutes of GC log"),
    "brokerscope_gc_findings_total": ("counter", ("broker", "group", "code", "severity"), "GC findings (gold gc_findings; distinct findings seen by this process), e.g. code gc.pause-over-third-session"),
    "brokerscope_scrape_duration_seconds": ("gauge", TARGET, "duration of the target's last scrape (as jmx_exporter's jmx_scrape_duration_seconds)"),
    "brokerscope_target_clock_skew_seconds": ("gauge", TARGET, "the broker's clock minus the collector's, estimated from Jolokia's answer timestamps (silver collector_health.clock_skew_s)"),
    "brokerscope_scrape_up": ("gauge", TARGET, "1 when the target's last scrape got an answer"),
    "brokerscope_scrapes_total": ("counter", TARGET, "scrapes of the target since the service started"),
    "brokerscope_scrape_errors_total": ("counter", TARGET, "scrapes without answer since the service started"),
    "brokerscope_scrape_last_success_timestamp_seconds": ("gauge", TARGET, "when the target last answered"),
    "brokerscope_build_info": ("gauge", ("version", "python_version"), "always 1; the running brokerscope's version and Python's (as prometheus_build_info)"),
    "brokerscope_analysis_runs_total": ("counter", (), "incremental Spark analysis runs of this service"),
    "brokerscope_analysis_errors_total": ("counter", (), "analysis runs that failed (the service goes on; see its log)"),
    "brokerscope_analysis_duration_seconds": ("gauge", (), "duration of the last analysis run"),
    "brokerscope_analysis_last_success_timestamp_seconds": ("gauge", (), "when the last analysis run finished without error (gold is as fresh as this)"),
    "brokerscope_alert_evaluations_total": ("counter", (), "alert pipeline ticks (one after each scrape, at least one per scrape interval)"),
    "brokerscope_alert_evaluation_errors_total": ("counter", (), "alert pipeline ticks that failed"),
    "brokerscope_alert_evaluation_duration_seconds": ("gauge", (), "duration of the last alert pipeline tick"),
    "brokerscope_exporter_folded_series": ("gauge", ("metric",), "series folded into `other` by the cardinality cap on the last /metrics request"),
}


# --- the state the exporter shows ------------------------------------------------------------------


@dataclass
class StateSnapshot:
    """Everything /metrics shows, as plain rows (contract column names). Empty lists are fine."""

    instances: list[dict] = field(default_factory=list)  # latest broker_state row per instance
    active_since: dict[str, datetime] = field(default_factory=dict)  # instance → first ts of its current active run
    exclusive_kinds: frozenset[str] = field(default_factory=lambda: exclusive_kinds())
    destinations: list[dict] = field(default_factory=list)  # destination_stats of each instance's latest scrape
    replication: list[dict] = field(default_factory=list)  # replication_stats of each instance's latest scrape
    scrapes: list[dict] = field(default_factory=list)  # target, kind, group, scrapes, errors, last_ok, last_elapsed_ms, up
    failovers: list[dict] = field(default_factory=list)  # gold failover_events
    split_brain_windows: list[dict] = field(default_factory=list)
    stuck: list[dict] = field(default_factory=list)  # open gold stuck_messages
    lag: list[dict] = field(default_factory=list)  # latest gold replication_lag row per series
    zk_quorum: list[dict] = field(default_factory=list)  # latest zk_quorum interval per ensemble
    zk_servers: list[dict] = field(default_factory=list)  # latest zk_server_state row per server
    gc_pauses: list[dict] = field(default_factory=list)  # target, group_name, count, sum_ms, max_recent_ms
    gc_findings: list[dict] = field(default_factory=list)  # finding_id, target, group_name, code, severity
    clock_skews: list[dict] = field(default_factory=list)  # latest collector_health clock_skew_s per target
    service: dict[str, float] = field(default_factory=dict)  # brokerscope_analysis_* / brokerscope_alert_* values


def exclusive_kinds() -> frozenset[str]:
    """Kinds where at most one instance of a group should be active (the packs' `exclusive_roles`):
    only there are two active instances a split brain."""

    return frozenset(k for k, p in PACKS.items() if p.exclusive_roles)


class LatestState:
    """The latest silver rows per instance, fed one observation at a time (thread-safe).

    What the collector just saw, normalized as the Spark job does, so alerts and /metrics need not
    wait for a Spark run. A row whose group could not be derived (a waiting ActiveMQ slave without
    a configured `group`) takes the group its instance last derived, as `fill_derived_groups` does.
    """

    def __init__(self, configured_groups: Iterable[str] = ()) -> None:
        self._configured = set(configured_groups)
        self._lock = threading.Lock()
        self._state: dict[str, dict] = {}
        self._active_since: dict[str, datetime] = {}
        self._derived_group: dict[str, str] = {}
        self._uptime: dict[str, int] = {}  # last reported uptime per instance (a restart ends an active run)
        self._destinations: dict[str, list[dict]] = {}
        self._replication: dict[str, list[dict]] = {}

    def observe(self, broker_state: Sequence[dict], destinations: Sequence[dict] = (), replication: Sequence[dict] = ()) -> None:
        """Take the silver rows of one observation (older rows than the stored ones are ignored)."""
        with self._lock:
            for row in broker_state:
                self._observe_state(dict(row))
            for inst in {r["instance"] for r in broker_state}:
                # an unanswered scrape says nothing of destinations: unknown, so none are shown
                for table, rows in ((self._destinations, destinations), (self._replication, replication)):
                    mine = [r for r in rows if r["instance"] == inst]
                    if mine:
                        table[inst] = mine
                    else:
                        table.pop(inst, None)

    def _observe_state(self, row: dict) -> None:
        inst = row["instance"]
        prev = self._state.get(inst)
        if prev is not None and row["ts"] < prev["ts"]:
            return
        group = row["group_name"]
        if group != inst or group in self._configured:
            self._derived_group[inst] = group
        elif inst in self._derived_group:
            row["group_name"] = self._derived_group[inst]
        # an unanswered scrape (active null) keeps the run open: the role was not seen to end
        if row.get("active") is False or _restarted(self._uptime.get(inst), row.get("uptime_ms")):
            self._active_since.pop(inst, None)
        if row.get("active"):
            self._active_since.setdefault(inst, row["ts"])
        if row.get("uptime_ms") is not None:
            self._uptime[inst] = row["uptime_ms"]
        self._state[inst] = row

    def latest(self, instance: str) -> dict | None:
        """The latest broker_state row of one instance (a copy), None before its first scrape."""
        with self._lock:
            row = self._state.get(instance)
            return None if row is None else dict(row)

    def broker_state(self) -> pa.Table:
        """The latest broker_state row of every instance, with the contract schema."""
        with self._lock:
            rows = [dict(r) for r in self._state.values()]
        names = BROKER_STATE.column_names
        return pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows], schema=BROKER_STATE.schema)

    def fill(self, snap: StateSnapshot) -> StateSnapshot:
        """Put the live rows into `snap` (instances, active runs, destinations, replication)."""
        with self._lock:
            snap.instances = [dict(r) for r in self._state.values()]
            snap.active_since = dict(self._active_since)
            snap.destinations = [r for rows in self._destinations.values() for r in rows]
            snap.replication = [r for rows in self._replication.values() for r in rows]
        return snap


def _restarted(last_uptime_ms: int | None, uptime_ms: int | None) -> bool:
    """Uptime went back: a new JVM, so a new active run even without an inactive scrape between."""
    return last_uptime_ms is not None and uptime_ms is not None and uptime_ms < last_uptime_ms


# --- gold/silver rows from the lakehouse -----------------------------------------------------------


def latest_rows(t: pa.Table, keys: Sequence[str], ts_col: str) -> list[dict]:
    """The row with the largest `ts_col` per key (ties: the last one)."""
    out: dict[tuple, dict] = {}
    for r in t.sort_by([(ts_col, "ascending")]).to_pylist():
        out[tuple(r[k] for k in keys)] = r
    return list(out.values())


def gold_rows(lh, now: datetime, target_groups: Mapping[str, str | None] | None = None) -> dict[str, list[dict]]:
    """The StateSnapshot fields that come from gold (and ZooKeeper/GC silver) tables; missing
    tables give empty lists. Read with delta-rs, no JVM. `target_groups`: target → configured
    group, for the GC metrics (default: the groups gc_findings name)."""
    def read(name: str, columns: Sequence[str] | None = None, filter: str | None = None) -> pa.Table | None:
        return lh.read(name, columns=columns, filter=filter) if lh.exists(name) else None

    out: dict[str, list[dict]] = {}
    since = _date_filter(now)
    t = read("failover_events", ["event_id", "group_name", "kind", "event_type", "new_first_active", "outage_upper_s"])
    out["failovers"] = [] if t is None else t.to_pylist()
    t = read("split_brain_windows", ["group_name", "kind", "window_id"])
    out["split_brain_windows"] = [] if t is None else t.to_pylist()
    t = read("stuck_messages", filter="is_open = true")
    out["stuck"] = [] if t is None else t.to_pylist()
    t = read("replication_lag", filter=since)
    out["lag"] = [] if t is None else latest_rows(t, ("group_name", "instance", "flow", "source_cluster", "target_cluster", "topic", "partition", "client"), "ts")
    t = read("zk_quorum")
    out["zk_quorum"] = [] if t is None else latest_rows(t, ("ensemble",), "start_ts")
    t = read("zk_server_state", ["ensemble", "instance", "ts", "serving", "state"], filter=since)
    out["zk_servers"] = [] if t is None else latest_rows(t, ("ensemble", "instance"), "ts")
    t = read("gc_events", ["target", "wall_time", "pause_ms"])
    out["gc_pauses"] = [] if t is None else gc_pause_rows(t, now, target_groups if target_groups is not None else _groups_of(lh))
    t = read("gc_findings", ["finding_id", "target", "group_name", "code", "severity"])
    out["gc_findings"] = [] if t is None else t.to_pylist()
    t = read("collector_health", ["target", "kind", "group_name", "ts", "clock_skew_s"], filter=since)
    out["clock_skews"] = [] if t is None else latest_rows(t.filter(pc.is_valid(t["clock_skew_s"])), ("target",), "ts")
    return out


def _date_filter(now: datetime) -> str:
    first = (now - timedelta(days=RECENT_DAYS)).strftime("%Y-%m-%d")
    return f"obs_date >= '{first}'"


def _groups_of(lh) -> dict[str, str | None]:
    """target → group of the GC findings (gc_events has no group column)."""
    if not lh.exists("gc_findings"):
        return {}
    return {r["target"]: r["group_name"] for r in lh.read("gc_findings", ["target", "group_name"]).to_pylist()}


def gc_pause_rows(events: pa.Table, now: datetime, groups: Mapping[str, str | None]) -> list[dict]:
    """Per target: pause count and sum over all events, and the longest pause in GC_MAX_WINDOW."""
    pauses = events.filter(pc.is_valid(events["pause_ms"]))
    totals = pauses.group_by("target", use_threads=False).aggregate([("pause_ms", "count"), ("pause_ms", "sum")]).to_pylist()
    recent = pauses.filter(pc.greater_equal(pauses["wall_time"], pa.scalar(now - GC_MAX_WINDOW, type=pauses["wall_time"].type)))
    maxima = {r["target"]: r["pause_ms_max"] for r in recent.group_by("target", use_threads=False).aggregate([("pause_ms", "max")]).to_pylist()}
    return [
        {"target": r["target"], "group_name": groups.get(r["target"]), "count": r["pause_ms_count"],
         "sum_ms": r["pause_ms_sum"], "max_recent_ms": maxima.get(r["target"])}
        for r in totals
    ]


class LakehouseState:
    """A StateSnapshot from the Delta tables alone (no service running): the latest silver rows of
    the last day, and gold. Split brain is judged from the stored observations the same way."""

    def __init__(self, lakehouse, clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        self.lakehouse = lakehouse
        self.clock = clock

    def __call__(self) -> StateSnapshot:
        now = self.clock()
        snap = StateSnapshot()
        live = LatestState()
        since = _date_filter(now)
        lh = self.lakehouse
        if lh.exists("broker_state"):
            state = lh.read("broker_state", filter=since).sort_by([("ts", "ascending")])
            latest_ts = {r["instance"]: r["ts"] for r in latest_rows(state, ("instance",), "ts")}
            dest = lh.read("destination_stats", filter=since).to_pylist() if lh.exists("destination_stats") else []
            repl = lh.read("replication_stats", filter=since).to_pylist() if lh.exists("replication_stats") else []
            live.observe(
                state.to_pylist(),
                [r for r in dest if r["ts"] == latest_ts.get(r["instance"])],
                [r for r in repl if r["ts"] == latest_ts.get(r["instance"])],
            )
        live.fill(snap)
        if lh.exists("collector_health"):
            snap.scrapes = scrape_rows_from_health(lh.read("collector_health", filter=since))
        for k, v in gold_rows(lh, now).items():
            setattr(snap, k, v)
        return snap


def scrape_rows_from_health(health: pa.Table) -> list[dict]:
    """Scrape counters per target from silver collector_health, counted over the rows read (the
    last day: the counters restart when a day leaves the window, which Prometheus' rate() takes
    as a reset)."""
    out = []
    for r in latest_rows(health, ("target",), "ts"):
        mine = health.filter(pc.equal(health["target"], r["target"]))
        ok = mine.filter(mine["answered"])
        out.append({
            "target": r["target"], "kind": r["kind"], "group": r["group_name"],
            "scrapes": mine.num_rows, "errors": mine.num_rows - ok.num_rows,
            "last_ok": _epoch(pc.max(ok["ts"]).as_py()) if ok.num_rows else None,
            "last_elapsed_ms": r["elapsed_ms"], "up": r["answered"],
        })
    return out


# --- state → metric families (pure) --------------------------------------------------------------


def family(name: str, labels_values: Iterable[tuple[Sequence[str], float]]) -> Metric:
    """A gauge or counter family from METRICS, with (label values, value) samples."""
    kind, labels, help_text = METRICS[name]
    if kind == "counter":
        fam = CounterMetricFamily(name.removesuffix("_total"), help_text, labels=list(labels))
    else:
        fam = GaugeMetricFamily(name, help_text, labels=list(labels))
    for values, v in labels_values:
        if v is not None:
            fam.add_metric([_label(x) for x in values], float(v))
    return fam


def _label(v) -> str:
    return "" if v is None else str(v)


def _epoch(ts: datetime | None) -> float | None:
    return None if ts is None else ts.timestamp()


def _bool(v) -> float | None:
    return None if v is None else float(bool(v))


def instance_families(instances: list[dict]) -> list[Metric]:
    key = lambda r: (r["group_name"], r["instance"], r["kind"])  # noqa: E731
    per_column = {
        "brokerscope_instance_reachable": lambda r: _bool(r["reachable"]),
        "brokerscope_instance_active": lambda r: _bool(r.get("active")),
        "brokerscope_instance_replica_sync": lambda r: _bool(r.get("replica_sync")),
        "brokerscope_instance_uptime_seconds": lambda r: None if r.get("uptime_ms") is None else r["uptime_ms"] / 1000,
        "brokerscope_instance_connections": lambda r: r.get("connections"),
        "brokerscope_instance_consumers": lambda r: r.get("consumers"),
        "brokerscope_instance_messages": lambda r: r.get("total_messages"),
        "brokerscope_instance_messages_enqueued_total": lambda r: r.get("total_enqueued"),
        "brokerscope_instance_messages_dequeued_total": lambda r: r.get("total_dequeued"),
        "brokerscope_instance_last_observation_timestamp_seconds": lambda r: _epoch(r["ts"]),
    }
    fams = [family(name, ((key(r), value(r)) for r in instances)) for name, value in per_column.items()]
    fams.append(family("brokerscope_instance_role", ((key(r) + (r.get("role") or "unknown",), 1) for r in instances)))
    return fams


def group_families(snap: StateSnapshot, tallies: FindingTallies) -> list[Metric]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in snap.instances:
        groups.setdefault((r["group_name"], r["kind"]), []).append(r)
    counts = {g: (len(rs), [r for r in rs if r.get("active")], sum(1 for r in rs if r.get("active") is None)) for g, rs in groups.items()}
    fams = [
        family("brokerscope_group_instances", ((g, n) for g, (n, _, _) in counts.items())),
        family("brokerscope_group_active_instances", ((g, len(a)) for g, (_, a, _) in counts.items())),
        family("brokerscope_group_unknown_instances", ((g, u) for g, (_, _, u) in counts.items())),
        family("brokerscope_group_no_active_instance", ((g, int(not a)) for g, (_, a, _) in counts.items())),
        family("brokerscope_group_split_brain", (
            (g, int(split_brain(a, snap.active_since))) for g, (_, a, _) in counts.items() if g[1] in snap.exclusive_kinds)),
    ]
    failovers = [f for f in snap.failovers if f["event_type"] == "failover"]
    by_group = lambda r: (r["group_name"], r["kind"])  # noqa: E731
    fams.append(family("brokerscope_group_failovers_total",
                       tallies["brokerscope_group_failovers_total"].count(failovers, by_group, "event_id")))
    last: dict[tuple, dict] = {}
    for f in sorted(failovers, key=lambda f: f["new_first_active"]):
        last[(f["group_name"], f["kind"])] = f
    fams.append(family("brokerscope_group_last_failover_timestamp_seconds", ((g, _epoch(f["new_first_active"])) for g, f in last.items())))
    fams.append(family("brokerscope_group_last_failover_outage_seconds", ((g, f["outage_upper_s"]) for g, f in last.items())))
    fams.append(family("brokerscope_group_split_brain_windows_total", tallies["brokerscope_group_split_brain_windows_total"].count(
        snap.split_brain_windows, by_group, "window_id")))
    return fams


def kept_series(rows: list[dict], key: Callable[[dict], tuple], rank: Callable[[dict], float | None], limit: int) -> set[tuple]:
    """The label sets of the `limit` rows ranking highest (a destination's backlog, a partition's
    lag): one choice for all metrics of a kind, so a destination is shown whole or folded whole."""
    ranked = sorted(rows, key=lambda r: -1.0 if rank(r) is None else float(rank(r)), reverse=True)
    return {key(r) for r in ranked[:limit]}


def fold_labels(labels: tuple, positions: Sequence[int]) -> tuple:
    """The `other` series a folded series goes into: the first user-controlled label becomes
    `other`, the others ''."""
    out = list(labels)
    for i, p in enumerate(positions):
        out[p] = OTHER if i == 0 else ""
    return tuple(out)


def capped_families(
    rows: list[dict], key: Callable[[dict], tuple], kept: set[tuple], positions: Sequence[int],
    metrics: Sequence[tuple[str, Callable[[dict], float | None], Callable[[float, float], float]]],
    folded: dict[str, int],
) -> list[Metric]:
    """Families over rows with user-controlled labels (at `positions`): rows outside `kept` are
    folded into their `other` series, values combined with the metric's own function (sum of
    counts, largest age)."""
    out = []
    for name, value, combine in metrics:
        samples: dict[tuple, float] = {}
        n = 0
        for r in rows:
            v = value(r)
            if v is None:
                continue
            labels = key(r)
            if labels not in kept:
                labels, n = fold_labels(labels, positions), n + 1
                if labels in samples:
                    v = combine(samples[labels], v)
            samples[labels] = v
        folded[name] = n
        out.append(family(name, samples.items()))
    return out


def _sum(a: float, b: float) -> float:
    return a + b


def destination_families(snap: StateSnapshot, limit: int, folded: dict[str, int]) -> list[Metric]:
    key = lambda r: (r["group_name"], r["instance"], r["kind"], r["destination"], r["destination_type"])  # noqa: E731
    rows = snap.destinations
    kept = kept_series(rows, key, lambda r: r.get("messages"), limit)
    age = lambda r: None if r.get("oldest_message_age_ms") is None else r["oldest_message_age_ms"] / 1000  # noqa: E731
    return capped_families(rows, key, kept, (3, 4), (
        ("brokerscope_destination_messages", lambda r: r.get("messages"), _sum),
        ("brokerscope_destination_consumers", lambda r: r.get("consumers"), _sum),
        ("brokerscope_destination_oldest_message_age_seconds", age, max),
    ), folded)


def stuck_families(snap: StateSnapshot, limit: int, folded: dict[str, int]) -> list[Metric]:
    key = lambda r: (r["group_name"], r["instance"], r["kind"], r["destination"], r["code"], r["severity"])  # noqa: E731
    kept = kept_series(snap.stuck, key, lambda r: r.get("messages"), limit)
    return capped_families(snap.stuck, key, kept, (3,), (
        ("brokerscope_stuck_messages", lambda r: r.get("messages"), _sum),
        ("brokerscope_stuck_age_seconds", lambda r: r.get("stuck_for_s"), max),
    ), folded)


def lag_families(snap: StateSnapshot, limit: int, folded: dict[str, int]) -> list[Metric]:
    key = lambda r: (r["group_name"], r["instance"], r["kind"], r["flow"], r["source_cluster"], r["target_cluster"], r["topic"], r["partition"], r["client"])  # noqa: E731
    kept = kept_series(snap.lag, key, lambda r: r.get("lag_s") if r.get("lag_s") is not None else r.get("lag_messages"), limit)
    return capped_families(snap.lag, key, kept, (6, 7, 8), (
        ("brokerscope_replication_lag_messages", lambda r: r.get("lag_messages"), _sum),
        ("brokerscope_replication_lag_seconds", lambda r: r.get("lag_s"), max),
    ), folded)


def kafka_families(snap: StateSnapshot) -> list[Metric]:
    isr = [r for r in snap.replication if r["flow"] == "isr"]
    key = lambda r: (r["group_name"], r["instance"], r["kind"])  # noqa: E731
    return [
        family(name, ((key(r), r.get(col)) for r in isr))
        for name, col in (
            ("brokerscope_kafka_under_replicated_partitions", "under_replicated"),
            ("brokerscope_kafka_under_min_isr_partitions", "under_min_isr"),
            ("brokerscope_kafka_offline_partitions", "offline_partitions"),
            ("brokerscope_kafka_active_controllers", "active_controllers"),
        )
    ]


ZK_STATUSES = ("present", "election", "lost", "unknown")


def zookeeper_families(snap: StateSnapshot) -> list[Metric]:
    q = snap.zk_quorum
    return [
        family("brokerscope_zookeeper_quorum", (((r["ensemble"], s), int(r["status"] == s)) for r in q for s in ZK_STATUSES)),
        family("brokerscope_zookeeper_voters", (((r["ensemble"],), r.get("voters")) for r in q)),
        family("brokerscope_zookeeper_bare_majority", (((r["ensemble"],), _bool(r.get("bare_majority"))) for r in q)),
        family("brokerscope_zookeeper_server_serving", (
            ((r["ensemble"], r["instance"], r.get("state") or "unknown"), _bool(r.get("serving"))) for r in snap.zk_servers)),
    ]


def gc_families(snap: StateSnapshot, tallies: FindingTallies) -> list[Metric]:
    _, labels, help_text = METRICS["brokerscope_gc_pause_seconds"]
    summary = SummaryMetricFamily("brokerscope_gc_pause_seconds", help_text, labels=list(labels))
    for r in snap.gc_pauses:
        summary.add_metric([r["target"], _label(r["group_name"])], count_value=r["count"], sum_value=(r["sum_ms"] or 0) / 1000)
    return [
        summary,
        family("brokerscope_gc_pause_max_seconds", (
            ((r["target"], r["group_name"]), r["max_recent_ms"] / 1000) for r in snap.gc_pauses if r["max_recent_ms"] is not None)),
        family("brokerscope_gc_findings_total", tallies["brokerscope_gc_findings_total"].count(
            snap.gc_findings, lambda r: (r["target"], r["group_name"], r["code"], r["severity"]), "finding_id")),
    ]


def scrape_families(snap: StateSnapshot) -> list[Metric]:
    key = lambda r: (r["target"], r["kind"], r["group"])  # noqa: E731
    rows = snap.scrapes
    return [
        family("brokerscope_scrape_duration_seconds", ((key(r), None if r.get("last_elapsed_ms") is None else r["last_elapsed_ms"] / 1000) for r in rows)),
        family("brokerscope_scrape_up", ((key(r), _bool(r.get("up"))) for r in rows)),
        family("brokerscope_scrapes_total", ((key(r), r["scrapes"]) for r in rows)),
        family("brokerscope_scrape_errors_total", ((key(r), r["errors"]) for r in rows)),
        family("brokerscope_scrape_last_success_timestamp_seconds", ((key(r), r.get("last_ok")) for r in rows)),
        family("brokerscope_target_clock_skew_seconds", (
            ((r["target"], r["kind"], r["group_name"]), r["clock_skew_s"]) for r in snap.clock_skews)),
    ]


def service_families(snap: StateSnapshot) -> list[Metric]:
    return [family(name, [((), v)]) for name, v in snap.service.items() if name in METRICS]


def metric_families(snap: StateSnapshot, max_destination_series: int = DEFAULT_MAX_DESTINATION_SERIES,
                    tallies: FindingTallies | None = None) -> list[Metric]:
    """Every brokerscope_ family for one snapshot. Families without samples are left out. `tallies`:
    the finding counters of a long-lived exporter (alerts/finding_counts.py); a fresh one counts
    the findings in the snapshot."""
    tallies = tallies if tallies is not None else FindingTallies()
    folded: dict[str, int] = {}
    fams = (
        instance_families(snap.instances)
        + group_families(snap, tallies)
        + destination_families(snap, max_destination_series, folded)
        + stuck_families(snap, max_destination_series, folded)
        + lag_families(snap, max_destination_series, folded)
        + kafka_families(snap)
        + zookeeper_families(snap)
        + gc_families(snap, tallies)
        + scrape_families(snap)
        + service_families(snap)
    )
    fams.append(family("brokerscope_exporter_folded_series", (((name,), n) for name, n in folded.items() if n)))
    fams.append(family("brokerscope_build_info", [((brokerscope_version(), platform.python_version()), 1)]))
    return [f for f in fams if f.samples]


def brokerscope_version() -> str:
    try:
        return version("brokerscope")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


# --- serving -------------------------------------------------------------------------------------


class SnapshotCollector(PromCollector):
    """prometheus-client collector: builds the families from a fresh snapshot at every request."""

    def __init__(self, snapshot: Callable[[], StateSnapshot], max_destination_series: int = DEFAULT_MAX_DESTINATION_SERIES) -> None:
        if max_destination_series < 1:
            raise ValueError(f"max_destination_series must be at least 1 (got {max_destination_series})")
        self.snapshot = snapshot
        self.max_destination_series = max_destination_series
        self.tallies = FindingTallies()  # the finding counters only go up for the life of this collector

    def collect(self) -> Iterator[Metric]:
        try:
            snap = self.snapshot()
        except Exception as e:  # a failed read must not take /metrics down: Prometheus' own `up` stays 1
            log.error("reading the state for /metrics failed: %s", e)
            return iter(())
        return iter(metric_families(snap, self.max_destination_series, self.tallies))


def metrics_table_markdown() -> str:
    """The documentation table of every metric (README section)."""
    lines = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for name, (kind, labels, help_text) in METRICS.items():
        lines.append(f"| `{name}` | {kind} | {', '.join(f'`{x}`' for x in labels) or '—'} | {help_text.replace('|', '/')} |")
    return "\n".join(lines) + "\n"

