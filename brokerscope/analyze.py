"""`brokerscope analyze`: run the Spark jobs over the lakehouse (thin runner)."""

from __future__ import annotations

from typing import Callable

from brokerscope.config import Config
from lakehouse.jobs.lag import run_lag
from lakehouse.jobs.spine import run_spine
from lakehouse.jobs.stuck import run_stuck
from lakehouse.spark import SparkLakehouse, spark_session
from lakehouse.store import Lakehouse


def target_map(cfg: Config) -> dict[str, tuple[str, str | None]]:
    return {t.name: (t.kind, t.group) for t in cfg.targets}


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
    counts.update(run_spine(slh, target_map(cfg), progress=say, full=full))
    counts.update(run_stuck(slh, cfg.analysis.stuck, progress=say))
    counts.update(run_lag(slh, cfg.analysis.lag, progress=say))
    if any(t.kind == "zookeeper" for t in cfg.targets) or slh.lakehouse.exists("bronze_zk"):
        from lakehouse.jobs.zookeeper import params_from_config, run_zookeeper

        counts.update(run_zookeeper(slh, params_from_config(cfg), progress=say))
    return counts
