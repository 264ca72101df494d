"""The `dashboard:` section of the config: where `brokerscope dashboard` listens and who may look.

Safe by default: it binds 127.0.0.1 and, without auth, refuses any other address. Secrets never
live in the file: the basic-auth password comes from `password_env` or `password_file`.

```yaml
dashboard:
  host: 127.0.0.1        # 0.0.0.0 only together with auth
  port: 8050
  auth:
    mode: basic          # none | basic | proxy
    username: sre
    password_env: BROKERSCOPE_DASHBOARD_PASSWORD   # or password_file: /run/secrets/dashboard
    # mode: proxy → a trusted reverse proxy authenticates and sets this header:
    # proxy_header: X-Forwarded-User
    # trusted_proxies: [127.0.0.1]
  max_points: 1000       # per series: longer time ranges are aggregated server-side into buckets
  allowed_hosts: []      # Host headers served; empty: the bind address (loopback: also localhost, ::1)
  overview_refresh: 10s  # the overview re-reads the lakehouse this often
```

The `Host` check stops DNS rebinding: a web page on another site whose name re-resolves to
127.0.0.1 would otherwise read an unauthenticated loopback dashboard from the user's browser.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from settings.base import Duration, EnvName, Strict

LOOPBACK_NAMES = ("localhost",)
AUTH_MODES = ("none", "basic", "proxy")


class DashboardAuth(Strict):
    """Who may open the dashboard: nobody checks (`none`, loopback only), HTTP basic auth, or a
    trusted reverse proxy that authenticates and names the user in a header."""

    mode: str = "none"  # none | basic | proxy (a str, not a Literal: the config's error hint for literals names broker kinds)
    username: str = "brokerscope"
    password_env: EnvName | None = None
    password_file: Path | None = None
    proxy_header: str = "X-Forwarded-User"
    trusted_proxies: list[str] = Field(default_factory=lambda: ["127.0.0.1", "::1"])

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        if v not in AUTH_MODES:
            raise ValueError(f"{v!r} is not an auth mode; use one of: {', '.join(AUTH_MODES)}")
        return v

    @model_validator(mode="after")
    def _complete(self) -> "DashboardAuth":
        if self.mode == "basic" and not (self.password_env or self.password_file):
            raise ValueError("auth mode basic needs `password_env` (a variable name) or `password_file` "
                             "(a path); the password itself never goes into the config")
        if self.mode == "basic" and self.password_env and self.password_file:
            raise ValueError("set either `password_env` or `password_file`, not both")
        if self.mode == "proxy" and not self.trusted_proxies:
            raise ValueError("auth mode proxy needs `trusted_proxies`: the addresses of the reverse proxy")
        for p in self.trusted_proxies:
            try:
                ipaddress.ip_network(p, strict=False)
            except ValueError:
                raise ValueError(f"trusted_proxies: {p!r} is not an IP address or network (e.g. 10.0.0.0/24)") from None
        return self

    def password(self, base: Path | None = None) -> str:
        """The basic-auth password from the environment or the file; a clear error if absent."""
        if self.password_env:
            value = os.environ.get(self.password_env)
            if not value:
                raise ValueError(f"dashboard.auth.password_env: the environment variable {self.password_env} "
                                 "is not set or empty; export it before starting the dashboard")
            return value
        path = self.password_file
        assert path is not None
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            value = path.read_text().strip()
        except OSError as e:
            raise ValueError(f"dashboard.auth.password_file: cannot read {path} ({e.strerror}); "
                             "create it with the password on one line") from None
        if not value:
            raise ValueError(f"dashboard.auth.password_file: {path} is empty; write the password into it")
        return value


class DashboardSettings(Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8050, ge=1, le=65535)
    auth: DashboardAuth = Field(default_factory=DashboardAuth)
    max_points: int = Field(default=1000, ge=50, le=100_000)
    allowed_hosts: list[str] = Field(default_factory=list)  # "*": any (behind a proxy that checks it)
    overview_refresh: Duration = 10.0  # seconds between the overview's re-reads (dcc.Interval)

    def hosts_for(self, bind: str) -> set[str] | None:
        """The Host names (no port, lower case) served when bound to `bind`; None: any."""
        if self.allowed_hosts:
            return None if "*" in self.allowed_hosts else {h.lower().strip("[]") for h in self.allowed_hosts}
        if bind in ("0.0.0.0", "::", ""):
            return None  # every interface: names unknown (auth is required there, see check_exposure)
        names = {bind.lower().strip("[]")}
        return names | {"127.0.0.1", "localhost", "::1"} if is_loopback(bind) else names


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: DashboardSettings, host: str) -> None:
    """Refuse to serve a non-loopback address without authentication."""
    if settings.auth.mode == "none" and not is_loopback(host):
        raise ValueError(
            f"refusing to listen on {host} without authentication: anyone who can reach it would see "
            "your brokers. Set `dashboard.auth.mode: basic` (with password_env or password_file) or "
            "`mode: proxy` behind an authenticating reverse proxy, or keep --host 127.0.0.1")
