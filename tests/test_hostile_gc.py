"""GC log input bombs and non-logs through `brokerscope gc report`, as a user runs it (a real
subprocess, so its peak memory is measured): bounded memory and time, a clear error, and what a
damaged archive still gives."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.gc import open_log
from collectors.gc.limits import MAX_LINE_BYTES

ROOT = Path(__file__).resolve().parents[1]
GOOD = "[2026-11-22T00:00:00.000+0000][{s:.3f}s][info][gc] GC({n}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.123ms"


def good_log(n: int) -> bytes:
    return "".join(GOOD.format(s=1.0 + i, n=i) + "\n" for i in range(n)).encode()


def gz_repeated(path: Path, piece: bytes, times: int) -> None:
    """A gzip of `piece` × `times`, built as repeated members (one compression, fast)."""
    member = gzip.compress(piece, compresslevel=9)
    with open(path, "wb") as fh:
        for _ in range(times):
            fh.write(member)


# The child reports its own peak RSS as VmHWM (kept per address space, so exec starts it afresh):
# RUSAGE_CHILDREN is the largest of ALL children this test process ever had, and a child's
# ru_maxrss starts at the size of the (large) process that forked it — neither measures one command.
_MEASURED = (
    "import re, runpy, sys\n"
    "try:\n"
    "    runpy.run_module('brokerscope', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
    "    sys.stderr.write(f'\\npeak_rss_kib={hwm}\\n')\n"
)


def gc_report(path: Path) -> tuple[subprocess.CompletedProcess, float, int]:
    """Run `brokerscope gc report`; (result, seconds, peak RSS of the child in MiB)."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", _MEASURED, "gc", "report", str(path)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    took = time.monotonic() - t0
    peak = int(r.stderr.rsplit("peak_rss_kib=", 1)[1].split()[0])
    return r, took, peak // 1024


@pytest.mark.slow
def test_gzip_of_1gib_without_a_newline_stops_at_the_expansion_bound_in_bounded_memory(tmp_path):
    bomb = tmp_path / "gc.log.gz"
    gz_repeated(bomb, b"x" * (64 << 20), 16)  # 1 GiB decompressed, ~1 MiB on disk
    r, took, peak_mib = gc_report(bomb)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "expands to more than 256 MiB" in r.stderr and "archive bomb" in r.stderr
    assert peak_mib < 400 and took < 60, (peak_mib, took)
    print({"bomb_no_newline": {"peak_mib": peak_mib, "seconds": round(took, 1)}})


@pytest.mark.slow
def test_gzip_of_512mib_of_newlines_stops_at_the_empty_run_bound_in_seconds(tmp_path):
    bomb = tmp_path / "gc.log.gz"
    gz_repeated(bomb, b"\n" * (64 << 20), 8)
    r, took, peak_mib = gc_report(bomb)
    assert r.returncode == 2 and "empty lines in a row" in r.stderr and "not a GC log" in r.stderr, r.stderr
    assert took < 30 and peak_mib < 400, (took, peak_mib)
    print({"bomb_newlines": {"peak_mib": peak_mib, "seconds": round(took, 1)}})


def test_truncated_gzip_reports_what_was_readable_and_says_it_is_damaged(tmp_path):
    whole = gzip.compress(good_log(5000))
    cut = tmp_path / "gc.log.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    r, _took, _peak = gc_report(cut)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "DAMAGED" in r.stdout and "cut short" in r.stdout and "the report covers only that part" in r.stderr
    collections = int(next(line for line in r.stdout.splitlines() if line.startswith("collections")).split()[1].replace(",", ""))
    assert 1000 < collections < 5000  # the lines before the damage, no more


def test_corrupt_gzip_stream_in_the_middle_is_damage_not_a_traceback(tmp_path):
    data = bytearray(gzip.compress(good_log(3000)))
    data[len(data) // 2: len(data) // 2 + 64] = os.urandom(64)
    p = tmp_path / "gc.log.gz"
    p.write_bytes(bytes(data))
    r, _took, _peak = gc_report(p)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr
    assert "damaged" in (r.stdout + r.stderr).lower()


@pytest.mark.parametrize("content,phrase", [
    (b"", "has no lines"),
    (b"hello\nthis is a README\n", "is not a GC log: none of its 2 lines is a GC line"),
    (b"\x1b]0;owned\x07\n", "is not a GC log"),
], ids=["empty", "readme", "escape-sequences"])
def test_gc_report_of_a_file_that_is_not_a_gc_log_says_so_and_fails(tmp_path, content, phrase):
    p = tmp_path / "gc.log"
    p.write_bytes(content)
    r, _took, _peak = gc_report(p)
    assert r.returncode == 2 and phrase in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr  # the line quoted is escaped


def test_an_overlong_line_is_cut_and_the_lines_around_it_parse(tmp_path):
    p = tmp_path / "gc.log"
    p.write_bytes(good_log(2) + b"y" * (10 << 20) + b"\n" + good_log(3))
    with open_log(p) as fh:
        lines = list(fh)
    assert len(lines) == 6 and len(lines[2]) == MAX_LINE_BYTES + 1
    assert lines[3].startswith("[2026-11-22") and lines[0].startswith("[2026-11-22")


def test_crlf_archive_reads_like_text_mode(tmp_path):
    p = tmp_path / "gc.log.gz"
    p.write_bytes(gzip.compress(good_log(3).replace(b"\n", b"\r\n")))
    with open_log(p) as fh:
        assert [line.endswith("ms\n") for line in fh] == [True, True, True]


def test_a_damaged_zip_is_one_clear_error(tmp_path):
    p = tmp_path / "gc.log.zip"
    p.write_bytes(b"PK\x03\x04" + os.urandom(200))
    r, _took, _peak = gc_report(p)
    assert r.returncode == 2 and "damaged zip archive" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_the_native_cores_byte_stream_has_the_text_streams_bounds(tmp_path):
    """open_log_bytes (what the native core reads) cuts, refuses and reads damage as open_log does."""
    from collectors.gc.parser import open_log_bytes
    from collectors.gc.limits import MAX_BLANK_RUN, GcInputError

    long_line = b"x" * (3 * MAX_LINE_BYTES + 17)
    plain = tmp_path / "gc.log"
    plain.write_bytes(good_log(3) + long_line + b"\n" + good_log(2) + b"\r\n" + long_line)
    with open_log_bytes(plain) as fb, open_log(plain) as ft:
        # the same lines (the text stream ends a cut last line with a newline; for the core, end of file ends it)
        assert fb.read().decode().replace("\r", "") == "".join(ft).rstrip("\n")
    blank = tmp_path / "blank.log.gz"
    blank.write_bytes(gzip.compress(good_log(1) + b"\n" * (MAX_BLANK_RUN + 5)))
    with pytest.raises(GcInputError, match="empty lines in a row"):
        open_log_bytes(blank).read()
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(good_log(2000))[:-4000])
    with open_log_bytes(cut) as fb:
        assert fb.read().startswith(good_log(10))


def test_cr_only_line_ends_are_lines_on_both_streams(tmp_path):
    """Old logs end lines with CR only (text mode's universal newlines read them as lines): the
    bounded text stream splits them, and the byte stream does not glue them into one cut line."""
    from collectors.gc.parser import open_log_bytes

    log = tmp_path / "cr.log"
    log.write_bytes(good_log(3000).replace(b"\n", b"\r"))
    with open_log(log) as ft:
        assert len(list(ft)) == 3000
    with open_log_bytes(log) as fb:
        assert fb.read() == good_log(3000).replace(b"\n", b"\r")  # > MAX_LINE_BYTES, nothing cut
