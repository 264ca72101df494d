"""gc-pause: a broker JVM with a small heap, the serial collector and a large live set of small,
randomly linked objects (infra/gc_ballast, loaded with -javaagent) is made to run a full collection
(``jcmd <pid> GC.run``, as an operator's heap inspection or a System.gc() would): a stop-the-world
pause of seconds. Its length depends on the machine's load and is recorded, not assumed: here a
128 MiB live set gave 1.5 s (load ~14) to 5.4 s (load ~20), hence 256 MiB (~11 M objects) so that
even an idle machine pauses for more than the 1 s bar. The broker's unified GC log is tailed
through the target's ``gc_logs`` while the Jolokia scrapes go on.

Truth: a probe of the broker's Jolokia agent every 50 ms from the drill, independent of the GC log;
the probe that hangs marks the pause (sent just after it began, answered just after it ended).
Bar: the pause in gc_events (≥ 1 s) with start and end within one scrape interval of the probe's,
its `gc.pause-over-connection-ttl` finding (threshold 1 s for this target) and a gc-pause entry on
the timeline.
"""

from __future__ import annotations

import re
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from brokerscope.drills.common import (Periodic, Scorecard, activemq_targets, epoch, fresh_workdir, rows, say, settle,
                                       start_collecting, write_truth)
from brokerscope.timeline import build_timeline
from infra.lab import BROKER_MBEAN_PATTERN, ActiveMQPair, ballast_jvm_arg, java_tool, jolokia_request

NAME = "gc-pause"
SUMMARY = "a multi-second stop-the-world full GC in a broker JVM with a large live set, from its GC log"
BALLAST_MB = 256
HEAP = "768m"
TTL_MS = 1000  # the connection TTL the target is judged against: a longer pause drops clients
MIN_PAUSE_MS = 1000
# jcmd's wait for the broker's attach listener (JDK default 10 s): at load 28 on two cores a broker JVM
# whose scrapes already timed out missed the default once (AttachNotSupportedException)
ATTACH_TIMEOUT_MS = 60_000


class JolokiaProbe(Periodic):
    """Reads one Jolokia attribute every 50 ms (default: an ActiveMQ broker's ``Slave``; `request`
    and `options` — auth, headers — for another JVM); keeps, per read, when the drill's thread began
    it, when the request was written (in the broker's socket) and when it was answered."""

    def __init__(self, url: str, request: dict | None = None, **options) -> None:
        super().__init__("gc-probe", 0.05)
        self.url = url
        self.request = request or {"type": "read", "mbean": BROKER_MBEAN_PATTERN, "attribute": "Slave"}
        self.options = options
        self.samples: list[tuple[float, float, float | None]] = []  # (began, written, answered)

    def tick(self) -> None:

        began = time.time()
        written: list[float] = []
        try:
            jolokia_request(self.url, self.request, timeout=20, on_sent=lambda: written.append(time.time()), **self.options)
            self.samples.append((began, written[0], time.time()))
        except OSError:
            self.samples.append((began, written[0] if written else began, None))

    def longest_stall(self) -> tuple[float, float] | None:
        """(written, answered) of the read that waited longest: the pause began before the broker could
        answer a request already in its socket, and ended just before the answer. From the moment the
        request was written, not the moment the drill's thread began it: on a loaded machine the drill's
        own process may take a second to get there (the collector shares it)."""
        done = [(w, a) for _, w, a in self.samples if a is not None]
        return max(done, key=lambda wa: wa[1] - wa[0]) if done else None

    def write_delay(self, written: float) -> float | None:
        """How long the drill's thread took from beginning the stalled read to writing it."""
        return next((w - b for b, w, _ in self.samples if w == written), None)


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:

    workdir = fresh_workdir(workdir, keep)
    pair = ActiveMQPair(workdir / "lab", heap=HEAP, gc_flags=("-XX:+UseSerialGC",),
                        extra_jvm_args=(ballast_jvm_arg(BALLAST_MB),))
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "ballast_mb": BALLAST_MB, "heap": HEAP,
                   "collector": "serial", "connection_ttl_ms": TTL_MS}
    broker = pair.names[0]
    try:
        say(f"starting ActiveMQ broker {broker} (serial GC, {HEAP} heap, {BALLAST_MB} MiB live ballast)")
        pair.start_broker(broker, timeout=120)
        pair.wait_for_role(broker, "master", 60)
        targets = activemq_targets(pair, gc_logs=True, names=[broker], gc={"connection_ttl_ms": TTL_MS})
        cfg_path, col = start_collecting(workdir, targets, interval, gc={"poll_interval": f"{int(interval * 1000)}ms"})
        probe = JolokiaProbe(pair.jolokia_url(broker)).start()
        settle(interval, 4, 2.0)
        truth["broker"], truth["pid"] = broker, pair.brokers[broker].pid
        full_gc(truth["pid"], truth)
        settle(interval, 4, 2.0)
        probe.stop()
        truth["collector_stats"] = col.stop().summary()
    finally:
        pair.stop()
    probe_truth(probe, truth)
    write_truth(workdir, truth)
    return cfg_path, truth


def full_gc(pid: int, truth: dict) -> None:
    """``jcmd <pid> GC.run``: a full collection now; truth jcmd_ts / jcmd_done_ts."""
    truth["jcmd_ts"] = time.time()
    say(f"jcmd {pid} GC.run (full collection)")
    res = subprocess.run([java_tool("jcmd"), f"-J-Dsun.tools.attach.attachTimeout={ATTACH_TIMEOUT_MS}", str(pid), "GC.run"],
                         capture_output=True, text=True, timeout=120)
    truth["jcmd_done_ts"] = time.time()
    if res.returncode != 0:
        raise RuntimeError(f"jcmd GC.run failed ({res.returncode}): {res.stdout}{res.stderr}")


def probe_truth(probe: JolokiaProbe, truth: dict) -> None:
    """The probe's longest stall as the pause's truth (pause_start_ts, pause_end_ts)."""
    stall = probe.longest_stall()
    truth["probe_stall"] = stall
    truth["pause_start_ts"], truth["pause_end_ts"] = stall if stall else (None, None)
    if stall:
        truth["probe_write_delay_s"] = probe.write_delay(stall[0])
        say(f"the probe waited {stall[1] - stall[0]:.3f} s (the broker did not answer: a stop-the-world pause)")


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(NAME, truth["scrape_interval_s"])
    p = score_pause_event(card, lh, truth["broker"], truth)
    if p is None:
        return card
    found = [f for f in rows(lh, "gc_findings")
             if f["target"] == truth["broker"] and f["code"] == "gc.pause-over-connection-ttl" and f["ts"] is not None
             and abs(epoch(f["ts"]) - epoch(p["wall_time"])) < 0.01]
    card.detect("gc.pause-over-connection-ttl finding", bool(found), "no finding for the pause")
    card.detect("gc-pause on the timeline", on_timeline(lh, truth["broker"], p["wall_time"]), "no gc-pause entry")
    return card


def score_pause_event(card: Scorecard, lh, broker: str, truth: dict, min_pause_ms: float = MIN_PAUSE_MS) -> dict | None:
    """The longest stop-the-world pause of `broker` in gc_events (≥ `min_pause_ms`) scored against the
    probe's stall (truth pause_start_ts / pause_end_ts): both ends within one scrape interval, and how
    late its log line reached bronze. The gc_events row, or None (the card says why)."""
    start, end = truth["pause_start_ts"], truth["pause_end_ts"]
    if not card.require(start is not None, "the probe saw no stall"):
        return None
    pauses = [e for e in rows(lh, "gc_events")
              if e["target"] == broker and e["pause_ms"] and e["pause_ms"] >= min_pause_ms
              and e["event_type"] != "safepoint" and e["wall_time"] is not None
              and start - 1.0 <= epoch(e["wall_time"]) <= end]
    card.facts["probe stall s"] = round(end - start, 3)
    if truth.get("probe_write_delay_s") is not None:
        card.facts["probe write delay s"] = round(truth["probe_write_delay_s"], 3)
    if not card.detect(f"stop-the-world pause ≥ {min_pause_ms / 1000:g} s (gc_events)", bool(pauses), "no such pause in gc_events"):
        return None
    p = max(pauses, key=lambda e: e["pause_ms"])
    p_start = epoch(p["wall_time"])
    p_end = p_start + p["pause_ms"] / 1000
    card.facts["pause"] = f"{p['event_type']} ({p['cause']}) {p['pause_ms']:.0f} ms"
    card.boundary("pause start (GC log vs probe)", p_start, start)
    card.boundary("pause end (GC log vs probe)", p_end, end)
    card.latency("pause end → its GC log line in bronze", line_read_latency(lh, p, p_end))
    reach = time_to_safepoint(lh, p, p_end)
    if reach is not None:  # the JVM stood still that long before the collection began (-Xlog:safepoint)
        card.facts["time to safepoint s"] = round(reach, 3)
    return p


def line_read_latency(lh, event: dict, pause_end: float) -> float | None:
    """When the collector read the pause's log line, after the pause ended."""
    lines = [r for r in rows(lh, "bronze_gc_lines")
             if r["target"] == event["target"] and r["file_id"] == event["file_id"] and r["line_no"] >= event["source_line"]]
    # the event's closing line carries the pause (`… Pause Full (…) 240M->161M(494M) 5364.290ms`)
    read = [epoch(r["ts"]) for r in lines if re.search(r"Pause .*\d+(\.\d+)?ms$", r["line"] or "")]
    return min(read) - pause_end if read else None


def time_to_safepoint(lh, event: dict, pause_end: float) -> float | None:
    """The reaching time of the safepoint the pause ran in, in seconds (its line follows the pause's;
    a safepoint event is stamped with that line's time, its end)."""
    safepoints = [e for e in rows(lh, "gc_events")
                  if e["target"] == event["target"] and e["event_type"] == "safepoint" and e["wall_time"] is not None
                  and e["pause_ms"] is not None and e["ttsp_ms"] is not None
                  and abs(epoch(e["wall_time"]) - pause_end) < 0.1]
    return min(safepoints, key=lambda e: e["pause_ms"])["ttsp_ms"] / 1000 if safepoints else None


def on_timeline(lh, target: str, wall_time) -> bool:

    entries = build_timeline(lh.read("role_intervals"), lh.read("failover_events"), lh.read("split_brain_windows"),
                             lh.read("broker_state"), gc_findings=lh.read("gc_findings"))
    return any(e.what == "gc-pause" and e.instance == target and abs(e.ts - wall_time) < timedelta(seconds=1)
               for e in entries)
