"""kafka-consumer-rewind: a consumer group rewound on the primary (an operator replays messages)
while MirrorMaker 2 keeps its offsets synced to DR; then the group fails over to DR. Does the
offset it starts from there follow the rewind, or would it skip what the rewind meant to re-read?

The fault: a producer writes MESSAGES to the primary, the group reads them all and commits; once
MM2 has synced its offsets to DR (sync.group.offsets: the DR group at DR's end), the group is
reset on the primary REWIND messages back per partition (AdminClient AlterConsumerGroupOffsets,
what `kafka-consumer-groups --reset-offsets --shift-by` does). WATCH_S later the group fails over
to DR (infra.kafka_clients.fail_over: DR's group offsets, reading to the end, committing nothing).

Truth: what the consumer read on DR per partition against its commit on the primary after the
rewind — a first offset above that commit skips the gap — and the AdminClient's readiness view just
before the failover. Bar: per partition the prediction of the last round before the failover
(gold failover_readiness) equals what the consumer did (kafka_failover.score_prediction); where it
really skipped, the partition is `lossy` in that round inside a `failover-readiness-lossy` finding,
first seen within 2 scrapes of the rewind; where it did not, no lossy finding at all. What MM2 did
with the rewind is recorded each run (docs/KAFKA_LAB.md), never assumed.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from brokerscope.drills.common import Scorecard, epoch, fresh_workdir, rows, run_in_lab, say, settle, start_collecting
from brokerscope.drills.kafka_failover import actual, score_prediction
from brokerscope.drills.kafka_mm2 import replication_config
from infra.kafka_clients import admin_client, committed_offsets, consume, end_offsets, fail_over, produce, readiness
from infra.kafka_lab import DR, PRIMARY, KafkaLab

NAME = "kafka-consumer-rewind"
SUMMARY = ("a consumer group rewound on the primary while MirrorMaker 2 syncs its offsets, then failed over to DR: "
           "predicted skips per partition vs what the consumer really read")
GROUP = "g-replay"
REPLICATION = "orders-dr"
MESSAGES = 600
REWIND = 100  # messages per partition the operator moves the group back
WATCH_S = 8.0  # from the rewind to the failover: MM2 checkpoints and syncs every second


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "group": GROUP, "replication": REPLICATION,
                   "rewind": REWIND}
    lab = KafkaLab(workdir / "lab", mirror=True)
    return run_in_lab(lab, workdir, truth, lambda: _drive(lab, workdir, interval, truth))


def _drive(lab: KafkaLab, workdir: Path, interval: float, truth: dict) -> None:
    say("starting Kafka: primary (3 KRaft nodes), dr (1), MirrorMaker 2")
    truth["startup_s"] = lab.start()
    primary, dr, parts = lab.bootstrap(PRIMARY), lab.bootstrap(DR), range(lab.partitions)
    cfg = {"stale_after": "5s", "replications": [
        replication_config(lab, REPLICATION, groups=[GROUP], auto_offset_reset="earliest")]}
    _, col = start_collecting(workdir, [], interval, failover_readiness=cfg)
    try:
        truth["produced"] = produce(primary, lab.topic, MESSAGES, prefix="r")
        truth["consumed"] = len(consume(primary, lab.topic, GROUP, MESSAGES, timeout=60))
        truth["synced_s"] = _wait_synced(primary, dr, lab, 90)
        say(f"the group read {truth['consumed']} of {truth['produced']}; MM2 synced its offsets to DR "
            f"{truth['synced_s']:.1f} s later")
        settle(interval, 4, 2.0)
        before = {p: o for (t, p), o in committed_offsets(primary, GROUP).items() if t == lab.topic}
        rewound = {p: max(0, o - REWIND) for p, o in before.items()}
        truth["rewind_ts"] = time.time()
        _reset(primary, lab.topic, rewound)
        truth["commits"] = [[round(truth["rewind_ts"], 3), {str(p): o for p, o in rewound.items()}]]
        say(f"the group rewound on the primary: {before} → {rewound}; failover in {WATCH_S:g} s")
        time.sleep(WATCH_S)
        truth["failover_ts"] = time.time()
        truth["committed"] = {str(p): o for (t, p), o in committed_offsets(primary, GROUP).items() if t == lab.topic}
        truth["adminclient_readiness"] = readiness(primary, dr, GROUP, lab.topic, lab.mirrored_topic)
        truth["dr_end"] = {str(p): o for p, o in end_offsets(dr, lab.mirrored_topic, parts).items()}
        truth["dr_group_before"] = {str(p): o for (t, p), o in committed_offsets(dr, GROUP).items() if t == lab.mirrored_topic}
        reads = fail_over(dr, GROUP, lab.mirrored_topic)
        truth["actual"] = actual(reads, truth["committed"], truth["dr_end"])
        say(f"on DR (offsets there {truth['dr_group_before']}) the group read: {truth['actual']}")
        settle(interval, 4, 2.0)
    finally:
        truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def _wait_synced(primary: str, dr: str, lab: KafkaLab, timeout: float) -> float:
    """Seconds until MM2 has synced the group's offsets on DR to its commits on the primary."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        view = readiness(primary, dr, GROUP, lab.topic, lab.mirrored_topic)
        if len(view) == lab.partitions and all(r["re_read"] == 0 and r["skipped"] == 0 for r in view):
            return time.monotonic() - t0
        time.sleep(0.5)
    raise RuntimeError(f"MirrorMaker 2 did not sync {GROUP}'s offsets to DR within {timeout:.0f} s: {view}")


def _reset(bootstrap: str, topic: str, offsets: dict[int, int]) -> None:
    """What `kafka-consumer-groups --reset-offsets` does for an empty group."""
    req = ConsumerGroupTopicPartitions(GROUP, [TopicPartition(topic, p, o) for p, o in sorted(offsets.items())])
    admin = admin_client(bootstrap)  # held until the answer: a collected client never completes its futures
    admin.alter_consumer_group_offsets([req], request_timeout=10)[GROUP].result(15)


def score(lh, truth: dict) -> Scorecard:
    return score_rows(rows(lh, "failover_readiness"), rows(lh, "replication_findings"), truth)


def score_rows(ready: list[dict], findings: list[dict], truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    at, pred = score_prediction(card, ready, truth)
    if at is None:
        return card
    skipped = sorted(int(p) for p, a in truth["actual"].items() if a["skipped"])
    card.facts["partitions the consumer really skipped on DR"] = skipped
    card.facts["DR group offsets at the failover / rewound commits"] = (truth["dr_group_before"], truth["committed"])
    card.facts["MM2's latest checkpoint per partition at the prediction: upstream → downstream"] = {
        p: f"{r['checkpoint_upstream']} → {r['checkpoint_offset']}" for p, r in sorted(pred.items())}
    lossy = [f for f in findings if f["code"] == "failover-readiness-lossy" and f["client"] == truth["group"]]
    if not skipped:  # MM2 followed the rewind: nothing may be called lossy
        card.expect_none("failover-readiness-lossy findings", lossy, lambda f: f["message"])
        return card
    card.require(all(pred[p]["status"] == "lossy" for p in skipped if p in pred),
                 f"partitions that skipped but were not lossy: {[(p, pred[p]['status']) for p in skipped if p in pred]}")
    open_at = [f for f in lossy if epoch(f["start_ts"]) <= at <= epoch(f["end_ts"])]
    if card.detect("rewind not followed on DR (failover-readiness-lossy)", bool(open_at),
                   "no failover-readiness-lossy finding open at the prediction"):
        # the first round after the rewind sees it; a round reads the primary's commit last
        card.boundary("lossy first seen (vs the rewind)", min(epoch(f["start_ts"]) for f in lossy), truth["rewind_ts"],
                      lo=0.0, hi=2 * card.interval)
    return card
