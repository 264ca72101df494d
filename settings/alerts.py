"""The `alerts:` section of the config: rules, grouping, timing and receivers.

```yaml
alerts:
  dashboard_url: https://brokerscope.example/dash   # links <dashboard_url>/incident/<incident_id>
  external_url: https://brokerscope.example         # the payload's externalURL
  group_by: [alertname, cluster]
  group_wait: 0s          # Alertmanager: 30s; 0 here because a fault must reach the webhook fast
  group_interval: 10s     # Alertmanager: 5m
  repeat_interval: 4h
  rules:                  # built-in pack: thresholds and switches
    failover_hold: 5m
    disabled: [FailoverHappened]
  threshold_rules:        # your own rules over silver/gold columns
    - name: DeepQueue
      table: destination_stats
      column: messages
      op: ">"
      threshold: 10000
      for: 1m
      labels: [group_name, instance, destination]
  receivers:
    - name: oncall
      type: webhook                        # webhook | pagerduty | alertmanager
      url: https://hooks.example/brokerscope
      bearer_token_env: ONCALL_TOKEN       # secrets from the environment or a file only
```

Secrets (bearer tokens, basic-auth passwords, the PagerDuty routing key) are never in the file:
`*_env` names an environment variable, `*_file` a file; they are resolved when sending.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
from pydantic import ConfigDict, Field, field_validator, model_validator

from lakehouse.tables import TABLES, contract
from settings.base import (
    ConfigError,
    Duration,
    DurationOrZero,
    EnvName,
    Name,
    OneOf,
    Strict,
    check_http_url,
    one_of,
    resolve_secret,
)

__all__ = [
    "AlertsConfig", "BuiltinRules", "ThresholdRule", "ReceiverConfig", "RetrySettings", "SecretError",
    "BUILTIN_ALERTNAMES", "OPS", "secret",
]

# The built-in rule pack (alerts/rules.py); `rules.disabled` takes these names.
BUILTIN_ALERTNAMES = (
    "SplitBrain", "NoActiveInstance", "FailoverHappened", "UnprotectedLive", "StaleBackup", "QuorumLost",
    "QuorumAtRisk", "StuckMessages", "ReplicationLag", "ReplicationProblem", "GcPauseOverHaThreshold",
    "CollectorCannotReachTarget", "HaGroupMisconfigured", "ClockSkew",
)
OPS = (">", ">=", "<", "<=", "==", "!=")
SEVERITIES = ("critical", "error", "warning", "info")
RECEIVER_TYPES = ("webhook", "pagerduty", "alertmanager")




class SecretError(ValueError):
    """A secret (token, password, routing key) could not be resolved; says where it was looked for."""






def secret(owner: str, what: str, env: str | None, file: Path | None) -> str | None:
    """A receiver's secret (`<what>_env` / `<what>_file`), read when sending; None when neither is set."""
    return resolve_secret(owner, what, env, file, error=SecretError, keep_spaces=False)


class BasicAuth(Strict):
    username: str = Field(min_length=1)
    password_env: EnvName | None = None
    password_file: Path | None = None

    @model_validator(mode="after")
    def _one(self) -> "BasicAuth":
        if bool(self.password_env) == bool(self.password_file):
            raise ValueError("set exactly one of password_env and password_file (never the password itself)")
        return self


class RetrySettings(Strict):
    """Per notification and tick: up to `attempts` tries, waiting `backoff`, ×2 each time, at most
    `max_backoff`. A notification that still fails is tried again at later ticks (its log entry
    was not written), with the same exponential spacing, until it gets through."""

    attempts: int = Field(default=3, ge=1, le=20)
    backoff: Duration = 0.2
    max_backoff: Duration = 30.0


class ReceiverConfig(Strict):
    """One receiver. `match`: only alerts whose labels have these values (a list: any of them)."""

    name: Name("rows in alert_notifications")
    type: OneOf(*RECEIVER_TYPES)  # webhook | pagerduty | alertmanager
    url: str | None = None  # pagerduty: default https://events.pagerduty.com/v2/enqueue
    match: dict[str, str | list[str]] = Field(default_factory=dict)
    send_resolved: bool = True
    max_alerts: int = Field(default=0, ge=0)  # webhook: 0 = all alerts in one payload
    timeout: Duration = 10.0
    verify_tls: bool = True
    ca_file: Path | None = None
    headers: dict[str, str] = Field(default_factory=dict)  # non-secret headers only
    bearer_token_env: EnvName | None = None
    bearer_token_file: Path | None = None
    basic_auth: BasicAuth | None = None
    routing_key_env: EnvName | None = None  # pagerduty
    routing_key_file: Path | None = None  # pagerduty
    # alertmanager: firing alerts are pushed with endsAt = now + push_ttl and pushed again every
    # repush_interval, so Alertmanager keeps them while we run and resolves them if we stop for good
    push_ttl: Duration = 300.0
    repush_interval: Duration = 60.0
    retry: RetrySettings = Field(default_factory=RetrySettings)

    @field_validator("url")
    @classmethod
    def _url_ok(cls, v: str | None) -> str | None:
        return v if v is None else check_http_url(v, "https://hooks.example/brokerscope")

    @field_validator("headers")
    @classmethod
    def _headers_ok(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if k.lower() in ("authorization", "proxy-authorization", "x-routing-key"):
                raise ValueError(f"header {k!r} carries a secret; use bearer_token_env/_file or basic_auth "
                                 "(secrets come from the environment or a file, never the config)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "ReceiverConfig":
        if self.type in ("webhook", "alertmanager") and not self.url:
            raise ValueError(f"a {self.type} receiver needs `url`")
        if self.bearer_token_env and self.bearer_token_file:
            raise ValueError("set only one of bearer_token_env and bearer_token_file")
        if (self.bearer_token_env or self.bearer_token_file) and self.basic_auth:
            raise ValueError("set either a bearer token or basic_auth, not both")
        if self.type == "pagerduty":
            if bool(self.routing_key_env) == bool(self.routing_key_file):
                raise ValueError("a pagerduty receiver needs exactly one of routing_key_env and routing_key_file "
                                 "(the routing key is a secret: never in the file)")
        elif self.routing_key_env or self.routing_key_file:
            raise ValueError("routing_key_env/_file belong to pagerduty receivers")
        if self.type == "alertmanager" and self.repush_interval >= self.push_ttl:
            raise ValueError("repush_interval must be shorter than push_ttl, or Alertmanager resolves "
                             "firing alerts between two pushes")
        return self

    @property
    def effective_url(self) -> str:
        if self.url:
            return self.url
        return "https://events.pagerduty.com/v2/enqueue"

    def matches(self, labels: dict[str, str]) -> bool:
        for k, want in self.match.items():
            have = labels.get(k, "")
            if isinstance(want, list):
                if have not in want:
                    return False
            elif have != want:
                return False
        return True


class BuiltinRules(Strict):
    """Thresholds and switches of the built-in rule pack (alerts/rules.py)."""

    disabled: list[str] = Field(default_factory=list)  # alertnames to switch off
    severity: dict[str, str] = Field(default_factory=dict)  # alertname → critical | error | warning | info
    failover_hold: Duration = 300.0  # FailoverHappened fires this long after the failover, then resolves
    event_hold: Duration = 300.0  # the same for other events: split-brain windows that ended, GC pauses
    finding_freshness: Duration = 300.0  # a finding without is_open counts as current while its end is this recent
    no_active_for: DurationOrZero = 0.0  # NoActiveInstance: no active instance for at least this long
    unreachable_for: Duration = 10.0  # CollectorCannotReachTarget: unanswered scrapes for at least this long
    replication_lag_s: float | None = None  # ReplicationLag only above this (s); unset: the finding's threshold
    stuck_min_messages: int = Field(default=1, ge=0)  # StuckMessages only with at least this many messages
    stuck_include_info: bool = False  # also stuck findings of severity info (dead-letter / expiry queues)
    gc_codes: list[str] = Field(default_factory=lambda: ["gc.pause-over-third-session", "gc.pause-over-connection-ttl"])
    lookback: Duration = 600.0  # how far back silver rows are read (collector health, threshold rules)
    clock_skew_s: float = Field(default=2.0, gt=0)  # ClockSkew: |broker clock − collector clock| at least this …
    clock_skew_for: Duration = 120.0  # … in every estimate for at least this long

    @field_validator("disabled")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        unknown = [n for n in v if n not in BUILTIN_ALERTNAMES]
        if unknown:
            raise ValueError(f"unknown built-in rule(s) {', '.join(unknown)}; the pack has: {', '.join(BUILTIN_ALERTNAMES)}")
        return v

    @field_validator("severity")
    @classmethod
    def _known_sev(cls, v: dict[str, str]) -> dict[str, str]:
        cls._known(list(v))
        for s in v.values():
            one_of(s, SEVERITIES)
        return v


class ThresholdRule(Strict):
    """A user rule: fires per distinct `labels` tuple while the latest row has `column op threshold`,
    for at least `for` (the trailing run of rows that hold)."""

    name: str = Field(min_length=1)
    table: str
    column: str
    op: OneOf(*OPS)  # > >= < <= == !=
    threshold: float | str | bool
    for_: DurationOrZero = Field(default=0.0, alias="for")
    labels: list[str] = Field(default_factory=list)  # columns whose values become labels
    severity: OneOf(*SEVERITIES) = "warning"  # critical | error | warning | info
    time_column: str | None = None  # default: ts, else end_ts, else start_ts
    summary: str | None = None  # may use {column} placeholders of the row and {value}, {threshold}
    runbook: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError("an alertname: letters, digits and _ (e.g. DeepQueue)")
        if v in BUILTIN_ALERTNAMES:
            raise ValueError(f"{v} is a built-in rule; pick another name")
        return v

    @model_validator(mode="after")
    def _against_contract(self) -> "ThresholdRule":
        c = TABLES.get(self.table)
        if c is None or c.layer not in ("silver", "gold"):
            known = ", ".join(sorted(n for n, t in TABLES.items() if t.layer in ("silver", "gold")))
            raise ValueError(f"table {self.table!r} is not a silver or gold table; use one of: {known}")
        cols = {col.name: col for col in c.columns}
        for what, name in [("column", self.column)] + [("labels", n) for n in self.labels]:
            if name not in cols:
                raise ValueError(f"{what}: {self.table} has no column {name!r}; its columns: {', '.join(cols)}")
        if self.time_column is not None and self.time_column not in cols:
            raise ValueError(f"time_column: {self.table} has no column {self.time_column!r}")
        if self.time_column is None and not any(n in cols for n in ("ts", "end_ts", "start_ts")):
            raise ValueError(f"{self.table} has no ts/end_ts/start_ts column; set time_column")
        t = cols[self.column].type
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
        if numeric and (isinstance(self.threshold, (str, bool))):
            raise ValueError(f"threshold: {self.column} is numeric ({t}); give a number")
        if not numeric and self.op not in ("==", "!="):
            raise ValueError(f"op: {self.column} is {t}, not a number; only == and != apply")
        return self

    @property
    def time_col(self) -> str:
        if self.time_column:
            return self.time_column
        names = contract(self.table).column_names
        return next(n for n in ("ts", "end_ts", "start_ts") if n in names)


class AlertsConfig(Strict):
    """Top-level `alerts:` section."""

    dashboard_url: str | None = None  # links <dashboard_url>/incident/<incident_id>
    external_url: str = "http://localhost"  # the payload's externalURL (where brokerscope is reached)
    group_by: list[str] = Field(default_factory=lambda: ["alertname", "cluster"])
    group_wait: DurationOrZero = 0.0
    group_interval: Duration = 10.0
    repeat_interval: Duration = 4 * 3600.0
    rules: BuiltinRules = Field(default_factory=BuiltinRules)
    threshold_rules: list[ThresholdRule] = Field(default_factory=list)
    receivers: list[ReceiverConfig] = Field(default_factory=list)

    @field_validator("dashboard_url", "external_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return v if v is None else check_http_url(v, "https://brokerscope.example").rstrip("/")

    @model_validator(mode="after")
    def _unique(self) -> "AlertsConfig":
        for what, names in (("receiver", [r.name for r in self.receivers]),
                            ("threshold rule", [r.name for r in self.threshold_rules])):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{what} name(s) {', '.join(dup)} used twice; names must be unique")
        return self

    def receiver(self, name: str) -> ReceiverConfig:
        for r in self.receivers:
            if r.name == name:
                return r
        raise ConfigError(f"no receiver named {name!r} under alerts.receivers; configured: "
                          f"{', '.join(r.name for r in self.receivers) or '(none)'}")
