"""kafka-mm2-slow-link: the link between MirrorMaker 2 (running beside DR, as recommended) and the
primary cluster slowed down — every byte delayed DELAY_S each way through the lab's WAN proxies
(infra.kafka_lab, wan=True) for SLOW_S under 50 msg/s — then fast again. Replication falls behind
while the link is slow and catches up after.

Truth: Kafka's own AdminClient, 4 times a second, straight to both clusters (not through the WAN):
the end offsets of ``lab.orders`` on the primary against ``primary.lab.orders`` on DR, as bounds
(kafka_mm2.LagProbe); the drill's slow and heal times. Bar: the slow link really made replication
fall behind (else the drill measured nothing); every ``mirrormaker2`` lag in messages the collector
recorded within the AdminClient's lag over one scrape interval (less what MM2 had fetched and not
yet written) while the link is fast, and never above it while slow (MM2's records-lag is counted
against the log end of its last fetch: over a slow link a lower bound); gold replication_lag never
"caught-up" during the spell and its lag in time at least the delay every record crossed; the drain
within one scrape of the AdminClient's; the brokers' own figure (flow ``mirror-offsets``) within the
AdminClient's ±20 on every round, slow link or not. What MM2's metrics say is recorded each run
(docs/KAFKA_LAB.md facts 7 and 8), never assumed.
"""

from __future__ import annotations

import time
from pathlib import Path

from brokerscope.drills.common import Scorecard, epoch, fresh_workdir, rows, run_in_lab, say
from brokerscope.drills.kafka_mm2 import (IN_FLIGHT, _first_all_zero, drive_under_load, probe_samples, score_lag_values,
                                          score_mirror_offsets)
from infra.kafka_lab import MM2, PRIMARY, KafkaLab

NAME = "kafka-mm2-slow-link"
SUMMARY = "slow the link MirrorMaker 2 → primary (1 s each way) under load: lag grows, then drains (vs AdminClient)"
DELAY_S = 1.0  # each way: a fetch round trip costs 2 s more
SLOW_S = 20.0


def run(workdir: Path, interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    workdir = fresh_workdir(workdir, keep)
    truth: dict = {"drill": NAME, "scrape_interval_s": interval, "in_flight_allowed": IN_FLIGHT, "delay_s": DELAY_S,
                   "slow_s": SLOW_S}
    lab = KafkaLab(workdir / "lab", mirror=True, wan=True)
    return run_in_lab(lab, workdir, truth, lambda: _drive(lab, workdir, interval, truth))


def _drive(lab: KafkaLab, workdir: Path, interval: float, truth: dict) -> None:
    say("starting Kafka: primary (3 KRaft nodes), dr (1), MirrorMaker 2 reaching the primary over the lab's WAN proxies")

    def slow_link() -> None:
        truth["slow_ts"] = lab.set_wan_delay(DELAY_S)
        say(f"the link MM2 → {PRIMARY} slowed: +{DELAY_S:g} s each way for {SLOW_S:g} s")
        time.sleep(SLOW_S)
        truth["heal_ts"] = lab.set_wan_delay(0.0)
        say("the link is fast again")
        time.sleep(8)

    drive_under_load(lab, workdir, interval, truth, slow_link, calm_s=5.0)


def _true_lag(probe: list, since: float, until: float) -> list[int]:
    """The AdminClient's total lag (upper bounds, all partitions) of each sample in [since, until]."""
    return [sum(hi for _, hi in lags.values()) for t, lags in probe if since <= t <= until]


def score(lh, truth: dict) -> Scorecard:
    repl = [r for r in rows(lh, "replication_stats") if r["flow"] == "mirrormaker2"]
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    probe = probe_samples(truth)
    slow, heal = truth["slow_ts"], truth["heal_ts"]
    before, during = _true_lag(probe, slow - 5.0, slow), _true_lag(probe, slow, heal + 1.0)
    card.facts["true lag before / largest during the slow spell (messages)"] = (max(before, default=None),
                                                                                 max(during, default=None))
    card.require(max(during, default=0) > 2 * max(max(before, default=0), IN_FLIGHT),
                 "the slow link did not make replication fall behind: the drill measured nothing")
    # MM2's records-lag over a slow link counts against the log end of its last fetch, one delay old:
    # a lower bound there, never above the truth; where the link is fast, within the truth
    score_lag_values(card, repl, probe, truth, until=slow, what=" (before the slow spell)")
    score_lag_values(card, repl, probe, truth, since=heal + 2 * DELAY_S + 5.0, what=" (after it)")
    above = [r for r in repl if slow <= epoch(r["ts"]) <= heal + 2 * DELAY_S + 5.0 and r.get("lag_messages") is not None
             and r["lag_messages"] > max((hi for t, lags in probe if abs(t - epoch(r["ts"])) <= card.interval
                                          for p, (_, hi) in lags.items() if p == r["partition"]), default=float("inf"))]
    card.require(not above, f"mm2 lag above the AdminClient's during the slow spell: {above[:3]}")
    # the gold lag in time: MM2's own latency says what records-lag cannot
    gold = [r for r in rows(lh, "replication_lag") if r["flow"] == "mirrormaker2" and r["observed"]
            and slow + 2 * DELAY_S + 3.0 <= epoch(r["ts"]) <= heal]
    caught_up = [r for r in gold if r["lag_s_method"] == "caught-up"]
    card.require(bool(gold) and not caught_up, f"{len(caught_up)} of {len(gold)} gold replication_lag rows in the slow "
                 "spell say caught-up")
    largest = max((r["lag_s"] or 0 for r in gold), default=0.0)
    card.require(largest >= DELAY_S, f"gold lag_s during the slow spell at most {largest:.2f} s, under the "
                 f"{DELAY_S:g}-s delay every record crossed")
    card.facts["gold lag_s during the slow spell: largest (s), methods"] = (round(largest, 3),
                                                                           sorted({r["lag_s_method"] for r in gold}))
    seen = [r for r in repl if slow <= epoch(r["ts"]) <= heal + 1.0]
    card.facts["mm2 records-lag during the slow spell: largest (messages)"] = max(
        (r["lag_messages"] or 0 for r in seen), default=None)
    for field in ("latency_ms", "record_age_ms"):
        calm = [r[field] for r in repl if r.get(field) is not None and epoch(r["ts"]) < slow]
        values = [r[field] for r in seen if r.get(field) is not None]
        card.facts[f"mm2 {field}: largest before / during the slow spell"] = (max(calm, default=None),
                                                                             max(values, default=None))
    state = [r for r in rows(lh, "broker_state") if r["instance"] == MM2 and r["reachable"] is False]
    card.facts["MM2 unanswered scrapes (its JVM was never stopped)"] = len(state)
    card.boundary("drained (vs AdminClient)", _first_all_zero(repl, truth["load_stop_ts"]), truth["drained_ts"])
    if truth.get("mirror_offsets"):  # the brokers' own figure: exact where records-lag says 0
        score_mirror_offsets(card, lh, probe, truth, (slow, heal))
    return card
