"""Helpers shared by the unified and legacy GC log handlers (units, time stamps, vocabulary)."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Optional

# Line classification codes returned by the format handlers.
EVENT = 1  # part of an event
IGNORED = 2  # understood, no event data
UNKNOWN = 3  # not understood
DEFERRED = 4  # buffered by a multi-line record; accounted for when the record completes

_UNIT_KB = {"B": 1.0 / 1024.0, "K": 1.0, "M": 1024.0, "G": 1048576.0, "T": 1073741824.0}

SIZE = r"\d+(?:[.,]\d+)?\s?[BKMGT]"  # a size with unit, e.g. 24.0M, 1024K, 0.0B


_SIZE_CACHE: dict = {}


def size_kb(text: str) -> int:
    """'24.0M' -> 24576, '1024K' -> 1024, '0.0B' -> 0, '12345' (no unit: K) -> 12345."""
    # GC logs repeat the same few hundred sizes ('0.0B', '1024.0M', region counts...): a
    # bounded memo saves the float round trip on most calls
    kb = _SIZE_CACHE.get(text)
    if kb is None:
        kb = _size_kb(text)
        if len(_SIZE_CACHE) >= 16384:
            _SIZE_CACHE.clear()
        _SIZE_CACHE[text] = kb
    return kb


def _size_kb(text: str) -> int:
    text = text.strip()
    unit = text[-1]
    if unit in _UNIT_KB:
        num = text[:-1].rstrip()
    else:
        num, unit = text, "K"
    num = num.replace(",", ".")
    kb = float(num) * _UNIT_KB[unit]
    if math.isfinite(kb):
        return int(round(kb))
    # absurdly large (corrupt) values overflow the float: exact decimal arithmetic instead
    return int((Decimal(num) * Decimal(_UNIT_KB[unit])).to_integral_value(ROUND_HALF_EVEN))


_NUM_PREFIX_RE = re.compile(r"\d*\.?\d*")


def num(text: str) -> float:
    """Number that may use a decimal comma (locale), e.g. '1,234' -> 1.234.  Never raises: a
    malformed number (corrupt line, e.g. '1.2.3') gives its longest numeric prefix (1.2), or
    0.0 when it has none."""
    text = text.replace(",", ".")
    try:
        return float(text)
    except ValueError:
        m = _NUM_PREFIX_RE.match(text)
        digits = m.group() if m else ""
        return float(digits) if digits.strip(".") else 0.0


def to_int(text: str) -> int:
    """int() of a logged digit string of any length (int() refuses more than 4300 digits)."""
    if len(text) <= 4000:
        return int(text)
    return int(Decimal(text))


def parse_datestamp(text: str) -> Optional[datetime]:
    """ISO-8601 JVM time stamp ('2014-01-01T10:00:00.123+0100') -> aware UTC datetime."""
    # (a per-minute cache plus timedelta was tried: slower than fromisoformat, which is C)
    try:
        dt = datetime.fromisoformat(text.replace(",", "."))
        if dt.tzinfo is None:  # no offset logged: assume UTC
            return dt.replace(tzinfo=timezone.utc)
        return dt.astimezone(timezone.utc)
    except (ValueError, OverflowError):  # not a date, or out of datetime's range once in UTC
        return None


def epoch_ms_to_dt(ms: int) -> Optional[datetime]:
    """Epoch milliseconds -> aware UTC datetime; None when out of datetime's range."""
    try:
        return datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)
    except (OverflowError, ValueError, OSError):
        return None


def wall_from_start(jvm_start: Optional[datetime], uptime_s: Optional[float]) -> Optional[datetime]:
    if jvm_start is None or uptime_s is None:
        return None
    try:
        return jvm_start + timedelta(seconds=uptime_s)
    except (OverflowError, ValueError):  # corrupt uptime (huge, inf, nan)
        return None


_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    """'Scan Root Regions' -> 'scan-root-regions'."""
    return _SLUG_RE.sub("-", name.lower()).strip("-")


# "Using G1" & co. (unified and JDK 8 -Xlog-less banners)
_USING = (
    ("Using G1", "g1"),
    ("Using Parallel", "parallel"),
    ("Using Serial", "serial"),
    ("Using Concurrent Mark Sweep", "cms"),
    ("Using Shenandoah", "shenandoah"),
    ("Using The Z Garbage Collector", "zgc"),
    ("Initializing The Z Garbage Collector", "zgc"),
    ("Using Epsilon", "unknown"),
)


def collector_from_using(msg: str) -> Optional[str]:
    for prefix, name in _USING:
        if msg.startswith(prefix):
            return name
    return None


# ---------------------------------------------------------------------------------------------
# Vocabulary of informational lines (understood, no event).  These are generic shapes of JVM
# output, not file-specific strings.
# ---------------------------------------------------------------------------------------------

# Lines printed outside GC events by unified logging (gc+init, gc+heap+exit, gc+metaspace,
# Shenandoah gc+stats/ergo, safepoint, ...) and by legacy -XX:+PrintGC* banners.  Explicit
# vocabulary, valid in every context.
INFO_LINE_RE = re.compile(
    r"""^(?:
      \s*$
    | Using\ (?:G1|Parallel|Serial|Concurrent\ Mark\ Sweep|Shenandoah|The\ Z\ Garbage|Epsilon)
    | Initializing\ The\ Z\ Garbage\ Collector
    | Version:\ \d
    | CPUs:\ \d
    | Heuristics\ ergonomically
    | Min\ heap\ equals\ to\ max\ heap
    | Pacer\ for\ \w+
    | Trigger(?:\ \(\w+\))?:\ 
    | Free:\ \d+\w,\ Max:
    | Cancelling\ (?:concurrent\ )?GC:
    | Failed\ to\ allocate\ 
    | Periodic\ GC\ 
    | Start\ GC\ cycle
    | Stopping\ ZGC
    | Metaspace\ \(\w+\)\ allocation\ failed
    | Consider\ -XX:
    | Clearing\ All\ SoftReferences
    | Attempting\ (?:full\ compaction|maximally\ compacting|maximum\ full\ compaction)
    | Heap\ (?:[Rr]egion\ [Ss]ize|address):\ 
    | Heap\s*$
    | CDS\ archive|Compressed\ class\ space|Narrow\ klass|UseCompressedClassPointers|Encoding\ Range:|Klass\ (?:Range|ID\ Range):|Protection\ zone:
    | Application\ time:\ [\d.,]+\ seconds
    | Entering\ safepoint\ region:|Leaving\ safepoint\ region
    | All\ times\ are\ wall-clock|all\ workers\.\ Dividing
    )""",
    re.X,
)

# Generic shapes of JVM GC output lines, only trusted inside unified GC logging (decorated with
# a gc/safepoint tag, or in a file already recognised as unified): 'Label: value' lines of
# gc+init/gc+heap+exit, indented statistics rows, heap summary rows.
GENERIC_INFO_RE = re.compile(
    r"""^(?:
      [A-Za-z][\w .,/+()#\-]*?:\s\S       # 'Label: value'
    | [A-Za-z][\w .,/+()\-]*?:\s*$         # 'Label:' section header
    | \s*[A-Za-z][\w ()/,.\-]*?\s{2,}\d+\ us\b   # Shenandoah stats 'Pause Init Mark (G)  189 us'
    | \s+\S.*?\b\d+(?:[.,]\d+)?\ ?(?:us|ms|s)\b  # indented statistics rows
    | \s+(?:[A-Za-z-]+\ )*(?:generation|gen|heap|Heap|space|Metaspace|Regions?)\b.*\d
    | \s+\S.*:.*\d                              # indented 'label: numbers' rows
    | \s*-{3,}\s*$
    | \s*\d+\ (?:of\ \d+\ )?[A-Za-z].*$     # Shenandoah '  5 Completed Concurrent GCs'
    | [A-Z][A-Za-z ]+\ (?:Support|Oops|Mode|Type|Size|Capacity|Workers|Threshold)\b.*
    )""",
    re.X,
)
