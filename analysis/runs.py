"""Runs of consecutive observations where a condition holds, with the bounds findings carry.

A finding built from observations is a run: its first and last observation showing the condition
(`start_ts`, `end_ts`) and the neighbouring observations that did not (`start_lower`, `end_upper`;
null where there was none: the condition held from the first observation, or still holds at the
last one — `is_open`). Between two observations the state is unknown, so the truth lies between
the bounds. Shared by the stuck-message, lag, risk and incident jobs; numpy only, no Spark.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime

import numpy as np
import pandas as pd
import pyarrow as pa

from analysis.frames import typed_frame
from lakehouse.tables import TableContract

NAT = np.datetime64("NaT", "ns")


def utc_ns(values) -> np.ndarray:
    """A timestamp column (naive or tz-aware, any unit) as naive-UTC datetime64[ns]."""
    return pd.to_datetime(pd.Series(values), utc=True).dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


def numbers(values) -> np.ndarray:
    """A column as float64, null and non-numeric as NaN."""
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype="float64")


def seconds(delta):
    """timedelta64 (scalar or array) → float seconds; NaT → nan."""
    d = np.asarray(delta, dtype="timedelta64[ns]")
    out = np.where(np.isnat(d), np.nan, d.astype("int64") / 1e9)
    return out if d.ndim else float(out)


def true_runs(flags) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (inclusive) indexes of the runs of True in a boolean array."""
    f = np.asarray(flags, dtype=bool).astype(np.int8)
    edges = np.diff(np.concatenate(([0], f, [0])))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1


def run_bounds(ts: np.ndarray, starts: np.ndarray, ends: np.ndarray,
               last_ts: np.ndarray | None = None, hole_s: float = math.inf) -> dict[str, np.ndarray]:
    """The bounds of runs over sorted observations. An observation may span time (a scrape round of
    several brokers): `ts` is its first moment, `last_ts` its last (default: the same).

    `hole_s`: a stretch of more than this between two observations is a hole (nothing was seen, so
    the state there is unknown — frames.hole_before for the role intervals): a run goes on across
    it, but counts it in `unobserved_s`; `observed_certainty` then allows at most `possible`."""
    last_ts = ts if last_ts is None else last_ts
    n = len(ts)
    before, after = starts - 1, ends + 1
    in_holes = holes_ns_upto(ts, last_ts, hole_s)
    return {
        "start_ts": ts[starts],
        "start_lower": np.where(before >= 0, last_ts[np.clip(before, 0, max(n - 1, 0))], NAT),
        "end_ts": last_ts[ends],
        "end_upper": np.where(after < n, ts[np.clip(after, 0, max(n - 1, 0))], NAT),
        "is_open": after >= n,
        "unobserved_s": (in_holes[ends] - in_holes[starts]) / 1e9 if n else np.zeros(0),
    }


def holes_ns_upto(ts: np.ndarray, last_ts: np.ndarray, hole_s: float = math.inf) -> np.ndarray:
    """ns of holes (stretches longer than `hole_s` between two observations) up to each observation,
    summed in integers: a run's share is the same whichever observation the sum starts from (an
    incremental run goes on from a later one, to the bit)."""
    gap_ns = (ts[1:] - last_ts[:-1]).astype("timedelta64[ns]").astype("int64") if len(ts) > 1 else np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(np.where(gap_ns / 1e9 > hole_s, gap_ns, 0))))


def observed_certainty(certainty, unobserved_s):
    """A finding's certainty where part of it lay in holes: at most `possible` — what was not
    observed is unknown, and certainty only goes down (scalar or array)."""
    lowered = np.where(np.asarray(unobserved_s, dtype="float64") > 0, "possible", certainty)
    return lowered if lowered.ndim else str(lowered)


def unobserved_note(unobserved_s) -> str:
    """Words for a finding's holes, to append to its span: empty when it was observed throughout."""
    return f", {float(unobserved_s):.0f} s of it unobserved (a hole in the observations)" if unobserved_s > 0 else ""


def count_between(sorted_ts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How many of `sorted_ts` lie in [lo, hi], per pair (vectorized)."""
    return np.searchsorted(sorted_ts, hi, side="right") - np.searchsorted(sorted_ts, lo, side="left")


def latest_of(other: pd.DataFrame, at: np.ndarray, max_age: np.timedelta64) -> np.ndarray:
    """Per time in `at`: the row position in `other` (sorted by ts) of its latest observation at
    or before it, −1 when there is none or it is older than `max_age`."""
    ts = utc_ns(other["ts"])
    i = np.searchsorted(ts, at, side="right") - 1
    fresh = (i >= 0) & (at - ts[np.maximum(i, 0)] <= max_age)
    return np.where(fresh, i, -1)


def other_state_words(other: pd.DataFrame, at: np.ndarray):
    """How another instance looked over a run of the live's observations, as words (lazy)."""
    roles = other["role"].to_numpy()
    answered = other["reachable"].astype(bool).to_numpy()
    errors = other["error"].to_numpy()

    def text(s: int, e: int) -> str:
        picked = at[s : e + 1]
        if (picked < 0).all():
            return "was not seen"
        seen = picked[picked >= 0]
        if not answered[seen].any():
            err = next((str(x) for x in errors[seen] if x), "no answer")
            return f"did not answer ({err.split(';')[0][:80]})"
        shown = sorted({str(roles[i]) for i in seen if answered[i]})
        return "answered as " + "/".join(shown) + ("" if answered[seen].all() else ", or did not answer")

    return text


def stable_id(*parts) -> str:
    """A finding id that is the same on every rerun: hash of the parts that identify it."""

    def text(p) -> str:
        if p is None:
            return ""
        return pd.Timestamp(p).isoformat() if isinstance(p, (np.datetime64, datetime)) else str(p)

    return hashlib.sha256("/".join(map(text, parts)).encode()).hexdigest()[:32]


def fmt_ts(ts) -> str:
    """A time for a message, to the millisecond: `2026-11-23 09:01:20.150Z`."""
    return pd.Timestamp(ts).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def contract_frame(rows: list[dict] | pd.DataFrame, c: TableContract) -> pd.DataFrame:
    """Finding rows as a pandas frame Arrow hands to Spark as the contract's types: spine's
    timestamps and strings; integers and booleans as Python objects with None for null (a count
    computed in float, a missing flag: pandas' nullable dtypes do not survive applyInPandas'
    Arrow path)."""
    if isinstance(rows, list) and not rows:  # most groups of a job find nothing: built once per contract
        if c.name not in _EMPTY:
            _EMPTY[c.name] = _contract_frame(rows, c)
        return _EMPTY[c.name].copy()
    return _contract_frame(rows, c)


_EMPTY: dict[str, pd.DataFrame] = {}


def _contract_frame(rows: list[dict] | pd.DataFrame, c: TableContract) -> pd.DataFrame:
    df = typed_frame(rows, c)
    for col in c.columns:
        if pa.types.is_integer(col.type):
            df[col.name] = _objects(df[col.name], lambda v: int(round(v)))
        elif pa.types.is_boolean(col.type):
            df[col.name] = _objects(df[col.name], bool)
        elif pa.types.is_floating(col.type):
            df[col.name] = pd.to_numeric(df[col.name], errors="coerce").astype("float64")
    return df


def _objects(values: pd.Series, cast) -> pd.Series:
    return pd.Series([None if pd.isna(v) else cast(v) for v in values], index=values.index, dtype=object)
