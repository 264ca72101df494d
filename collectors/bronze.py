"""Rows on their way to bronze: the buffer that keeps them until a commit succeeds, the periodic
flush every collector runs (Jolokia scrapes, ZooKeeper), and the counts both report."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Callable, Protocol

from collectors.recording import RecordingWriter
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

    def summary(self) -> str:
        parts = [f"{n}: {s.scrapes} scrapes, {s.errors} errors" for n, s in self.targets.items()]
        return f"{self.bronze_rows} bronze rows in {self.flushes} commits ({'; '.join(parts)})"


class BronzeBuffer(list):
    """Rows waiting for their bronze commit. A failed commit (disk full, lakehouse unwritable)
    keeps them, in order, for the next one: nothing is dropped while storage is away."""

    def __init__(self, lakehouse: Lakehouse, table: str) -> None:
        super().__init__()
        self.lakehouse, self.table = lakehouse, table

    def flush(self) -> int:
        """Commit; returns the new rows (-1: nothing was buffered). Raises the LakehouseError."""
        batch = self[:]
        if not batch:
            return -1
        n = self.lakehouse.append_new(self.table, batch)
        del self[: len(batch)]  # rows added during the commit stay for the next one
        return n


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
