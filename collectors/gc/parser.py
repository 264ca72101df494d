"""Streaming GC log parser for HotSpot JDK 8-25 logs (unified and legacy formats).

Usage::

    from collectors.gc import GcLogParser, parse_file

    events, stats = parse_file("gc.log.gz")          # whole file (plain, .gz or .zip)

    parser = GcLogParser()                          # live tail, line by line
    for n, line in enumerate(tail, 1):
        for event in parser.feed(line, n):
            publish(event)
    for event in parser.finish():                    # flush pending multi-line events
        publish(event)
    print(parser.stats.coverage)

The format (unified ``-Xlog`` with any decorator set, or legacy ``-XX:+PrintGCDetails``) is
detected per line, so concatenated or mixed logs work.  Events are returned when they are
complete, i.e. usually one line after their last line (the parser waits for the ``User=``/
``[Times: ...]`` and G1 detail lines that follow a pause); :meth:`GcLogParser.finish` returns
what is still pending at the end of the input.  See :mod:`collectors.gc.model` for the event
taxonomy and the counting rules.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zipfile
from datetime import datetime, timezone
from typing import IO, Iterable, Iterator, Optional, Union

from . import native
from ._common import EVENT, IGNORED, UNKNOWN
from ._legacy import LegacyHandler
from .limits import MAX_RATIO, MIN_BUDGET_BYTES, BoundedBytes, BoundedChunks, BoundedLines, GcInputError, bound_native
from ._unified import UnifiedHandler
from .model import GcEvent, ParseStats, drop_implausible

__all__ = [
    "GcLogParser", "PythonGcLogParser", "iter_events", "open_log", "open_log_bytes", "parse_file", "parse_lines",
    "parser_impl",
]

PathLike = Union[str, "os.PathLike[str]"]

# first characters of the lines the unified handler may claim before unified mode (see feed)
_UNIFIED_FIRST = "[GUISA"
_ABSURD_NUMBER_RE = re.compile(r"\d{100}")


def parser_impl() -> str:
    """'native' or 'python': the implementation GcLogParser() builds.  The native core (Rust,
    native/gcparse) is used when it is installed; BROKERSCOPE_GC_PARSER=python|native forces
    one (native raises ImportError when it is not installed)."""
    forced = os.environ.get("BROKERSCOPE_GC_PARSER", "").strip().lower()
    if forced == "python":
        return "python"
    if forced == "native" or native.AVAILABLE:
        return "native"
    return "python"


class GcLogParser:
    """Line-by-line GC log parser: ``GcLogParser(**kw)`` builds the native core's parser when
    it is installed (collectors.gc.native.NativeGcLogParser), else :class:`PythonGcLogParser`;
    both have this API and produce the same events (see :func:`parser_impl`)."""

    def __new__(cls, **kwargs):
        if cls is not GcLogParser:
            return super().__new__(cls)
        if parser_impl() == "native":
            return native.NativeGcLogParser(**kwargs)
        return PythonGcLogParser(**kwargs)


class PythonGcLogParser(GcLogParser):
    """Line-by-line GC log parser (a state machine; not thread-safe): the Python
    implementation, which is the specification of the native core.

    :param jvm_start: JVM start time (aware, or naive = UTC).  When the log has no wall-clock
        decorator/datestamp, ``wall_time = jvm_start + uptime``.
    :param keep_raw: keep each event's first line in ``GcEvent.raw``.
    :param sample_limit: how many not-understood lines to keep in ``stats.unknown_sample``.
    :param collector: collector to assume until the log names one (e.g. for a rotated log
        whose ``Using G1`` header is in a previous file).
    """

    def __init__(
        self,
        *,
        jvm_start: Optional[datetime] = None,
        keep_raw: bool = False,
        sample_limit: int = 50,
        collector: Optional[str] = None,
    ) -> None:
        if jvm_start is not None and jvm_start.tzinfo is None:
            jvm_start = jvm_start.replace(tzinfo=timezone.utc)
        self.jvm_start = jvm_start
        self.keep_raw = keep_raw
        self.collector = collector or "unknown"
        self.stats = ParseStats(sample_limit=sample_limit)
        self.unified_mode = False
        self._unified = UnifiedHandler(self)
        self._legacy = LegacyHandler(self)
        self._line_no = 0
        self._n_unified = 0
        self._n_legacy = 0
        self._finished = False

    # ------------------------------------------------------------------------------------------

    def feed(self, line: str, line_no: Optional[int] = None) -> list[GcEvent]:
        """Consume one line (with or without its newline); return the events it completed."""
        if line_no is None:
            line_no = self._line_no + 1
        self._line_no = line_no
        stats = self.stats
        stats.lines_total += 1
        if len(line) > 1000 and _ABSURD_NUMBER_RE.search(line):
            # A 100+ digit number is never in a GC log: corrupt data.  The line is not
            # understood, and not handed to the handlers, whose unanchored searches take time
            # quadratic in the length of such digit runs (seconds for a few thousand digits).
            stats.add_unknown(line_no, line.rstrip("\r\n"))
            return []
        out: list[GcEvent] = []
        legacy = self._legacy
        code = 0
        # Until a unified line has been seen, the unified handler returns 0 (without side
        # effects) for every line that does not start with '[' or one of the undecorated
        # unified messages ('GC(', 'Using ', 'Initializing ', 'Safepoint "', 'Allocation
        # Stall ('), nor for '[' lines that cannot start a decorator (_may_be_decorated):
        # skip the call for those, i.e. for almost every line of a legacy log.
        if legacy.rec is None and not legacy.heap_block and (
            self.unified_mode or self._unified.foreign_block
            or (line[:1] in _UNIFIED_FIRST and (line[:1] != "[" or self._may_be_decorated(line)))
        ):
            code = self._unified.handle(line, line_no, out)
            if code:
                self._n_unified += 1
                if legacy.last is not None:
                    # a unified line after a legacy record (mixed input): emit it first
                    pending: list[GcEvent] = []
                    legacy.flush(pending)
                    out[:0] = pending
                if code == EVENT:
                    stats.lines_event += 1
                    if out:
                        stats.events += len(out)
                        drop_implausible(out)
                    return out
        if not code:
            if self._unified.ready:
                self._unified.flush_ready(out)
            code = legacy.handle(line, line_no, out)
            self._n_legacy += 1
        if code == EVENT:
            stats.lines_event += 1
        elif code == IGNORED:
            stats.lines_ignored += 1
        elif code == UNKNOWN:
            stats.add_unknown(line_no, line.rstrip("\r\n"))
        # DEFERRED: accounted for by the legacy handler when its record completes
        if out:
            stats.events += len(out)
            drop_implausible(out)
        return out

    def _may_be_decorated(self, line: str) -> bool:
        """False for a line starting with '[' that the unified handler would return 0 for,
        without side effects, before unified mode: no decorator layout is known yet and no
        decorator starts with what follows the '[' (legacy '[GC ...', '[Times: ...', G1
        '[Ext Root Scanning ...' detail lines at column 0: saves a call per such line)."""
        if self._unified.layout is not None:
            return True
        c = line[1:2]
        return c.isdigit() or "a" <= c <= "z"

    def flush(self) -> list[GcEvent]:
        """Return the events that are complete but held back waiting for optional trailing
        lines (``User=..``/``[Times: ..]``/G1 details), without ending the stream -- e.g. for a
        live tail that has been idle for a while.  Trailing lines that arrive later are still
        counted, but no longer attached to the event.  Open multi-line records are kept."""
        out: list[GcEvent] = []
        self._legacy.flush(out)
        self._unified.flush_ready(out)
        self.stats.events += len(out)
        drop_implausible(out)
        return out

    def finish(self) -> list[GcEvent]:
        """End of input: flush pending events (incomplete ones are counted, not emitted)."""
        out: list[GcEvent] = []
        if self._finished:
            return out
        self._finished = True
        self._legacy.finish(out)
        self._unified.finish(out)
        self.stats.events += len(out)
        drop_implausible(out)
        self.stats.formats = {"unified": self._n_unified, "legacy": self._n_legacy}
        span = self.time_span()
        if span is not None:
            (self.stats.first_uptime_s, self.stats.first_wall_time), (
                self.stats.last_uptime_s, self.stats.last_wall_time) = span
        return out

    def time_span(self):
        """((first_uptime_s, first_wall_time), (last_uptime_s, last_wall_time)) of the
        time-stamped lines seen so far (unified decorators or legacy prefixes), or None."""
        spans = [s for s in (self._unified.span(), self._legacy.span()) if s is not None]
        if not spans:
            return None
        if len(spans) == 1:
            return spans[0]
        return max(spans, key=lambda sp: self._n_unified if sp is spans[0] else self._n_legacy)

    # convenience ------------------------------------------------------------------------------

    def feed_many(self, lines: Iterable[str], first_line_no: int = 1) -> Iterator[GcEvent]:
        n = first_line_no
        for line in lines:
            yield from self.feed(line, n)
            n += 1


def open_log(path: PathLike) -> IO[str]:
    """Open a GC log as text: plain, gzip (``.gz``) or the first member of a ``.zip``; collectors.gc.limits
    bounds line length, expansion and empty runs, and reads a damaged gzip up to the damage."""
    return BoundedLines(*_opened(path))


def open_log_bytes(path: PathLike) -> IO[bytes]:
    """:func:`open_log` without the decoding (the native core reads bytes), within the same bounds."""
    return io.BufferedReader(BoundedBytes(*_opened(path)))


def open_log_chunks(path: PathLike, core) -> IO[bytes]:
    """The native `core`'s input: :func:`open_log_bytes`'s budget and damage handling, with the
    line bounds applied by the core itself as it splits lines (limits.bound_native)."""
    raw, p, budget = _opened(path)
    bound_native(core, p)
    return BoundedChunks(raw, p, budget)


def _opened(path: PathLike) -> tuple[IO[bytes], str, int | None]:
    """A GC log's raw byte stream (plain, gzip or a zip's first member), its path and the
    decompressed budget (collectors.gc.limits: none for a plain file, whose size bounds it)."""
    p = os.fspath(path)
    with open(p, "rb") as fh:
        magic = fh.read(4)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(p, "rb"), p, max(MIN_BUDGET_BYTES, MAX_RATIO * os.path.getsize(p))
    if magic == b"PK\x03\x04":
        try:
            zf = zipfile.ZipFile(p)
        except zipfile.BadZipFile as e:
            raise GcInputError(f"GC log {p}: damaged zip archive ({e}); unzip what you can and give the plain file") from None
        names = [n for n in zf.namelist() if not n.endswith("/")]
        if not names:
            raise ValueError(f"empty zip archive: {p}")
        return zf.open(names[0]), p, max(MIN_BUDGET_BYTES, MAX_RATIO * zf.getinfo(names[0]).compress_size)
    return open(p, "rb"), p, None


def iter_events(lines: Iterable[str], parser: Optional[GcLogParser] = None, **kwargs) -> Iterator[GcEvent]:
    """Stream events from an iterable of lines (constant memory); see :class:`GcLogParser`."""
    p = parser or GcLogParser(**kwargs)
    feed = p.feed
    n = 0
    for line in lines:
        n += 1
        ev = feed(line, n)
        if ev:
            yield from ev
    yield from p.finish()


def parse_lines(lines: Iterable[str], **kwargs) -> tuple[list[GcEvent], ParseStats]:
    """Parse an iterable of lines; returns (events, stats)."""
    p = GcLogParser(**kwargs)
    events = list(iter_events(lines, parser=p))
    return events, p.stats


def parse_file(path: PathLike, **kwargs) -> tuple[list[GcEvent], ParseStats]:
    """Parse a GC log file (plain, ``.gz`` or ``.zip``); returns (events, stats)."""
    p = GcLogParser(**kwargs)
    if hasattr(p, "feed_bytes"):  # native core: raw blocks, decoded and split natively
        events: list[GcEvent] = []
        with open_log_chunks(path, p._core) as fb:
            while True:
                block = fb.read(1 << 20)  # a fresh 16 MB block cost ~10 ms of page faults
                events.extend(p.feed_bytes(block, end=not block))
                if not block:
                    break
    else:
        with open_log(path) as fh:
            events = list(iter_events(fh, parser=p))
            return events, p.stats
    events.extend(p.finish())
    return events, p.stats
