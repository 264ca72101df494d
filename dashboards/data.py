"""What the dashboard and the report show, read from the lakehouse with delta-rs (no JVM).

Everything here selects, joins and aggregates rows for display; no finding is computed. The
findings come from gold tables (incidents, incident_evidence, split_brain_windows, …). Two silver
series are read only as the context under the timeline and for "now" on the overview: the
observed connections and message counters (broker_state) and how the last scrapes went
(collector_health), always pruned by partition and time.

Large time ranges are aggregated server-side (`bucketed_series`) so a page carries at most
`max_points` points per series, whatever the number of events behind it. A timeline wide enough
that a bucket spans a minute or more is drawn from the gold per-minute rollup `broker_minutes`
(~1,440 rows per instance and day instead of every observation), as long as that rollup reflects
broker_state's current version; otherwise from broker_state, and the figure says why.
"""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analysis.watermark import read_watermark
from dashboards.health import stale_after
from dashboards.states import minute_runs, state_runs
from lakehouse.store import Lakehouse, sql_literal
from lakehouse.tables import BROKER_MINUTES_JOB, OBSERVED_STATES, TABLES

UTC = timezone.utc
ROLLUP = "broker_minutes"
MINUTE = timedelta(minutes=1)
SEVERITY_RANK = {"critical": 0, "error": 1, "warn": 2, "info": 3}

ANALYZE = "brokerscope analyze -c CFG"
CREATED_BY = {
    "bronze_jolokia": "brokerscope collect -c CFG (or brokerscope replay -c CFG FILE)",
    "bronze_zk": "brokerscope collect -c CFG with a kind: zookeeper target",
    "bronze_gc_lines": "brokerscope collect -c CFG with gc_logs on a target",
    "alert_notifications": "brokerscope run -c CFG (or brokerscope alerts evaluate -c CFG)",
    "alert_history": "brokerscope run -c CFG (or brokerscope alerts evaluate -c CFG)",
}


class MissingTable(Exception):
    """A table the page needs is not in the lakehouse; says which and which command creates it."""

    def __init__(self, table: str, root: str):
        self.table, self.root = table, root
        self.command = CREATED_BY.get(table, ANALYZE)
        super().__init__(f"table {table!r} is missing under {root}; create it with `{self.command}`")


class NotFound(Exception):
    """An id in the URL or on the command line names no row."""


def utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def ts_literal(ts: datetime) -> str:
    """A timestamp literal for a delta-rs (DataFusion) predicate."""
    return "'" + utc(ts).strftime("%Y-%m-%dT%H:%M:%S.%fZ") + "'"


def dates_between(start: datetime, end: datetime) -> list[str]:
    """UTC dates (obs_date partition values) from start to end, both included."""
    d, last, out = utc(start).date(), utc(end).date(), []
    while d <= last and len(out) < 3660:
        out.append(d.isoformat())
        d += timedelta(days=1)
    return out


def in_list(column: str, values) -> str:
    return f"{column} IN ({', '.join(sql_literal(v) for v in values)})"


def rows(table: pa.Table | None) -> list[dict]:
    return [] if table is None else table.to_pylist()


def rows_of(table: pa.Table | None, column: str) -> list:
    return [] if table is None else table.column(column).to_pylist()


def split_names(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


class Gold:
    """The lakehouse as the dashboard reads it: cached per table version, clear errors."""

    def __init__(self, lakehouse: Lakehouse, max_points: int = 1000, cache_size: int = 64, fresh_s: float = 2.0,
                 stale_after_s: float = stale_after(5.0, 30.0), clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self.lh = lakehouse
        self.stale_after_s = stale_after_s  # the overview says "unknown" past this age (dashboards/health.py)
        self.hole_s = 3 * 5.0 + 5.0  # no observation for longer: state unknown (Config.hole_tolerance; open_gold sets it)
        self.clock = clock
        self.max_points = max_points
        self.fresh_s = fresh_s  # a table's version is looked up at most this often (one page reads many)
        self._cache: OrderedDict[tuple, pa.Table] = OrderedDict()
        self._cache_size = cache_size
        self._versions: dict[str, tuple[float, int | None]] = {}
        self._rollup: tuple[tuple, str | None] | None = None

    @property
    def root(self) -> str:
        return self.lh.root

    def version(self, name: str) -> int | None:
        """The table's current version (None: no such table), at most fresh_s seconds old."""
        now = time.monotonic()
        hit = self._versions.get(name)
        if hit is not None and now - hit[0] < self.fresh_s:
            return hit[1]
        v = self.lh.version(name) if name in TABLES else None
        self._versions[name] = (now, v)
        return v

    def has(self, name: str) -> bool:
        return self.version(name) is not None

    def read(self, name: str, columns: list[str] | None = None, filter: str | None = None) -> pa.Table:
        """The table (projected, filtered); MissingTable when it does not exist."""
        version = self.version(name)
        if version is None:
            raise MissingTable(name, self.root)
        key = (name, version, tuple(columns or ()), filter)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        got = self.lh.read(name, columns=columns, filter=filter)
        self._cache[key] = got
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return got

    def rollup_gap(self) -> str | None:
        """None when broker_minutes reflects broker_state's current version (its commit watermark);
        else why the long views read broker_state instead."""
        key = (self.version(ROLLUP), self.version("broker_state"))
        if self._rollup is None or self._rollup[0] != key:
            if key[0] is None:
                why = f"the per-minute rollup {ROLLUP} is not built yet (`{ANALYZE}` builds it)"
            else:
                mark = read_watermark(self.lh, BROKER_MINUTES_JOB, [ROLLUP])
                behind = mark is None or mark.input_version != key[1]
                why = (f"the per-minute rollup {ROLLUP} is behind broker_state (the next `{ANALYZE}` brings it up "
                       "to date)") if behind else None
            self._rollup = (key, why)
        return self._rollup[1]

    def optional(self, name: str, columns: list[str] | None = None, filter: str | None = None) -> pa.Table | None:
        """The table, or None when it does not exist (a part of the page that is simply absent)."""
        if not self.has(name):
            return None
        if columns is not None:
            known = set(TABLES[name].column_names)
            columns = [c for c in columns if c in known]
        return self.read(name, columns=columns, filter=filter)


# --- incidents -------------------------------------------------------------------------------------


def incident_list(gold: Gold) -> list[dict]:
    """All incidents, open first, then worst severity, then newest."""
    out = rows(gold.read("incidents", columns=[
        "incident_id", "cluster", "kind", "severity", "status", "start_ts", "end_ts", "duration_s", "title",
        "instances", "has_split_brain", "has_failover"]))
    return sorted(out, key=lambda r: (r["status"] != "open", SEVERITY_RANK.get(r["severity"], 9),
                                      -utc(r["start_ts"]).timestamp()))


MIN_ID_PREFIX = 4  # shorter prefixes are refused: they would name a different incident tomorrow


def resolve_incident_id(known: list[str], text: str) -> str:
    """The incident id `text` names: itself, or the one id it is the start of (the timeline and
    `brokerscope incidents` print the first 8 characters). NotFound says which step helps."""
    if text in known:
        return text
    if len(text) < MIN_ID_PREFIX:
        raise NotFound(f"no incident {text!r}; give the id or at least its first {MIN_ID_PREFIX} characters "
                       "(`brokerscope incidents -c CFG` lists them)")
    matches = sorted(i for i in known if i.startswith(text))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no incident {text!r} among {len(known)}; `brokerscope incidents -c CFG` lists them")
    raise NotFound(f"{text!r} is the start of {len(matches)} incident ids ({', '.join(matches[:5])}); give more characters")


def incident(gold: Gold, incident_id: str) -> dict:
    """The incident with this id, or with the one id that starts with it."""
    got = rows(gold.read("incidents", filter=f"incident_id = {sql_literal(incident_id)}"))
    if not got:
        try:
            full = resolve_incident_id(rows_of(gold.read("incidents", columns=["incident_id"]), "incident_id"), incident_id)
        except NotFound as e:
            raise NotFound(f"{e} (lakehouse {gold.root})") from None
        got = rows(gold.read("incidents", filter=f"incident_id = {sql_literal(full)}"))
    return got[0]


def evidence(gold: Gold, incident_id: str) -> list[dict]:
    got = rows(gold.read("incident_evidence", filter=f"incident_id = {sql_literal(incident_id)}"))
    return sorted(got, key=lambda r: (utc(r["start_ts"]), SEVERITY_RANK.get(r["severity"], 9)))


def incident_of_findings(gold: Gold) -> dict[str, str]:
    """source_id → incident_id, to link a finding in any view back to its incident."""
    if not gold.has("incident_evidence"):
        return {}
    t = gold.read("incident_evidence", columns=["source_id", "incident_id"])
    return dict(zip(t.column("source_id").to_pylist(), t.column("incident_id").to_pylist()))


def by_ids(gold: Gold, table: str, key: str, ids: list[str]) -> list[dict]:
    if not ids or not gold.has(table):
        return []
    return rows(gold.read(table, filter=in_list(key, sorted(set(ids)))))


@dataclass
class TimelineData:
    """Everything the incident timeline draws, for one view range."""

    start: datetime
    end: datetime
    incident_start: datetime
    incident_end: datetime
    instances: list[str]
    intervals: list[dict] = field(default_factory=list)
    split_brains: list[dict] = field(default_factory=list)
    failovers: list[dict] = field(default_factory=list)
    gc_pauses: list[dict] = field(default_factory=list)
    zk_elections: list[dict] = field(default_factory=list)
    zk_handovers: list[dict] = field(default_factory=list)
    alerts: list[dict] = field(default_factory=list)
    states: list[dict] = field(default_factory=list)  # per instance: runs of active/standby/starting/unreachable/unknown
    series: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # instance → ts and values
    bucket_s: float = 0.0  # 0: every observation drawn; else the width of the aggregation buckets
    events_behind: int = 0  # observations the series were aggregated from
    source: str = "broker_state"  # where states and series come from: broker_state, or ROLLUP (per minute)
    source_note: str | None = None  # why a long view reads broker_state rather than ROLLUP
    max_points: int = 1000  # views up to this many minutes wide are drawn from every observation


@dataclass
class IncidentBundle:
    incident: dict
    evidence: list[dict]
    causes: list[dict]
    findings: dict[str, list[dict]]  # source table → its rows that are evidence
    timeline: TimelineData
    shifts: dict[str, dict] = field(default_factory=dict)  # failover event_id → its client_shifts row


def default_range(inc: dict, pad_fraction: float = 0.25, min_pad_s: float = 5.0) -> tuple[datetime, datetime]:
    start, end = utc(inc["start_ts"]), utc(inc["end_ts"])
    pad = timedelta(seconds=max(min_pad_s, (end - start).total_seconds() * pad_fraction))
    return start - pad, end + pad


def load_incident(gold: Gold, incident_id: str, view: tuple[datetime, datetime] | None = None) -> IncidentBundle:
    inc = incident(gold, incident_id)
    incident_id = inc["incident_id"]  # the full id when a prefix was given
    ev = evidence(gold, incident_id)
    ids_by_table: dict[str, list[str]] = {}
    for r in ev:
        ids_by_table.setdefault(r["source_table"], []).append(r["source_id"])
    keys = {t: TABLES[t].keys[0] for t in ids_by_table if t in TABLES and len(TABLES[t].keys) == 1}
    findings = {t: by_ids(gold, t, k, ids_by_table[t]) for t, k in keys.items()}
    effect_ids = ids_by_table.get("failover_events", []) + ids_by_table.get("split_brain_windows", [])
    causes = by_ids(gold, "finding_causes", "effect_id", effect_ids)
    known = {c["cause_id"] for c in causes}
    causes += [c for c in findings.get("finding_causes", []) if c["cause_id"] not in known]
    start, end = view or default_range(inc)
    timeline = timeline_data(gold, inc, ev, start, end)
    moves = [e["event_id"] for e in findings.get("failover_events", []) + timeline.failovers]
    shifts = {r["event_id"]: r for r in by_ids(gold, "client_shifts", "event_id", moves)}
    return IncidentBundle(inc, ev, causes, findings, timeline, shifts)


def _overlapping(start_col: str, end_col: str, start: datetime, end: datetime) -> str:
    return f"{start_col} <= {ts_literal(end)} AND {end_col} >= {ts_literal(start)}"


def timeline_data(gold: Gold, inc: dict, ev: list[dict], start: datetime, end: datetime) -> TimelineData:
    cluster = inc["cluster"]
    group = f"group_name = {sql_literal(cluster)}"
    instances = split_names(inc.get("instances"))
    data = TimelineData(start, end, utc(inc["start_ts"]), utc(inc["end_ts"]), list(instances))
    data.intervals = rows(gold.optional("role_intervals", filter=f"{group} AND {_overlapping('start_ts', 'end_ts', start, end)}"))
    data.split_brains = rows(gold.optional("split_brain_windows", filter=(
        f"{group} AND {_overlapping('certain_start', 'certain_end', start, end)}")))
    data.failovers = rows(gold.optional("failover_events", filter=(
        f"{group} AND {_overlapping('old_last_active', 'new_first_active', start, end)}")))
    for r in data.intervals:
        data.instances.append(r["instance"])
    for w in data.split_brains:
        data.instances += [w["instance_a"], w["instance_b"]]
    for e in data.failovers:
        data.instances += [e["from_instance"], e["to_instance"]]
    in_range = f"ts >= {ts_literal(start)} AND ts <= {ts_literal(end)}"
    gc = gold.optional("gc_findings", columns=["finding_id", "code", "severity", "target", "group_name", "ts", "value",
                                               "unit", "message"],
                       filter=f"({group} OR {in_list('target', instances or [''])}) AND {in_range}")
    data.gc_pauses = thin_markers(None if gc is None else gc.filter(pc.equal(gc.column("unit"), "ms")), start, end,
                                  gold.max_points, "target")
    ensembles = _ensembles_of(gold, cluster, inc.get("kind"), ev)
    if ensembles:
        data.zk_elections = rows(gold.optional("zk_elections", filter=(
            f"{in_list('ensemble', ensembles)} AND new_first_seen >= {ts_literal(start)} "
            f"AND old_last_seen <= {ts_literal(end)}")))
        data.zk_handovers = rows(gold.optional("zk_findings", filter=(
            f"code IN ('zk.lock-handover', 'zk.lease-vanished', 'zk.gc-pause-lost-lease') "
            f"AND ({group} OR {in_list('ensemble', ensembles)}) AND {_overlapping('start_ts', 'end_ts', start, end)}")))
    data.alerts = alert_rows(gold, start, end, cluster)
    data.instances = list(dict.fromkeys(x for x in data.instances if x))
    days = in_list("obs_date", dates_between(start, end))
    data.max_points = gold.max_points
    long_view = end - start >= gold.max_points * MINUTE  # a bucket spans a minute or more
    data.source_note = gold.rollup_gap() if long_view and gold.has("broker_state") else None
    if long_view and data.source_note is None:
        minutes = gold.read(ROLLUP, columns=MINUTE_COLUMNS, filter=(
            f"{days} AND {group} AND minute >= {ts_literal(utc(start).replace(second=0, microsecond=0))} "
            f"AND minute <= {ts_literal(end)}"))
        data.source = ROLLUP
        data.states = minute_runs(minutes, gold.hole_s)
        data.events_behind = pc.sum(minutes.column("observations")).as_py() or 0
        data.series, data.bucket_s = minute_series(minutes, start, end, gold.max_points)
    else:
        state = gold.optional("broker_state", columns=["ts", "instance", "connections", "total_enqueued",
                                                       "total_dequeued", "reachable", "active", "role"],
                              filter=f"{days} AND {group} AND {in_range}")
        if state is None:
            return data
        data.states = state_runs(state, gold.hole_s)
        data.events_behind = state.num_rows
        data.series, data.bucket_s = bucketed_series(state, start, end, gold.max_points)
    data.instances += [i for i in data.series if i not in data.instances]
    return data


MINUTE_COLUMNS = ["minute", "instance", "observations", "first_ts", "last_ts", "max_gap_s", "first_state",
                  "state_changes", *(f"{s}_obs" for s in OBSERVED_STATES), "connections_max", "enqueued_max",
                  "dequeued_max"]


def _ensembles_of(gold: Gold, cluster: str, kind: str | None, ev: list[dict]) -> list[str]:
    """ZooKeeper ensembles that coordinate this cluster (from zk_findings naming the group)."""
    out = {cluster} if kind == "zookeeper" else set()
    out |= {r["group_name"] for r in ev if r["source_table"] == "zk_findings" and r.get("group_name")}
    t = gold.optional("zk_findings", columns=["ensemble"], filter=f"group_name = {sql_literal(cluster)}")
    if t is not None:
        out |= {e for e in t.column("ensemble").to_pylist() if e}
    return sorted(out)


def thin_markers(markers: pa.Table | None, start: datetime, end: datetime, max_points: int, by: str) -> list[dict]:
    """Marker rows (ts, value, `by`), at most about max_points: past that, the row with the largest
    value per time bucket and `by` (vectorized: 1 M rows stay cheap)."""
    if markers is None or markers.num_rows == 0:
        return []
    markers = markers.filter(pc.is_valid(markers.column("ts")))
    if markers.num_rows <= max_points:
        return markers.sort_by([("ts", "ascending")]).to_pylist()
    width_us = max(1, math.ceil((utc(end) - utc(start)).total_seconds() * 1e6 / max(1, max_points // 8)))
    keep = largest_per_bucket(markers.column("ts"), markers.column(by), markers.column("value"),
                              int(utc(start).timestamp() * 1e6), width_us)
    return markers.take(pa.array(keep)).to_pylist()


def bucket_width_us(span_us: int, max_points: int) -> int:
    """The narrowest round width (two significant digits, in µs) that cuts span_us into at most
    max_points buckets: 3 s rather than 2.999001 s."""
    raw = max(1, math.ceil(span_us / max(1, max_points)))
    step = 10 ** max(0, len(str(raw)) - 2)
    return math.ceil(raw / step) * step


def largest_per_bucket(ts: pa.ChunkedArray, by: pa.ChunkedArray, value: pa.ChunkedArray, start_us: int,
                       width_us: int) -> np.ndarray:
    """Indices of the row with the largest value (nulls least) per `by` and time bucket of width_us
    from start_us, in time order: thinning that never drops a series' worst point."""
    t_us = ts.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    bucket = (t_us - start_us) // width_us
    who = pc.dictionary_encode(by.combine_chunks()).indices.to_numpy(zero_copy_only=False)
    v = pc.fill_null(pc.cast(value, pa.float64()), -np.inf).to_numpy()
    order = np.lexsort((-v, bucket, who))
    first = np.ones(len(order), bool)
    first[1:] = (who[order][1:] != who[order][:-1]) | (bucket[order][1:] != bucket[order][:-1])
    keep = order[first]
    return keep[np.argsort(t_us[keep], kind="stable")]


def bucketed_series(state: pa.Table, start: datetime, end: datetime, max_points: int) -> tuple[dict[str, dict[str, np.ndarray]], float]:
    """Per instance: connections and messages in/out per second, at most max_points points each,
    as numpy arrays (ts datetime64[us] UTC, values float64 with NaN where unknown).

    Observations are grouped into equal time buckets (one per observation when they are few);
    a bucket shows its largest connection count and its last counters; rates are the counter
    growth between consecutive buckets over their time (NaN across a restart, where counters
    fall back)."""
    span_us = max(1, int((utc(end) - utc(start)).total_seconds() * 1e6))
    width_us = max(1, math.ceil(span_us / max_points))
    if state.num_rows == 0:
        return {}, 0.0
    ts = state.column("ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    start_us = int(utc(start).timestamp() * 1e6)
    bucket = pa.array((ts.to_numpy() - start_us) // width_us)
    per_obs = state.num_rows / max(1, pc.count_distinct(state.column("instance")).as_py())
    out = _series(pa.table({"instance": state.column("instance"), "bucket": bucket, "ts": ts,
                            "connections": state.column("connections"), "enq": state.column("total_enqueued"),
                            "deq": state.column("total_dequeued")}))
    aggregated = per_obs > max_points
    return out, (width_us / 1e6 if aggregated else 0.0)


def minute_series(minutes: pa.Table, start: datetime, end: datetime, max_points: int) -> tuple[dict[str, dict[str, np.ndarray]], float]:
    """`bucketed_series` from broker_minutes rows: buckets of whole minutes (at most max_points
    over start..end), each at its last observation's time with its largest connection count and
    counters; the bucket width in s. A minute without a row adds nothing (no point, never a zero)."""
    if minutes.num_rows == 0:
        return {}, 0.0
    width = max(1, math.ceil((utc(end) - utc(start)) / MINUTE / max_points))
    first_us = int(utc(start).replace(second=0, microsecond=0).timestamp() * 1e6)
    minute_us = minutes.column("minute").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    bucket = pa.array((minute_us - first_us) // (width * 60_000_000))
    return _series(pa.table({"instance": minutes.column("instance"), "bucket": bucket,
                             "ts": minutes.column("last_ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()),
                             "connections": minutes.column("connections_max"), "enq": minutes.column("enqueued_max"),
                             "deq": minutes.column("dequeued_max")})), width * 60.0


def _series(t: pa.Table) -> dict[str, dict[str, np.ndarray]]:
    """(instance, bucket, ts µs, connections, enq, deq) rows → per instance one point per bucket:
    its last time, largest connections and counters, rates between consecutive buckets."""
    agg = t.group_by(["instance", "bucket"], use_threads=False).aggregate(
        [("ts", "max"), ("connections", "max"), ("enq", "max"), ("deq", "max")]
    ).sort_by([("instance", "ascending"), ("bucket", "ascending")])
    out: dict[str, dict[str, np.ndarray]] = {}
    inst = agg.column("instance").to_numpy(zero_copy_only=False)
    for name in dict.fromkeys(inst.tolist()):
        sel = agg.filter(pa.array(inst == name))
        t_us = sel.column("ts_max").to_numpy()
        out[name] = {
            "ts": t_us.astype("datetime64[us]"),
            "connections": _floats(sel.column("connections_max")),
            "in_per_s": _rates(t_us, sel.column("enq_max")),
            "out_per_s": _rates(t_us, sel.column("deq_max")),
        }
    return out


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)  # nulls → NaN


def _rates(t_us: np.ndarray, counter: pa.ChunkedArray) -> np.ndarray:
    values = _floats(counter)
    if len(values) == 0:
        return values
    dt = np.diff(t_us) / 1e6
    dv = np.diff(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where((dt > 0) & (dv >= 0), dv / dt, np.nan)
    return np.concatenate([[np.nan], np.round(r, 3)])


# --- alerts (the alerting pipeline's tables: shown when present) ---------------------------------------


def annotations(row: dict) -> dict:
    try:
        got = json.loads(row.get("annotations_json") or "{}")
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def alert_rows(gold: Gold, start: datetime, end: datetime, cluster: str) -> list[dict]:
    """For the timeline: the cluster's alert state changes (alert_history) and the notifications
    sent about its alerts (alert_notifications), as {ts, text, row}."""
    if not gold.has("alert_history"):
        return []
    mine = f"cluster = {sql_literal(cluster)}"
    out = [{"ts": utc(r["changed_at"]), "text": f"{r['status']}: {r['alertname']}", "row": r}
           for r in rows(gold.read("alert_history", filter=(
               f"{mine} AND changed_at >= {ts_literal(start)} AND changed_at <= {ts_literal(end)}")))]
    fingerprints = set(rows_of(gold.read("alert_history", columns=["fingerprint"], filter=mine), "fingerprint"))
    sent = gold.optional("alert_notifications", filter=(
        f"outcome = 'sent' AND sent_at >= {ts_literal(start)} AND sent_at <= {ts_literal(end)}"))
    for n in rows(sent):
        if fingerprints & set((n["firing_fingerprints"] or []) + (n["resolved_fingerprints"] or [])):
            out.append({"ts": utc(n["sent_at"]), "text": f"sent to {n['receiver']} ({n['status']})", "row": n})
    return sorted(out, key=lambda a: a["ts"])


# --- finding views -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FindingView:
    """One list page: a gold table, its time and group columns and what to show."""

    path: str
    title: str
    table: str
    key: str
    ts: str
    group: str
    columns: tuple[str, ...]


VIEWS = (
    FindingView("/stuck", "Stuck messages", "stuck_messages", "finding_id", "start_ts", "group_name",
                ("start_ts", "end_ts", "severity", "code", "group_name", "instance", "destination", "messages",
                 "stuck_for_s", "message")),
    FindingView("/lag", "Replication lag", "replication_findings", "finding_id", "start_ts", "group_name",
                ("start_ts", "end_ts", "severity", "code", "group_name", "instance", "topic", "partition", "value_max",
                 "unit", "message")),
    FindingView("/gc", "GC", "gc_findings", "finding_id", "ts", "group_name",
                ("ts", "severity", "code", "group_name", "target", "value", "unit", "message")),
    FindingView("/zookeeper", "ZooKeeper", "zk_findings", "finding_id", "start_ts", "group_name",
                ("start_ts", "end_ts", "severity", "code", "ensemble", "group_name", "instance", "message")),
    FindingView("/risks", "HA risks", "risk_findings", "finding_id", "start_ts", "group_name",
                ("start_ts", "end_ts", "severity", "code", "group_name", "instance", "message")),
    FindingView("/alerts", "Alert history", "alert_history", "fingerprint", "changed_at", "cluster",
                ("changed_at", "status", "severity", "alertname", "cluster", "starts_at", "ends_at", "summary")),
)
DERIVED = {"summary": "annotations_json"}  # shown columns computed from another one (alert_history)
VIEW_BY_PATH = {v.path: v for v in VIEWS}


def group_time_filter(group_col: str, group: str | None, ts_col: str, since: datetime | None,
                      until: datetime | None, *more: str) -> str | None:
    """A predicate for the view filters: this group (all when None), from since, until until."""
    where = list(more)
    if group:
        where.append(f"{group_col} = {sql_literal(group)}")
    if since:
        where.append(f"{ts_col} >= {ts_literal(since)}")
    if until:
        where.append(f"{ts_col} <= {ts_literal(until)}")
    return " AND ".join(where) or None


def finding_rows(gold: Gold, view: FindingView, group: str | None = None, since: datetime | None = None,
                 until: datetime | None = None, limit: int = 500) -> tuple[list[dict], int, list[str]]:
    """(newest rows, total matching, groups present) of one view, filtered by group and time."""
    cols = list(dict.fromkeys(DERIVED.get(c, c) for c in (view.key, view.ts, view.group, *view.columns)))
    t = gold.read(view.table, columns=cols, filter=group_time_filter(view.group, group, view.ts, since, until))
    groups = sorted({x for x in gold.read(view.table, columns=[view.group]).column(view.group).to_pylist() if x})
    total = t.num_rows
    t = t.filter(pc.is_valid(t.column(view.ts))).sort_by([(view.ts, "descending")]).slice(0, limit)
    found = t.to_pylist()
    if "annotations_json" in cols:
        for r in found:
            r["summary"] = annotations(r).get("summary")
    return found, total, groups


def alert_incident_links(found: list[dict]) -> dict[str, str]:
    """fingerprint → incident, from the incident_id the alerter put in the annotations."""
    return {r["fingerprint"]: annotations(r)["incident_id"] for r in found if annotations(r).get("incident_id")}


def lag_series(gold: Gold, group: str | None, since: datetime | None, until: datetime | None,
               max_points: int) -> dict[str, dict[str, list]]:
    """Lag in seconds per flow/topic/partition over time (replication_lag), bucketed by max."""
    if not gold.has("replication_lag"):
        return {}
    t = gold.read("replication_lag", columns=["ts", "flow", "topic", "partition", "lag_s"],
                  filter=group_time_filter("group_name", group, "ts", since, until, "lag_s IS NOT NULL"))
    if t.num_rows == 0:
        return {}
    ts = t.column("ts").cast(pa.int64())
    lo, hi = pc.min(ts).as_py(), pc.max(ts).as_py()
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    series = pc.binary_join_element_wise(t.column("flow"), pc.fill_null(t.column("topic"), ""),
                                         pc.cast(pc.fill_null(t.column("partition"), -1), pa.string()), " ")
    agg = pa.table({"series": series, "bucket": pa.array((ts.to_numpy() - lo) // width), "ts": ts,
                    "lag_s": t.column("lag_s")}).group_by(["series", "bucket"], use_threads=False).aggregate(
        [("ts", "max"), ("lag_s", "max")]).sort_by([("series", "ascending"), ("bucket", "ascending")])
    out: dict[str, dict[str, list]] = {}
    for r in agg.to_pylist():
        s = out.setdefault(r["series"], {"ts": [], "lag_s": []})
        s["ts"].append(datetime.fromtimestamp(r["ts_max"] / 1e6, UTC))
        s["lag_s"].append(r["lag_s_max"])
    return dict(list(out.items())[:50])
