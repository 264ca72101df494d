"""Our own resilience, with real processes, real files and real Delta tables:

* the collector (`brokerscope collect`, a real subprocess scraping real HTTP endpoints) killed -9
  at random moments under load and restarted: no bronze row duplicated, every bronze row a complete
  recorded scrape, rows lost only from the last unflushed batch and all of them in the recording,
  from which `replay` restores bronze exactly;
* the analyzer (`brokerscope analyze`, Spark) killed -9 mid-run and rerun: silver and gold
  identical to a clean run (slow);
* a full disk (a real 4 MiB tmpfs filled up) and a read-only lakehouse (the tmpfs remounted ro):
  a clear error naming the table and the fix, scraping goes on, the rows stay buffered and land
  when space returns — none lost;
* a damaged Delta table (a truncated parquet file, a missing `_delta_log` commit, the last commit
  deleted) and two writers at once: clear errors naming the table and the fix, writes refused
  rather than silently dropped, nothing lost that a recording can give back;
* clock skew between the collector and the brokers: observation times are the collector's, so
  intervals are unaffected; the skew is measurable from Jolokia's item timestamps.

Figures (rows lost/duplicated per kill, time to resume) are printed; run with `-s` to see them.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.activemq import ActiveMQPack
from collectors.base import broker_clock_skew_s, obs_key, parse_ts
from collectors.recording import ReadReport, observation_from_envelope, read_envelopes
from collectors.replay import replay
from collectors.scraper import Collector
from lakehouse.store import Lakehouse, LakehouseError
from lakehouse.tables import TABLES
from settings import config_from_dict, load_config
from tests.jolokia_stub import activemq_items, jolokia_stub
from tests.jolokia_stub import replay as replay_route

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def run(coro):
    return asyncio.run(coro)


def figures(name: str, **values) -> None:
    print(f"\nFIGURES {name}: " + json.dumps(values, default=str))


def recorded_keys(path: Path, report: ReadReport | None = None) -> dict[str, dict]:
    return {obs_key(e["source"], e["target"], parse_ts(e["ts"]), e["request"]): e for e in read_envelopes(path, report)}


# --- the collector, killed -9 under load ----------------------------------------------------------

N_TARGETS = 12
INTERVAL = 0.25
FLUSH = 0.5


def _write_config(tmp_path: Path, stub) -> Path:
    targets = "".join(
        f"  - {{name: amq-{i:02d}, kind: activemq, url: '{stub.url(f'/t{i % 2}')}', group: g{i // 2}, timeout: 2s}}\n"
        for i in range(N_TARGETS))
    p = tmp_path / "c.yaml"
    p.write_text(f"lakehouse: ./lh\nscrape_interval: {int(INTERVAL * 1000)}ms\nflush_interval: {int(FLUSH * 1000)}ms\n"
                 f"targets:\n{targets}")
    return p


def test_collector_killed_9_at_random_moments_loses_and_duplicates_nothing(tmp_path):
    rng = random.Random(int(os.environ.get("P8_SEED", "8")))
    routes = {"/t0": replay_route(activemq_items("amq-a")), "/t1": replay_route(activemq_items("amq-b"))}
    kills: list[float] = []
    starts: list[float] = []
    rec = tmp_path / "rec.jsonl.gz"
    with jolokia_stub(routes) as stub:
        cfg_path = _write_config(tmp_path, stub)
        cmd = [sys.executable, "-m", "brokerscope", "collect", "--config", str(cfg_path), "--record", str(rec), "-q"]
        cycles = int(os.environ.get("P8_KILL_CYCLES", "6"))
        for i in range(cycles + 1):
            last = i == cycles
            with open(tmp_path / f"collect-{i}.log", "wb") as log:
                starts.append(time.time())
                proc = subprocess.Popen(cmd + (["--duration", "3s"] if last else []), cwd=ROOT, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
                try:
                    if last:
                        assert proc.wait(120) == 0, (tmp_path / f"collect-{i}.log").read_text()[-2000:]
                    else:
                        time.sleep(rng.uniform(2.0, 5.0))  # imports take 1–3 s here: some kills land before the first scrape
                        kills.append(time.time())
                        os.kill(proc.pid, signal.SIGKILL)
                        proc.wait(30)
                finally:
                    if proc.poll() is None:
                        os.kill(proc.pid, signal.SIGKILL)
                        proc.wait()
    report = ReadReport()
    recorded = recorded_keys(rec, report)
    cfg = load_config(cfg_path)
    lh = Lakehouse(cfg.lakehouse_root())
    bronze = lh.read("bronze_jolokia").to_pylist()
    keys = [r["obs_key"] for r in bronze]
    duplicated = len(keys) - len(set(keys))
    assert duplicated == 0
    assert set(keys) <= set(recorded), "a bronze row that is not in the recording"
    for r in bronze:  # every landed scrape is whole: its raw answer exactly as recorded
        env = recorded[r["obs_key"]]
        assert r["response_json"] == (None if env["response"] is None else json.dumps(env["response"], separators=(",", ":")))
        assert r["error"] == env["error"]
    lost = [e for k, e in recorded.items() if k not in set(keys)]
    # rows missing from bronze were only those buffered at a kill (the last flush interval + a commit)
    lost_per_kill = [0] * len(kills)
    for e in lost:
        t = parse_ts(e["ts"]).timestamp()
        i = next((j for j, k in enumerate(kills) if t <= k), None)
        assert i is not None and kills[i] - t < FLUSH + 3.0, f"row {e['target']} {e['ts']} lost long before a kill"
        lost_per_kill[i] += 1
    resume = []
    times = sorted(parse_ts(e["ts"]).timestamp() for e in recorded.values())
    for s in starts[1:]:
        after = [t for t in times if t >= s]
        if after:
            resume.append(after[0] - s)
    # replay restores bronze exactly from the recording: nothing is lost for good
    res = replay(cfg, rec)
    assert res.new_rows == len(lost)
    again = lh.read("bronze_jolokia").column("obs_key").to_pylist()
    assert len(again) == len(set(again)) == len(recorded)
    figures("collector-kill-9", cycles=len(kills), scrapes_recorded=len(recorded), bronze_rows_before_replay=len(keys),
            duplicated=duplicated, lost_from_bronze_per_kill=lost_per_kill,
            lost_after_replay=len(recorded) - len(set(again)),
            recording_damaged_segments=report.damaged_segments, recording_bad_lines=len(report.bad_lines),
            resume_s_median=round(statistics.median(resume), 2) if resume else None,
            resume_s_max=round(max(resume), 2) if resume else None)
    assert report.bad_lines == [] or all("not JSON" in why for _n, why in report.bad_lines)
    assert len(recorded) > 100


# --- the analyzer, killed -9 mid-run ---------------------------------------------------------------


def _replayed_lakehouse(folder: Path) -> Path:
    folder.mkdir()
    text = (FIXTURES / "drill_kill_master.yaml").read_text()
    cfg = folder / "c.yaml"
    cfg.write_text(text)
    replay(load_config(cfg), FIXTURES / "drill_kill_master.jsonl.gz")
    return cfg


def _analyze(cfg: Path, kill_after: tuple[str, float] | None = None) -> tuple[int, str]:
    """Run `brokerscope analyze`; with kill_after=(phrase, seconds), SIGKILL it that long after the
    phrase appears in its output. Returns (return code, output)."""
    proc = subprocess.Popen([sys.executable, "-m", "brokerscope", "analyze", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out: list[str] = []
    seen = threading.Event()

    def pump():
        for line in proc.stdout:
            out.append(line)
            if kill_after and kill_after[0] in line:
                seen.set()

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    try:
        if kill_after:
            if seen.wait(600):
                time.sleep(kill_after[1])
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM Spark started too
        rc = proc.wait(900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    t.join(10)
    return rc, "".join(out)


def assert_spark_was_quiet(out: str) -> None:
    """`analyze` starts Spark with brokerscope's log4j2 file (as `run` does): its output holds the
    progress lines (stderr, "· …") and the row counts (stdout, "table: N rows"), no default-profile
    banner, no "Setting default log level", no WARN lines (tests/test_cli.py tests the -v switch)."""
    noise = [line for line in out.splitlines()
             if not line.startswith("· ") and not re.fullmatch(r"\w+: \d+ rows", line)
             # the JVM's own notice about incubator modules is printed before any logging exists
             and "incubator modules" not in line]
    assert noise == [], noise[:20]


def _sorted_rows(lh: Lakehouse, name: str) -> list[tuple]:
    return sorted((tuple((k, repr(v)) for k, v in sorted(r.items())) for r in lh.read(name).to_pylist()))


@pytest.mark.slow
def test_analyzer_killed_9_mid_run_then_rerun_gives_the_clean_gold(analysed_kill_master, tmp_path):
    rng = random.Random(9)
    # the clean run: the same recording replayed and analysed once, uninterrupted, for the session (tests/conftest.py)
    clean = Lakehouse(analysed_kill_master.root)
    killed_cfg = _replayed_lakehouse(tmp_path / "killed")
    kill_points = [("bronze → silver", rng.uniform(0.0, 4.0)), ("silver → gold", rng.uniform(0.0, 2.0))]
    for phrase, delay in kill_points:
        rc, out = _analyze(killed_cfg, (phrase, delay))
        assert rc == -signal.SIGKILL, out[-2000:]
    t0 = time.time()
    rc, out = _analyze(killed_cfg)
    rerun_s = time.time() - t0
    assert rc == 0, out[-3000:]
    assert_spark_was_quiet(out)
    a, b = clean, Lakehouse(tmp_path / "killed" / "lakehouse")
    compared = []
    for name, c in TABLES.items():
        if c.layer in ("silver", "gold") and (a.exists(name) or b.exists(name)):
            assert _sorted_rows(a, name) == _sorted_rows(b, name), f"{name} differs after kill -9 and rerun"
            compared.append(f"{name}:{a.count(name)}")
    assert any(x.startswith("failover_events:") and not x.endswith(":0") for x in compared)
    figures("analyzer-kill-9", kill_points=kill_points, tables_identical=compared,
            rerun_after_kills_s=round(rerun_s, 1))


# --- full disk, read-only lakehouse -----------------------------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path):
    """A real 4 MiB tmpfs (needs root): writes fail with ENOSPC once it is full."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "tinyfs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(folder: Path) -> Path:
    filler = folder / "filler.bin"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (256 << 10))
                fh.flush()
        except OSError:
            pass
    return filler


@pytest.mark.parametrize("fault", ["disk-full", "read-only"])
def test_full_or_read_only_lakehouse_then_space_returns_nothing_lost(tmp_path, tiny_fs, fault):
    routes = {"/t0": replay_route(activemq_items("amq-a")), "/t1": replay_route(activemq_items("amq-b"))}
    with jolokia_stub(routes) as stub:
        cfg = config_from_dict({
            "lakehouse": str(tiny_fs / "lh"), "scrape_interval": "200ms", "flush_interval": "300ms",
            "targets": [{"name": f"amq-{i}", "kind": "activemq", "url": stub.url(f"/t{i % 2}"), "group": "g"} for i in range(3)]})
        col = Collector(cfg, record=str(tmp_path / "rec.jsonl"))
        done = threading.Event()
        th = threading.Thread(target=lambda: (run(col.run(duration=12.0)), done.set()), daemon=True)
        th.start()
        started = time.time()
        while col.stats.bronze_rows == 0 and time.time() - started < 15:  # the first commit creates the table
            time.sleep(0.05)
        assert col.stats.bronze_rows > 0 and col.stats.flush_errors == 0
        if fault == "disk-full":
            filler = _fill(tiny_fs)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], check=True)
        broke_at = time.time()
        while col.stats.flush_errors < 2 and time.time() - broke_at < 10:
            time.sleep(0.1)
        scrapes_during = sum(s.scrapes for s in col.stats.targets.values())
        time.sleep(1.5)
        err = col.stats.last_flush_error or ""
        assert "table 'bronze_jolokia'" in err and str(tiny_fs / "lh") in err
        assert ("the disk is full" in err and "df -h" in err) if fault == "disk-full" else \
            ("read-only" in err and "remount it read-write" in err), err
        assert sum(s.scrapes for s in col.stats.targets.values()) > scrapes_during  # scraping went on
        stuck_rows = col.stats.bronze_rows
        if fault == "disk-full":
            filler.unlink()
        else:
            subprocess.run(["mount", "-o", "remount,rw", str(tiny_fs)], check=True)
        freed_at = time.time()
        while col.stats.bronze_rows == stuck_rows and time.time() - freed_at < 10:
            time.sleep(0.05)
        resumed_s = time.time() - freed_at
        assert done.wait(30)
    lh = Lakehouse(cfg.lakehouse_root())
    keys = lh.read("bronze_jolokia").column("obs_key").to_pylist()
    recorded = recorded_keys(tmp_path / "rec.jsonl")
    scrapes = sum(s.scrapes for s in col.stats.targets.values())
    assert len(keys) == len(set(keys)) == scrapes == len(recorded) and set(keys) == set(recorded)
    figures(f"lakehouse-{fault}", scrapes=scrapes, failed_commits=col.stats.flush_errors, rows_lost=scrapes - len(keys),
            time_to_resume_s=round(resumed_s, 2), error=err.splitlines()[0][:160])


# --- damaged and concurrently modified Delta tables ------------------------------------------------


def _bronze_rows(n: int, start: int = 0) -> list[dict]:
    ts = datetime(2026, 11, 22, 1, tzinfo=timezone.utc).timestamp()
    return [{"obs_key": f"k{start + i:05d}", "ts": datetime.fromtimestamp(ts + start + i, timezone.utc), "obs_date": "2026-11-22",
             "target": "amq-a", "kind": "activemq", "request_json": "[]", "response_json": "[]"} for i in range(n)]


def _three_commits(tmp_path: Path) -> Lakehouse:
    lh = Lakehouse(tmp_path / "lh")
    for j in range(3):
        lh.append_new("bronze_jolokia", _bronze_rows(50, 100 * j))
    return lh


def test_truncated_parquet_file_clear_error_writes_refused_then_repaired(tmp_path):
    lh = _three_commits(tmp_path)
    table = lh.uri("bronze_jolokia")
    victim = sorted(glob.glob(f"{table}/obs_date=*/*.parquet"), key=os.path.getmtime)[1]
    data = Path(victim).read_bytes()
    Path(victim).write_bytes(data[: len(data) // 2])
    # a read, and a write whose rows' time reaches the damaged file's (its keys must be checked there)
    for op in (lambda: lh.read("bronze_jolokia"), lambda: lh.append_new("bronze_jolokia", _bronze_rows(5, 140))):
        with pytest.raises(LakehouseError) as e:
            op()
        msg = str(e.value)
        assert "table 'bronze_jolokia'" in msg and f"data file {victim} is damaged" in msg
        assert "repair()" in msg and "brokerscope replay" in msg
    # later rows cannot repeat a key of the damaged file (bronze keys hash ts): collection goes on
    assert lh.append_new("bronze_jolokia", _bronze_rows(5, 1000)) == 5
    # the collector's buffer keeps what could not be written, and lands it once the table is repaired
    from collectors.bronze import BronzeBuffer

    buf = BronzeBuffer(lh, "bronze_jolokia")
    buf.extend(_bronze_rows(5, 140))
    with pytest.raises(LakehouseError):
        buf.flush()
    assert len(buf) == 5
    shutil.move(victim, tmp_path / "damaged.parquet")
    from deltalake import DeltaTable

    DeltaTable(table).repair()
    assert buf.flush() == 5 and len(buf) == 0
    assert lh.count("bronze_jolokia") == 110  # the damaged file's other 45 rows: gone until replayed from a recording


def test_missing_commit_in_the_middle_names_it(tmp_path):
    lh = _three_commits(tmp_path)
    os.remove(Path(lh.uri("bronze_jolokia")) / "_delta_log" / "00000000000000000001.json")
    for op in (lambda: lh.read("bronze_jolokia"), lambda: lh.append_new("bronze_jolokia", _bronze_rows(1, 999))):
        with pytest.raises(LakehouseError) as e:
            op()
        assert "transaction log has a gap: commit file(s) _delta_log/00000000000000000001.json is missing" in str(e.value)
        assert "restore the missing commit" in str(e.value)


def test_deleted_last_commit_rolls_back_silently_and_replay_restores_it(tmp_path):
    """Delta cannot tell a deleted last commit from one never made: the table reads one version
    back (a known limit, reported). The recording gives the rows back, idempotently."""
    from collectors.recording import RecordingWriter, envelope

    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"),
                            "targets": [{"name": "amq-a", "kind": "activemq", "url": "http://127.0.0.1:1/j", "group": "g"}]})
    rec = tmp_path / "rec.jsonl"
    base = datetime(2026, 11, 22, 1, tzinfo=timezone.utc).timestamp()
    with RecordingWriter(rec) as w:
        for j in range(3):
            for i in range(20):
                w.write(envelope(datetime.fromtimestamp(base + j * 100 + i, timezone.utc), "amq-a", [{"type": "version"}],
                                 [{"status": 200, "value": {}}], None, 1.0))
    envs = list(read_envelopes(rec))
    lh = Lakehouse(tmp_path / "lh")
    for j in range(3):  # three commits, as three flushes of the collector
        part = tmp_path / f"part{j}.jsonl"
        part.write_text("".join(json.dumps(e) + "\n" for e in envs[j * 20:(j + 1) * 20]))
        replay(cfg, part, lh)
    os.remove(Path(lh.uri("bronze_jolokia")) / "_delta_log" / "00000000000000000002.json")
    assert lh.count("bronze_jolokia") == 40
    assert replay(cfg, rec, lh).new_rows == 20
    assert lh.count("bronze_jolokia") == 60


WRITER = """
import sys
from datetime import datetime, timezone, timedelta
from lakehouse.store import Lakehouse
root, who, same = sys.argv[1], sys.argv[2], sys.argv[3] == "same"
lh = Lakehouse(root)
t0 = datetime(2026, 11, 22, tzinfo=timezone.utc)
for j in range(25):
    lh.append_new("bronze_jolokia", [{"obs_key": f"{'x' if same else who}-{j}-{i}", "ts": t0 + timedelta(seconds=j),
                  "obs_date": "2026-11-22", "target": who, "kind": "activemq", "request_json": "[]"} for i in range(10)])
"""


@pytest.mark.parametrize("keys", ["distinct", "same"])
def test_two_writers_at_once_lose_and_duplicate_nothing(tmp_path, keys):
    """Two processes ingest into one table at the same time (a collector and a replay; two replays of
    one recording): delta-rs resolves the concurrent appends, and the per-table ingest lock makes the
    key check and the append atomic, so the same keys never land twice (measured without the lock:
    140 duplicates out of 300 keys)."""
    (tmp_path / "w.py").write_text(WRITER)
    lh = Lakehouse(tmp_path / "lh")
    lh.append_new("bronze_jolokia", _bronze_rows(1))
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "w.py"), str(tmp_path / "lh"), who, keys], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True)
             for who in ("A", "B")]
    try:
        for p in procs:
            assert p.wait(300) == 0, p.stderr.read()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    got = lh.read("bronze_jolokia").column("obs_key").to_pylist()
    expected = 1 + (500 if keys == "distinct" else 250)
    assert len(got) == len(set(got)) == expected


# --- clock skew -----------------------------------------------------------------------------------


@pytest.mark.parametrize("skew_s", [0, 3600, -90])
def test_clock_skew_does_not_move_observations_and_is_measured(tmp_path, skew_s):
    routes = {"/b": replay_route(activemq_items("amq-a"), clock_offset_s=skew_s)}
    with jolokia_stub(routes) as stub:
        cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "300ms", "flush_interval": "300ms",
                                "targets": [{"name": "amq-a", "kind": "activemq", "url": stub.url("/b"), "group": "g"}]})
        t0 = time.time()
        run(Collector(cfg, record=str(tmp_path / "rec.jsonl")).run(duration=1.0))
        t1 = time.time()
    envs = list(read_envelopes(tmp_path / "rec.jsonl"))
    assert len(envs) >= 2
    for env in envs:
        obs = observation_from_envelope(env, "activemq", "g")
        assert t0 - 0.01 <= obs.ts.timestamp() <= t1  # the collector's clock, whatever the broker's says
        (state,) = ActiveMQPack().normalize(obs, "k").broker_state
        assert state["ts"] == obs.ts and state["active"] is True  # silver keeps the observation time
        skew = broker_clock_skew_s(obs)
        assert skew is not None and abs(skew - skew_s) <= 1.5 + (obs.elapsed_ms or 0) / 1000, (skew, skew_s)


@pytest.mark.parametrize("which", ["middle", "last"])
def test_corrupt_commit_advice_works_when_followed(tmp_path, which):
    """The advice for an unparsable commit, followed to the letter, gives a readable table: for
    the last commit, moving it away; for one in the middle (a gap would follow), rebuilding."""
    lh = _three_commits(tmp_path)
    log = Path(lh.uri("bronze_jolokia")) / "_delta_log"
    victim = log / ("00000000000000000001.json" if which == "middle" else "00000000000000000002.json")
    victim.write_text("{not json")
    with pytest.raises(LakehouseError) as e:
        lh.read("bronze_jolokia")
    advice = e.value.advice
    if which == "last":
        assert "move commit file _delta_log/00000000000000000002.json out of `_delta_log`" in advice
        shutil.move(victim, tmp_path / "bad.json")
        assert lh.count("bronze_jolokia") == 100
    else:
        assert "in the middle of the log (1 later commit(s) follow)" in advice and "would leave a gap" in advice
        assert "move it out" not in advice
        from deltalake import DeltaTable

        assert DeltaTable(lh.uri("bronze_jolokia"), version=0).to_pyarrow_table().num_rows == 50  # as the advice says
        shutil.move(lh.uri("bronze_jolokia"), str(tmp_path / "broken"))  # `mv … .broken`, then rebuild
        lh.append_new("bronze_jolokia", _bronze_rows(50))
        assert lh.count("bronze_jolokia") == 50
