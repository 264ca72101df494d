"""Recordings of real Kafka 4.3.1 drills (brokerscope.drills.kafka_kill / kafka_mm2 / kafka_failover, made
by our collector against the Jolokia 2.6.0 agents of infra.kafka_lab, or with the Kafka protocol), replayed
through the analysis and scored against each drill's own ground truth (kill and restart times, the new
controller's log line, the AdminClient's 10 Hz view of the ISRs and 4 Hz view of both clusters' end
offsets, what a consumer group really read on DR after its failover). The MM2 drills also carry the
Kafka-protocol reads of both clusters' log end offsets (flow mirror-offsets, analysis/mirror_lag.py).

    tests/fixtures/kafka/drill_broker_kill.*      SIGKILL p3 (not the controller), restart it
    tests/fixtures/kafka/drill_controller_kill.*  SIGKILL the active controller p2 → p1 takes over
    tests/fixtures/kafka/drill_mm2_restart.*      SIGTERM MirrorMaker 2 under 50 msg/s, restart it
    tests/fixtures/kafka/drill_mm2_slow_link.*    MM2's link to the primary slowed (+1 s each way) for 20 s
    tests/fixtures/kafka/drill_consumer_failover.* a consumer group fails over to DR after the MM2 link was lost
    tests/fixtures/kafka/drill_consumer_rewind.*  a group rewound on the primary, then failed over to DR
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerscope.drills import kafka_kill, kafka_mm2, kafka_wan
from lakehouse.store import Lakehouse
from tests import recordings
from tests.drill_checks import assert_passed
from tests.recordings import replayed

FIX = Path(__file__).parent / "fixtures" / "kafka"


def analysed(stem: str, analyses: recordings.Analyses) -> tuple[Lakehouse, dict]:
    """The worker's one analysis of tests/fixtures/kafka/drill_<stem>, shared (read only; a test
    reading it is in `recordings.group`), and the drill's truth."""
    return analyses.lakehouse(FIX / f"drill_{stem}.jsonl.gz"), json.loads((FIX / f"drill_{stem}.truth.json").read_text())


@pytest.mark.parametrize("stem", [
    pytest.param(s, id=s, marks=pytest.mark.xdist_group(recordings.group(FIX / f"drill_{s}")))
    for s in ["broker_kill", "controller_kill"]])
def test_replayed_kafka_kill_is_found_within_one_scrape_of_the_adminclient(stem, analysed_recordings):
    lh, truth = analysed(stem, analysed_recordings)
    card = assert_passed(kafka_kill.score(lh, truth))
    print("\n" + card.render())
    assert card.detected["under-replicated"] and card.detected["under-min-isr"]
    assert ("controller failover" in card.detected) == (stem == "controller_kill")
    # the AdminClient's counts, not just the episode: RF 3 topics lab.orders + lab.strict, 3 partitions each
    assert card.facts["under-replicated max: findings / AdminClient"] == "6 / 6"
    assert card.facts["under-min-isr max: findings / AdminClient"] == "3 / 3"


@pytest.mark.xdist_group(recordings.group(FIX / "drill_mm2_restart"))
def test_replayed_mm2_restart_lag_matches_the_end_offsets(analysed_recordings):
    lh, truth = analysed("mm2_restart", analysed_recordings)
    card = assert_passed(kafka_mm2.score(lh, truth))
    print("\n" + card.render())
    assert card.facts["mm2 lag rows checked against the AdminClient"] >= 10
    # what the drill showed: a restarted worker answers long before its connectors report anything,
    # and by then it has caught up — the lag MM2 itself reports never shows the outage
    assert card.facts["restart → first mirrormaker2 metrics (s)"] > 5  # 11.1 s in this recording, 16–26 s in others
    assert card.facts["true lag when its metrics came back (messages)"] > 500
    # the brokers' own log end offsets saw the whole outage, round by round, and DR's copy standing still
    assert card.facts["mirror-offsets rows checked against the AdminClient"] >= 100
    assert card.facts["mirror-offsets: widest gap during the fault (s)"] <= 1.5 * truth["scrape_interval_s"]
    assert card.detected["DR's copy stalled (mirror-offsets, Burrow STALL)"]


@pytest.mark.xdist_group(recordings.group(FIX / "drill_mm2_slow_link"))
def test_replayed_slow_link_is_a_lag_in_time_that_records_lag_does_not_show(analysed_recordings):
    """The link MM2 → primary slowed by 1 s each way for 20 s under 50 msg/s: up to 140 messages
    behind (AdminClient), while MM2's records-lag said 0 throughout (counted against the log end
    of its last fetch, one delay old) and its replication-latency-ms rose from < 0.2 s to 1.6 s.
    Gold replication_lag takes the latency where it is the larger: never `caught-up` in the spell."""
    lh, truth = analysed("mm2_slow_link", analysed_recordings)
    card = assert_passed(kafka_wan.score(lh, truth))
    print("\n" + card.render())
    assert card.facts["mm2 records-lag during the slow spell: largest (messages)"] == 0
    assert truth["max_true_lag"] > 100
    slow, heal = truth["slow_ts"], truth["heal_ts"]
    gold = [r for r in lh.read("replication_lag").to_pylist() if r["flow"] == "mirrormaker2" and r["observed"]]
    spell = [r for r in gold if slow + 5 <= r["ts"].timestamp() <= heal]
    calm = [r for r in gold if r["ts"].timestamp() < slow]
    assert spell and {r["lag_s_method"] for r in spell} == {"reported-latency"}
    assert max(r["lag_s"] for r in spell) > 1.0 > max(r["lag_s"] for r in calm)
    # the brokers' log end offsets give the messages-behind figure records-lag cannot: within the
    # AdminClient's on every round, a third of the true total per partition at the worst
    assert card.facts["mirror-offsets worst miss (messages)"] == 0
    largest = card.facts["mirror-offsets largest lag during the fault (messages, one partition)"]
    assert largest >= truth["max_true_lag"] / 3 - 20


def readiness_card(stem: str, drill_module, where: Path, spark):
    """A recording of only the Kafka-protocol exchanges (kafka.*) of a replication: of analyze's jobs
    only what reads them runs here — the readiness job (bronze_kafka → failover_readiness) and, of the
    lag job, its readiness findings — then the drill's own scorecard."""
    from analysis.lag import readiness_findings
    from analysis.params import analysis_params
    from analysis.readiness import run_readiness
    from brokerscope.drills.common import rows
    from lakehouse.spark import SparkLakehouse

    drill = replayed(FIX / f"drill_{stem}.yaml", FIX / f"drill_{stem}.jsonl.gz", where / "lh")  # no spark: only the jobs below
    assert drill.result.kafka_new_rows > 0 and drill.result.new_rows == 0
    cfg, slh = drill.cfg, SparkLakehouse(spark, drill.lh)
    params = analysis_params(cfg)
    run_readiness(slh, params.readiness)
    findings = readiness_findings(slh.read("failover_readiness"), stale_after_s=params.lag.stale_after_s,
                                  hole_s=params.lag.hole_s).toPandas().to_dict("records")
    truth = json.loads((FIX / f"drill_{stem}.truth.json").read_text())
    card = assert_passed(drill_module.score_rows(rows(slh.lakehouse, "failover_readiness"), findings, truth))
    print("\n" + card.render())
    return card


def test_replayed_consumer_failover_predicts_what_the_consumer_re_read(tmp_path_factory, spark):
    from brokerscope.drills import kafka_failover

    card = readiness_card("consumer_failover", kafka_failover, tmp_path_factory.mktemp("consumer_failover"), spark)
    assert card.facts["prediction == actual on every partition"] is True
    assert card.detected["lost link (failover-readiness-stale at the failover)"]
    assert {k: v for k, v in card.facts.items() if k.endswith("actual re-read/skip on DR")}  # the numbers are shown


def test_replayed_rewind_predicts_the_skip_mm2_leaves_on_dr(tmp_path_factory, spark):
    """kafka-consumer-rewind: the group reset 100 back per partition on the primary; MM2 checkpointed the
    new commit but left the synced offset on DR where it was — the failover skipped 100 per partition."""
    from brokerscope.drills import kafka_rewind

    card = readiness_card("consumer_rewind", kafka_rewind, tmp_path_factory.mktemp("consumer_rewind"), spark)
    assert card.facts["prediction == actual on every partition"] is True
    assert card.facts["partitions the consumer really skipped on DR"] == [0, 1, 2]
    assert card.detected["rewind not followed on DR (failover-readiness-lossy)"]
