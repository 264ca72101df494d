"""Native Delta (delta-spark) against the delta-rs bridge on a whole `brokerscope analyze` of the
kill-master drill (tests/fixtures/drill_kill_master.*): Spark jobs per stage and time per table
read and write, the two paths alternating in one process and one Spark session.

    python bench/bench_delta_paths.py --repeat 2
    python bench/bench_delta_paths.py --repeat 2 --incremental
    python bench/bench_delta_paths.py --variant nocrc=spark.databricks.delta.writeChecksumFile.enabled=false \
        --paths native,native:nocrc,bridge

A variant (`--variant NAME=KEY=VALUE[;KEY=VALUE...]`, path `native:NAME`) is native Delta with those
runtime SQL settings set for its analyses only (spark.conf.set, then restored): each setting is
measured against the same session's plain native and bridge runs.

Each run replays the recording into a fresh lakehouse (delta-rs, as a collector writes it; not
timed), then times `analysis.runner.analyze` on one path; with --incremental the first half of the
recording is replayed and analysed untimed first, and the timed analysis is the incremental one
over the second half (what `brokerscope run` does every tick: overwrites of existing tables). Spark job counts are deterministic; wall
times on a shared machine are not, so compare the paths by their ratio within one run of this
script. Every Spark job is labelled (its job group) with the analysis stage and the
SparkLakehouse read/write it ran under; the counts come from Spark's status store. A read's time
is the call itself (planning: Delta's snapshot, the bridge's file listing); the jobs that compute
its rows run later, under the write that consumes them. Gold is compared between the paths.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
DRILL_CONFIG, DRILL_RECORDING = FIX / "drill_kill_master.yaml", FIX / "drill_kill_master.jsonl.gz"
sys.path.insert(0, str(ROOT))
from bench.machine import loadavg, machine_line  # noqa: E402

NO_STAGE = "(before the first stage)"


@dataclass
class Op:
    """One SparkLakehouse.read or .write: its table, the seconds the call took, its label."""

    kind: str
    table: str
    seconds: float
    label: str


@dataclass
class Run:
    path: str
    wall: float
    ops: list[Op] = field(default_factory=list)
    jobs: list[tuple[str, str, float]] = field(default_factory=list)  # (label, Spark's job description, seconds)
    gold: dict[str, list] = field(default_factory=dict)


def print_header(argv: list[str]) -> None:
    import deltalake
    import pyspark

    from infra import delta_jars

    print(f"date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(machine_line())
    print(f"versions: pyspark=={pyspark.__version__} delta-spark jars {delta_jars.coordinates()} "
          f"deltalake=={deltalake.__version__}")
    print(f"command: python bench/bench_delta_paths.py {' '.join(argv)}".rstrip(), flush=True)


class JobLabels:
    """Labels every Spark job with the current stage and SparkLakehouse call (its job group)."""

    def __init__(self, spark):
        self.sc = spark.sparkContext
        self.stage = NO_STAGE

    def progress(self, message: str) -> None:
        self.stage = message
        self.sc.setLocalProperty("spark.jobGroup.id", message)

    @contextlib.contextmanager
    def call(self, kind: str, table: str):
        label = f"{self.stage} :: {kind} {table}"
        self.sc.setLocalProperty("spark.jobGroup.id", label)
        try:
            yield label
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", self.stage)


@contextlib.contextmanager
def timed_calls(labels: JobLabels, ops: list[Op]):
    """SparkLakehouse.read and .write, each call timed and its jobs labelled (the real methods run)."""
    from lakehouse.spark import SparkLakehouse

    real = {"read": SparkLakehouse.read, "write": SparkLakehouse.write}

    def wrap(kind):
        def call(self, name, *args, **kwargs):
            with labels.call(kind, name) as label:
                t = time.perf_counter()
                try:
                    return real[kind](self, name, *args, **kwargs)
                finally:
                    ops.append(Op(kind, name, time.perf_counter() - t, label))
        return call

    for kind in real:
        setattr(SparkLakehouse, kind, wrap(kind))
    try:
        yield
    finally:
        for kind, method in real.items():
            setattr(SparkLakehouse, kind, method)


def status_store_jobs(spark) -> list:
    """Every job Spark's status store retains (JobData; a Scala Seq, walked by index)."""
    seq = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    return [seq.apply(i) for i in range(seq.size())]


def jobs_since(spark, first_id: int) -> list[tuple[int, str, str, float]]:
    """(job id, job group, description or name, seconds from submission to completion) of every job
    from `first_id`, from the status store."""
    out = []
    for j in status_store_jobs(spark):
        if j.jobId() >= first_id:
            group = j.jobGroup().get() if j.jobGroup().isDefined() else "(no group)"
            desc = j.description().get() if j.description().isDefined() else j.name()
            start, end = j.submissionTime(), j.completionTime()
            seconds = (end.get().getTime() - start.get().getTime()) / 1000 if start.isDefined() and end.isDefined() else 0.0
            out.append((j.jobId(), group, " ".join(str(desc).split())[:90], seconds))
    return sorted(out)


def next_job_id(spark) -> int:
    ids = [j.jobId() for j in status_store_jobs(spark)]
    return max(ids, default=-1) + 1


def gold_rows(lakehouse_root: Path) -> dict[str, list]:
    from lakehouse.store import Lakehouse
    from tests.test_delta_parity import snapshot

    return snapshot(Lakehouse(lakehouse_root))


def drill_parts(work: Path, incremental: bool) -> tuple[list[Path], Path]:
    """What is replayed and analysed untimed first, and what the timed analysis runs on: the whole
    recording in one go, or its first half and then (incrementally) its second half."""
    if not incremental:
        return [], DRILL_RECORDING
    from tests.test_delta_parity import halves

    first, second = halves("activemq-kill-master", work)
    return [first], second


@contextlib.contextmanager
def runtime_conf(spark, settings: dict[str, str]):
    """`settings` set on the session for the block, the previous values restored after it."""
    old = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def analyze_once(spark, path: str, work: Path, say, incremental: bool = False,
                 variants: dict[str, dict[str, str]] | None = None) -> Run:
    """A fresh lakehouse, the drill replayed into it, one timed `analyze` on `path` (incremental:
    over the second half of the recording, after an untimed analysis of the first half). A path
    `native:NAME` is native with the runtime settings of variant NAME."""
    mode, _, variant = path.partition(":")
    with runtime_conf(spark, (variants or {}).get(variant, {})):
        return _analyze_once(spark, path, mode, work, say, incremental)


def _analyze_once(spark, path: str, mode: str, work: Path, say, incremental: bool) -> Run:
    import yaml

    from analysis.runner import analyze
    from collectors.replay import replay
    from settings import config_from_dict

    root = work / f"lh-{path.replace(':', '-')}-{time.monotonic_ns()}"
    data = yaml.safe_load(DRILL_CONFIG.read_text())
    data["lakehouse"] = str(root)
    cfg = config_from_dict(data)
    before, timed = drill_parts(work, incremental)
    for part in before:
        replay(cfg, part)
        analyze(cfg, mode=mode, spark=spark)
    replay(cfg, timed)
    labels, ops = JobLabels(spark), []
    first = next_job_id(spark)
    with timed_calls(labels, ops):
        t = time.perf_counter()
        analyze(cfg, mode=mode, spark=spark, progress=labels.progress)
        wall = time.perf_counter() - t
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    run = Run(path, wall, ops, [(g, d, sec) for _i, g, d, sec in jobs_since(spark, first)], gold_rows(root))
    shutil.rmtree(root, ignore_errors=True)
    say(f"{path:14} {'incremental ' if incremental else ''}analyze: {wall:7.2f} s, {len(run.jobs)} Spark jobs, "
        f"{sum(o.kind == 'write' for o in ops)} writes ({sum(o.seconds for o in ops if o.kind == 'write'):.1f} s), "
        f"{sum(o.kind == 'read' for o in ops)} reads ({sum(o.seconds for o in ops if o.kind == 'read'):.1f} s); "
        f"loadavg {loadavg()}")
    return run


def stage_of(label: str) -> str:
    return label.split(" :: ", 1)[0]


def print_details(run: Run) -> None:
    """Jobs per stage, per kind of job (Spark's description), and the slowest calls of one run."""
    print(f"\n{run.path}: Spark jobs per stage (label = the progress message it ran under)")
    per_stage = collections.Counter(stage_of(g) for g, _d, _s in run.jobs)
    for stage, n in per_stage.items():
        print(f"  {n:4}  {stage}")
    print(f"{run.path}: Spark jobs by description")
    for desc, n in collections.Counter(d for _g, d, _s in run.jobs).most_common():
        print(f"  {n:4}  {desc}")
    print(f"{run.path}: reads and writes (seconds; jobs under the call and their seconds, submission to completion)")
    jobs_per_label = collections.Counter(g for g, _d, _s in run.jobs)
    seconds_per_label = collections.Counter()
    for g, _d, sec in run.jobs:
        seconds_per_label[g] += sec
    for op in run.ops:
        print(f"  {op.kind:5} {op.table:24} {op.seconds:6.2f} s {jobs_per_label.get(op.label, 0):3} jobs "
              f"{seconds_per_label.get(op.label, 0):6.2f} s   [{stage_of(op.label)}]")


def print_summary(runs: list[Run], paths: list[str]) -> None:
    print(f"\n{'path':14} {'runs (wall s)':24} {'best':>7} {'jobs':>6} in jobs (s)  writes (s)  reads (s)")
    best = {}
    for path in paths:
        mine = [r for r in runs if r.path == path]
        best[path] = min(r.wall for r in mine)
        jobs = sorted({len(r.jobs) for r in mine})
        w = min(sum(o.seconds for o in r.ops if o.kind == "write") for r in mine)
        rd = min(sum(o.seconds for o in r.ops if o.kind == "read") for r in mine)
        in_jobs = min(sum(sec for _g, _d, sec in r.jobs) for r in mine)
        print(f"{path:14} {', '.join(f'{r.wall:.1f}' for r in mine):24} {best[path]:7.1f} {'/'.join(map(str, jobs)):>6} "
              f"{in_jobs:11.1f} {w:11.1f} {rd:10.1f}")
    if "bridge" in paths:
        b = "bridge"
        for a in (p for p in paths if p != b):
            pairs = [x.wall / y.wall for x, y in zip((r for r in runs if r.path == a), (r for r in runs if r.path == b))]
            print(f"{a} / {b}: best {best[a] / best[b]:.2f}x; per interleaved pair "
                  + ", ".join(f"{p:.2f}x" for p in pairs))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=2, help="timed analyses per path, alternating (default 2)")
    ap.add_argument("--paths", default="native,bridge",
                    help="comma-separated: native, bridge and/or native:NAME of a --variant (default native,bridge)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=KEY=VALUE[;KEY=VALUE]",
                    help="native with these runtime SQL settings, as path native:NAME (repeatable)")
    ap.add_argument("--no-warm-up", action="store_true",
                    help="skip the untimed first analysis per path (class loading, JIT; the first native run is far slower)")
    ap.add_argument("--incremental", action="store_true",
                    help="time an incremental analyze: the recording's second half over a lakehouse that analysed its first half")
    ap.add_argument("--details", action="store_true", help="per path: jobs per stage and description, every read and write")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark conf at session start (repeatable)")
    args = ap.parse_args(argv)
    variants: dict[str, dict[str, str]] = {}
    for v in args.variant:
        name, _, kvs = v.partition("=")
        if not name or any("=" not in kv for kv in kvs.split(";")):
            ap.error(f"--variant takes NAME=KEY=VALUE[;KEY=VALUE...], not {v!r}")
        variants[name] = dict(kv.split("=", 1) for kv in kvs.split(";"))
    paths = [x.strip() for x in args.paths.split(",") if x.strip()]
    if not paths or any(x not in ("native", "bridge") and not (x.startswith("native:") and x[7:] in variants)
                        for x in paths):
        ap.error(f"--paths takes native, bridge and native:NAME of a --variant, not {args.paths!r}")
    if any("=" not in c for c in args.conf):
        ap.error("--conf takes KEY=VALUE")
    sys.path.insert(0, str(ROOT))
    print_header(argv)
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    from lakehouse.spark import spark_session

    conf = {"spark.ui.retainedJobs": "100000", **dict(c.split("=", 1) for c in args.conf)}
    spark = spark_session("bench-delta-paths", delta="native" if any(p.startswith("native") for p in paths) else "bridge",
                          conf=conf)
    say(f"Spark {spark.version} started (master {spark.sparkContext.master}, not counted)")
    work = Path(tempfile.mkdtemp(prefix="bench-delta-paths-"))
    try:
        if not args.no_warm_up:
            for path in dict.fromkeys(p.partition(":")[0] for p in paths):  # variants share native's warm-up
                analyze_once(spark, path, work, lambda m: say(f"warm-up {m}"), args.incremental, variants)
        runs = []
        for _ in range(args.repeat):  # interleaved: load from other processes hits both paths alike
            for path in paths:
                runs.append(analyze_once(spark, path, work, say, args.incremental, variants))
        if len({repr(r.gold) for r in runs}) != 1:
            raise AssertionError("the paths (or the runs) gave different silver/gold")
        say(f"same silver and gold on every run: {sum(map(len, runs[0].gold.values()))} rows in {len(runs[0].gold)} tables")
        if args.details:
            for path in paths:
                print_details(next(r for r in runs if r.path == path))
        print_summary(runs, paths)
        print(f"loadavg(after)={loadavg()}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
