"""`brokerscope` command line."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from collections import Counter
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from brokerscope.cli_args import add_time_window
from brokerscope.demo import run_demo
from brokerscope.errors import USER_ERRORS
from brokerscope.gc_cli import collect_with_gc
from brokerscope.next_step import MissingStep, missing_before_analysis, missing_gold
from brokerscope.timeline import (
    STATE_COLUMNS,
    ZK_TIMELINE_TABLES,
    build_timeline,
    incidents_between,
    render_incidents,
    render_json,
    render_text,
)
from collectors.replay import replay
from collectors.scraper import collect
from collectors.text import PrintableFormatter, printable
from infra import lab
from lakehouse.store import Lakehouse
from lakehouse.tables import TABLES, catalogue_markdown
from settings import CONFIG_HELP, config_warnings, load_config, parse_duration


def _load(args):

    return load_config(args.config)


def cmd_collect(args) -> int:

    cfg = _load(args)
    dur = None
    if args.duration:

        dur = parse_duration(args.duration)
    print(
        f"collecting {len(cfg.targets)} target(s) every {cfg.scrape_interval:g}s into {cfg.lakehouse_root()}"
        + (f", recording to {args.record}" if args.record else "")
        + (f" for {dur:g}s" if dur else " (Ctrl-C to stop)"),
        file=sys.stderr,
    )
    if any(t.gc_logs for t in cfg.targets):

        stats, gc_stats = collect_with_gc(cfg, duration=dur, record=args.record, progress=not args.quiet)
        print(printable(stats.summary(), keep_newlines=True))
        print(printable(gc_stats.summary(), keep_newlines=True))
        return 1 if stats.unlanded else 0
    stats = collect(cfg, duration=dur, record=args.record, progress=not args.quiet)
    print(printable(stats.summary(), keep_newlines=True))
    return 1 if stats.unlanded else 0  # rows kept outside bronze: the summary says where


def cmd_replay(args) -> int:

    cfg = _load(args)
    total_new = 0
    for f in args.files:
        res = replay(cfg, f, progress=not args.quiet)
        total_new += res.new_rows
        rep = res.report
        print(f"{f}: {res.envelopes} exchanges, {res.new_rows} new bronze rows")
        if res.gc_envelopes:
            print(f"{f}: {res.gc_envelopes} GC log batches, {res.gc_new_rows} new GC log lines")
        if res.zk_envelopes:
            print(f"{f}: {res.zk_envelopes} ZooKeeper exchanges, {res.zk_new_rows} new bronze_zk rows")
        if res.kafka_envelopes:
            print(f"{f}: {res.kafka_envelopes} Kafka-protocol exchanges, {res.kafka_new_rows} new bronze_kafka rows")
        if rep.bad_lines:
            for no, why in rep.bad_lines[:10]:
                print(f"  line {no} skipped: {why}", file=sys.stderr)
            if len(rep.bad_lines) > 10:
                print(f"  … {len(rep.bad_lines) - 10} more bad lines", file=sys.stderr)
        if rep.truncated_tail:
            print("  last line was half-written (recorder stopped mid-line); ignored", file=sys.stderr)
        for t, n in res.unknown_targets.items():
            print(f"  {n} exchanges for target {t!r} skipped: not in the config", file=sys.stderr)
    if args.analyze:
        return cmd_analyze(args)
    return 0


def cmd_analyze(args) -> int:
    cfg = _load(args)
    missing = missing_before_analysis(cfg, args.config)
    if missing:  # before starting Spark: an empty analysis would run for half a minute and write empty tables
        raise MissingStep(missing)
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    say = lambda m: print(f"· {m}", file=sys.stderr)  # noqa: E731
    counts = analyze(cfg, mode=getattr(args, "mode", "auto"), progress=say, full=getattr(args, "full", False))
    for name, n in counts.items():
        print(f"{name}: {n} rows")
    return 0


SPINE_TABLES = ("role_intervals", "failover_events", "split_brain_windows")  # written together by the spine job


def spine_problem(cfg, config_arg: str, lh: Lakehouse) -> str | None:
    """Why the timeline cannot be told: a missing step, or spine tables deleted after an analysis."""
    spine = [n for n in SPINE_TABLES if lh.exists(n)]
    if spine and len(spine) == len(SPINE_TABLES) or not spine and lh.exists("gc_findings"):
        return None
    present = [t.name for t in TABLES.values() if t.layer == "gold" and lh.exists(t.name)]
    if present:  # analysed before: a gold table was deleted or moved, an empty timeline would lie
        gone = [n for n in SPINE_TABLES if n not in spine]
        return (f"gold table(s) {', '.join(gone)} missing under {cfg.lakehouse_root()} while {len(present)} other gold "
                f"table(s) exist (deleted or moved?); rebuild them with "
                f"`brokerscope analyze --full --config {config_arg}`")
    return missing_gold(cfg, config_arg, "role_intervals")


def known_groups(lh: Lakehouse) -> list[str]:
    """HA groups, clusters and ensembles the gold tables know."""
    names: set[str] = set()
    for table, column in (("role_intervals", "group_name"), ("incidents", "cluster"), ("zk_quorum", "ensemble"),
                          ("gc_findings", "group_name")):
        if lh.exists(table):
            names |= {x for x in lh.read(table, columns=[column]).column(column).to_pylist() if x}
    return sorted(names)


def empty_window_text(args, since: datetime | None, until: datetime | None, everything: list) -> str:
    """Why a timeline came out empty: the window, and what the data does cover."""
    window = " ".join(filter(None, [since and f"since {since:%Y-%m-%d %H:%M:%S} UTC",
                                    until and f"until {until:%Y-%m-%d %H:%M:%S} UTC"]))
    where = f" for group {args.group}" if args.group else ""
    if not everything:
        return f"nothing happened{where} in the analysed data (no role changes, GC pauses or elections)\n"
    first, last = min(e.ts for e in everything), max(e.ts for e in everything)
    return (f"no entries{where} {window}; the timeline{where} covers {first:%Y-%m-%d %H:%M:%S} … "
            f"{last:%Y-%m-%d %H:%M:%S} UTC ({len(everything)} entries): widen --since / --until\n")


def cmd_timeline(args) -> int:
    cfg = _load(args)
    before = missing_before_analysis(cfg, args.config)  # before Lakehouse(): it would create the folder
    if before:
        print(f"error: {before}", file=sys.stderr)
        return 1
    lh = Lakehouse(cfg.lakehouse_root())
    problem = spine_problem(cfg, args.config, lh)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2 if problem.startswith("gold table(s)") else 1
    if args.group and args.group not in (groups := known_groups(lh)):
        raise MissingStep(f"no group {args.group!r} in {cfg.lakehouse_root()}; groups: {', '.join(groups) or 'none'}")
    since, until = args.since, args.until
    everything = build_timeline(
        lh.read("role_intervals"),
        lh.read("failover_events"),
        lh.read("split_brain_windows"),
        lh.read("broker_state", columns=STATE_COLUMNS),
        group=args.group,
        gc_findings=lh.read("gc_findings") if lh.exists("gc_findings") else None,
        zk_tables={n: lh.read(n) for n in ZK_TIMELINE_TABLES if lh.exists(n)},
        client_shifts=lh.read("client_shifts") if lh.exists("client_shifts") else None,
    )
    entries = [e for e in everything if not (since and e.ts < since or until and e.ts > until)]
    incidents = incidents_between(lh.read("incidents"), args.group, since, until) if lh.exists("incidents") else []
    if args.format == "json":
        sys.stdout.write(render_json(entries, incidents, since, until))
        return 0
    text = render_text(entries) if entries else empty_window_text(args, since, until, everything)
    if lh.exists("incidents"):
        text += render_incidents(lh.read("incidents"), group=args.group, since=since, until=until)
    sys.stdout.write(text)  # broker-supplied names escaped (collectors.text.printable)
    return 0


def cmd_check_config(args) -> int:
    """Validate a config without touching brokers or the lakehouse (promtool check config)."""
    cfg = load_config(args.file)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(Counter(t.kind for t in cfg.targets).items())) or "no targets"
    print(f"{args.file}: valid — {len(cfg.targets)} target(s) ({kinds}), scrape every {cfg.scrape_interval:g} s, "
          f"lakehouse {cfg.lakehouse_root()}")
    for warning in config_warnings(cfg):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def cmd_tables(args) -> int:

    if args.markdown:
        sys.stdout.write(catalogue_markdown())
    else:
        for t in TABLES.values():
            print(f"{t.layer:6} {t.name:22} key({', '.join(t.keys)})  {len(t.columns)} columns")
    return 0


def cmd_demo(args) -> int:

    workdir = args.workdir or ("./var/demo" if args.broker == "activemq" else f"./var/demo-{args.broker}")
    return run_demo(Path(workdir), scrape_interval=args.interval, keep=args.keep, broker=args.broker)


def cmd_lab(args) -> int:

    return lab.main([args.action, "--workdir", args.workdir])


def brokerscope_version() -> str:
    try:
        return version("brokerscope")
    except PackageNotFoundError:  # run from a source tree without `pip install -e .`
        return "unknown (not installed)"


def allow_verbose_anywhere(sub: argparse._SubParsersAction) -> None:
    """`-v` after the subcommand too (`brokerscope run -c x.yaml -v`), as kubectl and amtool take it."""
    for sp in dict.fromkeys(sub.choices.values()):
        if not any("-v" in a.option_strings for a in sp._actions):
            sp.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                            help="debug logging, Spark's own warnings included")
        for nested in sp._actions:
            if isinstance(nested, argparse._SubParsersAction):
                allow_verbose_anywhere(nested)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="brokerscope", description="Failover analytics for HA message brokers")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging, Spark's own warnings included")
    p.add_argument("--version", action="version", version=f"brokerscope {brokerscope_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    def with_config(sp):
        sp.add_argument("--config", "-c", required=True, help=CONFIG_HELP)
        return sp

    sp = with_config(sub.add_parser("collect", help="scrape the targets into bronze"))
    sp.add_argument("--record", metavar="FILE", help="also append every exchange to this JSONL(.gz) recording")
    sp.add_argument("--duration", help="stop after this long (e.g. 30s, 5m); default: until Ctrl-C")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress dots")
    sp.set_defaults(func=cmd_collect)

    sp = with_config(sub.add_parser("replay", help="ingest recordings as if scraped live"))
    sp.add_argument("files", nargs="+", metavar="FILE")
    sp.add_argument("--analyze", action="store_true", help="run the analysis afterwards")
    sp.add_argument("--mode", choices=["auto", "native", "bridge"], default=None)
    sp.add_argument("--quiet", "-q", action="store_true")
    sp.set_defaults(func=cmd_replay)

    sp = with_config(sub.add_parser("analyze", help="run the Spark jobs: bronze → silver → gold"))
    sp.add_argument("--mode", choices=["auto", "native", "bridge"], default=None, help="Delta access from Spark (default: $BROKERSCOPE_DELTA, else auto: native delta-spark when its jars are cached, else the delta-rs bridge)")
    sp.add_argument("--full", action="store_true", help="recompute everything, not only what new bronze rows change")
    sp.set_defaults(func=cmd_analyze)

    sp = with_config(sub.add_parser("timeline", help="tell what the HA machinery did, in plain words"))
    sp.add_argument("--group", help="only this HA group")
    add_time_window(sp)
    sp.add_argument("--format", "-o", choices=["text", "json"], default="text",
                    help="json: {entries, incidents}, every number a field")
    sp.set_defaults(func=cmd_timeline)

    check = sub.add_parser("check", help="validate without running (like promtool check)")
    what = check.add_subparsers(dest="what", required=True)
    sp = what.add_parser("config", help="validate a config file: every key, target and setting; touches nothing")
    sp.add_argument("file", metavar="FILE")
    sp.set_defaults(func=cmd_check_config)

    # Each part registers its own subcommands (one module per part, one add_parser(sub) each).

    for module in ("brokerscope.gc_cli", "brokerscope.simulate_cli", "brokerscope.drill_cli", "brokerscope.run_cli",
                   "brokerscope.incidents_cli", "alerts.cli", "dashboards.cli"):
        importlib.import_module(module).add_parser(sub)

    sp = sub.add_parser("tables", help="list the table contracts")
    sp.add_argument("--markdown", action="store_true", help="full documentation in Markdown")
    sp.set_defaults(func=cmd_tables)

    sp = sub.add_parser("demo", help="real local drill: a broker pair, kill the primary, reconstruct the failover")
    sp.add_argument("--broker", choices=["activemq", "artemis"], default="activemq",
                    help="activemq: an ActiveMQ Classic master/slave pair (default); artemis: an Artemis 2.40.0 "
                         "shared-store primary/backup (kill, takeover, failback)")
    sp.add_argument("--workdir", default=None,
                    help="where the lab, lakehouse and recording go (default ./var/demo, ./var/demo-artemis)")
    sp.add_argument("--interval", type=float, default=0.5, help="scrape interval in seconds")
    sp.add_argument("--keep", action="store_true", help="keep the previous demo's data instead of starting clean")
    sp.set_defaults(func=cmd_demo)

    sp = sub.add_parser("lab", help="start/stop the local ActiveMQ lab by hand")
    sp.add_argument("action", choices=["start", "stop", "status"])
    sp.add_argument("--workdir", default="./var/lab")
    sp.set_defaults(func=cmd_lab)
    allow_verbose_anywhere(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with spark_warnings(args.verbose):
        return run_command(args)


@contextlib.contextmanager
def spark_warnings(verbose: bool):
    """-v: Spark's own warnings too (lakehouse.spark.spark_session reads the level; ERROR otherwise),
    for this command only (main() may run several commands in one process: tests, the demo)."""
    key, before = "BROKERSCOPE_SPARK_LOG_LEVEL", os.environ.get("BROKERSCOPE_SPARK_LOG_LEVEL")
    if verbose and before is None:
        os.environ[key] = "WARN"
    try:
        yield
    finally:
        if verbose and before is None:
            os.environ.pop(key, None)


def run_command(args) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.ERROR)
    for handler in logging.getLogger().handlers:  # names and answers from brokers are escaped in logs too
        handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    try:
        return args.func(args)
    except USER_ERRORS as e:
        print(f"error: {printable(e, keep_newlines=True)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
