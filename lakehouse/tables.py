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
        _c("store", pa.string(), "the store the instance serves as master (ActiveMQ persistence adapter name); identifies a logical broker"),
        _c("health", pa.string(), "broker's own health status where reported (ActiveMQ Health.CurrentStatus; only as fresh as its last health() call)"),
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
        "consumer group), `consumer` (consumer records-lag), `network-bridge` (an ActiveMQ network connector's bridge: "
        "messages taken in but not yet acknowledged by the remote broker), `artemis-replica` (a live's "
        "backup sync state). Columns that do not apply to a flow are null."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation", False),
        _c("ts", TS, "observation time", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "cluster / HA group", False),
        _c("instance", pa.string(), "instance that reported it", False),
        _c("flow", pa.string(), "isr | mirrormaker2 | mirrormaker2-checkpoint | replicator | consumer | artemis-replica | network-bridge", False),
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

# --- GC logs (issue P3): bronze lines → silver events and parse stats → gold findings --------------

_FILE_ID_DOC = (
    "stable id of one log file: `<dev>-<inode>-<head>-<gen>` (hex device and inode, a fingerprint "
    "of the file's first line, and a generation bumped when the file was truncated or rewritten in "
    "place); renaming by log rotation keeps it"
)

BRONZE_GC_LINES = TableContract(
    name="bronze_gc_lines",
    layer="bronze",
    doc=(
        "One row per line read from a GC log (`gc_logs` of a target), raw, in the order of the file. "
        "A line is read only once its newline has arrived. Lines that are not text (NUL bytes, "
        "invalid UTF-8) or longer than the limit are kept as rows with `error` set and skipped by "
        "the parser. Live tailing and `brokerscope replay` of a recording produce identical rows."
    ),
    columns=(
        _c("target", pa.string(), "target name from the config", False),
        _c("file_id", pa.string(), _FILE_ID_DOC + "; the partition column", False),
        _c("offset", pa.int64(), "byte offset of the line's first byte in the file", False),
        _c("length", pa.int64(), "bytes of the line including its newline", False),
        _c("line_no", pa.int64(), "line number in the file (1-based)", False),
        _c("line", pa.string(), "the line without its newline; for a rejected line a short escaped preview"),
        _c("error", pa.string(), "why the line was rejected; null for a text line"),
        _c("error_kind", pa.string(), "binary | overlong; null for a text line"),
        _c("ts", TS, "when the line was read (UTC, ms)", False),
        _c("file", pa.string(), "path of the file when the line was read", False),
        _c("collector", pa.string(), "who wrote the row: `collect` (live) or `replay:<file>`"),
    ),
    keys=("target", "file_id", "offset"),
    partition_by=("file_id",),
    written_by="collectors.gc.tailer (brokerscope collect / gc tail / replay)",
)

GC_EVENTS = TableContract(
    name="gc_events",
    layer="silver",
    doc=(
        "One row per GC event of a log file: a collection's stop-the-world pause, a concurrent "
        "phase or cycle, a ZGC allocation stall, a safepoint (taxonomy and counting rules: "
        "collectors/gc/model.py). Each file is parsed whole, in order, by one parser; `origin` "
        "says whether its lines came from bronze_gc_lines (`tail`) or from `brokerscope gc import` "
        "(`import`). `wall_time` is the logged time, else `jvm_start + uptime` (see gc_parse_stats)."
    ),
    columns=(
        _c("target", pa.string(), "target name", False),
        _c("file_id", pa.string(), _FILE_ID_DOC + "; the partition column", False),
        _c("file", pa.string(), "path of the file"),
        _c("origin", pa.string(), "tail | import", False),
        _c("event_seq", pa.int64(), "0-based position of the event in the file's event stream", False),
        _c("source_line", pa.int64(), "line number of the event's first line"),
        _c("wall_time", TS, "start of the event, UTC; null when neither logged nor derivable"),
        _c("wall_time_source", pa.string(), "log (a time decorator / datestamp) | estimated (jvm_start + uptime)"),
        _c("uptime_s", pa.float64(), "JVM uptime at the start of the event (s)"),
        _c("collector", pa.string(), "serial | parallel | cms | g1 | zgc | zgc-generational | shenandoah | unknown", False),
        _c("event_type", pa.string(), "young | mixed | full | initial-mark | remark | cleanup | degenerated | pause-<phase> | concurrent-<phase> | concurrent-cycle | allocation-stall | relocation-stall | out-of-memory | safepoint", False),
        _c("cause", pa.string(), "GC cause (e.g. `G1 Evacuation Pause`, `System.gc()`) or the safepoint's VM operation"),
        _c("phase", pa.string(), "the event's name as logged, e.g. `Pause Young (Normal)`"),
        _c("pause_ms", pa.float64(), "stop-the-world pause (ms); for safepoints the time the application was stopped"),
        _c("concurrent_ms", pa.float64(), "duration of a concurrent phase (ms)"),
        _c("duration_ms", pa.float64(), "duration of a cycle or stall (ms)"),
        _c("heap_before_kb", pa.int64(), "heap occupancy before (KiB)"),
        _c("heap_after_kb", pa.int64(), "heap occupancy after (KiB)"),
        _c("heap_committed_kb", pa.int64(), "heap committed (KiB)"),
        _c("young_before_kb", pa.int64(), "young generation before (KiB)"),
        _c("young_after_kb", pa.int64(), "young generation after (KiB)"),
        _c("young_committed_kb", pa.int64(), "young generation committed (KiB)"),
        _c("old_before_kb", pa.int64(), "old generation before (KiB)"),
        _c("old_after_kb", pa.int64(), "old generation after (KiB)"),
        _c("old_committed_kb", pa.int64(), "old generation committed (KiB)"),
        _c("metaspace_before_kb", pa.int64(), "metaspace (or permanent generation) before (KiB)"),
        _c("metaspace_after_kb", pa.int64(), "metaspace after (KiB)"),
        _c("metaspace_committed_kb", pa.int64(), "metaspace committed (KiB)"),
        _c("user_s", pa.float64(), "CPU user time (s)"),
        _c("sys_s", pa.float64(), "CPU system time (s)"),
        _c("real_s", pa.float64(), "elapsed time as logged with the CPU times (s)"),
        _c("gc_id", pa.int64(), "the JVM's GC id (`GC(n)`), unified logs"),
        _c("flags", pa.string(), "comma-separated flags, e.g. `to-space-exhausted,humongous` (collectors/gc/model.py KNOWN_FLAGS)"),
        _c("ttsp_ms", pa.float64(), "safepoints: time to reach the safepoint (ms)"),
    ),
    keys=("target", "file_id", "event_seq"),
    partition_by=("file_id",),
    written_by="lakehouse.jobs.gc (brokerscope analyze / gc analyze / gc import)",
)

GC_PARSE_STATS = TableContract(
    name="gc_parse_stats",
    layer="silver",
    doc=(
        "Parse coverage per GC log file: every line is counted as part of an event, understood "
        "without an event (banners, heap summaries), not understood, or rejected (binary or "
        "overlong) — never dropped silently. Also the file's time span and the JVM start used "
        "to give events a wall time when the log has only uptimes."
    ),
    columns=(
        _c("target", pa.string(), "target name", False),
        _c("file_id", pa.string(), _FILE_ID_DOC + "; the partition column", False),
        _c("file", pa.string(), "path of the file"),
        _c("origin", pa.string(), "tail | import", False),
        _c("end_offset", pa.int64(), "bytes of the file covered by this parse (tail: end of the last bronze line)", False),
        _c("lines", pa.int64(), "lines covered, rejected ones included", False),
        _c("lines_event", pa.int64(), "lines that are part of an event", False),
        _c("lines_ignored", pa.int64(), "lines understood that carry no event", False),
        _c("lines_unknown", pa.int64(), "lines not understood", False),
        _c("lines_rejected", pa.int64(), "lines rejected before parsing (binary or overlong)", False),
        _c("coverage", pa.float64(), "(lines_event + lines_ignored) / lines; 1.0 for an empty file", False),
        _c("events", pa.int64(), "events emitted", False),
        _c("incomplete_events", pa.int64(), "events started but not finished (e.g. cut by rotation or still being written)", False),
        _c("collector", pa.string(), "the collector most events name"),
        _c("log_format", pa.string(), "unified | legacy | mixed | empty"),
        _c("first_uptime_s", pa.float64(), "uptime of the first time-stamped line"),
        _c("last_uptime_s", pa.float64(), "uptime of the last time-stamped line"),
        _c("first_wall_time", TS, "wall time of the first time-stamped line (logged or estimated)"),
        _c("last_wall_time", TS, "wall time of the last time-stamped line (logged or estimated)"),
        _c("jvm_start", TS, "JVM start used for `jvm_start + uptime` when the log has no wall time: the earliest (time read − uptime) over the file's events for tailed files (an upper bound, tight when read live), the file's modification time − last uptime for imports"),
        _c("wall_time_source", pa.string(), "log | estimated | none"),
        _c("unknown_sample", pa.string(), "JSON list of up to 20 [line_no, text] of lines not understood"),
    ),
    keys=("target", "file_id"),
    partition_by=("file_id",),
    written_by="lakehouse.jobs.gc (brokerscope analyze / gc analyze / gc import)",
)

GC_FINDINGS = TableContract(
    name="gc_findings",
    layer="gold",
    doc=(
        "Coded GC findings (in the manner of garbagecat's analysis codes), one row per occurrence: "
        "a pause ≥ ⅓ of the ZooKeeper session timeout (`gc.pause-over-third-session`) or ≥ the "
        "connection TTL (`gc.pause-over-connection-ttl`), full GCs, to-space exhausted, evacuation "
        "and concurrent mode failures, allocation stalls, humongous allocations, explicit "
        "`System.gc()`, GC time share over a window (`gc.time-share`) and stopped time not spent "
        "in GC (`gc.safepoint-not-gc`). Thresholds come from the config's `gc:` section."
    ),
    columns=(
        _c("finding_id", pa.string(), "stable id: hash of code, target, file and event (or window)", False),
        _c("code", pa.string(), "gc.<rule>, e.g. gc.pause-over-third-session", False),
        _c("severity", pa.string(), "error | warn | info", False),
        _c("target", pa.string(), "target name", False),
        _c("group_name", pa.string(), "the target's HA group from the config"),
        _c("ts", TS, "when it happened (event start, or the window's first event); null when the log gives no wall time"),
        _c("uptime_s", pa.float64(), "JVM uptime at that point (s)"),
        _c("file_id", pa.string(), "log file (see gc_events)", False),
        _c("event_seq", pa.int64(), "the gc_events row it is about; null for findings over a window or a file"),
        _c("event_type", pa.string(), "event type of that row (young, full, safepoint …)"),
        _c("cause", pa.string(), "GC cause or VM operation of that row"),
        _c("value", pa.float64(), "the measured value (see unit)"),
        _c("threshold", pa.float64(), "the threshold it was compared with (same unit); null for findings that are facts"),
        _c("unit", pa.string(), "ms | pct | count"),
        _c("message", pa.string(), "what happened, in plain words", False),
        _c("advice", pa.string(), "what to do about it"),
    ),
    keys=("finding_id",),
    written_by="lakehouse.jobs.gc (brokerscope analyze / gc analyze / gc import)",
)

HA_GROUP_CHECKS = TableContract(
    name="ha_group_checks",
    layer="gold",
    doc=(
        "Configured HA groups cross-checked against what the brokers report on their active rows "
        "(ActiveMQ store, Artemis NodeID). `group-members-disagree`: one group's members serve "
        "different stores/NodeIDs — they can both be master (a misconfigured pair). "
        "`identity-in-several-groups`: one store/NodeID served by instances of different groups."
    ),
    columns=(
        _c("check_id", pa.string(), "stable id", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("check", pa.string(), "group-members-disagree | identity-in-several-groups", False),
        _c("group_name", pa.string(), "the group(s) concerned, comma-separated", False),
        _c("instances", pa.string(), "instances concerned, comma-separated", False),
        _c("identities", pa.string(), "stores / NodeIDs seen, comma-separated", False),
        _c("first_seen", TS, "first active observation involved", False),
        _c("last_seen", TS, "last active observation involved", False),
        _c("message", pa.string(), "what was found, in plain words", False),
        _c("advice", pa.string(), "what to do", False),
    ),
    keys=("check_id",),
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
        HA_GROUP_CHECKS,
        BRONZE_GC_LINES,
        GC_EVENTS,
        GC_PARSE_STATS,
        GC_FINDINGS,
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
