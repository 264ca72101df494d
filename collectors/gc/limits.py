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
import zlib
from typing import IO, Iterator

MAX_LINE_BYTES = 64 << 10  # a longer line is cut here (the rest skipped unread into memory)
MAX_RATIO = 200  # decompressed bytes per compressed byte, beyond any GC log's
MIN_BUDGET_BYTES = 256 << 20  # ... but a small archive may always expand to this much
MAX_BLANK_RUN = 100_000  # consecutive empty lines: a GC log has none to speak of
CHUNK = 1 << 20

_damage: dict[str, str] = {}  # path → what went wrong reading it (the last read of that path)


class GcInputError(ValueError):
    """A GC log input beyond a bound; the message names the file, the bound and what to do."""


def damage_of(path: str) -> str | None:
    """What cut the last read of `path` short (a damaged or truncated archive), if anything."""
    return _damage.get(path)


class BoundedLines(io.TextIOBase):
    """Text lines of a binary stream, within the bounds above. `budget`: decompressed bytes allowed
    (None: unbounded, for plain files whose size is their own bound)."""

    def __init__(self, raw: IO[bytes], path: str, budget: int | None) -> None:
        self._raw, self._path, self._budget = raw, path, budget
        self._lines = self._split()
        self.cut_lines = 0
        _damage.pop(path, None)

    def _chunks(self) -> Iterator[bytes]:
        read = 0
        read1 = getattr(self._raw, "read1", self._raw.read)  # read1: what decompressed before damage is not lost
        while True:
            try:
                chunk = read1(CHUNK)
            except (EOFError, zlib.error, OSError) as e:  # gzip.BadGzipFile is an OSError
                _damage[self._path] = (f"the archive is damaged or cut short after {read:,} bytes "
                                       f"({type(e).__name__}: {e}); the lines before the damage were read")
                return
            if not chunk:
                return
            read += len(chunk)
            if self._budget is not None and read > self._budget:
                raise GcInputError(
                    f"GC log {self._path}: expands to more than {self._budget / 1048576:,.0f} MiB, over {MAX_RATIO}× its "
                    "compressed size — no GC log compresses that well (an archive bomb?); if it is genuine, "
                    "decompress it and give the plain file")
            yield chunk

    def _split(self) -> Iterator[str]:
        pending, blank, cut = b"", 0, False
        for chunk in self._chunks():
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            if cut and parts:  # the rest of an over-long line: skip to its end
                parts.pop(0)
                cut = False
            for part in parts:
                if part.endswith(b"\r"):  # CRLF logs read as the text mode's universal newlines did
                    part = part[:-1]
                blank = blank + 1 if not part.strip() else 0
                if blank > MAX_BLANK_RUN:
                    raise GcInputError(f"GC log {self._path}: more than {MAX_BLANK_RUN:,} empty lines in a row — "
                                       "this is not a GC log (or not one this tool should read)")
                yield part[:MAX_LINE_BYTES].decode("utf-8", errors="replace") + "\n"
            if len(pending) > MAX_LINE_BYTES and not cut:
                self.cut_lines += 1
                yield pending[:MAX_LINE_BYTES].decode("utf-8", errors="replace") + "\n"
                pending, cut = b"", True
            elif cut:
                pending = b""
        if pending and not cut:
            yield pending[:MAX_LINE_BYTES].decode("utf-8", errors="replace")

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
