"""Recordings as other pollers and bad luck deliver them: per-answer time jitter, rows dropped at
random, a hole of several intervals in one target, duplicated rows. Used by the robustness
property (tests/test_robustness.py); deterministic for a given seed."""

from __future__ import annotations

import gzip
import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in gzip.open(path, "rt") if line.strip()]


def write(envelopes: list[dict], path: Path) -> Path:
    with gzip.open(path, "wt") as f:
        for env in sorted(envelopes, key=lambda e: e["ts"]):
            f.write(json.dumps(env) + "\n")
    return path


def ts(env: dict) -> datetime:
    return datetime.fromisoformat(env["ts"].replace("Z", "+00:00"))


def _with_ts(env: dict, ts: datetime) -> dict:
    return {**env, "ts": ts.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}


def jitter(envelopes: list[dict], interval: float, seed: int) -> list[dict]:
    """Each answer stamped up to a third of the interval later, independently (a poller that asks
    the servers one after the other, a loaded collector)."""
    rng = random.Random(seed)
    return [_with_ts(e, ts(e) + timedelta(seconds=rng.uniform(0, interval / 3))) for e in envelopes]


def drop(envelopes: list[dict], share: float, seed: int) -> list[dict]:
    """`share` of the rows dropped at random, never two neighbours of one target (that is a hole)."""
    rng = random.Random(seed)
    by_target: dict[str, list[int]] = {}
    for i, e in enumerate(sorted(range(len(envelopes)), key=lambda i: envelopes[i]["ts"])):
        by_target.setdefault(envelopes[e]["target"], []).append(e)
    gone: set[int] = set()
    candidates = [i for rows in by_target.values() for i in rows[1:-1]]
    rng.shuffle(candidates)
    for i in candidates:
        if len(gone) >= round(share * len(envelopes)):
            break
        rows = by_target[envelopes[i]["target"]]
        k = rows.index(i)
        if rows[k - 1] not in gone and rows[k + 1] not in gone:
            gone.add(i)
    return [e for i, e in enumerate(envelopes) if i not in gone]


def hole(envelopes: list[dict], target: str, start: datetime, seconds: float) -> list[dict]:
    """No row of `target` for `seconds` from `start` (a collector shard down, rows lost)."""
    end = start + timedelta(seconds=seconds)
    return [e for e in envelopes if not (e["target"] == target and start <= ts(e) < end)]


def duplicate(envelopes: list[dict], share: float, seed: int) -> list[dict]:
    """`share` of the rows written twice (a recording replayed twice, an at-least-once shipper)."""
    rng = random.Random(seed)
    return envelopes + [e for e in envelopes if rng.random() < share]
