"""GC log lines as recording envelopes and as bronze_gc_lines rows.

The tailer turns what it read from one file in one poll into ONE envelope, writes it to the
recording (``collect --record``) and lands the rows :func:`bronze_rows` derives from it; replay
derives the rows from the recorded envelope with the same function, so both give identical rows
(same keys: target, file_id, offset) and re-ingesting adds nothing.

Envelope (recording source ``gc.log``)::

    {"v": 1, "ts": "<read time, RFC 3339 ms UTC>", "source": "gc.log", "target": "amq-a",
     "file": "/var/log/amq/gc.log", "file_id": "803-1a2b-5f3e9c0d21aa-0",
     "offset": 81920, "line_no": 812,
     "lines": ["[2026-…][info][gc] GC(12) Pause Young …", …,
               {"error": "binary: …", "kind": "binary", "length": 37, "preview": "\\x00\\x00…"}]}

``offset``/``line_no`` are those of the first line; each following line starts where the previous
one ended: a text line takes ``len(utf-8) + 1`` bytes (its newline), a rejected one ``length``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from collectors.base import format_ts, parse_ts

SOURCE = "gc.log"


@dataclass(frozen=True)
class Line:
    """One line read from a log file: text, or rejected with an error (then `text` is a preview)."""

    offset: int
    length: int  # bytes, newline included
    text: str
    error: str | None = None
    error_kind: str | None = None  # binary | overlong


def envelope(ts: datetime, target: str, file: str, file_id: str, line_no: int, lines: list[Line]) -> dict:
    """The recording envelope of consecutive lines of one file (`line_no` is the first line's)."""
    return {
        "v": 1,
        "ts": format_ts(ts),
        "source": SOURCE,
        "target": target,
        "file": file,
        "file_id": file_id,
        "offset": lines[0].offset,
        "line_no": line_no,
        "lines": [
            ln.text if ln.error is None
            else {"error": ln.error, "kind": ln.error_kind, "length": ln.length, "preview": ln.text}
            for ln in lines
        ],
    }


def validate(env: dict) -> str | None:
    """What is wrong with a gc.log envelope (None: nothing), for the recording reader."""
    for key in ("file", "file_id"):
        if not isinstance(env.get(key), str) or not env[key]:
            return f"gc.log envelope without a {key!r} string"
    for key in ("offset", "line_no"):
        if not isinstance(env.get(key), int) or isinstance(env[key], bool) or env[key] < 0:
            return f"gc.log envelope without a non-negative integer {key!r}"
    lines = env.get("lines")
    if not isinstance(lines, list) or not lines:
        return "gc.log envelope without a non-empty 'lines' array"
    for item in lines:
        if isinstance(item, str):
            continue
        if not (isinstance(item, dict) and isinstance(item.get("error"), str)
                and isinstance(item.get("length"), int) and item["length"] > 0):
            return "gc.log envelope: a 'lines' item is neither a string nor a rejected-line object"
    return None


def bronze_rows(env: dict, collector: str) -> list[dict]:
    """The bronze_gc_lines rows of one (valid) gc.log envelope — live and replay share this."""
    ts = parse_ts(env["ts"])
    offset, line_no = env["offset"], env["line_no"]
    rows = []
    for item in env["lines"]:
        if isinstance(item, str):
            length, text, error, kind = len(item.encode("utf-8")) + 1, item, None, None
        else:
            length, text, error, kind = item["length"], item.get("preview"), item["error"], item.get("kind")
        rows.append({
            "target": env["target"], "file_id": env["file_id"], "offset": offset, "length": length,
            "line_no": line_no, "line": text, "error": error, "error_kind": kind, "ts": ts,
            "file": env["file"], "collector": collector,
        })
        offset += length
        line_no += 1
    return rows
