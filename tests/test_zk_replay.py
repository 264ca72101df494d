"""The ZooKeeper job on the recorded drill (tests/fixtures/zookeeper): replay → analyze → findings.

The recording was made once by the real collector against the real lab ensemble
(tests/fixtures/zookeeper/make_captures.py); the Artemis brokers in it are modeled (no Artemis runs
here). The same checks run live in tests/test_zk_live.py.
"""

import json
from pathlib import Path

import pytest

from analysis.params import zookeeper_params
from analysis.zookeeper import run_zookeeper
from collectors.replay import replay
from lakehouse.spark import SparkLakehouse
from tests import recordings
from tests.fixtures.zookeeper.checks import check_all
from tests.fixtures.zookeeper.drill import gc_finding

FIX = Path(__file__).parent / "fixtures" / "zookeeper"
TRUTH = json.loads((FIX / "drill.truth.json").read_text())


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, spark):
    drill = recordings.replayed(FIX / "drill.yaml", FIX / "drill.jsonl.gz", tmp_path_factory.mktemp("zk-replay") / "lh", spark,
                     # what P3 would have found in art-d's GC log
                     before_analysis=lambda lh: lh.overwrite("gc_findings", [gc_finding(TRUTH)]))
    return drill.cfg, drill.lh, drill.result, drill.counts


def test_replay_lands_every_zookeeper_exchange_in_bronze(replayed):
    cfg, lh, res, _ = replayed
    assert res.zk_envelopes == res.zk_new_rows == lh.count("bronze_zk") > 0
    assert res.envelopes == res.new_rows > 0  # the modeled Artemis exchanges
    sources = {r["source"] for r in lh.read("bronze_zk", columns=["source"]).to_pylist()}
    assert sources == {"zk.4lw", "zk.admin", "zk.znode"}
    assert replay(cfg, FIX / "drill.jsonl.gz").zk_new_rows == 0  # same keys: nothing new


def test_recorded_drill_yields_every_finding(replayed):
    _, lh, _, _ = replayed
    measured = check_all(lh, TRUTH)
    assert measured["detected_after_s"] <= TRUTH["interval"] + 0.1


def test_rerunning_the_job_is_idempotent(replayed, spark):
    cfg, lh, _, counts = replayed
    before = {t: sorted(map(str, lh.read(t).to_pylist())) for t in ("zk_quorum", "zk_elections", "zk_findings")}
    again = run_zookeeper(SparkLakehouse(spark, lh), zookeeper_params(cfg))
    assert again == {k: v for k, v in counts.items() if k in again}
    assert {t: sorted(map(str, lh.read(t).to_pylist())) for t in before} == before
