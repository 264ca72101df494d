"""Hostile inputs through both parsers: the native core applies the line bounds itself (native/
gcparse/src/bounds.rs), the Python parser reads through collectors.gc.limits.BoundedLines; the
same events, stats and errors are required from parse_file and parse_file_columnar on each."""

from __future__ import annotations

import gzip
from datetime import datetime, timezone

import pytest

from collectors.gc import native
from collectors.gc.columnar import parse_file_columnar
from collectors.gc import limits
from collectors.gc.limits import CHUNK, MAX_BLANK_RUN, MAX_LINE_BYTES
from collectors.gc.parser import parse_file
from tests.test_gc_native import _stats

pytestmark = pytest.mark.skipif(
    not native.AVAILABLE, reason="native GC parser core not built (pip install ./native/gcparse)"
)

JVM_START = datetime(2024, 1, 1, tzinfo=timezone.utc)
G1 = "[2026-11-22T00:00:00.000+0000][{s}.000s][info][gc] GC({n}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.123ms"


def good(n: int, first: int = 0, eol: str = "\n") -> bytes:
    return "".join(G1.format(s=1 + i, n=i) + eol for i in range(first, first + n)).encode()


def padded(size: int, eol: bytes = b"\n", pad: str = " ", lead: str = "") -> bytes:
    """A G1 pause line of `size` bytes (before its line end), padded inside its cause: cut
    anywhere, it is no longer an event (and, within 500 characters, its cut text is sampled)."""
    head = G1.format(s=500, n=500).split(") 24M")[0].encode() + lead.encode()
    tail = b") 24M->4M(256M) 3.123ms"
    room = size - len(head) - len(tail)
    fill = pad.encode() * (room // len(pad.encode()))
    return head + fill + b"x" * (room - len(fill)) + tail + eol


def across_chunk(eol: bytes, length: int) -> bytes:
    """Good lines, then a `length`-byte line that starts 100 bytes before the first chunk's end."""
    head = good(8000)
    head += b"y" * (CHUNK - 100 - len(head) - 1) + b"\n"
    return head + padded(length, eol) + good(3, 9000, eol.decode())


def cases(max_line: int, max_blank: int) -> dict[str, bytes]:
    """Hostile inputs for these bounds."""
    lf_crlf_cr = (("lf", b"\n"), ("crlf", b"\r\n"), ("cr", b"\r"))
    return {
        "1mib-line": good(5) + b"x" * (1 << 20) + b"\n" + good(5, 100),
        "1mib-gc-line-last": good(5) + padded(1 << 20, b""),
        **{f"at-bound{d:+d}-{name}": good(2) + padded(max_line + d, eol) + good(2, 100, eol.decode())
           for d in (-1, 0, 1) for name, eol in lf_crlf_cr},
        **{f"cut-mid-utf8-{lead}": good(2) + padded(max_line + 60, b"\n", "é", "x" * lead) + good(2, 100)
           for lead in (0, 1)},
        "blank-run-at-bound": good(1) + b"\n" * max_blank + good(1, 100),
        "blank-run-over-lf": good(1) + b"\n" * (max_blank + 1) + good(1, 100),
        "blank-run-over-crlf": good(1) + b"\r\n" * (max_blank + 1) + good(1, 100),
        "blank-run-over-cr": good(1) + b"\r" * (max_blank + 1) + good(1, 100),
        "blank-run-over-spaces": good(1) + b" \t\r\n" * (max_blank + 1),
        "crlf-blank-run-at-bound": good(1, eol="\r\n") + b"\r\n" * max_blank + good(1, 100, "\r\n"),
        **{f"across-chunk-{name}-{n}": across_chunk(eol, size) for name, eol in lf_crlf_cr
           for n, size in (("bound", max_line + 1), ("1mib", 1 << 20))},
        "crlf-split-at-chunk": good(2) + b"z" * (CHUNK - len(good(2)) - 1) + b"\r\n" + good(2, 100, "\r\n"),
        "cut-line-ends-with-cr-at-chunk": good(2) + b"z" * (CHUNK - len(good(2)) - 1) + b"\r" + good(2, 100, "\r"),
    }


BOUNDS = {"real": (MAX_LINE_BYTES, MAX_BLANK_RUN), "small": (300, 20)}  # small: cut text within the sample


def outcome(path, impl: str, monkeypatch) -> tuple:
    """(parse_file's events and stats, the columnar batch and stats), or the error of each."""
    monkeypatch.setenv("BROKERSCOPE_GC_PARSER", impl)
    try:
        events, stats = parse_file(path, jvm_start=JVM_START)
        by_events = ([e.to_dict() for e in events], _stats(stats))
    except ValueError as e:
        by_events = (type(e).__name__, str(e))
    try:
        batch, stats = parse_file_columnar(path, jvm_start=JVM_START)
        by_columns = (batch.to_pylist(), _stats(stats))
    except ValueError as e:
        by_columns = (type(e).__name__, str(e))
    return by_events, by_columns


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("case", sorted(cases(300, 20)))
@pytest.mark.parametrize("bounds", sorted(BOUNDS))
def test_native_bounds_are_the_python_bounds(bounds, case, gz, tmp_path, monkeypatch):
    max_line, max_blank = BOUNDS[bounds]
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", max_line)
    monkeypatch.setattr(limits, "MAX_BLANK_RUN", max_blank)
    data = cases(max_line, max_blank)[case]
    path = tmp_path / ("gc.log.gz" if gz else "gc.log")
    path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    py, nat = outcome(path, "python", monkeypatch), outcome(path, "native", monkeypatch)
    assert nat == py
    if "blank-run-over" in case:
        assert py[0][0] == "GcInputError" and "empty lines in a row" in py[0][1] and str(path) in py[0][1]
    else:
        assert py[0][0], "events expected"
