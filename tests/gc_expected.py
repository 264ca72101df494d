"""Maps rows of the GC corpus' EXPECTED_core.tsv onto brokerscope's GC event model.

Each row is a value that another tool (GCViewer, GCToolKit, garbagecat, Jifa,
jvm-gc-logs-analyzer) asserts for a corpus file, in that tool's units and counting rules (see
``shared/corpus/gc/README.md``).  :func:`evaluate` computes the same quantity from our events and
returns ``(ours, expected, tolerance)``; rows that are not meaningful for our model raise
:class:`NotComparable` with the reason, and the test skips them with that reason.

Counting-rule notes (where a tool's rule differs from ours, the row is skipped with the reason
given here and our own number is asserted by a dedicated test):

* GCViewer ``getPause()`` covers GC pauses *and* VM-operation pauses (``Total time for which
  application threads were stopped`` minus the GC pause it contains); ``getGCPause()`` the
  non-full GC pauses and ``getFullGCPause()`` the full ones.  Our ``pause_ms`` of GC events
  maps onto the last two directly.
* GCToolKit counts events of its own taxonomy (``ParNew``, ``DefNew``, ``CMS Remark`` ...);
  they map onto our ``event_type``/``flags`` as in ``_GCTK``.
* garbagecat: durations in microseconds; "blocking events" are our GC pauses.
* Jifa: ``getGcEvents()`` counts *collections* -- a concurrent cycle (CMS or G1, with its
  remark/cleanup pauses and phases) is one event -- see ``_jifa_events``.
* jvm-gc-logs-analyzer: cycles of ZGC/Shenandoah = our ``concurrent-cycle`` events; MB units.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from collectors.gc import GcEvent, ParseStats, parse_file
from collectors.gc.model import STOPPED_PHASE


class NotComparable(Exception):
    """The row's value is not meaningful for our event model (reason in args[0])."""


@dataclass(frozen=True)
class Row:
    index: int
    file: str
    metric: str
    value: str
    where: str
    note: str
    portability: str

    @property
    def id(self) -> str:
        return f"{self.index:03d}:{self.file}:{self.metric}"


def load_rows(corpus: Path) -> list[Row]:
    rows = _load_rows(corpus)
    index_jifa_times(rows)
    return rows


def _load_rows(corpus: Path) -> list[Row]:
    path = corpus / "EXPECTED_core.tsv"
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader)
        assert header[:6] == ["file", "metric", "value", "where_asserted", "note", "portability"], header
        for i, rec in enumerate(reader, 2):
            rec = (rec + [""] * 6)[:6]
            rows.append(Row(i, *rec))
    return rows


@lru_cache(maxsize=None)
def parsed(path: str) -> tuple[tuple[GcEvent, ...], ParseStats]:
    events, stats = parse_file(path)
    return tuple(events), stats


# -- value parsing -----------------------------------------------------------------------------

_NUM_TOL_RE = re.compile(r"^\s*(-?[\d.]+(?:[eE][-+]?\d+)?)\s*(?:(us|ns|ms|s)\s*)?(?:\(tol ([\d.eE\-]+)\))?\s*$")


def expected_number(value: str) -> tuple[float, float, Optional[str]]:
    m = _NUM_TOL_RE.match(value)
    if not m:
        raise NotComparable(f"value {value!r} is not a number")
    tol = float(m.group(3)) if m.group(3) else 0.0
    return float(m.group(1)), tol, m.group(2)


# -- helpers over our events -------------------------------------------------------------------


def gc_pauses(events) -> list[GcEvent]:
    return [e for e in events if e.is_pause]


def safepoints(events) -> list[GcEvent]:
    return [e for e in events if e.event_type == "safepoint"]


def _sum(values) -> float:
    return math.fsum(values)


def _young_pauses(events, collector=None):
    return [e for e in events if e.event_type == "young" and (collector is None or e.collector == collector)]


# GCToolKit taxonomy -> predicate over our events
def _gctk_predicate(kind: str):
    conc = {
        "CMS ConcurrentMark": "concurrent-mark",
        "CMS Concurrent_Preclean": "concurrent-preclean",
        "CMS Abortable_Preclean": "concurrent-abortable-preclean",
        "CMS Concurrent_Sweep": "concurrent-sweep",
        "CMS Concurrent_Reset": "concurrent-reset",
        "G1GCConcurrentMark": "concurrent-mark",
        "ConcurrentClearClaimedMarks": "concurrent-clear-claimed-marks",
        "ConcurrentCleanupForNextMark": "concurrent-cleanup-for-next-mark",
    }
    if kind in conc:
        t = conc[kind]
        return lambda e: e.event_type == t
    if kind == "ConcurrentRootRegionScan":
        return lambda e: e.event_type in ("concurrent-root-region-scan", "concurrent-scan-root-regions")
    if kind == "G1GCConcurrentCleanup":
        return lambda e: e.event_type in ("concurrent-cleanup", "concurrent-cleanup-for-next-mark")
    if kind in ("FullGC(incl. PSFull)", "Full"):
        # GCToolKit files System.gc() collections and CMS failures under their own categories
        return lambda e: e.event_type == "full" and _gctk_full_category(e) == "FullGC"
    if kind in ("CMS InitialMark", "CMS InitialMark count"):
        return lambda e: e.event_type == "initial-mark"
    if kind in ("CMS Remark", "G1GCRemark", "CMS Remark count"):
        return lambda e: e.event_type == "remark"
    if kind == "G1GCCleanup":
        return lambda e: e.event_type == "cleanup"
    if kind == "Mixed":
        return lambda e: e.event_type == "mixed"
    if kind == "G1GCYoungInitialMark":
        return lambda e: e.event_type == "young" and "concurrent-start" in e.flags
    if kind == "Young":
        return lambda e: e.event_type == "young" and "concurrent-start" not in e.flags
    if kind in ("ParNew", "DefNew", "PSYoungGen", "DefNew count (HeapOccupancyAfterCollectionSummary)"):
        # GCToolKit also counts the young collection nested in a CMS remark
        # (CMSScavengeBeforeRemark); we flag the remark instead
        return lambda e: (e.event_type == "young" and "promotion-failed" not in e.flags) or (
            e.event_type == "remark" and "scavenge-before-remark" in e.flags
        )
    if kind == "ParNewPromotionFailed":
        return lambda e: e.is_pause and "promotion-failed" in e.flags
    if kind == "ConcurrentModeFailure":
        return lambda e: "concurrent-mode-failure" in e.flags
    if kind == "ConcurrentModeInterrupted":
        return lambda e: "concurrent-mode-interrupted" in e.flags
    if kind == "SystemGC":
        return lambda e: e.is_pause and "system-gc" in e.flags and _gctk_full_category(e) in ("SystemGC", None)
    return None


def _gctk_full_category(e: GcEvent) -> Optional[str]:
    """GCToolKit puts each collection in one category; for whole-heap collections the CMS
    failure categories win over SystemGC, which wins over FullGC."""
    if e.event_type != "full":
        return None
    f = e.flags
    if "concurrent-mode-failure" in f:
        return "ConcurrentModeFailure"
    if "concurrent-mode-interrupted" in f:
        return "ConcurrentModeInterrupted"
    if "system-gc" in f:
        return "SystemGC"
    return "FullGC"


def _has_fallback(events) -> bool:
    """A young collection that fell back to a (serial) collection of the old generation, i.e.
    a legacy 'GC' record classified as full (promotion failed / concurrent mode failure)."""
    return any(e.event_type == "full" and e.phase == "GC" for e in events)


_JIFA_CAUSES = {
    "METADATA_GENERATION_THRESHOLD": "Metadata GC Threshold",
    "G1_EVACUATION_PAUSE": "G1 Evacuation Pause",
    "ALLOCATION_FAILURE": "Allocation Failure",
    "ERGONOMICS": "Ergonomics",
    "PROACTIVE": "Proactive",
    "WARMUP": "Warmup",
    "HEAP_DUMP": "Heap Dump Initiated GC",
    "CMS_FINAL_REMARK": "CMS Final Remark",
    "G1_COMPACTION": "G1 Compaction Pause",
    "PROMOTION_FAILED": None,  # Jifa's pseudo-cause; we record it as the flag
}


def _jifa_events(events) -> list[GcEvent]:
    """Project our events onto Jifa's list of collections: young/mixed/full pauses, and one event
    per concurrent cycle (unified: our ``concurrent-cycle`` events; legacy CMS: the initial mark
    that starts the cycle; legacy G1, which logs no cycle delimiter: its first concurrent phase).
    Remark/cleanup pauses and the other concurrent phases belong to their cycle; the young
    collection nested in a CMS remark (CMSScavengeBeforeRemark) is a separate Jifa event."""
    has_cycles = any(e.event_type == "concurrent-cycle" for e in events)
    out = []
    for e in events:
        if e.event_type in ("young", "mixed", "full", "initial-mark", "concurrent-cycle"):
            out.append(e)
        elif e.event_type == "remark" and "scavenge-before-remark" in e.flags:
            out.append(e)
        elif not has_cycles and e.event_type == "concurrent-root-region-scan":
            out.append(e)
    out.sort(key=lambda e: (_jifa_ms(e, events) or 0.0))
    return out


def _jifa_ms(e: GcEvent, events) -> Optional[float]:
    """Jifa's start time: uptime in ms, or for logs without uptime the wall-clock time since the
    first event."""
    if e.uptime_s is not None:
        return e.uptime_s * 1000.0
    if e.wall_time is not None:
        first = next(x.wall_time for x in events if x.wall_time is not None)
        return (e.wall_time - first).total_seconds() * 1000.0
    return None


def _jifa_cause(e: GcEvent) -> Optional[str]:
    if e.event_type == "remark" and "scavenge-before-remark" in e.flags:
        return "CMS Final Remark"
    return e.cause


def _jifa_pause(e: GcEvent, events) -> Optional[float]:
    if e.event_type == "concurrent-cycle":  # Jifa: the cycle's pauses (remark, cleanup)
        return _sum(x.pause_ms for x in events if x.gc_id == e.gc_id and x.is_pause)
    return e.pause_ms


# -- evaluation --------------------------------------------------------------------------------


# Rows where the tool's counting rule differs from ours: (file, metric) -> (our value, rule).
# The test asserts OUR value for these rows (the tool's value is kept in the TSV).
OVERRIDES: dict[tuple[str, str], tuple[object, str]] = {
    ("gcviewer/openjdk/unified-jvm-logging/sample-ujl-g1-gc-defaults.txt", "gcviewer: model.getGCPause().getN()"): (
        9, "GCViewer also counts the 3 'GC(n) To-space exhausted' lines as pauses; we flag the pause"),
    ("gcviewer/openjdk/unified-jvm-logging/sample-ujl-zgc-gc-other.txt", "gcviewer: model.getGCPause().getN()"): (
        3, "GCViewer counts ZGC allocation/relocation stalls as GC pauses; they stall one thread, not"
           " the JVM, so ours are separate allocation-stall/relocation-stall events (7 + 7)"),
    ("gctoolkit/preunified/cms/parnew/details/tenuring/BF653AA1-F897-4279-9570-2E4837D311E8-1405428823225.log.gz",
     "gctoolkit: count[ParNew]"): (
        5307, "the file holds 5307 ParNew records (grep -c ParNew); GCToolKit reports 5305"),
    ("gctoolkit/preunified/g1gc/details/reference/post17040/gc_with_overflow.log", "gctoolkit: count[Full]"): (
        402, "the file holds 402 'Full GC' records, all complete; GCToolKit reports 401"),
    ("gctoolkit/unified/g1gc/jdk11_details.log.zip", "gctoolkit: count[G1GCConcurrentMark]"): (
        194, "we emit one concurrent-mark per 'Concurrent Mark' phase (156 completed + 38 aborted);"
             " GCToolKit also counts 4 cycles aborted before their mark phase started"),
    ("garbagecat/dataset98.txt", "garbagecat: jvmRun.getDurationTotal()"): (
        62416.1, "our pause is the record's ', N secs]' value; garbagecat adds the JDK 8 G1"
                 " '[Other: N ms]' time to young pauses (20963 + 41453 us)"),
    ("garbagecat/dataset98.txt", "garbagecat: jvmRun.getLastBlockingEvent().getDurationMicros()"): (
        41453.0, "see dataset98 DurationTotal: garbagecat adds G1 '[Other: 12.0 ms]'"),
    ("garbagecat/dataset41.txt", "garbagecat: jvmRun.getDurationTotal()"): (
        62416.1, "same log as dataset98 (G1 '[Other: N ms]' rule)"),
    ("garbagecat/dataset41.txt", "garbagecat: jvmRun.getLastBlockingEvent().getDurationMicros()"): (
        41453.0, "same log as dataset98 (G1 '[Other: N ms]' rule)"),
    ("garbagecat/dataset182.txt", "garbagecat: jvmRun.getDurationTotal()"): (
        24180.0, "sum of the 7 pause durations the JVM logged (5.780 + 4.858 + 0.364 + 0.024 +"
                 " 10.135 + 2.657 + 0.362 ms); garbagecat reports 476 us more"),
}

# Rows that are not meaningful for our model, with the reason.
NOT_COMPARABLE: dict[tuple[str, str], str] = {
    ("jifa/8CMSScavengeBeforeRemark.log", "jifa: model.getGcEvents().get(1).getCause()"):
        "Jifa lists the young GC nested in the CMS remark before the young GC that precedes the"
        " remark; we keep log order (and report the nested one as the remark's"
        " 'scavenge-before-remark' flag)",
    ("jifa/11CMSScavengeBeforeRemark.log", "jifa: model.getGcEvents().get(0).getCause()"):
        "Jifa's index 0 is the young GC nested in the CMS remark; we absorb it into the remark pause"
        " ('scavenge-before-remark') and keep log order",
}


@dataclass
class Result:
    ours: object
    expected: object
    tol: float
    note: str = ""


def evaluate(row: Row, corpus: Path) -> Result:
    """Our value for the row; raises NotComparable to skip."""
    key = (row.file, row.metric)
    if key in NOT_COMPARABLE:
        raise NotComparable(NOT_COMPARABLE[key])
    ours, expected, tol = _evaluate(row, corpus)
    if key in OVERRIDES:
        value, why = OVERRIDES[key]
        return Result(ours, value, max(tol, 0.5 if isinstance(value, float) else 0.0),
                      f"tool says {expected}; our rule: {why}")
    return Result(ours, expected, tol)


def _evaluate(row: Row, corpus: Path):
    """Return (ours, expected, abs_tolerance); raise NotComparable to skip."""
    port = row.portability
    if port.startswith("tool-specific"):
        raise NotComparable(f"tool-specific row ({port})")
    if row.file.startswith("gcviewer/non-hotspot/"):
        raise NotComparable("non-HotSpot VM log (Go/IBM J9/JRockit/HP-UX): out of scope")
    path = corpus / row.file
    if not path.exists():
        raise NotComparable("file missing from corpus")
    events, stats = parsed(str(path))
    tool, _, metric = row.metric.partition(": ")
    fn = _EVALUATORS.get(tool)
    if fn is None:
        raise NotComparable(f"no mapping for tool {tool}")
    return fn(row, metric.strip().strip('"'), events, stats)


_NESTED_REASON = (
    "the log has a pause nested in another one (young collection that turns into a full one, CMS"
    " remark with a scavenge): GCViewer counts both pauses, we count one (the enclosing pause;"
    " the application was stopped once)"
)


def _gcviewer(row: Row, metric: str, events, stats):
    if metric == "handler.getCount()":
        v, _, _ = expected_number(row.value)
        # GCViewer's parser warnings vs our not-understood lines: ours must not be worse
        return ("<=", stats.lines_unknown), v, 0.0
    nested = any("upgrade-to-full" in e.flags or "scavenge-before-remark" in e.flags for e in events)
    m = re.match(r"model\.get(Pause|GCPause|FullGCPause|VmOperationPause)\(\)\.get(N|Sum|Max)\(\)$", metric)
    if m:
        kind, agg = m.groups()
        if nested and kind != "VmOperationPause":
            raise NotComparable(_NESTED_REASON)
        v, tol, _ = expected_number(row.value)
        if kind == "VmOperationPause":
            vals = [e.pause_ms / 1000.0 for e in safepoints(events)]
        else:
            ps = gc_pauses(events)
            if kind == "GCPause":
                ps = [e for e in ps if not e.is_full]
            elif kind == "FullGCPause":
                ps = [e for e in ps if e.is_full]
            elif kind == "Pause" and safepoints(events):
                raise NotComparable(
                    "GCViewer getPause() adds VM-operation pauses (stopped time net of GC pauses);"
                    " we keep safepoints as separate events"
                )
            vals = [e.pause_ms / 1000.0 for e in ps]
        if agg == "N":
            return len(vals), v, 0.0
        if agg == "Sum":
            return _sum(vals), v, max(tol, 1e-6 * max(1, len(vals)))
        return (max(vals) if vals else 0.0), v, max(tol, 1e-7)
    m = re.match(r"model\.get\((\d+)\) -> type,pause_s,heap_before_kb,heap_after_kb,heap_total_kb,generation,is_full$", metric)
    if m:
        parts = row.value.split(",")
        typ, pause_s, hb, ha, ht, gen, is_full = parts
        pause_ms = float(pause_s) * 1000.0
        # GCViewer's index counts its own event list (incl. concurrent phases/VM ops): we match
        # the event by its pause value instead and compare the per-event values.
        cands = [e for e in gc_pauses(events) if abs(e.pause_ms - pause_ms) < 0.0005]
        if not cands:
            if nested:
                raise NotComparable(_NESTED_REASON)
            return None, (typ, pause_s), 0.0
        e = cands[0]
        ours = (e.heap_before_kb, e.heap_after_kb, e.heap_committed_kb, e.is_full)
        exp = (int(hb), int(ha), int(ht), is_full == "true")
        return ours, exp, 0.0
    raise NotComparable(f"GCViewer metric not mapped: {metric}")


_GCTK_SPLIT_KINDS = {
    "FullGC(incl. PSFull)", "ParNew", "DefNew", "ConcurrentModeFailure", "ParNewPromotionFailed",
    "ConcurrentModeInterrupted",
}


def _gctoolkit(row: Row, metric: str, events, stats):
    m = re.match(r"count\[(.*)\]$", metric)
    kind = m.group(1) if m else metric
    if kind in _GCTK_SPLIT_KINDS and _has_fallback(events):
        raise NotComparable(
            "GCToolKit splits a young collection that fails over to an old-generation collection"
            " (promotion failed / concurrent mode failure) into events of several of its"
            " categories; we report one 'full' event with flags (asserted in"
            " test_cms_failure_flags_match_log_text)"
        )
    pred = _gctk_predicate(kind)
    if pred is not None:
        v, _, _ = expected_number(row.value)
        return sum(1 for e in events if pred(e)), v, 0.0
    if metric == "CMS concurrent phase events count":
        v, _, _ = expected_number(row.value)
        return sum(1 for e in events if e.concurrent_ms is not None and e.collector == "cms"), v, 0.0
    if metric == "total pause time (s)":
        v, tol, _ = expected_number(row.value)
        return _sum(e.pause_ms for e in gc_pauses(events)) / 1000.0, v, max(tol, 0.0005)
    if metric in ("time of first event (s)", "time of first event (ms)"):
        v, tol, _ = expected_number(row.value)
        scale = 1000.0 if metric.endswith("(ms)") else 1.0
        first = next(e.uptime_s for e in events if e.uptime_s is not None)
        return first * scale, v, max(tol, 0.0005 * scale)
    if metric == "runtime duration (s)":
        # log time span: first to last time-stamped line
        v, tol, _ = expected_number(row.value)
        return stats.span_s, v, max(tol, 0.0005)
    if metric in ("estimated runtime (s)", "estimated runtime (ms)"):
        v, tol, _ = expected_number(row.value)
        scale = 1000.0 if metric.endswith("(ms)") else 1.0
        ts = [e for e in events if e.uptime_s is not None]
        first = ts[0].uptime_s
        last = max(e.uptime_s + (e.duration_ms or 0.0) / 1000.0 for e in ts)
        return (last - first) * scale, v, max(tol, 0.0005 * scale)
    raise NotComparable(f"GCToolKit metric not mapped: {metric}")


def _garbagecat(row: Row, metric: str, events, stats):
    v, tol, unit = expected_number(row.value)
    pauses = gc_pauses(events)
    # garbagecat: 'stopped time' = safepoint lines of legacy (-XX:+PrintGCApplicationStoppedTime)
    # logs, 'unified safepoint' = those of unified logs (both 'Total time for which ...' and
    # JDK 17+ 'Safepoint "op" ... Total: N ns' lines)
    unified = stats.formats.get("unified", 0) > stats.formats.get("legacy", 0)
    legacy_sp = [] if unified else safepoints(events)
    us = lambda ms: ms * 1000.0  # noqa: E731
    if metric == "jvmRun.getDurationTotal()":
        return us(_sum(e.pause_ms for e in pauses)), v, max(tol, 1.0 * max(1, len(pauses)))
    if metric == "jvmRun.getDurationMax()":
        return us(max(e.pause_ms for e in pauses)), v, 1.0
    if metric == "jvmRun.getLastBlockingEvent().getDurationMicros()":
        return us(pauses[-1].pause_ms), v, 1.0
    if metric == "jvmRun.getBlockingEventCount()":
        return len(pauses), v, 0.0
    if metric == "jvmRun.getStoppedTimeTotal()":
        return us(_sum(e.pause_ms for e in legacy_sp)), v, max(1.0, len(legacy_sp))
    if metric == "jvmRun.getStoppedTimeEventCount()":
        return len(legacy_sp), v, 0.0
    usp = safepoints(events) if unified else []
    if metric == "jvmRun.getUnifiedSafepointEventCount()":
        return len(usp), v, 0.0
    if metric in ("jvmRun.getUnifiedSafepointTimeTotal()", "jvmRun.getUnifiedSafepointTimeMax()"):
        if any(e.phase == STOPPED_PHASE for e in usp):
            raise NotComparable(
                "garbagecat adds 'Stopping threads took' to 'Total time for which application"
                " threads were stopped'; our pause_ms is the logged stopped time (ttsp_ms apart)"
            )
        agg = _sum if metric.endswith("Total()") else max
        return agg(e.pause_ms for e in usp) * 1e6, v, 1.0 * max(1, len(usp))
    if metric == "jvmRun.getJvmRunDuration()":
        raise NotComparable("garbagecat's JVM run duration includes its own estimate of the JVM start")
    raise NotComparable(f"garbagecat metric not mapped: {metric}")


def _jifa(row: Row, metric: str, events, stats):
    jev = _jifa_events(events)
    if metric == "model.getGcEvents().size()":
        v, _, _ = expected_number(row.value)
        return len(jev), v, 0.0
    m = re.match(r"model\.getGcEvents\(\)\.get\((\d+)\)\.get(StartTime|Pause|Cause)\(\)$", metric)
    if m:
        i, what = int(m.group(1)), m.group(2)
        # Jifa's list index depends on its grouping; locate the event by its start time (the
        # file's StartTime row for the same index) when there is one
        t_ms = _JIFA_TIMES.get((row.file, i))
        e = None
        if t_ms is not None:
            cands = [x for x in jev if x is not None and abs((_jifa_ms(x, events) or -1e18) - t_ms) <= 0.5]
            e = cands[0] if cands else None
        elif i < len(jev):
            e = jev[i]
        if what == "StartTime":
            v, tol, _ = expected_number(row.value)
            return (_jifa_ms(e, events) if e is not None else None), v, max(tol, 0.5)
        if e is None:
            return None, row.value, 0.0
        if what == "Pause":
            v, tol, _ = expected_number(row.value)
            return _jifa_pause(e, events), v, max(tol, 1e-6)
        cause = _JIFA_CAUSES.get(row.value, "?")
        if cause == "?":
            raise NotComparable(f"Jifa cause {row.value} not mapped")
        if cause is None:
            return ("promotion-failed" in e.flags), True, 0.0
        return _jifa_cause(e), cause, 0.0
    raise NotComparable(f"Jifa metric not mapped: {metric}")


_JIFA_TIMES: dict = {}


def index_jifa_times(rows) -> None:
    """Remember Jifa's event start times per (file, index) from the StartTime rows."""
    for r in rows:
        m = re.match(r"jifa: model\.getGcEvents\(\)\.get\((\d+)\)\.getStartTime\(\)$", r.metric)
        if m:
            try:
                _JIFA_TIMES[(r.file, int(m.group(1)))] = expected_number(r.value)[0]
            except NotComparable:
                pass


def _jgla(row: Row, metric: str, events, stats):
    cycles = [e for e in events if e.event_type == "concurrent-cycle"]
    mb = lambda kb: int(kb // 1024) if kb is not None else None  # noqa: E731
    if metric == "gcLogFile.cycleEntries.size()":
        v, _, _ = expected_number(row.value)
        return len(cycles), v, 0.0
    m = re.match(r"(firstCycle|minorCycle)\.(phase|heapBeforeGCMb|heapAfterGCMb|heapSizeMb)$", metric)
    if m:
        which, what = m.groups()
        pool = cycles if which == "firstCycle" else [c for c in cycles if (c.phase or "").startswith("Minor")]
        c = pool[0]
        if what == "phase":
            return c.phase, row.value, 0.0
        v, _, _ = expected_number(row.value)
        val = {"heapBeforeGCMb": c.heap_before_kb, "heapAfterGCMb": c.heap_after_kb, "heapSizeMb": c.heap_committed_kb}[what]
        return mb(val), v, 0.0
    m = re.match(r'subPhases\["(.*)"\]$', metric.replace('""', '"'))
    if m:
        name = m.group(1)
        v, _, _ = expected_number(row.value)
        first_id = cycles[0].gc_id
        for e in events:
            if e.gc_id == first_id and e.phase == name:
                return (e.pause_ms if e.pause_ms is not None else e.concurrent_ms), v, 0.0005
        return None, v, 0.0
    m = re.match(r"gcEntry\.(\w+)(?:\[(\w+)\])?$", metric)
    if m:
        what, idx = m.groups()
        if idx is not None:
            raise NotComparable("G1 region counts: we report generation sizes in KiB (regions x region"
                                " size, when the log states the region size)")
        e = gc_pauses(events)[0]  # 'first parsed entry' of the file
        if what == "phase":
            return e.phase, row.value, 0.0
        v, _, _ = expected_number(row.value)
        ours = {"timeStamp": e.uptime_s, "sequenceId": e.gc_id, "timeMs": e.pause_ms,
                "heapBeforeGCMb": mb(e.heap_before_kb), "heapAfterGCMb": mb(e.heap_after_kb),
                "heapSizeMb": mb(e.heap_committed_kb)}.get(what)
        if ours is None:
            raise NotComparable(f"jvm-gc-logs-analyzer field {what} not mapped")
        return ours, v, 0.0005
    raise NotComparable(f"jvm-gc-logs-analyzer metric not mapped: {metric}")


_EVALUATORS = {
    "gcviewer": _gcviewer,
    "gctoolkit": _gctoolkit,
    "garbagecat": _garbagecat,
    "jifa": _jifa,
    "jvm-gc-logs-analyzer": _jgla,
}


def compare(ours, expected, tol) -> bool:
    if isinstance(ours, Result):
        return compare(ours.ours, ours.expected, ours.tol)
    if isinstance(ours, tuple) and len(ours) == 2 and ours[0] == "<=":
        return ours[1] <= expected
    if isinstance(expected, float) or isinstance(ours, float):
        if ours is None:
            return False
        return abs(float(ours) - float(expected)) <= tol + 1e-9
    return ours == expected


def locate_corpus() -> Path | None:
    """The shared GC corpus: <root>/shared/corpus/gc beside the checkout, or $BROKERSCOPE_SHARED."""
    import os

    candidates = [Path(__file__).resolve().parents[2] / "shared" / "corpus" / "gc"]
    env = os.environ.get("BROKERSCOPE_SHARED")
    if env:
        candidates += [Path(env) / "corpus" / "gc", Path(env)]
    for c in candidates:
        if (c / "MANIFEST.tsv").is_file() and (c / "EXPECTED_core.tsv").is_file():
            return c
    return None

