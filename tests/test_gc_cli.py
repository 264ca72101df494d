"""`brokerscope gc report/import/tail/analyze` and GC in `collect`, `analyze`, `timeline`, as a user
runs them; report numbers checked against values the corpus' own tools assert."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest
import yaml

from brokerscope.cli import main
from collectors.gc.analysis import Thresholds, percentile, time_share_findings
from collectors.recording import read_envelopes
from lakehouse.store import Lakehouse
from tests import gc_expected as X
from tests.servers import free_port
from tests.test_gc_parser import CORPUS, needs_corpus

LONG_SERIAL = "local-jdk17/longpause_serial_time-uptime-level-tags.log"


def report_json(capsys, rel: str, *extra: str) -> dict:
    assert main(["gc", "report", str(CORPUS / rel), "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


# --- percentiles -----------------------------------------------------------------------------------


def test_percentiles_are_nearest_rank_and_not_one_step_off():
    values = [float(v) for v in range(1, 1001)]  # 1 … 1000
    assert [percentile(values, p) for p in (50, 95, 99, 99.9, 100)] == [500, 950, 990, 999, 1000]
    assert [percentile([1.0, 2.0, 3.0, 4.0], p) for p in (25, 50, 75, 99.9)] == [1, 2, 3, 4]
    assert percentile([7.0], 99.9) == 7 and percentile([], 50) is None
    # GCViewer's summary would print the value at 50 % under "75th", at 95 % under "99th" …
    assert percentile(values, 75) == 750 and percentile(values, 99) == 990


def test_time_share_splits_pauses_over_windows_and_uses_the_covered_time():
    th = Thresholds(time_share_window_s=10.0, time_share_pct=30.0)
    events = [
        {"event_type": "young", "uptime_s": 1.0, "pause_ms": 100.0},
        {"event_type": "full", "uptime_s": 8.0, "pause_ms": 4000.0},  # 2 s in [0, 10), 2 s in [10, 20)
        {"event_type": "safepoint", "uptime_s": 15.0, "pause_ms": 9000.0},  # not a GC pause
        {"event_type": "young", "uptime_s": 29.0, "pause_ms": 10.0},  # the log ends at 29.01 s
    ]
    # [0, 10): 2.1 s of the 9 s covered (the log starts at 1 s) = 23 %; [10, 20): 2 s of 10 s = 20 %
    assert time_share_findings(events, th) == []
    th = Thresholds(time_share_window_s=10.0, time_share_pct=15.0)
    found = {f["key"]: f["value"] for f in time_share_findings(events, th)}
    assert found == {"w0": pytest.approx(100 * 2.1 / 9, abs=1e-3), "w1": pytest.approx(20.0)}


# --- report: numbers the corpus' tools assert --------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("rel,key,value", [
    # GCViewer TestDataReaderFactory/…: getPause() N and sum (portable), getFullGCPause() N
    ("gcviewer/openjdk/SampleSun1_4_0AdaptiveSizePolicy.txt", "pause_count", 9),
    ("gcviewer/openjdk/SampleSun1_4_0AdaptiveSizePolicy.txt", "pause_total_ms", 197.8746),
    ("gcviewer/openjdk/SampleSun1_4_0AdaptiveSizePolicy.txt", "full_count", 3),
    ("gcviewer/openjdk/SampleSun1_5_0AdaptiveSizePolicy.txt", "pause_total_ms", 102.4222),
    ("gcviewer/openjdk/SampleSun1_6_0G1_gc_verbose.txt", "pause_max_ms", 158.1177),
    # the corpus README's deliberately long pauses (JDK 17)
    (LONG_SERIAL, "pause_max_ms", 2685.822),
    ("local-jdk17/longpause_parallel_time-uptime-level-tags.log", "pause_max_ms", 3472.438),
    ("local-jdk17/longpause_g1_time-uptime-level-tags.log", "pause_max_ms", 1954.09),
])
def test_report_matches_the_corpus_values(capsys, rel, key, value):
    rep = report_json(capsys, rel)
    assert rep[key] == pytest.approx(value, abs=1e-6)
    assert rep["coverage"] == 1.0


JIFA_SIZES = [r for r in (X.load_rows(CORPUS) if CORPUS else []) if r.metric == "jifa: model.getGcEvents().size()"]


@needs_corpus
@pytest.mark.parametrize("row", JIFA_SIZES, ids=[r.file for r in JIFA_SIZES])
def test_gc_count_counts_collections_as_jifa_does(capsys, row):
    assert report_json(capsys, row.file)["gc_count"] == int(row.value)


@needs_corpus
def test_report_json_and_text(capsys, tmp_path):
    rep = report_json(capsys, LONG_SERIAL)
    assert (rep["collector"], rep["gc_count"], rep["pause_count"], rep["full_count"]) == ("serial", 5, 5, 3)
    assert rep["pause_total_ms"] == pytest.approx(9111.882)
    assert (rep["pause_p50_ms"], rep["pause_p99_9_ms"]) == (1615.158, 2685.822)
    assert rep["percentile_method"] == "nearest-rank"
    assert rep["throughput_pct"] == pytest.approx(100 * (1 - 9.111882 / rep["span_s"]), abs=1e-3)
    assert rep["allocation_rate_mib_s"] > 0 and rep["promotion_rate_mib_s"] > 0
    assert rep["first_wall_time"].endswith("Z")
    assert {f["code"] for f in rep["findings"]} == {"gc.full", "gc.explicit-system-gc", "gc.time-share"}
    # thresholds from a config: 2.7 s ≥ ⅓ of 6 s, ≥ a 2.5 s connection TTL
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"lakehouse": "./lh", "gc": {"zk_session_ms": 6000, "connection_ttl_ms": 2500},
                                   "targets": []}))
    rep = report_json(capsys, LONG_SERIAL, "--config", str(cfg))
    by = {f["code"]: f for f in rep["findings"]}
    assert by["gc.pause-over-third-session"]["count"] == 2 and by["gc.pause-over-connection-ttl"]["count"] == 1
    assert rep["findings"][0]["severity"] == "error"

    assert main(["gc", "report", str(CORPUS / LONG_SERIAL)]) == 0
    text = capsys.readouterr().out
    for expected in ("collector   serial", "pauses      5, total 9,111.882 ms, max 2,685.822 ms",
                     "p99.9 2,685.822", "(nearest rank)", "throughput", "gc.explicit-system-gc"):
        assert expected in text, expected


@pytest.mark.parametrize("digits", [20, 400])  # 1e19 ms: finite but absurd; 1e399 ms: float inf
def test_a_corrupt_duration_is_left_out_not_summed(tmp_path, capsys, digits):
    ok = "[2026-11-22T07:00:0{s}.000+0000][{s}.000s][info][gc] GC({n}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) {ms}ms\n"
    log = tmp_path / "gc.log"
    log.write_text(ok.format(s=1, n=0, ms="3.000") + ok.format(s=2, n=1, ms="9" * digits + ".000") + ok.format(s=3, n=2, ms="5.000"))
    assert main(["gc", "report", str(log), "--format", "json"]) == 0  # (an infinite pause used to hang the time-share windows)
    rep = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert (rep["gc_count"], rep["pause_count"], rep["pause_total_ms"], rep["pause_max_ms"]) == (3, 2, 8.0, 5.0)
    assert rep["implausible_lines"] == [2] and rep["coverage"] == 1.0
    assert main(["gc", "report", str(log)]) == 0
    assert "1 event(s) with a corrupt duration left out of the pause figures (line 2)" in capsys.readouterr().out


def test_report_errors_exit_2(tmp_path, capsys):
    assert main(["gc", "report", str(tmp_path / "missing.log")]) == 2
    assert "not found" in capsys.readouterr().err
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"lakehouse": "./lh", "targets": []}))
    (tmp_path / "empty").mkdir()
    assert main(["gc", "import", str(tmp_path / "empty"), "--config", str(cfg)]) == 2
    assert "no files" in capsys.readouterr().err


def test_analyze_runs_the_gc_jobs_first_when_there_is_gc_data(tmp_path, monkeypatch, spark):
    """`analyze` (CLI, demo and tests alike) runs the GC jobs before the others: the ZooKeeper job
    links lost sessions and elections to gc_findings."""
    import analysis.runner
    from settings import config_from_dict

    calls = []
    monkeypatch.setattr(analysis.runner, "run_gc", lambda slh, cfg, full=False, progress=None: calls.append("gc") or {"gc_events": 3})
    for name in ("run_spine", "run_stuck", "run_lag"):
        monkeypatch.setattr(analysis.runner, name, lambda *a, _n=name, **k: calls.append(_n) or {})
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "targets": []})
    analysis.runner.analyze(cfg, spark=spark)
    assert calls == ["run_spine", "run_stuck", "run_lag"]  # no GC data: no GC jobs
    Lakehouse(tmp_path / "lh").append("bronze_gc_lines", [{
        "target": "a", "file_id": "f", "offset": 0, "length": 2, "line_no": 1, "line": "x",
        "ts": datetime.now(timezone.utc), "file": "gc.log"}])
    calls.clear()
    assert analysis.runner.analyze(cfg, spark=spark) == {"gc_events": 3}
    assert calls == ["gc", "run_spine", "run_stuck", "run_lag"]


# --- end to end: collect (Jolokia + GC tail) → gc analyze → timeline; import with a progress bar ---


@needs_corpus
def test_collect_analyze_timeline_and_import(tmp_path, capsys, spark):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(CORPUS / LONG_SERIAL, logs / "gc.log")
    cfg = tmp_path / "brokerscope.yaml"
    cfg.write_text(yaml.safe_dump({
        "lakehouse": "./lh", "scrape_interval": "250ms", "flush_interval": "250ms",
        "gc": {"zk_session_ms": 6000, "poll_interval": "100ms"},
        "targets": [{"name": "amq-a", "kind": "activemq", "group": "store-1",
                     "url": f"http://127.0.0.1:{free_port()}/jolokia", "gc_logs": ["logs/gc.log*"]}],
    }))
    rec = tmp_path / "rec.jsonl.gz"
    assert main(["collect", "--config", str(cfg), "--duration", "1s", "--record", str(rec), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "82 GC log lines" in out  # the Jolokia side: refused scrapes, recorded as error observations
    lh = Lakehouse(tmp_path / "lh")
    assert lh.count("bronze_gc_lines") == 82 and lh.count("bronze_jolokia") >= 2
    sources = [e["source"] for e in read_envelopes(rec)]
    assert "gc.log" in sources and "jolokia" in sources

    assert main(["gc", "analyze", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "gc_events: 10 rows" in out and "gc_findings:" in out
    assert main(["timeline", "--config", str(cfg)]) == 0  # GC findings alone make a timeline
    out = capsys.readouterr().out
    assert "amq-a GC pause 2.7 s (young, Allocation Failure) — over ⅓ of session-ms 6.0 s" in out

    # an archive of the same JVM: parsed in parallel, with a progress bar on stderr
    archive = tmp_path / "archive"
    archive.mkdir()
    shutil.copy(CORPUS / "local-jdk17/longpause_g1_time-uptime-level-tags.log", archive / "old.log")
    shutil.copy(CORPUS / "gcviewer/openjdk/SampleSun1_6_0PrintHeapAtGC.txt.gz", archive / "older.log.gz")
    assert main(["gc", "import", str(archive), "--config", str(cfg), "--target", "amq-a"]) == 0
    captured = capsys.readouterr()
    assert "parsing [" in captured.err and "2/2 files" in captured.err
    assert "gc_parse_stats: 2 rows" in captured.out
    origins = {r["origin"] for r in lh.read("gc_parse_stats").to_pylist()}
    assert origins == {"tail", "import"}
    assert main(["gc", "import", str(archive), "--config", str(cfg)]) == 2  # which JVM? say so
    assert "--target" in capsys.readouterr().err
