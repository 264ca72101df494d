"""Fault drills: real faults on real brokers and ZooKeeper in the local lab, each writing its own
ground truth beside a recording, then analysed (Spark) and scored against that truth.

    brokerscope drill NAME [--workdir DIR] [--interval S]
    brokerscope drill all                      # every drill in turn; exit 1 if one misses the bar

Layout of a drill's workdir: ``brokerscope.yaml``, ``lakehouse/``, ``recording.jsonl.gz``,
``ground_truth.json``, ``report.json``, ``lab/`` (the processes' own files and logs).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

from brokerscope.drills.common import Scorecard, say, stop_leftovers
from lakehouse.store import Lakehouse
from settings import load_config

__all__ = ["DRILLS", "drill_module", "run_drill", "analyze_and_score"]

#: drill name → module (in the order `drill all` runs them)
DRILLS: dict[str, str] = {
    "kill-master": "brokerscope.drills.kill_master",
    "pause-master": "brokerscope.drills.pause_master",
    "lease-split-brain": "brokerscope.drills.lease_split_brain",
    "misconfigured-pair": "brokerscope.drills.misconfigured_pair",
    "zk-leader-loss": "brokerscope.drills.zk_loss",
    "zk-quorum-loss": "brokerscope.drills.zk_loss",
    "gc-pause": "brokerscope.drills.gc_pause",
    "artemis-kill": "brokerscope.drills.artemis_kill",
    "artemis-kill-zk": "brokerscope.drills.artemis_kill",
    "artemis-kill-classic": "brokerscope.drills.artemis_kill",
    "artemis-kill-vote": "brokerscope.drills.artemis_vote",
    "artemis-pause-zk": "brokerscope.drills.artemis_pause",
    "artemis-restart-zk": "brokerscope.drills.artemis_restart",
    "artemis-restart-split-brain": "brokerscope.drills.artemis_restart",
    "artemis-zk-quorum-loss": "brokerscope.drills.artemis_zk_quorum",
    "artemis-clients": "brokerscope.drills.artemis_clients",
    "artemis-link-cut-zk": "brokerscope.drills.artemis_link_cut",
    "artemis-link-cut": "brokerscope.drills.artemis_link_cut",
    "artemis-clients-core": "brokerscope.drills.artemis_clients",
    "artemis-clients-core-pause-zk": "brokerscope.drills.artemis_clients_pause",
    "artemis-stale-backup-zk": "brokerscope.drills.artemis_stale_backup",
    "artemis-gc-pause-zk": "brokerscope.drills.artemis_gc_pause",
    "kafka-broker-kill": "brokerscope.drills.kafka_kill",
    "kafka-controller-kill": "brokerscope.drills.kafka_kill",
    "kafka-mm2-restart": "brokerscope.drills.kafka_mm2",
    "kafka-mm2-slow-link": "brokerscope.drills.kafka_wan",
    "kafka-consumer-failover": "brokerscope.drills.kafka_failover",
    "kafka-consumer-rewind": "brokerscope.drills.kafka_rewind",
}


def drill_module(name: str) -> ModuleType:
    if name not in DRILLS:
        raise KeyError(f"unknown drill {name!r}; drills are: {', '.join(DRILLS)} (or all)")
    return importlib.import_module(DRILLS[name])


def analyze_and_score(name: str, cfg_path: Path, truth: dict, spark=None) -> Scorecard:
    """Spark over the drill's lakehouse, then its scorecard, written to ``report.json`` beside it."""
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    cfg = load_config(cfg_path)
    say("analysing: Spark jobs bronze → silver → gold")
    analyze(cfg, spark=spark, progress=lambda m: say(f"  {m}"))
    card = drill_module(name).score(Lakehouse(cfg.lakehouse_root()), truth)
    (Path(cfg_path).parent / "report.json").write_text(json.dumps(card.to_json(), indent=2, default=str) + "\n")
    return card


def run_drill(name: str, workdir: Path, interval: float = 0.5, spark=None) -> Scorecard:
    """One drill end to end: the fault (live collection, ground truth), the analysis, the score."""
    mod = drill_module(name)
    try:
        cfg_path, truth = mod.run(Path(workdir), interval, **({"variant": name} if hasattr(mod, "VARIANTS") else {}))
    finally:
        stop_leftovers()  # a drill that failed half-way must not leave its collector scraping
    return analyze_and_score(name, cfg_path, truth, spark=spark)
