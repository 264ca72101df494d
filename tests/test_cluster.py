"""The same jobs on a real Spark standalone cluster (master + 2 workers from pyspark's own
`spark-class`, on loopback) give the same silver and gold as local mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from brokerscope.analyze import analyze
from brokerscope.config import config_from_dict
from collectors.replay import replay
from lakehouse.store import Lakehouse
from tests.spark_cluster import standalone_cluster
from tests.test_incremental import snapshot

pytestmark = pytest.mark.slow

FIX = Path(__file__).parent / "fixtures"


def drill_lakehouse(root: Path) -> Path:
    """The drill fixture replayed into bronze under `root`; returns its config file."""
    data = yaml.safe_load((FIX / "drill_kill_master.yaml").read_text())
    data["lakehouse"] = str(root / "lh")
    path = root / "brokerscope.yaml"
    path.write_text(yaml.safe_dump(data))
    replay(config_from_dict(data), FIX / "drill_kill_master.jsonl.gz")
    return path


def test_cluster_gives_the_same_gold_as_local_mode(tmp_path, spark):
    local = drill_lakehouse(tmp_path / "local")
    analyze(config_from_dict(yaml.safe_load(local.read_text())), spark=spark, full=True)

    remote = drill_lakehouse(tmp_path / "cluster")
    with standalone_cluster(tmp_path / "spark") as (url, env):
        run = subprocess.run([sys.executable, "-m", "brokerscope", "analyze", "--config", str(remote), "--full"],
                             env=env, capture_output=True, text=True, timeout=240)
        assert run.returncode == 0, run.stderr[-3000:]
        apps = list((tmp_path / "spark").glob("worker*/app-*/*"))
    assert apps, "no executor ran on the workers"  # the job really ran on the cluster
    assert snapshot(Lakehouse(tmp_path / "cluster" / "lh")) == snapshot(Lakehouse(tmp_path / "local" / "lh"))
