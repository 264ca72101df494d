"""What every drill shares: the workdir and config, the background collector, ground truth from
broker logs, and the scorecard that compares the analysis with the truth.

A drill module has ``NAME``, ``SUMMARY``, ``run(workdir, interval) -> (config path, truth)`` (the
real fault, with the collector running and the truth written to ``ground_truth.json``) and
``score(lakehouse, truth) -> Scorecard``. :func:`brokerscope.drills.run_drill` strings them
together with the Spark analysis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from collectors.gc.tailer import GcTailer
from collectors.recording import RecordingWriter
from collectors.scraper import Collector
from infra.lab import LabError, stomp_send
from infra.lab_logs import stamped_lines
from settings import Config, load_config

#: scheduling jitter of the scrape loop on a loaded machine, allowed on top of one scrape interval
SLACK_S = 0.1
QUEUE = "/queue/BROKERSCOPE.LAB"

_LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \|")


def say(msg: str) -> None:
    print(f"[{datetime.now(timezone.utc):%H:%M:%S.%f}"[:-3] + f"] {msg}", flush=True)


def epoch(ts: datetime | None) -> float | None:
    return None if ts is None else ts.timestamp()


# --------------------------------------------------------------------------------------------------
# workdir, config, truth
# --------------------------------------------------------------------------------------------------

DRILL_FILES = ("lab", "lakehouse", "recording.jsonl.gz", "ground_truth.json", "brokerscope.yaml", "report.json")


def fresh_workdir(workdir: Path, keep: bool = False) -> Path:
    """``workdir`` resolved and created, what an earlier drill left there removed (unless ``keep``)."""
    workdir = Path(workdir).resolve()
    if not keep:
        for sub in DRILL_FILES:
            p = workdir / sub
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


def write_config(workdir: Path, targets: list[dict], interval: float, **extra: Any) -> tuple[Path, Config]:
    """``<workdir>/brokerscope.yaml`` with a lakehouse beside it; returns (path, loaded config)."""
    path = workdir / "brokerscope.yaml"
    doc = {"lakehouse": "./lakehouse", "scrape_interval": f"{int(round(interval * 1000))}ms",
           "flush_interval": "1s", **extra, "targets": targets}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, load_config(path)


def activemq_targets(pair, group: str = "store-1", gc_logs: bool = False, urls: dict[str, str] | None = None,
                     names: Iterable[str] | None = None, **extra: Any) -> list[dict]:
    """Config targets for the brokers (``names``, default both) of an :class:`infra.lab.ActiveMQPair`,
    one HA group; ``urls`` for brokers not started yet (fixed Jolokia ports)."""
    out = []
    for name in names or pair.names:
        url = (urls or {}).get(name) or pair.jolokia_url(name)
        t = {"name": name, "kind": "activemq", "url": url, "group": group, "timeout": "2s", **extra}
        if gc_logs:
            t["gc_logs"] = [str(pair.workdir / name / "gc.log") + "*"]
        out.append(t)
    return out


def run_in_lab(lab, workdir: Path, truth: dict, drive: Callable[[], None]) -> tuple[Path, dict]:
    """`drive()` the drill in `lab` (stopped by PID whatever happens), then write its ground truth;
    returns (config path, truth) as a drill's `run` does."""
    try:
        drive()
    finally:
        lab.stop()
    write_truth(workdir, truth)
    return workdir / "brokerscope.yaml", truth


def write_truth(workdir: Path, truth: dict) -> dict:
    (workdir / "ground_truth.json").write_text(json.dumps(truth, indent=2, default=str) + "\n")
    return truth


def log_times(log: Path, pattern: str, since: float = 0.0) -> list[float]:
    """Epoch times of the lines of an ActiveMQ log (lab layout: ``ISO8601 UTC | LEVEL | message``)
    whose text matches ``pattern``, at or after ``since``."""
    rx = re.compile(pattern)
    return [t for t, m in stamped_lines(log, _LOG_TS) if t >= since and rx.search(m.string)]


def activemq_log(pair, name: str) -> Path:
    """The broker's log4j file (its path outlives ``pair.stop()``, which forgets the processes)."""
    return pair.workdir / name / "activemq.log"


def scrape_end(ts: float, instance: str, states: list[dict] | None) -> float:
    """When the scrape of `instance` stamped `ts` ended (its broker_state row's `scrape_ms` after the
    stamp): the stamp is when the request was sent, its answer tells the state when it came back. A
    scrape in flight at a kill is unanswered though sent before it (27 ms after, P10 loop); one sent
    before a console logged it was up is answered once it is (0.55 s, drill artemis-stale-backup-zk)."""
    ms = next((r["scrape_ms"] for r in states or () if r["instance"] == instance and abs(epoch(r["ts"]) - ts) < 1e-3), None)
    return ts + (ms or 0.0) / 1000


def first_log_time(log: Path, pattern: str, since: float = 0.0) -> float | None:
    found = log_times(log, pattern, since)
    return found[0] if found else None


# --------------------------------------------------------------------------------------------------
# collection while the drill runs
# --------------------------------------------------------------------------------------------------


_RUNNING: list = []  # collectors and periodic threads a drill started and has not stopped yet


def stop_leftovers() -> None:
    """Stop what a drill that failed half-way left running (its collector, producers, probes)."""
    while _RUNNING:
        with contextlib.suppress(Exception):
            _RUNNING[-1].stop()
        if _RUNNING:
            _RUNNING.pop()


class BackgroundCollector:
    """The real collector on its own event loop thread (and the GC tailer beside it when targets
    have ``gc_logs``), writing bronze and one recording; stoppable from the drill."""

    def __init__(self, config: Config, record: Path) -> None:

        self.writer = RecordingWriter(str(record))
        self.collector = Collector(config)
        self.collector.recorder = _SharedRecorder(self.writer)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="collector", daemon=True)
        self.error: BaseException | None = None
        self._tail_stop = threading.Event()
        self._tail_thread: threading.Thread | None = None
        self.tailer = None
        if any(t.gc_logs for t in config.targets):

            self.tailer = GcTailer(config, lakehouse=self.collector.lakehouse, recorder=self.collector.recorder)

    def _run(self) -> None:
        try:
            self.loop.run_until_complete(self.collector.run())
        except BaseException as e:  # surfaced by stop()
            self.error = e

    def start(self) -> "BackgroundCollector":
        _RUNNING.append(self)
        self.thread.start()
        if self.tailer is not None:
            self._tail_thread = threading.Thread(target=self.tailer.run, args=(self._tail_stop,), name="gc-tail", daemon=True)
            self._tail_thread.start()
        return self

    def stop(self):
        """Stop and flush; returns the collector's stats (raises what the collector raised)."""
        with contextlib.suppress(ValueError):
            _RUNNING.remove(self)
        self.loop.call_soon_threadsafe(self.collector.stop)
        self.thread.join(timeout=60)
        if self._tail_thread is not None:
            self._tail_stop.set()
            self._tail_thread.join(timeout=60)
            self.tailer.close()
        self.writer.close()
        self.loop.close()
        if self.error:
            raise self.error
        return self.collector.stats


def start_collecting(workdir: Path, targets: list[dict], interval: float, **extra: Any) -> tuple[Path, "BackgroundCollector"]:
    """Write the drill's config and start the collector (recording to ``recording.jsonl.gz``)."""
    cfg_path, cfg = write_config(workdir, targets, interval, **extra)
    say(f"collecting every {interval:g}s → {cfg.lakehouse_root()}")
    return cfg_path, BackgroundCollector(cfg, workdir / "recording.jsonl.gz").start()


def settle(interval: float, scrapes: int = 3, at_least: float = 1.5) -> None:
    """Let the collector see a few scrapes of the current state."""
    time.sleep(max(at_least, scrapes * interval))


def master_and_slave(pair, before: str) -> tuple[str, str]:
    """(master, slave) of a lab pair now; a clear error when there is not exactly one master."""
    master = pair.master()
    if master is None:
        raise RuntimeError(f"no single master {before}: roles {pair.roles()}")
    return master, next(n for n in pair.names if n != master)


class _SharedRecorder:
    """One recording written by the scraper's loop and the GC tailer's thread; closed by its owner."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def write(self, env: dict) -> None:
        with self._lock:
            self._inner.write(env)

    def close(self) -> None:
        pass


class Periodic:
    """Calls ``tick()`` every ``period`` s from a daemon thread between ``start()`` and ``stop()``."""

    def __init__(self, name: str, period: float) -> None:
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self):
        _RUNNING.append(self)
        self._thread.start()
        return self

    def stop(self):
        with contextlib.suppress(ValueError):
            _RUNNING.remove(self)
        self._stop.set()
        self._thread.join(30)

    def tick(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.period)


class Producer(Periodic):
    """Sends one non-persistent STOMP message to a broker every ``period`` s and notes what it saw:
    the times of acknowledged (RECEIPT) sends and of refused ones. What a client pinned to that
    broker experiences."""

    def __init__(self, stomp_url: str, name: str, period: float = 0.2) -> None:
        super().__init__(f"producer-{name}", period)
        self.stomp_url, self.name = stomp_url, name
        self.acked: list[float] = []  # when each acknowledged send got its receipt
        self.acked_sent: list[float] = []  # … and when it was sent
        self.refused: list[float] = []

    def stop(self) -> dict:
        super().stop()
        return {"acked": len(self.acked), "refused": len(self.refused),
                "first_acked": self.acked[0] if self.acked else None, "last_acked": self.acked[-1] if self.acked else None}

    def acked_between(self, start: float, end: float) -> list[float]:
        return [t for t in self.acked if start <= t <= end]

    def sent_and_acked_between(self, start: float, end: float) -> int:
        """Sends both made and acknowledged inside [start, end]."""
        return sum(1 for s, a in zip(self.acked_sent, self.acked) if start <= s and a <= end)

    def tick(self) -> None:

        t = time.time()
        try:
            stomp_send(self.stomp_url, QUEUE, [f"{self.name}-{len(self.acked) + len(self.refused)}"],
                       persistent=False, timeout=1.0)
            self.acked.append(time.time())
            self.acked_sent.append(t)
        except (OSError, LabError):
            self.refused.append(t)


# --------------------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------------------


@dataclass
class Scorecard:
    """Findings against ground truth: what was detected, boundary errors, latencies, failures."""

    drill: str
    interval: float
    detected: dict[str, bool] = field(default_factory=dict)
    boundaries: dict[str, float] = field(default_factory=dict)  # observed − true, seconds
    latencies: dict[str, float] = field(default_factory=dict)  # fault → first observation showing it
    facts: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def detect(self, what: str, found: bool, why_not: str = "") -> bool:
        """Record whether the fault ``what`` was found; a miss is a failure (recall 100 %)."""
        self.detected[what] = bool(found)
        if not found:
            self.failures.append(f"{what} not detected" + (f": {why_not}" if why_not else ""))
        return bool(found)

    def expect_none(self, what: str, rows: list, describe: Callable[[dict], str] = str) -> None:
        """A finding that must not exist (a false split brain, a false failover)."""
        self.detected[f"no {what}"] = not rows
        if rows:
            self.failures.append(f"false {what}: " + "; ".join(describe(r) for r in rows[:3]))

    def boundary(self, name: str, observed: float | None, truth: float | None,
                 lo: float | None = None, hi: float | None = None) -> None:
        """``observed − truth`` must lie in [lo, hi] (default: within one scrape interval either way)."""
        if observed is None or truth is None:
            self.failures.append(f"{name}: {'no observation' if observed is None else 'no ground truth'}")
            return
        err = observed - truth
        lo = -(self.interval + SLACK_S) if lo is None else lo
        hi = self.interval + SLACK_S if hi is None else hi
        self.boundaries[name] = round(err, 3)
        if not lo <= err <= hi:
            self.failures.append(f"{name}: off by {err:+.3f} s (allowed {lo:+.3f} … {hi:+.3f} s)")

    def latency(self, name: str, seconds: float | None) -> None:
        if seconds is not None:
            self.latencies[name] = round(seconds, 3)

    def require(self, ok: bool, failure: str) -> bool:
        if not ok:
            self.failures.append(failure)
        return ok

    def to_json(self) -> dict:
        return {
            "drill": self.drill, "passed": self.passed, "scrape_interval_s": self.interval,
            "detected": self.detected,
            "boundary_errors_s": self.boundaries,
            "boundary_errors_intervals": {k: round(v / self.interval, 2) for k, v in self.boundaries.items()},
            "latencies_s": self.latencies, "facts": self.facts, "failures": self.failures,
        }

    def render(self) -> str:
        lines = [f"drill {self.drill}: {'PASS' if self.passed else 'FAIL'} (scrape interval {self.interval:g} s)"]
        for what, ok in self.detected.items():
            lines.append(f"  {'✓' if ok else '✗'} {what}")
        for name, err in self.boundaries.items():
            lines.append(f"  boundary {name}: {err:+.3f} s ({err / self.interval:+.2f} intervals)")
        for name, s in self.latencies.items():
            lines.append(f"  latency {name}: {s:.3f} s")
        for k, v in self.facts.items():
            lines.append(f"  {k}: {v}")
        lines.extend(f"  ✗ {f}" for f in self.failures)
        return "\n".join(lines)


def rows(lh, table: str) -> list[dict]:
    """All rows of a gold table ([] when the job wrote none)."""
    return lh.read(table).to_pylist() if lh.exists(table) else []


def answered_at(row: dict) -> float:
    """When a broker_state row's scrape got its answer: sent at `ts`, answered `scrape_ms` later."""
    return epoch(row["ts"]) + (row.get("scrape_ms") or 0.0) / 1000


def nearest_in_scrape(row: dict, t: float | None) -> float:
    """The moment of a broker_state row's scrape — between sending it (`ts`) and its answer
    (`answered_at`) — nearest `t`: what the broker answered held at some moment in there, so a
    first sighting is scored by that window, not by its send time alone (a console's first answer
    can take a second: measured 0.93 s, drill artemis-restart-zk 2026-11-27)."""
    sent = epoch(row["ts"])
    return sent if t is None else min(max(t, sent), answered_at(row))


def describe_window(w: dict) -> str:
    return f"{w['instance_a']}+{w['instance_b']} {w['certain_start']:%H:%M:%S.%f}"[:-3] + f" for {w['duration_s']:.2f} s"


def pick(items: Iterable[dict], **match: Any) -> list[dict]:
    return [r for r in items if all(r.get(k) == v for k, v in match.items())]
