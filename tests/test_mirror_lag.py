"""Cross-cluster lag from both clusters' log end offsets (flow mirror-offsets) on tiny inputs: kafka.*
envelopes → silver facts → replication_lag rows and findings; the collector's `topics` reads."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from analysis.lag import LagRules, instance_lag, series_findings
from analysis.mirror_lag import MIRROR_FLOW, mirror_observations
from collectors.kafka_offsets.collector import bronze_kafka_row
from collectors.kafka_offsets.parse import offset_facts
from settings import ConfigError, LagSettings, config_from_dict
from tests.test_readiness import T0, exchange, params, replication

RULES = LagSettings(window=4)


def logs_round(ts, primary_ends: dict[int, int] | None, dr_ends: dict[int, int] | None) -> list[dict]:
    """The two log_offsets exchanges of one round (None: that cluster did not answer)."""
    def logs(cluster, topic, ends):
        if ends is None:
            return exchange(ts, "kafka.log_offsets", cluster, "log_offsets", None,
                            f"orders-dr: {cluster} (127.0.0.1:9092) did not answer within 2 s: connection refused")
        return exchange(ts, "kafka.log_offsets", cluster, "log_offsets",
                        {"partitions": [[topic, p, 0, e] for p, e in ends.items()], "errors": {}})
    return [logs("primary", "orders", primary_ends), logs("dr", "primary.orders", dr_ends)]


def lag_rows(rounds: list[list[dict]], rep_params=None) -> pd.DataFrame:
    rep = (rep_params or params()).replications["orders-dr"]
    facts = pd.DataFrame([f for envs in rounds for env in envs
                          for f in offset_facts(bronze_kafka_row(env, "kafka-primary", "test"), "orders-dr", "kafka-primary")])
    obs, health = mirror_observations(facts, rep, 1.0)
    return instance_lag(obs, health, rules=LagRules.of(RULES))


def at(s: float):
    return T0 + timedelta(seconds=s)


def test_lag_in_messages_is_primary_end_minus_dr_end_and_time_is_interpolated_on_real_offsets():
    # the primary writes 10 messages a second; DR copies until t=3, then stands still
    rounds = [logs_round(at(t), {0: 10 * t}, {0: min(10 * t, 30) - (2 if t <= 3 else 0)}) for t in range(1, 9)]
    rows = lag_rows(rounds)
    assert set(rows["flow"]) == {MIRROR_FLOW} and set(rows["instance"]) == {"orders-dr"}
    assert set(rows["status_basis"]) == {"log-offsets"}
    assert rows["lag_messages"].tolist() == [2, 2, 2, 10, 20, 30, 40, 50]
    assert rows["position"].tolist() == [8, 18, 28, 30, 30, 30, 30, 30]
    # DR's end 30 was the primary's at t=3: at t=8 DR is 5 s behind (measured points, interpolated)
    last = rows.iloc[-1]
    assert last["lag_s_method"] == "interpolated" and last["lag_s"] == pytest.approx(5.0)
    assert rows.iloc[0]["lag_s_method"] == "insufficient-data"  # one point: no value, never NaN invented
    # DR's copy stood still with lag at every observation of the window: Burrow STALL on real positions
    assert rows["status"].iloc[-1] == "STALL"
    found = series_findings(rows, lag_threshold_s=4.0)
    # before the window held only a standing DR, the lag grew at every observation: WARN, then STALL
    assert set(found["code"]) == {"replication-lag", "consumer-warn", "consumer-stall"}
    stall = found[found["code"] == "consumer-stall"].iloc[0]
    assert "DR's copy did not grow" in stall["message"] and "MirrorMaker 2 is not copying" in stall["advice"]


def test_an_idle_topic_is_caught_up_not_stalled():
    rows = lag_rows([logs_round(at(t), {0: 500}, {0: 500}) for t in range(1, 9)])
    assert rows["lag_messages"].eq(0).all() and rows["lag_s"].eq(0).all()
    assert set(rows["lag_s_method"]) == {"caught-up"} and set(rows["status"]) == {"OK"}
    assert series_findings(rows, lag_threshold_s=1.0).empty


def test_dr_read_after_the_primary_never_makes_a_negative_lag():
    rows = lag_rows([logs_round(at(1), {0: 100}, {0: 103}), logs_round(at(2), {0: 110}, {0: 110})])
    assert rows["lag_messages"].tolist() == [0, 0] and (rows["lag_s"] == 0).all()


def test_a_round_a_cluster_did_not_answer_observes_nothing_and_invents_nothing():
    rounds = [logs_round(at(1), {0: 10}, {0: 10}), logs_round(at(2), {0: 20}, None), logs_round(at(3), None, {0: 30}),
              logs_round(at(4), {0: 40}, {0: 40})]
    rows = lag_rows(rounds)
    assert rows["observed"].tolist() == [True, False, False, True]
    assert rows["lag_s_method"].tolist()[1:3] == ["not-observed", "not-observed"]
    assert np.isnan(rows["lag_s"].iloc[1]) and rows["lag_messages"].iloc[1] == 0  # the last known, said as such


def test_a_partition_dr_does_not_hold_yet_is_not_observed():
    rows = lag_rows([logs_round(at(t), {0: 10 * t, 1: 5}, {0: 10 * t}) for t in range(1, 4)])
    assert set(rows["partition"]) == {0}


def test_the_spark_job_gives_the_pandas_rows_and_skips_replications_no_longer_configured(spark):
    from analysis.lag import LagParams
    from analysis.lag_increment import mirror_lag
    from lakehouse.tables import KAFKA_OFFSETS

    rounds = [logs_round(at(t), {0: 10 * t, 1: 7 * t}, {0: 10 * t - t, 1: 7 * t}) for t in range(1, 6)]
    facts = [f for envs in rounds for env in envs
             for name in ("orders-dr", "gone") for f in offset_facts(bronze_kafka_row(env, "g", "test"), name, "g")]
    frame = spark.createDataFrame(pd.DataFrame(facts)[list(KAFKA_OFFSETS.column_names)], KAFKA_OFFSETS.spark_schema())
    lag_params = LagParams(window=RULES.window, replications=params().replications, scrape_interval_s=1.0)
    got = mirror_lag(frame, lag_params).toPandas()
    want = lag_rows(rounds)
    assert set(got["instance"]) == {"orders-dr"} and len(got) == len(want) == 10
    key = ["partition", "ts"]
    assert (got.sort_values(key)["lag_messages"].tolist() == want.sort_values(key)["lag_messages"].tolist()
            == [1, 2, 3, 4, 5, 0, 0, 0, 0, 0])


def test_topics_must_be_names():
    with pytest.raises(ConfigError, match="topic names must not be empty"):
        config_from_dict({"failover_readiness": {"replications": [replication(topics=["orders", ""])]}})
    cfg = config_from_dict({"failover_readiness": {"replications": [replication(topics=["orders"])]}})
    assert cfg.failover_readiness.replications[0].topics == ["orders"]
