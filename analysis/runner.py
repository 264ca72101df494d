"""`brokerscope analyze`: run the Spark jobs over the lakehouse (thin runner)."""

from __future__ import annotations

from typing import Callable

from analysis import causes, client_shifts, incidents, risk
from analysis import runs as runs_module
from analysis.gc import run_gc
from analysis.lag_increment import run_lag
from analysis.minutes import run_minutes
from analysis.params import AnalysisParams, analysis_params
from analysis.readiness import run_readiness
from analysis.spine import run_spine
from analysis.stuck import run_stuck
from analysis.watermark import Watermark, fingerprint, read_watermark
from analysis.zookeeper import run_zookeeper
from lakehouse.spark import SparkLakehouse, spark_session
from lakehouse.store import Lakehouse
from settings import Config


def analyze(cfg: Config, mode: str | None = None, progress: Callable[[str], None] | None = None, spark=None,
            full: bool = False, gold_on_gold: bool = True) -> dict[str, int]:
    """Run the jobs; incremental from their watermarks (only new bronze rows) unless `full`.

    ``gold_on_gold=False`` stops after the detections (roles, failovers, split brain, stuck
    messages, lag, ZooKeeper): no risk states, client shifts, causes or incidents — a later run
    with them catches up, as they recompute from their inputs."""
    say = progress or (lambda m: None)
    params = analysis_params(cfg)
    say("starting Spark (local)")
    spark = spark or spark_session()
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()), mode=mode)
    say(f"Delta access: {slh.mode}")
    counts: dict[str, int] = {}
    if slh.lakehouse.exists("bronze_gc_lines") or slh.lakehouse.exists("gc_events"):
        # GC first: the ZooKeeper job links lost sessions and elections to gc_findings
        counts.update(run_gc(slh, params.gc, full=full, progress=say))
    counts.update(run_spine(slh, params.spine, progress=say, full=full))
    if slh.lakehouse.exists("broker_state"):  # the dashboard's per-minute rollup of it
        counts.update(run_minutes(slh, progress=say, full=full))
    counts.update(run_stuck(slh, params.stuck, progress=say, full=full))
    if slh.lakehouse.exists("bronze_kafka"):
        # before lag: replication_findings carries the readiness findings
        counts.update(run_readiness(slh, params.readiness, progress=say, full=full))
    counts.update(run_lag(slh, params.lag, progress=say, full=full))
    if params.has_zookeeper_targets or slh.lakehouse.exists("bronze_zk"):
        counts.update(run_zookeeper(slh, params.zookeeper, progress=say))
    if gold_on_gold:
        counts.update(run_findings(slh, params, say, full=full))
    return counts


def run_findings(slh, params: AnalysisParams, say: Callable[[str], None], full: bool = False) -> dict[str, int]:
    """The gold-on-gold jobs, in order: risk states, the clients' shifts, causes (GC and ZooKeeper findings onto
    failovers and split brain), incidents (everything, causes included). Each recomputes its tables
    from the current versions of its inputs (risk: only the groups with new broker_state rows,
    analysis/risk.py), and not at all when none of them (nor the config, nor its code) changed since
    its last run (`full`: always): incremental and full runs agree."""
    jobs = (
        ("risk", risk, risk.OUTPUTS, risk.INPUTS, params.risk, lambda mark: risk.run_risk(slh, params.risk, say, mark, full=full)),
        ("client-shifts", client_shifts, ("client_shifts",), ("failover_events", "broker_state"),
         params.shifts, lambda info: client_shifts.run_client_shifts(slh, params.shifts, say, info, full=full)),
        ("causes", causes, ("finding_causes",), ("failover_events", "split_brain_windows", "gc_findings", "zk_findings",
                                                 "zk_coordination", "broker_state", "replication_findings"),
         params.causes, lambda info: causes.run_causes(slh, params.causes, say, info)),
        ("incidents", incidents, ("incidents", "incident_evidence"), incidents.SOURCE_TABLES,
         params.incidents, lambda info: incidents.run_incidents(slh, params.incidents, say, info)),
    )
    counts: dict[str, int] = {}
    for job, module, outputs, inputs, job_params, run in jobs:
        if not any(slh.lakehouse.exists(t) for t in inputs):
            continue  # nothing analysed yet
        versions = [slh.lakehouse.version(t) for t in inputs]
        mark = Watermark(job, -1, fingerprint(job, repr(job_params), versions, sources=[module.__file__, runs_module.__file__]))
        if module is risk:  # incremental over broker_state: its watermark holds the version it read
            mark = risk.risk_mark(slh, job_params)
        if not full and read_watermark(slh.lakehouse, job, outputs) == mark:
            say(f"gold {', '.join(outputs)}: inputs unchanged since the last run")
            counts.update({t: slh.lakehouse.count(t) for t in outputs})
        else:
            counts.update(run(mark) if module is risk else run(mark.commit_info()))
    return counts
