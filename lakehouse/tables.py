"""Table contracts: the only interface between brokerscope's parts.

Collectors write bronze, Spark jobs turn bronze into silver facts and gold findings, alerts and
dashboards read gold; an incremental job keeps what it carries from one run to the next in
`state` tables of its own (nobody else reads them). Every table is declared here once — name, layer, columns with types and
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
    layer: str  # bronze | silver | gold | state (what an incremental job carries between runs)
    doc: str
    columns: tuple[Column, ...]
    keys: tuple[str, ...]
    partition_by: tuple[str, ...] = ()
    written_by: str = ""
    extra: dict = field(default_factory=dict)
    # the key hashes `ts` to the millisecond (obs_key: collectors/base.py): two rows with one key lie in
    # the same millisecond, so an idempotent append looks for a batch's keys only in the files whose ts
    # range reaches the batch's (Lakehouse.append_new) — a flush costs what the batch costs, not the day
    key_includes_ts: bool = False

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in self.columns])

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def spark_schema(self):
        """The contract as a Spark StructType (pyspark imported lazily: collectors need no JVM)."""
        from pyspark.sql.types import (  # deferred: pyspark is heavy, and collectors read contracts without it
            StructField,
            StructType,
        )

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
    from pyspark.sql import types as T  # deferred: pyspark is heavy, and collectors read contracts without it

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
    key_includes_ts=True,
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
    written_by="analysis.silver (brokerscope analyze)",
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
        _c("prepared_tx_messages", pa.int64(), "messages held by prepared (XA) transactions (Artemis `PreparedTransactionMessageCount`, ≥2.16); null if not reported"),
    ),
    keys=("obs_key", "instance", "destination_type", "destination"),
    partition_by=("obs_date",),
    written_by="analysis.silver (brokerscope analyze)",
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
    written_by="analysis.silver (brokerscope analyze)",
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
        _c("ts", TS, "observation time (on the brokers' clock when `clock_skew_s` is applied)", False),
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
        _c("clock_skew_s", pa.float64(), "broker clock − collector clock estimated from the agent's timestamps (s); "
           "observations of this target are shifted by it when |value| ≥ threshold (analysis.clock_skew."
           "CLOCK_SKEW_THRESHOLD_S, 1 s); null: too few answered scrapes yet"),
        _c("collector_ts", TS, "observation time on the collector's clock, as in bronze (`ts` and the other silver "
           "tables carry it shifted by `clock_skew_s` when that is applied)"),
        _c("values_quarantined", pa.int32(), "broker values of this answer set to null in the other silver tables "
           "because they do not fit their column (wrong type, beyond 64 bits, ±inf, invalid text)"),
        _c("quarantined", pa.string(), "what was set aside and why: `table.column from <MBean> <attribute>: <value> — "
           "<reason>` per distinct value (bounded to 2,000 characters)"),
    ),
    keys=("obs_key",),
    partition_by=("obs_date",),
    written_by="analysis.silver (brokerscope analyze)",
)

# --- gold: findings ------------------------------------------------------------------------------

ROLE_INTERVALS = TableContract(
    name="role_intervals",
    layer="gold",
    doc=(
        "Maximal intervals in which one instance was observed active (master/live). The interval "
        "runs from its first to its last active observation; scrapes without an answer inside it "
        "are counted in `unanswered_inside` (the role was held before and after, by the same JVM), and "
        "holes — stretches with no observation at all for longer than `analysis.hole_tolerance` (a "
        "collector down, rows lost) — in `unobserved_s`: the role there is unknown. A restart "
        "(uptime going back) ends an interval. Bounds say where the truth lies: the role began after "
        "`start_lower` and ended before `end_upper` (null: not observed); `start_unobserved` / "
        "`end_unobserved` say that bound lies across a hole."
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
        _c("unobserved_s", pa.float64(), "seconds between start_ts and end_ts inside holes (no observation "
           "for longer than analysis.hole_tolerance): the role there is unknown; null: not measured"),
        _c("start_unobserved", pa.bool_(), "start_lower lies across a hole: the role began somewhere in it"),
        _c("end_unobserved", pa.bool_(), "end_upper lies across a hole: the role ended somewhere in it"),
    ),
    keys=("interval_id",),
    written_by="analysis.spine",
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
        _c("unobserved", pa.bool_(), "the hand-over lies in a hole of the observations (the old live's end or the new "
           "live's start bounded across it): when it happened is known only to the hole's width"),
    ),
    keys=("event_id",),
    written_by="analysis.spine",
)

CLIENT_SHIFTS = TableContract(
    name="client_shifts",
    layer="gold",
    doc=(
        "The clients' move in a failover or failback (failover_events, ActiveMQ and Artemis): the "
        "connections the old live had, when the new live first had them back, and how long the "
        "shift took. `connections_after` is the most the new live had while it held the role, up "
        "to `window_end`; the target is `connections_before`, or when fewer came, that most "
        "(`moved_fraction` says which share of the old count it is: a broker's count includes "
        "connections that cannot move — an Artemis live counts the ones its waiting backup holds to "
        "it, 2 on a shared-store pair, 3 with replication, docs/ARTEMIS_LAB.md fact 27). The shift "
        "lies between `shift_lower_s` (null when no observation showed the old live without them: "
        "a dead broker never says so) and `shift_upper_s`. Recomputed from failover_events and "
        "broker_state on every run; rules: analysis/client_shifts.py."
    ),
    columns=(
        _c("event_id", pa.string(), "failover_events.event_id", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("event_type", pa.string(), "failover | failback", False),
        _c("from_instance", pa.string(), "the old live", False),
        _c("to_instance", pa.string(), "the new live", False),
        _c("state", pa.string(), "arrived (the new live reached the target) | none-arrived (the old live had "
           "connections, the new one none by window_end) | no-clients (neither had any) | unknown (not reported)",
           False),
        _c("quality", pa.string(), "bounded (the arrival lies between two answered scrapes of the new live, "
           "no hole between) | across-hole (that bracket spans a hole: known to its width) | unknown", False),
        _c("connections_before", pa.int64(), "the old live's connections at its last active observation that "
           "reported them"),
        _c("before_ts", TS, "that observation (the clients were on the old live then)"),
        _c("old_without_ts", TS, "first later observation of the old live that positively showed fewer connections or "
           "it not active; null: never seen (it died, or stayed silent)"),
        _c("connections_after", pa.int64(), "the most connections the new live had in the window"),
        _c("target_connections", pa.int64(), "min(connections_before, connections_after): what counts as back"),
        _c("moved_fraction", pa.float64(), "target_connections / connections_before (null when none before)"),
        _c("arrived_ts", TS, "first observation of the new live with target_connections or more"),
        _c("arrived_after", TS, "last observation of the new live before arrived_ts that positively showed fewer "
           "(answered with fewer, or not yet active): the arrival lies in (arrived_after, arrived_ts]"),
        _c("shift_upper_s", pa.float64(), "arrived_ts − before_ts: the shift took at most this long (s)"),
        _c("shift_lower_s", pa.float64(), "arrived_after − old_without_ts, at least 0: it took at least this "
           "long (s); null when old_without_ts is"),
        _c("window_end", TS, "where the look ended: the new live's role ending, the old instance answering again, "
           "or 120 s after new_first_active"),
        _c("message", pa.string(), "what happened, in plain words", False),
    ),
    keys=("event_id",),
    written_by="analysis.client_shifts (brokerscope analyze)",
)

SPLIT_BRAIN_WINDOWS = TableContract(
    name="split_brain_windows",
    layer="gold",
    doc=(
        "Times when two instances of one HA group were both active. `certain_*` is the overlap of "
        "their observed-active spans (both reported active at points around it); `possible_*` "
        "extends it to the neighbouring observations that did not see them active. `certainty` "
        "is `certain` when neither side had an unanswered scrape or a hole in its observations "
        "(see role_intervals.unobserved_s) inside the overlap, else `possible`: one window either "
        "way. A clean failover produces no row."
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
    written_by="analysis.spine",
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
    written_by="analysis.gc (brokerscope analyze / gc analyze / gc import)",
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
    written_by="analysis.gc (brokerscope analyze / gc analyze / gc import)",
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
    written_by="analysis.gc (brokerscope analyze / gc analyze / gc import)",
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
    written_by="analysis.spine",
)

# --- state: what an incremental job carries from one run to the next (not for readers outside its job) ---

SPINE_CARRY = TableContract(
    name="spine_carry",
    layer="state",
    doc=(
        "What the spine's interval scan needs of the stored broker_state rows to continue over new "
        "ones exactly as a full run would (analysis/spine_carry.py): per (group_name, instance), its "
        "last observation, and, while its last run of active observations is still open (no inactive "
        "observation since), the few rows that decide that run's last interval — the observation "
        "before it, its first and last active ones, the one that fixes its JVM start, and the "
        "unanswered ones after it. The row that starts that interval carries the counts the rows "
        "left out stand for. Written in the same runs as role_intervals, with the same watermark."
    ),
    columns=(
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "broker instance", False),
        _c("kind", pa.string(), "broker kind of the instance's first observation", False),
        _c("ts", TS, "observation time", False),
        _c("active", pa.bool_(), "as in broker_state"),
        _c("uptime_ms", pa.int64(), "as in broker_state, except on an active observation right before a "
           "restart, where it is set so that the scan sees that restart again"),
        _c("observations_offset", pa.int64(), "on the row that starts the carried interval: active "
           "observations of that interval left out of the carry"),
        _c("unanswered_offset", pa.int64(), "same row: unanswered scrapes of that interval left out"),
        _c("unobserved_offset_us", pa.int64(), "same row: µs of holes of that interval left out"),
    ),
    keys=("group_name", "instance", "ts"),
    written_by="analysis.spine",
)

SILVER_CARRY = TableContract(
    name="silver_carry",
    layer="state",
    doc=(
        "What the silver job needs of the stored rows to append the silver rows of new bronze_jolokia "
        "rows exactly as a full run would (analysis/silver_carry.py), without reading them back. One row "
        "per `scope`: `target` (its last bronze row, its clock skew samples so far and the last "
        "SKEW_WINDOW of them: the running median's context, analysis/clock_skew.py) and `instance` (its "
        "last broker_state row and its last row whose group was derived from data: what "
        "fill_derived_groups needs from before). Written last in every silver run; its commit carries "
        "the watermark and the versions the run left broker_state, destination_stats, "
        "replication_stats and collector_health at (a run commits only the tables it has rows for)."
    ),
    columns=(
        _c("scope", pa.string(), "target | instance", False),
        _c("name", pa.string(), "the target's or the instance's name", False),
        _c("last_us", pa.int64(), "target: µs of its last bronze row (collector clock); instance: of its last broker_state row"),
        _c("samples", pa.int64(), "target: its answered scrapes (clock skew samples) so far"),
        _c("window", pa.string(), "target: JSON [[µs, sample], …], its last SKEW_WINDOW samples, oldest first "
           "(floats as Python's repr, so they come back to the bit)"),
        _c("derived_us", pa.int64(), "instance: µs of its last row with a group derived from data (null: none)"),
        _c("derived_group", pa.string(), "instance: that row's group"),
    ),
    keys=("scope", "name"),
    written_by="analysis.silver",
)

HA_IDENTITY_SIGHTINGS = TableContract(
    name="ha_identity_sightings",
    layer="state",
    doc=(
        "Per (group_name, instance, identity, kind): when an active observation reported that store / "
        "NodeID first and last. ha_group_checks is computed from it, so an incremental run merges the "
        "new observations into it instead of reading all of broker_state."
    ),
    columns=(
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "broker instance", False),
        _c("identity", pa.string(), "ActiveMQ store, else Artemis NodeID", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("first_seen", TS, "first active observation with it", False),
        _c("last_seen", TS, "last active observation with it", False),
    ),
    keys=("group_name", "instance", "identity", "kind"),
    written_by="analysis.spine",
)

# --- ZooKeeper (issue P4): server answers and znode snapshots → server state, coordination → quorum, elections, findings

BRONZE_ZK = TableContract(
    name="bronze_zk",
    layer="bronze",
    doc=(
        "One row per exchange with a ZooKeeper server or ensemble, raw: a four-letter word and its "
        "text answer (`zk.4lw`: `srvr`, `mntr`), an AdminServer command and its JSON body "
        "(`zk.admin`: `monitor`, used when `mntr` is not whitelisted), or a read-only snapshot of "
        "watched znodes (`zk.znode`: path, data base64, stat, children per znode). All exchanges of "
        "one scrape round of an ensemble share `ts`. Live collection and `brokerscope replay` of a "
        "recording produce identical rows."
    ),
    columns=(
        _c("obs_key", pa.string(), "stable dedup key: sha256 of source, target, ts and request", False),
        _c("ts", TS, "observation time: the scrape round's tick, UTC, ms precision", False),
        _c("obs_date", pa.string(), "UTC date of `ts` (YYYY-MM-DD), the partition column", False),
        _c("target", pa.string(), "target name (a ZooKeeper server; for zk.znode the target that declares the watch)", False),
        _c("kind", pa.string(), "always `zookeeper`", False),
        _c("group_name", pa.string(), "the ensemble (the target's `group`; null: the server is its own ensemble)"),
        _c("source", pa.string(), "zk.4lw | zk.admin | zk.znode", False),
        _c("command", pa.string(), "srvr | mntr | monitor, or the watch: artemis-lock-manager | paths"),
        _c("endpoint", pa.string(), "host:port (4lw), AdminServer URL, or the connect string (zk.znode)"),
        _c("request_json", pa.string(), "JSON array with the one request object of the envelope", False),
        _c("response_text", pa.string(), "the raw 4lw text, or the JSON body / snapshot as JSON text; null on error"),
        _c("error", pa.string(), "transport error text saying what to do (refused, timeout, HTTP …); null if answered"),
        _c("error_kind", pa.string(), "refused | reset | timeout | http | other"),
        _c("elapsed_ms", pa.float64(), "round-trip of the exchange in ms"),
        _c("collector", pa.string(), "who wrote the row: `collect` (live) or `replay:<file>`"),
    ),
    keys=("obs_key",),
    key_includes_ts=True,
    partition_by=("obs_date",),
    written_by="collectors.zookeeper (brokerscope collect / replay)",
)

ZK_SERVER_STATE = TableContract(
    name="zk_server_state",
    layer="silver",
    doc=(
        "One row per ZooKeeper server per scrape round: `srvr` plus `mntr` (or AdminServer "
        "`monitor`) read together. A server that did not answer `srvr` is `reachable=false, "
        "state=unknown` — indeterminate, never 'down'; a running server without quorum answers "
        "`not-serving`. Cumulative counters are kept as reported (gold computes windows)."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation of the round's `srvr` (or first) exchange", False),
        _c("ts", TS, "scrape round time", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("ensemble", pa.string(), "ensemble (configured group, else the target name)", False),
        _c("instance", pa.string(), "server = target name", False),
        _c("endpoint", pa.string(), "host:port of the client port"),
        _c("reachable", pa.bool_(), "the server answered `srvr`", False),
        _c("serving", pa.bool_(), "serving clients (leader/follower/observer/standalone/read-only); null when unknown"),
        _c("state", pa.string(), "leader | follower | observer | standalone | read-only | not-serving | unknown", False),
        _c("peer_state", pa.string(), "zk_peer_state, e.g. `leading - broadcast`, `following - synchronization`"),
        _c("metrics_source", pa.string(), "4lw (mntr) | admin (AdminServer monitor) | null (srvr only)"),
        _c("mntr_whitelisted", pa.bool_(), "true: mntr answered; false: the server refused it (not in 4lw.commands.whitelist), so the AdminServer is asked from then on; null: not asked"),
        _c("version", pa.string(), "ZooKeeper version as reported"),
        _c("zxid", pa.string(), "last zxid from `srvr`, hex; a follower reports the last one it applied (its epoch lags the leader's until the first write of a new epoch)"),
        _c("zxid_epoch", pa.int64(), "zxid >> 32: the leader epoch (one more per elected leader)"),
        _c("zxid_counter", pa.int64(), "zxid & 0xffffffff: transactions in that epoch"),
        _c("avg_latency_ms", pa.float64(), "average request latency since start / last reset (cumulative)"),
        _c("min_latency_ms", pa.int64(), "minimum request latency (cumulative)"),
        _c("max_latency_ms", pa.int64(), "maximum request latency (cumulative)"),
        _c("requests_total", pa.int64(), "read + update requests measured (cnt_readlatency + cnt_updatelatency)"),
        _c("request_latency_sum_ms", pa.int64(), "their summed latency (sum_readlatency + sum_updatelatency)"),
        _c("outstanding_requests", pa.int64(), "queued, unprocessed requests"),
        _c("connections", pa.int64(), "alive client connections"),
        _c("packets_received", pa.int64(), "packets received (cumulative)"),
        _c("packets_sent", pa.int64(), "packets sent (cumulative)"),
        _c("znode_count", pa.int64(), "znodes in the data tree"),
        _c("ephemerals_count", pa.int64(), "ephemeral znodes"),
        _c("watch_count", pa.int64(), "watches"),
        _c("approximate_data_size", pa.int64(), "approximate data size in bytes"),
        _c("global_sessions", pa.int64(), "global sessions"),
        _c("quorum_size", pa.int64(), "voting members of the ensemble as the server knows them"),
        _c("learners", pa.int64(), "leader only: connected learners (zk_learners; `zk_followers` does not exist in 3.6+)"),
        _c("synced_followers", pa.int64(), "leader only: synced voting followers"),
        _c("synced_non_voting_followers", pa.int64(), "leader only: synced non-voting followers"),
        _c("synced_observers", pa.int64(), "leader only: synced observers"),
        _c("pending_syncs", pa.int64(), "leader only: learners waiting for a sync"),
        _c("leader_uptime_ms", pa.int64(), "leader only: time since it became leader (ms)"),
        _c("uptime_ms", pa.int64(), "server uptime (ms)"),
        _c("elections", pa.int64(), "elections this server took part in since start (cnt_election_time)"),
        _c("election_time_sum_ms", pa.int64(), "their summed duration as ZooKeeper measured it (sum_election_time)"),
        _c("looking_count", pa.int64(), "times the server entered LOOKING since start"),
        _c("error", pa.string(), "why the observation is incomplete"),
        _c("elapsed_ms", pa.float64(), "slowest exchange of the scrape (ms)"),
    ),
    keys=("obs_key",),
    partition_by=("obs_date",),
    written_by="analysis.zookeeper (brokerscope analyze)",
)

ZK_COORDINATION = TableContract(
    name="zk_coordination",
    layer="silver",
    doc=(
        "The Artemis lock manager's state per NodeID per snapshot (CATALOG §1.6): the lease znodes "
        "under `/<namespace>/<NodeID>/locks/leases` (the primary lock: normally exactly one, "
        "ephemeral, owned by the holder's ZooKeeper session, data = a fresh UUID per acquisition) "
        "and `/<namespace>/<NodeID>/activation-sequence` (8-byte big-endian long; negative −(N+1) = "
        "claim of N+1 in progress, N still committed). A failed read is `answered=false` "
        "(node_id `*` when no NodeID was configured)."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze zk.znode observation", False),
        _c("ts", TS, "snapshot time", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("ensemble", pa.string(), "ensemble read", False),
        _c("target", pa.string(), "target that declares the watch", False),
        _c("watch", pa.string(), "artemis-lock-manager", False),
        _c("namespace", pa.string(), "lock manager namespace (\"\" = root)", False),
        _c("node_id", pa.string(), "NodeID (or coordination-id) whose lock this is; `*` = unknown (failed read)", False),
        _c("answered", pa.bool_(), "the snapshot was read", False),
        _c("error", pa.string(), "why not"),
        _c("lease_count", pa.int64(), "lease znodes present (≠ 1: no holder, or contention / split brain)"),
        _c("leases_json", pa.string(), "JSON list of the leases: name, session, uuid, ctime, mzxid"),
        _c("holder_session", pa.string(), "ephemeral owner (ZooKeeper session id, hex) of the lowest-sequence lease: the holder"),
        _c("holder_lease", pa.string(), "its znode name (`_c_<protection>-lease-<seq>`)"),
        _c("holder_uuid", pa.string(), "its data: the lease UUID of that acquisition"),
        _c("holder_ctime", TS, "when the holder's lease was created"),
        _c("holder_mzxid", pa.int64(), "zxid of its last change"),
        _c("lease_sessions", pa.string(), "sessions of all leases, comma-separated, in sequence order"),
        _c("mutex_count", pa.int64(), "internal mutex znodes under locks/locks (transient, during acquisition)"),
        _c("sequence_exists", pa.bool_(), "the activation-sequence znode exists"),
        _c("sequence_raw", pa.int64(), "its value as stored"),
        _c("sequence_claimed", pa.bool_(), "negative value: a claim in progress (claimed, not committed)"),
        _c("committed_sequence", pa.int64(), "the committed activation sequence (raw, or N for a raw −(N+1))"),
        _c("claimed_sequence", pa.int64(), "the claimed sequence N+1 when raw = −(N+1)"),
        _c("sequence_mzxid", pa.int64(), "zxid of the counter's last change"),
        _c("sequence_mtime", TS, "time of the counter's last change"),
        _c("sequence_version", pa.int64(), "znode version (one more per CAS step)"),
    ),
    keys=("obs_key", "node_id"),
    partition_by=("obs_date",),
    written_by="analysis.zookeeper (brokerscope analyze)",
)

ZK_QUORUM = TableContract(
    name="zk_quorum",
    layer="gold",
    doc=(
        "Intervals per ensemble with one quorum status, leader and epoch, from scrape rounds. "
        "`present`: a server serves; `election`: none serves but a majority of voters answers (a "
        "leader is being elected); `lost`: so many servers refuse connections on their client port "
        "(nothing listens) that no majority can exist, so no leader can be elected until servers "
        "return; `unknown`: too few answers to tell (a late or missing answer is no evidence). The "
        "interval runs from its "
        "first to its last round; the truth changed after `start_lower` / before `end_upper` (the "
        "neighbouring rounds)."
    ),
    columns=(
        _c("interval_id", pa.string(), "stable id: ensemble/status/first round", False),
        _c("ensemble", pa.string(), "ensemble", False),
        _c("status", pa.string(), "present | election | lost | unknown", False),
        _c("leader", pa.string(), "the server reporting `leader` (comma-separated if several); null when none answered as leader"),
        _c("epoch", pa.int64(), "the leader's zxid epoch"),
        _c("start_ts", TS, "first round of the interval", False),
        _c("start_lower", TS, "last round before it (the change happened after this)"),
        _c("end_ts", TS, "last round of the interval", False),
        _c("end_upper", TS, "first round after it"),
        _c("rounds", pa.int64(), "scrape rounds in the interval", False),
        _c("voters", pa.int64(), "voting members (largest of the reported quorum_size and the configured servers)", False),
        _c("answering_min", pa.int64(), "fewest servers answering in a round"),
        _c("healthy_min", pa.int64(), "fewest voters in quorum in a round (leader + synced followers; else servers serving)"),
        _c("bare_majority", pa.bool_(), "some round had exactly a majority in quorum: one more loss loses the quorum", False),
        _c("is_open", pa.bool_(), "still the status at the last round", False),
    ),
    keys=("interval_id",),
    written_by="analysis.zookeeper",
)

ZK_ELECTIONS = TableContract(
    name="zk_elections",
    layer="gold",
    doc=(
        "Leader elections per ensemble: a new epoch (and leader) after the previous one. The new "
        "leader's `elected_at` is its first round minus its reported leader uptime (early by at most "
        "the few ms between the round's tick and the server's answer). The "
        "old leadership was last seen at `old_last_seen` and seen gone at `old_gone_seen`, so the "
        "election lasted at most `duration_upper_s` and at least `duration_lower_s`. "
        "`zk_election_ms` is ZooKeeper's own measure (the new leader's last election_time)."
    ),
    columns=(
        _c("election_id", pa.string(), "stable id: hash of ensemble, new epoch and first round", False),
        _c("ensemble", pa.string(), "ensemble", False),
        _c("old_leader", pa.string(), "leader before", False),
        _c("old_epoch", pa.int64(), "its epoch"),
        _c("new_leader", pa.string(), "leader after", False),
        _c("new_epoch", pa.int64(), "its epoch"),
        _c("old_last_seen", TS, "last round with the old leadership", False),
        _c("old_gone_seen", TS, "first round without it", False),
        _c("old_leader_after", pa.string(), "what the old leader showed then: unanswered | not-serving | follower | …"),
        _c("elected_at", TS, "when the new leader started leading (first round − leader uptime)"),
        _c("new_first_seen", TS, "first round with the new leader", False),
        _c("duration_upper_s", pa.float64(), "elected_at (else new_first_seen) − old_last_seen (s)", False),
        _c("duration_lower_s", pa.float64(), "elected_at − old_gone_seen when positive (s); null otherwise"),
        _c("zk_election_ms", pa.float64(), "the new leader's election time as ZooKeeper measured it (ms)"),
        _c("quorum_lost_s", pa.float64(), "time between the two leaderships observed with status lost (s)"),
        _c("cause", pa.string(), "old leader unanswered | old leader not serving | leader stepped down | quorum lost", False),
    ),
    keys=("election_id",),
    written_by="analysis.zookeeper",
)

ZK_FINDINGS = TableContract(
    name="zk_findings",
    layer="gold",
    doc=(
        "ZooKeeper findings, one row per occurrence. Ensemble risk: `zk.quorum-lost`, "
        "`zk.ensemble-too-small` (fewer than 3 voters), `zk.bare-majority` (one more loss loses "
        "quorum), `zk.latency-spike`, `zk.outstanding-spike`. Artemis coordination (joined with "
        "broker_state): `zk.lease-count` (≠ 1), `zk.sequence-claim-lingering`, "
        "`zk.active-sequence-behind`, `zk.backup-stale`, `zk.backup-not-taking-over` (a backup seen "
        "waiting for longer than its session while the lock was free), `zk.lock-handover`, `zk.lease-vanished`. "
        "GC (joined with gc_findings): `zk.gc-pause-lost-lease`, `zk.gc-pause-election`."
    ),
    columns=(
        _c("finding_id", pa.string(), "stable id: hash of code and what it is about", False),
        _c("code", pa.string(), "zk.<rule>", False),
        _c("severity", pa.string(), "error | warn | info", False),
        _c("ensemble", pa.string(), "ensemble concerned (null for broker-only facts)"),
        _c("group_name", pa.string(), "broker HA group concerned (Artemis: the NodeID's group), else the ensemble", False),
        _c("instance", pa.string(), "server or broker instance concerned"),
        _c("node_id", pa.string(), "NodeID concerned (coordination findings)"),
        _c("start_ts", TS, "first observation of the condition (event: last observation before it)", False),
        _c("end_ts", TS, "last observation of the condition (event: first observation after it)", False),
        _c("observations", pa.int64(), "observations showing it", False),
        _c("value", pa.float64(), "measured value (see unit)"),
        _c("threshold", pa.float64(), "what it was compared with (same unit)"),
        _c("unit", pa.string(), "ms | s | count | sequence"),
        _c("message", pa.string(), "what happened, in plain words", False),
        _c("advice", pa.string(), "what to do"),
        _c("related", pa.string(), "ids of linked rows, comma-separated (gc_findings.finding_id, zk_elections.election_id, zk_findings.finding_id)"),
    ),
    keys=("finding_id",),
    written_by="analysis.zookeeper",
)

# --- failover readiness (issue P13): Kafka-protocol reads of a MirrorMaker 2 replication ----------------

BRONZE_KAFKA = TableContract(
    name="bronze_kafka",
    layer="bronze",
    doc=(
        "One row per Kafka-protocol exchange of a watched replication (`failover_readiness.replications`), "
        "raw: the consumer groups listed on the primary (`kafka.groups`), the groups' committed offsets on the "
        "primary and the synced ones on DR (`kafka.committed`), the latest MirrorMaker 2 checkpoint records per "
        "watched group and partition, raw bytes with their timestamps (`kafka.checkpoints`), earliest and "
        "latest offsets (`kafka.log_offsets`). All exchanges of one round of a replication share `ts`. A call "
        "skipped because its cluster did not answer earlier in the round is an error row saying so. Live "
        "collection and `brokerscope replay` of a recording produce identical rows."
    ),
    columns=(
        _c("obs_key", pa.string(), "stable dedup key: sha256 of source, target, ts and request", False),
        _c("ts", TS, "the round's tick, UTC, ms precision", False),
        _c("obs_date", pa.string(), "UTC date of `ts` (YYYY-MM-DD), the partition column", False),
        _c("target", pa.string(), "the replication's name from the config", False),
        _c("kind", pa.string(), "always `kafka`", False),
        _c("group_name", pa.string(), "the replication's cluster group (`group`, else its name)"),
        _c("source", pa.string(), "kafka.groups | kafka.committed | kafka.checkpoints | kafka.log_offsets", False),
        _c("cluster", pa.string(), "primary | dr: which cluster was asked"),
        _c("call", pa.string(), "groups | committed | checkpoints | log_offsets"),
        _c("endpoint", pa.string(), "the cluster's bootstrap servers"),
        _c("request_json", pa.string(), "JSON array with the one request object of the envelope", False),
        _c("response_json", pa.string(), "the answer as JSON; null on error"),
        _c("error", pa.string(), "what went wrong and what to do (naming the replication and cluster); null if answered"),
        _c("error_kind", pa.string(), "refused | timeout | auth | forbidden | tls | unknown-group | unknown-topic | other"),
        _c("elapsed_ms", pa.float64(), "duration of the call in ms"),
        _c("collector", pa.string(), "who wrote the row: `collect` (live) or `replay:<file>`"),
    ),
    keys=("obs_key",),
    key_includes_ts=True,
    partition_by=("obs_date",),
    written_by="collectors.kafka_offsets (brokerscope collect / replay)",
)

KAFKA_OFFSETS = TableContract(
    name="kafka_offsets",
    layer="silver",
    doc=(
        "Facts of the Kafka-protocol exchanges, one row per fact: `answer` (one per exchange, and one per "
        "consumer group of a `committed` exchange that answered for the cluster but not for that group: "
        "whether it answered), `group` (a group listed on the primary), `committed` (a group's committed "
        "offset of one partition: on the primary, or the offset MirrorMaker 2 synced for it on DR), "
        "`checkpoint` (the latest MM2 checkpoint of a group and partition: upstream and translated offset, "
        "its record time), `log` (a partition's earliest and latest offset). Topics as named on the cluster "
        "asked (`primary.orders` on DR)."
    ),
    columns=(
        _c("obs_key", pa.string(), "bronze observation", False),
        _c("ts", TS, "the round's tick", False),
        _c("obs_date", pa.string(), "partition column", False),
        _c("replication", pa.string(), "the replication's name", False),
        _c("group_name", pa.string(), "the replication's cluster group", False),
        _c("cluster", pa.string(), "primary | dr", False),
        _c("call", pa.string(), "groups | committed | checkpoints | log_offsets", False),
        _c("fact", pa.string(), "answer | group | committed | checkpoint | log", False),
        _c("consumer_group", pa.string(), "consumer group (user-controlled text)"),
        _c("topic", pa.string(), "topic as named on `cluster` (user-controlled text)"),
        _c("partition", pa.int32(), "partition"),
        _c("offset", pa.int64(), "committed: the committed offset; checkpoint: the translated (downstream) offset; log: the latest (end) offset"),
        _c("log_start", pa.int64(), "log: the earliest offset"),
        _c("upstream_offset", pa.int64(), "checkpoint: the group's committed offset on the primary it was translated from"),
        _c("checkpoint_ts", TS, "checkpoint: the record's timestamp (when MM2 wrote it)"),
        _c("group_state", pa.string(), "group: its state (stable, empty, …) as the primary lists it"),
        _c("answered", pa.bool_(), "answer: the call (or, with consumer_group, that group) answered; null for other facts"),
        _c("error", pa.string(), "answer: why not, and what to do"),
        _c("error_kind", pa.string(), "answer: the error's class"),
    ),
    keys=("obs_key", "fact", "consumer_group", "topic", "partition"),
    partition_by=("obs_date",),
    written_by="analysis.readiness (brokerscope analyze)",
)

FAILOVER_READINESS = TableContract(
    name="failover_readiness",
    layer="gold",
    doc=(
        "Per round of a replication, consumer group and partition of the primary: what the group would "
        "re-read or skip if it failed over to DR now. `committed` (primary) against `translated` (the offset the "
        "group starts from on DR: MirrorMaker 2's synced group offset, else its latest checkpoint, per "
        "`translation`): re_read = min(committed, dr_log_end) − translated when below (what DR holds of what "
        "the group already read), skipped = translated − committed when above (offsets of the mirrored topic "
        "taken to line up with the source's, as when the mirror started with the topic). Without a translation "
        "the group starts where its auto.offset.reset says: `earliest` re-reads from DR's earliest offset, "
        "`latest` skips up to DR's latest, `unknown` leaves both null. `status`: ready | stale (the last "
        "checkpoint is older than `failover_readiness.stale_after` and for an older commit than the group's: the "
        "translation stopped following the group — MM2 down, or no offset sync near the group's position) | no-translation | lossy (it would skip messages) | "
        "not-committed (DR holds a translation the group no longer has on the primary) | unknown (the primary or "
        "DR did not answer in that round: nothing is assumed, re_read and skipped are null). A partition seen "
        "once is carried in every later round, so a round without answers shows it `unknown`, never absent."
    ),
    columns=(
        _c("ts", TS, "the round's tick", False),
        _c("obs_date", pa.string(), "UTC date of ts, the partition column", False),
        _c("replication", pa.string(), "the replication's name", False),
        _c("group_name", pa.string(), "the replication's cluster group", False),
        _c("source_cluster", pa.string(), "MirrorMaker 2's alias of the primary", False),
        _c("target_cluster", pa.string(), "… of DR"),
        _c("consumer_group", pa.string(), "consumer group (user-controlled text)", False),
        _c("topic", pa.string(), "topic on the primary (user-controlled text)", False),
        _c("remote_topic", pa.string(), "the mirrored topic on DR", False),
        _c("partition", pa.int32(), "partition", False),
        _c("committed", pa.int64(), "the group's committed offset on the primary; null: none, or unknown"),
        _c("primary_log_end", pa.int64(), "the partition's latest offset on the primary"),
        _c("translated", pa.int64(), "the offset the group would start from on DR; null: none, or unknown"),
        _c("translated_from", pa.string(), "synced-offset (sync.group.offsets on DR) | checkpoint (the latest MM2 checkpoint) | null"),
        _c("synced_offset", pa.int64(), "the group's offset MM2 synced on DR"),
        _c("checkpoint_offset", pa.int64(), "the latest checkpoint's translated (downstream) offset"),
        _c("checkpoint_upstream", pa.int64(), "the latest checkpoint's upstream offset: the commit it translated"),
        _c("checkpoint_ts", TS, "when MM2 wrote the latest checkpoint"),
        _c("checkpoint_age_s", pa.float64(), "ts − checkpoint_ts in seconds (0 when written during the round)"),
        _c("dr_log_start", pa.int64(), "the mirrored partition's earliest offset on DR"),
        _c("dr_log_end", pa.int64(), "the mirrored partition's latest offset on DR"),
        _c("re_read", pa.int64(), "messages the group would read again on DR; null when unknown"),
        _c("skipped", pa.int64(), "messages the group would never read on DR; null when unknown"),
        _c("status", pa.string(), "ready | stale | no-translation | lossy | not-committed | unknown", False),
        _c("detail", pa.string(), "why, in plain words (the missing answer, the reset policy assumed, …)"),
    ),
    keys=("replication", "consumer_group", "topic", "partition", "ts"),
    partition_by=("obs_date",),
    written_by="analysis.readiness (brokerscope analyze)",
)

# --- stuck messages and replication lag (issue P5) -------------------------------------------------

_BOUNDS_DOC = (
    "Bounds as for role_intervals: the condition was seen from `start_ts` to `end_ts`; it began after "
    "`start_lower` and ended before `end_upper` (null: not observed — it held from the first "
    "observation, or still holds at the last one, `is_open`). A run goes on across a hole in the "
    "observations but counts it in `unobserved_s`, and is then at most `possible`."
)


def _bounds_columns() -> tuple[Column, ...]:
    return (
        _c("start_ts", TS, "first observation showing it", False),
        _c("start_lower", TS, "last observation before start_ts that did not show it"),
        _c("end_ts", TS, "last observation showing it", False),
        _c("end_upper", TS, "first observation after end_ts that did not show it; null while it lasts"),
        _c("is_open", pa.bool_(), "still so at the last observation", False),
        _c("duration_s", pa.float64(), "end_ts − start_ts in seconds (observed length)", False),
        _c("unobserved_s", pa.float64(), "seconds between start_ts and end_ts inside holes (no observation for "
           "longer than analysis.hole_tolerance): the condition there is unknown, so certainty is at most "
           "`possible`; null: not measured"),
    )


STUCK_MESSAGES = TableContract(
    name="stuck_messages",
    layer="gold",
    doc=(
        "Messages that are not moving, one row per finding (rules and thresholds: "
        "analysis/stuck.py). `code`: `stranded-member` (a distributed-destination member "
        "holds messages with no consumer and no delivery beyond the threshold while a sibling "
        "member had consumers), `no-consumers` (the same on a destination without consuming "
        "siblings; Artemis `FirstMessageAge` counts as evidence of how long), `unreachable-member` "
        "(messages last seen on a member whose server stopped serving: unavailable until it "
        "returns), `prepared-transaction` (messages held by prepared XA transactions beyond the "
        "threshold), `replay-after-failover` (a new ActiveMQ master holds more messages than the old "
        "one had plus what arrived since: old messages replayed). " + _BOUNDS_DOC
    ),
    columns=(
        _c("finding_id", pa.string(), "stable id: hash of code, group, instance, destination and start", False),
        _c("code", pa.string(), "stranded-member | no-consumers | unreachable-member | prepared-transaction | replay-after-failover", False),
        _c("severity", pa.string(), "error | warn | info (info: a dead-letter or expiry queue)", False),
        _c("certainty", pa.string(), "certain | possible (unanswered scrapes inside, or a bound assumed)", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group / cluster", False),
        _c("instance", pa.string(), "instance holding the messages (at end_ts)", False),
        _c("destination", pa.string(), "destination (member) name as reported (user-controlled text)", False),
        _c("logical_destination", pa.string(), "logical destination (WebLogic distributed destination, Artemis address)"),
        _c("destination_type", pa.string(), "queue | topic | temp-queue | temp-topic"),
        *_bounds_columns(),
        _c("stuck_for_s", pa.float64(), "stuck at least this long (s): the observed length, or the broker-reported age of the oldest message when that is longer and rising"),
        _c("messages", pa.int64(), "messages concerned at end_ts (unreachable-member: count last seen; replay: the excess)"),
        _c("messages_max", pa.int64(), "most messages seen during the finding (replay: the new master's depth)"),
        _c("oldest_message_age_ms", pa.int64(), "age of the oldest message at end_ts where the broker reports it"),
        _c("threshold_s", pa.float64(), "threshold the finding was held against (s)"),
        _c("instances", pa.string(), "instances the finding was observed on, comma-separated (several across a failover)"),
        _c("siblings_with_consumers", pa.string(), "stranded-member: sibling members' instances that had consumers meanwhile"),
        _c("failover_event_id", pa.string(), "replay-after-failover: the failover_events row"),
        _c("message", pa.string(), "what happened, in plain words", False),
        _c("advice", pa.string(), "what to do about it", False),
    ),
    keys=("finding_id",),
    written_by="analysis.stuck (brokerscope analyze)",
)

REPLICATION_LAG = TableContract(
    name="replication_lag",
    layer="gold",
    doc=(
        "Cross-cluster and consumer lag per topic-partition per scrape of the reporting instance "
        "(flows mirrormaker2, mirrormaker2-checkpoint, replicator, consumer of replication_stats; flow "
        "mirror-offsets from both clusters' log end offsets in kafka_offsets, per round of a replication of "
        "`failover_readiness.replications`: analysis/mirror_lag.py; method: analysis/lag.py). `lag_s` is lag in time: Kafka Lag Exporter's "
        "interpolation over recorded (log end, time) points with bounded extrapolation, never NaN "
        "and never beyond what the points support — `lag_s_method` says how it was obtained. "
        "`status` is Burrow's partition status over the last `window_commits` observations, "
        "evaluated at every scrape (so a partition that stops reporting turns STOP). Rows where "
        "the partition was not reported (`observed` false) carry the last known lag."
    ),
    columns=(
        _c("ts", TS, "scrape time of the reporting instance (evaluation time)", False),
        _c("obs_date", pa.string(), "UTC date of ts, the partition column", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "group of the reporting instance", False),
        _c("instance", pa.string(), "instance that reports the flow (Connect worker, consumer application); mirror-offsets: the replication's name", False),
        _c("flow", pa.string(), "mirrormaker2 | mirrormaker2-checkpoint | replicator | consumer | mirror-offsets (primary log end − DR log end, the brokers' own offsets)", False),
        _c("source_cluster", pa.string(), "cross-cluster source (alias)"),
        _c("target_cluster", pa.string(), "cross-cluster destination (alias)"),
        _c("topic", pa.string(), "topic (user-controlled text)"),
        _c("partition", pa.int32(), "partition"),
        _c("client", pa.string(), "client id / consumer group / connector task"),
        _c("observed", pa.bool_(), "the partition was reported at ts (false: the scrape failed or it was missing)", False),
        _c("lag_messages", pa.float64(), "lag in messages (last known when not observed); null where the flow reports none (MirrorMaker 2 workers older than the pack's replication-consumer read, or without that consumer's MBeans)"),
        _c("position", pa.float64(), "replicated position: derived by integrating throughput_per_s over time (Replicator), measured as DR's log end (mirror-offsets); null otherwise"),
        _c("log_end", pa.float64(), "derived source log end = position + lag_messages (the point recorded for interpolation)"),
        _c("lag_s", pa.float64(), "lag in time (s); null when nothing supports a value (see lag_s_method)"),
        _c("lag_s_method", pa.string(), "caught-up (0) | interpolated | extrapolated (bounded) | lower-bound (the position predates the recorded points: at least this) | reported-latency (the flow's own latency metric: when it reports no lag, or more than the lag derived from its lag in messages) | insufficient-data (null: fewer than two points) | no-positions (null: the flow reports lag but no throughput) | not-observed (null: not reported at ts)", False),
        _c("latency_ms", pa.float64(), "latency the flow reports (MM2 replication-latency-ms / checkpoint-latency-ms, Replicator latency)"),
        _c("status", pa.string(), "Burrow status OK | WARN | STOP | STALL | REWIND; null when the flow reports no lag"),
        _c("status_basis", pa.string(), "log-offsets (all rules, on the brokers' offsets) | derived-offsets (all rules) | lag-only (STALL and REWIND cannot be judged) | none"),
        _c("window_commits", pa.int32(), "observations in the evaluated window", False),
        _c("window_complete", pa.float64(), "window_commits / window size (Burrow `complete`)", False),
    ),
    keys=("instance", "flow", "source_cluster", "target_cluster", "topic", "partition", "client", "ts"),
    partition_by=("obs_date",),
    written_by="analysis.lag (brokerscope analyze)",
)

REPLICATION_FINDINGS = TableContract(
    name="replication_findings",
    layer="gold",
    doc=(
        "Replication problems as runs of observations (rules and thresholds: analysis/lag.py). "
        "Kafka cluster-wide, over scrape rounds that align the brokers of a group: `no-controller` / "
        "`multiple-controllers` (sum of ActiveControllerCount ≠ 1), `under-replicated`, "
        "`under-min-isr`, `offline-partitions`, `follower-lag` (ReplicaFetcherManager MaxLag above "
        "the threshold). Per topic-partition from replication_lag: `replication-lag` (lag_s above "
        "the threshold) and `consumer-warn` / `consumer-stop` / `consumer-stall` / "
        "`consumer-rewind` (Burrow status). Artemis: `replica-sync-gap` (a live not in sync with a "
        "backup beyond the grace period, never from one sample). Failover readiness (flow "
        "`failover-readiness`, from gold failover_readiness; instance = the replication, client = the consumer "
        "group): `failover-readiness-lossy` (rounds in which the group would skip messages if it failed over), "
        "`failover-readiness-untranslated` (no translated offset on DR), `failover-readiness-stale` (the last "
        "checkpoint older than failover_readiness.stale_after, for an older commit); an unknown round (the primary or DR did not answer) is no observation: a run goes on across it. "
        + _BOUNDS_DOC
    ),
    columns=(
        _c("finding_id", pa.string(), "stable id: hash of code, group, instance, series and start", False),
        _c("code", pa.string(), "see above", False),
        _c("severity", pa.string(), "error | warn", False),
        _c("certainty", pa.string(), "certain | possible (a broker did not answer, or a one-round alignment artefact cannot be excluded)", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "cluster / HA group", False),
        _c("instance", pa.string(), "instance concerned; null for cluster-wide findings"),
        _c("flow", pa.string(), "replication_stats flow the finding comes from (`failover-readiness`: gold failover_readiness)", False),
        _c("source_cluster", pa.string(), "cross-cluster source"),
        _c("target_cluster", pa.string(), "cross-cluster destination"),
        _c("topic", pa.string(), "topic (user-controlled text)"),
        _c("partition", pa.int32(), "partition"),
        _c("client", pa.string(), "client id / consumer group / connector task"),
        *_bounds_columns(),
        _c("value_max", pa.float64(), "worst value during the finding (see unit)"),
        _c("value_last", pa.float64(), "value at end_ts"),
        _c("threshold", pa.float64(), "threshold compared with (same unit); null for facts"),
        _c("unit", pa.string(), "partitions | controllers | messages | s", False),
        _c("detail", pa.string(), "brokers concerned, or brokers that did not answer"),
        _c("message", pa.string(), "what happened, in plain words", False),
        _c("advice", pa.string(), "what to do about it", False),
    ),
    keys=("finding_id",),
    written_by="analysis.lag (brokerscope analyze)",
)

LAG_CARRY = TableContract(
    name="lag_carry",
    layer="state",
    doc=(
        "What the lag job carries between runs so that an incremental run goes on from where the last "
        "one stopped and writes, for the new rows only, exactly the rows a full run writes "
        "(analysis/lag_increment.py). One row per `scope`: `series` (a replication_lag series, its "
        "SERIES_KEY columns set; `ts` its last observation; `carry` JSON: basis, first/last observation "
        "and last tick (ns), the integrated position, Kafka Lag Exporter's lookup points, the last "
        "`window` commits Burrow judges, the last evaluation time, the commit count and last lag), "
        "`instance` (an instance of collector_health or a lag flow, or a mirror-offsets replication; "
        "`ts` its last row read, the bound below which a new row is late), `round` (a mirror-offsets "
        "replication: `carry` JSON the first ns and the fact count of its last round, which new facts "
        "must not join) and one `input` row (`carry` JSON: the versions of the input tables read, "
        "bronze_kafka's version and the readiness fingerprint kafka_offsets reflects, the groups with "
        "isr / artemis-replica facts). Written in the same runs as replication_lag and "
        "replication_findings, with the same watermark."
    ),
    columns=(
        _c("scope", pa.string(), "series | instance | round | input", False),
        _c("kind", pa.string(), "series: broker kind of its first observation"),
        _c("group_name", pa.string(), "series: group of its first observation"),
        _c("instance", pa.string(), "reporting instance (mirror-offsets: the replication's name); null for input"),
        _c("flow", pa.string(), "series: flow"),
        _c("source_cluster", pa.string(), "series: cross-cluster source"),
        _c("target_cluster", pa.string(), "series: cross-cluster destination"),
        _c("topic", pa.string(), "series: topic"),
        _c("partition", pa.int32(), "series: partition"),
        _c("client", pa.string(), "series: client"),
        _c("ts", TS, "series: last observation; instance: last row read; round: first fact of the last round"),
        _c("carry", pa.string(), "JSON, by scope (above); floats as Python's repr, so they come back to the bit", False),
    ),
    keys=("scope", "instance", "flow", "source_cluster", "target_cluster", "topic", "partition", "client"),
    written_by="analysis.lag_increment (brokerscope analyze)",
)

# --- risk states, causes and incidents (issue P5) --------------------------------------------------

RISK_FINDINGS = TableContract(
    name="risk_findings",
    layer="gold",
    doc=(
        "HA risk states: conditions in which the next fault loses data or availability, one row per "
        "occurrence (rules: analysis/risk.py). `unprotected-live` (an active instance without a "
        "synchronized backup for longer than the grace period — never from one sample: `ReplicaSync` "
        "reads false during every failover by design), `stale-backup` (an Artemis backup whose "
        "ActivationSequence is behind its live's: it cannot take over; a backup that stopped answering "
        "leaves its live `unprotected-live`), `quorum-too-small` (vote-based "
        "quorum with fewer than 3 live/backup pairs), `quorum-lost-pair` (a pair lost; the rest cannot "
        "form a majority), `check-for-live-server-off` (a restarted live activated while another "
        "instance of its group was active), `shutdown-on-failure-off` (ActiveMQ pair with both "
        "`shutdownOnMasterFailure` and `shutdownOnSlaveFailure` false, from the target config), "
        "`failover-duration` (a failover whose length was decided by configuration: ActiveMQ lock retry "
        "or lease, Artemis connection-ttl far above ZooKeeper session-ms; with the advice). An "
        "incremental run recomputes the groups with new broker_state rows from shortly before their "
        "last stored rows (state: risk_carry) and the group-wide rules in whole; the same rows as a full "
        "run. " + _BOUNDS_DOC
    ),
    columns=(
        _c("finding_id", pa.string(), "stable id: hash of code, group, instance and start", False),
        _c("code", pa.string(), "see above", False),
        _c("severity", pa.string(), "critical | error | warn", False),
        _c("certainty", pa.string(), "certain | possible", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "instance concerned; null for group-wide findings"),
        *_bounds_columns(),
        _c("value", pa.float64(), "measured value (see unit)"),
        _c("threshold", pa.float64(), "what it was compared with (same unit)"),
        _c("unit", pa.string(), "s | pairs | count"),
        _c("detail", pa.string(), "evidence in short (attribute values seen, config keys)"),
        _c("message", pa.string(), "what happened, in plain words", False),
        _c("advice", pa.string(), "what to do about it", False),
    ),
    keys=("finding_id",),
    written_by="analysis.risk (brokerscope analyze)",
)

RISK_CARRY = TableContract(
    name="risk_carry",
    layer="state",
    doc=(
        "What the risk job needs of the stored broker_state rows to go on over new ones exactly as a "
        "full run would (analysis/risk.py, incremental runs): per (group_name, instance) of the "
        "ActiveMQ/Artemis groups, its first and last observation, its first and last answered one, "
        "its first and last answered Artemis backup observation with an activation sequence (the "
        "stale-backup series), and its last reported HAPolicy. The group-wide rules (quorum, "
        "shutdown-on-failure, failover-duration) are computed from it instead of all of broker_state. "
        "Written in the same runs as risk_findings, with the same watermark."
    ),
    columns=(
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "broker instance", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("first_ts", TS, "first observation", False),
        _c("last_ts", TS, "last observation", False),
        _c("first_answered_ts", TS, "first answered observation; null: none yet"),
        _c("last_answered_ts", TS, "last answered observation; null: none yet"),
        _c("first_backup_ts", TS, "first answered Artemis backup observation with an activation sequence > 0"),
        _c("last_backup_ts", TS, "last such observation"),
        _c("ha_policy", pa.string(), "HAPolicy of its last observation reporting one"),
        _c("ha_policy_ts", TS, "that observation's time; null: never reported"),
    ),
    keys=("group_name", "instance"),
    written_by="analysis.risk (brokerscope analyze)",
)

FINDING_CAUSES = TableContract(
    name="finding_causes",
    layer="gold",
    doc=(
        "Probable causes joined onto HA events: a GC pause (gc_findings) or a ZooKeeper finding "
        "(zk_findings) on the instance that lost its role, or on its ensemble, shortly before a "
        "failover (failover_events) or during a split-brain window (split_brain_windows); a live "
        "that had lost its replica (replication_findings `replica-sync-gap`) before or during a "
        "split-brain window of its group. One row "
        "per (effect, cause) pair; `lead_s` is how long before the effect the cause began. Rules: "
        "analysis/causes.py. Recomputed from the gold tables on every run."
    ),
    columns=(
        _c("cause_id", pa.string(), "stable id: hash of effect and cause ids", False),
        _c("effect_table", pa.string(), "failover_events | split_brain_windows", False),
        _c("effect_id", pa.string(), "event_id / window_id of the effect", False),
        _c("cause_table", pa.string(), "gc_findings | zk_findings | replication_findings", False),
        _c("cause_id_ref", pa.string(), "finding_id of the cause", False),
        _c("cause_code", pa.string(), "code of the cause finding", False),
        _c("group_name", pa.string(), "HA group of the effect", False),
        _c("instance", pa.string(), "instance the cause happened on"),
        _c("cause_ts", TS, "when the cause began", False),
        _c("effect_ts", TS, "when the effect began (new live first active / split-brain start)", False),
        _c("lead_s", pa.float64(), "effect_ts − cause_ts in seconds (negative: the cause began after)", False),
        _c("confidence", pa.string(), "likely | possible", False),
        _c("message", pa.string(), "the causal sentence, e.g. 'amq-a paused 21.3 s in a full GC at 02:13:05; the backup activated at 02:13:07'", False),
    ),
    keys=("cause_id",),
    written_by="analysis.causes (brokerscope analyze)",
)

INCIDENTS = TableContract(
    name="incidents",
    layer="gold",
    doc=(
        "Findings of one cluster close in time grouped into one incident, with severity, a "
        "plain-words narrative and advice. `incident_id` is stable across reruns (and between "
        "incremental and `--full` runs): a hash of the cluster and the id of the incident's first "
        "finding. Split brain and outages (ZooKeeper quorum lost, no Kafka controller, offline "
        "partitions) are critical. The evidence rows are in incident_evidence. Rules: "
        "analysis/incidents.py. Recomputed from the gold findings on every run."
    ),
    columns=(
        _c("incident_id", pa.string(), "stable id", False),
        _c("cluster", pa.string(), "cluster: the HA group, or the ZooKeeper ensemble for ensemble-only incidents", False),
        _c("kind", pa.string(), "broker kind (zookeeper for ensemble incidents)", False),
        _c("severity", pa.string(), "critical | error | warn | info: the worst finding's", False),
        _c("status", pa.string(), "open (a finding still open) | closed", False),
        _c("start_ts", TS, "earliest finding start", False),
        _c("end_ts", TS, "latest finding end", False),
        _c("duration_s", pa.float64(), "end_ts − start_ts (s)", False),
        _c("title", pa.string(), "one line, e.g. 'split brain in amq-pair (certain, 10.2 s)'", False),
        _c("narrative", pa.string(), "what happened, in order, in plain words (causes included)", False),
        _c("advice", pa.string(), "what to do, de-duplicated across the findings", False),
        _c("instances", pa.string(), "instances involved, comma-separated"),
        _c("codes", pa.string(), "finding codes involved, comma-separated", False),
        _c("finding_count", pa.int64(), "evidence rows", False),
        _c("has_split_brain", pa.bool_(), "a split_brain_windows row is part of it", False),
        _c("has_failover", pa.bool_(), "a failover_events row is part of it", False),
    ),
    keys=("incident_id",),
    written_by="analysis.incidents (brokerscope analyze)",
)

INCIDENT_EVIDENCE = TableContract(
    name="incident_evidence",
    layer="gold",
    doc=(
        "The findings each incident is made of, one row per (incident, finding), with enough of the "
        "finding to show it without a join: source table and id, code, severity, bounds, message."
    ),
    columns=(
        _c("incident_id", pa.string(), "incidents.incident_id", False),
        _c("source_table", pa.string(), "failover_events | split_brain_windows | risk_findings | stuck_messages | replication_findings | gc_findings | zk_findings | ha_group_checks | finding_causes", False),
        _c("source_id", pa.string(), "that table's key", False),
        _c("code", pa.string(), "finding code (failover, failback, restart, split-brain, or the source's code)", False),
        _c("severity", pa.string(), "critical | error | warn | info", False),
        _c("group_name", pa.string(), "HA group / ensemble"),
        _c("instance", pa.string(), "instance concerned"),
        _c("start_ts", TS, "finding start", False),
        _c("end_ts", TS, "finding end", False),
        _c("message", pa.string(), "the finding's message", False),
    ),
    keys=("incident_id", "source_table", "source_id"),
    written_by="analysis.incidents (brokerscope analyze)",
)

# --- dashboard rollup (issue P15): silver broker_state per instance and minute ------------------------

# The state of one broker_state row, as the dashboard's timeline draws it (dashboards/states.py) and
# broker_minutes counts it: not answering → unreachable; else active → active; else a standby role →
# standby; else a starting role → starting; else unknown (answered, but no role we know).
OBSERVED_STATES = ("active", "standby", "starting", "unreachable", "unknown")
STANDBY_ROLES = ("slave", "backup")  # as analysis/risk.py: the roles that wait to take over
STARTING_ROLES = ("starting",)  # the packs' word for a broker not yet serving (alerts/exporter.py's role list)

BROKER_MINUTES_JOB = "broker-minutes"  # the job whose watermark (analysis/watermark.py) its commits carry

BROKER_MINUTES = TableContract(
    name="broker_minutes",
    layer="gold",
    doc=(
        "broker_state rolled up per instance and UTC minute, for the dashboard's long views (an incident "
        "timeline wider than `max_points` minutes reads ~1,440 rows per instance and day here instead of "
        "every observation). Only observations: a minute without any has no row (unknown, never zero), "
        "and a row's values are exact for the observations of that minute (their obs_date and minute). "
        "States as `OBSERVED_STATES` in lakehouse/tables.py. Partitioned by obs_date and the UTC hour of "
        "`minute` (obs_hour): the incremental run (from the job's watermark: broker_state's version) recomputes "
        "the minutes new broker_state rows fall in and replaces only the hours they touch (at most 60 rows per "
        "instance each), not their whole day. A table stored with another partitioning (obs_date alone, before "
        "obs_hour) is rebuilt in full from broker_state by the next run."
    ),
    columns=(
        _c("obs_date", pa.string(), "obs_date of the observations (the first partition column)", False),
        _c("obs_hour", pa.int32(), "UTC hour of `minute`, 0-23 (the second partition column)", False),
        _c("minute", TS, "start of the UTC minute", False),
        _c("kind", pa.string(), "broker kind", False),
        _c("group_name", pa.string(), "HA group", False),
        _c("instance", pa.string(), "broker instance", False),
        _c("observations", pa.int64(), "broker_state rows in the minute", False),
        _c("first_ts", TS, "first observation in the minute", False),
        _c("last_ts", TS, "last observation in the minute", False),
        _c("max_gap_s", pa.float64(), "longest time between two consecutive observations inside the minute (0: one observation)", False),
        _c("first_state", pa.string(), "state of the first observation: active | standby | starting | unreachable | unknown", False),
        _c("last_state", pa.string(), "state of the last observation", False),
        _c("state_changes", pa.int64(), "times the state differs from the previous observation inside the minute (0: one state all minute)", False),
        _c("active_obs", pa.int64(), "observations in state active", False),
        _c("standby_obs", pa.int64(), "observations in state standby", False),
        _c("starting_obs", pa.int64(), "observations in state starting", False),
        _c("unreachable_obs", pa.int64(), "observations not answered (reachable=false)", False),
        _c("unknown_obs", pa.int64(), "answered observations with no known role (state unknown)", False),
        _c("connections_max", pa.int64(), "largest `connections` observed; null when no observation reported it"),
        _c("enqueued_max", pa.int64(), "largest `total_enqueued` observed (a counter since broker start); null when none"),
        _c("dequeued_max", pa.int64(), "largest `total_dequeued` observed; null when none"),
    ),
    keys=("obs_date", "kind", "group_name", "instance", "minute"),
    partition_by=("obs_date", "obs_hour"),
    written_by="analysis.minutes (brokerscope analyze)",
)

# --- alerts (issue P6): alert state transitions and the notification log ----------------------------

ALERT_HISTORY = TableContract(
    name="alert_history",
    layer="gold",
    doc=(
        "Alert state, one row per status change of an alert (Alertmanager keeps no history): "
        "`firing` when a rule starts matching, `resolved` when it stops. An alert is its label "
        "set; `fingerprint` identifies it. The latest row per fingerprint is the alert's state; "
        "after a restart the alerter reloads it from here, so everything notified firing is "
        "still resolved. Written before any notification about the change is sent. Rules: "
        "alerts/rules.py; pipeline: alerts/pipeline.py."
    ),
    columns=(
        _c("fingerprint", pa.string(), "alert identity: hash of the sorted label set (16 hex digits)", False),
        _c("alertname", pa.string(), "the rule (label alertname)", False),
        _c("severity", pa.string(), "critical | error | warning | info (label severity)"),
        _c("cluster", pa.string(), "label cluster (HA group or ensemble)"),
        _c("status", pa.string(), "firing | resolved: the state from changed_at on", False),
        _c("starts_at", TS, "when the condition began (from the finding where known, else first evaluation)", False),
        _c("ends_at", TS, "resolved: when it ended; null while firing"),
        _c("changed_at", TS, "evaluation time of the change", False),
        _c("labels_json", pa.string(), "all labels, JSON object (sorted keys)", False),
        _c("annotations_json", pa.string(), "annotations at the change (summary, narrative, runbook, dashboard), JSON object", False),
        _c("source", pa.string(), "where the evidence came from: table name(s), or `live` for broker_state passed in by the service"),
    ),
    keys=("fingerprint", "starts_at", "status"),
    written_by="alerts.pipeline (brokerscope run / alerts evaluate)",
)

ALERT_NOTIFICATIONS = TableContract(
    name="alert_notifications",
    layer="gold",
    doc=(
        "The notification log (Alertmanager's nflog, persisted): one row per delivery attempt of a "
        "notification to a receiver, with the firing and resolved fingerprint sets it carried. The "
        "latest `sent` row per (receiver, group_key) is what the dedup stage compares with. "
        "`notification_id` is the idempotency key, also sent as the `X-Brokerscope-Notification-Id` "
        "header: a notification re-sent after a crash in the in-flight window (between the "
        "receiver accepting it and its `sent` row landing) carries the same id. No secret is ever "
        "written here."
    ),
    columns=(
        _c("notification_id", pa.string(), "idempotency key: hash of receiver, group_key, seq and the two sets", False),
        _c("receiver", pa.string(), "receiver name from the config", False),
        _c("receiver_type", pa.string(), "webhook | pagerduty | alertmanager", False),
        _c("group_key", pa.string(), "aggregation group, Alertmanager style: {}:{label=\"value\", …}", False),
        _c("seq", pa.int64(), "number of this notification in its (receiver, group_key): 1, 2, …", False),
        _c("status", pa.string(), "firing (some alert firing) | resolved (all resolved)", False),
        _c("reason", pa.string(), "why it was sent: first notification | new alerts added | some alerts resolved | all alerts resolved | repeat interval elapsed", False),
        _c("firing_fingerprints", pa.list_(pa.string()), "alerts sent as firing (sorted)", False),
        _c("resolved_fingerprints", pa.list_(pa.string()), "alerts sent as resolved (sorted)", False),
        _c("attempt", pa.int32(), "delivery attempt of this notification (1, 2, … across ticks)", False),
        _c("outcome", pa.string(), "sending (about to send) | sent | failed (retriable) | rejected (the receiver refused it: 4xx)", False),
        _c("error", pa.string(), "why it failed (no secrets)"),
        _c("http_status", pa.int32(), "the receiver's HTTP status, when it answered"),
        _c("sent_at", TS, "flush time: the evaluation time of the tick that made the attempt (group_interval and repeat_interval count from it)", False),
        _c("elapsed_ms", pa.float64(), "duration of the attempt"),
    ),
    keys=("notification_id", "attempt", "outcome"),
    written_by="alerts.pipeline (brokerscope run / alerts evaluate)",
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
        CLIENT_SHIFTS,
        SPLIT_BRAIN_WINDOWS,
        HA_GROUP_CHECKS,
        SPINE_CARRY,
        SILVER_CARRY,
        HA_IDENTITY_SIGHTINGS,
        BRONZE_GC_LINES,
        GC_EVENTS,
        GC_PARSE_STATS,
        GC_FINDINGS,
        BRONZE_ZK,
        ZK_SERVER_STATE,
        ZK_COORDINATION,
        ZK_QUORUM,
        ZK_ELECTIONS,
        ZK_FINDINGS,
        STUCK_MESSAGES,
        REPLICATION_LAG,
        REPLICATION_FINDINGS,
        LAG_CARRY,
        BRONZE_KAFKA,
        KAFKA_OFFSETS,
        FAILOVER_READINESS,
        RISK_FINDINGS,
        RISK_CARRY,
        FINDING_CAUSES,
        INCIDENTS,
        INCIDENT_EVIDENCE,
        BROKER_MINUTES,
        ALERT_HISTORY,
        ALERT_NOTIFICATIONS,
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
    for layer in ("bronze", "silver", "gold", "state"):
        out.append(f"## {layer}\n")
        out.extend(t.markdown() for t in TABLES.values() if t.layer == layer)
    return "\n".join(out)
