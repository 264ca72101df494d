"""`brokerscope analyze`: run the Spark jobs over the lakehouse (thin runner)."""

from __future__ import annotations

from typing import Callable

from brokerscope.config import Config
from lakehouse.jobs.spine import run_spine
from lakehouse.spark import SparkLakehouse, spark_session
from lakehouse.store import Lakehouse


def target_map(cfg: Config) -> dict[str, tuple[str, str | None]]:
    return {t.name: (t.kind, t.group) for t in cfg.targets}


def analyze(cfg: Config, mode: str = "auto", progress: Callable[[str], None] | None = None, spark=None) -> dict[str, int]:
    say = progress or (lambda m: None)
    say("starting Spark (local)")
    spark = spark or spark_session()
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()), mode=mode)
    say(f"Delta access: {slh.mode}")
    return run_spine(slh, target_map(cfg), progress=say)
