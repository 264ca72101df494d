"""The root of the YAML configuration: lakehouse location, scrape interval, targets and every section.

Validated with pydantic; every error names the key (e.g. `targets[1].url`) and what to do.
Secrets never live in the file: a password comes from `password_env` or `password_file`.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import Field, ValidationError, model_validator

from settings.alerts import BUILTIN_ALERTNAMES, AlertsConfig
from settings.analysis import HOLE_SCRAPES, AnalysisSettings
from settings.base import ConfigError, Duration, Strict
from settings.dashboard import DashboardSettings
from settings.gc import GcSettings, GcThresholds
from settings.readiness import FailoverReadiness, Replication
from settings.service import ServiceSettings
from settings.targets import KINDS, Target


class Config(Strict):
    lakehouse: str = "./lakehouse"
    scrape_interval: Duration = 5.0
    flush_interval: Duration = 2.0  # how often collected rows are committed to bronze
    targets: list[Target] = Field(default_factory=list)
    gc: GcSettings = Field(default_factory=GcSettings)
    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)  # settings/dashboard.py
    service: ServiceSettings = Field(default_factory=ServiceSettings)  # brokerscope run (settings/service.py)
    failover_readiness: FailoverReadiness = Field(default_factory=FailoverReadiness)  # settings/readiness.py
    source_path: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _unique_names(self) -> "Config":
        seen: set[str] = set()
        for t in self.targets:
            if t.name in seen:
                raise ValueError(f"target name {t.name!r} is used twice; names must be unique")
            seen.add(t.name)
        for r in self.failover_readiness.replications:
            if r.name in seen:
                raise ValueError(f"replication name {r.name!r} is also a target's name; names of targets and "
                                 "failover_readiness.replications share one namespace (they name bronze rows)")
        return self

    def target(self, name: str) -> Target:
        for t in self.targets:
            if t.name == name:
                return t
        raise ConfigError(f"no target named {name!r}; configured: {', '.join(t.name for t in self.targets)}")

    def replication(self, name: str) -> Replication | None:
        """The `failover_readiness.replications` entry of that name (None: not one)."""
        return next((r for r in self.failover_readiness.replications if r.name == name), None)

    def _here(self, path: str | Path) -> Path:
        """A path from the file, relative to the config file's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() or self.source_path is None else self.source_path.parent / p

    def hole_tolerance(self) -> float:
        """Seconds without an observation that make a hole (`analysis.hole_tolerance`)."""
        if self.analysis.hole_tolerance is not None:
            return self.analysis.hole_tolerance
        return HOLE_SCRAPES * self.scrape_interval + max((t.timeout for t in self.targets), default=0.0)

    def gc_log_patterns(self, target: Target) -> list[str]:
        """The target's `gc_logs` globs, relative ones resolved against the config file's folder."""
        return [str(self._here(p)) for p in target.gc_logs]

    def gc_thresholds(self, target: Target | None = None) -> dict[str, float]:
        """The GC finding thresholds for one target: its overrides, else the `gc:` section."""
        over = (target.gc if target else None) or GcThresholds()
        return {
            "zk_session_ms": float(over.zk_session_ms or self.gc.zk_session_ms),
            "connection_ttl_ms": float(over.connection_ttl_ms or self.gc.connection_ttl_ms),
            "time_share_window_s": self.gc.time_share_window,
            "time_share_pct": self.gc.time_share_pct,
        }

    def gc_threshold_defaults(self, target: Target | None = None) -> list[str]:
        """The gc_thresholds keys (zk_session_ms, connection_ttl_ms) set nowhere in the config: their
        value is the broker's default, assumed, not known to be what the broker runs with."""
        over = (target.gc if target else None) or GcThresholds()
        return [k for k in ("zk_session_ms", "connection_ttl_ms")
                if getattr(over, k) is None and k not in self.gc.model_fields_set]

    def gc_state_file(self) -> Path:
        """Where the GC tailer keeps its read offsets."""
        if self.gc.state_file is not None:
            return self._here(self.gc.state_file)
        if "://" in self.lakehouse:
            raise ConfigError(
                "gc.state_file: the lakehouse is remote, so the GC tail offsets need a local file; "
                "set gc.state_file, e.g. /var/lib/brokerscope/gc_tail.json")
        return Path(self.lakehouse_root()) / "_state" / "gc_tail.json"

    def lakehouse_root(self) -> str:
        """Relative local paths resolve against the config file's folder, URIs stay as they are."""
        if "://" in self.lakehouse or self.source_path is None:
            return self.lakehouse
        p = Path(self.lakehouse)
        return str(p if p.is_absolute() else (self.source_path.parent / p).resolve())


CONFIG_HELP = "YAML config (README, 'Using it on your brokers')"


def config_warnings(cfg: Config) -> list[str]:
    """Valid but probably not meant: said by `brokerscope check config` and at the start of `run`."""
    out = []
    rules = [n for n in BUILTIN_ALERTNAMES if n not in cfg.alerts.rules.disabled] + [r.name for r in cfg.alerts.threshold_rules]
    if rules and not cfg.alerts.receivers:
        out.append(f"alerts: {len(rules)} rule(s) are evaluated but alerts.receivers is empty — firing alerts are "
                   "recorded (alert_history, /metrics) and nobody is notified; add a receiver (README, "
                   "'Running it: alerts, metrics, dashboard')")
    if not cfg.targets and not cfg.failover_readiness.replications:
        out.append("targets: none configured; collect and run have nothing to scrape")
    return out


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


_HINTS = {
    "extra_forbidden": "unknown key; check the spelling (allowed keys are listed in README.md, 'Using it on your brokers')",
    "missing": "required key is missing",
    "literal_error": "allowed values: " + ", ".join(KINDS),
}


MAX_TARGETS = 10_000


def config_from_dict(data: object, source: str = "<config>") -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the file must be a YAML mapping with keys lakehouse, scrape_interval, targets")
    n = len(data["targets"]) if isinstance(data.get("targets"), list) else 0
    if n > MAX_TARGETS:  # checked before validating: 100,000 targets would take gigabytes on their way in
        raise ConfigError(
            f"{source}: {n:,} targets; one collector takes at most {MAX_TARGETS:,} (each costs about 50 KiB and a "
            "connection). Split the targets over several configs, one `brokerscope collect` each, sharing the lakehouse")
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            where = _loc(err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            hint = _HINTS.get(err["type"])
            if hint and err["type"] != "literal_error":
                msg = hint
            elif hint:
                msg = f"{msg} ({hint})"
            problems.append(f"  {where}: {msg}")
        raise ConfigError(f"{source}: invalid configuration\n" + "\n".join(problems)) from None


def load_config(path: str | os.PathLike) -> Config:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file {p} not found; pass --config with the path to your YAML file") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {p}: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{p}: not valid YAML{where}: {getattr(e, 'problem', e)}") from None
    cfg = config_from_dict(data, str(p))
    return cfg.model_copy(update={"source_path": p.resolve()})
