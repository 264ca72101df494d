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
from collectors.gc.columnar import events_to_batch, parse_file_columnar
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
    # columnar path (Arrow buffers from the core) == the GcEvent path's values
    assert_same_columns(CORPUS / rel, ev_n, st_n)


def assert_same_columns(path, events, stats, **kw) -> None:
    batch, st_c = parse_file_columnar(path, **kw)
    want = events_to_batch(events)
    assert batch.schema == want.schema
    got_rows, want_rows = batch.to_pylist(), want.to_pylist()
    for i, (a, b) in enumerate(zip(got_rows, want_rows)):
        assert a == b, f"row {i}: columnar {a}\n GcEvent path {b}"
    assert len(got_rows) == len(want_rows)
    assert _stats(st_c) == _stats(stats)


@pytest.mark.skipif(CORPUS is None, reason="GC corpus not found")
@pytest.mark.parametrize("rel", [f for f in _files() if os.path.getsize(CORPUS / f) < 400_000][::7])
def test_corpus_options_identical(rel):
    """keep_raw, jvm_start, a preset collector, flush() calls mid-stream."""
    lines = _read(rel)
    assert_same(lines, keep_raw=True, jvm_start=JVM_START)
    ev, st = parse_file(CORPUS / rel, jvm_start=JVM_START, collector="g1")
    assert_same_columns(CORPUS / rel, ev, st, jvm_start=JVM_START, collector="g1")
    assert_same(lines, collector="g1", sample_limit=3, flush_at=frozenset(range(5, len(lines), 11)))


@pytest.mark.skipif(CORPUS is None, reason="GC corpus not found")
@pytest.mark.parametrize("rel", [f for f in _files() if os.path.getsize(CORPUS / f) < 200_000][::3])
def test_truncated_files_identical(rel):
    """The file cut at 12 points (mid-line cuts included): a truncated log."""
    text = "".join(_read(rel))
    for k in range(1, 13):
        cut = len(text) * k // 13
        assert_same(text[:cut].splitlines(keepends=True))


# -- fuzzed input (the strategies of tests/test_gc_fuzz.py) -----------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.test_gc_fuzz import (  # noqa: E402
    HUGE, ODD, _fuzz, cut_text, excerpts, gc_text, mutated_excerpts, shuffled_decorators,
)


@_fuzz(400)
@given(st.lists(gc_text, max_size=25))
def test_fuzz_random_text_lines(lines):
    assert_same(lines, sample_limit=5)


@_fuzz(200)
@given(st.binary(max_size=3000), st.sampled_from(("utf-8", "latin-1")))
def test_fuzz_random_bytes(data, encoding):
    assert_same(data.decode(encoding, errors="replace").splitlines(keepends=True))


@_fuzz(1000)
@given(mutated_excerpts(), st.booleans())
def test_fuzz_mutated_corpus_lines(lines, keep_raw):
    assert_same(lines, keep_raw=keep_raw, jvm_start=JVM_START if keep_raw else None)


@_fuzz(300)
@given(shuffled_decorators())
def test_fuzz_shuffled_decorators(lines):
    assert_same(lines)


@_fuzz(300)
@given(excerpts(), st.lists(st.integers(0, 100_000), max_size=30), st.sampled_from(("\n", "\r\n", "\r")))
def test_fuzz_arbitrary_line_splits(lines, cuts, newline):
    """Pieces of text cut anywhere, fed as lines; and the same text through feed_text."""
    text, pieces = cut_text(lines, cuts, newline)
    assert_same(pieces, flush_at=frozenset(range(1, len(pieces) + 1, 7)))
    # feed_text in those pieces == the Python parser on the text read as a file
    p = native.NativeGcLogParser()
    events = []
    for piece in pieces:
        events.extend(p.feed_text(piece))
    events.extend(p.feed_text("", end=True))
    events.extend(p.finish())
    import io
    ref = run(PythonGcLogParser(), list(io.StringIO(text, newline=None)))
    assert ([e.to_dict() for e in events], _stats(p.stats)) == ref


@_fuzz(300)
@given(excerpts(), st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(ODD + "".join(HUGE[:3]))), max_size=8))
def test_fuzz_odd_characters(lines, inserts):
    lines = list(lines)
    for pos, ch in inserts:
        if lines:
            i = pos % len(lines)
            k = pos % (len(lines[i]) + 1)
            lines[i] = lines[i][:k] + ch + lines[i][k:]
    assert_same(lines)


@_fuzz(300)
@given(excerpts(), st.lists(st.integers(0, 100_000), max_size=30),
       st.lists(st.tuples(st.integers(0, 100_000), st.sampled_from(
           [b"\xe9", b"\xc3", b"\xc3\xa9", b"\xe2\x82", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff",
            b"\xed\xa0\x80", b"\r", b"\r\n", b"\x00"])), max_size=10))
def test_fuzz_byte_chunks(lines, cuts, inserts):
    """Bytes (invalid UTF-8, sequences cut by chunk ends) through feed_bytes == the Python
    parser on the same bytes read as a text file (errors="replace")."""
    import io
    import tempfile
    data = bytearray("".join(lines).encode("utf-8", "surrogatepass"))
    for pos, b in inserts:
        k = pos % (len(data) + 1)
        data[k:k] = b
    data = bytes(data)
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    p = native.NativeGcLogParser()
    events = []
    for a, b in zip(points, points[1:]):
        events.extend(p.feed_bytes(data[a:b]))
    events.extend(p.feed_bytes(b"", end=True))
    events.extend(p.finish())
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    ref_parser = PythonGcLogParser()
    ref = run(ref_parser, list(text))
    assert ([e.to_dict() for e in events], _stats(p.stats)) == ref
    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        ev, st = parse_file(f.name)
        assert ([e.to_dict() for e in ev], _stats(st)) == ref
        assert_same_columns(f.name, ev, st)
