"""`brokerscope` command line."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

from brokerscope.demo import run_demo
from brokerscope.errors import USER_ERRORS
from brokerscope.gc_cli import collect_with_gc
from brokerscope.timeline import ZK_TIMELINE_TABLES, build_timeline, render_incidents, render_json, render_text
from collectors.replay import replay
from collectors.scraper import collect
from infra import lab
from lakehouse.store import Lakehouse
from lakehouse.tables import TABLES, catalogue_markdown
from settings import load_config, parse_duration, parse_since


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
        print(stats.summary())
        print(gc_stats.summary())
        return 0
    stats = collect(cfg, duration=dur, record=args.record, progress=not args.quiet)
    print(stats.summary())
    return 0


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
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    cfg = _load(args)
    say = lambda m: print(f"· {m}", file=sys.stderr)  # noqa: E731
    counts = analyze(cfg, mode=getattr(args, "mode", "auto"), progress=say, full=getattr(args, "full", False))
    for name, n in counts.items():
        print(f"{name}: {n} rows")
    return 0


def cmd_timeline(args) -> int:

    cfg = _load(args)
    lh = Lakehouse(cfg.lakehouse_root())
    if not lh.exists("role_intervals") and not lh.exists("gc_findings"):
        print(f"no gold tables under {cfg.lakehouse_root()} yet; run `brokerscope analyze --config {args.config}` first", file=sys.stderr)
        return 1
    entries = build_timeline(
        lh.read("role_intervals"),
        lh.read("failover_events"),
        lh.read("split_brain_windows"),
        lh.read("broker_state", columns=["instance", "ts", "error", "role", "active"]),
        group=args.group,
        since=parse_since(args.since),
        gc_findings=lh.read("gc_findings") if lh.exists("gc_findings") else None,
        zk_tables={n: lh.read(n) for n in ZK_TIMELINE_TABLES if lh.exists(n)},
    )
    if args.format == "json":
        sys.stdout.write(render_json(entries))
        return 0
    text = render_text(entries)
    if lh.exists("incidents"):

        text += render_incidents(lh.read("incidents"), group=args.group, since=parse_since(args.since))
    sys.stdout.write(text)
    return 0


def cmd_tables(args) -> int:

    if args.markdown:
        sys.stdout.write(catalogue_markdown())
    else:
        for t in TABLES.values():
            print(f"{t.layer:6} {t.name:22} key({', '.join(t.keys)})  {len(t.columns)} columns")
    return 0


def cmd_demo(args) -> int:

    return run_demo(Path(args.workdir), scrape_interval=args.interval, keep=args.keep)


def cmd_lab(args) -> int:

    return lab.main([args.action, "--workdir", args.workdir])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="brokerscope", description="Failover analytics for HA message brokers")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    def with_config(sp):
        sp.add_argument("--config", "-c", required=True, help="YAML config (see README, 'Configuration')")
        return sp

    sp = with_config(sub.add_parser("collect", help="scrape the targets into bronze"))
    sp.add_argument("--record", metavar="FILE", help="also append every exchange to this JSONL(.gz) recording")
    sp.add_argument("--duration", help="stop after this long (e.g. 30s, 5m); default: until Ctrl-C")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress dots")
    sp.set_defaults(func=cmd_collect)

    sp = with_config(sub.add_parser("replay", help="ingest recordings as if scraped live"))
    sp.add_argument("files", nargs="+", metavar="FILE")
    sp.add_argument("--analyze", action="store_true", help="run the analysis afterwards")
    sp.add_argument("--mode", choices=["auto", "native", "bridge"], default="auto")
    sp.add_argument("--quiet", "-q", action="store_true")
    sp.set_defaults(func=cmd_replay)

    sp = with_config(sub.add_parser("analyze", help="run the Spark jobs: bronze → silver → gold"))
    sp.add_argument("--mode", choices=["auto", "native", "bridge"], default="auto", help="Delta access from Spark")
    sp.add_argument("--full", action="store_true", help="recompute everything, not only what new bronze rows change")
    sp.set_defaults(func=cmd_analyze)

    sp = with_config(sub.add_parser("timeline", help="tell what the HA machinery did, in plain words"))
    sp.add_argument("--group", help="only this HA group")
    sp.add_argument("--since", help="from this time (RFC 3339) or look-back (e.g. 15m)")
    sp.add_argument("--format", choices=["text", "json"], default="text")
    sp.set_defaults(func=cmd_timeline)

    # Each part registers its own subcommands (one module per part, one add_parser(sub) each).

    for module in ("brokerscope.gc_cli", "brokerscope.simulate_cli", "brokerscope.drill_cli", "brokerscope.run_cli",
                   "alerts.cli", "dashboards.cli"):
        importlib.import_module(module).add_parser(sub)

    sp = sub.add_parser("tables", help="list the table contracts")
    sp.add_argument("--markdown", action="store_true", help="full documentation in Markdown")
    sp.set_defaults(func=cmd_tables)

    sp = sub.add_parser("demo", help="real local drill: ActiveMQ master/slave, kill the master, reconstruct the failover")
    sp.add_argument("--workdir", default="./var/demo", help="where the lab, lakehouse and recording go")
    sp.add_argument("--interval", type=float, default=0.5, help="scrape interval in seconds")
    sp.add_argument("--keep", action="store_true", help="keep the previous demo's data instead of starting clean")
    sp.set_defaults(func=cmd_demo)

    sp = sub.add_parser("lab", help="start/stop the local ActiveMQ lab by hand")
    sp.add_argument("action", choices=["start", "stop", "status"])
    sp.add_argument("--workdir", default="./var/lab")
    sp.set_defaults(func=cmd_lab)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.ERROR, format="%(levelname)s %(name)s: %(message)s"
    )

    try:
        return args.func(args)
    except USER_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
