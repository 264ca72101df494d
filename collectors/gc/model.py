"""Data model of the GC log parser: :class:`GcEvent` and :class:`ParseStats`.

Event taxonomy (``GcEvent.event_type``)
======================================

Stop-the-world pauses (``pause_ms`` is set, ``concurrent_ms`` is None):

``young``
    Young / minor collection: Serial ``DefNew``, ``ParNew``, Parallel ``PSYoungGen``, CMS
    ``Pause Young``, G1 ``Pause Young (Normal|Concurrent Start|Prepare Mixed)`` and legacy
    ``GC pause (young)``.  A G1 young pause that also starts concurrent marking
    (``Concurrent Start``, JDK 9/10 ``Pause Initial Mark``, legacy ``(initial-mark)``) carries the
    flag ``concurrent-start``.
``mixed``
    G1 mixed collection (``Pause Young (Mixed)``, JDK 9/10 ``Pause Mixed``, legacy ``(mixed)``,
    JDK 6 ``(partial)``).
``full``
    Stop-the-world collection of the whole heap: ``Pause Full``, legacy ``Full GC``, and the
    legacy young collections that fell back to a serial old collection (``promotion failed`` /
    ``concurrent mode failure`` followed by ``[CMS: ...]`` or ``[Tenured: ...]`` inside a ``GC``
    record) -- those carry the corresponding flags.
``initial-mark`` / ``remark``
    CMS initial mark / CMS and G1 remark.
``cleanup``
    G1 ``Pause Cleanup`` / legacy ``GC cleanup``.
``degenerated``
    Shenandoah ``Pause Degenerated GC``.
``pause-<phase>``
    The phase pauses of the concurrent collectors, e.g. ZGC ``pause-mark-start``,
    ``pause-mark-end``, ``pause-relocate-start``; Shenandoah ``pause-init-mark``,
    ``pause-final-mark``, ``pause-init-update-refs``, ``pause-final-update-refs``,
    ``pause-final-roots``, ``pause-final-evac``.

Concurrent work (``concurrent_ms`` is set, ``pause_ms`` is None):

``concurrent-<phase>``
    One event per *top-level* concurrent phase, e.g. ``concurrent-mark``,
    ``concurrent-preclean``, ``concurrent-sweep``, ``concurrent-reset`` (CMS),
    ``concurrent-scan-root-regions`` / legacy ``concurrent-root-region-scan`` (G1),
    ``concurrent-relocate`` (ZGC), ``concurrent-evacuation`` (Shenandoah).  Sub-phases that are
    logged *inside* an open phase (G1 ``Concurrent Mark From Roots`` inside ``Concurrent Mark``)
    are not emitted, so summing ``concurrent_ms`` never double counts.

Cycles and other events (neither ``pause_ms`` nor ``concurrent_ms``; see ``duration_ms``):

``concurrent-cycle``
    A whole concurrent collection cycle as logged by the JVM: G1 ``Concurrent (Mark|Undo)
    Cycle`` / ``Concurrent Cycle`` (unified logs only -- legacy G1 logs do not delimit the
    cycle), ZGC ``Garbage Collection (...)`` and generational ZGC ``Major|Minor Collection (...)``
    (heap before/after, young/old generation occupancy before/after), and Shenandoah cycles
    (unified logs: one per GC id, synthesised from its ``GC(n)`` lines because Shenandoah logs
    no summary line; ``cause`` is the preceding ``Trigger:``, ``phase`` the first phase, heap
    before/after the *last* ``a->b(c)`` of the cycle, i.e. the final cleanup that frees the
    collection set; it is emitted when the next cycle starts or at :meth:`finish`).  Its pauses
    and phases are separate events, hence no ``pause_ms``/``concurrent_ms`` here;
    ``duration_ms`` is the logged total, else the time between its first and last line.
``allocation-stall`` / ``relocation-stall``
    ZGC ``Allocation Stall (<thread>) N ms`` / ``Relocation Stall (<thread>) N ms``: one
    application thread blocked.  Not stop-the-world, so ``pause_ms`` is None; the stall is in
    ``duration_ms`` and the thread in ``phase``.
``out-of-memory``
    ZGC ``Out Of Memory (<thread>)``.
``safepoint``
    One event per safepoint: unified ``Safepoint "Op", ... Total: N ns`` (JDK 17+, ``phase ==
    SAFEPOINT_PHASE``), unified or legacy ``Total time for which application threads were
    stopped: N seconds`` (``phase == STOPPED_PHASE``).  ``pause_ms`` is the total time the
    application was stopped as logged, ``ttsp_ms`` the time to reach the safepoint (``Reaching
    safepoint`` / ``Stopping threads took``; not added to ``pause_ms``) and ``cause`` the VM
    operation when it is logged (``Entering safepoint region: Op`` on JDK 9-16).  GC pauses
    happen *inside* safepoints, so never add safepoint ``pause_ms`` to GC ``pause_ms`` (see
    :attr:`GcEvent.is_gc`).

Counting rules
==============

* A *pause* is the JVM's own measurement of a stop-the-world GC operation: for unified logs the
  trailing duration of the summary line (``GC(3) Pause Young (Normal) (G1 Evacuation Pause)
  24M->4M(256M) 3.456ms`` -> 3.456 ms), for legacy logs the record's own ``, 0.0123456 secs]``
  value (the outermost one when a record nests generation records).  ``real=`` (from ``[Times:
  ...]``) is kept in ``real_s`` but never used as the pause: it is rounded to 10 ms and absent in
  many logs, while the ``secs]`` value is what every tool (GCViewer, GCToolKit, garbagecat,
  Jifa) reads as the pause.
* The total GC pause of a log is ``sum(e.pause_ms for e in events if e.is_gc)``; the total time
  the application was stopped is ``sum(e.pause_ms for e in events if e.event_type ==
  'safepoint')`` (only when safepoint logging is enabled).
* One stop-the-world operation is one pause.  A pause logged *inside* another one is absorbed
  by the enclosing pause: the Serial/CMS young collection that turns into a full collection
  (unified ``GC(2) Pause Young`` around ``GC(3) Pause Full``; legacy ``[GC [DefNew (promotion
  failed)...][Tenured: ...]``) is one ``full`` event (flags ``upgrade-to-full`` /
  ``promotion-failed`` / ``concurrent-mode-failure``), and a CMS remark with
  ``-XX:+CMSScavengeBeforeRemark`` is one ``remark`` event flagged ``scavenge-before-remark``.
  GCViewer and GCToolKit count such nested pauses twice; Jifa and we count them once.
* Timestamps (``uptime_s``/``wall_time``) are those of the first line of the event (the
  ``gc,start`` line when logged, otherwise the summary line; for legacy records the record's
  prefix, which the JVM prints when the collection starts).  ``wall_time`` comes from the
  ``time``/``utctime``/``timemillis`` decorators or the legacy datestamp; when only an uptime is
  logged it is ``jvm_start + uptime`` if the caller passes ``jvm_start``, else None.
* Sizes are converted to KiB (``1M`` -> 1024).  Permanent generation sizes (JDK <= 7) are
  reported in the ``metaspace_*`` fields.  G1 young/old sizes come from region counts times the
  region size when the log states it (``Heap Region Size: 1M``), legacy G1 young from ``Eden``
  + ``Survivors`` (old is not derived: G1 logs survivor capacity, not occupancy).
* Events are returned in the order they complete (a G1 concurrent cycle after the pauses that
  happened during it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

__all__ = [
    "COLLECTORS",
    "PAUSE_TYPES",
    "GcEvent",
    "ParseStats",
]

#: ``GcEvent.phase`` of safepoint events from ``Total time for which application threads were
#: stopped`` lines (JDK 8 ``-XX:+PrintGCApplicationStoppedTime`` and JDK 9-16 ``-Xlog:safepoint``);
#: JDK 17+ ``Safepoint "<op>", ... Total: N ns`` lines have ``phase == SAFEPOINT_PHASE``.
STOPPED_PHASE = "Total time for which application threads were stopped"
SAFEPOINT_PHASE = "Safepoint"

#: Values of :attr:`GcEvent.collector`.
COLLECTORS = (
    "serial",
    "parallel",
    "cms",
    "g1",
    "zgc",
    "zgc-generational",
    "shenandoah",
    "unknown",
)

#: Event types of classic stop-the-world GC pauses (plus ``pause-*`` and ``degenerated``).
PAUSE_TYPES = frozenset(
    {"young", "mixed", "full", "initial-mark", "remark", "cleanup", "degenerated"}
)

#: Flags that may appear in :attr:`GcEvent.flags`.
KNOWN_FLAGS = (
    "concurrent-start",  # G1 young pause that initiates concurrent marking
    "prepare-mixed",  # G1 last young pause before mixed collections
    "to-space-exhausted",  # G1 evacuation failure (legacy: to-space exhausted/overflow)
    "evacuation-failure",  # G1 JDK 21+ '(Evacuation Failure)'
    "humongous",  # caused by a humongous allocation
    "promotion-failed",  # ParNew/DefNew/Parallel promotion failure
    "concurrent-mode-failure",  # CMS concurrent mode failure
    "concurrent-mode-interrupted",  # CMS concurrent mode interrupted (System.gc during CMS)
    "system-gc",  # explicit System.gc()/Runtime.gc()
    "aborted",  # concurrent phase/cycle aborted (G1 'Concurrent Mark Abort', CMS aborted preclean)
    "cancelled",  # Shenandoah cycle cancelled
    "undo",  # G1 concurrent undo cycle
    "upgrade-to-full",  # young (Serial/CMS) or Shenandoah degenerated pause that became a full GC
    "scavenge-before-remark",  # CMS remark that includes a young collection
    "implausible-value",  # a duration was not finite or over MAX_PLAUSIBLE_MS (corrupt line): dropped to None
)

#: No JVM pause, phase or cycle lasts 30 days; a longer (or infinite) value is a corrupt digit run.
MAX_PLAUSIBLE_MS = 30 * 24 * 3600 * 1000.0
_DURATIONS_MS = ("pause_ms", "concurrent_ms", "duration_ms", "ttsp_ms")
_DURATIONS_S = ("user_s", "sys_s", "real_s")


def drop_implausible(events: list) -> None:
    """Null the durations of `events` that cannot be real (not finite, negative, over
    MAX_PLAUSIBLE_MS) and flag the event `implausible-value`: a corrupt number must not become
    an infinite pause that every sum, percentile and time window downstream inherits."""
    for e in events:
        bad = False
        for name in _DURATIONS_MS:
            v = getattr(e, name)
            if v is not None and not 0.0 <= v <= MAX_PLAUSIBLE_MS:  # NaN fails too
                setattr(e, name, None)
                bad = True
        for name in _DURATIONS_S:
            v = getattr(e, name)
            if v is not None and not 0.0 <= v <= MAX_PLAUSIBLE_MS / 1000.0:
                setattr(e, name, None)
                bad = True
        if bad:
            e.flags = (*e.flags, "implausible-value")


@dataclass(slots=True)
class GcEvent:
    """One GC event (one collection, pause, concurrent phase, cycle, stall or safepoint).

    All sizes are KiB, all durations are milliseconds except the CPU times (seconds, as
    logged).  Fields not present in the log are ``None``.
    """

    event_type: str
    collector: str = "unknown"
    wall_time: Optional[datetime] = None  # UTC, tz-aware
    uptime_s: Optional[float] = None
    cause: Optional[str] = None
    pause_ms: Optional[float] = None
    concurrent_ms: Optional[float] = None
    duration_ms: Optional[float] = None
    heap_before_kb: Optional[int] = None
    heap_after_kb: Optional[int] = None
    heap_committed_kb: Optional[int] = None
    young_before_kb: Optional[int] = None
    young_after_kb: Optional[int] = None
    young_committed_kb: Optional[int] = None
    old_before_kb: Optional[int] = None
    old_after_kb: Optional[int] = None
    old_committed_kb: Optional[int] = None
    metaspace_before_kb: Optional[int] = None
    metaspace_after_kb: Optional[int] = None
    metaspace_committed_kb: Optional[int] = None
    user_s: Optional[float] = None
    sys_s: Optional[float] = None
    real_s: Optional[float] = None
    gc_id: Optional[int] = None
    flags: tuple[str, ...] = ()
    phase: Optional[str] = None  # the event's name as logged, e.g. 'Pause Young (Normal)'
    ttsp_ms: Optional[float] = None  # safepoint: time to reach the safepoint
    source_line: int = 0  # first line (1-based) of the event
    raw: Optional[str] = None  # the event's first line, when keep_raw=True

    @property
    def is_gc(self) -> bool:
        """True for GC events (everything but safepoints)."""
        return self.event_type != "safepoint"

    @property
    def is_pause(self) -> bool:
        """True for stop-the-world GC pauses (safepoints excluded)."""
        return self.pause_ms is not None and self.event_type != "safepoint"

    @property
    def is_full(self) -> bool:
        return self.event_type == "full"

    def to_dict(self) -> dict:
        """Plain dict (flags as a list), e.g. for JSON or a DataFrame row."""
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        d["flags"] = list(self.flags)
        return d


@dataclass(slots=True)
class ParseStats:
    """Line accounting of one parse.

    Every line lands in exactly one bucket:

    * ``lines_event``: part of an emitted (or still pending) event, including the event's
      detail lines the parser does not extract (phase timings, worker statistics ...);
    * ``lines_ignored``: understood but carrying no event (JVM banner, ``gc,init`` lines, heap
      summaries, blank lines, lines of non-GC unified tags, tenuring distribution ...);
    * ``lines_unknown``: not understood.  A bounded sample (line number, text) is kept in
      ``unknown_sample``.

    ``coverage`` = (event + ignored) / total.
    """

    lines_total: int = 0
    lines_event: int = 0
    lines_ignored: int = 0
    lines_unknown: int = 0
    events: int = 0
    incomplete_events: int = 0  # started but never finished (e.g. truncated log)
    unknown_sample: list[tuple[int, str]] = field(default_factory=list)
    sample_limit: int = 50
    formats: dict[str, int] = field(default_factory=dict)  # 'unified'/'legacy' -> lines
    # time span of the log: uptime / wall clock of its first and last time-stamped line (set by
    # GcLogParser.finish(); GcLogParser.time_span() gives it at any time)
    first_uptime_s: Optional[float] = None
    last_uptime_s: Optional[float] = None
    first_wall_time: Optional[datetime] = None
    last_wall_time: Optional[datetime] = None

    @property
    def span_s(self) -> Optional[float]:
        """Seconds between the first and the last time-stamped line (e.g. for GC overhead %)."""
        if self.first_uptime_s is not None and self.last_uptime_s is not None:
            return self.last_uptime_s - self.first_uptime_s
        if self.first_wall_time is not None and self.last_wall_time is not None:
            return (self.last_wall_time - self.first_wall_time).total_seconds()
        return None

    @property
    def lines_understood(self) -> int:
        return self.lines_event + self.lines_ignored

    @property
    def coverage(self) -> float:
        """Fraction of lines understood (1.0 for an empty input)."""
        if self.lines_total == 0:
            return 1.0
        return (self.lines_event + self.lines_ignored) / self.lines_total

    def add_unknown(self, line_no: int, text: str) -> None:
        self.lines_unknown += 1
        if len(self.unknown_sample) < self.sample_limit:
            self.unknown_sample.append((line_no, text[:500]))

    def merge(self, other: "ParseStats") -> "ParseStats":
        """Add ``other``'s counters into this one (e.g. per-file stats of a job)."""
        self.lines_total += other.lines_total
        self.lines_event += other.lines_event
        self.lines_ignored += other.lines_ignored
        self.lines_unknown += other.lines_unknown
        self.events += other.events
        self.incomplete_events += other.incomplete_events
        room = self.sample_limit - len(self.unknown_sample)
        if room > 0:
            self.unknown_sample.extend(other.unknown_sample[:room])
        for k, v in other.formats.items():
            self.formats[k] = self.formats.get(k, 0) + v
        return self

    def summary(self) -> str:
        return (
            f"{self.lines_total} lines: {self.lines_event} event, {self.lines_ignored} ignored, "
            f"{self.lines_unknown} unknown; {self.events} events; coverage {self.coverage:.2%}"
        )
