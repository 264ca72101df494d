"""`brokerscope gc …` and the GC side of `brokerscope collect`.

    gc report FILE [--format text|json] [--config C --target NAME]   one file, no Spark
    gc import PATH… --config C [--target NAME]                        archives, in parallel (Spark)
    gc tail --config C [--duration D] [--record FILE]                 only tail the GC logs
    gc analyze --config C [--full]                                    bronze → silver → gold (Spark)
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
import threading
from dataclasses import asdict
from datetime import datetime, timezone

from collectors.gc.columnar import parse_file_columnar
from collectors.gc.analysis import Thresholds, findings, summarize, summarize_findings
from collectors.gc.limits import GcInputError, damage_of
from collectors.gc.tailer import GcTailer, file_identity
from collectors.recording import RecordingWriter
from collectors.scraper import Collector, progress_dots, run_until_signalled
from collectors.text import printable
from lakehouse.store import Lakehouse
from settings import Config, ConfigError, load_config, parse_duration

# --- report ----------------------------------------------------------------------------------------


def report(path: str, thresholds: Thresholds = Thresholds()) -> dict:
    """The summary of one GC log file (what `gc report --format json` prints)."""
    if not os.path.isfile(path):
        raise ConfigError(f"GC log {path} not found (or not a file)")
    batch, stats = parse_file_columnar(path)  # Arrow columns: no GcEvent per event
    rows = batch.to_pylist()
    for i, r in enumerate(rows):  # the shape of GcEvent.to_dict()
        r["flags"] = r["flags"].split(",") if r["flags"] else []
        r["raw"] = None
        r["event_seq"] = i
    out = {"file": path, **summarize(rows, stats), "damaged": damage_of(path)}
    check_is_gc_log(out, stats)
    found = findings(rows, thresholds)
    out["findings"] = summarize_findings(found)
    out["findings_total"] = len(found)
    out["thresholds"] = asdict(thresholds)
    out["unknown_sample"] = [{"line": n, "text": t} for n, t in stats.unknown_sample[:10]]
    out["implausible_lines"] = [r["source_line"] for r in rows if "implausible-value" in r["flags"]]
    return out


def check_is_gc_log(rep: dict, stats) -> None:
    """Refuse to report on nothing: an empty file, or one without a single GC line."""
    path, damage = rep["file"], f" ({rep['damaged']})" if rep["damaged"] else ""
    if rep["lines"] == 0:
        raise GcInputError(f"GC log {path} has no lines{damage}; nothing to report")
    if rep["gc_count"] == 0 and rep["collector"] == "unknown" and not rep["safepoint_count"]:
        first = printable(stats.unknown_sample[0][1][:80]) if stats.unknown_sample else ""
        raise GcInputError(
            f"{path} is not a GC log: none of its {rep['lines']:,} lines is a GC line{damage}"
            + (f" (line 1: {first!r})" if first else "")
            + "; give the file the JVM writes with -Xlog:gc*:file=… (JDK 9+) or -Xloggc with -XX:+PrintGCDetails (JDK 8)")


def _json_default(v):
    if isinstance(v, datetime):
        return v.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    raise TypeError(type(v).__name__)


def render_report_json(rep: dict) -> str:
    return json.dumps(rep, indent=2, default=_json_default, ensure_ascii=False) + "\n"


def _num(v, fmt: str = "{:,.1f}", none: str = "n/a") -> str:
    return none if v is None else fmt.format(v)


def render_report_text(rep: dict) -> str:
    t0, t1 = rep["first_wall_time"], rep["last_wall_time"]
    when = f" ({t0:%Y-%m-%d %H:%M:%S} → {t1:%H:%M:%S} UTC)" if t0 and t1 else ""
    pct = "  ".join(f"p{p} {_num(rep[f'pause_p{p}_ms'], '{:,.3f}')}" for p in ("50", "95", "99", "99_9")).replace("_", ".")
    lines = [f"DAMAGED     {rep['damaged']}"] if rep.get("damaged") else []
    lines += [
        f"GC log      {rep['file']}",
        f"collector   {rep['collector']}",
        f"lines       {rep['lines']:,}, coverage {rep['coverage']:.2%} ({rep['lines_unknown']} not understood)"
        + (f", {rep['incomplete_events']} incomplete event(s)" if rep["incomplete_events"] else "")
        + (f", {len(rep['implausible_lines'])} event(s) with a corrupt duration left out of the pause figures"
           f" (line {', '.join(map(str, rep['implausible_lines'][:5]))})" if rep["implausible_lines"] else ""),
        f"span        {_num(rep['span_s'], '{:,.1f} s')}{when}",
        f"collections {rep['gc_count']:,} (full: {rep['full_count']:,})",
        f"pauses      {rep['pause_count']:,}, total {_num(rep['pause_total_ms'], '{:,.3f}')} ms, "
        f"max {_num(rep['pause_max_ms'], '{:,.3f}')} ms, mean {_num(rep['pause_mean_ms'], '{:,.3f}')} ms",
        f"percentiles {pct} ms (nearest rank)",
        f"throughput  {_num(rep['throughput_pct'], '{:.2f} %')} (time not in GC pauses)",
        f"allocation  {_num(rep['allocation_rate_mib_s'], '{:,.1f} MiB/s')}; "
        f"promotion {_num(rep['promotion_rate_mib_s'], '{:,.1f} MiB/s')}",
    ]
    if rep["safepoint_count"]:
        lines.append(f"safepoints  {rep['safepoint_count']:,}, stopped {_num(rep['safepoint_total_ms'], '{:,.3f}')} ms, "
                     f"max {_num(rep['safepoint_max_ms'], '{:,.3f}')} ms")
    if rep["findings"]:
        lines.append(f"findings    {rep['findings_total']:,}")
        for f in rep["findings"]:
            at = f" (worst at {f['worst_ts']:%H:%M:%S})" if f["worst_ts"] else \
                (f" (worst at uptime {f['worst_uptime_s']:.3f} s)" if f["worst_uptime_s"] is not None else "")
            lines.append(f"  {f['severity']:5} {f['code']:30} ×{f['count']:<5} {f['message']}{at}")
            lines.append(f"        → {f['advice']}")
    else:
        lines.append("findings    none")
    return "\n".join(lines) + "\n"


def cmd_report(args) -> int:
    th = Thresholds()
    if args.config:
        cfg = load_config(args.config)
        th = Thresholds(**cfg.gc_thresholds(cfg.target(args.target) if args.target else None))
    rep = report(args.file, th)
    out = render_report_json(rep) if args.format == "json" else printable(render_report_text(rep), keep_newlines=True)
    sys.stdout.write(out)
    if rep["damaged"]:
        print(f"warning: {args.file}: {rep['damaged']}; the report covers only that part", file=sys.stderr)
        return 1
    return 0


# --- import ----------------------------------------------------------------------------------------


def expand_paths(paths: list[str]) -> list[str]:
    """Files named, and the files under folders named (recursively), deduplicated, sorted."""
    out: set[str] = set()
    for p in paths:
        if os.path.isdir(p):
            for root, _dirs, files in os.walk(p):
                out.update(os.path.join(root, f) for f in files)
        elif os.path.isfile(p):
            out.add(p)
        else:
            raise ConfigError(f"{p}: no such file or folder")
    return sorted(os.path.abspath(p) for p in out)


def target_of(cfg: Config, path: str, explicit: str | None) -> str:
    """--target, else the configured target whose gc_logs globs match the path."""
    if explicit:
        return cfg.target(explicit).name
    for t in cfg.targets:
        if any(fnmatch.fnmatch(path, pat) for pat in cfg.gc_log_patterns(t)):
            return t.name
    raise ConfigError(f"{path}: no target's gc_logs matches it; pass --target NAME "
                      f"(configured: {', '.join(t.name for t in cfg.targets) or 'none'})")


class ProgressBar:
    """`parsing [######----] 6/10 files` on stderr, redrawn in place."""

    def __init__(self, what: str, stream=None, width: int = 30):
        self.what, self.stream, self.width = what, stream or sys.stderr, width
        self._last: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            if (done, total) == self._last:
                return
            self._last = (done, total)
            fill = self.width * done // total if total else self.width
            self.stream.write(f"\r{self.what} [{'#' * fill}{'-' * (self.width - fill)}] {done}/{total} files")
            self.stream.flush()

    def close(self) -> None:
        if self._last is not None:
            self.stream.write("\n")


def cmd_import(args) -> int:
    from analysis.gc import import_files  # deferred: pyspark is heavy to import
    from analysis.params import gc_params  # deferred: pyspark is heavy to import

    cfg = load_config(args.config)
    paths = expand_paths(args.paths)
    if not paths:
        raise ConfigError("no files to import")
    files = [(target_of(cfg, p, args.target), file_identity(p), p) for p in paths]
    slh = _spark_lakehouse(cfg, args.mode)
    bar = ProgressBar("parsing") if not args.quiet else None
    try:
        counts = import_files(slh, gc_params(cfg), files, progress=bar)
    finally:
        if bar:
            bar.close()
    for name, n in counts.items():
        print(f"{name}: {n} rows")
    return 0


# --- analyze ---------------------------------------------------------------------------------------


def _spark_lakehouse(cfg: Config, mode: str | None = None):
    from lakehouse.spark import SparkLakehouse, spark_session  # deferred: pyspark is heavy to import

    return SparkLakehouse(spark_session(), Lakehouse(cfg.lakehouse_root()), mode=mode)


def run_analysis(cfg: Config, mode: str | None = None, full: bool = False, progress=None) -> dict[str, int]:
    from analysis.gc import run_gc  # deferred: pyspark is heavy to import
    from analysis.params import gc_params  # deferred: pyspark is heavy to import

    return run_gc(_spark_lakehouse(cfg, mode), gc_params(cfg), full=full, progress=progress)


def cmd_analyze(args) -> int:

    cfg = load_config(args.config)
    counts = run_analysis(cfg, args.mode, args.full, progress=lambda m: print(f"· {m}", file=sys.stderr))
    for name, n in counts.items():
        print(f"{name}: {n} rows")
    return 0


# --- tailing ---------------------------------------------------------------------------------------


def _require_gc_logs(cfg: Config) -> None:
    if not any(t.gc_logs for t in cfg.targets):
        raise ConfigError("no target has gc_logs; add e.g. `gc_logs: [/var/log/amq/gc.log*]` to a target")


def cmd_tail(args) -> int:

    cfg = load_config(args.config)
    _require_gc_logs(cfg)
    dur = _duration(args.duration)
    recorder = RecordingWriter(args.record) if args.record else None
    stop = threading.Event()
    if args.once:
        stop.set()  # run() polls until caught up, then returns
    try:
        with GcTailer(cfg, recorder=recorder) as tailer:
            try:
                stats = tailer.run(stop, duration=dur)
            except KeyboardInterrupt:
                stats = tailer.stats
    finally:
        if recorder:
            recorder.close()
    print(stats.summary())
    return 0


def _duration(text: str | None) -> float | None:
    try:
        return parse_duration(text) if text else None
    except ValueError as e:
        raise ConfigError(f"--duration: {e}") from None


class SharedRecorder:
    """One recording written by the scraper (event loop) and the GC tailer (its thread): writes
    are serialized; closing is left to the owner, after both have stopped."""

    def __init__(self, inner):
        self._inner = inner
        self.path = inner.path  # where the rows are when bronze cannot take them at stop
        self._lock = threading.Lock()

    def write(self, env: dict) -> None:
        with self._lock:
            self._inner.write(env)

    def close(self) -> None:  # the scraper closes "its" recorder when it stops; the owner closes later
        pass


def collect_with_gc(cfg: Config, duration: float | None, record: str | None, progress: bool = True):
    """`brokerscope collect` when targets have gc_logs: the Jolokia collector and the GC tailer side
    by side, into one lakehouse and one recording. Returns (collect stats, tail stats)."""


    writer = RecordingWriter(record) if record else None
    shared = SharedRecorder(writer) if writer else None
    col = Collector(cfg)
    col.recorder = shared
    if progress:
        col.on_observation = progress_dots()
    stop = threading.Event()
    try:
        with GcTailer(cfg, lakehouse=col.lakehouse, recorder=shared) as tailer:
            thread = threading.Thread(target=tailer.run, args=(stop,), name="gc-tail", daemon=True)
            thread.start()
            try:
                run_until_signalled(col, duration)
            finally:
                stop.set()
                thread.join()
    finally:
        if writer:
            writer.close()
    if progress:
        sys.stderr.write("\n")
    return col.stats, tailer.stats


# --- argparse --------------------------------------------------------------------------------------


def add_parser(sub) -> None:
    """The `gc` command group (wired into brokerscope.cli)."""
    gc = sub.add_parser("gc", help="GC logs: report on a file, import archives, tail, analyze")
    gsub = gc.add_subparsers(dest="gc_command", required=True)

    sp = gsub.add_parser("report", help="summary and findings for one GC log file (no Spark)")
    sp.add_argument("file", metavar="FILE", help="GC log (plain, .gz or .zip)")
    sp.add_argument("--format", choices=["text", "json"], default="text")
    sp.add_argument("--config", "-c", help="take the finding thresholds from this config")
    sp.add_argument("--target", help="… with this target's overrides")
    sp.set_defaults(func=cmd_report)

    sp = gsub.add_parser("import", help="parse historical GC logs in parallel (Spark) into gc_events")
    sp.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (plain, .gz, .zip)")
    sp.add_argument("--config", "-c", required=True)
    sp.add_argument("--target", help="the JVM they belong to (default: the target whose gc_logs match)")
    sp.add_argument("--mode", choices=["auto", "native", "bridge"], default=None, help="Delta access from Spark (default: $BROKERSCOPE_DELTA, else auto: native delta-spark when its jars are cached, else the delta-rs bridge)")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_import)

    sp = gsub.add_parser("tail", help="only tail the configured gc_logs into bronze (no Jolokia)")
    sp.add_argument("--config", "-c", required=True)
    sp.add_argument("--duration", help="stop after this long (e.g. 30s); default: until Ctrl-C")
    sp.add_argument("--record", metavar="FILE", help="also append the lines to this recording")
    sp.add_argument("--once", action="store_true", help="read what is there now, commit, exit")
    sp.set_defaults(func=cmd_tail)

    sp = gsub.add_parser("analyze", help="Spark: bronze_gc_lines → gc_events → gc_findings")
    sp.add_argument("--config", "-c", required=True)
    sp.add_argument("--full", action="store_true", help="parse every file again (e.g. after a parser upgrade)")
    sp.add_argument("--mode", choices=["auto", "native", "bridge"], default=None)
    sp.set_defaults(func=cmd_analyze)

