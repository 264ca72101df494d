"""Property / fuzz tests of the GC log parser (collectors.gc), with hypothesis.

Whatever the input -- random bytes and text, real log lines truncated at every position, with
characters substituted, decorators shuffled, lines from different logs interleaved, numbers
made huge, unicode inserted, lines split anywhere -- the parser must

* never raise,
* account for every line: ``lines_event + lines_ignored + lines_unknown == lines_total`` (==
  the number of lines fed) and ``stats.events == len(events)``,
* emit only well-formed events: known event types, collectors and flags, ``source_line``
  within the input, UTC wall times, pauses (and time-to-safepoint) never negative or NaN,
* keep wall times monotonic where the input was: on an unmodified excerpt whose time stamps
  never go back, the earliest event wall time of each source line never goes back either (an
  event is stamped with the time of its first line; items embedded in a line -- a CMS phase
  inside a record -- carry their own, later, stamp).

Found and fixed by these tests: crashes on corrupt numbers -- ``int()`` of 4300+ digit GC ids,
sizes and nanosecond counts, ``int / 1e6`` and size rounding overflowing the float, ``timedelta``
/ ``fromtimestamp`` / ``astimezone`` out of range, malformed decimals ('1.2.3'), ``GC(²)``
accepted by ``str.isdigit`` --, concurrent-phase event types that were not slugs (non-ASCII or
upper-case names), and seconds of regex backtracking on lines with thousand-digit numbers.

The parser's shortcuts (lines answered without the general path, for speed) are checked
against that path: same events and statistics with and without the '[' shortcut of
``GcLogParser.feed``, and the unified handler's answer to indented ``GC(n)`` lines is what
``_gc_line`` makes of them.

Seeds are excerpts of the shared GC corpus (``<root>/shared/corpus/gc`` or
``$BROKERSCOPE_SHARED``) plus a few built-in lines, so the tests also run without the corpus.
Runs are deterministic (``derandomize=True``, no example database) and bounded (fixed
``max_examples``, about 20 s in all).  Needs ``hypothesis`` (test extra).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collectors.gc import COLLECTORS, KNOWN_FLAGS, GcEvent, GcLogParser, iter_events, open_log  # noqa: E402
from collectors.gc._common import EVENT, parse_datestamp  # noqa: E402
from collectors.gc.parser import PythonGcLogParser  # noqa: E402
from tests.gc_expected import locate_corpus


def _fuzz(n: int):
    """Deterministic, bounded hypothesis settings (stable in CI)."""
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# ------------------------------------------------------------------------------------------------
# seeds
# ------------------------------------------------------------------------------------------------

CORPUS = locate_corpus()

# one log per format family / collector / decorator set
SEED_FILES = (
    "local-jdk17/g1_time-uptime-level-tags.log",
    "local-jdk17/g1_uptimemillis-pid.log",
    "local-jdk17/serial_utctime-uptimenanos-timemillis-tid-level-tags.log",
    "local-jdk17/parallel_no-decorators.log",
    "local-jdk17/shenandoah_time-uptime-level-tags.log",
    "local-jdk17/zgc_time-uptime-level-tags.log",
    "local-jdk21/zgc-generational_time-uptime-level-tags.log",
    "gctoolkit/unified/cms/gc.log",
    "gctoolkit/preunified/cms/defnew/details/defnew.log",
    "gctoolkit/preunified/cms/parnew/details/tenuring/gc.log",
    "gctoolkit/preunified/cms/parnew/details/1073_1.log",
    "gctoolkit/preunified/g1gc/details/tenuring/server1-gc.log",
    "gctoolkit/preunified/g1gc/details/solaris/rightmove_parse_errors.log",
    "gcviewer/openjdk/SampleSun1_8_0CMS_ScavengeBR_HeapAtGC_TenuringDist_PrintFLS.txt",
    "gcviewer/openjdk/SampleSun1_7_0G1_PrintHeapAtGC_withConcurrent.txt",
    "gcviewer/openjdk/SampleOpenJdk1_8_0ShenandoahDetailsShutdown.txt",
    "gcviewer/openjdk/SampleSun1_5_0ConcurrentModeFailure.txt",
    "gcviewer/openjdk/SampleSun1_8_0ParallelPrintHeapAtGC.txt",
)

# shapes of every family, used when the corpus is not there (and as extra seeds when it is)
BUILTIN = [
    [
        "[2026-11-21T22:38:28.166+0000][0.172s][info][gc,start    ] GC(5) Pause Young (Concurrent Start) (G1 Humongous Allocation)\n",
        "[2026-11-21T22:38:28.166+0000][0.172s][info][gc,task     ] GC(5) Using 2 workers of 2 for evacuation\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc,phases   ] GC(5)   Evacuate Collection Set: 1.4ms\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc,heap     ] GC(5) Eden regions: 3->0(6)\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc,metaspace] GC(5) Metaspace: 181K(384K)->181K(384K) NonClass: 173K(256K)->173K(256K) Class: 7K(128K)->7K(128K)\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc          ] GC(5) Pause Young (Concurrent Start) (G1 Humongous Allocation) 34M->34M(64M) 1.957ms\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc,cpu      ] GC(5) User=0.00s Sys=0.01s Real=0.00s\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc          ] GC(6) Concurrent Mark Cycle\n",
        "[2026-11-21T22:38:28.168+0000][0.174s][info][gc,marking  ] GC(6) Concurrent Mark\n",
        '[2026-11-21T22:38:28.168+0000][0.174s][info][safepoint   ] Safepoint "G1TryInitiateConcMark", Time since last: 6329471 ns, Reaching safepoint: 4409 ns, Cleanup: 6877 ns, At safepoint: 2071185 ns, Total: 2082471 ns\n',
        "[2026-11-21T22:38:28.173+0000][0.178s][info][gc,marking  ] GC(6) Concurrent Mark 3.141ms\n",
        "[2026-11-21T22:38:28.175+0000][0.180s][info][gc          ] GC(6) Concurrent Mark Cycle 6.445ms\n",
    ],
    [
        "[1234ms][12345] GC(0) Pause Full (System.gc()) 12M->3M(64M) 10.5ms\n",
        "[1240ms][12345] Allocation Stall (main) 12.345ms\n",
    ],
    [
        "[0.100s][info][gc] GC(3) Garbage Collection (Allocation Rate) 20M(16%)->8M(6%)\n",
        "[0.120s][info][gc] GC(4) Major Collection (Warmup) 14M(11%)->34M(27%) 0.035s\n",
        "[0.130s][info][gc] Trigger: Free (5M) is below minimum threshold (6M)\n",
        "[0.131s][info][gc] GC(7) Pause Init Mark 0.123ms\n",
        "[0.132s][info][gc] GC(7) Concurrent marking 20M->21M(64M) 1.234ms\n",
    ],
    [
        "2012-10-19T20:56:16.875+0100: 8852.858: [GC 8852.858: [DefNew: 18098K->1097K(19136K), 0.0058500 secs] 41557K->24556K(260032K), 0.0059610 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n",
        "2014-03-04T06:50:32.026+0000: 2498.010: [GC2014-03-04T06:50:32.026+0000: 2498.010: [ParNew\n",
        "Desired survivor size 8716288 bytes, new threshold 4 (max 6)\n",
        "- age   1:    2089728 bytes,    2089728 total\n",
        ": 151971K->10491K(153344K), 0.0306160 secs] 284077K->146867K(1031552K), 0.0307630 secs] [Times: user=0.06 sys=0.00, real=0.03 secs] \n",
        "2498.100: [CMS-concurrent-mark-start]\n",
        "2498.300: [CMS-concurrent-mark: 0.200/0.200 secs] [Times: user=0.30 sys=0.00, real=0.20 secs] \n",
        "2499.000: [Full GC (System.gc()) 2499.000: [Tenured: 1K->2K(3K), 0.1 secs] 4K->5K(6K), [Metaspace: 7K->8K(9K)], 0.2 secs]\n",
        "2017-12-12T13:07:06.334+0000: 20.720: Total time for which application threads were stopped: 0.0000404 seconds, Stopping threads took: 0.0000139 seconds\n",
    ],
    [
        "32.352: [GC pause (young)\n",
        "Desired survivor size 67108864 bytes, new threshold 1 (max 32)\n",
        ", 0.3793790 secs]\n",
        "   [Parallel Time: 190.8 ms, GC Workers: 2]\n",
        "      [GC Worker Start (ms): Min: 32351.9, Avg: 32352.0, Max: 32352.1, Diff: 0.2]\n",
        "   [Eden: 898.0M(898.0M)->0.0B(896.0M) Survivors: 126.0M->128.0M Heap: 1047.5M(3072.0M)->269.5M(3072.0M)]\n",
        " [Times: user=0.50 sys=0.07, real=0.38 secs] \n",
        "33.000: [GC concurrent-root-region-scan-start]\n",
        "33.010: [GC concurrent-root-region-scan-end, 0.0100000 secs]\n",
        "{Heap before GC invocations=1 (full 0):\n",
        " par new generation   total 19136K, used 17024K [0x00000000f0000000, 0x00000000f14c0000, 0x00000000f14c0000)\n",
        "}\n",
    ],
]


def _load_seeds() -> list[list[str]]:
    seeds = [list(b) for b in BUILTIN]
    if CORPUS is None:
        return seeds
    for rel in SEED_FILES:
        p = CORPUS / rel
        if not p.is_file():
            continue
        with open_log(p) as fh:
            lines = fh.readlines()
        # the head (banners, first events) and a window from the middle (steady state)
        seeds.append(lines[:120])
        mid = len(lines) // 2
        if len(lines) > 240:
            seeds.append(lines[mid:mid + 120])
    return seeds


SEEDS = _load_seeds()

# ------------------------------------------------------------------------------------------------
# the properties
# ------------------------------------------------------------------------------------------------

_TYPE_RE = re.compile(
    r"^(young|mixed|full|initial-mark|remark|cleanup|degenerated|pause-[a-z0-9-]+|concurrent-[a-z0-9-]+"
    r"|allocation-stall|relocation-stall|out-of-memory|safepoint)$"
)
SAMPLE_LIMIT = 5
JVM_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def check(lines: list[str], flush_at: frozenset = frozenset(), **kwargs) -> tuple[list[GcEvent], object]:
    """Feed ``lines`` one by one; assert the invariants; return (events, stats)."""
    p = GcLogParser(sample_limit=SAMPLE_LIMIT, **kwargs)
    events: list[GcEvent] = []
    for n, line in enumerate(lines, 1):
        out = p.feed(line, n)
        assert isinstance(out, list)
        events.extend(out)
        if n in flush_at:
            events.extend(p.flush())
    events.extend(p.finish())
    assert p.finish() == []  # idempotent
    s = p.stats
    assert s.lines_total == len(lines)
    assert s.lines_event + s.lines_ignored + s.lines_unknown == s.lines_total, s.summary()
    assert min(s.lines_event, s.lines_ignored, s.lines_unknown) >= 0
    assert s.events == len(events)
    assert 0.0 <= s.coverage <= 1.0
    assert len(s.unknown_sample) == min(s.lines_unknown, SAMPLE_LIMIT)
    assert s.incomplete_events >= 0
    for e in events:
        assert isinstance(e, GcEvent)
        assert _TYPE_RE.match(e.event_type), e
        assert e.collector in COLLECTORS, e
        assert set(e.flags) <= set(KNOWN_FLAGS), e
        assert 1 <= e.source_line <= max(s.lines_total, 1), e
        for name in ("pause_ms", "ttsp_ms"):
            v = getattr(e, name)
            assert v is None or (v >= 0 and not math.isnan(v)), (name, e)
        assert not (e.pause_ms is not None and e.concurrent_ms is not None), e
        if e.wall_time is not None:
            assert e.wall_time.utcoffset() == timedelta(0), e
        e.to_dict()
    return events, s


def _same_events(a: list[GcEvent], b: list[GcEvent]) -> bool:
    return [e.to_dict() for e in a] == [e.to_dict() for e in b]


# ------------------------------------------------------------------------------------------------
# strategies
# ------------------------------------------------------------------------------------------------

# characters GC logs are made of, plus troublemakers: unicode digits (superscript, Arabic-Indic,
# full-width), line/paragraph separators, NUL, combining and bidi marks, a lone surrogate
ODD = "\u00b2\u00b3\u0663\u0665\uff11\uff15\u2028\u2029\x85\x0b\x0c\x1c\x00\u0301\u200f\ufeff\ud800\U0001f600"
ALPHABET = "0123456789.,:;-+>()[]{}#= KMGBTsmnu\t\rabcdefghijklmnopqrstuvwxyzACDEFGHIJLNOPRSUVWXYZ_/\"'%*" + ODD

gc_text = st.text(alphabet=ALPHABET, max_size=240)


@st.composite
def excerpts(draw, max_len: int = 40):
    seed = draw(st.sampled_from(SEEDS))
    if not seed:
        return []
    start = draw(st.integers(0, max(len(seed) - 1, 0)))
    n = draw(st.integers(1, max_len))
    return list(seed[start:start + n])


HUGE = ("9" * 16, "1" * 19, "18446744073709551616", "9" * 309, "9" * 400, "1" * 5000, "0" * 400 + "1",
        "999999999999.999999999", "0.0000000000000000001")


def _mutate(draw, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        op = draw(st.sampled_from(("sub", "ins", "del", "cut", "dup", "drop", "swap", "huge", "odd", "nl")))
        pos = draw(st.integers(0, len(line)))
        if op == "sub" and line:
            pos = min(pos, len(line) - 1)
            lines[i] = line[:pos] + draw(st.sampled_from(ALPHABET)) + line[pos + 1:]
        elif op == "ins":
            lines[i] = line[:pos] + draw(gc_text.filter(lambda t: len(t) < 12)) + line[pos:]
        elif op == "del":
            lines[i] = line[:pos] + line[pos + draw(st.integers(1, 20)):]
        elif op == "cut":
            lines[i] = line[:pos]
        elif op == "dup":
            lines.insert(i, line)
        elif op == "drop":
            del lines[i]
        elif op == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "huge":
            runs = list(re.finditer(r"\d+(?:[.,]\d+)?", line))
            if runs:
                r = draw(st.sampled_from(runs))
                lines[i] = line[: r.start()] + draw(st.sampled_from(HUGE)) + line[r.end():]
        elif op == "odd":
            lines[i] = line[:pos] + draw(st.sampled_from(ODD)) + line[pos:]
        elif op == "nl":
            lines[i] = line.rstrip("\r\n") + draw(st.sampled_from(("", "\r\n", "\r", "\n\n", " \n", "\r\r\n")))
    return lines


@st.composite
def mutated_excerpts(draw):
    return _mutate(draw, draw(excerpts()))


_DECO_RE = re.compile(r"^((?:\[[^\[\]]*\])+) ?")


@st.composite
def shuffled_decorators(draw):
    """Unified lines with their decorators permuted, dropped, duplicated or emptied."""
    lines = draw(excerpts())
    out = []
    for line in lines:
        m = _DECO_RE.match(line)
        if m is None:
            out.append(line)
            continue
        groups = re.findall(r"\[[^\[\]]*\]", m.group(1))
        op = draw(st.sampled_from(("keep", "perm", "drop", "dup", "empty", "pad")))
        if op == "perm":
            groups = draw(st.permutations(groups))
        elif op == "drop" and groups:
            del groups[draw(st.integers(0, len(groups) - 1))]
        elif op == "dup" and groups:
            groups.insert(0, groups[draw(st.integers(0, len(groups) - 1))])
        elif op == "empty" and groups:
            groups[draw(st.integers(0, len(groups) - 1))] = "[]"
        elif op == "pad" and groups:
            k = draw(st.integers(0, len(groups) - 1))
            groups[k] = groups[k][:-1] + "   ]"
        out.append("".join(groups) + " " + line[m.end():])
    return out


# ------------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------------

@_fuzz(400)
@given(st.lists(gc_text, max_size=25))
def test_random_text_lines(lines):
    check(lines)


@_fuzz(300)
@given(st.binary(max_size=3000), st.sampled_from(("utf-8", "latin-1")))
def test_random_bytes(data, encoding):
    text = data.decode(encoding, errors="replace")
    check(text.splitlines(keepends=True))


@_fuzz(1000)
@given(mutated_excerpts(), st.booleans())
def test_mutated_corpus_lines(lines, keep_raw):
    events, _ = check(lines, keep_raw=keep_raw, jvm_start=JVM_START if keep_raw else None)
    assert _same_events(events, list(iter_events(lines, keep_raw=keep_raw,
                                                 jvm_start=JVM_START if keep_raw else None)))


@_fuzz(400)
@given(shuffled_decorators())
def test_shuffled_decorators(lines):
    check(lines)


@_fuzz(400)
@given(excerpts(), excerpts(), st.lists(st.booleans(), min_size=1, max_size=80))
def test_interleaved_logs(a, b, mask):
    """Lines of two different logs interleaved (e.g. two JVMs writing to one file)."""
    out, ia, ib = [], iter(a), iter(b)
    for take_a in mask:
        line = next(ia if take_a else ib, None)
        if line is not None:
            out.append(line)
    out.extend(ia)
    out.extend(ib)
    check(out)


@_fuzz(300)
@given(excerpts(), st.data())
def test_huge_numbers(lines, data):
    """Every number of an excerpt (or some of them) replaced by a huge one."""
    every = data.draw(st.booleans())
    huge = data.draw(st.sampled_from(HUGE))
    rng = data.draw(st.randoms(use_true_random=False))
    out = [re.sub(r"\d+(?:[.,]\d+)?", lambda m: huge if every or rng.random() < 0.3 else m.group(), line)
           for line in lines]
    check(out)
    check(out, jvm_start=JVM_START)


@_fuzz(400)
@given(excerpts(), st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(ODD)), max_size=8))
def test_unicode(lines, inserts):
    lines = list(lines)
    for pos, ch in inserts:
        if not lines:
            break
        i = pos % len(lines)
        k = pos % (len(lines[i]) + 1)
        lines[i] = lines[i][:k] + ch + lines[i][k:]
    check(lines)
    # and as a tailer would see them once re-split by str.splitlines (which breaks on \x85 ...)
    check("".join(lines).splitlines(keepends=True))


def cut_text(lines: list[str], cuts: list[int], newline: str) -> tuple[str, list[str]]:
    """The lines joined with `newline`, and that text cut into pieces at `cuts` (modulo its length)."""
    text = "".join(line.rstrip("\r\n") + newline for line in lines)
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return text, [text[a:b] for a, b in zip(points, points[1:]) if b > a]


@_fuzz(500)
@given(excerpts(), st.lists(st.integers(0, 100_000), max_size=30), st.sampled_from(("\n", "\r\n", "\r")))
def test_arbitrary_line_splits(lines, cuts, newline):
    """The text of an excerpt cut into pieces anywhere (partial lines, joined lines)."""
    text, pieces = cut_text(lines, cuts, newline)
    check(pieces, flush_at=frozenset(range(1, len(pieces) + 1, 7)))


_ISO_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]\d+(?:[+-]\d\d:?\d\d|Z)?")
_UP_RE = re.compile(r"(?:^|[\s\[])(\d+[.,]\d+)(?:s\]|: )|\[(\d+)(ms|ns)\]")


def _uptimes(line: str) -> list[float]:
    """Uptime-like stamps of a line in seconds: legacy '12.345: ', '[12.345s]', '[12345ms]'."""
    out = []
    for secs, n, unit in _UP_RE.findall(line):
        out.append(float(secs.replace(",", ".")) if secs else int(n) / (1e3 if unit == "ms" else 1e9))
    return out


def _monotonic(values) -> bool:
    return all(b >= a for a, b in zip(values, values[1:]))


@_fuzz(400)
@given(excerpts(max_len=120))
def test_wall_times_monotonic_where_the_input_was(lines):
    wall = [parse_datestamp(s) for line in lines for s in _ISO_RE.findall(line)]
    wall = [w for w in wall if w is not None]
    ups = [u for line in lines for u in _uptimes(line)]
    if wall:
        if not _monotonic(wall):
            return
        kwargs = {}
    else:
        if not _monotonic(ups):
            return
        kwargs = {"jvm_start": JVM_START}  # uptime-only logs: wall time = JVM start + uptime
    events, _ = check(lines, **kwargs)
    first_wall: dict[int, datetime] = {}
    for e in events:
        if e.wall_time is not None:
            cur = first_wall.get(e.source_line)
            first_wall[e.source_line] = e.wall_time if cur is None else min(cur, e.wall_time)
        # on time-ordered input, measured durations are never negative either
        for name in ("concurrent_ms", "duration_ms"):
            v = getattr(e, name)
            assert v is None or v >= 0, (name, e)
    per_line = [w for _, w in sorted(first_wall.items())]
    assert _monotonic(per_line)


# deterministic, exhaustive: every seed event line truncated at every position, in context
def _truncation_cases():
    cases = []
    for seed in SEEDS:
        picked = 0
        for i, line in enumerate(seed):
            if picked >= 3:
                break
            if re.search(r"Pause|\[GC|\[Full GC|Concurrent|Total time|Safepoint|secs\]|Collection", line):
                cases.append((seed[max(0, i - 3):i], line, seed[i + 1:i + 4]))
                picked += 1
    return cases


@pytest.mark.parametrize("before,line,after", _truncation_cases())
def test_truncation_at_every_position(before, line, after):
    for k in range(len(line) + 1):
        check(before + [line[:k]] + after)
        check(before + [line[:k]])  # the cut line last (a log being written)


# ------------------------------------------------------------------------------------------------
# equivalence of the parser's shortcuts with the general path they stand for
# ------------------------------------------------------------------------------------------------


class _AlwaysAskUnified(PythonGcLogParser):
    """The parser without the '[' shortcut of GcLogParser.feed: every line that may be unified
    goes to the unified handler (as before the shortcut)."""

    def _may_be_decorated(self, line: str) -> bool:
        return True


def _parse_stats(parser: GcLogParser, lines: list[str]) -> tuple[list[dict], tuple]:
    events = [e.to_dict() for n, line in enumerate(lines, 1) for e in parser.feed(line, n)]
    events += [e.to_dict() for e in parser.finish()]
    s = parser.stats
    return events, (s.lines_total, s.lines_event, s.lines_ignored, s.lines_unknown, s.events,
                    s.incomplete_events, s.unknown_sample, s.formats, s.span_s)


_BRACKET_LINES = st.builds(
    lambda c, rest: "[" + c + rest + "\n",
    st.sampled_from(list("GFTEPOCabz09²٣[ ]")) | st.characters(),
    st.text(max_size=40),
)


@_fuzz(600)
@given(st.one_of(mutated_excerpts(), shuffled_decorators(), st.lists(_BRACKET_LINES, max_size=12)),
       st.booleans())
def test_bracket_shortcut_is_equivalent(lines, keep_raw):
    """Lines starting with '[' that skip the unified handler before unified mode (legacy G1
    detail lines, '[GC ...' records) give the same events and statistics as when the handler
    is asked."""
    assert _parse_stats(PythonGcLogParser(keep_raw=keep_raw), lines) == _parse_stats(
        _AlwaysAskUnified(keep_raw=keep_raw), lines)


def _handler_state(h) -> dict:
    """A copy of the unified handler's state (but the match of the last line, which is new)."""
    return {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
            for k, v in vars(h).items() if k != "last_m"}


@_fuzz(300)
@given(st.integers(0, 10**30), st.text(max_size=30))
def test_indented_unified_lines_are_what_gc_line_makes_of_them(gc_id, tail):
    """UnifiedHandler.handle answers an indented 'GC(n)   ...' detail line itself: EVENT and
    no state change, as _gc_line does for a message that starts with a space."""
    p = PythonGcLogParser()
    for n, line in enumerate(BUILTIN[0][:3], 1):
        p.feed(line, n)
    h = p._unified
    rest = "  " + tail.replace("\n", " ")
    before = _handler_state(h)
    assert h._gc_line(gc_id, rest, None, h.layout, 9, [], rest) == EVENT
    line = f"[2026-11-21T22:38:28.168+0000][0.174s][info][gc,phases   ] GC({gc_id}) {rest}\n"
    out: list = []
    assert h.handle(line, 10, out) == EVENT and out == []
    assert _handler_state(h) == before
