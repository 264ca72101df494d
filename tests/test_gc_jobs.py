"""GC Spark jobs: bronze_gc_lines → gc_events/gc_parse_stats (whole files, in order, incremental),
`gc import` of archives in parallel, gold gc_findings, and GC pauses on the timeline."""

from __future__ import annotations

import shutil
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from analysis.gc import (TargetRules, bronze_line_counts, files_to_parse, finding_rows, import_files,
                         parsed_line_counts, run_gc)
from analysis.params import gc_params
from brokerscope.timeline import build_timeline, render_text
from collectors.gc import parse_file
from collectors.gc.analysis import Thresholds
from collectors.gc.tailer import GcTailer, file_identity
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from lakehouse.tables import GC_FINDINGS, contract
from settings import config_from_dict
from tests.test_gc_parser import CORPUS, needs_corpus

pytestmark = needs_corpus

LONG_G1 = "local-jdk17/longpause_g1_time-uptime-level-tags.log"
LONG_SERIAL = "local-jdk17/longpause_serial_time-uptime-level-tags.log"
UPTIME_ONLY = "local-jdk17/g1_xlog-gc-default-decorators.log"  # decorators uptime,level,tags


def cfg_for(tmp_path: Path, **gc) -> dict:
    return {
        "lakehouse": str(tmp_path / "lh"),
        "gc": gc,
        "targets": [
            {"name": "amq-a", "kind": "activemq", "url": "http://127.0.0.1:1/jolokia", "group": "store-1",
             "gc_logs": [str(tmp_path / "a" / "*.log")]},
            {"name": "zk-1", "kind": "zookeeper", "url": "zk://127.0.0.1:2181",
             "gc_logs": [str(tmp_path / "z" / "*.log")], "gc": {"zk_session_ms": 3000}},
        ],
    }


def tail(cfg, clock=None) -> None:
    stop = threading.Event()
    stop.set()
    kw = {"clock": clock} if clock else {}
    with GcTailer(cfg, **kw) as t:
        t.run(stop)


def events_of_file(lh: Lakehouse, name: str) -> list[dict]:
    rows = [r for r in lh.read("gc_events").to_pylist() if r["file"].endswith(name)]
    return sorted(rows, key=lambda r: r["event_seq"])


def comparable(e: dict) -> tuple:
    return (e["event_type"], e["uptime_s"], e["pause_ms"], e["concurrent_ms"], e["heap_before_kb"], e["cause"])


def test_bronze_to_silver_whole_files_in_order_incrementally(tmp_path, spark):
    (tmp_path / "a").mkdir()
    (tmp_path / "z").mkdir()
    lines = (CORPUS / LONG_G1).read_text().splitlines(keepends=True)
    # cut inside a multi-line event: the pause's gc,start line is read, its summary is not
    cut = next(i for i, ln in enumerate(lines) if "gc,start" in ln and "Pause Young" in ln and i > 50) + 2
    (tmp_path / "a" / "g1.log").write_text("".join(lines[:cut]))
    shutil.copy(CORPUS / UPTIME_ONLY, tmp_path / "z" / "uptime.log")
    with open(tmp_path / "z" / "junk.log", "wb") as fh:
        fh.write(b"[0.010s][info][gc] Using G1\n\x00\x01\x02 binary\n" + b"y" * 70_000 + b"\n"
                 + b"[0.020s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.5ms\n")
    cfg = config_from_dict(cfg_for(tmp_path))
    read_at = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
    tail(cfg, clock=lambda: read_at.timestamp())
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()))
    first = run_gc(slh, gc_params(cfg))
    assert first["gc_parse_stats"] == 3

    # the rest of the file arrives; only that file is parsed again, whole
    with open(tmp_path / "a" / "g1.log", "a") as fh:
        fh.write("".join(lines[cut:]))
    tail(cfg)
    second = run_gc(slh, gc_params(cfg))
    assert second["gc_parse_stats"] == 1
    lh = Lakehouse(cfg.lakehouse_root())
    assert files_to_parse(bronze_line_counts(lh), parsed_line_counts(lh)) == []  # next run: nothing to do

    expected, st = parse_file(CORPUS / LONG_G1)
    got = events_of_file(lh, "g1.log")
    assert [comparable(e) for e in got] == [comparable(e.to_dict()) for e in expected]  # nothing lost at the cut
    assert {e["wall_time_source"] for e in got} == {"log"}
    stats = {r["file"].rsplit("/", 1)[1]: r for r in lh.read("gc_parse_stats").to_pylist()}
    g1 = stats["g1.log"]
    assert (g1["lines"], g1["coverage"], g1["incomplete_events"], g1["collector"], g1["origin"]) == \
        (len(lines), 1.0, 0, "g1", "tail")
    assert g1["end_offset"] == (tmp_path / "a" / "g1.log").stat().st_size

    # uptime-only log: wall time = jvm_start + uptime, jvm_start ≤ read time − last event's uptime
    up = stats["uptime.log"]
    last_uptime = max(e.uptime_s for e in parse_file(CORPUS / UPTIME_ONLY)[0] if e.uptime_s is not None)
    assert up["wall_time_source"] == "estimated"
    assert up["jvm_start"] == read_at - timedelta(seconds=last_uptime)
    ev = events_of_file(lh, "uptime.log")
    assert all(e["wall_time"] == up["jvm_start"] + timedelta(seconds=e["uptime_s"]) for e in ev if e["uptime_s"] is not None)
    assert {e["wall_time_source"] for e in ev} == {"estimated"}

    junk = stats["junk.log"]
    # the NUL run is a copytruncate hole: rejected on its own, the bytes after it are a line of
    # their own (not understood); the 70 kB line is rejected as overlong
    assert (junk["lines"], junk["lines_rejected"], junk["events"]) == (5, 2, 1)
    assert junk["coverage"] == pytest.approx(2 / 5)  # rejected lines are not understood lines

    # gold: zk-1 overrides session-ms (3000 → ⅓ = 1000 ms); amq-a keeps the defaults
    found = lh.read("gc_findings").to_pylist()
    assert {f["target"] for f in found} >= {"amq-a"}
    assert all(f["group_name"] == "store-1" for f in found if f["target"] == "amq-a")
    assert not [f for f in found if f["code"] == "gc.pause-over-third-session" and f["target"] == "amq-a"]


def test_import_in_parallel_and_findings_with_thresholds(tmp_path, spark):
    cfg = config_from_dict(cfg_for(tmp_path, zk_session_ms=3000, connection_ttl_ms=2000))
    gz = CORPUS / "gcviewer/openjdk/SampleSun1_6_0PrintHeapAtGC.txt.gz"
    paths = [CORPUS / LONG_SERIAL, CORPUS / LONG_G1, gz]
    files = [("amq-a", file_identity(p), str(p)) for p in paths]
    seen: list[tuple[int, int]] = []
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()))
    counts = import_files(slh, gc_params(cfg), files, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (3, 3), seen  # one task per file
    expected = {p.name: parse_file(p)[0] for p in paths}
    assert counts["gc_events"] == sum(len(v) for v in expected.values())
    assert counts["gc_parse_stats"] == 3
    again = import_files(slh, gc_params(cfg), files)
    assert again == counts  # idempotent: the files' partitions are replaced

    lh = Lakehouse(cfg.lakehouse_root())
    stats = {Path(r["file"]).name: r for r in lh.read("gc_parse_stats").to_pylist()}
    assert {r["origin"] for r in stats.values()} == {"import"}
    assert stats[gz.name]["lines"] > 0 and stats[gz.name]["coverage"] == 1.0

    pauses = [e.pause_ms for p in (LONG_SERIAL, LONG_G1) for e in expected[Path(p).name] if e.is_pause]
    found = lh.read("gc_findings").to_pylist()
    by_code: dict[str, list[dict]] = {}
    for f in found:
        by_code.setdefault(f["code"], []).append(f)
    assert len(by_code["gc.pause-over-third-session"]) == sum(1 for p in pauses if p >= 1000)
    assert len(by_code["gc.pause-over-connection-ttl"]) == sum(1 for p in pauses if p >= 2000) == 2
    assert len({f["finding_id"] for f in found}) == len(found)
    worst = max(by_code["gc.pause-over-connection-ttl"], key=lambda f: f["value"])
    assert worst["value"] == 2685.822 and worst["threshold"] == 2000 and worst["event_type"] == "young"
    assert worst["ts"] is not None and "connection-ttl" in worst["message"] and worst["advice"]
    assert {"gc.full", "gc.explicit-system-gc", "gc.humongous"} <= set(by_code)


def test_gc_pauses_over_ha_thresholds_are_on_the_timeline():
    events, _ = parse_file(CORPUS / LONG_SERIAL)
    rows = [dict(e.to_dict(), event_seq=i, target="amq-a", file_id="f1", flags=",".join(e.flags) or None)
            for i, e in enumerate(events)]
    found = finding_rows(pa.Table.from_pylist(rows), {"amq-a": TargetRules("store-1", Thresholds(
        zk_session_ms=6000, connection_ttl_ms=2500))})
    gc_findings = pa.Table.from_pylist(found, schema=GC_FINDINGS.schema)
    empty = {n: contract(n).schema.empty_table() for n in ("role_intervals", "failover_events", "split_brain_windows")}
    state = contract("broker_state").schema.empty_table().select(["instance", "ts", "error", "role", "active"])
    entries = build_timeline(empty["role_intervals"], empty["failover_events"], empty["split_brain_windows"], state,
                             gc_findings=gc_findings)
    texts = [e.text for e in entries]
    assert texts == [
        "amq-a GC pause 2.5 s (young, Allocation Failure) — over ⅓ of session-ms 6.0 s",
        "amq-a GC pause 2.7 s (young, Allocation Failure) — over connection-ttl 2.5 s, over ⅓ of session-ms 6.0 s",
    ]
    assert {e.group for e in entries} == {"store-1"} and {e.what for e in entries} == {"gc-pause"}
    assert "group store-1" in render_text(entries)
    assert build_timeline(empty["role_intervals"], empty["failover_events"], empty["split_brain_windows"], state,
                          group="other", gc_findings=gc_findings) == []


@needs_corpus
@pytest.mark.parametrize("rel", [LONG_SERIAL, LONG_G1, "gcviewer/openjdk/SampleSun1_6_0PrintHeapAtGC.txt.gz",
                                 "gctoolkit/preunified/cms/defnew/details/defnew.log"])
def test_import_rows_from_columns_equal_rows_from_events(rel):
    """`gc import` parses a file into Arrow columns (collectors.gc.columnar); its rows equal
    those of the GcEvent row path (FileParse, line by line), stats row included."""
    import os

    from analysis.gc import PARSED, FileParse, _batches, parse_log_file
    from collectors.gc import open_log

    path = str(CORPUS / rel)
    got = pa.Table.from_batches(list(parse_log_file("t", "f", path)), schema=PARSED.schema).to_pylist()
    fp = FileParse("t", "f", path, "import")
    with open_log(path) as fh:
        rows = [r for n, line in enumerate(fh, 1) for r in fp.line(n, line)]
    st, span = os.stat(path), fp.parser.time_span()
    jvm_start = None
    if span is not None and span[1][0] is not None:
        jvm_start = datetime.fromtimestamp(st.st_mtime, timezone.utc) - timedelta(seconds=span[1][0])
    want = pa.Table.from_batches(list(_batches(rows + fp.finish(st.st_size, jvm_start))), schema=PARSED.schema)
    assert len(got) == want.num_rows
    for i, (a, b) in enumerate(zip(got, want.to_pylist())):
        assert a == b, f"row {i}: columnar {a}\n events {b}"
