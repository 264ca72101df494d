"""Job watermarks, kept in the Delta commits that write the job's own outputs.

A job turns an input table into output tables. Every commit that writes one of its outputs records
which version of the input it reflects, and a fingerprint of what else decided the rows (config,
code). The next run may be incremental only when the latest commit of EVERY output carries the
same watermark for this job; otherwise (no watermark yet, a run stopped between two outputs, a
table rewritten by someone else, another config or code) it recomputes in full.

Why in the data commits rather than in a `_watermarks` table: a watermark written in the same
atomic commit as the rows it describes can never run ahead of them or lag behind them, a crash
leaves no half-state to repair (outputs that disagree simply mean "recompute"), and there is no
extra table to keep in step or to document as a contract. `DESCRIBE HISTORY` / delta-rs
`history()` show it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from lakehouse.store import Lakehouse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

KEY = "brokerscope.watermark"
# An incremental run first reads the stored rows this far before the new ones, to resume from them.
RESUME_TAIL_US = 10 * 60 * 1_000_000


@dataclass(frozen=True)
class Watermark:
    job: str
    input_version: int  # the input table version the outputs reflect
    fingerprint: str  # config and code that decided the rows

    def commit_info(self) -> dict[str, str]:
        return {KEY: json.dumps(asdict(self), sort_keys=True)}


def fingerprint(*parts: object, sources: Iterable[str | Path] = ()) -> str:
    """A short hash of `parts` (JSON) and of the text of `sources` (the code that makes the rows:
    editing it makes the next run a full one)."""
    h = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode())
    for path in sorted(map(str, sources)):
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:16]


def commit_entry(info: dict, key: str) -> str | None:
    """A string a job recorded in a commit (SparkLakehouse.write's commit_info): a top-level field
    of the commit's info (delta-rs), or a key of its userMetadata JSON (delta-spark)."""
    raw = info.get(key)
    if raw is None and isinstance(info.get("userMetadata"), str):
        try:
            raw = json.loads(info["userMetadata"]).get(key)
        except (ValueError, AttributeError):
            raw = None
    return raw


def _from_commit(info: dict) -> Watermark | None:
    raw = commit_entry(info, KEY)
    try:
        return Watermark(**json.loads(raw)) if raw else None
    except (TypeError, ValueError):
        return None


def read_watermark(lakehouse: Lakehouse, job: str, outputs: Sequence[str]) -> Watermark | None:
    """The watermark every output's latest commit agrees on for `job`, else None."""
    marks = set()
    for name in outputs:
        dt = lakehouse._open(name)
        last = dt.history(limit=1) if dt is not None else []
        marks.add(_from_commit(last[0]) if last else None)
    mark = marks.pop() if len(marks) == 1 else None
    return mark if mark is not None and mark.job == job else None


def anchored_watermark(lakehouse: Lakehouse, job: str, anchor: str, outputs: Sequence[str], key: str) -> Watermark | None:
    """The watermark of a job that commits an output only when it has rows for it: `anchor`'s
    latest commit's (the state table the job writes last, every run), when each of `outputs` is as
    that run left it — its latest commit carries the same watermark (the run wrote it), or it is
    still at the version the anchor's commit recorded under `key` (the run had nothing for it).
    Else None: another writer, or a run stopped between two outputs (the next run is a full one)."""
    def last(name: str) -> tuple[int | None, dict]:
        dt = lakehouse._open(name)
        if dt is None:
            return None, {}
        h = dt.history(limit=1)
        return dt.version(), (h[0] if h else {})

    _v, info = last(anchor)
    mark = _from_commit(info)
    if mark is None or mark.job != job:
        return None
    try:
        versions = json.loads(commit_entry(info, key) or "null")
    except ValueError:
        versions = None
    for t in outputs:
        version, last_info = last(t)
        if _from_commit(last_info) != mark and (not isinstance(versions, dict) or version is None or versions.get(t) != version):
            return None
    return mark


def anchor_info(lakehouse: Lakehouse, info: dict[str, str], outputs: Sequence[str], key: str) -> dict[str, str]:
    """The anchor's commit info: `info` (the watermark's), and under `key` the versions `outputs` are at now."""
    return {**info, key: json.dumps({t: lakehouse.version(t) for t in outputs}, sort_keys=True)}


def pinned_read(slh, name: str, columns: Sequence[str] | None = None) -> tuple[DataFrame, int]:
    """The table at its current version, and that version (-1: no table yet)."""
    version = slh.lakehouse.version(name)
    return slh.read(name, version=version, columns=columns), -1 if version is None else version


def appended_since(slh, job: str, outputs: Sequence[str], input_table: str, fp: str, columns: Sequence[str] | None = None):
    """The input's rows split at the job's watermark, when an incremental run is possible."""
    mark = read_watermark(slh.lakehouse, job, outputs)
    if mark is None or mark.fingerprint != fp:
        return None
    return slh.read_appended(input_table, mark.input_version, columns)
