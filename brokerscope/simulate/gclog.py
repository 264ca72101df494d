"""GC logs of simulated JVMs: JDK 17 unified logging, G1, decorators time, uptime, level and tags
(`-Xlog:gc*:file=gc.log:time,uptime,level,tags`), in the form of the real logs in
shared/corpus/gc/local-jdk17 (e.g. longpause_g1_time-uptime-level-tags.log):

    [2026-11-21T22:39:22.474+0000][0.150s][info][gc,start    ] GC(0) Pause Young (Normal) (G1 Evacuation Pause)
    [2026-11-21T22:39:22.664+0000][0.339s][info][gc          ] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 153M->151M(3072M) 189.376ms

A pause writes its start line when it begins and its summary line when it ends (the JVM is stopped
in between). The tailer's envelopes (collectors.gc.ingest) carry what a poll read: the lines
written since the previous poll.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from collectors.gc.ingest import Line, envelope


@dataclass(frozen=True)
class Pause:
    """A stop-the-world pause at `start` (s since t0) lasting `ms`."""

    start: float
    ms: float
    full: bool = False

    @property
    def end(self) -> float:
        return self.start + self.ms / 1000.0


def _stamp(t0: datetime, t: float, jvm_start: float) -> str:
    wall = t0 + timedelta(seconds=t)
    return f"[{wall.strftime('%Y-%m-%dT%H:%M:%S.')}{wall.microsecond // 1000:03d}+0000][{t - jvm_start:.3f}s]"


def pause_lines(t0: datetime, jvm_start: float, no: int, p: Pause) -> list[tuple[float, str]]:
    """(time written, text) of one pause."""
    if p.full:
        what, heap = "Pause Full (G1 Compaction Pause)", "2900M->1705M(3072M)"
    else:
        what, heap = "Pause Young (Normal) (G1 Evacuation Pause)", "153M->41M(3072M)"
    return [
        (p.start, f"{_stamp(t0, p.start, jvm_start)}[info][gc,start    ] GC({no}) {what}"),
        (p.end, f"{_stamp(t0, p.end, jvm_start)}[info][gc          ] GC({no}) {what} {heap} {p.ms:.3f}ms"),
    ]


def log_lines(t0: datetime, jvm_start: float, pauses: list[Pause]) -> list[tuple[float, str]]:
    """Every line of the file in the order written: the JVM's header, then the pauses."""
    head_t = jvm_start + 0.004
    out = [(head_t, f"{_stamp(t0, head_t, jvm_start)}[info][gc] Using G1"),
           (head_t, f"{_stamp(t0, head_t, jvm_start)}[info][gc,init] Version: 17.0.15+6-Debian-1deb12u1 (release)")]
    for no, p in enumerate(sorted(pauses, key=lambda p: p.start)):
        out.extend(pause_lines(t0, jvm_start, no, p))
    return sorted(out, key=lambda x: x[0])


def file_id(target: str, first_line: str) -> str:
    """`<dev>-<inode>-<head>-<gen>` as the tailer names a file (collectors/gc/tailer.py)."""
    inode = int(hashlib.sha256(target.encode()).hexdigest()[:6], 16)
    head = hashlib.sha256(first_line.encode()).hexdigest()[:12]
    return f"803-{inode:x}-{head}-0"


def poll_envelopes(target: str, path: str, t0: datetime, lines: list[tuple[float, str]], polls: list[float]) -> list[dict]:
    """The tailer's envelopes: at each poll time, the lines written since the previous poll."""
    fid = file_id(target, lines[0][1]) if lines else None
    out, i, offset = [], 0, 0
    for poll in polls:
        batch: list[Line] = []
        first_no = i + 1
        while i < len(lines) and lines[i][0] <= poll:
            text = lines[i][1]
            batch.append(Line(offset, len(text.encode()) + 1, text))
            offset += len(text.encode()) + 1
            i += 1
        if batch:
            out.append(envelope(t0 + timedelta(seconds=poll), target, path, fid, first_no, batch))
    return out
