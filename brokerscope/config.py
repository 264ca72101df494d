"""The YAML configuration: lakehouse location, scrape interval and targets.

Validated with pydantic; every error names the key (e.g. `targets[1].url`) and what to do.
Secrets never live in the file: a password comes from `password_env` or `password_file`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from dashboards.settings import DashboardSettings
from alerts.config import AlertsConfig
from brokerscope.service import ServiceSettings

KINDS = ("activemq", "artemis", "kafka", "weblogic", "zookeeper")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class ConfigError(ValueError):
    """The configuration is invalid; the message names each offending key and the fix."""


def parse_duration(value: object) -> float:
    """'500ms' / '5s' / '2m' / '1h' / a bare number of seconds → seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '500ms', '5s' or '2m'")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ValueError(f"{value!r} is not a duration; write e.g. '500ms', '5s', '2m' or '1h'")
        seconds = float(m.group(1)) * _UNIT_S[m.group(2)]
    if seconds <= 0:
        raise ValueError("must be greater than zero")
    return seconds


# A field of seconds that also takes "500ms", "5s", "2m", "1h" (one validator for every settings model).
Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GcThresholds(_Strict):
    """Per-target overrides of the GC finding thresholds (unset: the top-level `gc:` value)."""

    zk_session_ms: int | None = Field(default=None, gt=0)
    connection_ttl_ms: int | None = Field(default=None, gt=0)


class GcSettings(_Strict):
    """Top-level `gc:` section: thresholds of the GC findings and how GC logs are tailed."""

    zk_session_ms: int = Field(default=18000, gt=0)  # ZooKeeper session-ms: pauses ≥ ⅓ of it lose sessions
    connection_ttl_ms: int = Field(default=60000, gt=0)  # Artemis connection-ttl
    time_share_window: float = 60.0  # GC time share is measured over windows this long
    time_share_pct: float = Field(default=10.0, gt=0, le=100)  # … and reported above this share
    poll_interval: float = 1.0  # how often the tailer looks for new lines
    max_line_bytes: int = Field(default=65536, ge=1024)  # longer lines are rejected (overlong)
    state_file: Path | None = None  # tail offsets; default <lakehouse>/_state/gc_tail.json

    @field_validator("time_share_window", "poll_interval", mode="before")
    @classmethod
    def _dur(cls, v: object) -> float:
        return parse_duration(v)


ZK_PRESETS = ("artemis-lock-manager",)


class ZkWatch(_Strict):
    """One watched path set of a ZooKeeper ensemble; read only (get_children / get / exists)."""

    preset: Literal["artemis-lock-manager"] | None = None
    namespace: str = ""  # artemis-lock-manager: the lock manager's `namespace` property ("" = root)
    node_ids: list[str] = Field(default_factory=list)  # artemis-lock-manager: NodeIDs; empty = all under /<namespace>
    paths: list[str] = Field(default_factory=list)  # no preset: these znodes, kept raw in bronze

    @model_validator(mode="after")
    def _one_kind(self) -> "ZkWatch":
        if bool(self.preset) == bool(self.paths):
            raise ValueError(f"set either `preset` ({', '.join(ZK_PRESETS)}) or `paths` (a list of znode paths)")
        if any(not p.startswith("/") for p in self.paths):
            raise ValueError("znode paths are absolute, e.g. /controller")
        return self


class ZkOptions(_Strict):
    """`zookeeper:` options of a `kind: zookeeper` target (one ZooKeeper server)."""

    admin_url: str | None = None  # AdminServer commands URL; default http://<host>:8080/commands
    watch: list[ZkWatch] = Field(default_factory=list)  # coordination state read through the ensemble
    latency_threshold: float = 0.1  # mean request latency over a scrape interval above this = spike
    outstanding_threshold: int = Field(default=10, ge=1)  # queued requests at or above this = spike
    claim_grace: float = 10.0  # a negative (claimed) activation sequence older than this lingers

    @field_validator("latency_threshold", "claim_grace", mode="before")
    @classmethod
    def _dur(cls, v: object) -> float:
        return parse_duration(v)

    @field_validator("admin_url")
    @classmethod
    def _admin_ok(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("must be an http:// URL of the AdminServer commands, e.g. http://10.0.0.7:8080/commands")
        return v.rstrip("/") if v else v


class HaSettings(_Strict):
    """Optional per-target `ha:` facts from the broker's own configuration, where JMX does not
    report them. They decide risk findings and the advice on failover durations
    (lakehouse/jobs/risk.py); unset = unknown (no finding that needs it). connection-ttl and
    ZooKeeper session-ms are set once, per target under `gc:` (defaults 60 s / 18 s)."""

    check_for_live_server: bool | None = None  # Artemis primary `check-for-live-server`
    shutdown_on_master_failure: bool | None = None  # ActiveMQ pure master/slave `shutdownOnMasterFailure`
    shutdown_on_slave_failure: bool | None = None  # ActiveMQ pure master/slave `shutdownOnSlaveFailure`
    lock_acquire_sleep_ms: int | None = Field(default=None, gt=0)  # ActiveMQ locker `lockAcquireSleepInterval` (10 000 ms default)
    lease_duration_ms: int | None = Field(default=None, gt=0)  # ActiveMQ lease-database-locker lease (its lockAcquireSleepInterval)
    quorum_vote: bool | None = None  # Artemis replication with vote-based quorum (unset: from the reported HAPolicy)


_ZK_URL = re.compile(r"^(?:zk://)?(\[[^\]]+\]|[^/:\s\[\]]+)(?::(\d+))?/?$")


class Target(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["activemq", "artemis", "kafka", "weblogic", "zookeeper"]
    url: str
    group: str | None = None
    username: str | None = None
    password_env: str | None = None
    password_file: Path | None = None
    origin: str | None = None  # Origin header; defaults to the URL's scheme://host
    timeout: float = 5.0
    verify_tls: bool = True
    ca_file: Path | None = None
    broker_name: str = "*"  # ActiveMQ brokerName / Artemis broker key to read; '*' = any
    # above this many destinations, each scrape reads a bounded sample (busiest first) instead of all
    max_destinations_per_scrape: int = Field(default=500, ge=2)
    gc_logs: list[str] = Field(default_factory=list)  # globs of this JVM's GC log files
    gc: GcThresholds | None = None
    zookeeper: ZkOptions | None = None  # kind zookeeper only
    ha: HaSettings | None = None  # HA facts from the broker's configuration (risk findings, failover advice)

    @field_validator("gc_logs")
    @classmethod
    def _gc_logs_ok(cls, v: list[str]) -> list[str]:
        if any(not p.strip() for p in v):
            raise ValueError("an empty pattern; list file globs, e.g. /var/log/amq/gc.log*")
        return v

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]*", v):
            raise ValueError("use letters, digits and . _ : - only (it names files and rows)")
        return v

    @field_validator("url")
    @classmethod
    def _url_ok(cls, v: str, info: ValidationInfo) -> str:
        if info.data.get("kind") == "zookeeper":  # a ZooKeeper server: its client port (4lw, znodes)
            m = _ZK_URL.match(v.strip())
            if not m:
                raise ValueError("a ZooKeeper server is host:port or zk://host:port, e.g. zk://10.0.0.7:2181")
            return f"zk://{m.group(1)}:{m.group(2) or 2181}"
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:8778/jolokia")
        if re.match(r"^https?://[^/\s]*@", v):
            # the URL lands in logs, bronze rows and error messages: it must hold no secret
            raise ValueError("must not contain credentials (user:password@); set `username:` and "
                             "password_env or password_file instead")
        return v.rstrip("/")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: object) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _auth_ok(self) -> "Target":
        if self.password_env and self.password_file:
            raise ValueError("set only one of password_env and password_file")
        if (self.password_env or self.password_file) and not self.username:
            raise ValueError("a password needs a username")
        if self.zookeeper is not None and self.kind != "zookeeper":
            raise ValueError("`zookeeper:` options belong to targets of kind zookeeper")
        return self

    def password(self) -> str | None:
        """Resolve the secret at use time, with an error saying where it was looked for."""
        if self.password_env:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ConfigError(
                    f"target {self.name}: environment variable {self.password_env} (password_env) "
                    "is not set; export it or use password_file"
                )
            return value
        if self.password_file:
            try:
                return self.password_file.read_text().rstrip("\r\n")
            except OSError as e:
                raise ConfigError(
                    f"target {self.name}: cannot read password_file {self.password_file}: {e.strerror}"
                ) from None
        return None

    @property
    def effective_origin(self) -> str:
        if self.origin:
            return self.origin
        m = re.match(r"^(https?://[^/]+)", self.url)
        return m.group(1) if m else self.url


class StuckSettings(_Strict):
    """`analysis.stuck`: when messages count as stuck (lakehouse/jobs/stuck.py)."""

    threshold: float = 60.0  # held with no consumer and no delivery for at least this long
    forward_delays: dict[str, float] = Field(default_factory=dict)  # logical destination → its ForwardDelay (replaces threshold)

    @field_validator("threshold", mode="before")
    @classmethod
    def _dur(cls, v: object) -> float:
        return parse_duration(v)

    @field_validator("forward_delays", mode="before")
    @classmethod
    def _delays(cls, v: object) -> object:
        return {k: parse_duration(d) for k, d in v.items()} if isinstance(v, dict) else v


class LagSettings(_Strict):
    """`analysis.lag`: replication-lag thresholds and Burrow/lag-in-time knobs (lakehouse/jobs/lag.py)."""

    lag_threshold: Duration = 60.0  # replication lag in time above this is a finding
    follower_lag_messages: float = Field(default=1000, ge=0)  # Kafka follower MaxLag above this is a finding
    replica_sync_grace: Duration = 60.0  # Artemis live not in sync for longer than this (never one sample)
    window: int = Field(default=10, ge=2)  # Burrow: observations per evaluation window ("intervals")
    min_complete: float = Field(default=0.5, ge=0, le=1)  # Burrow minimum-complete
    allowed_lag: float = Field(default=0, ge=0)  # Burrow allowed-lag (messages)
    lookup_points: int = Field(default=60, ge=2)  # Kafka Lag Exporter lookup-table size
    max_extrapolation: float = Field(default=1.0, ge=0)  # extrapolate at most this × the table's span


class RiskSettings(_Strict):
    """`analysis.risk`: when an HA risk state is a finding (lakehouse/jobs/risk.py)."""

    unprotected_grace: Duration = 60.0  # a live without a standby backup for longer than this (never one sample)
    stale_backup_grace: Duration = 60.0  # a backup behind its live's activation sequence for longer than this


class CauseSettings(_Strict):
    """`analysis.causes`: how far before an HA event a GC pause / ZooKeeper finding may have begun
    to count as its cause (lakehouse/jobs/causes.py): max(scrapes × scrape_interval, pause + slack)."""

    scrapes: float = Field(default=2.0, gt=0)
    slack: Duration = 30.0


class IncidentSettings(_Strict):
    """`analysis.incidents`: findings of one cluster closer than `gap` form one incident."""

    gap: Duration = 300.0


class ClockSkewSettings(_Strict):
    """`analysis.clock_skew`: each target's broker clock − collector clock is always estimated from
    the agents' item timestamps and kept in collector_health.clock_skew_s. With `correct: true`
    a target's observations are moved onto its broker's clock when the estimate is at least
    `threshold` seconds: right when several collectors with unsynchronized clocks share one
    lakehouse and the brokers keep time; wrong for one collector scraping brokers whose clocks
    differ (one collector is one clock: leave it false)."""

    correct: bool = False
    threshold: float = Field(default=1.0, gt=0)


class AnalysisSettings(_Strict):
    """Top-level `analysis:` section: thresholds of the stuck-message, lag, risk, cause and incident findings."""

    stuck: StuckSettings = Field(default_factory=StuckSettings)
    lag: LagSettings = Field(default_factory=LagSettings)
    risk: RiskSettings = Field(default_factory=RiskSettings)
    causes: CauseSettings = Field(default_factory=CauseSettings)
    incidents: IncidentSettings = Field(default_factory=IncidentSettings)
    clock_skew: ClockSkewSettings = Field(default_factory=ClockSkewSettings)


class Config(_Strict):
    lakehouse: str = "./lakehouse"
    scrape_interval: float = 5.0
    flush_interval: float = 2.0  # how often collected rows are committed to bronze
    targets: list[Target] = Field(default_factory=list)
    gc: GcSettings = Field(default_factory=GcSettings)
    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)  # dashboards/settings.py
    service: ServiceSettings = Field(default_factory=ServiceSettings)  # brokerscope run (brokerscope/service.py)
    source_path: Path | None = Field(default=None, exclude=True)

    @field_validator("scrape_interval", "flush_interval", mode="before")
    @classmethod
    def _dur(cls, v: object) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _unique_names(self) -> "Config":
        seen: set[str] = set()
        for t in self.targets:
            if t.name in seen:
                raise ValueError(f"target name {t.name!r} is used twice; names must be unique")
            seen.add(t.name)
        return self

    def target(self, name: str) -> Target:
        for t in self.targets:
            if t.name == name:
                return t
        raise ConfigError(f"no target named {name!r}; configured: {', '.join(t.name for t in self.targets)}")

    def _here(self, path: str | Path) -> Path:
        """A path from the file, relative to the config file's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() or self.source_path is None else self.source_path.parent / p

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


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


_HINTS = {
    "extra_forbidden": "unknown key; check the spelling (allowed keys are listed in README.md, 'Configuration')",
    "missing": "required key is missing",
    "literal_error": "allowed values: " + ", ".join(KINDS),
}


def config_from_dict(data: object, source: str = "<config>") -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the file must be a YAML mapping with keys lakehouse, scrape_interval, targets")
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
