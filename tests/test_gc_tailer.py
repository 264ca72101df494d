"""GC log tailing: JDK rotation, truncation, partial last lines, garbage and overlong lines, and a
kill -9 at any point (no line lost, none duplicated)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from collectors.gc.tailer import HEAD_BYTES, GcTailer, OffsetStore, StateFileBusy, file_identity, read_lines
from collectors.recording import RecordingWriter, read_envelopes
from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict

ROOT = Path(__file__).resolve().parents[1]


def gc_line(i: int) -> str:
    """A unified-logging GC line (parseable), unique per i."""
    return f"[{i / 1000:.3f}s][info][gc] GC({i}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) {1 + i % 7}.{i % 1000:03d}ms"


def config(tmp_path: Path, pattern: str = "logs/gc.log*", **gc) -> dict:
    return {
        "lakehouse": str(tmp_path / "lh"),
        "gc": {"poll_interval": "50ms", **gc},
        "targets": [{"name": "jvm", "kind": "activemq", "url": "http://127.0.0.1:1/jolokia",
                     "gc_logs": [str(tmp_path / pattern)]}],
    }


def tail_once(tmp_path: Path, **kw):
    """Read what is there, commit, stop (like `gc tail --once`)."""
    stop = threading.Event()
    stop.set()
    with GcTailer(config_from_dict(config(tmp_path, **kw.pop("cfg", {}))), **kw) as t:
        return t.run(stop)


def bronze(tmp_path: Path) -> list[dict]:
    rows = Lakehouse(tmp_path / "lh").read("bronze_gc_lines").to_pylist()
    return sorted(rows, key=lambda r: (r["file_id"], r["offset"]))


def texts(rows: list[dict]) -> list[str]:
    return [r["line"] for r in rows if r["error"] is None]


def append(path: Path, lines: list[str] | str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(lines if isinstance(lines, str) else "".join(x + "\n" for x in lines))


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    return d


def test_follows_jdk_rotation_by_file_identity(tmp_path, logs):
    # JDK 9+: gc.log is renamed to gc.log.<n> and a new gc.log is opened
    append(logs / "gc.log", [gc_line(i) for i in range(0, 10)])
    tail_once(tmp_path)
    append(logs / "gc.log", [gc_line(i) for i in range(10, 15)])  # written before the rotation, not read yet
    os.rename(logs / "gc.log", logs / "gc.log.0")
    append(logs / "gc.log", [gc_line(i) for i in range(15, 20)])
    # JDK 8: gc.log.0.current is renamed to gc.log.0 … here: a second archive name cycle
    append(logs / "gc.log.1.current", [gc_line(i) for i in range(100, 103)])
    tail_once(tmp_path)
    append(logs / "gc.log.1.current", [gc_line(103)])
    os.rename(logs / "gc.log.1.current", logs / "gc.log.1")
    stats = tail_once(tmp_path)

    rows = bronze(tmp_path)
    by_file: dict[str, list[dict]] = {}
    for r in rows:
        by_file.setdefault(r["file_id"], []).append(r)
    assert sorted(texts(rows)) == sorted(gc_line(i) for i in [*range(20), *range(100, 104)])
    assert len(by_file) == 3, "one file id per file, whatever its name"
    first = next(v for v in by_file.values() if v[0]["line"] == gc_line(0))
    assert [r["line_no"] for r in first] == list(range(1, 16))
    assert {r["file"] for r in first[10:]} == {str(logs / "gc.log.0")}  # read on under its new name
    # offsets are contiguous: each line starts where the previous ended
    for v in by_file.values():
        assert all(a["offset"] + a["length"] == b["offset"] for a, b in zip(v, v[1:]))
        assert v[0]["offset"] == 0
    assert stats.truncations == 0


def test_partial_last_line_waits_for_its_newline(tmp_path, logs):
    append(logs / "gc.log", [gc_line(1)])
    half = gc_line(2)
    append(logs / "gc.log", half[:30])
    tail_once(tmp_path)
    assert texts(bronze(tmp_path)) == [gc_line(1)]
    append(logs / "gc.log", half[30:] + "\n")
    tail_once(tmp_path)
    assert texts(bronze(tmp_path)) == [gc_line(1), half]


def test_truncation_and_rewrite_in_place_restart_from_zero(tmp_path, logs):
    log = logs / "gc.log"
    append(log, [gc_line(i) for i in range(5)])
    tail_once(tmp_path)
    # rewritten in place with the same first line and MORE bytes: the bytes before the offset changed
    with open(log, "w") as fh:
        fh.write("".join(gc_line(i) + "\n" for i in [0, 50, 51, 52, 53, 54, 55, 56]))
    s1 = tail_once(tmp_path)
    # shrunk (copytruncate, or a JVM restarted without rotation), the same first line: the size tells
    with open(log, "w") as fh:
        fh.write(gc_line(0) + "\n")
    s2 = tail_once(tmp_path)
    assert (s1.truncations, s2.truncations) == (1, 1)
    rows = bronze(tmp_path)
    gens = sorted({r["file_id"].rsplit("-", 1)[1] for r in rows})
    assert gens == ["0", "1", "2"], "each rewrite is a new generation of the file"
    by_gen = {g: [r["line"] for r in rows if r["file_id"].endswith("-" + g)] for g in gens}
    assert by_gen["0"] == [gc_line(i) for i in range(5)]
    assert by_gen["1"] == [gc_line(i) for i in [0, 50, 51, 52, 53, 54, 55, 56]]
    assert by_gen["2"] == [gc_line(0)]
    state = json.loads((tmp_path / "lh" / "_state" / "gc_tail.json").read_text())
    (entry,) = state["files"].values()
    assert entry["truncations"] == 2 and entry["gen"] == 2


def test_an_offset_survives_a_poll_that_does_not_find_its_file(tmp_path, logs):
    append(logs / "gc.log", [gc_line(i) for i in range(50)])
    tail_once(tmp_path)
    os.rename(logs / "gc.log", logs / "moving")  # e.g. caught mid-rename by the glob
    assert tail_once(tmp_path).lines == 0
    os.rename(logs / "moving", logs / "gc.log.0")
    append(logs / "gc.log.0", [gc_line(50)])
    assert tail_once(tmp_path).lines == 1  # read on from its offset, not from 0


def test_a_recycled_inode_is_a_new_file(tmp_path, logs):
    log = logs / "gc.log"
    append(log, [gc_line(i) for i in range(3)])
    st = os.stat(log)
    # the state remembers another file under this very inode (deleted, inode reused)
    state = tmp_path / "lh" / "_state" / "gc_tail.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"version": 1, "files": {f"jvm|{st.st_dev}|{st.st_ino}": {
        "path": str(log), "dev": st.st_dev, "ino": st.st_ino, "head": "0123456789ab", "gen": 4,
        "offset": 80, "line_no": 1, "tail": "x", "truncations": 0}}}))
    tail_once(tmp_path)
    rows = bronze(tmp_path)
    assert texts(rows) == [gc_line(i) for i in range(3)]
    assert rows[0]["file_id"].endswith("-0") and "0123456789ab" not in rows[0]["file_id"]


def test_binary_garbage_and_overlong_lines_are_rejected_and_reading_goes_on(tmp_path, logs):
    log = logs / "gc.log"
    with open(log, "wb") as fh:
        fh.write((gc_line(1) + "\n").encode())
        fh.write(b"\x00\x00\x00\xff\xfe binary junk\n")
        fh.write(b"caf\xc3 broken utf-8\n")
        fh.write(b"x" * 70_000 + b"\n")
        fh.write(b"\x00" * 80_000 + (gc_line(2) + "\n").encode())  # a copytruncate hole
        fh.write((gc_line(3) + "\n").encode())
        fh.write("[0.004s][info][gc] Using G1 — ünïcödé is text\n".encode())
    stats = tail_once(tmp_path)
    rows = bronze(tmp_path)
    # the hole is rejected on its own; the line the JVM wrote after it is kept
    assert [r["error_kind"] for r in rows] == [None, "binary", "binary", "overlong", "binary", None, None, None]
    assert texts(rows) == [gc_line(1), gc_line(2), gc_line(3), "[0.004s][info][gc] Using G1 — ünïcödé is text"]
    assert "not text" in rows[1]["error"] and "NUL" in rows[1]["error"]
    assert "70000 bytes" in rows[3]["error"] and "gc.max_line_bytes" in rows[3]["error"]
    assert "copytruncate" in rows[4]["error"]
    assert rows[1]["line"].startswith("\\x00")  # a readable preview, not the raw bytes
    assert stats.rejected == 4
    assert [r["line_no"] for r in rows] == list(range(1, 9))
    assert sum(r["length"] for r in rows) == log.stat().st_size


def test_read_lines_memory_is_bounded_for_an_overlong_line(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"a" * (3 << 20) + b"\nok\n")
    with open(p, "rb") as fh:
        lines = read_lines(fh, 0, max_line=1024)
    assert [(ln.error_kind, ln.length) for ln in lines] == [("overlong", (3 << 20) + 1), (None, 3)]
    assert len(lines[0].text) <= 2000  # a preview, not 3 MB


def test_head_fingerprint_waits_for_a_complete_first_line(tmp_path, logs):
    append(logs / "gc.log", "[0.001s][info][gc] Using G")
    tail_once(tmp_path)
    assert bronze(tmp_path) == []
    append(logs / "gc.log", "1\n")
    tail_once(tmp_path)
    assert texts(bronze(tmp_path)) == ["[0.001s][info][gc] Using G1"]
    assert HEAD_BYTES >= 1024


def test_crash_after_bronze_commit_before_offset_commit_duplicates_nothing(tmp_path, logs, monkeypatch):
    """The one window the protocol has to get right: rows committed, offsets not (kill -9 there)."""
    append(logs / "gc.log", [gc_line(i) for i in range(100)])
    cfg = config_from_dict(config(tmp_path))
    real_commit = OffsetStore.commit

    def crash(self, files):
        raise KeyboardInterrupt("killed between the bronze commit and the offset commit")

    monkeypatch.setattr(OffsetStore, "commit", crash)
    t = GcTailer(cfg)
    with pytest.raises(KeyboardInterrupt):
        t.poll()
    t.close()  # the process is gone: its lock goes with it
    assert len(bronze(tmp_path)) == 100  # rows landed, offsets did not
    monkeypatch.setattr(OffsetStore, "commit", real_commit)
    append(logs / "gc.log", [gc_line(i) for i in range(100, 120)])
    tail_once(tmp_path)
    rows = bronze(tmp_path)
    assert texts(rows) == [gc_line(i) for i in range(120)]  # re-read, deduplicated by key


def test_second_tailer_on_the_same_state_is_refused(tmp_path, logs):
    cfg = config_from_dict(config(tmp_path))
    with GcTailer(cfg):
        with pytest.raises(StateFileBusy, match="another brokerscope process"):
            GcTailer(cfg)


def test_recording_replays_into_identical_bronze(tmp_path, logs):
    with open(logs / "gc.log", "wb") as fh:
        fh.write(("".join(gc_line(i) + "\r\n" for i in range(5))).encode())  # CRLF lines too
        fh.write(b"\xff\xfe junk\n" + "[1.0s][info][gc] ünïcödé\n".encode())
    rec = tmp_path / "rec.jsonl.gz"
    with RecordingWriter(rec) as w:
        tail_once(tmp_path, recorder=w)
    envs = list(read_envelopes(rec))
    assert [e["source"] for e in envs] == ["gc.log"] and envs[0]["offset"] == 0
    live = bronze(tmp_path)

    other = tmp_path / "other"
    other.mkdir()
    cfg = config_from_dict({**config(tmp_path), "lakehouse": str(other / "lh")})
    res = replay(cfg, rec)
    assert (res.gc_envelopes, res.gc_new_rows) == (1, 7)
    with RecordingWriter(rec) as w:  # a damaged envelope is reported with its line, not fatal
        w.write({"v": 1, "ts": envs[0]["ts"], "source": "gc.log", "target": "jvm", "file": "x", "lines": []})
    again = replay(cfg, rec)
    assert again.gc_new_rows == 0  # same keys: nothing new
    assert again.report.bad_lines == [(2, "gc.log envelope without a 'file_id' string")]
    replayed = sorted(Lakehouse(other / "lh").read("bronze_gc_lines").to_pylist(), key=lambda r: r["offset"])

    def strip(r):
        return {k: v for k, v in r.items() if k != "collector"}

    assert [strip(r) for r in replayed] == [strip(r) for r in live]
    assert {r["collector"] for r in replayed} == {"replay:rec.jsonl.gz"}


# --- kill -9 with a real process ---------------------------------------------------------------------


class RotatingWriter(threading.Thread):
    """Appends unique GC lines (sometimes in two writes, so readers see half lines) and rotates
    like the JDK: gc.log is renamed to gc.log.<n> and a fresh gc.log opened (never deleted here,
    so every line written is still on disk to compare with)."""

    def __init__(self, folder: Path, every: int = 250):
        super().__init__(daemon=True)
        self.folder, self.every = folder, every
        self.written: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        rnd = random.Random(7)
        n = rotations = 0
        fh = open(self.folder / "gc.log", "a", encoding="utf-8")
        while not self.stop.is_set():
            line = gc_line(n)
            if rnd.random() < 0.2:
                cut = rnd.randrange(1, len(line))
                fh.write(line[:cut])
                fh.flush()
                time.sleep(0.002)
                fh.write(line[cut:] + "\n")
            else:
                fh.write(line + "\n")
            fh.flush()
            self.written.append(line)
            n += 1
            if n % self.every == 0:
                fh.close()
                os.rename(self.folder / "gc.log", self.folder / f"gc.log.{rotations}")
                rotations += 1
                fh = open(self.folder / "gc.log", "a", encoding="utf-8")
            time.sleep(0.0005)
        fh.close()


def test_kill_9_at_random_points_loses_and_duplicates_nothing(tmp_path, logs):
    cfg_path = tmp_path / "brokerscope.yaml"
    cfg_path.write_text(yaml.safe_dump(config(tmp_path)))
    cmd = [sys.executable, "-m", "brokerscope", "gc", "tail", "--config", str(cfg_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = RotatingWriter(logs)
    writer.start()
    rnd = random.Random(int(os.environ.get("BROKERSCOPE_KILL_SEED", "3")))
    kills = 0
    try:
        for _ in range(4):
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(rnd.uniform(0.7, 1.6))  # startup ≈ 0.7 s, then polls every 50 ms
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
            kills += 1
    finally:
        writer.stop.set()
        writer.join()
    done = subprocess.run(cmd + ["--once"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    rows = Lakehouse(tmp_path / "lh").read("bronze_gc_lines").to_pylist()
    keys = [(r["target"], r["file_id"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)), "duplicate bronze keys"
    got = sorted(texts(rows))
    assert len(got) == len(writer.written), f"{len(got)} lines in bronze, {len(writer.written)} written"
    assert got == sorted(writer.written)
    assert kills == 4 and len({r["file_id"] for r in rows}) >= 2  # rotation happened under the kills


# --- a real JVM ----------------------------------------------------------------------------------------

CHURN = """
public class Churn {
    static long gcs() {
        long n = 0;
        for (java.lang.management.GarbageCollectorMXBean b : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans())
            n += Math.max(0, b.getCollectionCount());
        return n;
    }

    // args: run at least this many ms, and until this many GCs (the log's volume: load-independent), at most 120 s
    public static void main(String[] a) throws Exception {
        long start = System.currentTimeMillis(), end = start + Long.parseLong(a[0]);
        long minGcs = a.length > 1 ? Long.parseLong(a[1]) : 0;
        java.util.ArrayList<byte[]> keep = new java.util.ArrayList<>();
        int i = 0;
        while (System.currentTimeMillis() < end || (gcs() < minGcs && System.currentTimeMillis() < start + 120_000)) {
            byte[] b = new byte[64 * 1024];
            if (++i % 8 == 0) keep.add(b);
            if (keep.size() > 200) keep.clear();
            if (i % 2000 == 0) Thread.sleep(5);
        }
    }
}
"""


def run_churn_jvm(folder: Path, millis: int, filecount: int = 5, gcs: int = 0) -> subprocess.Popen:
    """A real JVM writing a rotating unified GC log (64 KiB files) while it allocates, for `millis`
    and until it has collected `gcs` times (~36 G1 collections fill a 64 KiB file)."""
    src = folder / "Churn.java"
    src.write_text(CHURN)
    xlog = f"-Xlog:gc*,safepoint:file={folder / 'gc.log'}:time,uptime,level,tags:filecount={filecount},filesize=64k"
    return subprocess.Popen(["java", "-Xmx64m", "-XX:+UseG1GC", xlog, str(src), str(millis), str(gcs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
@pytest.mark.lab
@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK")
def test_real_jvm_rotating_log_is_tailed_exactly(tmp_path, logs):
    # 400 collections fill ~11 files of 64 KiB: the JVM deletes ~6 (filecount=5) however loaded the
    # machine is (a fixed 2.5 s gave only 5 files, none deleted, at load 17)
    jvm = run_churn_jvm(logs, 2500, gcs=400)
    cfg = config_from_dict(config(tmp_path))
    stop = threading.Event()
    with GcTailer(cfg) as tailer:
        th = threading.Thread(target=tailer.run, args=(stop,))
        th.start()
        try:
            assert jvm.wait(150) == 0, jvm.stderr.read().decode()[-2000:]
        finally:
            stop.set()
            th.join()
    files = sorted(logs.glob("gc.log*"))
    assert len(files) >= 3, "the JVM should have rotated its log"
    rows = bronze(tmp_path)
    keys = [(r["file_id"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)) and all(r["error"] is None for r in rows)
    by_file: dict[str, list[str]] = {}
    for r in rows:
        by_file.setdefault(r["file_id"], []).append(r["line"])
    for f in files:  # every line of every file still on disk, once, in order
        assert by_file[file_identity(f)] == f.read_text().splitlines(), f.name
    # and the files the JVM deleted on rotation (filecount=5) were read before they went
    assert len(by_file) > len(files)
