"""`brokerscope analyze`: run the Spark jobs over the lakehouse (thin runner)."""

from __future__ import annotations

import math
from typing import Callable

from brokerscope.config import Config
from lakehouse.jobs import runs as runs_module
from lakehouse.jobs.lag import run_lag
from lakehouse.jobs.spine import run_spine
from lakehouse.jobs.stuck import run_stuck
from lakehouse.jobs.watermark import Watermark, fingerprint, read_watermark
from lakehouse.spark import SparkLakehouse, spark_session
from lakehouse.store import Lakehouse


def target_map(cfg: Config) -> dict[str, tuple[str, str | None]]:
    return {t.name: (t.kind, t.group) for t in cfg.targets}


def skew_threshold(cfg: Config) -> float:
    """From `analysis.clock_skew`: move observations at this skew, or never (estimate only)."""
    return cfg.analysis.clock_skew.threshold if cfg.analysis.clock_skew.correct else math.inf


def analyze(cfg: Config, mode: str = "auto", progress: Callable[[str], None] | None = None, spark=None,
            full: bool = False) -> dict[str, int]:
    """Run the jobs; incremental from their watermarks (only new bronze rows) unless `full`."""
    say = progress or (lambda m: None)
    say("starting Spark (local)")
    spark = spark or spark_session()
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()), mode=mode)
    say(f"Delta access: {slh.mode}")
    counts: dict[str, int] = {}
    if slh.lakehouse.exists("bronze_gc_lines") or slh.lakehouse.exists("gc_events"):
        from lakehouse.jobs.gc import run_gc

        # GC first: the ZooKeeper job links lost sessions and elections to gc_findings
        counts.update(run_gc(slh, cfg, full=full, progress=say))
    counts.update(run_spine(slh, target_map(cfg), progress=say, full=full, skew_threshold=skew_threshold(cfg)))
    counts.update(run_stuck(slh, cfg.analysis.stuck, progress=say, full=full))
    counts.update(run_lag(slh, cfg.analysis.lag, progress=say, full=full))
    if any(t.kind == "zookeeper" for t in cfg.targets) or slh.lakehouse.exists("bronze_zk"):
        from lakehouse.jobs.zookeeper import params_from_config, run_zookeeper

        counts.update(run_zookeeper(slh, params_from_config(cfg), progress=say))
    counts.update(run_findings(slh, cfg, say, full=full))
    return counts


def run_findings(slh, cfg: Config, say: Callable[[str], None], full: bool = False) -> dict[str, int]:
    """The gold-on-gold jobs, in order: risk states, causes (GC and ZooKeeper findings onto
    failovers and split brain), incidents (everything, causes included). Each recomputes its tables
    from the current versions of its inputs, and not at all when none of them (nor the config, nor
    its code) changed since its last run (`full`: always): incremental and full runs agree."""
    from lakehouse.jobs import causes, incidents, risk

    kinds = {t.name: t.kind for t in cfg.targets}
    risk_params, cause_params = risk.params_from_config(cfg), causes.params_from_config(cfg)
    jobs = (
        ("risk", risk, ("risk_findings",), ("broker_state", "role_intervals", "split_brain_windows", "failover_events"),
         risk_params, lambda info: risk.run_risk(slh, risk_params, say, info)),
        ("causes", causes, ("finding_causes",), ("failover_events", "split_brain_windows", "gc_findings", "zk_findings",
                                                 "zk_coordination", "broker_state"),
         cause_params, lambda info: causes.run_causes(slh, cause_params, say, info)),
        ("incidents", incidents, ("incidents", "incident_evidence"), incidents.SOURCE_TABLES,
         (cfg.analysis.incidents.gap, sorted(kinds.items())),
         lambda info: incidents.run_incidents(slh, cfg.analysis.incidents.gap, kinds, say, info)),
    )
    counts: dict[str, int] = {}
    for job, module, outputs, inputs, params, run in jobs:
        if not any(slh.lakehouse.exists(t) for t in inputs):
            continue  # nothing analysed yet
        versions = [slh.lakehouse.version(t) for t in inputs]
        mark = Watermark(job, -1, fingerprint(job, repr(params), versions, sources=[module.__file__, runs_module.__file__]))
        if not full and read_watermark(slh.lakehouse, job, outputs) == mark:
            say(f"gold {', '.join(outputs)}: inputs unchanged since the last run")
            counts.update({t: slh.lakehouse.count(t) for t in outputs})
        else:
            counts.update(run(mark.commit_info()))
    return counts
