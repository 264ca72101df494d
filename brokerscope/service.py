"""`brokerscope run`: collectors, incremental analysis, alerting and /metrics in one long-lived
process.

Low latency is the point: a fault must reach a webhook within two scrape intervals plus two
seconds, and a Spark run takes longer than that. So there are two paths:

- fast: every scrape is normalized in memory at once (the pack's own `normalize`, as the Spark
  job does) into the latest broker_state row per instance (`LatestState`); the alert pipeline
  ticks right after it, on its own thread, with those rows as `live_state`. /metrics reads them too.
- slow: the Spark jobs run incrementally (from their watermarks) every `analysis_interval` on a
  background thread with one warm Spark session; gold findings, and the gold-derived metrics, are
  as fresh as the last run.

Its settings: the `service:` section (settings/service.py).

SIGTERM or Ctrl-C stops it gracefully: the collector lands what it holds in bronze, a running
Spark job is cancelled (the next run redoes it from the watermark), /metrics closes.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from alerts.exporter import LatestState, StateSnapshot, gold_rows
from alerts.metrics_server import serve_metrics
from alerts.pipeline import AlertPipeline
from collectors.base import Rows, obs_key
from collectors.gc.tailer import GcTailer
from collectors.packs import pack_for
from collectors.quarantine import normalize_checked
from collectors.recording import observation_from_envelope
from collectors.scraper import Collector
from collectors.text import printable
from lakehouse.store import Lakehouse
from settings import Config, Target
from settings.service import ServiceSettings

log = logging.getLogger("brokerscope.service")

SHUTDOWN_GRACE = 15.0  # how long a stopping service waits for a running analysis to give up


class Stopping(Exception):
    """Raised inside an analysis run when the service stops (between two jobs)."""




def say(msg: str) -> None:
    """A progress line with a UTC time stamp (as the demo prints)."""
    print(f"[{datetime.now(timezone.utc):%H:%M:%S.%f}"[:-3] + f"] {printable(msg, keep_newlines=True)}", file=sys.stderr, flush=True)


# --- the fast path: one scrape → silver rows in memory -------------------------------------------


def observation_rows(env: dict, target: Target) -> Rows:
    """The silver rows of one Jolokia envelope, exactly as the Spark job will derive them."""

    obs = observation_from_envelope(env, target.kind, target.group)
    pack = pack_for(target.kind)
    return normalize_checked(pack, obs, obs_key(env["source"], env["target"], obs.ts, env["request"]), pack.tables)[0]


def state_change(prev: dict | None, row: dict) -> str | None:
    """A progress line when an instance's answer or role changed, else None."""
    if prev is not None and prev["reachable"] == row["reachable"] and prev["role"] == row["role"]:
        return None
    if not row["reachable"]:
        if prev is not None and not prev["reachable"]:
            return None
        return f"{row['instance']} not answering: {row.get('error') or 'no usable answer'}"
    return f"{row['instance']} is {row['role']}" + ("" if prev is None else f" (was {prev['role']})") + f" in group {row['group_name']}"


@dataclass
class TickStats:
    """Counts and durations of one repeated activity (alert ticks, analysis runs)."""

    runs: int = 0
    errors: int = 0
    last_duration_s: float | None = None
    last_success: float | None = None
    last_error: str | None = None

    def record(self, started: float, error: BaseException | None) -> None:
        self.runs += 1
        self.last_duration_s = time.time() - started
        if error is None:
            self.last_success = time.time()
            self.last_error = None
        else:
            self.errors += 1
            self.last_error = f"{type(error).__name__}: {error}"


def load_pipeline(cfg: Config, lakehouse) -> AlertPipeline:
    """The alert pipeline of the config's `alerts:` section."""
    return AlertPipeline(cfg, lakehouse)


class Service:
    """One long-lived process: the collector on the main thread's event loop, the alert ticks and
    the Spark analysis on their own threads, /metrics on prometheus-client's server thread."""

    def __init__(self, cfg: Config, settings: ServiceSettings | None = None, progress: Callable[[str], None] | None = say,
                 pipeline=None, spark=None) -> None:

        self.cfg = cfg
        self.settings = settings or getattr(cfg, "service", None) or ServiceSettings()
        self.say = progress or (lambda m: None)
        self.warn = progress or say  # problems are said even with --quiet
        self.lakehouse = Lakehouse(cfg.lakehouse_root())
        self.targets = {t.name: t for t in cfg.targets}
        self.live = LatestState(configured_groups={t.group for t in cfg.targets if t.group})
        self.collector = Collector(cfg, lakehouse=self.lakehouse, on_observation=self._on_observation)
        self.pipeline = pipeline if pipeline is not None else load_pipeline(cfg, self.lakehouse)
        self.spark = spark  # kept warm across analysis runs; started on the analysis thread
        self.alert_stats = TickStats()
        self.analysis_stats = TickStats()
        self.metrics_server = None
        self._own_spark = spark is None
        self._gold: dict[str, list[dict]] = {}
        self._rule_errors: dict[str, str] = {}
        self._last_scrape: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._observed = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- fast path --------------------------------------------------------------------------------

    def _on_observation(self, env: dict) -> None:
        """Called by the collector on its event loop after every exchange: must be quick, never raise."""
        target = self.targets.get(env.get("target"))
        if target is None or env.get("source") != "jolokia":
            return  # ZooKeeper exchanges reach /metrics and the alerts through gold (zk_quorum)
        try:
            rows = observation_rows(env, target)
            before = {r["instance"]: self.live.latest(r["instance"]) for r in rows.broker_state}
            self.live.observe(rows.broker_state, rows.destination_stats, rows.replication_stats)
            with self._lock:
                self._last_scrape[target.name] = {"elapsed_ms": env.get("elapsed_ms"), "up": env.get("error") is None}
            for instance, prev in before.items():
                line = state_change(prev, self.live.latest(instance))
                if line:
                    self.say(line)
        except Exception as e:  # a pack bug must not stop the scrape loop
            log.exception("normalizing a scrape of %s failed: %s", target.name, e)
        self._observed.set()

    def _alert_loop(self) -> None:
        """Tick after every scrape (scrapes landing during a tick make one more tick, not many), at
        least every alert_interval, at most every min(0.25 s, scrape_interval / 4): with many
        targets, ticks stay bounded while a fault still waits at most a fraction of a scrape."""
        interval = self.settings.alert_interval or self.cfg.scrape_interval
        spacing = min(0.25, self.cfg.scrape_interval / 4)
        while not self._stop.is_set():
            self._observed.wait(timeout=interval)
            self._observed.clear()
            if self._stop.is_set():
                return
            started = time.monotonic()
            self.tick()
            self._stop.wait(max(0.0, spacing - (time.monotonic() - started)))

    def tick(self, now: datetime | None = None):
        """One alert evaluation over the live state (errors are counted and logged, not raised)."""
        if self.pipeline is None:
            return None
        started, result, error = time.time(), None, None
        try:
            result = self.pipeline.tick(now or datetime.now(timezone.utc), live_state=self.live.broker_state())
        except Exception as e:  # a receiver or table problem must not stop the service
            error = e
            log.debug("alert tick failed", exc_info=True)
            if f"{type(e).__name__}: {e}" != self.alert_stats.last_error:  # once per distinct error, not every scrape
                self.warn(f"alert tick failed (retried after every scrape): {type(e).__name__}: {e}")
        with self._lock:
            self.alert_stats.record(started, error)
        if result is not None and (result.started or result.resolved or result.sent or result.failed):
            for line in result.lines():
                self.say(f"alerts: {line.strip()}")
        if result is not None and result.rule_errors != self._rule_errors:
            self._rule_errors = dict(result.rule_errors)  # said once per change, not every tick
            for name, err in result.rule_errors.items():
                self.warn(f"alerts: rule {name} cannot be evaluated: {err[:200]}{'…' if len(err) > 200 else ''}")
        return result

    # -- slow path --------------------------------------------------------------------------------

    def _analysis_loop(self) -> None:
        try:
            if self.spark is None:
                from lakehouse.spark import spark_session  # deferred: pyspark is heavy to import

                self.say("starting Spark (local) for the background analysis")
                self.spark = spark_session("brokerscope-run")
        except Exception as e:
            self.warn(f"analysis is off: Spark did not start ({type(e).__name__}: {e})")
            return
        while not self._stop.wait(self.settings.analysis_interval):
            self.analyze_once()

    def analyze_once(self) -> dict[str, int]:
        """One incremental analysis run, then a refresh of the gold-derived metrics."""
        from analysis.runner import analyze  # deferred: pyspark is heavy to import

        started, counts, error = time.time(), {}, None
        try:
            counts = analyze(self.cfg, spark=self.spark, progress=self._analysis_step)
            self.refresh_gold()
        except Exception as e:  # e.g. stopped at shutdown, or a table problem: the next run retries
            error = e
            if not self._stop.is_set():
                log.debug("analysis run failed", exc_info=True)
                self.warn(f"analysis failed (retried in {self.settings.analysis_interval:g}s): {type(e).__name__}: {e}")
        with self._lock:
            self.analysis_stats.record(started, error)
        if error is None:
            self.say(f"analysis done in {time.time() - started:.1f}s: "
                     + ", ".join(f"{k} {v}" for k, v in counts.items() if k in ("failover_events", "split_brain_windows", "stuck_messages", "replication_findings", "gc_findings", "zk_findings")))
        return counts

    def _analysis_step(self, msg: str) -> None:
        """analyze()'s progress callback: between two jobs, the place to give up when stopping."""
        if self._stop.is_set():
            raise Stopping("the service is stopping; the next run redoes this one from the watermarks")
        log.debug("analysis: %s", msg)

    def refresh_gold(self) -> None:

        gold = gold_rows(self.lakehouse, datetime.now(timezone.utc), {t.name: t.group for t in self.cfg.targets})
        with self._lock:
            self._gold = gold

    # -- /metrics ---------------------------------------------------------------------------------

    def snapshot(self) -> StateSnapshot:

        snap = self.live.fill(StateSnapshot())
        with self._lock:
            gold, last, alerts, analysis = dict(self._gold), dict(self._last_scrape), self.alert_stats, self.analysis_stats
            snap.service = service_values(alerts, analysis, self.pipeline is not None, self.settings.analysis or analysis.runs > 0)
        for name, rows in gold.items():
            setattr(snap, name, rows)
        snap.scrapes = [
            {"target": t.name, "kind": t.kind, "group": t.group, "scrapes": st.scrapes, "errors": st.errors,
             "last_ok": st.last_ok, "last_elapsed_ms": last.get(t.name, {}).get("elapsed_ms"), "up": last.get(t.name, {}).get("up")}
            for t in self.cfg.targets if (st := self.collector.stats.targets.get(t.name)) is not None and st.scrapes
        ]
        return snap

    # -- lifecycle --------------------------------------------------------------------------------

    def start_background(self) -> None:
        """/metrics, the alert thread, the analysis thread (and the GC tailer when targets have gc_logs)."""
        if self.settings.metrics:

            self.metrics_server = serve_metrics(self.snapshot, self.settings.metrics_listen, self.settings.max_destination_series)
            self.say(f"serving {self.metrics_server.url}")
        try:
            self.refresh_gold()  # what earlier runs found, before the first analysis of this one
        except Exception as e:
            self.warn(f"gold tables not readable yet ({type(e).__name__}: {e}); /metrics shows live state only")
        self._spawn("alerts", self._alert_loop)
        if self.pipeline is None:
            self.warn("alerting is off (alerts.pipeline not available)")
        if self.settings.analysis:
            self._spawn("analysis", self._analysis_loop)
        if any(t.gc_logs for t in self.cfg.targets):
            self._spawn("gc-tail", self._gc_tail_loop)

    def _spawn(self, name: str, fn) -> None:
        t = threading.Thread(target=fn, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _gc_tail_loop(self) -> None:

        with GcTailer(self.cfg, lakehouse=self.lakehouse) as tailer:
            tailer.run(self._stop)

    def run(self, duration: float | None = None):
        """Run until `duration` passes, SIGTERM or Ctrl-C; returns the collector's stats."""
        self.say(f"brokerscope run: {len(self.cfg.targets)} target(s) every {self.cfg.scrape_interval:g}s → {self.cfg.lakehouse_root()}"
                 + (f"; analysis every {self.settings.analysis_interval:g}s" if self.settings.analysis else "; analysis off"))
        self._loop = asyncio.new_event_loop()
        try:
            self.start_background()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGINT):
                    self._loop.add_signal_handler(sig, self._on_signal, sig)
            self._loop.run_until_complete(self.collector.run(duration))  # lands what it holds in bronze on the way out
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGINT):
                    self._loop.remove_signal_handler(sig)  # a second signal during shutdown stops at once
        finally:
            self.shutdown()
            self._loop.close()
        self.say(f"stopped: {self.collector.stats.summary()}")
        return self.collector.stats

    def _on_signal(self, sig: int) -> None:
        self.say(f"{signal.Signals(sig).name}: stopping (landing what was collected in bronze)")
        self.collector.stop()

    def stop(self) -> None:
        """Stop from another thread (tests, the bench)."""
        try:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self.collector.stop)
        except RuntimeError:  # the loop has closed: already stopped
            pass

    def shutdown(self) -> None:
        """Stop the threads: the alert tick ends at once; a Spark run is cancelled and abandoned
        after SHUTDOWN_GRACE (its commits are atomic, the next run redoes it from the watermarks)."""
        self._stop.set()
        self._observed.set()
        deadline = time.monotonic() + SHUTDOWN_GRACE
        for t in self._threads:
            while t.is_alive() and time.monotonic() < deadline:
                self._cancel_spark_jobs()  # again each time: a run may start its next job meanwhile
                t.join(0.5)
            if t.is_alive():
                self.warn(f"{t.name} thread still busy after {SHUTDOWN_GRACE:g}s; leaving it (nothing is lost: the next run redoes it)")
        if self.spark is not None and self._own_spark:
            self.spark.stop()
        if self.metrics_server is not None:
            self.metrics_server.stop()

    def _cancel_spark_jobs(self) -> None:
        if self.spark is not None:
            try:
                self.spark.sparkContext.setLogLevel("ERROR")  # no stack trace per killed task
                self.spark.sparkContext.cancelAllJobs()
            except Exception:  # noqa: BLE001 - Spark already stopping
                pass


def service_values(alerts: TickStats, analysis: TickStats, alerting: bool, analysing: bool) -> dict[str, float]:
    """The brokerscope_alert_* / brokerscope_analysis_* metric values (absent: not running)."""
    out: dict[str, float] = {}
    if alerting:
        out |= {"brokerscope_alert_evaluations_total": alerts.runs, "brokerscope_alert_evaluation_errors_total": alerts.errors}
        if alerts.last_duration_s is not None:
            out["brokerscope_alert_evaluation_duration_seconds"] = alerts.last_duration_s
    if analysing:
        out |= {"brokerscope_analysis_runs_total": analysis.runs, "brokerscope_analysis_errors_total": analysis.errors}
        if analysis.last_duration_s is not None:
            out["brokerscope_analysis_duration_seconds"] = analysis.last_duration_s
        if analysis.last_success is not None:
            out["brokerscope_analysis_last_success_timestamp_seconds"] = analysis.last_success
    return out
