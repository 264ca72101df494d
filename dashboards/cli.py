"""Subcommands of this part (registered by brokerscope.cli): `dashboard` and `report`."""

from __future__ import annotations

import sys
from pathlib import Path

from dashboards import data as D
from dashboards.health import stale_after
from dashboards.report import render
from settings import CONFIG_HELP, ConfigError, load_config
from settings.dashboard import check_exposure


def cmd_dashboard(args) -> int:
    from dashboards.app import DashboardServer, create_app, open_gold  # deferred: dash is heavy to import

    cfg = load_config(args.config)
    settings = cfg.dashboard
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    try:
        check_exposure(settings, host)
        password = settings.auth.password(cfg.source_path.parent if cfg.source_path else None) \
            if settings.auth.mode == "basic" else None
    except ValueError as e:
        raise ConfigError(f"{args.config}: {e}") from None
    gold = open_gold(cfg.lakehouse_root(), settings.max_points,
                     stale_after(cfg.scrape_interval, cfg.service.analysis_interval), cfg.hole_tolerance())
    server = DashboardServer(create_app(gold, settings, password, bind_host=host), host, port, quiet=False)
    print(f"brokerscope dashboard on {server.url} (lakehouse {cfg.lakehouse_root()}, auth: {settings.auth.mode}); "
          "Ctrl-C to stop", file=sys.stderr)
    server.serve_forever()
    return 0


def cmd_report(args) -> int:
    from dashboards.app import open_gold  # deferred: dash is heavy to import

    cfg = load_config(args.config)
    gold = open_gold(cfg.lakehouse_root(), hole_s=cfg.hole_tolerance())
    try:
        text = render(D.load_incident(gold, args.incident_id), args.format)
    except (D.MissingTable, D.NotFound) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({len(text.encode()):,} bytes, {args.format})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def add_parser(sub) -> None:
    """Register `dashboard` and `report` on the `brokerscope` parser."""
    sp = sub.add_parser("dashboard", help="the web app: overview, incidents, findings (reads gold tables, no JVM)")
    sp.add_argument("--config", "-c", required=True, help=CONFIG_HELP)
    sp.add_argument("--host", help="address to bind (default: dashboard.host, 127.0.0.1); another needs auth")
    sp.add_argument("--port", type=int, help="port (default: dashboard.port, 8050)")
    sp.set_defaults(func=cmd_dashboard)

    sp = sub.add_parser("report", help="post-incident report of one incident (self-contained HTML or Markdown)")
    sp.add_argument("incident_id", metavar="INCIDENT_ID",
                    help="the id, or any unique start of it (≥ 4 characters), "
                    "as `brokerscope incidents` and the timeline print it")
    sp.add_argument("--config", "-c", required=True, help=CONFIG_HELP)
    sp.add_argument("--format", choices=["html", "md"], default="html")
    sp.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    sp.set_defaults(func=cmd_report)
