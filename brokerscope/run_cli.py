"""`brokerscope run`: the long-lived service (registered by brokerscope.cli)."""

from __future__ import annotations

from pydantic import ValidationError

from alerts.metrics_server import MetricsListenError
from brokerscope.service import Service, say
from settings import CONFIG_HELP, ConfigError, config_warnings, load_config, parse_duration


def cmd_run(args) -> int:
    cfg = load_config(args.config)
    overrides: dict = {}
    if args.metrics_listen is not None:
        overrides["metrics_listen"] = args.metrics_listen
    if args.no_metrics:
        overrides["metrics"] = False
    if args.no_analysis:
        overrides["analysis"] = False
    if args.analysis_interval is not None:
        overrides["analysis_interval"] = args.analysis_interval
    # validate the overrides as if they were in the file, so errors name the same keys
    try:
        settings = type(cfg.service).model_validate({**cfg.service.model_dump(), **overrides})
        duration = parse_duration(args.duration) if args.duration else None
    except ValidationError as e:
        problems = "; ".join(f"service.{'.'.join(map(str, x['loc']))}: {x['msg'].removeprefix('Value error, ')}" for x in e.errors())
        raise ConfigError(f"brokerscope run: invalid option ({problems})") from None
    except ValueError as e:
        raise ConfigError(f"brokerscope run: --duration: {e}") from None
    for warning in config_warnings(cfg):  # said even with --quiet, once, at the start
        say(f"warning: {warning}")
    try:
        stats = Service(cfg, settings, progress=None if args.quiet else say).run(duration)
    except MetricsListenError as e:
        raise ConfigError(str(e)) from None
    for n, table, where in stats.unlanded:  # said even with --quiet: rows outside bronze
        say(f"{n} {table} rows could not be committed; they are in {where} — land them with "
            f"`brokerscope replay --config {args.config} <file>` once the lakehouse is writable")
    return 1 if stats.unlanded else 0


def add_parser(sub) -> None:
    """Register `brokerscope run` on the `brokerscope` parser."""
    sp = sub.add_parser(
        "run",
        help="long-lived service: collect, analyse in the background, alert within seconds, serve /metrics",
        description="Collectors, incremental Spark analysis, alerting and the Prometheus exporter in one process. "
        "Settings: the `service:` section of the config (README, 'Running it: alerts, metrics, dashboard'). Stop with SIGTERM or Ctrl-C.",
    )
    sp.add_argument("--config", "-c", required=True, help=CONFIG_HELP)
    sp.add_argument("--duration", help="stop after this long (e.g. 30s, 5m); default: until SIGTERM / Ctrl-C")
    sp.add_argument("--metrics-listen", metavar="HOST:PORT", help="serve /metrics here (default: service.metrics_listen, 127.0.0.1:9464)")
    sp.add_argument("--no-metrics", action="store_true", help="do not serve /metrics")
    sp.add_argument("--no-analysis", action="store_true", help="no background Spark analysis (alerts use live state and existing gold)")
    sp.add_argument("--analysis-interval", metavar="DURATION", help="run the Spark jobs this often (default: service.analysis_interval, 30s)")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    sp.set_defaults(func=cmd_run)
