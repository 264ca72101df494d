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
