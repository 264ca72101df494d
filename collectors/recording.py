"""Recordings: every exchange as one JSON object per line (gzip when the name ends in .gz).

Envelope v1 (public interface; other sources add their own `source` values):
    {"v": 1, "ts": "<RFC3339 ms UTC>", "source": "jolokia", "target": "<name>",
     "request": [<Jolokia request objects>], "response": <exact JSON body or null>,
     "error": <null or transport error text>, "elapsed_ms": <number>}

Replaying a recording produces exactly the bronze rows the live scrape produced (same keys), so
ingesting it twice, or after the live run, adds nothing.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Iterator

from collectors.base import Observation, format_ts, obs_key, parse_ts
from collectors.jolokia import error_kind_of

ENVELOPE_VERSION = 1


class RecordingError(ValueError):
    """A recording line is not a valid envelope; names the file, the line and the fix."""


def envelope(
    ts: datetime,
    target: str,
    requests: list[dict],
    response: Any,
    error: str | None,
    elapsed_ms: float | None,
    source: str = "jolokia",
) -> dict:
    return {
        "v": ENVELOPE_VERSION,
        "ts": format_ts(ts),
        "source": source,
        "target": target,
        "request": requests,
        "response": response,
        "error": error,
        "elapsed_ms": None if elapsed_ms is None else round(elapsed_ms, 3),
    }


class RecordingWriter:
    """Appends envelopes; each line is flushed so a crash loses at most the line being written."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        raw: IO[bytes]
        if self.path.suffix == ".gz":
            # Appending to .gz adds a gzip member; readers handle multi-member files.
            raw = gzip.open(self.path, "ab")
        else:
            raw = open(self.path, "ab")
        self._fh = raw
        self.lines = 0

    def write(self, env: dict) -> None:
        self._fh.write((json.dumps(env, separators=(",", ":")) + "\n").encode())
        self._fh.flush()
        self.lines += 1

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "RecordingWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class ReadReport:
    lines: int = 0
    envelopes: int = 0
    skipped_sources: int = 0
    bad_lines: list[tuple[int, str]] | None = None
    truncated_tail: bool = False
    damaged_segments: int = 0  # gzip members cut short mid-file (a recorder killed, then restarted)


_GZIP_MAGIC = b"\x1f\x8b\x08"
_CHUNK = 1 << 16


def _gzip_bytes(fh: IO[bytes], report: ReadReport) -> Iterator[bytes]:
    """The decompressed bytes of every gzip member, surviving members cut short.

    A recorder killed with SIGKILL leaves its member without an end; the restarted recorder
    appends a new member after it. A plain gzip reader fails at that point and loses everything
    after it, so here a damaged member is counted and decoding resumes at the next member header.
    An empty bytes value marks a cut: the line in progress ended there."""
    pos = 0  # file offset of the first input byte not yet given to the decompressor
    member_start = 0
    d = zlib.decompressobj(31)
    fed = False  # the current member has received input
    while True:
        fh.seek(pos)
        data = fh.read(_CHUNK)
        if not data:
            if fed and not d.eof:
                report.truncated_tail = True  # the last member has no end: its writer was killed
            return
        saved = d.copy()
        try:
            out = d.decompress(data)
        except zlib.error:
            # decode this chunk again in small steps to keep what came before the damage
            yield from _decode_until_damage(saved, data)
            report.damaged_segments += 1
            yield b""
            pos = _next_member(fh, member_start + 1)
            if pos < 0:
                return
            member_start, d, fed = pos, zlib.decompressobj(31), False
            continue
        fed = True
        if out:
            yield out
        if d.eof:
            pos += len(data) - len(d.unused_data)
            member_start, d, fed = pos, zlib.decompressobj(31), False
        else:
            pos += len(data)


def _decode_until_damage(d, data: bytes) -> Iterator[bytes]:
    """What `d` decodes from `data` before the first damaged byte (64-byte steps, then bytes)."""
    for i in range(0, len(data), 64):
        step = d.copy()
        try:
            out = d.decompress(data[i:i + 64])
        except zlib.error:
            for b in range(i, min(i + 64, len(data))):
                try:
                    out = step.decompress(data[b:b + 1])
                except zlib.error:
                    return
                if out:
                    yield out
            return
        if out:
            yield out


def _next_member(fh: IO[bytes], start: int) -> int:
    """Offset of the next gzip member header at or after `start`, or -1."""
    pos = start
    while True:
        fh.seek(pos)
        block = fh.read(_CHUNK + len(_GZIP_MAGIC) - 1)
        if len(block) < len(_GZIP_MAGIC):
            return -1
        i = block.find(_GZIP_MAGIC)
        if i >= 0:
            return pos + i
        pos += _CHUNK


def _raw_lines(path: Path, report: ReadReport) -> Iterator[bytes]:
    """The file's lines as bytes (newline kept; a last line without one is yielded as is)."""
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            fh.seek(0)
            yield from fh
            return
        buf = b""
        for piece in _gzip_bytes(fh, report):
            if not piece:  # a cut: the line in progress is cut short, and stands alone
                if buf:
                    yield buf
                buf = b""
                continue
            buf += piece
            *complete, buf = buf.split(b"\n")
            for line in complete:
                yield line + b"\n"
        if buf:
            yield buf


def read_envelopes(path: str | os.PathLike, report: ReadReport | None = None, strict: bool = False) -> Iterator[dict]:
    """Yield valid envelopes. A bad line is reported (line number, reason) and skipped; with
    strict=True it raises RecordingError. A half-written last line (a recorder killed mid-write)
    is counted in `report.truncated_tail`, never fatal; so is a gzip member cut short in the
    middle of the file (`report.damaged_segments`): the lines after it are read."""
    p = Path(path)
    if not p.exists():
        raise RecordingError(f"recording {p} does not exist")
    report = report if report is not None else ReadReport()
    report.bad_lines = report.bad_lines if report.bad_lines is not None else []
    try:
        lines = _raw_lines(p, report)
        line = next(lines, None)
        no = 0
        while line is not None:
            following = next(lines, None)  # one line of look-ahead: is this the last one?
            no += 1
            env = _parse_line(p, no, line, following is None, report, strict)
            if env is not None:
                yield env
            line = following
    except OSError as e:
        raise RecordingError(f"cannot read recording {p}: {e}") from None


def _parse_line(p: Path, no: int, raw: bytes, last: bool, report: ReadReport, strict: bool) -> dict | None:
    report.lines += 1
    line = raw.decode("utf-8", errors="replace")
    if not line.strip():
        return None
    try:
        env = json.loads(line)
        problem = validate_envelope(env)
    except (ValueError, RecursionError) as e:
        if last and not line.endswith("\n"):
            report.truncated_tail = True
            return None
        problem = f"not JSON ({e.__class__.__name__}: {str(e)[:80]})"
    if problem:
        if strict:
            raise RecordingError(f"{p}:{no}: {problem}; fix or remove the line (see README, 'Recordings and replay')")
        report.bad_lines.append((no, problem))
        return None
    report.envelopes += 1
    return env


def validate_envelope(env: object) -> str | None:
    if not isinstance(env, dict):
        return "line is not a JSON object"
    if env.get("v") != ENVELOPE_VERSION:
        return f"unsupported envelope version {env.get('v')!r} (this brokerscope reads v{ENVELOPE_VERSION})"
    for key in ("ts", "source", "target"):
        if not isinstance(env.get(key), str) or not env.get(key):
            return f"missing or non-string {key!r}"
    try:
        parse_ts(env["ts"])
    except ValueError:
        return f"ts {env['ts']!r} is not RFC 3339"
    if env["source"] == "jolokia":
        if not isinstance(env.get("request"), list):
            return "jolokia envelope without a 'request' array"
        if env.get("response") is None and not env.get("error"):
            return "jolokia envelope with neither response nor error"
    return None


def observation_from_envelope(env: dict, kind: str, group: str | None) -> Observation:
    return Observation(
        ts=parse_ts(env["ts"]),
        target=env["target"],
        kind=kind,
        group=group,
        requests=env["request"],
        response=env.get("response"),
        error=env.get("error"),
        elapsed_ms=env.get("elapsed_ms"),
    )


def bronze_row(env: dict, kind: str, group: str | None, url: str | None, collector: str, http_status: int | None = None, error_kind: str | None = None) -> dict:
    """The bronze_jolokia row for one jolokia envelope (live and replay share this)."""
    ts = parse_ts(env["ts"])
    resp = env.get("response")
    return {
        "obs_key": obs_key(env["source"], env["target"], ts, env["request"]),
        "ts": ts,
        "obs_date": ts.strftime("%Y-%m-%d"),
        "target": env["target"],
        "kind": kind,
        "group_name": group,
        "url": url,
        "request_json": json.dumps(env["request"], separators=(",", ":")),
        "response_json": None if resp is None else json.dumps(resp, separators=(",", ":")),
        "http_status": http_status,
        "error": env.get("error"),
        "error_kind": error_kind or error_kind_of(env.get("error")),
        "elapsed_ms": env.get("elapsed_ms"),
        "collector": collector,
    }
