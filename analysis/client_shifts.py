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
window around it (read with the time filter Parquet skips on), in pandas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

from analysis.runs import contract_frame, fmt_ts, seconds, utc_ns
from analysis.frames import merged_spans, ts_within
from lakehouse.tables import CLIENT_SHIFTS

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


def window_rows(slh, spans) -> pd.DataFrame:
    """broker_state rows of each group inside that group's own (group, lo, hi) spans: a broadcast
    join on the merged spans, so the driver receives the windows' rows only, however many events
    there are (past 256 windows `ts_within` prunes by their hull only: a fleet's whole history)."""
    windows = [(g, lo, hi) for g, rows in pd.DataFrame(list(spans), columns=["g", "lo", "hi"]).groupby("g")
               for lo, hi in merged_spans((lo.to_pydatetime(), hi.to_pydatetime()) for lo, hi in zip(rows["lo"], rows["hi"]))]
    if not windows:
        return pd.DataFrame(columns=STATE_COLUMNS)
    bounds = slh.spark.createDataFrame(windows, "group_name string, _lo timestamp, _hi timestamp")
    return (slh.read("broker_state", columns=STATE_COLUMNS).where(ts_within([(lo, hi) for _, lo, hi in windows]))
            .join(F.broadcast(bounds), "group_name").where(F.col("ts").between(F.col("_lo"), F.col("_hi")))
            .select(*STATE_COLUMNS).toPandas())


def run_client_shifts(slh, params: ShiftParams, progress=None, commit_info: dict | None = None) -> dict[str, int]:
    """failover_events + broker_state (only the windows around the events) → client_shifts (whole table)."""
    (progress or (lambda m: None))("gold client_shifts")
    events = slh.read("failover_events", columns=EVENT_COLUMNS).toPandas()
    moves = events[events["kind"].isin(KINDS) & events["event_type"].isin(MOVES)]
    starts = pd.to_datetime(moves["old_last_active"], utc=True) - pd.Timedelta(seconds=LOOKBACK_S)
    ends = pd.to_datetime(moves["new_first_active"], utc=True) + pd.Timedelta(seconds=HORIZON_S)
    state = window_rows(slh, zip(moves["group_name"], starts, ends))
    found = client_shifts(events, state, params)
    df = slh.spark.createDataFrame(found, CLIENT_SHIFTS.spark_schema())
    return {"client_shifts": slh.write("client_shifts", df, commit_info=commit_info)}
