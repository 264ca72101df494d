"""`targets:`: the brokers, ZooKeeper servers and GC logs one collector watches, with their options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from settings.base import Duration, EnvName, Name, Strict, check_http_url, resolve_secret
from settings.gc import GcThresholds

KINDS = ("activemq", "artemis", "kafka", "weblogic", "zookeeper")
ZK_PRESETS = ("artemis-lock-manager",)

_ZK_URL = re.compile(r"^(?:zk://)?(\[[^\]]+\]|[^/:\s\[\]]+)(?::(\d+))?/?$")


class ZkWatch(Strict):
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


class ZkOptions(Strict):
    """`zookeeper:` options of a `kind: zookeeper` target (one ZooKeeper server)."""

    admin_url: str | None = None  # AdminServer commands URL; default http://<host>:8080/commands
    watch: list[ZkWatch] = Field(default_factory=list)  # coordination state read through the ensemble
    latency_threshold: Duration = 0.1  # mean request latency over a scrape interval above this = spike
    outstanding_threshold: int = Field(default=10, ge=1)  # queued requests at or above this = spike
    claim_grace: Duration = 10.0  # a negative (claimed) activation sequence older than this lingers

    @field_validator("admin_url")
    @classmethod
    def _admin_ok(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("must be an http:// URL of the AdminServer commands, e.g. http://10.0.0.7:8080/commands")
        return v.rstrip("/") if v else v


class HaSettings(Strict):
    """Optional per-target `ha:` facts from the broker's own configuration, where JMX does not
    report them. They decide risk findings and the advice on failover durations
    (analysis/risk.py); unset = unknown (no finding that needs it). connection-ttl and
    ZooKeeper session-ms are set once, per target under `gc:` (defaults 60 s / 18 s)."""

    check_for_live_server: bool | None = None  # Artemis primary `check-for-live-server`
    shutdown_on_master_failure: bool | None = None  # ActiveMQ pure master/slave `shutdownOnMasterFailure`
    shutdown_on_slave_failure: bool | None = None  # ActiveMQ pure master/slave `shutdownOnSlaveFailure`
    lock_acquire_sleep_ms: int | None = Field(default=None, gt=0)  # ActiveMQ locker `lockAcquireSleepInterval` (10 000 ms default)
    lease_duration_ms: int | None = Field(default=None, gt=0)  # ActiveMQ lease-database-locker lease (its lockAcquireSleepInterval)
    quorum_vote: bool | None = None  # Artemis replication with vote-based quorum (unset: from the reported HAPolicy)


class Target(Strict):
    name: Name("files and rows")
    kind: Literal["activemq", "artemis", "kafka", "weblogic", "zookeeper"]
    url: str
    group: str | None = None
    username: str | None = None
    password_env: EnvName | None = None
    password_file: Path | None = None
    origin: str | None = None  # Origin header; defaults to the URL's scheme://host
    timeout: Duration = 5.0
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

    @field_validator("url")
    @classmethod
    def _url_ok(cls, v: str, info: ValidationInfo) -> str:
        if info.data.get("kind") == "zookeeper":  # a ZooKeeper server: its client port (4lw, znodes)
            m = _ZK_URL.match(v.strip())
            if not m:
                raise ValueError("a ZooKeeper server is host:port or zk://host:port, e.g. zk://10.0.0.7:2181")
            return f"zk://{m.group(1)}:{m.group(2) or 2181}"
        check_http_url(v, "http://127.0.0.1:8778/jolokia")
        if re.match(r"^https?://[^/\s]*@", v):
            # the URL lands in logs, bronze rows and error messages: it must hold no secret
            raise ValueError("must not contain credentials (user:password@); set `username:` and "
                             "password_env or password_file instead")
        return v.rstrip("/")

    @model_validator(mode="after")
    def _broker_name_ok(self) -> Target:
        """The value goes into the ObjectNames the collector reads: one that cannot match (or makes
        the bulk request malformed, failing every read of the target) is a config error, not a
        silent empty scrape."""
        v = self.broker_name
        if v == "*":
            return self
        if not v.strip() or any(ord(c) < 32 or ord(c) == 127 for c in v):
            raise ValueError("broker_name: empty or has control characters; use the name the broker's MBean "
                             "shows, or '*' (any)")
        if self.kind in ("kafka", "zookeeper"):
            raise ValueError(f"broker_name has no meaning for kind {self.kind}: remove it")
        if self.kind in ("activemq", "weblogic") and any(c in v for c in ',=:"\''):
            # ActiveMQ registers brokerName with , : ' " turned into _ and = into &amp;
            # (JMXSupport.encodeObjectNamePart); a WebLogic server name is a plain identifier
            raise ValueError(f"broker_name {v!r}: , = : ' \" cannot appear in {self.kind}'s MBean names "
                             "(ActiveMQ writes , : ' \" as _): copy the value as its Broker MBean shows it, "
                             "or use '*' (any)")
        return self

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
        return resolve_secret(f"target {self.name}", "password", self.password_env, self.password_file)

    @property
    def effective_origin(self) -> str:
        if self.origin:
            return self.origin
        m = re.match(r"^(https?://[^/]+)", self.url)
        return m.group(1) if m else self.url
