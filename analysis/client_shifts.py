"""Client shifts: failover_events + silver broker_state → gold client_shifts, per failover or
failback of an ActiveMQ or Artemis group: the connections the old live had, when the new live first
had them back, and the shift's duration between bounds (semantics: lakehouse/tables.py CLIENT_SHIFTS).

Rules, each for a reason:

* Before: the old live's `connections` at its last active observation that reported them — the
  clients were there then; the shift began after it.
* The window on the new live runs from its first active observation while it holds the role, until
  the earliest of: its role ending (the group's next event, or an answer not active), the old
  instance answering again (a restarted broker waiting as backup holds connections to the live,
  which are not clients), `HORIZON_S` after it became active.
* Target: as many connections as the old live had, or, when fewer came, the most that came. A
  broker's count is not the clients' count: an Artemis live counts the connections its waiting
  backup holds to it (docs/ARTEMIS_LAB.md fact 27), which vanish with the old live, so "all of them
  back" would never happen; the row states the share (`moved_fraction`) instead of guessing.
* Bounds: the arrival lies after the new live's last observation that positively showed fewer
  (answered with fewer, or not active yet: a passive backup accepts no clients) and at the first
  that showed the target. The departure lies after `before_ts` and by the old live's first answer
  without them; a broker that died never answers, so then there is no lower bound (null), as
  failover_events' outage_lower_s. A hole in the observations around the arrival says so
  (`across-hole`); no observation at all is `unknown`, never 0.

Shape: the events are few; each is measured on the broker_state rows of its two instances in a
window around it (read from the obs_date partitions the windows touch, with the time filter Parquet
skips on), in pandas. `run_client_shifts` is incremental: it recomputes only the groups whose events
changed or whose windows new broker_state rows fall in, and keeps the other groups' stored rows
(the comment above it says why that is exact, and when it runs in full).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

from analysis import frames as frames_module
from analysis import runs as runs_module
from analysis.frames import days_spanned, merged_spans, ts_within
from analysis.runs import contract_frame, fmt_ts, seconds, utc_ns
from analysis.watermark import commit_entry, fingerprint, pinned_read
from lakehouse.tables import CLIENT_SHIFTS

CLIENT_SHIFTS_JOB = "client-shifts"  # the job's name in analysis/runner.py
KINDS = ("activemq", "artemis")  # exclusive live/backup kinds whose brokers count client connections
PEER_CONNECTS = ("artemis",)  # kinds whose waiting backup connects to the live (an ActiveMQ slave only waits on a lock)
MOVES = ("failover", "failback")
HORIZON_S = 120.0  # how long after the new live became active its connections are looked at (2× the default TTL)
LOOKBACK_S = 60.0  # how far before the old live's last active observation a reported count is looked for
STATE_COLUMNS = ["ts", "group_name", "instance", "reachable", "active", "connections"]
EVENT_COLUMNS = ["event_id", "kind", "group_name", "event_type", "from_instance", "to_instance", "old_last_active",
                 "new_first_active", "unobserved"]


@dataclass(frozen=True)
class ShiftParams:
    hole_s: float = math.inf  # no observation for longer than this is a hole (analysis.hole_tolerance)


def _ns(seconds_: float) -> np.timedelta64:
    return np.timedelta64(int(seconds_ * 1e9), "ns")


def _prepared(state: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """broker_state rows per (group, instance), sorted by time, with naive-UTC ns timestamps."""
    state = state.assign(ts=utc_ns(state["ts"])).sort_values("ts", kind="stable")
    return {key: rows.reset_index(drop=True) for key, rows in state.groupby(["group_name", "instance"], sort=False)}


def _count(rows: pd.DataFrame) -> np.ndarray:
    return pd.to_numeric(rows["connections"], errors="coerce").to_numpy(dtype="float64")


def _is(rows: pd.DataFrame, column: str, value: bool) -> np.ndarray:
    return (rows[column] == value).fillna(False).to_numpy(dtype=bool)


def window_end(e: dict, events: pd.DataFrame, old: pd.DataFrame, new: pd.DataFrame) -> np.datetime64:
    """Where the look at the new live stops (see the module doc)."""
    start = e["new_first_active"]
    ends = [start + _ns(HORIZON_S)]
    later = events[(events["group_name"] == e["group_name"]) & (events["old_last_active"] >= start)
                   & (events["event_id"] != e["event_id"])]
    ends += list(later["old_last_active"])
    after = old["ts"].to_numpy() > start
    ends += list(old["ts"].to_numpy()[after & _is(old, "reachable", True)][:1])
    gone = (new["ts"].to_numpy() > start) & _is(new, "reachable", True) & _is(new, "active", False)
    ends += [t - np.timedelta64(1, "us") for t in new["ts"].to_numpy()[gone][:1]]
    ends += list(new["ts"].to_numpy()[-1:])  # no later observation: the look ends with the last one
    return min(ends)


def old_running_at(e: dict, old: pd.DataFrame, until) -> np.datetime64 | None:
    """When the old instance first answered again, not active, after its last active observation
    and by `until`: from then it may hold connections to the new live (a waiting backup does), which
    its count cannot tell from clients'."""
    ts = old["ts"].to_numpy()
    if e["kind"] not in PEER_CONNECTS:
        return None
    running = (ts > e["old_last_active"]) & (ts <= until) & _is(old, "reachable", True) & _is(old, "active", False)
    return ts[running][0] if running.any() else None


def shift_of(e: dict, events: pd.DataFrame, old: pd.DataFrame, new: pd.DataFrame, hole_s: float) -> dict:
    """One client_shifts row for the event `e` (timestamps as naive-UTC datetime64)."""
    row = {k: e[k] for k in ("event_id", "kind", "group_name", "event_type", "from_instance", "to_instance")}
    ts_old, n_old = old["ts"].to_numpy(), _count(old)
    seen = (ts_old <= e["old_last_active"]) & _is(old, "active", True) & ~np.isnan(n_old)
    before = int(n_old[seen][-1]) if seen.any() else None
    if before is not None:
        row["before_ts"] = ts_old[seen][-1]
        fewer = _is(old, "active", False) | (n_old < before)
        without = (ts_old > row["before_ts"]) & _is(old, "reachable", True) & fewer
        row["old_without_ts"] = ts_old[without][0] if without.any() else None
    end = row["window_end"] = window_end(e, events, old, new)
    ts_new, n_new = new["ts"].to_numpy(), _count(new)
    inside = (ts_new >= e["new_first_active"]) & (ts_new <= end) & _is(new, "active", True) & ~np.isnan(n_new)
    row["connections_before"] = before
    if not inside.any():
        return {**row, "state": "unknown", "quality": "unknown",
                "message": f"{e['to_instance']} reported no connection count while active: the clients' move is "
                           "unknown"}
    after = int(n_new[inside].max())
    target = after if before is None else min(before, after)
    row.update(connections_after=after, target_connections=target,
               moved_fraction=(target / before) if before else None)
    if target <= 0:
        state = "unknown" if before is None else ("no-clients" if before == 0 else "none-arrived")
        running = old_running_at(e, old, end)
        quality = "unknown" if running is not None else _quality(ts_new, e["new_first_active"], end, e, hole_s)
        return {**row, "state": state, "quality": quality, "message": _message({**row, "state": state}, running)}
    at = int(np.flatnonzero(inside & (n_new >= target))[0])
    fewer = (ts_new < ts_new[at]) & _is(new, "reachable", True) & (_is(new, "active", False) | (n_new < target))
    row["arrived_ts"] = ts_new[at]
    row["arrived_after"] = ts_new[fewer][-1] if fewer.any() else None
    if before is not None:
        row["shift_upper_s"] = seconds(row["arrived_ts"] - row["before_ts"])
    if row["arrived_after"] is not None and row.get("old_without_ts") is not None:
        row["shift_lower_s"] = max(0.0, seconds(row["arrived_after"] - row["old_without_ts"]))
    running = old_running_at(e, old, row["arrived_ts"])
    quality = ("unknown" if row["arrived_after"] is None or running is not None
               else _quality(ts_new, row["arrived_after"], row["arrived_ts"], e, hole_s))
    return {**row, "state": "arrived", "quality": quality, "message": _message({**row, "state": "arrived"}, running)}


def _quality(ts: np.ndarray, lo, hi, e: dict, hole_s: float) -> str:
    """bounded, or across-hole when the observations of [lo, hi] (or the hand-over) have a hole."""
    inside = ts[(ts >= lo) & (ts <= hi)]
    gaps = seconds(np.diff(inside)) if len(inside) > 1 else np.zeros(0)
    return "across-hole" if bool(e.get("unobserved")) or (gaps > hole_s).any() else "bounded"


def _message(r: dict, running=None) -> str:
    old, new, before = r["from_instance"], r["to_instance"], r.get("connections_before")
    own = " (an Artemis live also counts its waiting backup's connections)" if r["kind"] == "artemis" else ""
    had = f"{old} had {before} connection(s){own}" if before is not None else f"{old}'s connections were not reported"
    if running is not None:
        had += (f"; {old} was running again from {fmt_ts(running)}: its own connections to {new} (as a waiting "
                f"backup) cannot be told from clients'")
    if r["state"] == "no-clients":
        return f"no client connections to move: {old} had none, nor had {new} by {fmt_ts(r['window_end'])}"
    if r["state"] != "arrived":
        return f"{had}; none arrived on {new} by {fmt_ts(r['window_end'])}"
    share = f" ({r['moved_fraction']:.0%} of {before})" if r.get("moved_fraction") is not None else ""
    text = f"{r['target_connections']} connection(s){share} on {new} by {fmt_ts(r['arrived_ts'])}"
    if r.get("arrived_after") is not None:
        text += f", not yet at {fmt_ts(r['arrived_after'])}"
    if r.get("shift_upper_s") is not None:
        lower = f" and ≥ {r['shift_lower_s']:.2f} s" if r.get("shift_lower_s") is not None else ""
        text += f" — moved in ≤ {r['shift_upper_s']:.2f} s{lower} after {old} was last seen with them"
    return f"{text}; {had}"


def client_shifts(events: pd.DataFrame, state: pd.DataFrame, params: ShiftParams) -> pd.DataFrame:
    """client_shifts rows (a contract frame) for the failovers and failbacks of `events`."""
    events = events.assign(**{c: utc_ns(events[c]) for c in ("old_last_active", "new_first_active")})
    moves = events[events["kind"].isin(KINDS) & events["event_type"].isin(MOVES)]
    by_instance = _prepared(state)
    empty = pd.DataFrame(columns=STATE_COLUMNS)
    out = []
    for e in moves.to_dict("records"):
        e.update({c: pd.Timestamp(e[c]).to_datetime64() for c in ("old_last_active", "new_first_active")})
        out.append(shift_of(e, events, by_instance.get((e["group_name"], e["from_instance"]), empty),
                            by_instance.get((e["group_name"], e["to_instance"]), empty), params.hole_s))
    return contract_frame(out, CLIENT_SHIFTS)


def window_spans(events: pd.DataFrame) -> dict[str, list[list[int]]]:
    """Each group's windows, merged, as [lo, hi] µs since the epoch (both ends inside): the moves'
    [old_last_active − LOOKBACK_S, new_first_active + HORIZON_S] — every broker_state row the
    group's rows can depend on (a row outside all of them is not read)."""
    moves = events[events["kind"].isin(KINDS) & events["event_type"].isin(MOVES)]
    lo = utc_ns(moves["old_last_active"]).astype("datetime64[us]").astype("int64") - int(LOOKBACK_S * 1e6)
    hi = utc_ns(moves["new_first_active"]).astype("datetime64[us]").astype("int64") + int(HORIZON_S * 1e6)
    spans: dict[str, list] = {}
    for g, a, b in zip(moves["group_name"], lo, hi):
        spans.setdefault(g, []).append((int(a), int(b)))
    return {g: merged_spans(s) for g, s in spans.items()}


def window_rows(slh, spans) -> pd.DataFrame:
    """broker_state rows of each group inside that group's own (group, lo, hi) spans: a broadcast
    join on the merged spans, so the driver receives the windows' rows only, however many events
    there are (past 256 windows `ts_within` prunes by their hull only: a fleet's whole history).
    Only the obs_date partitions the spans touch are read (broker_state is partitioned by the UTC
    date of ts)."""
    windows = [(g, lo, hi) for g, rows in pd.DataFrame(list(spans), columns=["g", "lo", "hi"]).groupby("g")
               for lo, hi in merged_spans((lo.to_pydatetime(), hi.to_pydatetime()) for lo, hi in zip(rows["lo"], rows["hi"]))]
    if not windows:
        return pd.DataFrame(columns=STATE_COLUMNS)
    days = days_spanned((pd.Timestamp(lo).value // 1000, pd.Timestamp(hi).value // 1000) for _, lo, hi in windows)
    bounds = slh.spark.createDataFrame(windows, "group_name string, _lo timestamp, _hi timestamp")
    return (slh.read_partitions("broker_state", "obs_date", days, columns=STATE_COLUMNS)
            .where(ts_within([(lo, hi) for _, lo, hi in windows]))
            .join(F.broadcast(bounds), "group_name").where(F.col("ts").between(F.col("_lo"), F.col("_hi")))
            .select(*STATE_COLUMNS).toPandas())


def _spans_of(windows: dict[str, list[list[int]]]):
    """(group, lo, hi) as UTC timestamps, for `window_rows`."""
    return [(g, pd.Timestamp(lo, unit="us", tz="UTC"), pd.Timestamp(hi, unit="us", tz="UTC"))
            for g, spans in windows.items() for lo, hi in spans]


# --- incremental runs ------------------------------------------------------------------------------
#
# A group's rows are a function of that group's failover_events rows (its moves, and every later
# event of it: `window_end`) and of its broker_state rows inside its windows (`window_spans`), and of
# nothing else: `client_shifts` looks only at the rows `window_rows` gives, per group. So when
# broker_state was only appended to since the stored rows were made (`read_appended`), a group whose
# events are the same as then and none of whose new rows falls inside one of its windows (their time
# span, per group, misses every window) has exactly the stored rows: they are kept, and only the other
# groups are recomputed — on a normal tick the new rows lie after every window's end, nothing is
# recomputed. Everything else is a full run: no record of what the stored rows saw (written by an
# older version), another config or code, broker_state rewritten (a compaction, a --full silver), the
# failover_events version the stored rows saw no longer readable. A version recorded lower than the
# rows read (a write between the two reads) only makes the next run recompute more: never less.

SEEN_KEY = "brokerscope.client_shifts"  # what the stored rows were computed from, in the commit that wrote them


def _seen(slh) -> dict | None:
    """What the latest commit of client_shifts records it was computed from (None: nothing)."""
    dt = slh.lakehouse._open("client_shifts")
    last = dt.history(limit=1) if dt is not None else []
    if not last:
        return None
    raw = commit_entry(last[0], SEEN_KEY)
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _events_by_group(events: pd.DataFrame) -> dict[str, list]:
    """Each group's failover_events rows (EVENT_COLUMNS), comparable across reads."""
    frame = events[EVENT_COLUMNS].astype(object).where(events[EVENT_COLUMNS].notna(), None)
    for c in ("old_last_active", "new_first_active"):
        frame[c] = [None if v is None else pd.Timestamp(v).value if pd.Timestamp(v).tzinfo is None
                    else pd.Timestamp(v).tz_convert(None).value for v in frame[c]]
    out: dict[str, list] = {}
    for row in frame.itertuples(index=False):
        out.setdefault(row.group_name, []).append(tuple(row))
    return {g: sorted(rows, key=repr) for g, rows in out.items()}


def changed_groups(slh, events: pd.DataFrame, seen_version: int, version: int) -> set[str] | None:
    """Groups whose failover_events rows differ from those at `seen_version` (None: that version
    cannot be read; failover_events is rewritten, not appended to, by the spine job)."""
    if seen_version == version:
        return set()
    try:
        before = (pd.DataFrame(columns=EVENT_COLUMNS) if seen_version < 0 else
                  slh.read("failover_events", version=seen_version, columns=EVENT_COLUMNS).toPandas())
    except Exception:  # noqa: BLE001 - log entries or files cleaned up: a full run
        return None
    old, new = _events_by_group(before), _events_by_group(events)
    return {g for g in old.keys() | new.keys() if old.get(g) != new.get(g)}


def groups_to_recompute(slh, events: pd.DataFrame, seen: dict | None, fp: str, version: int, say) -> set[str] | None:
    """The groups an incremental run recomputes (module comment above); None: only a full run is exact."""
    if seen is None or seen.get("fingerprint") != fp or seen.get("broker_state", -1) < 0:
        return None
    appended = slh.read_appended("broker_state", seen["broker_state"], ["group_name", "ts"])
    if appended is None:
        say("gold client_shifts: broker_state was rewritten, recomputing")
        return None
    changed = changed_groups(slh, events, seen.get("failover_events", -1), version)
    if changed is None:
        say("gold client_shifts: the failover_events it saw are gone, recomputing")
        return None
    windows = window_spans(events)
    spans = appended.new.groupBy("group_name").agg(F.min(F.unix_micros("ts")).alias("lo"),
                                                    F.max(F.unix_micros("ts")).alias("hi")).collect()
    hit = {r.group_name for r in spans
           if any(lo <= r.hi and r.lo <= hi for lo, hi in windows.get(r.group_name, ()))}
    return changed | hit


def run_client_shifts(slh, params: ShiftParams, progress=None, commit_info: dict | None = None,
                      full: bool = False) -> dict[str, int]:
    """failover_events + broker_state (only the windows around the events) → client_shifts: the
    groups whose inputs changed since the stored rows (module comment above), everything when
    `full` or when only that is exact; both give the same table."""
    say = progress or (lambda m: None)
    say("gold client_shifts")
    fp = fingerprint(CLIENT_SHIFTS_JOB, repr(params), KINDS, MOVES, LOOKBACK_S, HORIZON_S,
                     sources=[__file__, runs_module.__file__, frames_module.__file__])
    events_df, events_version = pinned_read(slh, "failover_events", EVENT_COLUMNS)
    events = events_df.toPandas()
    state_version = slh.lakehouse.version("broker_state")  # before any read of it: rows after it are recomputed next time
    info = {**(commit_info or {}), SEEN_KEY: json.dumps(
        {"fingerprint": fp, "failover_events": events_version, "broker_state": -1 if state_version is None else state_version},
        sort_keys=True)}
    groups = None if full else groups_to_recompute(slh, events, _seen(slh), fp, events_version, say)
    if groups is None:
        say("gold client_shifts (full)")
        found = client_shifts(events, window_rows(slh, _spans_of(window_spans(events))), params)
        df = slh.spark.createDataFrame(found, CLIENT_SHIFTS.spark_schema())
        return {"client_shifts": slh.write("client_shifts", df, commit_info=info)}
    if not groups:
        say("gold client_shifts (incremental: no window has new rows)")
        slh.write("client_shifts", slh.read("client_shifts").limit(0), mode="append", commit_info=info)
        return {"client_shifts": slh.lakehouse.count("client_shifts")}
    say(f"gold client_shifts (incremental: {len(groups)} group(s) recomputed)")
    mine = events[events["group_name"].isin(groups)]
    found = client_shifts(mine, window_rows(slh, _spans_of(window_spans(mine))), params)
    kept = slh.read("client_shifts").where(~F.col("group_name").isin(sorted(groups)))
    df = kept.unionByName(slh.spark.createDataFrame(found, CLIENT_SHIFTS.spark_schema()))
    return {"client_shifts": slh.write("client_shifts", df, commit_info=info)}
