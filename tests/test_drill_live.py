"""The real drill end to end: live collection of a real ActiveMQ failover, then replay of its own
recording into a fresh lakehouse must give the same gold rows."""

import json

import pytest

from brokerscope.analyze import analyze
from brokerscope.config import load_config
from brokerscope.demo import run_drill
from collectors.replay import replay
from lakehouse.store import Lakehouse
from tests.drill_checks import check_kill_master
from tests.test_spine import gold

pytestmark = pytest.mark.slow


def test_kill_master_live_then_replay_gives_same_gold(tmp_path, spark):
    cfg_path, truth = run_drill(tmp_path / "drill", scrape_interval=0.5)
    assert json.loads((tmp_path / "drill" / "ground_truth.json").read_text())["killed_pid"] == truth["killed_pid"]
    cfg = load_config(cfg_path)
    analyze(cfg, spark=spark)
    live = gold(Lakehouse(cfg.lakehouse_root()))
    check_kill_master(live["failover_events"], live["role_intervals"], live["split_brain_windows"], truth)
    lh = Lakehouse(cfg.lakehouse_root())
    masters = [r for r in lh.read("broker_state").to_pylist() if r["active"]]
    assert {r["store"] for r in masters} == {f"KahaDBPersistenceAdapter[{tmp_path / 'drill' / 'lab' / 'shared' / 'kahadb'},Index:{tmp_path / 'drill' / 'lab' / 'shared' / 'kahadb'}]"}
    assert {r["health"] for r in masters} == {"Good"}
    assert lh.read("ha_group_checks").num_rows == 0  # one shared store: a correctly configured pair

    fresh = cfg.model_copy(update={"lakehouse": str(tmp_path / "replayed")})
    res = replay(fresh, tmp_path / "drill" / "recording.jsonl.gz")
    assert res.new_rows == Lakehouse(cfg.lakehouse_root()).count("bronze_jolokia")
    analyze(fresh, spark=spark)
    assert gold(Lakehouse(fresh.lakehouse_root())) == live
