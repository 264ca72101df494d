"""Bounds on what a GC log file may cost: line length, decompressed size, runs of empty lines,
and what a damaged gzip still gives.

A real GC log has lines under a few KiB, compresses about 10–20:1 and has no long runs of empty
lines. A file far outside that is an input bomb (1 GiB with no newline, 512 MiB of newlines in a
small gzip) or not a GC log; reading stops with a `GcInputError` that says which bound and why.
A gzip cut short (a copy interrupted, a disk full) yields every line before the damage, and the
damage is noted (`damage_of`) for the report instead of ending in a traceback.
"""

from __future__ import annotations

import io
import re
import zlib
from typing import IO, Iterator

import numpy as np

MAX_LINE_BYTES = 64 << 10  # a longer line is cut here (the rest skipped unread into memory)
MAX_RATIO = 200  # decompressed bytes per compressed byte, beyond any GC log's
MIN_BUDGET_BYTES = 256 << 20  # ... but a small archive may always expand to this much
MAX_BLANK_RUN = 100_000  # consecutive empty lines: a GC log has none to speak of
CHUNK = 1 << 20
_EOL = re.compile(rb"\r\n|\r|\n")  # universal newlines, as text mode reads them

_damage: dict[str, str] = {}  # path → what went wrong reading it (the last read of that path)


class GcInputError(ValueError):
    """A GC log input beyond a bound; the message names the file, the bound and what to do."""


def blank_run_error(path: str) -> GcInputError:
    """The error for more than MAX_BLANK_RUN empty (or whitespace-only) lines in a row."""
    return GcInputError(f"GC log {path}: more than {MAX_BLANK_RUN:,} empty lines in a row — "
                        "this is not a GC log (or not one this tool should read)")


def bound_native(core, path: str) -> None:
    """The line bounds (MAX_LINE_BYTES, MAX_BLANK_RUN) on a native core's byte input, applied by
    the core as it splits lines, with BoundedLines' rules (native/gcparse/src/bounds.rs)."""
    core.set_line_bounds(MAX_LINE_BYTES, MAX_BLANK_RUN, lambda: blank_run_error(path))


def damage_of(path: str) -> str | None:
    """What cut the last read of `path` short (a damaged or truncated archive), if anything."""
    return _damage.get(path)


def bounded_chunks(raw: IO[bytes], path: str, budget: int | None) -> Iterator[bytes]:
    """Decompressed chunks within `budget`; a damaged archive ends them, noted for damage_of."""
    read = 0
    read1 = getattr(raw, "read1", raw.read)  # read1: what decompressed before damage is not lost
    while True:
        try:
            chunk = read1(CHUNK)
        except (EOFError, zlib.error, OSError) as e:  # gzip.BadGzipFile is an OSError
            _damage[path] = (f"the archive is damaged or cut short after {read:,} bytes "
                                   f"({type(e).__name__}: {e}); the lines before the damage were read")
            return
        if not chunk:
            return
        read += len(chunk)
        if budget is not None and read > budget:
            raise GcInputError(
                f"GC log {path}: expands to more than {budget / 1048576:,.0f} MiB, over {MAX_RATIO}× its "
                "compressed size — no GC log compresses that well (an archive bomb?); if it is genuine, "
                "decompress it and give the plain file")
        yield chunk


class BoundedLines(io.TextIOBase):
    """Text lines of a binary stream, within the bounds above. `budget`: decompressed bytes allowed
    (None: unbounded, for plain files whose size is their own bound)."""

    def __init__(self, raw: IO[bytes], path: str, budget: int | None) -> None:
        self._raw, self._path, self._budget = raw, path, budget
        self._lines = self._split()
        self.cut_lines = 0
        _damage.pop(path, None)

    def _chunks(self) -> Iterator[bytes]:
        return bounded_chunks(self._raw, self._path, self._budget)

    def _split(self) -> Iterator[str]:
        """Lines as the text mode's universal newlines split them (\\n, \\r\\n and a lone \\r: old
        logs end lines with CR only), each within the bounds, whatever the chunking."""
        head, size, blank_line, blank, cr = b"", 0, True, 0, False  # head: the line's first MAX_LINE_BYTES
        for chunk in self._chunks():
            if cr and chunk[:1] == b"\n":
                chunk = chunk[1:]  # the LF of a CRLF split between chunks
            cr = chunk.endswith(b"\r")
            *parts, tail = _EOL.split(chunk)
            for part in parts:
                blank = blank + 1 if blank_line and (not part or part.isspace()) else 0  # not part.strip()
                if blank > MAX_BLANK_RUN:
                    raise blank_run_error(self._path)
                yield self._decoded(head + part[:MAX_LINE_BYTES - len(head)], size + len(part)) + "\n"
                head, size, blank_line = b"", 0, True
            blank_line = blank_line and (not tail or tail.isspace())
            head, size = head + tail[:MAX_LINE_BYTES - len(head)], size + len(tail)
        if head:
            yield self._decoded(head, size)

    def _decoded(self, line: bytes, size: int) -> str:
        """A line's first MAX_LINE_BYTES (of its `size`) as text."""
        self.cut_lines += size > MAX_LINE_BYTES
        return line.decode("utf-8", errors="replace")

    def readable(self) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return self._lines

    def __next__(self) -> str:
        return next(self._lines)

    def readline(self, size: int = -1) -> str:  # lines are already bounded: size is ignored
        return next(self._lines, "")

    def read(self, size: int = -1) -> str:
        return "".join(self._lines) if size is None or size < 0 else self.readline()

    def close(self) -> None:
        self._raw.close()
        super().close()


class BoundedBytes(io.RawIOBase):
    """The bytes of a GC log (`parser.open_log_bytes`) within the bounds of `BoundedLines`: the
    decompressed budget, runs of empty lines (here: empty ones only), over-long lines cut at
    MAX_LINE_BYTES (the rest of such a line skipped), and a damaged archive read up to the damage.
    Works on whole chunks (NumPy over the newline positions). The native parse paths read
    `BoundedChunks` instead and let the core apply the line bounds (`bound_native`)."""

    def __init__(self, raw: IO[bytes], path: str, budget: int | None) -> None:
        self._raw, self._path, self._budget = raw, path, budget
        self._chunks = bounded_chunks(raw, path, budget)  # budget and damage, as for text
        self._line = 0  # bytes of the current (unfinished) line passed on so far
        self._skipping = False  # inside the cut-off rest of an over-long line
        self._blank = 0  # empty lines in a row so far
        self._last_cr = False  # the previous chunk ended with a CR (a CRLF may be split)
        self._buffer = b""
        _damage.pop(path, None)

    def readable(self) -> bool:
        return True

    def _bounded(self, chunk: bytes) -> bytes:
        byte = np.frombuffer(chunk, np.uint8)
        nl = np.flatnonzero((byte == 10) | (byte == 13))  # CR ends a line too (old CR-only logs); CRLF: an empty one
        starts = np.concatenate(([0], nl + 1))
        ends = np.concatenate((nl, [len(chunk)]))
        lengths = ends - starts
        lengths[0] += self._line
        lf = byte[nl] == 10
        crlf_gap = np.zeros(len(nl), dtype=bool)  # the empty "line" between the CR and LF of one CRLF
        crlf_gap[1:] = (nl[1:] == nl[:-1] + 1) & lf[1:] & ~lf[:-1]
        if len(nl) and nl[0] == 0 and lf[0] and self._last_cr:
            crlf_gap[0] = True
        self._last_cr = bool(len(chunk)) and chunk[-1:] == b"\r"
        self._check_blank_runs((lengths[: len(nl)] == 0)[~crlf_gap])  # complete lines only
        if lengths.max() <= MAX_LINE_BYTES and not self._skipping:
            self._line = int(lengths[-1])
            return chunk
        return self._cut(chunk, starts.tolist(), ends.tolist())

    def _check_blank_runs(self, empty: np.ndarray) -> None:
        """Empty complete lines in a row, carried across chunks."""
        if not empty.size:
            return
        edges = np.diff(np.concatenate(([0], empty.astype(np.int8), [0])))
        run_starts, run_ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs = run_ends - run_starts
        if runs.size and run_starts[0] == 0:
            runs[0] += self._blank
        if runs.size and runs.max() > MAX_BLANK_RUN:
            raise blank_run_error(self._path)
        self._blank = int(runs[-1]) if runs.size and run_ends[-1] == empty.size else 0

    def _cut(self, chunk: bytes, starts: list[int], ends: list[int]) -> bytes:
        """The chunk with every line cut at MAX_LINE_BYTES (the rest of a line skipped)."""
        out = []
        for k, (a, b) in enumerate(zip(starts, ends)):
            carry, skipping = (self._line, self._skipping) if k == 0 else (0, False)
            room = 0 if skipping else max(MAX_LINE_BYTES - carry, 0)
            out.append(chunk[a:a + min(b - a, room)] + chunk[b:b + 1])  # the line, cut, and its own terminator
            if k == len(starts) - 1:  # the unfinished line goes on in the next chunk
                self._skipping = skipping or b - a > room
                self._line = carry + min(b - a, room)
        return b"".join(out)

    def readinto(self, b) -> int:
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buffer = self._bounded(chunk)
        n = min(len(b), len(self._buffer))
        b[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


class BoundedChunks(io.RawIOBase):
    """The decompressed bytes of a GC log as they are read (no copy), within the budget and up to
    a damaged archive's damage, but not line-bounded: for the native core, which cuts lines and
    counts blank runs itself as it splits them (`bound_native`)."""

    def __init__(self, raw: IO[bytes], path: str, budget: int | None) -> None:
        self._raw = raw
        self._chunks = bounded_chunks(raw, path, budget)
        self._rest = b""
        _damage.pop(path, None)

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """The next chunk (at most `size` bytes); all that is left when `size` is negative."""
        if size is None or size < 0:
            return b"".join([self._rest, *self._chunks])
        data = self._rest or next(self._chunks, b"")
        data, self._rest = data[:size], data[size:]
        return data

    def close(self) -> None:
        self._raw.close()
        super().close()
