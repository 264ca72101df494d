"""Silver rows that always fit their contract: a broker value of the wrong type or range becomes
null with a reason, never an Arrow error that stops the analysis of every target.

A broker decides what its attributes hold (a `BrokerName` that is a number, a count ≥ 2^63, ±inf).
`normalize_checked` runs a pack's `normalize`, makes every value fit its column's Arrow type, and
says what it set aside, naming the target, the MBean and the attribute the value came from (found
by looking the value up in the answer). collector_health counts them per observation.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from collectors.base import REFUSED, BrokerPack, Observation, Rows, iter_mbean_reads
from lakehouse.tables import contract

INT_RANGE = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
MAX_REASONS_CHARS = 2000


@dataclass(frozen=True)
class Quarantined:
    """One value set aside (or a whole observation a pack could not read)."""

    table: str
    column: str  # "*": the pack failed on the whole observation; "": a value the pack itself refused
    value: str  # a short repr of what the broker sent
    reason: str
    source: str | None = None  # "<mbean> <attribute>" the value came from, when found

    def line(self) -> str:
        where = f" from {self.source}" if self.source else ""
        what = f"{self.table}.{self.column}" if self.column else self.table
        return f"{what}{where}: {self.value} — {self.reason}"


def misfit(value: Any, typ: pa.DataType) -> str | None:
    """Why `value` cannot go into a column of `typ` (None: it fits)."""
    if value is None:
        return None
    if pa.types.is_string(typ):
        if not isinstance(value, str):
            return f"expected text, got {type(value).__name__}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text that is not valid Unicode (a lone surrogate)"
        return None
    if pa.types.is_boolean(typ):
        return None if isinstance(value, bool) else f"expected true/false, got {type(value).__name__}"
    if typ in INT_RANGE:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected an integer, got {type(value).__name__}"
        bits = INT_RANGE[typ]
        return None if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else f"outside the {bits}-bit integer range"
    if pa.types.is_floating(typ):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected a number, got {type(value).__name__}"
        try:
            return None if math.isfinite(float(value)) else "not a finite number"
        except OverflowError:
            return "too large for a double"
    if pa.types.is_timestamp(typ):
        return None if isinstance(value, datetime) else f"expected a timestamp, got {type(value).__name__}"
    try:
        pa.array([value], type=typ)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        return f"does not fit {typ} ({type(e).__name__})"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def locate(obs: Observation, value: Any) -> str | None:
    """The MBean and attribute of the answer that holds `value` (same type and value), if any."""
    if not isinstance(obs.response, list):
        return None
    try:
        for read in iter_mbean_reads(obs.requests, obs.response):
            for attr, v in read.attributes.items():
                if type(v) is type(value) and v == value:
                    return f"{read.mbean.canonical} {attr}"
                if isinstance(v, dict):
                    for key, inner in v.items():
                        if type(inner) is type(value) and inner == value:
                            return f"{read.mbean.canonical} {attr}.{key}"
    except Exception:  # noqa: BLE001 - the answer is hostile already; the reason stands without a source
        return None
    return None


def _fits_fast(typ: pa.DataType):
    """A cheap test that passes the common well-typed values (misfit decides the rest)."""
    if pa.types.is_string(typ):
        return lambda v: v is None or (type(v) is str and v.isascii())
    if pa.types.is_boolean(typ):
        return lambda v: v is None or type(v) is bool
    if typ in INT_RANGE:
        lo, hi = -(2 ** (INT_RANGE[typ] - 1)), 2 ** (INT_RANGE[typ] - 1)
        return lambda v: v is None or (type(v) is int and lo <= v < hi)
    if pa.types.is_floating(typ):
        return lambda v: v is None or (type(v) is float and v - v == 0.0)  # inf - inf and nan - nan are nan
    return lambda v: v is None


@functools.lru_cache(maxsize=None)
def _checks(table: str) -> tuple:
    return tuple((c.name, c.type, c.nullable, _fits_fast(c.type)) for c in contract(table).columns)


def conform(rows: list[dict], table: str, obs: Observation) -> tuple[list[dict], list[Quarantined]]:
    """`rows` made to fit `table`'s contract: misfits nulled (rows whose non-null column misfits
    are dropped), and what was set aside."""
    checks = _checks(table)
    kept, out = [], []
    for row in rows:
        drop = False
        for name, typ, nullable, fast in checks:
            value = row.get(name)
            if fast(value):
                continue
            why = misfit(value, typ)
            if why is None:
                continue
            if not nullable:
                drop = True
                why += "; the row was dropped (the column cannot be empty)"
            row[name] = None
            out.append(Quarantined(table, name, _short(value), why, locate(obs, value)))
        if not drop:
            kept.append(row)
    return kept, out


def normalize_checked(pack: BrokerPack, obs: Observation, obs_key: str, tables: tuple[str, ...]) -> tuple[Rows, list[Quarantined]]:
    """The pack's silver rows of `tables`, each fitting its contract, and what was set aside. A pack
    that raises on an answer sets the whole observation aside (its rows are empty)."""
    refused: list[tuple[Any, str]] = []
    token = REFUSED.set(refused)
    try:
        rows = pack.normalize(obs, obs_key)
    except Exception as e:  # noqa: BLE001 - one hostile answer must not stop the analysis
        return Rows(), [Quarantined(t, "*", "the whole answer", f"the {obs.kind} pack could not read it "
                                    f"({type(e).__name__}: {str(e)[:160]})") for t in tables[:1]]
    finally:
        REFUSED.reset(token)
    # what the pack's as_int/as_float/as_bool refused: nulled already, here with its reason
    found = [Quarantined(f"read by the {obs.kind} pack", "", _short(v), why, locate(obs, v)) for v, why in refused]
    for t in tables:
        kept, aside = conform(rows.get(t), t, obs)
        setattr(rows, t, kept)
        found += aside
    return rows, found


def reasons_text(found: list[Quarantined]) -> str | None:
    """The collector_health.quarantined text: one line per distinct value set aside, bounded."""
    if not found:
        return None
    text = "; ".join(dict.fromkeys(q.line() for q in found))
    return text if len(text) <= MAX_REASONS_CHARS else text[: MAX_REASONS_CHARS - 1] + "…"
