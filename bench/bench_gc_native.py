"""GC parse throughput on one core: plain Python line loop, the Python parser, the native core,
and GCViewer's headless parse -- side by side in one run, on the same files.

    python bench/bench_gc_native.py [--mb 50] [--repeat 3] [--cpu 1] [--gcviewer JAR]

Logs (each ONE real corpus file repeated to --mb, as bench_gc_parser.py builds them):

    unified-g1     local-jdk17/g1_time-uptime-level-tags.log
    unified-zgc    local-jdk21/zgc-generational_time-uptime-level-tags.log  (generational ZGC)
    legacy-cms     gctoolkit/preunified/cms/defnew/details/defnew.log

Timed (CPU time of this process, pinned with os.sched_setaffinity; best of --repeat):

    plain     ``for line in open(path, encoding="utf-8", errors="replace"): pass``
    python    ``parse_file(path)`` with BROKERSCOPE_GC_PARSER=python: GcEvent objects
    native    ``parse_file(path)`` on the native core: the same GcEvent objects (raw bytes read
              in 16 MB blocks, decoded, split and parsed in Rust, events converted to GcEvent)
    columnar  ``parse_file_columnar(path)`` on the native core: one pyarrow RecordBatch of the
              same values (Arrow buffers filled in Rust, no Python object per event)
    gcviewer  ``java -cp gcviewer.jar com.tagtraum.perf.gcviewer.GCViewer <log> <csv> -t SUMMARY``
              run once per log under ``taskset -c <cpu>`` (JVM start included, ~0.3 s): MB/s
              of the child's CPU time ("gcv cpu", used for the ratios, like our CPU-time
              figures, so that load from other processes does not flatter us) and of the
              wall clock ("gcv wall")

Targets (issue P16): >= 25 % of plain, >= 10x GCViewer (shown for both native paths).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from bench_gc_parser import build, cpu_model, locate_corpus  # noqa: E402
from collectors.gc import native  # noqa: E402
from collectors.gc.columnar import events_to_batch, parse_file_columnar  # noqa: E402
from collectors.gc.parser import parse_file  # noqa: E402

LOGS = [
    ("unified-g1", "local-jdk17/g1_time-uptime-level-tags.log"),
    ("unified-zgc", "local-jdk21/zgc-generational_time-uptime-level-tags.log"),
    ("legacy-cms", "gctoolkit/preunified/cms/defnew/details/defnew.log"),
]


def cpu_now() -> float:
    return time.process_time()


def best(fn, repeat: int) -> tuple[float, object]:
    out, t_best = None, float("inf")
    for _ in range(repeat):
        t0 = cpu_now()
        out = fn()
        t_best = min(t_best, cpu_now() - t0)
    return t_best, out


def plain(path: str) -> int:
    n = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for _line in f:
            n += 1
    return n


def parse_with(impl: str, path: str):
    os.environ["BROKERSCOPE_GC_PARSER"] = impl
    try:
        return parse_file(path)
    finally:
        del os.environ["BROKERSCOPE_GC_PARSER"]


def gcviewer(jar: str, path: str, cpu: int) -> tuple[float, float, str]:
    """(wall s, child CPU s, status) of GCViewer's headless parse + summary export."""
    out = tempfile.mktemp(suffix=".csv")
    cmd = ["taskset", "-c", str(cpu), "java", "-Xmx2g", "-cp", jar,
           "com.tagtraum.perf.gcviewer.GCViewer", path, out, "-t", "SUMMARY"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    status = "ok" if p.returncode == 0 and os.path.exists(out) else f"rc={p.returncode}: {p.stderr[-300:]}"
    if os.path.exists(out):
        os.unlink(out)
    return wall, cpu_s, status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--gcviewer", default=None, help="gcviewer jar (default: ~/.m2 1.36)")
    args = ap.parse_args()
    if not native.AVAILABLE:
        sys.exit("native core not installed (pip install ./native/gcparse)")
    os.sched_setaffinity(0, {args.cpu})
    jar = args.gcviewer or os.path.expanduser(
        "~/.m2/repository/com/github/chewiebug/gcviewer/1.36/gcviewer-1.36.jar")
    have_gcv = os.path.exists(jar) and shutil.which("java")
    corpus = locate_corpus()
    tmp = tempfile.mkdtemp(prefix="gcbench-")
    print(f"# {_dt.date.today()} {platform.node()} | {cpu_model()} | pinned to CPU {args.cpu} | "
          f"Python {platform.python_version()} | {args.mb:g} MB per log | best of {args.repeat} (CPU time) | "
          f"loadavg {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'log':<12} {'plain MB/s':>10} {'python':>7} {'native':>7} {'columnar':>8} {'gcv cpu':>8} {'gcv wall':>8} "
          f"{'native/plain':>12} {'col/plain':>9} {'native/py':>9} {'native/gcv':>10} {'col/gcv':>8} events")
    try:
        for name, rel in LOGS:
            path = os.path.join(tmp, name + ".log")
            _copies, size = build(os.path.join(corpus, rel), path, int(args.mb * 1e6))
            mb = size / 1e6
            t_plain, _ = best(lambda: plain(path), args.repeat)
            t_py, (ev_py, _) = best(lambda: parse_with("python", path), max(1, args.repeat - 1))
            t_nat, (ev_nat, _) = best(lambda: parse_with("native", path), args.repeat)
            t_col, (batch, _) = best(lambda: parse_file_columnar(path), args.repeat)
            same = len(ev_py) == len(ev_nat) and all(a == b for a, b in zip(ev_py, ev_nat))
            same = same and batch.equals(events_to_batch(ev_nat))
            gcv = gcv_wall = "n/a"
            ratio_g = ratio_c = "n/a"
            if have_gcv:
                wall, cpu_s, status = gcviewer(jar, path, args.cpu)
                if status == "ok":
                    gcv, gcv_wall = f"{mb / cpu_s:.1f}", f"{mb / wall:.1f}"
                    ratio_g = f"{cpu_s / t_nat:.1f}x"
                    ratio_c = f"{cpu_s / t_col:.1f}x"
                else:
                    gcv = "failed"
                    print(f"  gcviewer on {name}: {status}")
            print(f"{name:<12} {mb / t_plain:>10.0f} {mb / t_py:>7.1f} {mb / t_nat:>7.1f} {mb / t_col:>8.1f} "
                  f"{gcv:>8} {gcv_wall:>8} {t_plain / t_nat:>12.1%} {t_plain / t_col:>9.1%} {t_py / t_nat:>8.1f}x "
                  f"{ratio_g:>10} {ratio_c:>8} {len(ev_nat)}{'' if same else ' (EVENTS DIFFER)'}")
            os.unlink(path)
        print(f"# loadavg at the end: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
