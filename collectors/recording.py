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
import io
import json
import os
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


def _open_text(path: Path) -> IO[str]:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_envelopes(path: str | os.PathLike, report: ReadReport | None = None, strict: bool = False) -> Iterator[dict]:
    """Yield valid envelopes. A bad line is reported (line number, reason) and skipped; with
    strict=True it raises RecordingError. A half-written last line (a recorder killed mid-write)
    is counted in `report.truncated_tail`, never fatal."""
    p = Path(path)
    if not p.exists():
        raise RecordingError(f"recording {p} does not exist")
    report = report if report is not None else ReadReport()
    report.bad_lines = report.bad_lines if report.bad_lines is not None else []
    try:
        fh = _open_text(p)
        lines = list(_safe_lines(fh, report))
    except OSError as e:
        raise RecordingError(f"cannot read recording {p}: {e}") from None
    last = len(lines)
    for no, line in enumerate(lines, 1):
        report.lines += 1
        if not line.strip():
            continue
        try:
            env = json.loads(line)
            problem = validate_envelope(env)
        except ValueError as e:
            if no == last and not line.endswith("\n"):
                report.truncated_tail = True
                continue
            problem = f"not JSON ({e.__class__.__name__}: {str(e)[:80]})"
        if problem:
            if strict:
                raise RecordingError(f"{p}:{no}: {problem}; fix or remove the line (see README, 'Recordings')")
            report.bad_lines.append((no, problem))
            continue
        report.envelopes += 1
        yield env


def _safe_lines(fh: IO[str], report: ReadReport) -> Iterator[str]:
    with fh:
        try:
            for line in fh:
                yield line
        except (EOFError, gzip.BadGzipFile, OSError):
            # A gzip stream cut short (recorder killed): keep everything before the cut.
            report.truncated_tail = True


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
