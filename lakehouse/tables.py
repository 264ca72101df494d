"""Table contracts: the only interface between brokerscope's parts.

Collectors write bronze, Spark jobs turn bronze into silver facts and gold findings, alerts and
dashboards read gold. Every table is declared here once — name, layer, columns with types and
meaning, the key that makes a row unique (dedup / idempotent rewrite) and the partitioning.
`brokerscope tables` prints this catalogue; docs/TABLES.md is generated from it.

Times are UTC, microsecond timestamps (`timestamp[us, tz=UTC]`). An observation is a point in
time; intervals carry bounds (last seen before / first seen after) rather than guesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    nullable: bool = True


@dataclass(frozen=True)
class TableContract:
    name: str
    layer: str  # bronze | silver | gold
    doc: str
    columns: tuple[Column, ...]
    keys: tuple[str, ...]
    partition_by: tuple[str, ...] = ()
    written_by: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in self.columns])

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def spark_schema(self):
        """The contract as a Spark StructType (pyspark imported lazily: collectors need no JVM)."""
        from pyspark.sql.types import StructField, StructType

        return StructType([StructField(c.name, spark_type(c.type), c.nullable) for c in self.columns])

    def markdown(self) -> str:
        lines = [
            f"### `{self.name}` ({self.layer})",
            "",
            self.doc,
            "",
            f"Key: `{', '.join(self.keys)}`"
            + (f" · partitioned by `{', '.join(self.partition_by)}`" if self.partition_by else "")
            + (f" · written by `{self.written_by}`" if self.written_by else ""),
            "",
            "| column | type | meaning |",
            "|---|---|---|",
        ]
        for c in self.columns:
            doc = c.doc.replace("|", "\\|")  # a bare | would split the Markdown cell
            lines.append(f"| `{c.name}` | `{c.type}`{'' if c.nullable else ' not null'} | {doc} |")
        return "\n".join(lines) + "\n"


def spark_type(t: pa.DataType):
    """Arrow → Spark type for the types contracts use."""
    from pyspark.sql import types as T

    if pa.types.is_timestamp(t):
        return T.TimestampType()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return T.StringType()
    simple = {
        pa.bool_(): T.BooleanType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float64(): T.DoubleType(),
        pa.float32(): T.FloatType(),
        pa.date32(): T.DateType(),
        pa.binary(): T.BinaryType(),
    }
    if t in simple:
        return simple[t]
    if pa.types.is_list(t):
        return T.ArrayType(spark_type(t.value_type))
    raise TypeError(f"no Spark type mapping for Arrow type {t}")


def _c(name: str, type_: pa.DataType, doc: str, nullable: bool = True) -> Column:
    return Column(name, type_, doc, nullable)


# --- bronze: what was observed, raw -------------------------------------------------------------

BRONZE_JOLOKIA = TableContract(
    name="bronze_jolokia",
    layer="bronze",
    doc=(
        "One row per Jolokia exchange (one bulk POST to one target): the request objects sent and "
        "the exact response body, raw. Append-only; parsing improves and is re-run over history. "
        "Live scrapes and `brokerscope replay` of a recording produce identical rows."
    ),
    columns=(
        _c("obs_key", pa.string(), "stable dedup key: sha256 of source, target, ts and request", False),
        _c("ts", TS, "observation time (when the request was sent), UTC, ms precision", False),
        _c("obs_date", pa.string(), "UTC date of `ts` (YYYY-MM-DD), the partition column", False),
        _c("target", pa.string(), "target name from the config", False),
        _c("kind", pa.string(), "broker kind: activemq | artemis | kafka | weblogic | zookeeper", False),
        _c("group_name", pa.string(), "HA group declared in the config (null: derive from data)"),
        _c("url", pa.string(), "Jolokia URL scraped"),
        _c("request_json", pa.string(), "JSON array of the Jolokia request objects sent", False),
        _c("response_json", pa.string(), "exact JSON body returned; null on a transport error"),
        _c("http_status", pa.int32(), "HTTP status of the exchange; null when no HTTP answer"),
        _c("error", pa.string(), "transport/protocol error text (refused, timeout, 401, HTML…); null if OK"),
        _c("error_kind", pa.string(), "machine-readable error class: refused | reset | timeout | auth | forbidden | http | not_json | truncated | tls | other"),
        _c("elapsed_ms", pa.float64(), "round-trip duration of the scrape in ms"),
        _c("collector", pa.string(), "who wrote the row: `collect` (live) or `replay:<file>`"),
    ),
    keys=("obs_key",),
    partition_by=("obs_date",),
    written_by="collectors (brokerscope collect / replay)",
)

# --- silver: normalized facts ------------------------------------------------------------------

BROKER_STATE = TableContract(
    name="broker_state",
    layer="silver",
    doc=(
        "One row per broker instance per observation. `active` is true/false only when the "
        "instance answered; a failed scrape is `reachable=false, active=null` — indeterminate, "
        "never 'down'. `role` is the kind-specific name (ActiveMQ: master/slave, Artemis: "
        "live/backup), `unknown` when not answering."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation this row came from", False),
        _c("ts", TS, "observation time", False),
        _c("obs_date", pa.string(), "UTC date of ts, the partition column", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group (config, else derived: ActiveMQ store / Artemis NodeID)", False),
        _c("instance", pa.string(), "broker instance = target name (one JVM)", False),
        _c("broker_name", pa.string(), "broker name reported by the broker"),
        _c("broker_id", pa.string(), "broker id / NodeID reported by the broker"),
        _c("reachable", pa.bool_(), "the target answered the scrape with usable JSON", False),
        _c("active", pa.bool_(), "serving as live/master; null when unknown (no answer)"),
        _c("role", pa.string(), "master | slave (ActiveMQ), live | backup (Artemis), controller | broker (Kafka: the active controller is the live role), starting | unknown", False),
        _c("backup", pa.bool_(), "configured/runtime backup (Artemis `Backup`); null where the kind has no such flag"),
        _c("replica_sync", pa.bool_(), "backup synchronized with its live (Artemis `ReplicaSync`); null if not reported"),
        _c("node_id", pa.string(), "HA identity the broker reports (Artemis NodeID, shared by live and backup)"),
        _c("activation_sequence", pa.int64(), "local activation sequence (Artemis ≥2.18)"),
        _c("ha_policy", pa.string(), "configured HA policy as reported (Artemis `HAPolicy`)"),
        _c("uptime_ms", pa.int64(), "broker uptime in ms as reported"),
        _c("connections", pa.int64(), "current client connections"),
        _c("total_enqueued", pa.int64(), "messages enqueued since broker start"),
        _c("total_dequeued", pa.int64(), "messages dequeued since broker start"),
        _c("total_messages", pa.int64(), "messages currently held"),
        _c("consumers", pa.int64(), "current consumers"),
        _c("producers", pa.int64(), "current producers"),
        _c("error", pa.string(), "why the observation is incomplete (transport error or item error)"),
        _c("scrape_ms", pa.float64(), "scrape round-trip in ms"),
    ),
    keys=("obs_key", "instance"),
    partition_by=("obs_date",),
    written_by="lakehouse.jobs.spine (brokerscope analyze)",
)

DESTINATION_STATS = TableContract(
    name="destination_stats",
    layer="silver",
    doc=(
        "One row per destination (queue/topic) per instance per observation, normalized over "
        "broker kinds. Absent on a passive broker (no destination MBeans there)."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation", False),
        _c("ts", TS, "observation time", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "broker instance", False),
        _c("destination", pa.string(), "destination (member) name as reported (user-controlled text)", False),
        _c("logical_destination", pa.string(), "the logical destination a member belongs to (WebLogic distributed destination; else = destination)", False),
        _c("destination_type", pa.string(), "queue | topic | temp-queue | temp-topic", False),
        _c("messages", pa.int64(), "messages currently on the destination (ActiveMQ QueueSize)"),
        _c("consumers", pa.int64(), "current consumers"),
        _c("producers", pa.int64(), "current producers"),
        _c("enqueued", pa.int64(), "messages added since start"),
        _c("dequeued", pa.int64(), "messages acknowledged/removed since start"),
        _c("in_flight", pa.int64(), "dispatched, not yet acknowledged"),
        _c("dispatched", pa.int64(), "dispatched since start"),
        _c("expired", pa.int64(), "expired since start"),
        _c("forwarded", pa.int64(), "forwarded to a networked broker since start"),
        _c("oldest_message_age_ms", pa.int64(), "age of the oldest message where the broker reports it (Artemis FirstMessageAge)"),
        _c("paused", pa.bool_(), "delivery to consumers paused (Artemis `Paused`; WebLogic `ConsumptionPaused` of the member or its JMS server); null if not reported"),
    ),
    keys=("obs_key", "instance", "destination_type", "destination"),
    partition_by=("obs_date",),
    written_by="lakehouse.jobs.spine (brokerscope analyze)",
)

REPLICATION_STATS = TableContract(
    name="replication_stats",
    layer="silver",
    doc=(
        "Replication facts per observation. `flow` says which: `isr` (a Kafka broker's "
        "intra-cluster replica facts: under-replicated / under-min-ISR / at-min-ISR / offline "
        "partitions, ISR shrink/expand rates, follower max lag, active controller count), "
        "`mirrormaker2` and `replicator` (cross-cluster, per topic-partition: lag in messages, "
        "latency, throughput), `mirrormaker2-checkpoint` (offset-sync checkpoint latency per "
        "consumer group), `consumer` (consumer records-lag), `artemis-replica` (a live's "
        "backup sync state). Columns that do not apply to a flow are null."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation", False),
        _c("ts", TS, "observation time", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "cluster / HA group", False),
        _c("instance", pa.string(), "instance that reported it", False),
        _c("flow", pa.string(), "isr | mirrormaker2 | mirrormaker2-checkpoint | replicator | consumer | artemis-replica", False),
        _c("source_cluster", pa.string(), "cross-cluster source (alias)"),
        _c("target_cluster", pa.string(), "cross-cluster destination (alias)"),
        _c("topic", pa.string(), "topic (user-controlled text)"),
        _c("partition", pa.int32(), "partition"),
        _c("client", pa.string(), "client id / consumer group / task"),
        _c("lag_messages", pa.float64(), "lag in messages (records-lag, message-lag, follower lag)"),
        _c("lag_max_messages", pa.float64(), "maximum lag over the metric window"),
        _c("latency_ms", pa.float64(), "replication latency (MM2 replication-latency-ms avg, Replicator latency)"),
        _c("latency_max_ms", pa.float64(), "maximum latency over the metric window"),
        _c("record_age_ms", pa.float64(), "MM2 record-age-ms (age when polled from the source)"),
        _c("throughput_per_s", pa.float64(), "records (or messages) per second"),
        _c("under_replicated", pa.int64(), "Kafka UnderReplicatedPartitions"),
        _c("under_min_isr", pa.int64(), "Kafka UnderMinIsrPartitionCount"),
        _c("at_min_isr", pa.int64(), "Kafka AtMinIsrPartitionCount"),
        _c("offline_partitions", pa.int64(), "Kafka OfflinePartitionsCount (controller)"),
        _c("active_controllers", pa.int64(), "Kafka ActiveControllerCount reported by this broker"),
        _c("isr_shrinks_per_s", pa.float64(), "ISR shrink rate (OneMinuteRate)"),
        _c("isr_expands_per_s", pa.float64(), "ISR expand rate (OneMinuteRate)"),
        _c("in_sync", pa.bool_(), "artemis-replica: backup synchronized (ReplicaSync)"),
        _c("backup_announced", pa.bool_(), "artemis-replica: the live's cluster Topology holds a backup for its NodeID (false: none announced — ReplicaSync=false then means no backup, not a sync in progress); null when the topology cannot tell"),
    ),
    keys=("obs_key", "instance", "flow", "source_cluster", "target_cluster", "topic", "partition", "client"),
    partition_by=("obs_date",),
    written_by="lakehouse.jobs.spine (brokerscope analyze)",
)

COLLECTOR_HEALTH = TableContract(
    name="collector_health",
    layer="silver",
    doc=(
        "How each scrape went, per target and observation, for every kind: answered or not (with "
        "the error class and a message saying what to do), duration, and how many items of the "
        "bulk answer were ok or failed (404/500 items are facts, counted here)."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation", False),
        _c("ts", TS, "observation time", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("target", pa.string(), "target name", False),
        _c("instance", pa.string(), "instance (= target)", False),
        _c("group_name", pa.string(), "configured HA group"),
        _c("answered", pa.bool_(), "a JSON array came back", False),
        _c("error_kind", pa.string(), "refused | reset | timeout | auth | forbidden | http | not_json | truncated | tls | other"),
        _c("error", pa.string(), "what went wrong and what to do"),
        _c("elapsed_ms", pa.float64(), "scrape round-trip"),
        _c("items", pa.int32(), "items in the bulk answer", False),
        _c("items_ok", pa.int32(), "items with status 200", False),
        _c("items_failed", pa.int32(), "items with another status", False),
        _c("item_errors", pa.string(), "distinct item errors, e.g. `404: …InstanceNotFoundException`"),
    ),
    keys=("obs_key",),
    partition_by=("obs_date",),
    written_by="lakehouse.jobs.spine (brokerscope analyze)",
)

# --- gold: findings ------------------------------------------------------------------------------

ROLE_INTERVALS = TableContract(
    name="role_intervals",
    layer="gold",
    doc=(
        "Maximal intervals in which one instance was observed active (master/live). The interval "
        "runs from its first to its last active observation; scrapes without an answer inside it "
        "are counted in `unanswered_inside` (the role was held before and after, by the same JVM). "
        "A restart (uptime going back) ends an interval. Bounds say where the truth lies: the role "
        "began after `start_lower` and ended before `end_upper` (null: not observed)."
    ),
    columns=(
        _c("interval_id", pa.string(), "stable id: group/instance/first active ts", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "broker instance", False),
        _c("start_ts", TS, "first observation with the instance active", False),
        _c("start_lower", TS, "last observation before start_ts where it was seen not active (or not answering)"),
        _c("start_lower_state", pa.string(), "what that observation saw: inactive | unanswered"),
        _c("end_ts", TS, "last observation with the instance active", False),
        _c("end_upper", TS, "first observation after end_ts where it was not active or did not answer"),
        _c("end_upper_state", pa.string(), "what that observation saw: inactive | unanswered | restarted"),
        _c("first_inactive_after", TS, "first observation after end_ts that positively saw it not active"),
        _c("is_open", pa.bool_(), "still active at the last observation of the instance", False),
        _c("observations", pa.int64(), "active observations in the interval", False),
        _c("unanswered_inside", pa.int64(), "scrapes without answer between start_ts and end_ts", False),
    ),
    keys=("interval_id",),
    written_by="lakehouse.jobs.spine",
)

FAILOVER_EVENTS = TableContract(
    name="failover_events",
    layer="gold",
    doc=(
        "Hand-overs of the active role inside one HA group: the old live's last active "
        "observation, the new live's first. `outage_upper_s` is the longest the group can have "
        "been without an active instance; `outage_lower_s` the shortest it certainly was (null "
        "when no observation proves the old live inactive). `event_type`: failover (to another "
        "instance), failback (back to the instance that was live before the previous failover), "
        "restart (same instance active again after a gap)."
    ),
    columns=(
        _c("event_id", pa.string(), "stable id: group/new interval id", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("event_type", pa.string(), "failover | failback | restart", False),
        _c("from_instance", pa.string(), "instance that was active", False),
        _c("to_instance", pa.string(), "instance that became active", False),
        _c("old_last_active", TS, "last observation of the old live being active", False),
        _c("old_first_unanswered", TS, "first scrape after that the old live did not answer"),
        _c("old_first_inactive", TS, "first observation positively seeing the old live not active"),
        _c("new_last_inactive", TS, "last observation of the new live before it became active"),
        _c("new_first_active", TS, "first observation of the new live being active", False),
        _c("outage_start", TS, "start of the window with no active instance (= old_last_active)"),
        _c("outage_end", TS, "end of that window (= new_first_active)"),
        _c("outage_upper_s", pa.float64(), "outage at most this long (s)"),
        _c("outage_lower_s", pa.float64(), "outage at least this long (s); null when unprovable"),
        _c("detection_s", pa.float64(), "old live's first missed scrape → new live first seen active (s)"),
        _c("overlap", pa.bool_(), "the new live became active before the old one was last seen active (see split_brain_windows)", False),
    ),
    keys=("event_id",),
    written_by="lakehouse.jobs.spine",
)

SPLIT_BRAIN_WINDOWS = TableContract(
    name="split_brain_windows",
    layer="gold",
    doc=(
        "Times when two instances of one HA group were both active. `certain_*` is the overlap of "
        "their observed-active spans (both reported active at points around it); `possible_*` "
        "extends it to the neighbouring observations that did not see them active. `certainty` "
        "is `certain` when neither side had an unanswered scrape inside the overlap, else "
        "`possible`. A clean failover produces no row."
    ),
    columns=(
        _c("window_id", pa.string(), "stable id", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("instance_a", pa.string(), "one active instance (alphabetically first)", False),
        _c("instance_b", pa.string(), "the other active instance", False),
        _c("certain_start", TS, "start of the observed overlap", False),
        _c("certain_end", TS, "end of the observed overlap", False),
        _c("possible_start", TS, "earliest the overlap may have begun"),
        _c("possible_end", TS, "latest the overlap may have ended"),
        _c("certainty", pa.string(), "certain | possible", False),
        _c("duration_s", pa.float64(), "certain_end − certain_start in seconds", False),
        _c("enqueued_a", pa.int64(), "messages instance_a accepted during the possible window"),
        _c("enqueued_b", pa.int64(), "messages instance_b accepted during the possible window"),
    ),
    keys=("window_id",),
    written_by="lakehouse.jobs.spine",
)

TABLES: dict[str, TableContract] = {
    t.name: t
    for t in (
        BRONZE_JOLOKIA,
        BROKER_STATE,
        DESTINATION_STATS,
        REPLICATION_STATS,
        COLLECTOR_HEALTH,
        ROLE_INTERVALS,
        FAILOVER_EVENTS,
        SPLIT_BRAIN_WINDOWS,
    )
}


SILVER_FROM_JOLOKIA = ("broker_state", "destination_stats", "replication_stats", "collector_health")


def contract(name: str) -> TableContract:
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}") from None


def catalogue_markdown() -> str:
    out = ["# brokerscope tables", "", (__doc__ or "").strip(), ""]
    for layer in ("bronze", "silver", "gold"):
        out.append(f"## {layer}\n")
        out.extend(t.markdown() for t in TABLES.values() if t.layer == layer)
    return "\n".join(out)
