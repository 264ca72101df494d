"""GC log parse throughput on one core: our parser vs jvmind-ce vs plain line iteration.

    python bench/bench_gc_parser.py [--mb 50] [--repeat 3] [--only NAME[,NAME]] [--cpu N] [--keep DIR]
    python bench/bench_gc_parser.py --quick          # 5 MB per log, one round: a smoke run

Needs the corpus (``<root>/shared/corpus/gc`` beside the checkout, or ``$BROKERSCOPE_SHARED``)
and ``pip install jvmind-ce`` (without it the jvmind-ce column says "not installed").

Data: each benchmark log is ONE real corpus file repeated back to back (the last copy cut at
the first line boundary past ``--mb``; ``.zip``/``.gz`` sources are decompressed first) into a
plain-text file in a temp dir, so every tool reads the same bytes from the same file.  A copy
boundary is just a restarted JVM log to the parsers (time stamps jump back, GC ids restart).

    unified-g1        local-jdk17/g1_time-uptime-level-tags.log      JDK 17, -Xlog:gc*,safepoint,
                      decorators time,uptime,level,tags (info level, ~110 B/line)
    unified-g1-trace  gctoolkit/unified/g1gc/jdk11_details.log.zip    JDK 11, gc* at trace level,
                      uptime,level,tags (mostly phase/worker detail lines)
    legacy-cms        gctoolkit/preunified/cms/defnew/details/defnew.log   JDK 7/8 DefNew+CMS,
                      PrintGCDateStamps/TimeStamps/Details: one complete record per line (the
                      densest format: every line is an event)
    legacy-cms-parnew gctoolkit/preunified/cms/parnew/details/tenuring/gc.log   ParNew+CMS with
                      PrintTenuringDistribution (records span lines) and concurrent phases
    legacy-g1         gctoolkit/preunified/g1gc/details/tenuring/server1-gc.log  JDK 7/8 G1,
                      PrintGCDetails (+ per-phase detail lines) and tenuring distribution
    legacy-g1-stopped gctoolkit/preunified/g1gc/details/solaris/rightmove_parse_errors.log  JDK 8
                      G1 with datestamps and PrintGCApplicationStoppedTime

What is timed (process pinned to one CPU with ``os.sched_setaffinity``; the best of ``--repeat``
rounds for plain iteration, the regex pass and our parser, which alternate; jvmind-ce runs once
per log unless ``--jvmind-repeat``).  Each run is measured in CPU time of the process (``time.process_time``)
and in wall clock: MB/s and ratios are given for both, CPU time first -- on a shared machine
the wall clock also counts the time other processes held the core (it varied 2-3x between
runs here), CPU time is the one-core throughput:

    plain     ``for line in open(path, encoding="utf-8", errors="replace"): pass`` -- the ceiling
    1 regex   the same file read in 1 MB text blocks, ONE trivial compiled regex (``[^\n]*\n``)
              matched at every line with ``finditer`` -- the ceiling of a design that scans
              blocks with Python's regex engine and hands lines (or the interesting ones among
              them) to Python code; real patterns cost several times more per character
    ours      ``for ev in iter_events(open_log(path), parser=GcLogParser()): n += 1`` -- the
              streaming parser, complete: every line classified and counted, GcEvent objects
              built (time stamps, sizes, flags)
    jvmind    ``text = open(path, "rb").read().decode("utf-8", "replace");
              react_agent.gc_analyzer.parse_gc_log(text)`` -- what jvmind-ce's own upload route
              does before ``compute_stats`` (its ``analyze()`` = ``parse_gc_log`` +
              ``compute_stats``; we time only the parse, which favours it)

MB = 10**6 bytes of the file; lines/s counts the file's lines for every tool.  "events" are each
tool's own: ours counts every GcEvent (pauses, concurrent phases and cycles, safepoints), jvmind
its ``events`` list; "pauses" are stop-the-world GC pauses (ours: ``GcEvent.is_pause``, jvmind:
events not ``is_concurrent``).  A tool that finds less than half of our pauses is flagged, as
its speed then says little.  (jvmind-ce keys events by GC id, so the repeated copies of a
unified log collapse into one copy's ids there.)  Targets (issue P3): ours >= 10x jvmind-ce
and >= 25 % of plain iteration, per format, from the same run.

Compare the ratios printed by one run, not MB/s across runs.
Runtime with the defaults: about 2.5 minutes on 2 shared cores (mostly jvmind-ce); figures and
what they mean in BENCHMARKS.md, section "GC parser (P3)".
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc as _gc
import os
import platform
import re
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.machine import cpu_model  # noqa: E402

from collectors.gc import GcLogParser, iter_events, open_log  # noqa: E402

DATASETS = [
    ("unified-g1", "unified G1 (JDK 17)", "local-jdk17/g1_time-uptime-level-tags.log"),
    ("unified-g1-trace", "unified G1 trace (JDK 11)", "gctoolkit/unified/g1gc/jdk11_details.log.zip"),
    ("legacy-cms", "legacy CMS/DefNew (1 rec/line)", "gctoolkit/preunified/cms/defnew/details/defnew.log"),
    ("legacy-cms-parnew", "legacy CMS/ParNew + tenuring", "gctoolkit/preunified/cms/parnew/details/tenuring/gc.log"),
    ("legacy-g1", "legacy G1 details + tenuring", "gctoolkit/preunified/g1gc/details/tenuring/server1-gc.log"),
    ("legacy-g1-stopped", "legacy G1 + stopped time", "gctoolkit/preunified/g1gc/details/solaris/rightmove_parse_errors.log"),
]


def locate_corpus() -> str:
    cands = [os.path.join(os.path.dirname(ROOT), "shared", "corpus", "gc")]
    env = os.environ.get("BROKERSCOPE_SHARED")
    if env:
        cands += [os.path.join(env, "corpus", "gc"), env]
    for c in cands:
        if os.path.isfile(os.path.join(c, "MANIFEST.tsv")):
            return c
    sys.exit("GC corpus not found (<root>/shared/corpus/gc or $BROKERSCOPE_SHARED)")


def build(src: str, dst: str, target_bytes: int) -> tuple[int, int]:
    """Write ``src`` (decompressed) repeatedly to ``dst`` until >= target_bytes, cut at a line
    boundary; returns (copies started, bytes)."""
    with open_log(src) as fh:
        data = fh.read().encode("utf-8")
    if not data.endswith(b"\n"):
        data += b"\n"
    written = copies = 0
    with open(dst, "wb") as out:
        while written < target_bytes:
            need = target_bytes - written
            if len(data) <= need:
                chunk = data
            else:
                cut = data.find(b"\n", need - 1)
                chunk = data[: cut + 1] if cut >= 0 else data
            out.write(chunk)
            written += len(chunk)
            copies += 1
    return copies, written


class Clock:
    """Wall clock and this process's CPU time (the machine may be shared: CPU time is what one
    core spent on the work, wall clock also counts the time other processes had the core)."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w
        self.cpu = time.process_time() - self.c


def time_plain(path: str) -> Clock:
    with Clock() as clk:
        with open(path, encoding="utf-8", errors="replace") as f:
            for _line in f:
                pass
    return clk


# one compiled regex stepping over every line of a block (a match object per line, as any
# design that hands each line, or each interesting line found by scanning, to Python code has)
_EVERY_LINE_RE = re.compile(r"[^\n]*\n")
_BLOCK_CHARS = 1 << 20


def time_regex(path: str) -> Clock:
    """The ceiling of a chunked design built on Python's regex engine: the file read in 1 MB
    text blocks (decoded as by plain iteration) and ONE trivial regex matched at every line."""
    with Clock() as clk:
        with open(path, encoding="utf-8", errors="replace") as f:
            while True:
                block = f.read(_BLOCK_CHARS)
                if not block:
                    break
                for _m in _EVERY_LINE_RE.finditer(block):
                    pass
    return clk


def time_ours(path: str):
    n = pauses = 0
    with Clock() as clk:
        p = GcLogParser()
        with open_log(path) as fh:
            for ev in iter_events(fh, parser=p):
                n += 1
                if ev.is_pause:
                    pauses += 1
    return clk, n, pauses, p.stats


def load_jvmind():
    try:
        from react_agent.gc_analyzer import parse_gc_log  # jvmind-ce
    except Exception as exc:  # noqa: BLE001 - report any import failure
        return None, f"not installed ({type(exc).__name__}: {exc})"
    try:
        from importlib.metadata import version

        ver = version("jvmind-ce")
    except Exception:  # noqa: BLE001
        ver = "?"
    return parse_gc_log, ver


def time_jvmind(parse_gc_log, path: str):
    with Clock() as clk:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        res = parse_gc_log(text)
    events = res.get("events") or []
    pauses = sum(1 for e in events if not getattr(e, "is_concurrent", False))
    return clk, len(events), pauses, res.get("collector")


def _best(cur, clk):
    """The faster of two measurements (by CPU time)."""
    return clk if cur is None or clk.cpu < cur.cpu else cur


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=50.0, help="size of each benchmark log in MB (10**6 B)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of plain/ours (best taken)")
    ap.add_argument("--jvmind-repeat", type=int, default=1, help="rounds of jvmind-ce (best taken)")
    ap.add_argument("--only", default="", help="comma-separated dataset names")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last one allowed)")
    ap.add_argument("--keep", default=None, help="build the logs in this dir and keep them")
    ap.add_argument("--quick", action="store_true", help="5 MB logs, one round (smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.mb, args.repeat = 5.0, 1

    allowed = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else allowed[-1]
    os.sched_setaffinity(0, {cpu})
    corpus = locate_corpus()
    parse_gc_log, jv_ver = load_jvmind()
    only = {s for s in args.only.split(",") if s}
    sets = [d for d in DATASETS if not only or d[0] in only]

    print(f"# bench_gc_parser  {_dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"# machine: nproc={os.cpu_count()} cpu='{cpu_model()}' pinned to CPU {cpu}; "
          f"Python {platform.python_version()}; jvmind-ce {jv_ver}; loadavg {os.getloadavg()[0]:.1f}")
    print(f"# command: python bench/bench_gc_parser.py {' '.join(sys.argv[1:])}".rstrip())
    workdir = args.keep or tempfile.mkdtemp(prefix="bench-gc-")
    os.makedirs(workdir, exist_ok=True)
    rows = []
    t_start = time.perf_counter()
    try:
        for name, label, rel in sets:
            src = os.path.join(corpus, rel)
            dst = os.path.join(workdir, name + ".log")
            copies, size = build(src, dst, int(args.mb * 1e6))
            mb = size / 1e6
            print(f"\n## {name}: {label}\n   source {rel} x{copies} copies -> {mb:.1f} MB", flush=True)
            plain = ours = regex = None
            for _ in range(args.repeat):
                _gc.collect()
                clk = time_plain(dst)
                plain = _best(plain, clk)
                _gc.collect()
                regex = _best(regex, time_regex(dst))
                _gc.collect()
                clk, n_ours, p_ours, stats = time_ours(dst)
                ours = _best(ours, clk)
            lines = stats.lines_total
            jv = jv_err = None
            if parse_gc_log is not None:
                for _ in range(args.jvmind_repeat):
                    _gc.collect()
                    try:
                        clk, n_jv, p_jv, jv_coll = time_jvmind(parse_gc_log, dst)
                    except Exception as exc:  # noqa: BLE001 - a tool that cannot parse: say so
                        jv_err = f"{type(exc).__name__}: {exc}"
                        break
                    jv = _best(jv, clk)
            print(f"   {'tool':8s} {'MB/s cpu':>9s} {'lines/s cpu':>12s} {'MB/s wall':>10s} {'events':>9s} {'pauses':>8s}")
            print(f"   {'plain':8s} {mb / plain.cpu:9.1f} {lines / plain.cpu:12,.0f} {mb / plain.wall:10.1f} {'-':>9s} {'-':>8s}")
            print(f"   {'1 regex':8s} {mb / regex.cpu:9.1f} {lines / regex.cpu:12,.0f} {mb / regex.wall:10.1f} {'-':>9s} {'-':>8s}")
            print(f"   {'ours':8s} {mb / ours.cpu:9.2f} {lines / ours.cpu:12,.0f} {mb / ours.wall:10.2f} {n_ours:9,d} {p_ours:8,d}"
                  f"   coverage {stats.coverage:.2%}")
            row = {"name": name, "mb": mb, "plain": mb / plain.cpu, "ours": mb / ours.cpu, "regex": mb / regex.cpu,
                   "plain_w": mb / plain.wall, "ours_w": mb / ours.wall}
            if parse_gc_log is None:
                print(f"   {'jvmind':8s} {'n/a':>9s}   {jv_ver}")
            elif jv_err is not None:
                print(f"   {'jvmind':8s} cannot parse: {jv_err}")
            else:
                note = ""
                if p_jv < 0.5 * p_ours:
                    note = f"   <- finds {p_jv / max(p_ours, 1):.0%} of the pauses (collector {jv_coll!r})"
                print(f"   {'jvmind':8s} {mb / jv.cpu:9.2f} {lines / jv.cpu:12,.0f} {mb / jv.wall:10.2f} {n_jv:9,d} {p_jv:8,d}{note}")
                row["jvmind"], row["jvmind_w"], row["jv_note"] = mb / jv.cpu, mb / jv.wall, bool(note)
            row["r_jv"] = row["ours"] / row["jvmind"] if "jvmind" in row else None
            row["r_jv_w"] = row["ours_w"] / row["jvmind_w"] if "jvmind" in row else None
            row["r_plain"], row["r_plain_w"] = row["ours"] / row["plain"], row["ours_w"] / row["plain_w"]
            if row["r_jv"]:
                print(f"   ours / jvmind-ce = {row['r_jv']:.1f}x cpu, {row['r_jv_w']:.1f}x wall (target >= 10x)")
            print(f"   ours / plain     = {row['r_plain']:.1%} cpu, {row['r_plain_w']:.1%} wall (target >= 25 %)", flush=True)
            rows.append(row)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n## summary (MB/s of CPU time on one core; ratios from this run, CPU time / wall clock)")
    print(f"   {'log':18s} {'plain':>8s} {'1 regex':>8s} {'ours':>8s} {'jvmind':>8s} {'ours/jvmind':>14s} {'ours/plain':>15s}")
    for r in rows:
        jvs = f"{r['jvmind']:8.2f}" if "jvmind" in r else f"{'n/a':>8s}"
        rj = f"{r['r_jv']:6.1f}x/{r['r_jv_w']:5.1f}x" if r["r_jv"] else f"{'n/a':>13s}"
        flag = "*" if r.get("jv_note") else " "
        print(f"   {r['name']:18s} {r['plain']:8.1f} {r['regex']:8.1f} {r['ours']:8.2f} {jvs} {rj}{flag} "
              f"{r['r_plain']:6.1%}/{r['r_plain_w']:6.1%}")
    if any(r.get("jv_note") for r in rows):
        print("   * jvmind-ce finds less than half of the stop-the-world pauses in that log (see above)")
    print(f"# total {time.perf_counter() - t_start:.0f} s; loadavg {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
