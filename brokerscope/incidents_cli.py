"""`brokerscope incidents`: the gold incidents, one line each, or JSON (registered by brokerscope.cli).

    brokerscope incidents -c brokerscope.yaml --since yesterday
    brokerscope incidents -c brokerscope.yaml -o json | jq '.[].short_id'

The first column is the 8-character id the timeline prints; `brokerscope report ID` and the
dashboard's /incident/ID take it (any unique start of an id)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from brokerscope.cli_args import add_time_window
from brokerscope.next_step import MissingStep, missing_gold
from brokerscope.timeline import incident_json, incidents_between
from collectors.text import printable
from lakehouse.store import Lakehouse
from settings import CONFIG_HELP, load_config

COLUMNS = ("ID", "SEVERITY", "STATUS", "CLUSTER", "START (UTC)", "DURATION", "TITLE")


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def incident_table(rows: list[dict]) -> str:
    """Aligned columns (kubectl get style), names escaped."""
    cells = [COLUMNS] + [(r["incident_id"][:8], r["severity"], r["status"], printable(r["cluster"]),
                          r["start_ts"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                          duration_text(r["duration_s"]), printable(r["title"])) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS) - 1)]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n" for row in cells)


def window_words(since: datetime | None, until: datetime | None) -> str:
    parts = [since and f"since {since.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S}",
             until and f"until {until.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S}"]
    return " ".join(p for p in parts if p) + (" UTC" if since or until else "")


def cmd_incidents(args) -> int:
    cfg = load_config(args.config)
    missing = missing_gold(cfg, args.config, "incidents")
    if missing:
        raise MissingStep(missing)
    table = Lakehouse(cfg.lakehouse_root()).read("incidents")
    clusters = sorted(set(table.column("cluster").to_pylist()))
    if args.group and args.group not in clusters:
        raise MissingStep(f"no incidents of group {args.group!r}; "
                          f"groups with incidents: {', '.join(clusters) or 'none'}")
    rows = incidents_between(table, args.group, args.since, args.until)
    if args.output == "json":
        sys.stdout.write(json.dumps([incident_json(r) for r in rows], indent=2) + "\n")
        return 0
    if rows:
        sys.stdout.write(incident_table(rows))
    elif table.num_rows:
        print(f"no incidents {window_words(args.since, args.until)}{' in ' + args.group if args.group else ''}; "
              f"{table.num_rows} in all, {min(table.column('start_ts').to_pylist()):%Y-%m-%d %H:%M:%S} … "
              f"{max(table.column('end_ts').to_pylist()):%Y-%m-%d %H:%M:%S} UTC")
    else:
        print("no incidents: the analysis found nothing to report")
    return 0


def add_parser(sub) -> None:
    """Register `brokerscope incidents` on the `brokerscope` parser."""
    sp = sub.add_parser("incidents", help="list incidents (id, severity, status, cluster, start, duration, title)",
                        description="The gold incidents going on between --since and --until, oldest first. "
                        "The ID column (first 8 characters) is what `brokerscope report` and /incident/ID take.")
    sp.add_argument("--config", "-c", required=True, help=CONFIG_HELP)
    sp.add_argument("--group", help="only this cluster / HA group")
    add_time_window(sp)
    sp.add_argument("--output", "-o", choices=["text", "json"], default="text")
    sp.set_defaults(func=cmd_incidents)
