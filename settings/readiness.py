"""The top-level `failover_readiness:` section: which primary → DR replications (MirrorMaker 2) the
Kafka-protocol collector watches, how to reach both clusters, and when readiness is stale.

```yaml
failover_readiness:
  stale_after: 60s                  # a checkpoint older than this, for an older commit than the group's: stale
  replications:
    - name: orders-dr               # unique among targets and replications; names rows and files
      group: kafka-primary          # the cluster group its findings belong to (default: the name)
      source_alias: primary         # MirrorMaker 2's alias of the primary cluster
      target_alias: dr              # … and of the DR cluster (messages only)
      primary: {bootstrap: "10.0.0.1:9092,10.0.0.2:9092"}
      dr: {bootstrap: "10.1.0.1:9092", security_protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512,
           sasl_username: monitor, sasl_password_env: DR_KAFKA_PASSWORD, ssl_ca_file: /etc/pki/dr-ca.pem}
      groups: [orders-app]          # consumer groups to watch; `all` (the default): every group on the primary
      topics: [orders]              # topics whose cross-cluster lag (flow mirror-offsets) is measured besides
                                    # those the watched groups consume (all their partitions; default none)
      auto_offset_reset: earliest   # what the groups do without a translated offset: earliest | latest | unknown
```

Every key but `name`, `source_alias`, `primary.bootstrap` and `dr.bootstrap` is optional. Secrets
come from `*_env` / `*_file` (read at use time, never kept), as for targets.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Literal

from pydantic import Field, field_validator, model_validator

from settings.base import Duration, EnvName, Name, OneOf, Strict, resolve_secret

_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")
#: librdkafka keys that carry secrets: only through the *_env / *_file keys, never in the file
_SECRET_KEYS = re.compile(r"password|secret|sasl\.oauthbearer\.config|ssl\.key\.pem|ssl_key", re.I)


def check_bootstrap(value: str) -> str:
    parts = [p.strip() for p in str(value).split(",") if p.strip()]
    bad = [p for p in parts if not _HOST_PORT.match(p) or not 0 < int(_HOST_PORT.match(p).group(2)) < 65536]
    if not parts or bad:
        raise ValueError(f"{', '.join(bad) or 'nothing'} is not host:port; write the brokers' listeners as "
                         "host:port[,host:port…], e.g. 10.0.0.1:9092,10.0.0.2:9092")
    return ",".join(parts)


class KafkaCluster(Strict):
    """How to reach one cluster with the Kafka protocol (librdkafka settings)."""

    bootstrap: str
    security_protocol: OneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL") = "PLAINTEXT"
    sasl_mechanism: OneOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER") | None = None
    sasl_username: str | None = None
    sasl_password_env: EnvName | None = None
    sasl_password_file: Path | None = None
    ssl_ca_file: Path | None = None  # PEM of the CA that signed the brokers' certificates
    ssl_certificate_file: Path | None = None  # client certificate (mutual TLS)
    ssl_key_file: Path | None = None
    ssl_key_password_env: EnvName | None = None
    ssl_key_password_file: Path | None = None
    verify_hostname: bool = True  # ssl.endpoint.identification.algorithm https (false: none)
    client_config: dict[str, str | int | float | bool] = Field(default_factory=dict)  # other librdkafka settings

    @field_validator("bootstrap")
    @classmethod
    def _bootstrap(cls, v: str) -> str:
        return check_bootstrap(v)

    @field_validator("client_config")
    @classmethod
    def _no_secrets(cls, v: dict) -> dict:
        secret = sorted(k for k in v if _SECRET_KEYS.search(k))
        if secret:
            raise ValueError(f"{', '.join(secret)}: secrets never go into the file; use sasl_password_env / "
                             "sasl_password_file or ssl_key_password_env / ssl_key_password_file")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "KafkaCluster":
        sasl = self.security_protocol.startswith("SASL")
        if self.sasl_password_env and self.sasl_password_file:
            raise ValueError("set only one of sasl_password_env and sasl_password_file")
        if self.ssl_key_password_env and self.ssl_key_password_file:
            raise ValueError("set only one of ssl_key_password_env and ssl_key_password_file")
        if not sasl and (self.sasl_mechanism or self.sasl_username):
            raise ValueError(f"sasl_* keys need security_protocol SASL_PLAINTEXT or SASL_SSL (not {self.security_protocol})")
        if sasl and self.sasl_mechanism in (None, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and not self.sasl_username:
            raise ValueError("SASL needs sasl_mechanism and sasl_username (and sasl_password_env or sasl_password_file)")
        if "SSL" not in self.security_protocol and (self.ssl_ca_file or self.ssl_certificate_file or self.ssl_key_file):
            raise ValueError(f"ssl_* files need security_protocol SSL or SASL_SSL (not {self.security_protocol})")
        return self

    def client_settings(self, owner: str, here: Callable[[Path], Path] = Path) -> dict[str, str | int | float | bool]:
        """The librdkafka settings, secrets resolved now (ConfigError naming `owner` and the key)."""
        out: dict[str, str | int | float | bool] = {**self.client_config, "bootstrap.servers": self.bootstrap,
                                                     "security.protocol": self.security_protocol.lower()}
        if self.sasl_mechanism:
            out["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            out["sasl.username"] = self.sasl_username
        password = resolve_secret(owner, "sasl_password", self.sasl_password_env,
                                  here(self.sasl_password_file) if self.sasl_password_file else None)
        if password is not None:
            out["sasl.password"] = password
        for key, path in (("ssl.ca.location", self.ssl_ca_file), ("ssl.certificate.location", self.ssl_certificate_file),
                          ("ssl.key.location", self.ssl_key_file)):
            if path:
                out[key] = str(here(path))
        key_password = resolve_secret(owner, "ssl_key_password", self.ssl_key_password_env,
                                      here(self.ssl_key_password_file) if self.ssl_key_password_file else None)
        if key_password is not None:
            out["ssl.key.password"] = key_password
        if "SSL" in self.security_protocol:
            out["ssl.endpoint.identification.algorithm"] = "https" if self.verify_hostname else "none"
        return out


class Replication(Strict):
    """One MirrorMaker 2 replication flow primary → DR whose consumer groups are watched."""

    name: Name("rows and files")
    group: str | None = None  # the cluster group its findings belong to (default: name)
    source_alias: Name("the MirrorMaker 2 alias of the primary")
    target_alias: str | None = None
    primary: KafkaCluster
    dr: KafkaCluster
    groups: list[str] | Literal["all"] = "all"
    topics: list[str] = Field(default_factory=list)  # primary topics measured besides the groups' (mirror-offsets)
    replication_policy: OneOf("default", "identity") = "default"  # MM2 replication.policy.class
    separator: str = Field(default=".", min_length=1)  # MM2 replication.policy.separator
    checkpoints_topic: str | None = None  # default: <source_alias>.checkpoints.internal on DR
    translation: OneOf("auto", "synced", "checkpoint") = "auto"  # which translated offset a failing-over group starts from
    auto_offset_reset: OneOf("earliest", "latest", "unknown") = "unknown"
    timeout: Duration = 5.0

    @field_validator("groups")
    @classmethod
    def _groups(cls, v):
        if isinstance(v, list) and (not v or any(not g for g in v)):
            raise ValueError("list consumer group names (or write `all`)")
        return v

    @field_validator("topics")
    @classmethod
    def _topics(cls, v):
        if any(not t for t in v):
            raise ValueError("topic names must not be empty")
        return v

    @property
    def cluster_group(self) -> str:
        return self.group or self.name

    @property
    def dr_alias(self) -> str:
        return self.target_alias or "dr"

    @property
    def checkpoints(self) -> str:
        return self.checkpoints_topic or f"{self.source_alias}{self.separator}checkpoints{self.separator}internal"

    def remote_topic(self, topic: str) -> str:
        """The name MirrorMaker 2 gives `topic` of the primary on DR."""
        return topic if self.replication_policy == "identity" else f"{self.source_alias}{self.separator}{topic}"

    def source_topic(self, remote: str) -> str | None:
        """The primary's topic a DR topic mirrors (None: not one of this replication's)."""
        if self.replication_policy == "identity":
            return remote
        prefix = f"{self.source_alias}{self.separator}"
        return remote[len(prefix):] if remote.startswith(prefix) and len(remote) > len(prefix) else None

    def watches(self, group: str) -> bool:
        return self.groups == "all" or group in self.groups


class FailoverReadiness(Strict):
    """`failover_readiness:` (module doc)."""

    stale_after: Duration = 60.0
    replications: list[Replication] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> "FailoverReadiness":
        names = [r.name for r in self.replications]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"replication name(s) {', '.join(twice)} used twice; names must be unique")
        return self
