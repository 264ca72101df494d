"""The YAML configuration: lakehouse location, scrape interval and targets.

Validated with pydantic; every error names the key (e.g. `targets[1].url`) and what to do.
Secrets never live in the file: a password comes from `password_env` or `password_file`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
    def _url_ok(cls, v: str) -> str:
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:8778/jolokia")
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


class Config(_Strict):
    lakehouse: str = "./lakehouse"
    scrape_interval: float = 5.0
    flush_interval: float = 2.0  # how often collected rows are committed to bronze
    targets: list[Target] = Field(default_factory=list)
    gc: GcSettings = Field(default_factory=GcSettings)
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
