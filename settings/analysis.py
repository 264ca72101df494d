"""The top-level `analysis:` section: thresholds of the stuck-message, lag, risk, cause and incident
findings, and clock-skew correction (analysis/params.py turns it into each job's parameters)."""

from __future__ import annotations

from pydantic import Field, field_validator

from settings.base import Duration, Strict, parse_duration


class StuckSettings(Strict):
    """`analysis.stuck`: when messages count as stuck (analysis/stuck.py)."""

    threshold: Duration = 60.0  # held with no consumer and no delivery for at least this long
    forward_delays: dict[str, float] = Field(default_factory=dict)  # logical destination → its ForwardDelay (replaces threshold)

    @field_validator("forward_delays", mode="before")
    @classmethod
    def _delays(cls, v: object) -> object:
        return {k: parse_duration(d) for k, d in v.items()} if isinstance(v, dict) else v


class LagSettings(Strict):
    """`analysis.lag`: replication-lag thresholds and Burrow/lag-in-time knobs (analysis/lag.py)."""

    lag_threshold: Duration = 60.0  # replication lag in time above this is a finding
    follower_lag_messages: float = Field(default=1000, ge=0)  # Kafka follower MaxLag above this is a finding
    replica_sync_grace: Duration = 60.0  # Artemis live not in sync for longer than this (never one sample)
    window: int = Field(default=10, ge=2)  # Burrow: observations per evaluation window ("intervals")
    min_complete: float = Field(default=0.5, ge=0, le=1)  # Burrow minimum-complete
    allowed_lag: float = Field(default=0, ge=0)  # Burrow allowed-lag (messages)
    lookup_points: int = Field(default=60, ge=2)  # Kafka Lag Exporter lookup-table size
    max_extrapolation: float = Field(default=1.0, ge=0)  # extrapolate at most this × the table's span


class RiskSettings(Strict):
    """`analysis.risk`: when an HA risk state is a finding (analysis/risk.py)."""

    unprotected_grace: Duration = 60.0  # a live without a standby backup for longer than this (never one sample)
    stale_backup_grace: Duration = 60.0  # a backup behind its live's activation sequence for longer than this


class CauseSettings(Strict):
    """`analysis.causes`: how far before an HA event a GC pause / ZooKeeper finding may have begun
    to count as its cause (analysis/causes.py): max(scrapes × scrape_interval, pause + slack)."""

    scrapes: float = Field(default=2.0, gt=0)
    slack: Duration = 30.0


class IncidentSettings(Strict):
    """`analysis.incidents`: findings of one cluster closer than `gap` form one incident."""

    gap: Duration = 300.0


class ClockSkewSettings(Strict):
    """`analysis.clock_skew`: each target's broker clock − collector clock is always estimated from
    the agents' item timestamps and kept in collector_health.clock_skew_s. With `correct: true`
    a target's observations are moved onto its broker's clock when the estimate is at least
    `threshold` seconds: right when several collectors with unsynchronized clocks share one
    lakehouse and the brokers keep time; wrong for one collector scraping brokers whose clocks
    differ (one collector is one clock: leave it false)."""

    correct: bool = False
    threshold: float = Field(default=1.0, gt=0)


class AnalysisSettings(Strict):
    """Top-level `analysis:` section: thresholds of the stuck-message, lag, risk, cause and incident findings."""

    stuck: StuckSettings = Field(default_factory=StuckSettings)
    lag: LagSettings = Field(default_factory=LagSettings)
    risk: RiskSettings = Field(default_factory=RiskSettings)
    causes: CauseSettings = Field(default_factory=CauseSettings)
    incidents: IncidentSettings = Field(default_factory=IncidentSettings)
    clock_skew: ClockSkewSettings = Field(default_factory=ClockSkewSettings)
