"""Every job's parameters, built in one place from the settings: the jobs never read `Config`.

`analysis_params(cfg)` is the one translation from the configuration's language (sections,
durations, per-target overrides) into what each job needs; the runner, the CLI and the tests
build a job's parameters through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.causes import CauseParams
from analysis.client_shifts import ShiftParams
from analysis.gc import GcParams, TargetRules
from analysis.incidents import IncidentParams
from analysis.lag import LagParams
from analysis.readiness import ReadinessParams
from analysis.risk import RiskParams
from analysis.spine import SpineParams
from analysis.stuck import StuckParams
from analysis.zookeeper import ZkParams
from collectors.gc.analysis import Thresholds
from collectors.zookeeper import ensemble_of
from settings import Config


@dataclass(frozen=True)
class AnalysisParams:
    spine: SpineParams
    gc: GcParams
    stuck: StuckParams
    lag: LagParams
    zookeeper: ZkParams
    readiness: ReadinessParams
    risk: RiskParams
    causes: CauseParams
    shifts: ShiftParams
    incidents: IncidentParams
    has_zookeeper_targets: bool


def spine_params(cfg: Config) -> SpineParams:
    skew = cfg.analysis.clock_skew
    return SpineParams(targets={t.name: (t.kind, t.group) for t in cfg.targets},
                       skew_threshold=skew.threshold if skew.correct else math.inf, hole_us=cfg.hole_tolerance() * 1e6)


def gc_params(cfg: Config) -> GcParams:
    return GcParams(rules={t.name: TargetRules(t.group, Thresholds(**cfg.gc_thresholds(t))) for t in cfg.targets})


def zookeeper_params(cfg: Config) -> ZkParams:
    zk = [t for t in cfg.targets if t.kind == "zookeeper"]
    members: dict[str, int] = {}
    for t in zk:
        members[ensemble_of(t)] = members.get(ensemble_of(t), 0) + 1
    return ZkParams(targets={t.name: (t.kind, t.group) for t in cfg.targets}, members=members,
                    options={t.name: t.zookeeper for t in zk if t.zookeeper}, scrape_interval_s=cfg.scrape_interval,
                    hole_s=cfg.hole_tolerance(),
                    session_s={t.name: cfg.gc_thresholds(t)["zk_session_ms"] / 1000 for t in cfg.targets
                               if t.kind == "artemis"})


def risk_params(cfg: Config) -> RiskParams:
    r = cfg.analysis.risk
    return RiskParams(
        unprotected_grace_s=r.unprotected_grace, stale_backup_grace_s=r.stale_backup_grace,
        scrape_interval_s=cfg.scrape_interval,
        ha={t.name: t.ha.model_dump(exclude_none=True) for t in cfg.targets if t.ha},
        timeouts_ms={t.name: {**{k: cfg.gc_thresholds(t)[k] for k in ("connection_ttl_ms", "zk_session_ms")},
                              "assumed": cfg.gc_threshold_defaults(t)} for t in cfg.targets},
        hole_s=cfg.hole_tolerance(),
    )


def stuck_params(cfg: Config) -> StuckParams:
    return StuckParams(**cfg.analysis.stuck.model_dump(), hole_s=cfg.hole_tolerance())


def lag_params(cfg: Config) -> LagParams:
    fr = cfg.failover_readiness
    return LagParams(**cfg.analysis.lag.model_dump(), hole_s=cfg.hole_tolerance(), stale_after_s=fr.stale_after,
                     replications={r.name: r for r in fr.replications}, scrape_interval_s=cfg.scrape_interval)


def readiness_params(cfg: Config) -> ReadinessParams:
    fr = cfg.failover_readiness
    return ReadinessParams(replications={r.name: r for r in fr.replications}, stale_after_s=fr.stale_after,
                           scrape_interval_s=cfg.scrape_interval)


def cause_params(cfg: Config) -> CauseParams:
    c = cfg.analysis.causes
    return CauseParams(scrape_interval_s=cfg.scrape_interval, scrapes=c.scrapes, slack_s=c.slack)


def incident_params(cfg: Config) -> IncidentParams:
    return IncidentParams(gap_s=cfg.analysis.incidents.gap, kinds=tuple(sorted((t.name, t.kind) for t in cfg.targets)))


def analysis_params(cfg: Config) -> AnalysisParams:
    return AnalysisParams(
        spine=spine_params(cfg), gc=gc_params(cfg), stuck=stuck_params(cfg), lag=lag_params(cfg),
        zookeeper=zookeeper_params(cfg), readiness=readiness_params(cfg), risk=risk_params(cfg), causes=cause_params(cfg),
        shifts=ShiftParams(hole_s=cfg.hole_tolerance()), incidents=incident_params(cfg),
        has_zookeeper_targets=any(t.kind == "zookeeper" for t in cfg.targets),
    )
