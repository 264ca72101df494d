"""The kill-master drill end to end: live collection of a real ActiveMQ failover, scored against its
own ground truth (brokerscope.drills.kill_master), then replay of its own recording into a fresh
lakehouse must give the same gold rows."""

import json

import pytest

from analysis.runner import analyze
from brokerscope.drills import kill_master
from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import load_config
from tests.drill_checks import assert_passed
from tests.test_spine import gold

pytestmark = [pytest.mark.slow, pytest.mark.lab, pytest.mark.drill]


def test_kill_master_live_then_replay_gives_same_gold(tmp_path, spark):
    cfg_path, truth = kill_master.run(tmp_path / "drill", interval=0.5)
    assert json.loads((tmp_path / "drill" / "ground_truth.json").read_text())["killed_pid"] == truth["killed_pid"]
    cfg = load_config(cfg_path)
    analyze(cfg, spark=spark)
    card = assert_passed(kill_master.score(Lakehouse(cfg.lakehouse_root()), truth))
    print("\n" + card.render())
    live = gold(Lakehouse(cfg.lakehouse_root()))
    lh = Lakehouse(cfg.lakehouse_root())
    masters = [r for r in lh.read("broker_state").to_pylist() if r["active"]]
    kahadb = tmp_path / "drill" / "lab" / "shared" / "kahadb"
    assert {r["store"] for r in masters} == {f"KahaDBPersistenceAdapter[{kahadb},Index:{kahadb}]"}
    assert {r["health"] for r in masters} == {"Good"}
    assert lh.read("ha_group_checks").num_rows == 0  # one shared store: a correctly configured pair

    fresh = cfg.model_copy(update={"lakehouse": str(tmp_path / "replayed")})
    res = replay(fresh, tmp_path / "drill" / "recording.jsonl.gz")
    assert res.new_rows == Lakehouse(cfg.lakehouse_root()).count("bronze_jolokia")
    analyze(fresh, spark=spark)
    assert gold(Lakehouse(fresh.lakehouse_root())) == live
