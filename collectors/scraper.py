"""The live collector: scrape every target on a fixed cadence, land raw exchanges in bronze.

One asyncio task per target, so a slow or dead target never delays the others. Each scrape is one
bulk POST; its envelope goes to the optional recording at once and to bronze in batches
(`flush_interval`), so a crash loses at most one batch of bronze rows, never the recording.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import signal
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from collectors.base import ms_floor
from collectors.bronze import (BronzeBuffer, CollectStats, TargetStats, flush_counted, flush_periodically, land_or_spill,
                               recording_path)
from collectors.jolokia import JolokiaClient, shared_ssl_context
from collectors.packs import pack_for
from collectors.recording import RecordingWriter, bronze_row, envelope
from collectors.sampling import DestinationSampler
from collectors.schedule import period, scrape_due
from collectors.kafka_offsets import KafkaOffsetsCollector
from collectors.zookeeper import ZkCollector
from lakehouse.store import Lakehouse
from settings import Config, ConfigError, Target

log = logging.getLogger("brokerscope.collect")
STOP_GRACE_S = 1.0  # at a stop, how long a scrape in flight may take to land before it is cancelled



def scrape_timeout(target_timeout: float, interval: float) -> float:
    """How long one scrape of a target may take. As Prometheus: up to the interval (never less than
    1 s, so a busy JVM is not declared unknown too eagerly); a late scrape skips ticks instead of
    piling up — so a hanging target is scraped every max(interval, 1 s), not every interval."""
    return min(target_timeout, max(interval, 1.0))


KEEPALIVE_MAX_S = 16.0  # well under the idle timeout of the agents' servers (Tomcat 20 s; Jetty, the JDK's 30 s)


def keepalive(interval: float) -> float:
    """How long a target's idle connection is kept for its next scrape: one interval and 1 s (the
    gap between two scrapes never exceeds the interval, collectors.schedule), at least httpx's 5 s.
    With httpx's 5 s at a 10 s interval every scrape opened a new connection, and the old one,
    closed only at that next scrape, lived 10 s: ~30 tracked objects per scrape reached Python's
    oldest GC generation, most of the churn that set off a full collection every ~5 s at 1,500
    targets (BENCHMARKS.md, P16). Only up to KEEPALIVE_MAX_S: a connection the server closes as
    idle just when the next request goes out fails that scrape ("server disconnected", not
    retried), so for longer intervals the server's idle timeout must stay out of reach: 5 s, a new
    connection per scrape, as before. (A server closing it earlier is seen before reuse: httpcore
    finds the socket at EOF and connects anew.)"""
    keep = interval + 1.0
    return max(5.0, keep) if keep <= KEEPALIVE_MAX_S else 5.0


def freeze_long_lived(interval: float) -> asyncio.TimerHandle:
    """Keep what lives as long as a collector run out of Python's full garbage collections
    (gc.freeze: tracked objects move to a generation no collection walks; reference counting still
    frees them). A full collection walks every tracked object and stops the event loop meanwhile: at
    1,500 targets ~250,000 objects, 100-400 ms on the bench's core, which set the scrapes' p99
    (BENCHMARKS.md, P16). Called twice per run, returns the handle of the second call:
      - now, the set-up built: modules, config, one httpx client and one loop task per target
        (~100,000 objects, then ~90 per target);
      - after the first round (one interval and 1 s: the first scrapes are spread over one interval),
        as each target's connection is only made at its first scrape (~30 objects per target).
    Not again: later objects are churn or replace frozen ones (a reconnect), and a frozen object that
    dies in a reference cycle is only freed after gc.unfreeze(), so periodic freezes would leak. A new
    run (other targets) freezes its own set-up; its end unfreezes (Collector.run), so what was frozen
    and died meanwhile goes to the next full collection. Process-wide: two runs at once in one
    process share the frozen set, and the first to end unfreezes it (slower collections, no leak)."""
    gc.freeze()
    return asyncio.get_running_loop().call_later(interval + 1.0, gc.freeze)


class Collector:
    def __init__(
        self,
        config: Config,
        lakehouse: Lakehouse | None = None,
        record: str | None = None,
        on_observation: Callable[[dict], None] | None = None,
    ) -> None:
        self.config = config
        self.lakehouse = lakehouse or Lakehouse(config.lakehouse_root())
        self.recorder = RecordingWriter(record) if record else None
        self.on_observation = on_observation
        names = [t.name for t in config.targets] + [r.name for r in config.failover_readiness.replications]
        self.stats = CollectStats({n: TargetStats() for n in names})
        self._pending = BronzeBuffer(self.lakehouse, "bronze_jolokia")
        self._stop = asyncio.Event()
        self._napping: set[asyncio.Task] = set()  # target loops in _nap

    def stop(self) -> None:
        self._stop.set()
        for task in self._napping:  # the loops waiting for their next scrape end now (_nap)
            task.cancel()

    async def _nap(self, delay: float) -> bool:
        """Sleep `delay` s before a target's next scrape; False when the collector stopped meanwhile.
        A plain sleep that stop() cancels: a `wait_for(self._stop.wait(), delay)` per scrape built a
        task, its coroutine, futures, a timer and contexts (~24 objects tracked by Python's GC), all
        living a whole interval, so they reached the oldest generation: at 1,500 targets that churn
        set off a full collection every ~5 s (BENCHMARKS.md, P16). This sleep leaves ~6."""
        task = asyncio.current_task()
        self._napping.add(task)
        try:
            await asyncio.sleep(delay)
            return True
        except asyncio.CancelledError:
            if not self._stop.is_set():
                raise  # cancelled by someone else: not ours to swallow
            task.uncancel()
            return False
        finally:
            self._napping.discard(task)

    async def run(self, duration: float | None = None) -> CollectStats:
        replications = self.config.failover_readiness.replications
        if not self.config.targets and not replications:
            raise ValueError("the config has no targets; add at least one under `targets:` "
                             "(or a replication under `failover_readiness.replications:`)")
        jolokia = [t for t in self.config.targets if t.kind != "zookeeper"]
        zookeeper = [t for t in self.config.targets if t.kind == "zookeeper"]  # 4lw and kazoo, not Jolokia
        clients = {t.name: self._client(t) for t in jolokia}
        t_end = None if duration is None else time.time() + duration  # after set-up: scrape for `duration`
        n = len(jolokia)
        refreeze: asyncio.TimerHandle | None = None
        try:
            tasks = [
                # Spread the targets' first scrapes over one interval: N simultaneous requests would
                # make every scrape's elapsed_ms measure our own queueing, not the broker.
                asyncio.create_task(self._scrape_loop(t, clients[t.name], t_end, offset=i / n * self.config.scrape_interval),
                                    name=t.name)
                for i, t in enumerate(jolokia)
            ]
            if zookeeper:
                tasks.append(asyncio.create_task(ZkCollector(self, zookeeper).run(t_end), name="zookeeper"))
            if replications:  # the Kafka protocol: committed and translated offsets are not in JMX
                tasks.append(asyncio.create_task(KafkaOffsetsCollector(self, replications).run(t_end), name="kafka-offsets"))
            flusher = asyncio.create_task(self._flush_loop())
            refreeze = freeze_long_lived(self.config.scrape_interval)
            await self._until_done_or_stopped(tasks)
            self._stop.set()
            await flusher
        finally:
            land_or_spill(self.flush, self._pending, self.stats, recording_path(self.recorder), self.spill_dirs())
            for c in clients.values():
                await c.aclose()
            if self.recorder:
                self.recorder.close()
            if refreeze is not None:
                refreeze.cancel()
                gc.unfreeze()
        return self.stats

    async def _until_done_or_stopped(self, tasks: list[asyncio.Task]) -> None:
        """Wait for the loops to end (duration over) or for a stop; then scrapes in flight get
        STOP_GRACE_S to land and are cancelled after it, so no target can hold up a stop."""
        stopped = asyncio.create_task(self._stop.wait())
        pending: set[asyncio.Task] = set(tasks)
        while pending and not stopped.done():
            done, _ = await asyncio.wait(pending | {stopped}, return_when=asyncio.FIRST_COMPLETED)
            pending -= done
            for task in done - {stopped}:
                if not task.cancelled() and task.exception() is not None:  # a bug, not a target's doing
                    e = task.exception()
                    log.error("the loop of %s stopped: %s: %s (the other targets go on)", task.get_name(), type(e).__name__, e)
        if pending:
            _, late = await asyncio.wait(pending, timeout=STOP_GRACE_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        stopped.cancel()

    def spill_dirs(self) -> list[Path]:
        """Where rows that cannot reach bronze are written at stop: beside the lakehouse, here, /tmp."""
        root = self.config.lakehouse_root()
        near = [] if "://" in root else [Path(root).parent]
        return near + [Path.cwd(), Path(tempfile.gettempdir())]

    def _client(self, t: Target) -> JolokiaClient:
        verify: bool | str = t.verify_tls
        if t.ca_file and t.url.startswith("https://"):
            verify = str(self.config._here(t.ca_file))
            try:
                shared_ssl_context(verify)
            except (OSError, ssl.SSLError) as e:
                raise ConfigError(
                    f"target {t.name}: ca_file {verify} cannot be used ({getattr(e, 'strerror', None) or e}); "
                    "give the PEM file of the CA that signed the broker's certificate"
                ) from None
        return JolokiaClient(
            t.url,
            name=t.name,
            username=t.username,
            password=t.password(),
            origin=t.effective_origin,
            timeout=scrape_timeout(t.timeout, self.config.scrape_interval),
            retries=1,
            backoff=min(0.1, self.config.scrape_interval / 10),
            verify=verify,
            keepalive=keepalive(self.config.scrape_interval),
        )

    async def _scrape_loop(self, t: Target, client: JolokiaClient, t_end: float | None, offset: float = 0.0) -> None:
        interval = self.config.scrape_interval
        pack = pack_for(t.kind)
        broker_reads = pack.requests(t.broker_name)
        wildcard = pack.destination_request(t.broker_name)
        sampler = (
            DestinationSampler(wildcard, pack.backlog_attribute, limit=t.max_destinations_per_scrape)
            if wildcard
            else None
        )
        start = time.time() + offset
        k = 0
        next_at = scrape_due(start, k, interval)
        while not self._stop.is_set():
            if t_end is not None and next_at >= t_end:
                return
            delay = next_at - time.time()
            if delay > 0 and not await self._nap(delay):
                return
            await self._scrape_once(t, client, broker_reads, sampler, deadline=next_at + interval)
            k += 1
            now = time.time()
            if scrape_due(start, k, interval) < now:
                # fell behind (a slow or frozen target): scrape once at once, in the last missed slot,
                # then back on the grid — never a burst, never a gap longer than needed
                k = math.ceil((now - start) / period(interval)) - 1
                next_at = now
            else:
                next_at = scrape_due(start, k, interval)

    async def _scrape_once(self, t: Target, client: JolokiaClient, broker_reads: list[dict],
                           sampler: DestinationSampler | None, deadline: float) -> None:
        """One scrape of one target; whatever goes wrong stays this target's problem."""
        requests = broker_reads + (sampler.requests() if sampler else [])
        ex = await client.bulk(requests, deadline=deadline)
        if sampler and ex.ok:
            try:
                sampler.observe(requests, ex.items())
            except Exception as e:  # noqa: BLE001 - a strange answer must not end this target's loop
                log.warning("%s: destination sampling skipped this answer (%s: %s)", t.name, type(e).__name__, e)
        try:
            self._land(t, ex)
        except Exception as e:  # noqa: BLE001 - e.g. the recording's disk is full: keep scraping
            self.stats.targets[t.name].last_error = f"{t.name}: could not land a scrape ({type(e).__name__}: {e})"
            log.error("%s", self.stats.targets[t.name].last_error)

    def _land(self, t: Target, ex) -> None:
        st = self.stats.targets[t.name]
        st.scrapes += 1
        if ex.ok:
            st.last_ok = ex.started
        else:
            st.errors += 1
            st.last_error = ex.error
            log.warning("%s", ex.error)
        env = envelope(ms_floor(ex.started), t.name, ex.requests, ex.body if ex.ok else None, ex.error, ex.elapsed_ms)
        if self.recorder:
            self.recorder.write(env)
        self._pending.add(
            bronze_row(env, t.kind, t.group, t.url, "collect", http_status=ex.http_status, error_kind=ex.error_kind), env
        )
        if self.on_observation:
            self.on_observation(env)

    async def _flush_loop(self) -> None:
        await flush_periodically(self.flush, self._stop, self.config.flush_interval, self.stats)

    def flush(self) -> int:
        return flush_counted(self._pending, self.stats)


def progress_dots() -> Callable[[dict], None]:
    """An on_observation that draws one character per exchange on stderr: `.` answered, `x` not."""
    count = {"n": 0}

    def tick(env: dict) -> None:
        count["n"] += 1
        sys.stderr.write("." if env["error"] is None else "x")
        if count["n"] % 80 == 0:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return tick


def run_until_signalled(col: Collector, duration: float | None, say: Callable[[str], None] | None = None) -> CollectStats:
    """Run the collector on a new event loop until `duration` passes, SIGTERM or SIGINT (Ctrl-C):
    a signal stops the scrapes and lands what is buffered (or spills it, see land_or_spill)."""
    say = say or (lambda m: print(m, file=sys.stderr))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        handled = (signal.SIGTERM, signal.SIGINT) if threading.current_thread() is threading.main_thread() else ()

        def on_signal(sig: signal.Signals) -> None:
            say(f"{sig.name}: stopping (landing what was collected in bronze)")
            col.stop()
            for s in handled:  # a second signal stops at once
                loop.remove_signal_handler(s)

        for sig in handled:
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await col.run(duration)
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)

    asyncio.run(main())
    return col.stats


def collect(config: Config, duration: float | None = None, record: str | None = None, progress: bool = True) -> CollectStats:
    """Run the collector until `duration` passes, SIGTERM or Ctrl-C."""
    col = Collector(config, record=record)
    if progress:
        col.on_observation = progress_dots()
    run_until_signalled(col, duration)
    if progress:
        sys.stderr.write("\n")
    return col.stats
