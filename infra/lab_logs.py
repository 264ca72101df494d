"""Reading a lab JVM's logs: the end of one for an error message, and the times of its lines."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["matching_lines", "stamped_lines", "tail"]


def tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return f"<no log at {path}>"
    return "\n".join(data.splitlines()[-lines:])


def stamped_lines(log: Path, line: re.Pattern[str]) -> Iterator[tuple[float, re.Match[str]]]:
    """(epoch, match) of every line of ``log`` that ``line`` matches; its group 1 is the time stamp as
    both brokers' lab logs write it (``2025-01-02 03:04:05,678``, UTC). A missing log has no lines."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return
    for raw in text.splitlines():
        m = line.match(raw)
        if m:
            stamp = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
            yield stamp.timestamp(), m


def matching_lines(log: Path, line: re.Pattern[str], pattern: str, since: float = 0.0) -> list[tuple[float, str]]:
    """(epoch, message) of the lines of ``log`` whose message (``line``'s group ``msg``) matches
    ``pattern``, at or after ``since``."""
    rx = re.compile(pattern)
    return [(t, m.group("msg")) for t, m in stamped_lines(log, line) if t >= since and rx.search(m.group("msg"))]
