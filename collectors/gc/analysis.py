"""What a GC log says, in numbers and coded findings — pure Python over one file's events.

Used by ``brokerscope gc report`` (no Spark) and by the gold job (``analysis.gc``, per file
inside Spark), so a report and the gc_findings table always agree.

Events are dicts shaped like :meth:`GcEvent.to_dict` (``flags`` a list, or the comma-separated
string of the gc_events table). Rules:

* **Percentiles** are nearest-rank: the p-th percentile of n sorted pauses is the value at rank
  ⌈p·n/100⌉ (1-based), so it is always a pause that happened and p99.9 of 1000 pauses is the
  999th. (GCViewer's summary export labels each percentile with the next one's name.)
* **gc_count** counts collections as Jifa does: every young, mixed and full collection, and each
  concurrent cycle once (its remark/cleanup pauses and phases belong to it); ``pause_count``
  counts stop-the-world GC pauses (collectors/gc/model.py, "Counting rules").
* **Throughput** = share of the log's time span not spent in GC pauses.
* **Allocation** between two collections = heap before the later one − heap after the earlier one;
  **promotion** in a young collection = what left the young generation − what left the heap. Both
  rates cover the time from the first to the last collection with heap sizes.
* **GC time share** over windows of ``time_share_window_s``: each pause is split over the windows it
  overlaps, windows are aligned to uptime 0 (or the epoch when the log has no uptime), and the
  share is of the part of the window the log covers (a log starts and ends mid-window).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Iterable, Optional

PERCENTILES = (50, 95, 99, 99.9)
COLLECTION_TYPES = ("young", "mixed", "full", "degenerated")
SAFEPOINT_GC_MIN_PCT = 80.0  # garbagecat WARN_GC_SAFEPOINT_RATIO: GC should be most of the stopped time
SAFEPOINT_NOT_GC_MIN_MS = 1000.0  # … and the rest must add up to something that matters
# VM operations that are garbage collections (G1CollectForAllocation, ZMarkStart, CMS_Final_Remark …)
_GC_VM_OP = re.compile(r"GC|Collect|^G1|^Z[A-Z]|^Shenandoah|^CMS|^PS|^Parallel|^Gen|HeapInspection|HeapDump")


@dataclass(frozen=True)
class Thresholds:
    zk_session_ms: float = 18000.0
    connection_ttl_ms: float = 60000.0
    time_share_window_s: float = 60.0
    time_share_pct: float = 10.0


# --- small helpers ---------------------------------------------------------------------------------


def flags_of(e: dict) -> tuple[str, ...]:
    f = e.get("flags")
    if not f:
        return ()
    return tuple(x for x in f.split(",") if x) if isinstance(f, str) else tuple(f)


def is_gc_pause(e: dict) -> bool:
    return e.get("pause_ms") is not None and e.get("event_type") != "safepoint"


def when_s(e: dict) -> Optional[float]:
    """A time axis for one file: uptime when logged, else epoch seconds of the wall time."""
    if e.get("uptime_s") is not None:
        return float(e["uptime_s"])
    wt = e.get("wall_time")
    return wt.timestamp() if isinstance(wt, datetime) else None


def percentile(sorted_values: list[float], p: float) -> Optional[float]:
    """Nearest-rank percentile of ascending values (exact rank arithmetic: no 99.9 % off-by-one)."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = math.ceil(Fraction(str(p)) * n / 100)
    return sorted_values[min(max(rank, 1), n) - 1]


def fmt_ms(ms: Optional[float]) -> str:
    if ms is None:
        return "?"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def collections(events: list[dict]) -> list[dict]:
    """Collections as Jifa counts them (gc_count): young/mixed/full/degenerated pauses, and one per
    concurrent cycle — unified logs delimit cycles (``concurrent-cycle``), legacy CMS starts one
    with its initial mark and legacy G1 (no delimiter) with its root region scan. A young
    collection nested in a CMS remark (CMSScavengeBeforeRemark) is a collection of its own."""
    has_cycles = any(e["event_type"] == "concurrent-cycle" for e in events)
    out = []
    for e in events:
        t = e["event_type"]
        if t in COLLECTION_TYPES or t in ("initial-mark", "concurrent-cycle"):
            out.append(e)
        elif t == "remark" and "scavenge-before-remark" in flags_of(e):
            out.append(e)
        elif not has_cycles and t == "concurrent-root-region-scan":
            out.append(e)
    return out


def main_collector(events: Iterable[dict]) -> str:
    c = Counter(e.get("collector") for e in events if e.get("collector") not in (None, "unknown"))
    return c.most_common(1)[0][0] if c else "unknown"


# --- summary -----------------------------------------------------------------------------------------


def memory_rates(events: list[dict]) -> tuple[Optional[float], Optional[float]]:
    """(allocation, promotion) in MiB/s between the first and the last collection with heap sizes."""
    measured = sorted((e for e in events if e.get("event_type") != "safepoint" and when_s(e) is not None
                       and e.get("heap_before_kb") is not None and e.get("heap_after_kb") is not None),
                      key=when_s)
    span = when_s(measured[-1]) - when_s(measured[0]) if len(measured) > 1 else 0.0
    if span <= 0:
        return None, None
    allocated = sum(max(0, b["heap_before_kb"] - a["heap_after_kb"]) for a, b in zip(measured, measured[1:]))
    promoted = [max(0, (e["young_before_kb"] - e["young_after_kb"]) - (e["heap_before_kb"] - e["heap_after_kb"]))
                for e in measured[1:]  # after the first collection: the same interval as the allocation
                if e["event_type"] in ("young", "mixed")
                and e.get("young_before_kb") is not None and e.get("young_after_kb") is not None]
    return allocated / 1024.0 / span, (sum(promoted) / 1024.0 / span if promoted else None)


def summarize(events: list[dict], stats) -> dict:
    """Numbers for one file: what `gc report` prints (stats: a ParseStats)."""
    pauses = sorted(float(e["pause_ms"]) for e in events if is_gc_pause(e))
    safepoints = [float(e["pause_ms"]) for e in events if e["event_type"] == "safepoint" and e.get("pause_ms") is not None]
    total = math.fsum(pauses)
    span = stats.span_s
    allocation, promotion = memory_rates(events)
    out = {
        "collector": main_collector(events),
        "gc_count": len(collections(events)),
        "pause_count": len(pauses),
        "pause_total_ms": round(total, 6),
        "pause_max_ms": pauses[-1] if pauses else None,
        "pause_mean_ms": round(total / len(pauses), 6) if pauses else None,
        "percentile_method": "nearest-rank",
    }
    for p in PERCENTILES:
        out[f"pause_p{str(p).replace('.', '_')}_ms"] = percentile(pauses, p)
    out.update({
        "full_count": sum(1 for e in events if e["event_type"] == "full"),
        "concurrent_total_ms": round(math.fsum(e["concurrent_ms"] for e in events if e.get("concurrent_ms") is not None), 6),
        "safepoint_count": len(safepoints),
        "safepoint_total_ms": round(math.fsum(safepoints), 6) if safepoints else None,
        "safepoint_max_ms": max(safepoints) if safepoints else None,
        "span_s": span,
        "throughput_pct": round(100.0 * (1.0 - total / (span * 1000.0)), 4) if span else None,
        "allocation_rate_mib_s": allocation,
        "promotion_rate_mib_s": promotion,
        "first_wall_time": stats.first_wall_time,
        "last_wall_time": stats.last_wall_time,
        "lines": stats.lines_total,
        "lines_unknown": stats.lines_unknown,
        "coverage": stats.coverage,
        "incomplete_events": stats.incomplete_events,
        "events": len(events),
    })
    return out


# --- findings ----------------------------------------------------------------------------------------

_ADVICE = {
    "gc.pause-over-third-session": (
        "A ZooKeeper client in this JVM misses heartbeats for the whole pause; at ⅓ of session-ms it "
        "can lose its session (and an Artemis live its lock). Shorten pauses (more heap headroom, "
        "G1 with a lower -XX:MaxGCPauseMillis, ZGC or Shenandoah) or raise session-ms."),
    "gc.pause-over-connection-ttl": (
        "Peers that saw no traffic for connection-ttl take this JVM for dead: a backup may take over "
        "while this live is only paused (split brain when it resumes). Fix the pause first; raise "
        "connection-ttl only knowingly."),
    "gc.full": (
        "A full collection stops the whole JVM. Find its cause (allocation failure: more heap or less "
        "garbage; metadata: raise MaxMetaspaceSize; System.gc(): see gc.explicit-system-gc)."),
    "gc.to-space-exhausted": (
        "G1 had no free regions to copy survivors into; such pauses are long and often end in a full "
        "GC. Give the heap headroom, or raise -XX:G1ReservePercent / lower "
        "-XX:InitiatingHeapOccupancyPercent so marking starts earlier."),
    "gc.evacuation-failure": (
        "G1 could not evacuate some objects (JDK 21+ 'Evacuation Failure'); same remedies as "
        "to-space exhausted: heap headroom, G1ReservePercent, earlier marking."),
    "gc.concurrent-mode-failure": (
        "CMS could not finish before the old generation filled and fell back to a serial full GC. "
        "Start CMS earlier (-XX:CMSInitiatingOccupancyFraction with UseCMSInitiatingOccupancyOnly), "
        "give the heap headroom, or move to G1."),
    "gc.allocation-stall": (
        "ZGC could not free memory as fast as threads allocated: those threads waited. Give the heap "
        "headroom (-Xmx, -XX:SoftMaxHeapSize) or more concurrent GC threads."),
    "gc.humongous": (
        "Objects of half a G1 region or more are allocated as humongous; many of them cause extra GCs "
        "and fragmentation. Raise -XX:G1HeapRegionSize or avoid very large arrays/buffers."),
    "gc.explicit-system-gc": (
        "Something calls System.gc() (RMI's distributed GC does every hour by default). Use "
        "-XX:+ExplicitGCInvokesConcurrent, or -XX:+DisableExplicitGC if nothing depends on it."),
    "gc.time-share": (
        "The JVM spends a large share of its time in GC pauses: the heap is too small for the live "
        "data and allocation rate, or the collector is not tuned for this load."),
    "gc.safepoint-not-gc": (
        "The JVM was stopped for something other than GC (biased-lock revocation, deoptimization, "
        "thread dumps, class redefinition …). Log `-Xlog:safepoint` to see which VM operation."),
}

_WHAT = {"young": "young", "mixed": "mixed", "full": "full", "remark": "remark", "cleanup": "cleanup",
         "initial-mark": "initial mark", "degenerated": "degenerated"}


def _pause_words(e: dict) -> str:
    kind = _WHAT.get(e["event_type"], e["event_type"].replace("pause-", "").replace("-", " "))
    return f"{kind}" + (f", {e['cause']}" if e.get("cause") else "")


def _finding(code: str, severity: str, e: Optional[dict], value, threshold, unit: str, message: str,
             key: str) -> dict:
    return {
        "code": code, "severity": severity, "key": key,
        "ts": e.get("wall_time") if e else None, "uptime_s": e.get("uptime_s") if e else None,
        "event_seq": e.get("event_seq") if e else None,
        "event_type": e.get("event_type") if e else None, "cause": e.get("cause") if e else None,
        "value": None if value is None else float(value),
        "threshold": None if threshold is None else float(threshold),
        "unit": unit, "message": message, "advice": _ADVICE[code],
    }


def event_findings(e: dict, th: Thresholds) -> list[dict]:
    """Findings about one event (a pause, a failure flag, a stall, a long non-GC safepoint)."""
    out: list[dict] = []
    key = f"e{e.get('event_seq')}"
    flags = flags_of(e)
    pause = e.get("pause_ms")
    if is_gc_pause(e):
        words = _pause_words(e)
        if pause >= th.connection_ttl_ms:
            out.append(_finding("gc.pause-over-connection-ttl", "error", e, pause, th.connection_ttl_ms, "ms",
                                f"GC pause {fmt_ms(pause)} ({words}) — over connection-ttl "
                                f"{fmt_ms(th.connection_ttl_ms)}", key))
        if pause >= th.zk_session_ms / 3:
            out.append(_finding("gc.pause-over-third-session", "error", e, pause, th.zk_session_ms / 3, "ms",
                                f"GC pause {fmt_ms(pause)} ({words}) — over ⅓ of session-ms "
                                f"{fmt_ms(th.zk_session_ms)}", key))
        if e["event_type"] == "full":
            why = f" ({e['cause']})" if e.get("cause") else ""
            out.append(_finding("gc.full", "warn", e, pause, None, "ms",
                                f"full GC{why}: the whole JVM stopped for {fmt_ms(pause)}", key))
    for flag, code, severity, text in (
        ("to-space-exhausted", "gc.to-space-exhausted", "error", "G1 to-space exhausted"),
        ("evacuation-failure", "gc.evacuation-failure", "error", "G1 evacuation failure"),
        ("concurrent-mode-failure", "gc.concurrent-mode-failure", "error", "CMS concurrent mode failure"),
        ("humongous", "gc.humongous", "info", "GC caused by a humongous allocation"),
        ("system-gc", "gc.explicit-system-gc", "warn", "explicit System.gc()"),
    ):
        if flag in flags:
            during = f" during a {_WHAT.get(e['event_type'], e['event_type'])} pause of {fmt_ms(pause)}" \
                if is_gc_pause(e) else ""
            out.append(_finding(code, severity, e, pause, None, "ms", text + during, key))
    if e["event_type"] == "allocation-stall":
        d = e.get("duration_ms")
        m = re.search(r"\(([^)]*)\)", e.get("phase") or "")  # 'Allocation Stall (main) 3.7ms'
        thread = f" ({m.group(1)})" if m else ""
        out.append(_finding("gc.allocation-stall", "warn", e, d, None, "ms",
                            f"ZGC allocation stall: a thread{thread} waited {fmt_ms(d)} for memory", key))
    if e["event_type"] == "safepoint" and pause is not None and e.get("cause") \
            and not _GC_VM_OP.search(e["cause"]) and pause >= th.zk_session_ms / 3:
        out.append(_finding("gc.safepoint-not-gc", "error", e, pause, th.zk_session_ms / 3, "ms",
                            f"JVM stopped {fmt_ms(pause)} in a safepoint for {e['cause']}, not a GC — "
                            f"over ⅓ of session-ms {fmt_ms(th.zk_session_ms)}", key))
    return out


def time_share_findings(events: list[dict], th: Thresholds) -> list[dict]:
    """Windows in which GC pauses took more than time_share_pct of the time the log covers there."""
    w = th.time_share_window_s
    times = [(t, t + (e.get("pause_ms") or e.get("duration_ms") or 0.0) / 1000.0)
             for e in events if (t := when_s(e)) is not None]
    if not times:
        return []
    log_start, log_end = min(a for a, _ in times), max(b for _, b in times)
    spent: dict[int, float] = {}
    first: dict[int, dict] = {}
    for e in events:
        t = when_s(e)
        if not is_gc_pause(e) or t is None:
            continue
        start, end = t, t + e["pause_ms"] / 1000.0
        k = math.floor(start / w)
        first.setdefault(k, e)
        while k * w < end:
            spent[k] = spent.get(k, 0.0) + min(end, (k + 1) * w) - max(start, k * w)
            k += 1
    out = []
    for k in sorted(spent):
        covered = min(log_end, (k + 1) * w) - max(log_start, k * w)  # a log may start/end mid-window
        pct = 100.0 * spent[k] / covered if covered > 0 else 0.0
        if pct > th.time_share_pct:
            e = first.get(k) or first[max(j for j in first if j < k)]
            of = f"{w:g} s window" if covered >= w else f"{covered:.1f} s the log covers of a {w:g} s window"
            f = _finding("gc.time-share", "warn", e, round(pct, 3), th.time_share_pct, "pct",
                         f"GC pauses took {pct:.0f} % of the {of} (threshold {th.time_share_pct:g} %)", f"w{k}")
            f.update(event_seq=None, event_type=None, cause=None)
            out.append(f)
    return out


def safepoint_share_finding(events: list[dict]) -> list[dict]:
    """Stopped time not spent in GC, over the whole file (needs safepoint logging)."""
    stopped = math.fsum(e["pause_ms"] for e in events if e["event_type"] == "safepoint" and e.get("pause_ms") is not None)
    if stopped <= 0:
        return []
    gc = math.fsum(e["pause_ms"] for e in events if is_gc_pause(e))
    other = stopped - gc
    pct = 100.0 * other / stopped
    if other < SAFEPOINT_NOT_GC_MIN_MS or pct <= 100.0 - SAFEPOINT_GC_MIN_PCT:
        return []
    first = next(e for e in events if e["event_type"] == "safepoint")
    f = _finding("gc.safepoint-not-gc", "warn", first, round(pct, 3), 100.0 - SAFEPOINT_GC_MIN_PCT, "pct",
                 f"{pct:.0f} % of the time the JVM was stopped ({fmt_ms(other)} of {fmt_ms(stopped)}) was "
                 "not spent in GC", "file")
    f.update(event_seq=None, event_type=None, cause=None)
    return [f]


def findings(events: list[dict], th: Thresholds = Thresholds()) -> list[dict]:
    """Every finding of one file's events (each event dict may carry its `event_seq`)."""
    out = [f for e in events for f in event_findings(e, th)]
    return out + time_share_findings(events, th) + safepoint_share_finding(events)


def summarize_findings(found: list[dict]) -> list[dict]:
    """One line per code: how often, the worst value and where (for reports)."""
    by_code: dict[str, list[dict]] = {}
    for f in found:
        by_code.setdefault(f["code"], []).append(f)
    order = {"error": 0, "warn": 1, "info": 2}
    out = []
    for code, fs in by_code.items():
        worst = max(fs, key=lambda f: (f["value"] is not None, f["value"] or 0.0))
        out.append({"code": code, "severity": fs[0]["severity"], "count": len(fs),
                    "worst_value": worst["value"], "unit": worst["unit"], "threshold": worst["threshold"],
                    "worst_ts": worst["ts"], "worst_uptime_s": worst["uptime_s"],
                    "message": worst["message"], "advice": worst["advice"]})
    return sorted(out, key=lambda f: (order.get(f["severity"], 9), f["code"]))
