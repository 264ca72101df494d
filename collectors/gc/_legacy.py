"""JDK <= 8 (``-XX:+PrintGCDetails`` & co.) handler.

A legacy GC record is ``[<datestamp>: ][<uptime>: ][#<gc id>: ][<type> ... , <secs> secs]``,
with nested ``[<generation>: before->after(committed), secs]`` records.  The JVM writes other
output into the middle of a record (concurrent CMS/G1 phases, G1 ergonomics, tenuring
distribution, adaptive size policy, FLS statistics, heap printouts, safepoint statistics), so the
handler

1. cuts those embedded items out of each line (emitting concurrent-phase and safepoint events),
2. appends what remains to the open record until its brackets balance,
3. parses the completed record, and
4. attaches the indented detail lines that follow it (G1 ``[Eden: ... Heap: ...]``,
   ``[Times: ...]``) before emitting it.

A record that never completes (truncated log, or interrupted by the start of a new record) is
abandoned and its lines are counted as not understood.
"""

from __future__ import annotations

import re
from typing import Optional

from ._common import (DEFERRED, EVENT, IGNORED, INFO_LINE_RE, UNKNOWN, num, parse_datestamp, size_kb, slug, to_int,
                      wall_from_start)
from .model import STOPPED_PHASE, GcEvent

_DATE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]\d{3}[+-]\d{4}"
_UP = r"\d+[.,]\d+"
_PREFIX = rf"(?:(?P<date>{_DATE}):\s*)?(?:(?P<up>{_UP}):\s*)?(?:#(?P<gcid>\d+):\s*)?"
_PREFIX_NC = rf"(?:{_DATE}:\s*)?(?:{_UP}:\s*)?(?:#\d+:\s*)?"
_LSIZE = r"\d+(?:[.,]\d+)?\s?[BKMG]?"

# a line starting a top-level record
_RECORD_START_RE = re.compile(
    rf"{_PREFIX}\[(?P<head>Full GC|GC(?! Worker)(?![a-z])|Pause |Concurrent |CMS|PSYoungGen|DefNew|ParNew|Tenured|YG|Class Histogram)"
)
_TOP_START_RE = re.compile(rf"{_PREFIX_NC}\[(?:Full GC|GC(?! Worker)(?![a-z])(?![^\]]*concurrent-))")
_PREFIX_RE = re.compile(_PREFIX)

# embedded items (can appear anywhere in a line)
_CONC_RE = re.compile(
    rf"(?P<pfx>{_PREFIX_NC})\[(?:GC ?)?(?P<name>(?:(?:AS)?CMS-)?concurrent-[\w-]+?)"
    r"(?P<start>-start)?(?:(?:[:,]\s*(?P<a>[\d.,]+)(?:/(?P<b>[\d.,]+))?(?:\s*(?P<unit>secs?|ms))?)"
    r"|(?:,\s*(?P<dedup>[^\]]*?),\s*(?P<c>[\d.,]+)\s*secs))?\]"
    r"(?:\s*\[Times: user=(?P<tu>[\d.,]+) sys=(?P<ts>[\d.,]+), real=(?P<tr>[\d.,]+) secs\s*\])?"
)
_ERGO_RE = re.compile(rf"{_PREFIX_NC}\[G1Ergonomics \([^)]*\)[^\]\[]*\]")
_STOPPED_RE = re.compile(
    rf"(?P<pfx>{_PREFIX_NC})Total time for which application threads were stopped: "
    r"(?P<t>[\d.,]+) seconds(?:, Stopping threads took: (?P<r>[\d.,]+) seconds)?"
)
_TLAB_RE = re.compile(r"TLAB(?: totals)?: .*$")
_PRECLEAN_REF_RE = re.compile(rf"{_PREFIX_NC}\[Preclean \w+References, [\d.,]+ secs\]")
_TS_IN_SUB_RE = re.compile(rf"(?:{_DATE}:\s*)?{_UP}:\s*")
_APPTIME_RE = re.compile(rf"{_PREFIX_NC}Application time: [\d.,]+ seconds")
_ADAPTIVE_RE = re.compile(r"(?:PS)?AdaptiveSizePolicy::.*$|AdaptiveSize(?:Start|Stop):.*$")
_BEFORE_AFTER_RE = re.compile(r"(?:Before|After) GC:\s*")
_FLS_INLINE_RE = re.compile(r"(?:Before|After) GC:\s*$")
_DETAIL_LINE_RE = re.compile(rf"^(?:{_PREFIX_NC})?(?:\s{{2,}}|\s*:\s*)\[|^\s+\S")
_RESIDUE_RE = re.compile(rf"^(?:\s*(?:{_DATE}|{_UP}|#\d+)\s*:)*[\s:,]*$")
_PREFIX_ONLY_RE = re.compile(rf"^\s*{_PREFIX_NC}\s*$")
_STATS_START_RE = re.compile(r"^(?:All times are wall-clock|GC STATISTICS:|Allocation pacing accrued:)")
_HEAPBLOCK_RE = re.compile(r"\{?Heap (?:before|after) GC invocations=\d+(?: \(full \d+\))?:")
_CMS_ABORT_RE = re.compile(r"\s*CMS: abort preclean due to time\s*")
_CLASS_HISTO_RE = re.compile(r"^\s*(?:\d+:\s+\d+\s+\d+\s+\S.*|num\s+#instances.*|Total\s+\d+\s+\d+\s*)$")

# whole lines that are understood but carry no event
_LEGACY_INFO_RE = re.compile(
    r"""^(?:
      \s*$
    | (?:Java\ HotSpot|OpenJDK\ \d\d-Bit|OpenJDK\ .*VM|IBM\ J9)
    | Memory:\ \d+k\ page
    | CommandLine\ flags:
    | Desired\ survivor\ size\ \d+\ bytes
    | -\ age\s+\d+:
    | Statistics\ for\ (?:BinaryTreeDictionary|IndexedFreeLists):
    | Total\ Free\ Space:|Max\s+Chunk\ Size:|Number\ of\ Blocks:|Av\.\s+Block\s+Size:|Tree\s+Height:
    | (?:Before|After)\ GC:\s*$
    | -{6,}\s*$
    | \}\s*$
    | CMS:\ Large\ (?:block|Block)
    | size\[\d+\]\ :\ demand:
    | \s*free=\d+\ frag=
    | /proc/meminfo:|[A-Za-z_()]+:\s+\d+\ kB\s*$
    | \s+(?:Using\ \d+\ of\ \d+\ workers|Pacer\ for|Adaptive\ CSet|Collectable\ Garbage|Good\ progress|Cancelling\ GC|Failed\ to\ allocate)
    | (?:Regions:|Humongous\ object\ threshold|Max\ TLAB\ size|GC\ threads:|Shenandoah\ (?:GC\ mode|heuristics)|Initialize\ Shenandoah|Reference\ processing:|Soft\ Max\ Heap\ Size)
    | No\ shared\ spaces\ configured
    | (?:time_until_cms_gen_full|time_until_cms_start|free|contiguous_available|promotion_rate
       |cms_allocation_rate|occupancy|initiatingOccupancy|initiatingPermOccupancy
       |cms_time_since_begin|cms_time_since_end|cms_used_at_gc0_begin|cms_used_at_gc0_end
       |cms_consumption_rate|cms_duration)(?:=|\ )-?[\d.]+\s*$
    | Metaspace\ \(\w+\)\ allocation\ failed
    | Consider\ -XX:
    | Clearing\ All\ SoftReferences
    | CMSCollector\ shouldConcurrentCollect
    | GC\ locker:\ 
    | .*\[0x[0-9a-fA-F]+,\s*0x[0-9a-fA-F]+
    | \s*\w+(?:\ \w+)*\s+total\ \d+K,\ used\ \d+K
    | Shenandoah\ Heap|Reserved\ region:|Collection\ set:|Status:\ |\s+-\ (?:\[0x|map\ )|\s+\d+K\ (?:total|max),
    | \s*(?:AdaptiveSize|PSAdaptiveSize|PSYoungGen::|ParallelScavengeHeap::|PSAdaptiveSizePolicy::|\s*avg_|\s+[a-z_]+(?:\s+[a-z_]+)*:?\s+[\d.\-]+|\s*survived:|\s*[a-z_]+:\s+[\d.\-]+)
    | Heap\s*$
    | Heap\ (?:before|after)\ GC\ invocations
    | \{Heap\ before\ GC\ invocations
    | \s+(?:par\ new|def\ new|concurrent\ mark-sweep|concurrent-mark-sweep\ perm|tenured|compacting\ perm|PSYoungGen|PSOldGen|ParOldGen|PSPermGen|garbage-first|Shenandoah|ASPSYoungGen|ASParNew|ASCMS)\b
    | \s+(?:eden|from|to|object|the|ro|rw)\s+space\b
    | \s+(?:region\ size|Metaspace|class\ space|No\ shared\ spaces)\b
    | \s*\d+\s+x\s+\d+\w?\s+regions?
    | \s+\S+\ +space\b
    | (?:Dumping\ heap|Heap\ dump\ file\ created)
    | java\.lang\.OutOfMemoryError
    | \d{4}-\d\d-\d\d\ \d\d:\d\d:\d\d\ GC\ log\ file\ (?:created|has\ reached)
    | .*GC\ log\ file\ (?:created|has\ reached\ the\ maximum\ size)
    | \s*(?:Heap\ Parameters|Max\ heap|Initial\ heap|Region\ size|Heap\ regions|Humongous\ object)
    )""",
    re.X,
)

# record parsing
_TIMES_RE = re.compile(r"\[Times: user=([\d.,]+) sys=([\d.,]+), real=([\d.,]+) secs\s*\]")
_TRAILING_TIMES_RE = re.compile(r"\s*\[Times:[^\]]*\]")
_BRACKETS_RE = re.compile(r"[\[\]]")
_INNER_RE = re.compile(r"\[([^\[\]]*)\]")
_SUB_RE = re.compile(
    rf"^\s*(?P<name>[A-Za-z][\w]*(?: [A-Z][\w]*)?)\s*(?P<q>(?:\s*\([^()]*\))*)\s*:\s*"
    rf"(?P<b>{_LSIZE})(?:\((?P<cb>{_LSIZE})\))?->(?P<a>{_LSIZE})\((?P<c>{_LSIZE})\)"
    r"(?:[^,]*,\s*(?P<t>[\d.,]+)\s*secs)?"
)
_CMS_PHASE_RE = re.compile(rf"^\s*\d+ CMS-(?P<k>initial-mark|remark): (?P<u>{_LSIZE})\((?P<c>{_LSIZE})\)")
_YG_RE = re.compile(r"^\s*YG occupancy: (?P<u>\d+) K \((?P<c>\d+) K\)")
_G1_DETAIL_RE = re.compile(
    rf"Eden: (?P<eb>{_LSIZE})\((?P<ecb>{_LSIZE})\)->(?P<ea>{_LSIZE})\((?P<eca>{_LSIZE})\)\s+"
    rf"Survivors: (?P<sb>{_LSIZE})->(?P<sa>{_LSIZE})\s+"
    rf"Heap: (?P<hb>{_LSIZE})\((?P<hcb>{_LSIZE})\)->(?P<ha>{_LSIZE})\((?P<hc>{_LSIZE})\)"
)
_HEAP_TOTAL_RE = re.compile(rf"(?<![\d.,])(?P<b>{_LSIZE})(?:\((?P<cb>{_LSIZE})\))?->(?P<a>{_LSIZE})\((?P<c>{_LSIZE})\)")
_SECS_RE = re.compile(r"(?<![\d.,])(\d+[.,]\d+)\s*(secs|ms)\b")
_HEAD_RE = re.compile(r"^\s*(?P<head>Class Histogram|Full GC|GC--|GC pause|GC remark|GC cleanup|GC|Pause [A-Z][\w ]*?|Concurrent [\w ]+?)(?=[\s(\[:,\d]|$)")
_OCCUPANCY_RE = re.compile(rf"(?<![>\d.])({_LSIZE})\(({_LSIZE})\),")
_PAREN_RE = re.compile(r"\(((?:[^()]|\([^()]*\))*)\)")

_YOUNG_GENS = {"DefNew", "ParNew", "PSYoungGen", "ASParNew", "ASPSYoungGen", "YG"}
_OLD_GENS = {"Tenured", "CMS", "PSOldGen", "ParOldGen", "ASCMS"}
_PERM_GENS = {"Perm", "PSPermGen", "CMS Perm", "Metaspace", "Class"}
_GEN_COLLECTOR = {
    "DefNew": "serial", "Tenured": "serial", "ParNew": "cms", "CMS": "cms", "ASParNew": "cms",
    "ASCMS": "cms", "PSYoungGen": "parallel", "PSOldGen": "parallel", "ParOldGen": "parallel",
    "ASPSYoungGen": "parallel",
}
_G1_TYPES = {"young", "mixed", "partial", "initial-mark", "to-space exhausted", "to-space overflow"}


# detail-line fast path (LegacyHandler.handle): substrings the general path acts on, and the
# detail line shapes it covers (values: digits and a fixed vocabulary, so no marker can hide
# there; markers ending in ':' end within the label group)
_DETAIL_MARKERS = (
    "concurrent-", "G1Ergonomics", "Total time for which", "Application time:", "AdaptiveSize",
    "abort preclean", " GC:", "TLAB", "[Preclean ", "GC invocations=", "Eden:", "Metaspace:",
    "Perm:", "[Times:",
)
_FAST_DETAIL_RE = re.compile(
    r"[ \t]*(\[[A-Z][A-Za-z ]*(?: \(ms\))?:)"
    r"(?:(?: +[\d.]+)+(?: ms(?:, GC Workers: \d+)?)?| Min: [\d.]+, Avg: [\d.]+, Max: [\d.]+, Diff: [\d.]+(?:, Sum: [\d.]+)?)"
    r"\][ \t]*[\r\n]*\Z"
)
_DETAIL_LABELS: dict = {}
_FAST_TIMES_RE = re.compile(
    r"[ \t]*\[Times: user=(\d+\.\d+) sys=(\d+\.\d+), real=(\d+\.\d+) secs\][ \t]*[\r\n]*\Z", re.ASCII
)
_FAST_EDEN_RE = re.compile(
    r"[ \t]*\[" + _G1_DETAIL_RE.pattern + r"\][ \t]*[\r\n]*\Z"
)


def _detail_label_ok(label: str) -> bool:
    ok = not any(m in " " + label for m in _DETAIL_MARKERS)
    if len(_DETAIL_LABELS) < 1024:
        _DETAIL_LABELS[label] = ok
    return ok


# one-line young collection records, e.g. '2012-10-19T20:56:16.875+0100: 8852.858: [GC 8852.858:
# [DefNew: 18098K->1097K(19136K), 0.0058500 secs] 41557K->24556K(260032K), 0.0059610 secs]
# [Times: user=0.00 sys=0.00, real=0.01 secs]' -- see LegacyHandler._fast_young.  Sizes are
# whole KiB (<= 15 digits: size_kb's float conversion is exact there).
_FAST_YOUNG_RE = re.compile(
    rf"{_PREFIX}\[GC(?: \((?P<cause>[A-Za-z][\w .]*(?:\(\))?)\))? ?(?:{_DATE}: )?(?:{_UP}: )?"
    r"\[(?P<gen>DefNew|ParNew|PSYoungGen): (?P<yb>\d{1,15})K->(?P<ya>\d{1,15})K\((?P<yc>\d{1,15})K\)"
    r"(?:, \d+\.\d+ secs)?\] (?P<hb>\d{1,15})K->(?P<ha>\d{1,15})K\((?P<hc>\d{1,15})K\), (?P<t>\d+\.\d+) secs\]"
    r"(?: \[Times: user=(?P<tu>\d+\.\d+) sys=(?P<ts>\d+\.\d+), real=(?P<tr>\d+\.\d+) secs\])?[ \t]*[\r\n]*\Z",
    re.ASCII,
)
_FAST_CAUSES: dict = {}
# a whole PrintGCApplicationStoppedTime line (LegacyHandler._fast_stopped)
_FAST_STOPPED_RE = re.compile(
    rf"(?P<body>{_PREFIX}Total time for which application threads were stopped: (\d+\.\d+) seconds"
    r"(?:, Stopping threads took: (\d+\.\d+) seconds)?)[ \t]*[\r\n]*\Z",
    re.ASCII,
)


def _fast_cause(q: str):
    """(cause, flags) of a record cause as _parse_record derives them, or False when the cause
    needs the general path (G1 kinds, sizes, markers _extract acts on, CMS phase names)."""
    ql = q.strip()
    text = f" ({q}) "
    if (
        not ql or ql in _G1_TYPES or ql[-1] in "KMGB" or ql == "CMS Initial Mark"
        or any(m in text for m in _DETAIL_MARKERS)
        or any(m in text for m in ("concurrent mode failure", "concurrent mode interrupted", "promotion failed"))
    ):
        info = False
    else:
        flags = []
        if ql in ("System.gc()", "System"):
            flags.append("system-gc")
        if "Humongous" in ql:
            flags.append("humongous")
        info = (ql, tuple(flags))
    if len(_FAST_CAUSES) < 256:
        _FAST_CAUSES[q] = info
    return info


_STARTED = GcEvent(event_type="started")  # sentinel: a start marker record, no event


def _g1_detail(ev: GcEvent, dm) -> None:
    """Sizes of a G1 '[Eden: ... Survivors: ... Heap: ...]' detail line (_G1_DETAIL_RE)."""
    eb, ea = size_kb(dm.group("eb")), size_kb(dm.group("ea"))
    sb, sa = size_kb(dm.group("sb")), size_kb(dm.group("sa"))
    ev.young_before_kb, ev.young_after_kb = eb + sb, ea + sa
    ev.young_committed_kb = size_kb(dm.group("eca")) + sa
    ev.heap_before_kb = size_kb(dm.group("hb"))
    ev.heap_after_kb = size_kb(dm.group("ha"))
    ev.heap_committed_kb = size_kb(dm.group("hc"))
    # (old = heap - young is not derived: G1 reports survivor *capacity*)


class _Record:
    __slots__ = ("pieces", "depth", "lines", "first_line", "raw")

    def __init__(self, first_line: int, raw: str):
        self.pieces: list[str] = []
        self.depth = 0
        self.lines: list[tuple[int, str]] = []
        self.first_line = first_line
        self.raw = raw


def _conc_type(base: str) -> str:
    """'concurrent-mark' -> 'concurrent-mark': the logged name as an event type slug (real
    names already are; a corrupt one, e.g. with non-ASCII word characters, is normalised)."""
    rest = base[len("concurrent-"):]
    if _CONC_NAME_OK.fullmatch(rest):
        return base
    return "concurrent-" + (slug(rest) or "unknown")


_CONC_NAME_OK = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _ms(value: str, unit: Optional[str]) -> float:
    v = num(value)
    return v if unit == "ms" else v * 1000.0


class LegacyHandler:
    def __init__(self, owner):
        self.o = owner
        self.rec: Optional[_Record] = None
        self.last: Optional[GcEvent] = None  # completed record waiting for its detail lines
        self.detail_depth = 0
        self.heap_block = False
        self.stats_block = False  # Shenandoah statistics / pacing report (JDK 8)
        self.conc_starts: dict[str, tuple] = {}
        self.saw_cms = False
        self.saw_g1 = False
        self.cms_next = "initial-mark"  # for occupancy-only CMS records (no PrintGCDetails)
        self.first_prefix = None  # (datestamp, uptime) of the first/last time-stamped line
        self.last_prefix = None

    # -- helpers ------------------------------------------------------------------------------

    def _stamp(self, ev: GcEvent, date: Optional[str], up: Optional[str]) -> None:
        if up:
            ev.uptime_s = num(up)
        if date:
            ev.wall_time = parse_datestamp(date)
        elif self.o.jvm_start is not None:
            ev.wall_time = wall_from_start(self.o.jvm_start, ev.uptime_s)

    def _collector(self, hint: Optional[str]) -> str:
        c = self.o.collector
        if hint and (c == "unknown" or (c == "serial" and hint == "cms")):
            self.o.collector = c = hint
        return c

    def span(self):
        if self.first_prefix is None:
            return None
        a, b = GcEvent("x"), GcEvent("x")
        self._stamp(a, *self.first_prefix)
        self._stamp(b, *self.last_prefix)
        return (a.uptime_s, a.wall_time), (b.uptime_s, b.wall_time)

    def flush(self, out: list) -> None:
        if self.last is not None:
            out.append(self.last)
            self.last = None
        self.detail_depth = 0

    # -- embedded items -----------------------------------------------------------------------

    def _extract(self, s: str, line_no: int, out: list, in_record: bool) -> str:
        """Cut embedded items out of ``s``; emits their events; returns the remainder."""
        if "concurrent-" in s:
            s = _CONC_RE.sub(lambda m: self._conc(m, line_no, out, in_record), s)
        if "G1Ergonomics" in s:
            s = _ERGO_RE.sub("", s)
        if "Total time for which" in s:
            s = _STOPPED_RE.sub(lambda m: self._stopped(m, line_no, out, in_record), s)
        if "Application time:" in s:
            s = _APPTIME_RE.sub("", s)
        if "AdaptiveSize" in s:
            s = _ADAPTIVE_RE.sub("", s)
        if "abort preclean" in s:
            s = _CMS_ABORT_RE.sub("", s)
        if " GC:" in s:
            s = _BEFORE_AFTER_RE.sub("", s)
        if "TLAB" in s:
            s = _TLAB_RE.sub("", s)
        if "[Preclean " in s:
            s = _PRECLEAN_REF_RE.sub("", s)
        return s

    def _emit_side(self, ev: GcEvent, out: list, in_record: bool) -> None:
        # events found inside an open record are emitted before it (they happened while the
        # record was being written); outside a record, after the pending detail lines
        if in_record:
            out.append(ev)
        else:
            self.flush(out)
            self.last = ev  # '[Times: ...]' / dedup statistics may follow

    def _conc(self, m, line_no: int, out: list, in_record: bool) -> str:
        name = m.group("name")
        base = name[name.index("concurrent-"):]
        if base.endswith("-end"):
            base = base[:-4]
        pfx = _PREFIX_RE.match(m.group("pfx"))
        date, up = pfx.group("date"), pfx.group("up")
        if "CMS-" in name:
            self.saw_cms = True
            self._collector("cms")
        else:
            self.saw_g1 = True
            self._collector("g1")
        if m.group("start"):
            self.conc_starts[base] = (date, up, line_no)
            return ""
        wall = m.group("b") or m.group("a") or m.group("c")
        if wall is None:
            # markers without a duration ('concurrent-mark-abort', '-reset-for-overflow')
            if base.endswith("-abort"):
                phase = base[:-6]
                start = self.conc_starts.pop(phase, None)
                ev = GcEvent(
                    event_type=_conc_type(phase), collector=self.o.collector, phase=name,
                    flags=("aborted",), source_line=start[2] if start else line_no,
                )
                if start:
                    self._stamp(ev, start[0], start[1])
                    if start[1] and up:
                        ev.concurrent_ms = ev.duration_ms = round((num(up) - num(start[1])) * 1000.0, 3)
                else:
                    self._stamp(ev, date, up)
                self._emit_side(ev, out, in_record)
            return ""
        unit = m.group("unit")
        dur = _ms(wall, "ms" if unit == "ms" else "secs")
        start = self.conc_starts.pop(base, None)
        ev = GcEvent(
            event_type=_conc_type(base),
            collector=self.o.collector,
            concurrent_ms=dur,
            duration_ms=dur,
            phase=name,
            source_line=start[2] if start else line_no,
        )
        if start:
            self._stamp(ev, start[0], start[1])
        else:
            self._stamp(ev, date, up)
        if m.group("tu"):
            ev.user_s, ev.sys_s, ev.real_s = num(m.group("tu")), num(m.group("ts")), num(m.group("tr"))
        if self.o.keep_raw:
            ev.raw = m.group(0)
        self._emit_side(ev, out, in_record)
        return ""

    def _stopped(self, m, line_no: int, out: list, in_record: bool) -> str:
        pfx = _PREFIX_RE.match(m.group("pfx"))
        t = num(m.group("t")) * 1000.0
        r = m.group("r")
        ev = GcEvent(
            event_type="safepoint", collector=self.o.collector, pause_ms=t, duration_ms=t,
            ttsp_ms=num(r) * 1000.0 if r else None, source_line=line_no, phase=STOPPED_PHASE,
        )
        self._stamp(ev, pfx.group("date"), pfx.group("up"))
        if self.o.keep_raw:
            ev.raw = m.group(0)
        self._emit_side(ev, out, in_record)
        return ""

    # -- main entry ---------------------------------------------------------------------------

    def handle(self, line: str, line_no: int, out: list) -> int:
        c0 = line[:1]
        if self.rec is None and not self.heap_block and not self.stats_block:
            if c0 == " " or c0 == "\t":
                if self.last is not None or self.detail_depth > 0:
                    # Fast path for the indented detail lines of the pending event (G1 phase
                    # timings: most lines of a G1 -XX:+PrintGCDetails log).  For a line of the
                    # common shape '   [Label (ms): Min: 1.0, Avg: ...]' / '   [Label: 0.5 ms]'
                    # whose label holds none of the substrings the general path acts on
                    # (_DETAIL_MARKERS, checked once per label), the general path below only
                    # counts its brackets, which balance.
                    fm = _FAST_DETAIL_RE.match(line)
                    if fm is not None:
                        ok = _DETAIL_LABELS.get(fm.group(1))
                        if ok is None:
                            ok = _detail_label_ok(fm.group(1))
                        if ok:
                            return EVENT
                    else:
                        # the pending event's '[Times: ...]' / G1 '[Eden: ...]' line in its
                        # usual shape: what _detail() does with it, without the generic checks
                        fm = _FAST_TIMES_RE.match(line)
                        if fm is not None:
                            ev = self.last
                            if ev is not None and ev.user_s is None:
                                ev.user_s, ev.sys_s, ev.real_s = float(fm[1]), float(fm[2]), float(fm[3])
                            return EVENT
                        fm = _FAST_EDEN_RE.match(line)
                        if fm is not None:
                            if self.last is not None:
                                _g1_detail(self.last, fm)
                            return EVENT
            elif c0 == "[" and self.last is not None:
                # the same detail lines at column 0 (JDK 6/7 G1, some platforms): the general
                # path hands them to _detail() unless they look like a record start
                fm = _FAST_DETAIL_RE.match(line)
                if fm is not None:
                    ok = _DETAIL_LABELS.get(fm.group(1))
                    if ok is None:
                        ok = _detail_label_ok(fm.group(1))
                    if ok and _TOP_START_RE.match(line) is None:
                        return EVENT
                elif line.startswith("[Times: "):
                    fm = _FAST_TIMES_RE.match(line)
                    if fm is not None:
                        ev = self.last
                        if ev.user_s is None:
                            ev.user_s, ev.sys_s, ev.real_s = float(fm[1]), float(fm[2]), float(fm[3])
                        return EVENT
                elif line.startswith("[Eden: "):
                    fm = _FAST_EDEN_RE.match(line)
                    if fm is not None:
                        _g1_detail(self.last, fm)
                        return EVENT
            if c0.isdigit() or line.startswith("[GC"):
                # Fast path for complete one-line young collections (see _fast_young).
                fm = _FAST_YOUNG_RE.match(line)
                if fm is not None:
                    ev = self._fast_young(fm, line, line_no)
                    if ev is not None:
                        self.flush(out)
                        self.last = ev
                        return EVENT
                elif "Total time for which" in line:
                    fm = _FAST_STOPPED_RE.match(line)
                    if fm is not None:
                        return self._fast_stopped(fm, line_no, out)
        s = line.rstrip("\r\n")
        if s[:1].isdigit():
            pm = _PREFIX_RE.match(s)
            if pm.end():
                if self.first_prefix is None:
                    self.first_prefix = (pm.group("date"), pm.group("up"))
                self.last_prefix = (pm.group("date"), pm.group("up"))
        rec = self.rec
        # heap printouts (PrintHeapAtGC, exit summary) contain unbalanced '[0x..., 0x...)'
        if self.heap_block:
            st = s.strip()
            if st == "}" or st.startswith("}"):
                self.heap_block = "Heap before GC invocations=" in st  # '}  {Heap before ...'
                return IGNORED if rec is None else self._rec_add_ignored(rec)
            if not _RECORD_START_RE.match(s) and not (rec is not None and s.lstrip().startswith((",", ":"))):
                n_out = len(out)
                self._extract(s, line_no, out, rec is not None)  # concurrent phases in the block
                if rec is not None:
                    rec.lines.append((line_no, None))
                    return DEFERRED
                return EVENT if len(out) > n_out else IGNORED
            self.heap_block = False
        if self.stats_block:
            if _RECORD_START_RE.match(s) or "Total time for which" in s:
                self.stats_block = False
            elif s.startswith(", [Metaspace:"):
                return EVENT  # metaspace line of the last JDK 8 Shenandoah cycle
            else:
                return IGNORED
        hb = _HEAPBLOCK_RE.search(s) if "GC invocations=" in s else None
        if hb is not None:
            self.heap_block = True
            s = s[: hb.start()]
            if _PREFIX_ONLY_RE.match(s):
                if rec is not None:
                    rec.lines.append((line_no, None))
                    return DEFERRED
                return IGNORED
        if rec is not None:
            return self._continue(rec, s, line_no, out)
        # a fresh line
        c0 = s[:1]
        if (self.last is not None or self.detail_depth > 0) and _DETAIL_LINE_RE.match(s) and not _RECORD_START_RE.match(s):
            return self._detail(self._extract(s, line_no, out, True), line_no, out)
        if c0 == " " or c0 == "\t":
            st = s.lstrip()
            if st.startswith("[") or self.detail_depth > 0:
                if self.last is not None or self.detail_depth > 0:
                    return self._detail(s, line_no, out)
            if self.detail_depth == 0 and _CLASS_HISTO_RE.match(s):
                return IGNORED
        if c0 == "[" and self.last is not None and not _TOP_START_RE.match(s):
            return self._detail(s, line_no, out)  # JDK 6 G1 details at column 0
        s2 = self._extract(s, line_no, out, False)
        if s2 is not s and _RESIDUE_RE.match(s2):
            return EVENT
        sm = _RECORD_START_RE.match(s2)
        if sm is not None:
            if sm.group("head") != "Class Histogram":
                self.flush(out)
            rec = _Record(line_no, line)
            self.rec = rec
            return self._continue(rec, s2, line_no, out, extracted=True)
        if s2.lstrip().startswith(("[Times:", "[Eden:", "[Metaspace:")) and self.last is not None:
            return self._detail(s2, line_no, out)
        if _STATS_START_RE.match(s2):
            self.flush(out)
            self.stats_block = True
            return IGNORED
        if _LEGACY_INFO_RE.match(s2) or INFO_LINE_RE.match(s2) or _CLASS_HISTO_RE.match(s2):
            return IGNORED
        if s2 is not s:
            # something was extracted but an unknown remainder is left
            return UNKNOWN
        return UNKNOWN

    def _rec_add_ignored(self, rec: _Record) -> int:
        rec.lines.append((0, None))  # an ignored line inside an open record
        return DEFERRED

    def _detail(self, s: str, line_no: int, out: list) -> int:
        ev = self.last
        if ev is not None:
            if "Eden:" in s:
                dm = _G1_DETAIL_RE.search(s)
                if dm is not None:
                    _g1_detail(ev, dm)
            if "Metaspace:" in s or "Perm:" in s:
                for inner in _INNER_RE.findall(s):
                    sm = _SUB_RE.match(inner)
                    if sm and sm.group("name") in _PERM_GENS:
                        ev.metaspace_before_kb = size_kb(sm.group("b"))
                        ev.metaspace_after_kb = size_kb(sm.group("a"))
                        ev.metaspace_committed_kb = size_kb(sm.group("c"))
            if "[Times:" in s and ev.user_s is None:
                tm = _TIMES_RE.search(s)
                if tm:
                    ev.user_s, ev.sys_s, ev.real_s = num(tm.group(1)), num(tm.group(2)), num(tm.group(3))
        self.detail_depth += s.count("[") - s.count("]")
        if self.detail_depth < 0:
            self.detail_depth = 0
        return EVENT

    def _fast_young(self, fm, line: str, line_no: int, track: bool = True) -> Optional[GcEvent]:
        """The event of a complete one-line young collection record matched by _FAST_YOUNG_RE
        (Serial/ParNew/Parallel young GCs: most records of those logs), or None to leave the
        line to the general path.  Builds exactly what handle() -> _continue() ->
        _parse_record() build for such a line, without their generic bracket walking."""
        date, up, gcid, q, gen, yb, ya, yc, hb, ha, hc, t, tu, ts, tr = fm.groups()
        flags = ()
        cause = None
        if q is not None:
            info = _FAST_CAUSES.get(q)
            if info is None:
                info = _fast_cause(q)
            if info is False:
                return None
            cause, flags = info
        pause = float(t) * 1000.0
        ev = GcEvent(
            "young", self._collector(_GEN_COLLECTOR[gen]), None, None, cause, pause, None, pause,
            int(hb), int(ha), int(hc), int(yb), int(ya), int(yc),
            flags=flags, phase="GC", source_line=line_no,
        )
        if gcid is not None:
            ev.gc_id = to_int(gcid)
        if up is not None or date is not None:
            if track:  # the time span is tracked from each line's prefix (see handle())
                if self.first_prefix is None:
                    self.first_prefix = (date, up)
                self.last_prefix = (date, up)
            self._stamp(ev, date, up)
        elif self.o.jvm_start is not None:
            self._stamp(ev, date, up)
        if tu is not None:
            ev.user_s, ev.sys_s, ev.real_s = float(tu), float(ts), float(tr)
        if self.o.keep_raw:
            ev.raw = line.rstrip("\r\n")
        return ev

    def _fast_stopped(self, fm, line_no: int, out: list) -> int:
        """A whole '<prefix>Total time for which application threads were stopped: ...' line
        (PrintGCApplicationStoppedTime): what _extract() -> _stopped() and the residue check
        of handle() do with it."""
        _body, date, up, _gcid, t, r = fm.groups()
        if date is not None or up is not None:
            if self.first_prefix is None:
                self.first_prefix = (date, up)
            self.last_prefix = (date, up)
        pause = float(t) * 1000.0
        ev = GcEvent(
            "safepoint", self.o.collector, None, None, None, pause, None, pause,
            ttsp_ms=float(r) * 1000.0 if r else None, source_line=line_no, phase=STOPPED_PHASE,
        )
        self._stamp(ev, date, up)
        if self.o.keep_raw:
            ev.raw = fm.group("body")
        self._emit_side(ev, out, False)
        return EVENT

    # -- records ------------------------------------------------------------------------------

    def _continue(self, rec: _Record, s: str, line_no: int, out: list, extracted: bool = False) -> int:
        if not extracted:
            # a new top-level record while one is open: the open one was truncated -- except
            # the young collection that CMS runs inside its remark (CMSScavengeBeforeRemark)
            first = rec.pieces[0] if rec.pieces else ""
            if _TOP_START_RE.match(s) and not (
                ("YG occupancy" in first or "CMS Final Remark" in first)
                and "Full GC" not in s[:80]
                and sum(p.count("[GC") for p in rec.pieces) < 2
            ):
                self._abandon(rec)
                return self.handle(s, line_no, out)
            if not s.lstrip().startswith((",", ":", "[")) and _LEGACY_INFO_RE.match(s):
                rec.lines.append((line_no, None))
                return DEFERRED
            if _CLASS_HISTO_RE.match(s):
                rec.lines.append((line_no, None))
                return DEFERRED
            s = self._extract(s, line_no, out, True)
        rec.lines.append((line_no, s))
        # find where the outermost record closes
        depth = rec.depth
        close = -1
        if "[" in s or "]" in s:
            for bm in _BRACKETS_RE.finditer(s):
                if bm.group() == "[":
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        close = bm.start()
                        break
        if close < 0:
            rec.pieces.append(s)
            rec.depth = depth
            if len(rec.lines) > 400:  # runaway record: give up
                self._abandon(rec)
            return DEFERRED
        # the record closes on this line; a trailing [Times: ...] belongs to it
        rest = s[close + 1:]
        tm = _TRAILING_TIMES_RE.match(rest) if "[Times" in rest else None
        if tm:
            close += tm.end()
            rest = rest[tm.end():]
        rec.pieces.append(s[: close + 1])
        self.rec = None
        text = "".join(rec.pieces)
        ev = None
        if len(rec.pieces) > 1 and text[-1:] == "]":
            # a young collection split over lines by PrintTenuringDistribution & co. reads
            # like a one-line one once joined (same result as _parse_record, faster)
            fm = _FAST_YOUNG_RE.match(text)
            if fm is not None:
                ev = self._fast_young(fm, rec.raw, rec.first_line, track=False)
        if ev is None:
            ev = self._parse_record(text, rec)
        st = self.o.stats
        if ev is None:
            for ln, txt in rec.lines[:-1]:
                if txt is None:
                    st.lines_ignored += 1
                elif txt is not False:
                    st.add_unknown(ln, txt)
            code = UNKNOWN
        else:
            if ev is not _STARTED:
                self.flush(out)
                self.last = ev
            for ln, txt in rec.lines[:-1]:
                if txt is None:
                    st.lines_ignored += 1
                elif txt is not False:
                    st.lines_event += 1
            code = EVENT
        rest = rest.strip()
        if rest and _RECORD_START_RE.match(rest):
            # another record starts on the same line (rare); it must not count the line again
            self.handle(rest, line_no, out)
            if self.rec is not None and self.rec.lines and self.rec.lines[0][0] == line_no:
                self.rec.lines[0] = (line_no, False)
        return code

    def _abandon(self, rec: _Record) -> None:
        st = self.o.stats
        for ln, txt in rec.lines:
            if txt is None:
                st.lines_ignored += 1
            elif txt is not False:
                st.add_unknown(ln, txt)
        st.incomplete_events += 1
        self.rec = None

    def finish(self, out: list) -> None:
        if self.rec is not None:
            self._abandon(self.rec)
        self.flush(out)

    # -- record parser ------------------------------------------------------------------------

    def _parse_record(self, text: str, rec: _Record) -> Optional[GcEvent]:
        pm = _PREFIX_RE.match(text)
        date, up, gcid = pm.group("date"), pm.group("up"), pm.group("gcid")
        body = text[pm.end():]
        times = None
        if "[Times:" in body:
            all_times = list(_TIMES_RE.finditer(body))
            if all_times:
                times = all_times[-1]  # the record's own; earlier ones belong to nested records
                body = _TIMES_RE.sub("", body)
        body = body.strip()
        if not (body.startswith("[") and body.endswith("]")):
            return None
        inner = body[1:-1]
        subs: list[str] = []
        while True:
            found = _INNER_RE.findall(inner)
            if not found:
                break
            subs.extend(found)
            inner = _INNER_RE.sub(" ", inner)
        top = inner
        if "[" in top or "]" in top:
            return None
        hm = _HEAD_RE.match(top)
        if hm is None:
            return None
        if hm.group("head") == "Class Histogram":
            return _STARTED  # -XX:+PrintClassHistogram report: understood, no event
        if top.rstrip().endswith(", start"):
            # JDK 8 Shenandoah '[Pause Init Mark, start]': the phase begins; the record that
            # ends it ('[Pause Init Mark, 3.341 ms]') is the event
            self.conc_starts[top.strip()[:-7]] = (date, up, rec.first_line)
            return _STARTED
        head = hm.group("head")
        after_head = top[hm.end():]
        quals = _PAREN_RE.findall(after_head.split("->")[0]) if after_head else []
        flags: list[str] = []
        cause = None
        g1_kinds = []
        for q in quals:
            ql = q.strip()
            if ql in _G1_TYPES:
                g1_kinds.append(ql)
            elif ql.endswith("K") or ql.endswith("M") or ql.endswith("G") or ql.endswith("B"):
                continue  # a committed size '(16M)'
            elif cause is None and ql:
                cause = ql
        # pause: the record's own ', N secs' (outside the nested records)
        secs = _SECS_RE.findall(top)
        pause = _ms(secs[-1][0], secs[-1][1]) if secs else None
        heaps = list(_HEAP_TOTAL_RE.finditer(top))
        ev = GcEvent(event_type="young", source_line=rec.first_line, pause_ms=pause, duration_ms=pause, cause=cause)
        if heaps:
            h = heaps[-1]
            ev.heap_before_kb = size_kb(h.group("b"))
            ev.heap_after_kb = size_kb(h.group("a"))
            ev.heap_committed_kb = size_kb(h.group("c"))
        hint = None
        old_collected = False
        young_sub = False
        for sub in subs:
            if sub.count(":") > 1 and sub[:1] != " ":
                sub = _TS_IN_SUB_RE.sub("", sub)
            sm = _SUB_RE.match(sub)
            if sm is not None:
                name = sm.group("name").strip()
                q = sm.group("q") or ""
                vals = (size_kb(sm.group("b")), size_kb(sm.group("a")), size_kb(sm.group("c")))
                if name in _YOUNG_GENS:
                    young_sub = True
                    ev.young_before_kb, ev.young_after_kb, ev.young_committed_kb = vals
                    hint = hint or _GEN_COLLECTOR.get(name)
                    if "promotion failed" in q:
                        flags.append("promotion-failed")
                elif name in _OLD_GENS:
                    ev.old_before_kb, ev.old_after_kb, ev.old_committed_kb = vals
                    if name in ("CMS", "ASCMS"):
                        hint = "cms"
                    elif hint is None:
                        hint = _GEN_COLLECTOR.get(name)
                    if sm.group("t"):
                        old_collected = True
                    if "concurrent mode failure" in q:
                        flags.append("concurrent-mode-failure")
                    if "concurrent mode interrupted" in q:
                        flags.append("concurrent-mode-interrupted")
                elif name in _PERM_GENS or name.endswith("Perm"):
                    ev.metaspace_before_kb, ev.metaspace_after_kb, ev.metaspace_committed_kb = vals
                continue
            cm = _CMS_PHASE_RE.match(sub)
            if cm is not None:
                hint = "cms"
                ev.event_type = cm.group("k")
                u = size_kb(cm.group("u"))
                ev.old_before_kb = ev.old_after_kb = u
                ev.old_committed_kb = size_kb(cm.group("c"))
                continue
            ym = _YG_RE.match(sub)
            if ym is not None:
                ev.young_before_kb = ev.young_after_kb = to_int(ym.group("u"))
                ev.young_committed_kb = to_int(ym.group("c"))
        if "concurrent mode failure" in text and "concurrent-mode-failure" not in flags:
            flags.append("concurrent-mode-failure")
        if "concurrent mode interrupted" in text and "concurrent-mode-interrupted" not in flags:
            flags.append("concurrent-mode-interrupted")
        if "promotion failed" in text and "promotion-failed" not in flags:
            flags.append("promotion-failed")
        # event type
        if ev.event_type == "initial-mark":
            self.cms_next = "remark"
        elif ev.event_type == "remark":
            self.cms_next = "initial-mark"
        if head == "Full GC":
            ev.event_type = "full"
            self.cms_next = "initial-mark"
        elif head == "GC--":
            ev.event_type = "young"
            flags.append("promotion-failed")
        elif head == "GC pause":
            hint = "g1"
            if "mixed" in g1_kinds or "partial" in g1_kinds:
                ev.event_type = "mixed"
            else:
                ev.event_type = "young"
            if "initial-mark" in g1_kinds:
                flags.append("concurrent-start")
            if "to-space exhausted" in g1_kinds or "to-space overflow" in g1_kinds:
                flags.append("to-space-exhausted")
        elif head == "GC remark":
            ev.event_type = "remark"
            hint = hint or "g1"
        elif head == "GC cleanup":
            ev.event_type = "cleanup"
            hint = "g1"
        elif head.startswith("Pause ") or head.startswith("Concurrent "):
            # JDK 8 Shenandoah: '[Pause Init Mark, 1.234 ms]', '[Concurrent marking 1M->2M(3M), 12 ms]'
            hint = "shenandoah"
            name = head.split(" ", 1)[1].strip()
            if head.startswith("Pause "):
                if name.startswith("Full"):
                    ev.event_type = "full"
                elif name.startswith("Degenerated"):
                    ev.event_type = "degenerated"
                else:
                    ev.event_type = "pause-" + slug(name)
            else:
                ev.event_type = "concurrent-" + slug(name)
                ev.concurrent_ms, ev.pause_ms = ev.pause_ms, None
        elif ev.event_type in ("initial-mark", "remark"):
            pass
        elif head == "GC" and not heaps and not subs and _OCCUPANCY_RE.search(top):
            # CMS without PrintGCDetails prints its initial mark and remark pauses as
            # '[GC 46468K(83008K), 0.0039333 secs]' (occupancy only): they alternate
            hint = "cms"
            ev.event_type = self.cms_next
            self.cms_next = "remark" if ev.event_type == "initial-mark" else "initial-mark"
            m_occ = _OCCUPANCY_RE.search(top)
            ev.heap_before_kb = ev.heap_after_kb = size_kb(m_occ.group(1))
            ev.heap_committed_kb = size_kb(m_occ.group(2))
        elif old_collected or "concurrent-mode-failure" in flags:
            # a young collection that fell back to a full collection of the old generation
            ev.event_type = "full"
        else:
            ev.event_type = "young"
        if ev.event_type == "remark" and young_sub:
            flags.append("scavenge-before-remark")  # CMSScavengeBeforeRemark: a young GC inside
        if ev.event_type in ("initial-mark", "remark") and not heaps:
            m_occ = _OCCUPANCY_RE.search(top)
            if m_occ:
                ev.heap_before_kb = ev.heap_after_kb = size_kb(m_occ.group(1))
                ev.heap_committed_kb = size_kb(m_occ.group(2))
        if cause is not None:
            if cause in ("System.gc()", "System"):
                flags.append("system-gc")
            if "Humongous" in cause:
                flags.append("humongous")
            if cause.startswith("G1 "):
                hint = hint or "g1"
            if cause == "CMS Initial Mark":
                ev.event_type = "initial-mark"
            elif cause == "CMS Final Remark" and ev.event_type != "young":
                ev.event_type = "remark"
        if hint is None and ev.event_type in ("young", "full") and self.saw_g1 and not subs:
            hint = "g1"
        ev.collector = self._collector(hint)
        if ev.collector == "unknown" and hint:
            ev.collector = hint
        ev.flags = tuple(dict.fromkeys(flags))
        if gcid is not None:
            ev.gc_id = to_int(gcid)
        self._stamp(ev, date, up)
        if times is not None:
            ev.user_s, ev.sys_s, ev.real_s = num(times.group(1)), num(times.group(2)), num(times.group(3))
        ev.phase = head
        if hint == "shenandoah":
            key = top.strip()
            key = key[: key.rfind(",")] if "," in key else key
            key = _HEAP_TOTAL_RE.sub("", key).strip()
            start = self.conc_starts.pop(key, None)
            ev.phase = key
            if start is not None:
                date, up = start[0], start[1]
                ev.source_line = start[2]
        if self.o.keep_raw:
            ev.raw = rec.raw.rstrip("\r\n")
        return ev
