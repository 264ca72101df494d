"""JDK 9+ unified logging (``-Xlog:gc*,safepoint``) handler.

Lines are ``[decorator][decorator]... message``; the decorator layout (any combination of
time, utctime, uptime, timemillis, uptimemillis, timenanos, uptimenanos, hostname, pid, tid,
level, tags -- or none at all) is detected from the first decorated line and re-detected
whenever a line does not match the cached layout.

Multi-line events are joined by GC id (``GC(12) ...``): the start line (``gc,start``), heap and
metaspace lines, the summary line with the pause duration and the ``User=.. Sys=.. Real=..``
line that follows it.  A finished event is held back until the next line that is not one of
its detail lines, so that its CPU line can still be attached.
"""

from __future__ import annotations

import re
from typing import Optional

from ._common import (EVENT, GENERIC_INFO_RE, IGNORED, INFO_LINE_RE, SIZE, UNKNOWN, collector_from_using,
                      epoch_ms_to_dt, num, parse_datestamp, size_kb, slug, to_int, wall_from_start)
from .model import SAFEPOINT_PHASE, STOPPED_PHASE, GcEvent

# --- decorators -------------------------------------------------------------------------------

_BRACKET_RE = re.compile(r"\[([^\[\]]*)\]")
_KIND_TESTS = (
    ("time", re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?$")),
    ("uptime", re.compile(r"\d+(?:[.,]\d+)?s$")),
    ("ms", re.compile(r"\d+ms$")),
    ("ns", re.compile(r"\d+ns$")),
    ("level", re.compile(r"(?:trace|debug|info|warning|error|develop)\s*$")),
    ("num", re.compile(r"\d+$")),
    ("tags", re.compile(r"[a-z][a-z0-9_]*(?:,[a-z0-9_]+)*\s*$")),
)
_KIND_RE = {
    "time": r"\[(\d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?)\]",
    "uptime": r"\[(\d+(?:[.,]\d+)?)s\]",
    "ms": r"\[(\d+)ms\]",
    "ns": r"\[(\d+)ns\]",
    "level": r"\[(\w+)\s*\]",
    "num": r"\[\d+\]",
    "tags": r"\[([a-z][a-z0-9_,]*)\s*\]",
    "other": r"\[[^\[\]]*\]",
}


class Layout:
    """A compiled decorator layout, e.g. ``[time][uptime][level][tags]``."""

    __slots__ = ("kinds", "regex", "g_wall", "g_wallms", "g_up", "g_upms", "g_upns", "g_level", "g_tags")

    def __init__(self, kinds: list[str], values: list[str]):
        self.kinds = tuple(kinds)
        pattern = "".join(_KIND_RE[k] for k in kinds) + " ?"
        self.regex = re.compile(pattern)
        self.g_wall = self.g_wallms = self.g_up = self.g_upms = self.g_upns = None
        self.g_level = self.g_tags = None
        group = 0
        ms_groups, ns_groups = [], []
        first_ms_value = None
        for kind, value in zip(kinds, values):
            if kind in ("num", "other"):
                continue
            group += 1
            if kind == "time":
                if self.g_wall is None:
                    self.g_wall = group
            elif kind == "uptime":
                self.g_up = group
            elif kind == "ms":
                ms_groups.append(group)
                if first_ms_value is None:
                    first_ms_value = to_int(value[:-2])
            elif kind == "ns":
                ns_groups.append(group)
            elif kind == "level":
                self.g_level = group
            elif kind == "tags":
                self.g_tags = group
        # The JVM prints decorators in a fixed order: time, utctime, uptime, timemillis,
        # uptimemillis, timenanos, uptimenanos, hostname, pid, tid, level, tags.
        if len(ms_groups) >= 2:
            self.g_wallms, self.g_upms = ms_groups[0], ms_groups[1]
        elif ms_groups:
            # a lone *millis decorator: epoch milliseconds (timemillis) are > 1e11
            if first_ms_value is not None and first_ms_value > 10**11:
                self.g_wallms = ms_groups[0]
            else:
                self.g_upms = ms_groups[0]
        if ns_groups:
            # timenanos is an arbitrary monotonic clock: only uptimenanos is usable; when two
            # are present the second one is uptimenanos, a lone one is assumed to be uptimenanos.
            self.g_upns = ns_groups[-1]


def detect_layout(line: str) -> Optional[Layout]:
    """Classify the leading ``[...]`` groups of ``line``; None if it is not a decorated line."""
    c = line[1:2]
    if not (c.isdigit() or "a" <= c <= "z"):
        # every decorator kind starts with a digit or a lower-case letter, and a first group
        # of kind 'other' means "not decorated": '[GC Worker ...', '[Times: ...' (legacy)
        return None
    pos = 0
    kinds: list[str] = []
    values: list[str] = []
    seen_time = False
    while True:
        m = _BRACKET_RE.match(line, pos)
        if m is None:
            break
        value = m.group(1)
        for kind, test in _KIND_TESTS:
            if test.match(value):
                break
        else:
            kind = "other"
        if kind == "other" and not seen_time:
            return None
        if kind in ("time", "uptime", "ms", "ns"):
            seen_time = True
        kinds.append(kind)
        values.append(value)
        pos = m.end()
        if kind == "tags":
            break
    if not kinds:
        return None
    if not (seen_time or "level" in kinds or "tags" in kinds):
        return None
    return Layout(kinds, values)


# --- message regexes --------------------------------------------------------------------------

_Q = r"\((?:[^()]|\([^()]*\))*\)"  # a parenthesised qualifier, one nesting level
_QUALS_RE = re.compile(r"\(((?:[^()]|\([^()]*\))*)\)")
_HEAP = rf"(?P<hb>{SIZE})(?:\((?P<hcb>{SIZE})\))?->(?P<ha>{SIZE})\((?P<hc>{SIZE})\)"
_DUR = r"(?P<dur>\d+(?:[.,]\d+)?) ?(?P<unit>ms|s|us)"
_NAME = r"(?P<name>[A-Za-z][A-Za-z0-9\-]*(?: [A-Za-z][A-Za-z0-9\-]*)*?)"

_PAUSE_END_RE = re.compile(rf"Pause {_NAME}(?P<quals>(?: {_Q})*)(?: {_HEAP})? {_DUR}\s*$")
_PAUSE_START_RE = re.compile(rf"Pause {_NAME}(?P<quals>(?: {_Q})*)\s*$")
_CONC_END_RE = re.compile(rf"Concurrent {_NAME}(?P<quals>(?: {_Q})*)(?: {_HEAP})? {_DUR}\s*$")
_CONC_START_RE = re.compile(rf"Concurrent {_NAME}(?P<quals>(?: {_Q})*)\s*$")
# ZGC cycle: 'Garbage Collection (Warmup) 26M(20%)->26M(20%)' ; generational:
# 'Major Collection (Warmup) 14M(11%)->34M(27%) 0.035s'
_ZSIZE = rf"(?P<{{0}}>{SIZE})\(\d+%\)"
_ZCYCLE_END_RE = re.compile(
    r"(?P<name>Garbage|Major|Minor) Collection (?P<quals>(?:" + _Q + r" ?)+)\s*"
    + _ZSIZE.format("hb") + "->" + _ZSIZE.format("ha") + r"(?: (?P<dur>\d+(?:[.,]\d+)?)s)?\s*$"
)
_ZCYCLE_START_RE = re.compile(r"(?P<name>Garbage|Major|Minor) Collection (?P<quals>(?:" + _Q + r" ?)+)\s*$")
_ZGEN_END_RE = re.compile(
    r"(?P<name>Young|Old) Generation(?: " + _Q + r")*\s*" + _ZSIZE.format("hb") + "->"
    + _ZSIZE.format("ha") + r"(?: (?P<dur>\d+(?:[.,]\d+)?)s)?\s*$"
)
_CPU_RE = re.compile(r"User=(\d+(?:[.,]\d+)?)s Sys=(\d+(?:[.,]\d+)?)s Real=(\d+(?:[.,]\d+)?)s")
# generation lines: 'DefNew: 17472K(19648K)->2176K(19648K) Eden: ...', 'ParOldGen: 1K->2K(3K)',
# 'Metaspace: 181K(384K)->181K(384K) NonClass: ...', 'Metaspace: 15753K->15753K(1062912K)'
_GEN_RE = re.compile(
    rf"(?P<gen>DefNew|Tenured|PSYoungGen|ParOldGen|PSOldGen|ParNew|CMS|Metaspace|Class Space|Perm):\s+"
    rf"(?P<b>{SIZE})(?:\((?P<cb>{SIZE})\))?->(?P<a>{SIZE})\((?P<c>{SIZE})\)"
)
_REGIONS_RE = re.compile(r"(?P<kind>Eden|Survivor|Old|Humongous|Archive) regions: (?P<b>\d+)->(?P<a>\d+)")
_SAFEPOINT_RE = re.compile(
    r'Safepoint "(?P<op>[^"]*)", Time since last: \d+ ns, Reaching safepoint: (?P<reach>\d+) ns,'
    r".*\bTotal: (?P<total>\d+) ns(?:,.*)?\s*$"
)
_STOPPED_RE = re.compile(
    r"Total time for which application threads were stopped: (?P<total>\d+(?:[.,]\d+)?) seconds"
    r"(?:, Stopping threads took: (?P<reach>\d+(?:[.,]\d+)?) seconds)?\s*$"
)
_STALL_RE = re.compile(r"(?:Allocation|Relocation) Stall \((?P<thread>.*)\) (?P<dur>\d+(?:[.,]\d+)?) ?ms\s*$")
_INFO_TAGS_RE = re.compile(r"\b(?:init|exit|stats|ergo|cds|coops|director|metaspace|task|alloc|ref|phases|heap)\b")
_REGION_SIZE_RE = re.compile(r"Heap [Rr]egion [Ss]ize: (\S+)")

# GC(n)-scoped detail lines that carry no event data but are known output of the collectors
_GC_DETAIL_RE = re.compile(
    r"""(?:
      Using\ \d+
    | Desired\ survivor\ size
    | Age\ table
    | -\ age\ 
    | New\ tenuring\ threshold
    | Phase\ \d
    | To-space\ exhausted
    | Cleaned\ string
    | Squelching
    | Humongous\ regions?
    | Heap\ (?:before|after)\ GC\ invocations
    | Cancelling\ GC
    | Start\ GC\ cycle
    | Coalescing\ and\ filling
    | Forcing\ transfer
    | Evacuation\ (?:Reserve|Targets)
    | Minor_pause
    | Mark\ Start\ +Mark\ End     # ZGC heap table header
    | [A-Za-z][\w .,/+()#:?\-]*?:\s+\S   # 'Label: value'
    | [A-Za-z][\w .,/+()#:\-]*?:\s*$   # 'Label:'
    | [A-Za-z][\w .\-]*?\s{2,}\S    # table rows ('Eden    12M (9%) ...')
    | [A-Za-z]\w*::\w+              # 'AdaptiveSizePolicy::adjust_eden_for_footprint ...'
    | -{3,}[\s\-]*$
    | [A-Z][\w /+()#,'\-]*?\ \d+(?:[.,]\d+)?\ ?(?:ms|us|s)\s*$   # 'Phase name 1.234ms'
    | [A-Z][\w /+()#,'.%\-]*\s*$   # sub-phase start lines, sentences ('Running G1 ... regions.')
    | -{3,}\s*$
    )""",
    re.X,
)

_G1_YOUNG_KINDS = {"Normal", "Concurrent Start", "Prepare Mixed", "Mixed"}
# ZGC concurrent phases that are sub-phases of an info-level phase (used only when the log has
# no level decorator; with levels, debug/trace phases are sub-phases by definition)
_ZGC_SUBPHASES = {
    "Mark Roots", "Mark Follow", "Relocate Remset FP", "References Process", "References Enqueue",
    "Classes Unlink", "Classes Purge", "Mark Root Colored", "Mark Root Uncolored",
    "Roots OopStorageSet", "Weak Roots OopStorageSet", "Roots ClassLoaderDataGraph",
    "Roots CodeCache", "Roots JavaThreads", "Remap Roots Colored", "Remap Roots Uncolored",
    "Remap Remembered", "Mark Continue",
}
_CYCLE_WRAPPERS = {"Cycle", "Mark Cycle", "Undo Cycle"}
_GEN_KEYS = frozenset({
    "DefNew", "Tenured", "PSYoungGen", "ParOldGen", "PSOldGen", "ParNew", "CMS", "Metaspace", "Perm",
})
_GEN_HINT = {
    "DefNew": "serial", "Tenured": "serial", "PSYoungGen": "parallel", "ParOldGen": "parallel",
    "PSOldGen": "parallel", "ParNew": "cms", "CMS": "cms",
}


def _quals(text: str) -> list[str]:
    return _QUALS_RE.findall(text) if text else []


def _dur_ms(value: str, unit: str) -> float:
    v = num(value)
    if unit == "s":
        return v * 1000.0
    if unit == "us":
        return v / 1000.0
    return v


class _GcState:
    """Per GC id state of multi-line events."""

    __slots__ = (
        "gc_id", "first_line", "first_ts",
        "pause_line", "pause_ts", "pause_raw",
        "young", "old", "meta", "regions", "flags",
        "phases", "cycle", "cycle_flags",
        "shen_first_name", "shen_heap", "shen_has_conc", "last_ts",
        "zgen", "nested", "trigger",
    )

    def __init__(self, gc_id: int, line_no: int, ts):
        self.gc_id = gc_id
        self.first_line = line_no
        self.first_ts = ts
        self.pause_line = 0
        self.pause_ts = None
        self.pause_raw = None
        self.young = self.old = self.meta = None  # (before, after, committed)
        self.regions = None  # {kind: (before, after)}
        self.flags: list[str] = []
        self.phases: list[tuple[str, object, int]] = []  # open concurrent phases
        self.cycle = None  # (name, ts, line) of an open cycle wrapper
        self.cycle_flags: list[str] = []
        self.shen_first_name = None
        self.shen_heap = None
        self.shen_has_conc = False
        self.last_ts = ts
        self.zgen = {}
        self.nested: list[GcEvent] = []  # pauses logged inside this GC id's open pause
        self.trigger: Optional[str] = None  # Shenandoah 'Trigger: ...' that started the cycle  # 'young'/'old' -> (before, after)

    def reset_pause(self) -> None:
        self.pause_line = 0
        self.pause_ts = None
        self.pause_raw = None
        self.young = self.old = self.meta = None
        self.regions = None
        self.flags = []


class UnifiedHandler:
    """Stateful handler of unified-logging lines; events are appended to ``out``."""

    def __init__(self, owner):
        self.o = owner  # GcLogParser: collector, jvm_start, keep_raw
        self.layout: Optional[Layout] = None
        self.states: dict[int, _GcState] = {}
        self.ready: list[GcEvent] = []  # finished events waiting for a CPU line
        self.region_kb: Optional[int] = None
        self.safepoint_op: Optional[str] = None
        self.trigger: Optional[str] = None
        self.shen_open: Optional[int] = None  # gc id of the open Shenandoah cycle
        self.decorated = False
        self.has_level = False
        self.exit_block = False  # inside the heap summary / statistics printed at JVM exit
        self.foreign_block = False  # the last decorated line had a non-GC tag
        self._tag_kind: dict[str, int] = {}  # tags decorator -> _classify_tags()
        self.first_ts = None  # time stamp of the first decorated line
        self.last_m = None  # match of the last decorated line (time stamp parsed on demand)
        self.last_layout: Optional[Layout] = None

    # -- time stamps --------------------------------------------------------------------------

    def _ts(self, m, layout: Optional[Layout]):
        """Time stamp of a decorated line as a lazily converted tuple (wall_raw, wall_ms, up)."""
        if m is None or layout is None:
            return None
        wall = m.group(layout.g_wall) if layout.g_wall else None
        wallms = m.group(layout.g_wallms) if layout.g_wallms else None
        up = None
        if layout.g_up:
            up = m.group(layout.g_up)
        elif layout.g_upms:
            up = float(m.group(layout.g_upms)) / 1000.0  # (float(): no overflow on corrupt values)
        elif layout.g_upns:
            up = float(m.group(layout.g_upns)) / 1e9
        return (wall, wallms, up)

    def _stamp(self, ev: GcEvent, ts) -> None:
        if ts is None:
            return
        wall, wallms, up = ts
        if up is not None:
            ev.uptime_s = num(up) if isinstance(up, str) else up
        if wall is not None:
            ev.wall_time = parse_datestamp(wall)
        elif wallms is not None:
            ev.wall_time = epoch_ms_to_dt(to_int(wallms))
        if ev.wall_time is None and self.o.jvm_start is not None:
            ev.wall_time = wall_from_start(self.o.jvm_start, ev.uptime_s)

    def span(self):
        """(first, last) time stamps of decorated lines as (uptime_s, wall_time) pairs."""
        if self.first_ts is None:
            return None
        probe_a = GcEvent("x")
        self._stamp(probe_a, self.first_ts)
        probe_b = GcEvent("x")
        self._stamp(probe_b, self._ts(self.last_m, self.last_layout))
        return (probe_a.uptime_s, probe_a.wall_time), (probe_b.uptime_s, probe_b.wall_time)

    # -- output -------------------------------------------------------------------------------

    def flush_ready(self, out: list) -> None:
        if self.ready:
            out.extend(self.ready)
            self.ready.clear()

    def _collector(self, hint: Optional[str]) -> str:
        c = self.o.collector
        if c == "unknown" and hint:
            self.o.collector = hint
            return hint
        if c == "zgc" and hint == "zgc-generational":
            self.o.collector = hint
            return hint
        return c

    def _new_event(self, event_type: str, ts, line_no: int, raw, hint=None, **kw) -> GcEvent:
        ev = GcEvent(event_type=event_type, collector=self._collector(hint), source_line=line_no, **kw)
        self._stamp(ev, ts)
        if self.o.keep_raw and raw is not None:
            ev.raw = raw
        return ev

    # -- main entry ---------------------------------------------------------------------------

    def handle(self, line: str, line_no: int, out: list) -> int:
        """Classify one line; returns EVENT/IGNORED/UNKNOWN, or 0 if the line is not unified."""
        layout = self.layout
        m = None
        if line[:1] == "[" and line[1:3] != "GC" and line[1:5] != "Full":
            if layout is not None:
                m = layout.regex.match(line)
            if m is None:
                new = detect_layout(line)
                if new is None:
                    return 0
                m = new.regex.match(line)
                if m is None:
                    return 0
                self.layout = layout = new
                self.has_level = layout.g_level is not None
                self.decorated = True
            msg = line[m.end():]
            if msg[:1] == "[":
                # the cached layout matched only a prefix (e.g. '[uptime][level]' header lines
                # followed by '[uptime][level][tags]' lines): re-detect
                new = detect_layout(line)
                if new is not None and len(new.kinds) > len(layout.kinds):
                    m2 = new.regex.match(line)
                    if m2 is not None:
                        self.layout = layout = new
                        self.has_level = layout.g_level is not None
                        m = m2
                        msg = line[m.end():]
            self.last_m = m
            self.last_layout = layout
            if self.first_ts is None:
                self.first_ts = self._ts(m, layout)
            if layout.g_tags:
                tags = m.group(layout.g_tags)
                kind = self._tag_kind.get(tags)
                if kind is None:
                    kind = self._classify_tags(tags)
                if kind == 1:  # output of other unified tags (class+load, os+thread, jit ...)
                    self.foreign_block = True
                    return IGNORED
                self.foreign_block = False
                if kind == 2 and msg[:3] != "GC(":
                    # gc+init, gc+heap+exit, gc+stats, safepoint+cleanup ...: informational
                    if msg.startswith(("Using ", "Heap ", "Initializing")):
                        self._plain_line(msg.rstrip("\r\n"), m, layout, line_no, out, line)
                    return IGNORED
        else:
            msg = line
            if self.foreign_block and self.decorated and msg[:3] != "GC(":
                # undecorated continuation of a multi-line message of a non-GC tag
                return IGNORED
        if msg[:3] == "GC(":
            self.exit_block = False
            j = msg.find(")", 3)
            if j < 0 or not msg[3:j].isdecimal():  # (isdigit() would accept '²')
                return UNKNOWN
            self.o.unified_mode = True
            if msg[j + 2: j + 3] == " ":
                # indented detail line (phase timings, worker statistics: most lines of a
                # detailed log): what _gc_line returns for it, without building its arguments
                return EVENT
            rest = msg[j + 2:]
            if rest[-1:] == "\n":
                rest = rest.rstrip("\r\n")
            return self._gc_line(to_int(msg[3:j]), rest, m, layout, line_no, out, line)
        msg = msg.rstrip("\r\n")
        if m is None:
            # undecorated line: unified only if we understand it, else the legacy handler's
            if not self.o.unified_mode and not msg.startswith(
                ("Using ", "Initializing ", "Safepoint \"", "Allocation Stall (")
            ):
                return 0
            code = self._plain_line(msg, m, layout, line_no, out, line)
            return 0 if code == UNKNOWN else code
        self.o.unified_mode = True
        return self._plain_line(msg, m, layout, line_no, out, line)

    def _classify_tags(self, tags: str) -> int:
        """0: GC/safepoint event tags, 1: foreign (non-GC) tags, 2: informational GC tags."""
        if "gc" not in tags and "safepoint" not in tags:
            kind = 1
        elif tags.startswith("safepoint,") or _INFO_TAGS_RE.search(tags):
            kind = 2
        else:
            kind = 0
        if len(self._tag_kind) < 4096:
            self._tag_kind[tags] = kind
        return kind

    # -- lines without GC id ------------------------------------------------------------------

    def _plain_line(self, msg: str, m, layout, line_no: int, out: list, raw: str) -> int:
        self.flush_ready(out)
        c0 = msg[:1]
        if c0 == "S" and msg.startswith("Safepoint \""):
            sm = _SAFEPOINT_RE.match(msg)
            if sm is None:
                return UNKNOWN
            ev = self._new_event(
                "safepoint", self._ts(m, layout), line_no, raw,
                pause_ms=float(sm.group("total")) / 1e6, duration_ms=float(sm.group("total")) / 1e6,
                ttsp_ms=float(sm.group("reach")) / 1e6, cause=sm.group("op"), phase=SAFEPOINT_PHASE,
            )
            out.append(ev)
            return EVENT
        if c0 == "T" and msg.startswith("Total time for which"):
            sm = _STOPPED_RE.match(msg)
            if sm is None:
                return UNKNOWN
            total = num(sm.group("total")) * 1000.0
            reach = sm.group("reach")
            ev = self._new_event(
                "safepoint", self._ts(m, layout), line_no, raw, pause_ms=total, duration_ms=total,
                ttsp_ms=num(reach) * 1000.0 if reach else None, cause=self.safepoint_op,
                phase=STOPPED_PHASE,
            )
            self.safepoint_op = None
            out.append(ev)
            return EVENT
        if c0 == "E" and msg.startswith("Entering safepoint region: "):
            self.safepoint_op = msg[len("Entering safepoint region: "):].strip() or None
            return IGNORED
        if (c0 == "A" and msg.startswith("Allocation Stall (")) or (
            c0 == "R" and msg.startswith("Relocation Stall (")
        ):
            sm = _STALL_RE.match(msg)
            if sm is None:
                return UNKNOWN
            d = num(sm.group("dur"))
            ev = self._new_event(
                "allocation-stall" if c0 == "A" else "relocation-stall", self._ts(m, layout),
                line_no, raw, duration_ms=d, phase=msg.strip(), hint="zgc",
            )
            out.append(ev)
            return EVENT
        if c0 == "O" and msg.startswith("Out Of Memory ("):
            out.append(self._new_event("out-of-memory", self._ts(m, layout), line_no, raw,
                                       phase=msg.strip(), hint="zgc"))
            return EVENT
        if c0 == "U" or c0 == "I":
            c = collector_from_using(msg)
            if c is not None:
                self.o.unified_mode = True
                if self.o.collector in ("unknown", "zgc") or c != "zgc":
                    if not (self.o.collector == "zgc-generational" and c == "zgc"):
                        self.o.collector = c
                return IGNORED
        if c0 == "H":
            rm = _REGION_SIZE_RE.match(msg)
            if rm:
                try:
                    self.region_kb = size_kb(rm.group(1))
                except ValueError:
                    pass
                return IGNORED
        if c0 == "P" and msg.startswith("Promotion failed"):
            for st in self.states.values():
                if st.pause_line and "promotion-failed" not in st.flags:
                    st.flags.append("promotion-failed")
            return IGNORED
        if c0 == "T" and msg.startswith("Trigger"):
            self.trigger = msg.split(":", 1)[1].strip() if ":" in msg else msg
            return IGNORED
        if self.exit_block:
            return IGNORED  # heap summary / statistics block (multi-line)
        if msg.rstrip() in ("Heap", "GC STATISTICS:") or msg.startswith(
            ("All times are wall-clock", "=== Garbage Collection Statistics")
        ):
            self.exit_block = True
            return IGNORED
        if INFO_LINE_RE.match(msg):
            return IGNORED
        if (m is not None or self.o.unified_mode) and GENERIC_INFO_RE.match(msg):
            return IGNORED
        return UNKNOWN

    # -- GC(n) lines --------------------------------------------------------------------------

    def _state(self, gc_id: int, line_no: int, ts) -> _GcState:
        st = self.states.get(gc_id)
        if st is None:
            st = _GcState(gc_id, line_no, ts)
            self.states[gc_id] = st
            if len(self.states) > 64:  # bound memory on logs with unfinished ids
                idle = [k for k, v in self.states.items()
                        if k != gc_id and k != self.shen_open and not (v.pause_line or v.phases or v.cycle)]
                for old in idle:
                    self._drop_state(old)
                if len(self.states) > 1024:  # pathological: many never-finished events
                    for old in sorted(self.states)[:-512]:
                        self._drop_state(old)
        return st

    def _drop_state(self, gc_id: int) -> None:
        st = self.states.pop(gc_id, None)
        if st is not None and (st.pause_line or st.phases or st.cycle):
            self.o.stats.incomplete_events += 1

    def _gc_line(self, gc_id: int, rest: str, m, layout, line_no: int, out: list, raw: str) -> int:
        if not rest or rest[0] == " ":
            # indented detail lines (phase timings, worker statistics, ZGC heap table)
            return EVENT
        gen = None
        if rest[1:3] == ": " and rest[0] in "YyO":
            gen = rest[0]
            rest = rest[3:]
            if not rest or rest[0] == " ":
                return EVENT
        c0 = rest[0]
        if c0 == "P" and rest.startswith("Pause "):
            return self._pause(gc_id, rest, gen, m, layout, line_no, out, raw)
        if c0 == "C" and rest.startswith("Concurrent "):
            return self._concurrent(gc_id, rest, gen, m, layout, line_no, out, raw)
        if c0 == "C" and rest.startswith("Coalescing and filling"):
            # generational Shenandoah: concurrent old-generation phase (own GC id when alone)
            return self._concurrent(gc_id, "Concurrent " + rest, gen, m, layout, line_no, out, raw)
        if c0 == "U" and rest.startswith("User="):
            cm = _CPU_RE.match(rest)
            if cm is None:
                return UNKNOWN
            target = None
            for ev in reversed(self.ready):
                if ev.gc_id == gc_id:
                    target = ev
                    break
            if target is not None and target.user_s is None:
                target.user_s = num(cm.group(1))
                target.sys_s = num(cm.group(2))
                target.real_s = num(cm.group(3))
            self.flush_ready(out)
            return EVENT
        if gen is None and (c0 == "G" or c0 == "M") and (
            rest.startswith("Garbage Collection") or rest.startswith("Major Collection")
            or rest.startswith("Minor Collection")
        ):
            return self._zcycle(gc_id, rest, m, layout, line_no, out, raw)
        if gen is not None and (rest.startswith("Young Generation") or rest.startswith("Old Generation")):
            zm = _ZGEN_END_RE.match(rest)
            st = self._state(gc_id, line_no, self._ts(m, layout))
            if zm is not None:
                key = "young" if zm.group("name") == "Young" else "old"
                st.zgen[key] = (size_kb(zm.group("hb")), size_kb(zm.group("ha")))
            self._collector("zgc-generational")
            return EVENT
        if (c0 == "A" and rest.startswith("Allocation Stall (")) or (c0 == "R" and rest.startswith("Relocation Stall (")):
            return self._plain_line(rest, m, layout, line_no, out, raw)
        colon = rest.find(":")
        if 0 < colon < 24:
            key = rest[:colon]
            if key in _GEN_KEYS:
                gm = _GEN_RE.match(rest)
                if gm is not None:
                    st = self.states.get(gc_id) or self._state(gc_id, line_no, self._ts(m, layout))
                    g = gm.group("gen")
                    vals = (size_kb(gm.group("b")), size_kb(gm.group("a")), size_kb(gm.group("c")))
                    hint = _GEN_HINT.get(g)
                    if hint:
                        self._collector(hint)
                    if g in ("DefNew", "PSYoungGen", "ParNew"):
                        st.young = vals
                    elif g in ("Tenured", "ParOldGen", "PSOldGen", "CMS"):
                        st.old = vals
                    else:
                        st.meta = vals
                return EVENT
            if key.endswith(" regions"):
                rm = _REGIONS_RE.match(rest)
                if rm is not None:
                    st = self.states.get(gc_id) or self._state(gc_id, line_no, self._ts(m, layout))
                    if st.regions is None:
                        st.regions = {}
                    st.regions[rm.group("kind")] = (to_int(rm.group("b")), to_int(rm.group("a")))
                    self._collector("g1")
                return EVENT
            if key == "Cancelling GC":
                st = self.states.get(gc_id) or self._state(gc_id, line_no, self._ts(m, layout))
                st.cycle_flags.append("cancelled")
                if "Upgrade To Full" in rest:
                    st.cycle_flags.append("upgrade-to-full")
                    if st.pause_line:
                        st.flags.append("upgrade-to-full")
                return EVENT
            if rest[colon + 1:colon + 2] in (" ", "") and c0.isalpha():
                return EVENT  # 'Label: value' detail line
        if c0 == "P" and rest.startswith("Promotion failed"):
            st = self.states.get(gc_id) or self._state(gc_id, line_no, self._ts(m, layout))
            if "promotion-failed" not in st.flags:
                st.flags.append("promotion-failed")
            return EVENT
        if c0 == "T" and rest.startswith("To-space exhausted"):
            st = self.states.get(gc_id) or self._state(gc_id, line_no, self._ts(m, layout))
            if "to-space-exhausted" not in st.flags:
                st.flags.append("to-space-exhausted")
            return EVENT
        if _GC_DETAIL_RE.match(rest):
            return EVENT
        return UNKNOWN

    # -- pauses -------------------------------------------------------------------------------

    def _pause(self, gc_id, rest, gen, m, layout, line_no, out, raw) -> int:
        # (a summary line ends with its duration 'ms'/'s'/'us': skip the costly match on start
        # lines, which cannot match)
        em = _PAUSE_END_RE.match(rest) if rest.rstrip()[-1:] == "s" else None
        ts = self._ts(m, layout)
        if em is None:
            sm = _PAUSE_START_RE.match(rest)
            if sm is None:
                return UNKNOWN
            self.flush_ready(out)
            st = self._state(gc_id, line_no, ts)
            if st.pause_line and st.pause_raw is not None:
                self.o.stats.incomplete_events += 1  # previous pause of this id never finished
            st.reset_pause()
            st.pause_line = line_no
            st.pause_ts = ts
            st.pause_raw = raw
            if self.o.collector == "shenandoah":
                self._shen_track(st, rest.strip(), None, ts, False)
            return EVENT
        self.flush_ready(out)
        st = self.states.get(gc_id)
        if st is None:
            st = self._state(gc_id, line_no, ts)
        name = em.group("name")
        quals = _quals(em.group("quals"))
        dur = _dur_ms(em.group("dur"), em.group("unit"))
        flags = list(st.flags)
        cause = None
        hint = None
        etype = None
        extra_quals = []
        for q in quals:
            if q in _G1_YOUNG_KINDS:
                hint = "g1"
                if q == "Mixed":
                    etype = "mixed"
                elif q == "Concurrent Start":
                    flags.append("concurrent-start")
                elif q == "Prepare Mixed":
                    flags.append("prepare-mixed")
            elif q == "Evacuation Failure":
                flags.append("evacuation-failure")
            elif q in ("Major", "Minor"):
                extra_quals.append(q)
            elif cause is None:
                cause = q
            else:
                extra_quals.append(q)
        if name == "Young":
            etype = etype or "young"
        elif name == "Full":
            etype = "full"
        elif name == "Mixed":
            etype, hint = "mixed", "g1"
        elif name == "Initial Mark":
            if self.o.collector == "cms":
                etype = "initial-mark"
            else:  # G1 (JDK 9/10): a young pause that starts concurrent marking
                etype, hint = "young", "g1"
                flags.append("concurrent-start")
        elif name == "Remark":
            etype = "remark"
        elif name == "Cleanup":
            etype, hint = "cleanup", "g1"
        elif name == "Degenerated GC":
            etype, hint = "degenerated", "shenandoah"
        else:
            etype = "pause-" + slug(name)
            if name in ("Mark Start", "Mark End", "Relocate Start"):
                hint = "zgc-generational" if gen else "zgc"
            else:
                hint = "shenandoah"
            # Shenandoah qualifiers like '(unload classes)', '(Global)' are not causes
            if cause is not None and hint == "shenandoah":
                cause = None
        if cause is not None:
            if "Humongous" in cause:
                flags.append("humongous")
            if cause in ("System.gc()", "System", "Diagnostic Command"):
                if cause != "Diagnostic Command":
                    flags.append("system-gc")
            if hint is None and cause.startswith("G1 "):
                hint = "g1"
        phase = rest[: em.start("dur")].rstrip()
        if em.group("hb"):
            phase = rest[: em.start("hb")].rstrip()
        if gen:
            phase = f"{gen}: {phase}"
        first_ts = st.pause_ts if st.pause_line else ts
        first_line = st.pause_line or line_no
        ev = self._new_event(
            etype, first_ts, first_line, st.pause_raw if st.pause_line else raw, hint=hint,
            cause=cause, pause_ms=dur, duration_ms=dur, gc_id=gc_id, phase=phase,
        )
        if em.group("hb"):
            ev.heap_before_kb = size_kb(em.group("hb"))
            ev.heap_after_kb = size_kb(em.group("ha"))
            ev.heap_committed_kb = size_kb(em.group("hc"))
        if st.young:
            ev.young_before_kb, ev.young_after_kb, ev.young_committed_kb = st.young
        if st.old:
            ev.old_before_kb, ev.old_after_kb, ev.old_committed_kb = st.old
        if st.meta:
            ev.metaspace_before_kb, ev.metaspace_after_kb, ev.metaspace_committed_kb = st.meta
        if st.regions and self.region_kb:
            r = st.regions
            rk = self.region_kb
            eb, ea = r.get("Eden", (0, 0))
            sb, sa = r.get("Survivor", (0, 0))
            ob, oa = r.get("Old", (0, 0))
            hb, ha = r.get("Humongous", (0, 0))
            ab, aa = r.get("Archive", (0, 0))
            ev.young_before_kb, ev.young_after_kb = (eb + sb) * rk, (ea + sa) * rk
            ev.old_before_kb, ev.old_after_kb = (ob + hb + ab) * rk, (oa + ha + aa) * rk
        ev.flags = tuple(dict.fromkeys(flags))
        st.reset_pause()
        # A pause that runs inside another one (Serial/CMS young collection that turns into a
        # full collection, CMS remark with CMSScavengeBeforeRemark) is logged with its own GC id
        # between the start and end lines of the enclosing pause.  The application was stopped
        # once: the enclosing pause absorbs the inner one (no double counting).
        outer = None
        for sid, s2 in self.states.items():
            if sid != gc_id and s2.pause_line and 0 <= first_line - s2.pause_line <= 200:
                d = self._elapsed_ms(s2.pause_ts, first_ts)
                if d is not None and d > 1000.0:
                    # a start line whose pause never ended (e.g. cut by log rotation): stale
                    self.o.stats.incomplete_events += 1
                    s2.reset_pause()
                    continue
                outer = s2
        if outer is not None:
            outer.nested.append(ev)
            return EVENT
        if st.nested:
            self._absorb(ev, st.nested)
            st.nested = []
        self.ready.append(ev)
        if self.o.collector == "shenandoah":
            self._shen_track(st, phase, em, ts, False)
        else:
            self._maybe_forget(gc_id, st)
        return EVENT

    @staticmethod
    def _absorb(ev: GcEvent, inner: list) -> None:
        flags = list(ev.flags)
        for n in inner:
            if n.event_type == "full" and ev.event_type != "full":
                ev.event_type = "full"
                flags.append("upgrade-to-full")
            elif n.event_type == "young" and ev.event_type == "remark":
                flags.append("scavenge-before-remark")
            for f in n.flags:
                if f not in flags:
                    flags.append(f)
            for name in ("young_before_kb", "young_after_kb", "young_committed_kb", "old_before_kb",
                         "old_after_kb", "old_committed_kb", "metaspace_before_kb",
                         "metaspace_after_kb", "metaspace_committed_kb"):
                if getattr(ev, name) is None and getattr(n, name) is not None:
                    setattr(ev, name, getattr(n, name))
        ev.flags = tuple(dict.fromkeys(flags))

    # -- concurrent phases --------------------------------------------------------------------

    def _concurrent(self, gc_id, rest, gen, m, layout, line_no, out, raw) -> int:
        em = _CONC_END_RE.match(rest) if rest.rstrip()[-1:] == "s" else None  # see _pause
        ts = self._ts(m, layout)
        if em is None:
            sm = _CONC_START_RE.match(rest)
            if sm is None:
                if _GC_DETAIL_RE.match(rest):  # 'Concurrent refinement: ...' statistics
                    return EVENT
                return UNKNOWN
            self.flush_ready(out)
            st = self._state(gc_id, line_no, ts)
            name = sm.group("name")
            if name in _CYCLE_WRAPPERS:
                st.cycle = (rest.strip(), ts, line_no, raw)
                self._collector("g1")
                return EVENT
            if name == "Mark Abort":
                # G1 aborts marking (e.g. for a full GC): the open 'Concurrent Mark' phase never
                # logs its end; emit it as aborted with the duration measured so far
                st.cycle_flags.append("aborted")
                for i in range(len(st.phases) - 1, -1, -1):
                    if st.phases[i][0] == "Mark":
                        start = st.phases.pop(i)
                        del st.phases[i:]  # its open sub-phases end with it
                        ev = self._new_event(
                            "concurrent-mark", start[1], start[2], start[4], gc_id=gc_id,
                            phase="Concurrent Mark", flags=("aborted",),
                        )
                        d = self._elapsed_ms(start[1], ts)
                        if d is not None:
                            ev.concurrent_ms = ev.duration_ms = d
                        self.ready.append(ev)
                        break
                return EVENT
            level = m.group(layout.g_level) if (m is not None and layout.g_level) else None
            st.phases.append((name, ts, line_no, None, raw, level))
            if self.o.collector == "shenandoah":
                self._shen_track(st, rest.strip(), None, ts, True)
            return EVENT
        self.flush_ready(out)
        st = self.states.get(gc_id)
        if st is None:
            st = self._state(gc_id, line_no, ts)
        name = em.group("name")
        dur = _dur_ms(em.group("dur"), em.group("unit"))
        if name in _CYCLE_WRAPPERS:
            cyc = st.cycle
            flags = list(st.cycle_flags)
            if name == "Undo Cycle":
                flags.append("undo")
            ev = self._new_event(
                "concurrent-cycle", cyc[1] if cyc else ts, cyc[2] if cyc else line_no,
                cyc[3] if cyc else raw, hint="g1", duration_ms=dur, gc_id=gc_id,
                phase="Concurrent " + name,
            )
            ev.flags = tuple(dict.fromkeys(flags))
            st.cycle = None
            st.cycle_flags = []
            st.phases.clear()
            self.ready.append(ev)
            self._maybe_forget(gc_id, st)
            return EVENT
        # match the open start line of this phase (if any)
        start = None
        for i in range(len(st.phases) - 1, -1, -1):
            if st.phases[i][0] == name:
                start = st.phases.pop(i)
                break
        level = m.group(layout.g_level) if (m is not None and layout.g_level) else None
        nested = bool(st.phases)  # another phase of this GC id is still open
        if level is not None and level.strip() in ("debug", "trace"):
            nested = True
        elif level is None and not self.has_level and name in _ZGC_SUBPHASES:
            nested = True
        if self.o.collector == "shenandoah":
            self._shen_track(st, rest.strip(), em, ts, True)
        if nested:
            return EVENT
        phase = rest[: em.start("hb") if em.group("hb") else em.start("dur")].rstrip()
        if gen:
            phase = f"{gen}: {phase}"
        hint = None
        if gen:
            hint = "zgc-generational"
        ev = self._new_event(
            "concurrent-" + slug(name), start[1] if start else ts, start[2] if start else line_no,
            start[4] if start else raw, hint=hint, concurrent_ms=dur, duration_ms=dur,
            gc_id=gc_id, phase=phase,
        )
        if start is not None and start[3] == "aborted":
            ev.flags = ("aborted",)
        if em.group("hb"):
            ev.heap_before_kb = size_kb(em.group("hb"))
            ev.heap_after_kb = size_kb(em.group("ha"))
            ev.heap_committed_kb = size_kb(em.group("hc"))
        self.ready.append(ev)
        return EVENT

    def _maybe_forget(self, gc_id: int, st: _GcState) -> None:
        if not st.phases and st.cycle is None and not st.pause_line and self.shen_open != gc_id:
            self.states.pop(gc_id, None)

    # -- Shenandoah cycles (synthesised) ------------------------------------------------------

    def _shen_track(self, st: _GcState, name: str, em, ts, concurrent: bool) -> None:
        """Shenandoah logs no cycle summary: a cycle is all the GC(n) lines of one GC id."""
        if self.shen_open != st.gc_id:
            if self.shen_open is not None:
                self._close_shenandoah(self.shen_open)
            self.shen_open = st.gc_id
            st.trigger, self.trigger = self.trigger, None
        if st.shen_first_name is None:
            st.shen_first_name = name
        if concurrent:
            st.shen_has_conc = True
        if em is not None and em.group("hb"):
            st.shen_heap = (em.group("hb"), em.group("ha"), em.group("hc"))
        if ts is not None:
            st.last_ts = ts

    def _close_shenandoah(self, gc_id: int) -> None:
        self.shen_open = None
        st = self.states.get(gc_id)
        if st is None:
            return
        if st.shen_has_conc:
            ev = self._new_event(
                "concurrent-cycle", st.first_ts, st.first_line, None, hint="shenandoah",
                gc_id=gc_id, phase=st.shen_first_name, cause=st.trigger,
            )
            ev.duration_ms = self._elapsed_ms(st.first_ts, st.last_ts)
            if st.shen_heap:
                ev.heap_before_kb = size_kb(st.shen_heap[0])
                ev.heap_after_kb = size_kb(st.shen_heap[1])
                ev.heap_committed_kb = size_kb(st.shen_heap[2])
            ev.flags = tuple(dict.fromkeys(st.cycle_flags))
            self.ready.append(ev)
        st.shen_has_conc = False
        st.shen_heap = None
        st.shen_first_name = None
        self._maybe_forget(gc_id, st)

    @classmethod
    def _elapsed_ms(cls, ts_a, ts_b) -> Optional[float]:
        """Milliseconds between two line time stamps (uptime, else wall clock), or None."""
        if ts_a is None or ts_b is None:
            return None
        a, b = cls._up(ts_a), cls._up(ts_b)
        if a is not None and b is not None:
            return round((b - a) * 1000.0, 3)
        if ts_a[0] and ts_b[0]:
            wa, wb = parse_datestamp(ts_a[0]), parse_datestamp(ts_b[0])
            if wa is not None and wb is not None:
                return round((wb - wa).total_seconds() * 1000.0, 3)
        if ts_a[1] and ts_b[1]:
            try:
                return float(to_int(ts_b[1]) - to_int(ts_a[1]))
            except OverflowError:  # corrupt epoch values
                return None
        return None

    @staticmethod
    def _up(ts) -> Optional[float]:
        up = ts[2]
        if up is None:
            return None
        return num(up) if isinstance(up, str) else up

    # -- ZGC cycles ---------------------------------------------------------------------------

    def _zcycle(self, gc_id, rest, m, layout, line_no, out, raw) -> int:
        ts = self._ts(m, layout)
        em = _ZCYCLE_END_RE.match(rest)
        self.flush_ready(out)
        if em is None:
            sm = _ZCYCLE_START_RE.match(rest)
            if sm is None:
                return UNKNOWN
            st = self._state(gc_id, line_no, ts)
            st.cycle = (rest.strip(), ts, line_no, raw)
            if sm.group("name") != "Garbage":
                self._collector("zgc-generational")
            else:
                self._collector("zgc")
            return EVENT
        st = self.states.get(gc_id) or self._state(gc_id, line_no, ts)
        kind = em.group("name")
        quals = _quals(em.group("quals"))
        hint = "zgc" if kind == "Garbage" else "zgc-generational"
        cyc = st.cycle
        ev = self._new_event(
            "concurrent-cycle", cyc[1] if cyc else ts, cyc[2] if cyc else line_no,
            cyc[3] if cyc else raw, hint=hint, gc_id=gc_id, cause=quals[0] if quals else None,
            phase=rest[: em.start("hb")].rstrip(),
        )
        ev.heap_before_kb = size_kb(em.group("hb"))
        ev.heap_after_kb = size_kb(em.group("ha"))
        if em.group("dur"):
            ev.duration_ms = num(em.group("dur")) * 1000.0
        elif cyc is not None:
            ev.duration_ms = self._elapsed_ms(cyc[1], ts)
        if "young" in st.zgen:
            ev.young_before_kb, ev.young_after_kb = st.zgen["young"]
        if "old" in st.zgen:
            ev.old_before_kb, ev.old_after_kb = st.zgen["old"]
        if quals and quals[0] == "System.gc()":
            ev.flags = ("system-gc",)
        st.cycle = None
        st.zgen = {}
        self.ready.append(ev)
        self._maybe_forget(gc_id, st)
        return EVENT

    # -- end of input -------------------------------------------------------------------------

    def finish(self, out: list) -> None:
        if self.shen_open is not None:
            self._close_shenandoah(self.shen_open)
        self.flush_ready(out)
        for gc_id in list(self.states):
            st = self.states.pop(gc_id)
            if st.pause_line or st.phases or st.cycle:
                self.o.stats.incomplete_events += 1
