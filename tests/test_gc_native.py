"""Differential tests: the native GC parser core against the Python parser (the spec).

Every corpus file is parsed by both implementations -- line by line through ``feed`` and, for
the native core, also as whole text blocks through ``parse_file`` -- and must give identical
events (``GcEvent.to_dict()``), identical ParseStats counters, unknown-line samples, formats
and time span.  Truncated files (cut at many points, mid-line included) and fuzzed lines
(the strategies of tests/test_gc_fuzz.py) must agree too.  Skipped, with the reason, when the
native module is not built (``pip install ./native/gcparse``).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from collectors.gc import native
from collectors.gc.parser import PythonGcLogParser, open_log, parse_file
from tests.gc_expected import locate_corpus

pytestmark = pytest.mark.skipif(
    not native.AVAILABLE, reason="native GC parser core not built (pip install ./native/gcparse)"
)

CORPUS = locate_corpus()
JVM_START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _files() -> list[str]:
    if CORPUS is None:
        return []
    out = []
    for root, _dirs, names in os.walk(CORPUS):
        for n in names:
            if n.endswith((".tsv", ".md")):
                continue
            out.append(os.path.relpath(os.path.join(root, n), CORPUS))
    return sorted(out)


def _stats(s) -> tuple:
    return (s.lines_total, s.lines_event, s.lines_ignored, s.lines_unknown, s.events,
            s.incomplete_events, list(s.unknown_sample), dict(s.formats), s.first_uptime_s,
            s.last_uptime_s, s.first_wall_time, s.last_wall_time)


def run(parser, lines, flush_at=()) -> tuple[list[dict], tuple]:
    events = []
    for n, line in enumerate(lines, 1):
        events.extend(parser.feed(line, n))
        if n in flush_at:
            events.extend(parser.flush())
    events.extend(parser.finish())
    return [e.to_dict() for e in events], _stats(parser.stats)


def assert_same(lines, flush_at=(), **kw) -> int:
    """Both implementations on `lines`; returns the number of events compared."""
    ref = run(PythonGcLogParser(**kw), lines, flush_at)
    got = run(native.NativeGcLogParser(**kw), lines, flush_at)
    if ref != got:
        for i, (a, b) in enumerate(zip(ref[0], got[0])):
            assert a == b, f"event {i}: python {a}\n native {b}"
        assert len(ref[0]) == len(got[0]), (len(ref[0]), len(got[0]))
        assert ref[1] == got[1]
    return len(ref[0])


def _read(rel: str) -> list[str]:
    with open_log(CORPUS / rel) as fh:
        return list(fh)


@pytest.mark.skipif(CORPUS is None, reason="GC corpus not found")
@pytest.mark.parametrize("rel", _files())
def test_corpus_file_identical(rel):
    lines = _read(rel)
    assert_same(lines)
    # whole-file path of the native core (text blocks split natively) == line feeding
    ev_n, st_n = parse_file(CORPUS / rel)
    ref = run(PythonGcLogParser(), lines)
    assert ([e.to_dict() for e in ev_n], _stats(st_n)) == ref


@pytest.mark.skipif(CORPUS is None, reason="GC corpus not found")
@pytest.mark.parametrize("rel", [f for f in _files() if os.path.getsize(CORPUS / f) < 400_000][::7])
def test_corpus_options_identical(rel):
    """keep_raw, jvm_start, a preset collector, flush() calls mid-stream."""
    lines = _read(rel)
    assert_same(lines, keep_raw=True, jvm_start=JVM_START)
    assert_same(lines, collector="g1", sample_limit=3, flush_at=frozenset(range(5, len(lines), 11)))


@pytest.mark.skipif(CORPUS is None, reason="GC corpus not found")
@pytest.mark.parametrize("rel", [f for f in _files() if os.path.getsize(CORPUS / f) < 200_000][::3])
def test_truncated_files_identical(rel):
    """The file cut at 12 points (mid-line cuts included): a truncated log."""
    text = "".join(_read(rel))
    for k in range(1, 13):
        cut = len(text) * k // 13
        assert_same(text[:cut].splitlines(keepends=True))
