"""The same jobs on a real Spark standalone cluster (master + 2 workers from pyspark's own
`spark-class`, on loopback) give the same silver and gold as local mode: both on native Delta (the default; tests/test_delta_parity.py compares it with the bridge)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.spark_cluster import standalone_cluster
from tests.test_incremental import snapshot

pytestmark = pytest.mark.slow

FIX = Path(__file__).parent / "fixtures"


def drill_lakehouse(root: Path) -> Path:
    """The drill fixture replayed into bronze under `root`; returns its config file."""
    data = yaml.safe_load((FIX / "drill_kill_master.yaml").read_text())
    data["lakehouse"] = str(root / "lh")
    path = root / "brokerscope.yaml"
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    replay(config_from_dict(data), FIX / "drill_kill_master.jsonl.gz")
    return path


# the spine job, as `brokerscope analyze --full` runs it, in a driver of its own
RUN_SPINE = """
import sys
from analysis.params import spine_params
from settings import load_config
from analysis.spine import run_spine
from lakehouse.spark import SparkLakehouse, spark_session
from lakehouse.store import Lakehouse
cfg = load_config(sys.argv[1])
run_spine(SparkLakehouse(spark_session(), Lakehouse(cfg.lakehouse_root())), spine_params(cfg), full=True)
"""


def test_cluster_gives_the_same_gold_as_local_mode(analysed_kill_master, tmp_path):
    # local mode: the drill analysed by the tests' local session, once for the session (tests/conftest.py);
    # on a fresh lakehouse every job takes its full path, the spine's as `run_spine(full=True)` here
    remote = drill_lakehouse(tmp_path / "cluster")
    with standalone_cluster(tmp_path / "spark") as (url, env):
        run = subprocess.run([sys.executable, "-c", RUN_SPINE, str(remote)], env=env | {"BROKERSCOPE_DELTA": "native"},
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stderr[-3000:]
    assert list((tmp_path / "spark").glob("worker*/app-*/*")), "no executor ran on the workers"
    assert snapshot(Lakehouse(tmp_path / "cluster" / "lh")) == snapshot(Lakehouse(analysed_kill_master.root))
    # the cluster ran native Delta (delta-spark's jars shipped to the executors through spark.jars)
    engines = {h.get("engineInfo", "") for h in Lakehouse(tmp_path / "cluster" / "lh").history("role_intervals")}
    assert engines and all("Delta-Lake/" in e for e in engines), engines
