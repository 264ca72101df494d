"""The native parser core (Rust, ``native/gcparse``) behind the :class:`GcLogParser` API.

The Python implementation (:mod:`.parser`) is the specification: the native core produces the
same events and the same line accounting (tests/test_gc_native.py checks it on the corpus and
on fuzzed input).  This module turns the core's event tuples into :class:`GcEvent` objects
and its counters into :class:`ParseStats`.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Iterable, Iterator, Optional

from ._common import epoch_ms_to_dt, parse_datestamp, size_kb, wall_from_start
from .model import GcEvent, ParseStats, drop_implausible  # noqa: F401  (re-exported for tests)

try:  # the compiled module (pip install ./native/gcparse)
    from brokerscope_gcparse import SOURCE_HASH, NativeParser
except ImportError:  # pragma: no cover - exercised when the native build is absent
    NativeParser = None
    SOURCE_HASH = None

AVAILABLE = NativeParser is not None
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)


def _iso_micros(text: str) -> Optional[int]:
    """CPython's reading of a date stamp, as microseconds since the epoch (core hook)."""
    dt = parse_datestamp(text)
    return None if dt is None else (dt - _EPOCH) // _US


def _wall(w, uptime, from_start, jvm_start):
    if w is None:
        wall = None
    elif type(w) is int:
        wall = _EPOCH + timedelta(microseconds=w)
    elif type(w) is str:
        wall = parse_datestamp(w)
    else:  # (epoch_ms,) out of the core's exact range
        wall = epoch_ms_to_dt(w[0])
    if wall is None and from_start and jvm_start is not None:
        wall = wall_from_start(jvm_start, uptime)
    return wall


class NativeGcLogParser:
    """:class:`collectors.gc.GcLogParser` on the native core (same API and results)."""

    def __init__(
        self,
        *,
        jvm_start: Optional[datetime] = None,
        keep_raw: bool = False,
        sample_limit: int = 50,
        collector: Optional[str] = None,
    ) -> None:
        if NativeParser is None:
            raise ImportError("the native GC parser core (brokerscope_gcparse) is not installed")
        if jvm_start is not None and jvm_start.tzinfo is None:
            jvm_start = jvm_start.replace(tzinfo=timezone.utc)
        self.jvm_start = jvm_start
        self.keep_raw = keep_raw
        self._core = NativeParser(collector or None, keep_raw, sample_limit, size_kb, _iso_micros)
        self._stats = ParseStats(sample_limit=sample_limit)
        self._finished = False

    # -- conversion ----------------------------------------------------------------------------

    def _events(self, tuples: list) -> list[GcEvent]:
        if not tuples:
            return []
        js = self.jvm_start
        out = []
        for t in tuples:
            ev = GcEvent(*t[:29])
            w = t[2]
            if w is not None and type(w) is int:
                ev.wall_time = _EPOCH + timedelta(microseconds=w)
            elif w is not None or (t[29] and js is not None):
                ev.wall_time = _wall(w, t[3], t[29], js)
            out.append(ev)
        return out

    @property
    def collector(self) -> str:
        return self._core.collector

    @property
    def stats(self) -> ParseStats:
        """Line accounting so far (the same object, refreshed from the core on access)."""
        s = self._stats
        (s.lines_total, s.lines_event, s.lines_ignored, s.lines_unknown, s.events,
         s.incomplete_events, sample, n_u, n_l) = self._core.stats()
        s.unknown_sample[:] = sample
        if self._finished:
            s.formats = {"unified": n_u, "legacy": n_l}
        return s

    # -- GcLogParser API -----------------------------------------------------------------------

    def feed(self, line: str, line_no: Optional[int] = None) -> list[GcEvent]:
        return self._events(self._core.feed(line, line_no))

    def feed_text(self, text: str, end: bool = False) -> list[GcEvent]:
        """Text of any chunking (universal newlines); ``end`` feeds a last partial line."""
        return self._events(self._core.feed_text(text, end))

    def feed_bytes(self, data: bytes, end: bool = False) -> list[GcEvent]:
        """Raw bytes of any chunking (UTF-8, errors="replace", universal newlines)."""
        return self._events(self._core.feed_bytes(data, end))

    def flush(self) -> list[GcEvent]:
        return self._events(self._core.flush())

    def finish(self) -> list[GcEvent]:
        if self._finished:
            return []
        out = self._events(self._core.finish())
        self.finish_stats()
        return out

    def finish_stats(self) -> None:
        """After the core's finish: formats and time span into the stats."""
        self._finished = True
        s = self.stats
        span = self.time_span()
        if span is not None:
            (s.first_uptime_s, s.first_wall_time), (s.last_uptime_s, s.last_wall_time) = span

    def time_span(self):
        span = self._core.time_span()
        if span is None:
            return None
        js = self.jvm_start
        return tuple((up, _wall(w, up, fs, js)) for up, w, fs in span)

    def feed_many(self, lines: Iterable[str], first_line_no: int = 1) -> Iterator[GcEvent]:
        n = first_line_no
        for line in lines:
            yield from self.feed(line, n)
            n += 1
