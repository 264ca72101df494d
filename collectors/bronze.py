"""Rows on their way to bronze: the buffer that keeps them until a commit succeeds, the periodic
flush every collector runs (Jolokia scrapes, ZooKeeper), and the counts both report."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

from collectors.base import ms_floor
from collectors.recording import RecordingWriter, envelope
from lakehouse.store import Lakehouse
from settings import Config

log = logging.getLogger("brokerscope.collect")


@dataclass
class TargetStats:
    scrapes: int = 0
    errors: int = 0
    last_error: str | None = None
    last_ok: float | None = None


@dataclass
class CollectStats:
    targets: dict[str, TargetStats] = field(default_factory=dict)
    bronze_rows: int = 0
    flushes: int = 0
    flush_errors: int = 0  # failed bronze commits (retried; the rows stay buffered)
    last_flush_error: str | None = None
    unlanded: list[tuple[int, str, str]] = field(default_factory=list)  # (rows, table, where they are) at stop

    def summary(self) -> str:
        parts = [f"{n}: {s.scrapes} scrapes, {s.errors} errors" for n, s in self.targets.items()]
        text = f"{self.bronze_rows} bronze rows in {self.flushes} commits ({'; '.join(parts)})"
        for n, table, where in self.unlanded:
            text += (f"\n{n} {table} rows could not be committed ({self.last_flush_error}); they are in {where}"
                     " — land them with `brokerscope replay --config <config> <file>` once the lakehouse is writable")
        return text


class BronzeBuffer(list):
    """Rows waiting for their bronze commit. A failed commit (disk full, lakehouse unwritable)
    keeps them, in order, for the next one: nothing is dropped while storage is away. Rows added
    with their envelope (`add`) can be written out as a recording when storage never comes back."""

    def __init__(self, lakehouse: Lakehouse, table: str) -> None:
        super().__init__()
        self.lakehouse, self.table = lakehouse, table
        self._envelopes: dict[str, dict] = {}  # obs_key → the envelope the row came from

    def add(self, row: dict, env: dict) -> None:
        self.append(row)
        self._envelopes[row["obs_key"]] = env

    def flush(self) -> int:
        """Commit; returns the new rows (-1: nothing was buffered). Raises the LakehouseError."""
        batch = self[:]
        if not batch:
            return -1
        n = self.lakehouse.append_new(self.table, batch)
        del self[: len(batch)]  # rows added during the commit stay for the next one
        for row in batch:
            self._envelopes.pop(row["obs_key"], None)
        return n

    def spill(self, path: Path) -> int:
        """Append the buffered rows' envelopes to the recording `path` (replayable), keep none."""
        with RecordingWriter(path) as out:
            for row in self:
                env = self._envelopes.get(row["obs_key"])
                out.write(env if env is not None else {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()})
        n = len(self)
        self.clear()
        self._envelopes.clear()
        return n


FINAL_TRIES, FINAL_PAUSE_S = 3, 0.5


def recording_path(recorder) -> Path | None:
    """The file a recorder writes (a SharedRecorder wraps one), None without a recording."""
    while recorder is not None and not hasattr(recorder, "path"):
        recorder = getattr(recorder, "_inner", None)
    return None if recorder is None else Path(recorder.path)


def land_or_spill(flush: Callable[[], int], buffer: BronzeBuffer, stats: CollectStats, recording: Path | None,
                  spill_dirs: list[Path]) -> None:
    """At stop: commit what is buffered (a few tries, storage may be back); what still cannot be
    written stays findable — in the recording when there is one (every envelope is already there),
    else in a spill recording in the first writable folder of `spill_dirs`. `stats` says where."""
    error: Exception | None = None
    for attempt in range(FINAL_TRIES):
        try:
            flush()
            return
        except Exception as e:  # noqa: BLE001 - storage away: try again, then keep the rows elsewhere
            error = e
            if attempt + 1 < FINAL_TRIES:
                time.sleep(FINAL_PAUSE_S)
    n = len(buffer)
    stats.flush_errors += 1
    stats.last_flush_error = str(error)
    if recording is not None:
        buffer.clear()
        stats.unlanded.append((n, buffer.table, f"the recording {recording}"))
        return
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for folder in spill_dirs:
        path = folder / f"brokerscope-spill-{buffer.table}-{stamp}-{os.getpid()}.jsonl"
        try:
            buffer.spill(path)
        except OSError as e:
            log.error("cannot write the spill file %s (%s); trying the next folder", path, e.strerror or e)
            continue
        stats.unlanded.append((n, buffer.table, f"the spill recording {path}"))
        return
    stats.unlanded.append((n, buffer.table, "nowhere (no writable folder for a spill file: they are lost)"))


async def flush_periodically(flush: Callable[[], int], stop: asyncio.Event, interval: float, stats: CollectStats) -> None:
    """Call `flush` (in a thread: delta-rs commits block) every `interval` until `stop` is set.
    A failing commit is logged and retried at the next interval; the rows stay buffered."""
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except asyncio.TimeoutError:
            pass
        try:
            await asyncio.to_thread(flush)
        except Exception as e:  # noqa: BLE001 - storage full or unwritable: keep collecting
            stats.flush_errors += 1
            stats.last_flush_error = str(e)
            log.error("bronze commit failed; the rows stay buffered and are retried every %gs: %s", interval, e)


class CollectorHost(Protocol):
    """What a kind's own collector (ZooKeeper) uses of the collector that runs it
    (collectors.scraper.Collector): its settings, storage, counts, recording and stop signal."""

    config: Config
    lakehouse: Lakehouse
    stats: CollectStats
    recorder: RecordingWriter | None
    on_observation: Callable[[dict], None] | None
    _stop: asyncio.Event

    def spill_dirs(self) -> list[Path]: ...


def land_exchanges(host: "CollectorHost", pending: BronzeBuffer, target: str, tick: float, exchanges: Iterable[Any],
                   row: Callable[[dict], dict]) -> None:
    """One round of a non-Jolokia collector for one target (ZooKeeper, Kafka protocol): counted as
    one scrape, every exchange (`source`, `request`, `response`, `error`, `elapsed_ms`, `started`,
    `ok`) stamped with the round's tick, recorded, and buffered for bronze as `row(envelope)`."""
    exchanges = list(exchanges)
    st = host.stats.targets[target]
    st.scrapes += 1
    failed = [ex.error for ex in exchanges if not ex.ok]
    if failed:
        st.errors += 1
        st.last_error = failed[0]
        log.warning("%s", failed[0])
    elif exchanges:
        st.last_ok = exchanges[0].started
    for ex in exchanges:
        env = envelope(ms_floor(tick), target, [ex.request], ex.response, ex.error, ex.elapsed_ms, source=ex.source)
        if host.recorder:
            host.recorder.write(env)
        pending.add(row(env), env)
        if host.on_observation:
            host.on_observation(env)


def flush_counted(pending: BronzeBuffer, stats: CollectStats) -> int:
    """Commit a collector's buffer, counted in its stats (the LakehouseError goes to the caller)."""
    n = pending.flush()
    if n >= 0:
        stats.bronze_rows += n
        stats.flushes += 1
    return max(n, 0)
