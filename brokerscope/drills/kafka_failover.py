"""kafka-consumer-failover: a consumer group on the primary fails over to the DR cluster on the
offsets MirrorMaker 2 translated for it; brokerscope's readiness prediction (gold failover_readiness)
against what the consumer really re-reads there.

The fault, as a site loss unfolds: a producer (50 msg/s, and a burst of BURST messages) and a
consumer group reading 30 msg/s and committing every 10 messages run on the primary while
brokerscope's Kafka-protocol collector watches the replication; the group lags, so its commits lie
inside the log. Then the replication link is lost (MirrorMaker 2 stopped): the group goes on
committing on the primary, its translation on DR stays where it was, and its last checkpoint ages
past `stale_after` (5 s here). Then the group's site fails: producer and consumer stop (the
consumer's last commit at its close), and a moment later (3 scrapes) the group starts on DR
(infra.kafka_clients.fail_over: the DR group's offsets, auto.offset.reset=earliest, reading to the
end, committing nothing).

Truth: what that consumer read on DR, per partition — the messages below the group's final commit
on the primary (AdminClient) are re-read, a first offset above it skips the gap — and the commits
the consumer made (time, offsets). Bar: per partition the prediction of the last round before the
failover equals what the consumer re-read and skipped, or differs by no more than the messages the
group committed between that round and the failover that DR holds (stated in the scorecard);
the lost link visible at the failover: every partition whose commit is past its last checkpoint
`stale` in that round, inside a `failover-readiness-stale` finding.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from brokerscope.drills.common import (Periodic, Scorecard, epoch, fresh_workdir, rows, run_in_lab, say, settle,
                                      start_collecting)
from brokerscope.drills.kafka_mm2 import Load, replication_config
from infra.kafka_clients import committed_offsets, end_offsets, fail_over, produce, readiness
from infra.kafka_lab import DR, MM2, PRIMARY, KafkaLab

NAME = "kafka-consumer-failover"
SUMMARY = ("a consumer group fails over to DR on MirrorMaker 2's translated offsets after the link was lost: "
           "predicted re-reads/skips per partition vs what the consumer really re-read")
GROUP = "g-orders"
REPLICATION = "orders-dr"
STALE_AFTER_S = 5.0
BURST = 300
LINK_LOST_S = 8.0  # the group goes on on the primary this long after MM2 stopped
CONSUME_RATE = 30  # messages per second the group reads (the producer writes 50)


class GroupConsumer(Periodic):
    """The group on the primary, slower than the producer (CONSUME_RATE msg/s: its commits lie inside
    the log, where MirrorMaker 2 keeps only sparse offset syncs): polls, commits every 10 messages
    (synchronously, explicit offsets), and keeps the log of its commits: (time the commit returned,
    {partition: committed offset})."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__("kafka-group", 0.2)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False, "session.timeout.ms": 6000})
        self.consumer.subscribe([topic])
        self.topic = topic
        self.next: dict[int, int] = {}  # partition → the offset after the last message read
        self.refused: list[str] = []  # commits the group coordinator refused (time and error)
        self.pending = 0
        self.read = 0
        self.commits: list[tuple[float, dict[int, int]]] = []
        self.lock = threading.Lock()

    def tick(self) -> None:
        for msg in self.consumer.consume(int(CONSUME_RATE * self.period), timeout=0.15):
            if msg.error():
                continue
            self.read += 1
            self.pending += 1
            self.next[msg.partition()] = msg.offset() + 1
            if self.pending >= 10:
                self._commit()

    def _commit(self) -> None:
        """Commit what was read, explicitly (after a rebalance a bare commit() has no offsets: _NO_OFFSET);
        a commit refused meanwhile (a rebalance in progress) is tried again with the next one."""
        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(self.next.items())]
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            self.refused.append(f"{time.time():.3f} {e}")
            return
        with self.lock:
            self.commits.append((time.time(), {str(tp.partition): tp.offset for tp in done or [] if tp.offset >= 0}))
        self.pending = 0

    def stop(self) -> list[tuple[float, dict[int, int]]]:
        super().stop()
        if self.pending:
            self._commit()
        self.consumer.close()
        return self.commits


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "group": GROUP, "replication": REPLICATION,
                   "stale_after_s": STALE_AFTER_S}
    lab = KafkaLab(workdir / "lab", mirror=True)
    return run_in_lab(lab, workdir, truth, lambda: _drive(lab, workdir, interval, truth))


def _drive(lab: KafkaLab, workdir: Path, interval: float, truth: dict) -> None:
    say("starting Kafka: primary (3 KRaft nodes), dr (1), MirrorMaker 2")
    truth["startup_s"] = lab.start()
    primary, dr = lab.bootstrap(PRIMARY), lab.bootstrap(DR)
    readiness_cfg = {"stale_after": f"{STALE_AFTER_S:g}s", "replications": [
        replication_config(lab, REPLICATION, groups=[GROUP], auto_offset_reset="earliest")]}
    _, col = start_collecting(workdir, [], interval, failover_readiness=readiness_cfg)
    load = Load(primary, lab.topic).start()
    group = GroupConsumer(primary, lab.topic).start()
    try:
        settle(interval, 12, 6.0)
        truth["burst_ts"] = time.time()
        truth["burst_acked"] = produce(primary, lab.topic, BURST, prefix="burst")
        say(f"burst of {truth['burst_acked']} messages; the group reads on")
        settle(interval, 12, 6.0)
        truth["link_lost_ts"] = time.time()
        lab.kill(MM2, signal.SIGTERM)
        truth["mm2_stopped_ts"] = time.time()
        say(f"replication link lost: MirrorMaker 2 stopped ({truth['mm2_stopped_ts'] - truth['link_lost_ts']:.1f} s); "
            f"the group goes on on the primary for {LINK_LOST_S:g} s")
        time.sleep(LINK_LOST_S)
        truth["site_lost_ts"] = time.time()  # the site fails: the group's last commit is at its close
        truth["produced"] = load.stop()
        commits = group.stop()
        truth["consumer_stopped_ts"] = time.time()
        truth["consumer_read"], truth["commits_refused"] = group.read, group.refused
        settle(interval, 3, 1.5)  # the operator moves the group a moment later
        truth["failover_ts"] = time.time()
        truth["commits"] = [[round(t, 3), offs] for t, offs in commits]
        truth["committed"] = {str(p): o for (t, p), o in committed_offsets(primary, GROUP).items() if t == lab.topic}
        truth["adminclient_readiness"] = readiness(primary, dr, GROUP, lab.topic, lab.mirrored_topic)
        parts = range(lab.partitions)
        truth["dr_end"] = {str(p): o for p, o in end_offsets(dr, lab.mirrored_topic, parts).items()}
        truth["primary_end"] = {str(p): o for p, o in end_offsets(primary, lab.topic, parts).items()}
        truth["dr_group_before"] = {str(p): o for (t, p), o in committed_offsets(dr, GROUP).items() if t == lab.mirrored_topic}
        say(f"the group fails over to DR: committed on the primary {truth['committed']}, its offsets on DR "
            f"{truth['dr_group_before']}, DR holds up to {truth['dr_end']}")
        truth["failover_started_ts"] = time.time()
        reads = fail_over(dr, GROUP, lab.mirrored_topic)
        truth["failover_done_ts"] = time.time()
        truth["actual"] = actual(reads, truth["committed"], truth["dr_end"])
        say(f"on DR the group read {sum(len(v) for v in reads.values())} messages: {truth['actual']}")
        settle(interval, 4, 2.0)
    finally:
        load.stop()
        group_stop_quietly(group)
        truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")


def group_stop_quietly(group: GroupConsumer) -> None:
    """The consumer is stopped by the drill; a drill that failed half way stops it here."""
    if group._thread.is_alive():
        try:
            group.stop()
        except Exception:  # noqa: BLE001 — the drill's own error is the one to see
            pass


def actual(reads: dict[int, list[int]], committed: dict[str, int], dr_end: dict[str, int]) -> dict[str, dict]:
    """Per partition what the group really did on DR: where it started, what it re-read (offsets
    below its final commit on the primary) and skipped (a start above that commit)."""
    out = {}
    for p, end in sorted(dr_end.items()):
        got = sorted(reads.get(int(p), []))
        start = got[0] if got else end
        c = committed.get(p)
        out[p] = {"start": start, "read": len(got), "committed": c,
                       "re_read": None if c is None else sum(1 for o in got if o < c),
                       "skipped": None if c is None else max(0, start - c)}
    return out


# --- score ------------------------------------------------------------------------------------------------


def score(lh, truth: dict) -> Scorecard:
    return score_rows(rows(lh, "failover_readiness"), rows(lh, "replication_findings"), truth)


def committed_at(commits: list, t: float) -> dict[str, int]:
    """The group's committed offsets as of `t` from the consumer's commit log."""
    now: dict[str, int] = {}
    for ts, offs in commits:
        if ts <= t:
            now.update(offs)
    return now


def score_rows(ready: list[dict], findings: list[dict], truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    at, pred = score_prediction(card, ready, truth)
    if at is None:
        return card
    # the lost link at the failover: a translation that no longer follows the group is `stale` there
    behind = [r for r in pred.values() if r["committed"] is not None and r["checkpoint_upstream"] is not None
              and r["committed"] > r["checkpoint_upstream"]]
    card.require(all(r["status"] == "stale" for r in behind),
                 f"at the failover the translation lagged the commits but was not stale: "
                 f"{[(r['partition'], r['status']) for r in behind if r['status'] != 'stale']}")
    stale = [f for f in findings if f["code"] == "failover-readiness-stale" and f["client"] == truth["group"]
             and epoch(f["start_ts"]) <= at <= epoch(f["end_ts"])]
    if card.detect("lost link (failover-readiness-stale at the failover)", bool(stale),
                   "no failover-readiness-stale finding of the group open at the prediction"):
        # MM2 writes a checkpoint only when a translation moves: for a group far behind the log end it
        # may not move for seconds while MM2 runs, so staleness can begin before the link is lost
        first = min(epoch(f["start_ts"]) for f in stale)
        card.facts["stale first seen (s after MM2 stopped; negative: before)"] = round(first - truth["mm2_stopped_ts"], 3)
    return card


def score_prediction(card: Scorecard, ready: list[dict], truth: dict) -> tuple[float | None, dict[int, dict]]:
    """The prediction of the last round before the failover against what the consumer did on DR, per
    partition (module doc's bar); returns that round's time and rows (None: no prediction)."""
    mine = [r for r in ready if r["consumer_group"] == truth["group"] and r["replication"] == truth["replication"]]
    before = [epoch(r["ts"]) for r in mine if epoch(r["ts"]) <= truth["failover_ts"]]
    if not card.detect("a readiness prediction before the failover", bool(before), f"no failover_readiness row of {truth['group']}"):
        return None, {}
    at = max(before)
    pred = {r["partition"]: r for r in mine if epoch(r["ts"]) == at}
    card.facts["prediction round (s before the failover)"] = round(truth["failover_ts"] - at, 3)
    then = committed_at(truth["commits"], at)
    exact = True
    for p_text, real in sorted(truth["actual"].items()):
        p = int(p_text)
        r = pred.get(p)
        if not card.require(r is not None, f"partition {p}: no prediction in the round at {at:.3f}"):
            continue
        # what the group committed after the prediction's round that DR holds: the most the two may differ by
        end = truth["dr_end"][p_text]
        slack = max(0, min(real["committed"], end) - min(then.get(p_text, 0), end))
        got = (r["re_read"], r["skipped"])
        want = (real["re_read"], real["skipped"])
        card.facts[f"p{p} predicted re-read/skip ({r['status']}, from {r['translated_from'] or 'auto.offset.reset'})"] = \
            f"{got[0]}/{got[1]} — committed {r['committed']}, translated {r['translated']}, checkpoint age {r['checkpoint_age_s']}"
        card.facts[f"p{p} actual re-read/skip on DR"] = (f"{want[0]}/{want[1]} — started at {real['start']}, final commit "
                                                         f"{real['committed']}, read {real['read']}")
        card.facts[f"p{p} commits after the prediction that DR holds (allowed difference)"] = slack
        if got != want:
            exact = False
        ok = None not in got and abs(got[0] - want[0]) <= slack and abs(got[1] - want[1]) <= slack
        card.require(ok, f"partition {p}: predicted re-read/skip {got}, actual {want} (allowed difference {slack})")
    card.facts["prediction == actual on every partition"] = exact
    return at, pred
