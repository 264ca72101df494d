"""Silver time series for two views, selected and bucketed for display (no finding is computed):

* GC: stop-the-world pauses over time per JVM (gc_events), thinned to at most `max_points` per
  target by keeping the LONGEST pause of each time bucket, so the worst pause is always drawn;
* Destinations: depth (messages) and consumers per instance and destination (destination_stats),
  the deepest few by default, bucketed to at most `max_points` points per series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from dashboards.data import Gold, bucket_width_us, dates_between, group_time_filter, in_list, largest_per_bucket, utc
from dashboards.overview import partition_days, recent_rows
from lakehouse.store import sql_literal

GC_COLUMNS = ["wall_time", "target", "pause_ms", "event_type", "cause", "phase", "heap_after_kb"]
NO_GC_EVENTS = ("No GC pauses to plot: the table gc_events is not in the lakehouse at {root}. Give targets gc_logs "
                "and collect (brokerscope collect -c CFG), or import logs (brokerscope gc import DIR -c CFG "
                "--target NAME), then run brokerscope analyze -c CFG.")


@dataclass
class GcPauses:
    """Per target: ts (datetime64[us] UTC), pause_ms, heap_mib (NaN where not logged), event_type,
    cause, phase; `bucket_s` > 0 when the longest pause per bucket of that width was kept."""

    series: dict[str, dict] = field(default_factory=dict)
    bucket_s: float = 0.0
    pauses: int = 0  # pauses in the selection, before thinning
    note: str | None = None  # why there is nothing to draw


def gc_target_groups(gold: Gold) -> dict[str, set[str]]:
    """target with GC events → HA groups: gc_findings' group_name of the target, and broker_state's
    group_name of the instance of that name (instance = target name, one JVM) in its newest days."""
    if not gold.has("gc_events"):
        return {}
    targets = set(pc.unique(gold.read("gc_events", columns=["target"]).column("target")).to_pylist())
    out: dict[str, set[str]] = {}
    for t, target_col in ((gold.optional("gc_findings", columns=["target", "group_name"]), "target"),
                          (recent_rows(gold, "broker_state", ["instance", "group_name"], "instance", targets), "instance")):
        if t is not None:
            for target, grp in zip(t.column(target_col).to_pylist(), t.column("group_name").to_pylist()):
                if grp and target in targets:
                    out.setdefault(target, set()).add(grp)
    return out


def gc_groups(gold: Gold) -> list[str]:
    return sorted({g for groups in gc_target_groups(gold).values() for g in groups})


def gc_pauses(gold: Gold, group: str | None, since: datetime | None, until: datetime | None,
              max_points: int) -> GcPauses:
    """Pauses with a wall time, of the group's targets (all when None), from since until until."""
    if not gold.has("gc_events"):
        return GcPauses(note=NO_GC_EVENTS.format(root=gold.root))
    where = ["pause_ms IS NOT NULL", "wall_time IS NOT NULL"]
    if group:
        targets = sorted(t for t, groups in gc_target_groups(gold).items() if group in groups)
        if not targets:
            return GcPauses(note=f"No JVM of group {group} is known: neither broker_state nor gc_findings names "
                                 "a target of it with GC events.")
        where.append(in_list("target", targets))
    t = gold.read("gc_events", columns=GC_COLUMNS, filter=group_time_filter("target", None, "wall_time", since, until,
                                                                               *where))
    if t.num_rows == 0:
        return GcPauses(note="No stop-the-world pause with a wall time in this selection.")
    out = GcPauses(pauses=t.num_rows)
    t, out.bucket_s = longest_pauses(t, max_points)
    for target in sorted(set(t.column("target").to_pylist())):
        s = t.filter(pc.equal(t.column("target"), target))
        out.series[target] = {
            "ts": s.column("wall_time").cast(pa.int64()).to_numpy().astype("datetime64[us]"),
            "pause_ms": pc.cast(s.column("pause_ms"), pa.float64()).to_numpy(zero_copy_only=False),
            "heap_mib": pc.cast(s.column("heap_after_kb"), pa.float64()).to_numpy(zero_copy_only=False) / 1024.0,
            **{c: s.column(c).to_pylist() for c in ("event_type", "cause", "phase")},
        }
    return out


def longest_pauses(t: pa.Table, max_points: int) -> tuple[pa.Table, float]:
    """The pauses in time order, at most max_points per target: past that, the longest of each
    time bucket; and the bucket width in s (0: every pause kept)."""
    t = t.set_column(t.schema.get_field_index("wall_time"), "wall_time",
                     t.column("wall_time").cast(pa.timestamp("us", tz="UTC")))
    if pc.max(pc.value_counts(t.column("target")).field("counts")).as_py() <= max_points:
        return t.sort_by([("wall_time", "ascending")]), 0.0
    ts = t.column("wall_time").cast(pa.int64())
    lo, hi = pc.min(ts).as_py(), pc.max(ts).as_py()
    width = bucket_width_us(hi - lo + 1, max_points)
    keep = largest_per_bucket(t.column("wall_time"), t.column("target"), t.column("pause_ms"), lo, width)
    return t.take(pa.array(keep)), width / 1e6


# --- destinations ------------------------------------------------------------------------------------

DEST_COLUMNS = ["ts", "instance", "destination_type", "destination", "messages", "consumers"]
TOP_DESTINATIONS = 8
MAX_CHOICES = 300  # destinations offered in the picker (deepest first)
DEFAULT_SPAN = timedelta(hours=1)  # without a time filter: the hour up to the newest observation
SEP = "\x1f"  # between instance, type and name in a series key (names are printable text)


@dataclass
class DestinationSeries:
    """Series keyed `instance SEP type SEP destination`: label, ts (datetime64[us] UTC), messages
    (largest per bucket), consumers (fewest per bucket: a moment without a consumer stays visible)."""

    start: datetime | None = None
    end: datetime | None = None
    ranked: list[tuple[str, str, float | None]] = field(default_factory=list)  # (key, label, largest depth), deepest first
    chosen: list[str] = field(default_factory=list)
    series: dict[str, dict] = field(default_factory=dict)
    bucket_s: float = 0.0
    rows: int = 0  # observations in the selection, before bucketing
    note: str | None = None


def series_label(key: str) -> str:
    instance, kind, name = key.split(SEP, 2)
    return f"{name} ({kind}) on {instance}"


def destination_groups(gold: Gold, days: int = 7) -> list[str]:
    """Groups with destination observations in the newest `days` partitions."""
    recent = partition_days(gold, "destination_stats", days)
    if not recent:
        return []
    t = gold.read("destination_stats", columns=["group_name"], filter=in_list("obs_date", recent))
    return sorted(x for x in pc.unique(t.column("group_name")).to_pylist() if x)


def destination_window(gold: Gold, group: str | None, since: datetime | None,
                       until: datetime | None) -> tuple[datetime, datetime] | None:
    """The time range shown: the filter's, else the hour up to the group's newest observation."""
    if since or until:
        hi = utc(until) if until else utc(gold.clock())
        return (utc(since) if since else hi - DEFAULT_SPAN), hi
    where = f"group_name = {sql_literal(group)}" if group else None
    t = recent_rows(gold, "destination_stats", ["ts", "group_name"], "group_name", {group} if group else set(),
                    where=where)
    if t is None or t.num_rows == 0:
        return None
    last = utc(pc.max(t.column("ts")).as_py())
    return last - DEFAULT_SPAN, last


def destination_series(gold: Gold, group: str | None, since: datetime | None, until: datetime | None,
                       max_points: int, chosen: list[str] | None = None, top: int = TOP_DESTINATIONS) -> DestinationSeries:
    """The chosen series (default: the `top` deepest in the range) of the group (all when None)."""
    window = destination_window(gold, group, since, until)
    if window is None:
        return DestinationSeries(note=f"No destination observations{f' for group {group}' if group else ''}.")
    lo, hi = window
    out = DestinationSeries(lo, hi)
    where = group_time_filter("group_name", group, "ts", lo, hi, in_list("obs_date", dates_between(lo, hi)))
    t = gold.read("destination_stats", columns=DEST_COLUMNS, filter=where)
    if t.num_rows == 0:
        out.note = f"No destination observations{f' for group {group}' if group else ''} in this time range."
        return out
    if not since:  # the default hour, from the first observation in it
        out.start = max(lo, utc(pc.min(t.column("ts")).as_py()))
    t = keyed(t)
    out.ranked = ranked(t)
    known = {k for k, _, _ in out.ranked}
    out.chosen = [k for k in chosen or [] if k in known] or [k for k, _, _ in out.ranked[:top]]
    t = t.filter(pc.is_in(t.column("key"), value_set=pa.array(out.chosen, pa.string())))
    out.rows = t.num_rows
    t, out.bucket_s = bucket_destinations(t, max_points)
    for k in out.chosen:
        s = t.filter(pc.equal(t.column("key"), k))
        out.series[k] = {"label": series_label(k),
                         "ts": s.column("ts").cast(pa.int64()).to_numpy().astype("datetime64[us]"),
                         "messages": s.column("messages").to_numpy(zero_copy_only=False),
                         "consumers": s.column("consumers").to_numpy(zero_copy_only=False)}
    return out


def keyed(t: pa.Table) -> pa.Table:
    """destination_stats rows as (key, ts, messages, consumers), the counts as float (null → NaN)."""
    key = pc.binary_join_element_wise(t.column("instance"), t.column("destination_type"), t.column("destination"), SEP)
    return pa.table({"key": key, "ts": t.column("ts"), "messages": pc.cast(t.column("messages"), pa.float64()),
                     "consumers": pc.cast(t.column("consumers"), pa.float64())})


def ranked(t: pa.Table) -> list[tuple[str, str, float | None]]:
    """(key, label, largest depth) of every series, deepest first."""
    depth = t.group_by("key", use_threads=False).aggregate([("messages", "max")]).sort_by(
        [("messages_max", "descending"), ("key", "ascending")])
    return [(k, series_label(k), m) for k, m in zip(depth.column("key").to_pylist(), depth.column("messages_max").to_pylist())]


def bucket_destinations(t: pa.Table, max_points: int) -> tuple[pa.Table, float]:
    """(key, ts, messages, consumers) rows, at most max_points per key: per time bucket the last
    time, the most messages and the fewest consumers; the bucket width in s (0: not bucketed)."""
    t = t.set_column(1, "ts", t.column("ts").cast(pa.timestamp("us", tz="UTC")))
    if t.num_rows == 0 or pc.max(pc.value_counts(t.column("key")).field("counts")).as_py() <= max_points:
        return t.sort_by([("key", "ascending"), ("ts", "ascending")]), 0.0
    ts = t.column("ts").cast(pa.int64())
    lo, hi = pc.min(ts).as_py(), pc.max(ts).as_py()
    width = bucket_width_us(hi - lo + 1, max_points)
    agg = pa.table({"key": t.column("key"), "bucket": pa.array((ts.to_numpy() - lo) // width), "ts": ts,
                    "messages": t.column("messages"), "consumers": t.column("consumers")}).group_by(
        ["key", "bucket"], use_threads=False).aggregate([("ts", "max"), ("messages", "max"), ("consumers", "min")])
    agg = agg.sort_by([("key", "ascending"), ("bucket", "ascending")])
    return pa.table({"key": agg.column("key"), "ts": agg.column("ts_max").cast(pa.timestamp("us", tz="UTC")),
                     "messages": agg.column("messages_max"), "consumers": agg.column("consumers_min")}), width / 1e6
