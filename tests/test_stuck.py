"""Stuck messages (analysis/stuck.py): each rule on tiny hand-made frames, then the captures —
WebLogic's stranded member and unreachable member through replay → analyze (the wiring), Artemis'
ageing subscription and DLQ followed across a failover, the real ActiveMQ kill-master drill (a clean
failover: no replay finding; the same with old messages added: one)."""

from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

from analysis.failovers import group_failovers
from analysis.intervals import instance_intervals
from analysis.stuck import (DEST_COLUMNS, EVENT_COLUMNS, STATE_COLUMNS, delivered_since_previous, group_stuck,
                            held_without_consumers)
from tests.recordings import replayed
from tests.fixtures.analytics.silver import FIXTURES, silver

T = pd.Timestamp
T0 = T("2026-01-01 00:00:00")


def at(s: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=s)


def dest_row(instance: str, s: float, messages, consumers, enqueued=None, dequeued=None, *, destination=None,
             logical="M!Q", kind="weblogic", group="c1", **extra) -> dict:
    return {"ts": at(s), "kind": kind, "group_name": group, "instance": instance,
            "destination": destination or f"M!{instance}@Q", "logical_destination": logical, "destination_type": "queue",
            "messages": messages, "consumers": consumers, "enqueued": enqueued, "dequeued": dequeued,
            "oldest_message_age_ms": None, "paused": False, "prepared_tx_messages": None} | extra


def state_row(instance: str, s: float, reachable=True, active=True, group="c1") -> dict:
    return {"ts": at(s), "group_name": group, "instance": instance, "reachable": reachable, "active": active}


def findings(dest_rows, state_rows=(), threshold=60.0, forward_delays=None, events=None) -> pd.DataFrame:
    dest = pd.DataFrame(dest_rows, columns=DEST_COLUMNS)
    state = pd.DataFrame(list(state_rows), columns=STATE_COLUMNS)
    return group_stuck(dest, state, threshold_s=threshold, forward_delays=forward_delays or {},
                       member_kinds=["weblogic"], events=events)


def stranded_scenario(sibling_consumers: int, seconds=(0, 30, 60, 90)) -> list[dict]:
    """m1 holds growing messages, no consumer, nothing delivered; m2 as given."""
    return ([dest_row("m1", s, 10 + s, 0, enqueued=10 + s) for s in seconds]
            + [dest_row("m2", s + 0.1, 2, sibling_consumers, enqueued=100 + s) for s in seconds])


# --- per observation -----------------------------------------------------------------------------


def test_held_means_messages_nobody_takes():
    held = held_without_consumers([5, 5, 5, 0, None, 5], [0, 2, 2, 0, 0, None], [False, False, True, False, None, None])
    assert held.tolist() == [True, False, True, False, False, False]  # unknown counts never convict


@pytest.mark.parametrize(
    "messages, enqueued, dequeued, same, expected, why",
    [
        ([5, 5, 5], [9, 12, 15], [4, 7, 10], [False, True, True], [False, True, True], "dequeue counter grew"),
        ([5, 8, 8], [9, 12, 12], [4, 4, 4], [False, True, True], [False, False, False], "dequeue counter flat"),
        ([10, 20, 18], [10, 20, 25], [None] * 3, [False, True, True], [False, False, True], "WebLogic: received − held"),
        ([10, 30, 5], [50, 3, 4], [40, 1, 2], [False, True, True], [False, False, True], "restart: only a fall proves it"),
        ([20, 30], [20, 10], [0, 0], [False, False], [False, False], "another instance: counters not comparable"),
    ],
)
def test_delivery_is_proved_by_the_counters_the_kind_has(messages, enqueued, dequeued, same, expected, why):
    assert delivered_since_previous(messages, enqueued, dequeued, same).tolist() == expected, why


# --- stranded member / no consumers ----------------------------------------------------------------


def test_member_without_consumers_is_stranded_while_a_sibling_consumes():
    (f,) = findings(stranded_scenario(sibling_consumers=2)).to_dict("records")
    assert (f["code"], f["severity"], f["certainty"], f["instance"], f["siblings_with_consumers"]) == (
        "stranded-member", "error", "certain", "m1", "m2")
    assert (f["start_ts"], f["start_lower"], f["end_ts"], f["end_upper"], f["is_open"]) == (at(0), pd.NaT, at(90), pd.NaT, True)
    assert (f["duration_s"], f["stuck_for_s"], f["messages"], f["messages_max"], f["threshold_s"]) == (90, 90, 100, 100, 60)


def test_without_consuming_siblings_it_is_no_consumers():
    (f,) = findings(stranded_scenario(sibling_consumers=0)).to_dict("records")
    assert (f["code"], f["severity"], f["siblings_with_consumers"]) == ("no-consumers", "warn", None)


def test_threshold_and_forward_delay():
    assert findings(stranded_scenario(2), threshold=91).empty
    assert findings(stranded_scenario(2), forward_delays={"M!Q": 120}).empty  # ForwardDelay replaces the threshold
    assert len(findings(stranded_scenario(2), threshold=600, forward_delays={"M!Q": 30})) == 1


def test_a_delivery_ends_the_run_and_an_unanswered_scrape_makes_it_possible():
    rows = stranded_scenario(2, seconds=(0, 30, 60, 90, 120, 150, 180))
    rows[3] = dest_row("m1", 90, 50, 0, enqueued=100)  # 30 received, 20 fewer held: 50 delivered by 90
    state = [state_row("m1", 130, reachable=False, active=None)]
    got = findings(rows, state).sort_values("start_ts").to_dict("records")
    assert [(f["start_lower"], f["start_ts"], f["end_ts"], f["end_upper"], f["certainty"]) for f in got] == [
        (pd.NaT, at(0), at(60), at(90), "certain"), (at(90), at(120), at(180), pd.NaT, "possible")]


def test_rising_oldest_age_is_the_wait_and_proves_the_head_stayed():
    rows = [dest_row("art", s, 7, 0, enqueued=7, dequeued=0, kind="artemis", group="pair", logical="prices",
                     destination="sub", oldest_message_age_ms=100_000 + 1000 * s) for s in (0, 5, 10)]
    state = [state_row("art", 7, reachable=False, active=None, group="pair")]
    (f,) = findings(rows, state).to_dict("records")
    assert (f["code"], f["duration_s"], f["stuck_for_s"], f["oldest_message_age_ms"], f["certainty"]) == (
        "no-consumers", 10, 110, 110_000, "certain")  # the age grew with the clock across the missed scrape
    falling = [r | {"oldest_message_age_ms": 100_000 - 1000 * i} for i, r in enumerate(rows)]
    assert findings(falling).empty  # a new head each time: only 10 s observed


def test_dead_letter_queue_is_info():
    rows = [dest_row("b", s, 3, 0, enqueued=3, dequeued=0, kind="artemis", group="pair", destination="DLQ", logical="DLQ")
            for s in (0, 40, 80)]
    (f,) = findings(rows).to_dict("records")
    assert (f["code"], f["severity"]) == ("no-consumers", "info") and "dead-letter" in f["advice"]


def test_paused_delivery_strands_messages_even_with_consumers():
    rows = [dest_row("m1", s, 9, 2, enqueued=9, paused=True) for s in (0, 40, 80)]
    (f,) = findings(rows).to_dict("records")
    assert f["code"] == "no-consumers" and "delivery paused" in f["message"]


# --- unreachable member ------------------------------------------------------------------------------


def test_messages_on_an_unreachable_member_count_last_seen_and_since_when():
    dest = [dest_row("m2", 0, 18, 0, enqueued=40), dest_row("m2", 10, 18, 0, enqueued=40), dest_row("m2", 50, 18, 2, enqueued=0)]
    serving, gone, gone_no_jms = (True, True), (False, None), (True, False)
    timeline = [serving, serving, gone, gone, gone_no_jms, serving]
    state = [state_row("m2", 10 * i, *s) for i, s in enumerate(timeline)]
    (f,) = findings(dest, state).to_dict("records")
    assert (f["code"], f["messages"], f["certainty"]) == ("unreachable-member", 18, "certain") and pd.isna(f["threshold_s"])
    assert (f["start_lower"], f["start_ts"], f["end_ts"], f["end_upper"], f["is_open"]) == (at(10), at(20), at(40), at(50), False)
    # only unanswered scrapes: possible; one missed scrape alone: indeterminate, no finding
    assert findings(dest, state[:4] + [state_row("m2", 40, False, None)] + state[5:])["certainty"].tolist() == ["possible"]
    assert findings(dest, [state_row("m2", 10 * i, *s) for i, s in enumerate([serving, serving, gone, serving])]).empty


# --- prepared transactions ---------------------------------------------------------------------------


def test_messages_held_by_prepared_transactions():
    rows = [dest_row("art", s, 5, 1, enqueued=5 + s, dequeued=s, kind="artemis", group="pair", destination="orders",
                     prepared_tx_messages=p) for s, p in ((0, 0), (30, 2), (60, 2), (90, 2), (120, 0))]
    (f,) = findings(rows).to_dict("records")
    assert (f["code"], f["messages"], f["start_ts"], f["end_ts"], f["end_upper"], f["duration_s"]) == (
        "prepared-transaction", 2, at(30), at(90), at(120), 60)
    assert findings(rows, threshold=61).empty


# --- the captures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def weblogic_analyzed(tmp_path_factory, spark):
    """The WebLogic 2.x capture through replay → analyze: the stuck job as `brokerscope analyze` runs it."""
    drill = replayed(FIXTURES / "weblogic" / "weblogic.yaml", FIXTURES / "weblogic" / "weblogic_jolokia2.jsonl",
                     tmp_path_factory.mktemp("wl-stuck") / "lh", spark)
    return drill.counts, drill.lh


def wl_at(tick: int, server: str) -> datetime:
    return datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc) + timedelta(seconds=10 * tick + (0.15 if server == "ms2" else 0))


def test_weblogic_capture_stranded_member_and_unreachable_member(weblogic_analyzed):
    counts, lh = weblogic_analyzed
    assert counts["stuck_messages"] == 2 and counts["replication_findings"] == 0
    got = {f["code"]: f for f in lh.read("stuck_messages").to_pylist()}
    stranded, away = got["stranded-member"], got["unreachable-member"]
    # ms1's member: no consumers and nothing delivered over all 14 ticks while ms2 consumed
    assert (stranded["instance"], stranded["destination"], stranded["logical_destination"]) == (
        "ms1", "SystemModule!JMSServer@ms1@OrdersQueue", "SystemModule!OrdersQueue")
    assert (stranded["start_ts"], stranded["end_ts"], stranded["is_open"], stranded["start_lower"]) == (
        wl_at(0, "ms1"), wl_at(13, "ms1"), True, None)
    assert (stranded["messages"], stranded["siblings_with_consumers"], stranded["certainty"], stranded["duration_s"]) == (
        80, "ms2", "certain", 130)
    # ms2's 18 messages: last seen at tick 7, unavailable through ticks 8–11 (refused, then no JMS server), back at 12
    assert (away["instance"], away["messages"], away["certainty"]) == ("ms2", 18, "certain")
    assert (away["start_lower"], away["start_ts"], away["end_ts"], away["end_upper"]) == (
        wl_at(7, "ms2"), wl_at(8, "ms2"), wl_at(11, "ms2"), wl_at(12, "ms2"))


def test_artemis_capture_ageing_subscription_followed_across_the_failover():
    facts = silver("artemis/failover_jolokia2.jsonl.gz", {"art-live": ("artemis", "pair"), "art-backup": ("artemis", "pair")})
    got = group_stuck(facts["destination_stats"][DEST_COLUMNS], facts["broker_state"][STATE_COLUMNS], threshold_s=60,
                      forward_delays={}, member_kinds=["weblogic"])
    by_destination = {f["destination"]: f for f in got.to_dict("records")}
    assert set(by_destination) == {"audit-client.price-audit", "DLQ"}  # orders has a consumer, ExpiryQueue is empty
    audit = by_destination["audit-client.price-audit"]
    assert (audit["code"], audit["severity"], audit["logical_destination"], audit["instances"], audit["instance"]) == (
        "no-consumers", "warn", "prices", "art-backup,art-live", "art-backup")
    assert (audit["start_ts"], audit["end_ts"], audit["is_open"]) == (
        pd.Timestamp("2026-11-23 09:00:00.004"), pd.Timestamp("2026-11-23 09:00:19.009"), True)
    # only 19 s observed, but FirstMessageAge rose 420 → 439 s: the head message waited that long
    assert (audit["stuck_for_s"], audit["oldest_message_age_ms"], audit["messages"], audit["certainty"]) == (
        439, 439_000, 475, "certain")
    assert by_destination["DLQ"]["severity"] == "info"


def failover_events_of(state: pd.DataFrame) -> pd.DataFrame:
    """The spine's own (pandas) interval and failover logic over the drill's broker_state."""
    intervals = pd.concat([instance_intervals(g) for _, g in state.groupby("instance")])
    return group_failovers(intervals)[EVENT_COLUMNS]


@pytest.mark.parametrize("added_to_new_master, expected", [(0, []), (20, [15])])
def test_activemq_drill_replay_after_failover(added_to_new_master, expected):
    """The real kill-master drill: 20 messages on amq-a, amq-b takes over and receives 10 more — 30 is
    exactly explained. Adding old messages to amq-b's depth makes it a replay."""
    targets = {"amq-a": ("activemq", "store-1"), "amq-b": ("activemq", "store-1")}
    facts = silver("drill_kill_master.jsonl.gz", targets)
    events = failover_events_of(facts["broker_state"])
    dest = facts["destination_stats"].copy()
    dest.loc[dest["instance"] == "amq-b", "messages"] += added_to_new_master
    got = group_stuck(dest[DEST_COLUMNS], facts["broker_state"][STATE_COLUMNS], threshold_s=60, forward_delays={},
                      member_kinds=[], events={"store-1": events})
    replays = got[got["code"] == "replay-after-failover"].to_dict("records")
    assert [f["messages"] for f in replays] == expected
    for f in replays:  # amq-a's rate (20 in 2.5 s) allows ≤ 5 more before it died; amq-b received 10
        assert (f["instance"], f["messages_max"], f["certainty"], f["failover_event_id"]) == (
            "amq-b", 50, "certain", events["event_id"].iloc[0])
        assert (f["start_lower"], f["start_ts"]) == (T("2026-11-22 00:05:59.005"), T("2026-11-22 00:06:00.525"))
        assert "20" in f["message"] and "(10)" in f["message"] and "≤ 5" in f["message"]


def test_replay_without_a_measured_rate_is_possible():
    old = [dest_row("a", 0, 20, 0, enqueued=20, kind="activemq", group="s", destination="Q", logical="Q")]
    new = [dest_row("b", 5, 35, 0, enqueued=0, kind="activemq", group="s", destination="Q", logical="Q")]
    event = pd.DataFrame([{"event_id": "e1", "kind": "activemq", "group_name": "s", "from_instance": "a", "to_instance": "b",
                           "old_last_active": at(0), "old_first_unanswered": at(1), "old_first_inactive": None,
                           "new_first_active": at(5)}])
    (f,) = findings(old + new, events={"s": event}, threshold=600).to_dict("records")
    assert (f["code"], f["messages"], f["certainty"]) == ("replay-after-failover", 15, "possible")
    assert np.isnan(f["stuck_for_s"])


# --- incremental runs: the newest partitions first ------------------------------------------------------


def stored(row: dict, table: str, i: int) -> dict:
    """A test row (dest_row/state_row) as the silver table holds it: key, partition, every column."""
    from tests.test_lakehouse import make_rows

    (base,) = make_rows(table, 1, start=i)
    ts = row["ts"].tz_localize("UTC")
    return {**base, **row, "ts": ts, "obs_date": ts.strftime("%Y-%m-%d"), "obs_key": f"{table}/{i}"}


def member_rows(group: str, seconds, resumed_at: float | None = None, gone: tuple[float, float] | None = None):
    """A WebLogic cluster `group` (servers m1, m2) every 5 s: m2's member consumes; m1's member is
    consumed from too until its rows stop at `gone[0]`; from `gone[1]` (a later obs_date) it is back
    holding 10 of its 50 messages with no consumer — a fall a full run reads as a delivery from its
    previous observation, and only a full run has it."""
    dest, state = [], []
    for s in seconds:
        for inst in ("m1", "m2"):
            state.append(state_row(inst, s, group=group) | {"kind": "weblogic", "role": "active"})
        dest.append(dest_row("m2", s, 2, 1, enqueued=10**6 + s, group=group))
        if gone is None or s < gone[0]:
            dest.append(dest_row("m1", s, 50, 1, enqueued=10**6 + s, group=group))
        elif s >= gone[1]:
            dest.append(dest_row("m1", s, 10, 0, enqueued=10**6 + gone[0], group=group))
    return dest, state


def incremental_and_full(tmp_path, spark):
    """Two lakehouses given the same rows: `append(parts)` ((dest rows, state rows) per part; returns
    the new broker_state rows' (first µs, count) per group), `run()` (the stuck job incremental on
    one, --full on the other; their tables must be equal; returns the incremental run's progress)."""
    from analysis.stuck import StuckParams, run_stuck
    from lakehouse.spark import SparkLakehouse
    from lakehouse.store import Lakehouse
    from tests.test_incremental import snapshot

    rules = StuckParams(threshold=5.0)
    inc, full = Lakehouse(tmp_path / "inc"), Lakehouse(tmp_path / "full")
    n = iter(range(10**6))

    def append(parts: list[tuple[list[dict], list[dict]]]) -> dict[str, tuple[int, int]]:
        dest = [stored(r, "destination_stats", next(n)) for d, _ in parts for r in d]
        state = [stored(r, "broker_state", next(n)) for _, s in parts for r in s]
        for lh in (inc, full):
            lh.append("destination_stats", dest)
            lh.append("broker_state", state)
        new: dict[str, tuple[int, int]] = {}
        for r in state:
            first, count = new.get(r["group_name"], (None, 0))
            us = int(pd.Timestamp(r["ts"]).value // 1000)
            new[r["group_name"]] = (us if first is None else min(first, us), count + 1)
        return new

    def run() -> list[str]:
        said: list[str] = []
        run_stuck(SparkLakehouse(spark, inc), rules, progress=said.append)
        run_stuck(SparkLakehouse(spark, full), rules, full=True)
        assert snapshot(inc, ("stuck_messages",)) == snapshot(full, ("stuck_messages",))
        return said

    return inc, full, append, run


def test_increments_search_the_newest_partitions_first_and_equal_a_full_run(spark, tmp_path):
    """Three appends, each analysed incrementally and compared with a full run of the same rows: c2's
    last rows lie in the day before (found by widening the search); c1's m1 member comes back after a
    gap longer than the window, its previous observation a day back (found: a full run)."""
    from analysis.stuck import last_stored
    from lakehouse.spark import SparkLakehouse

    inc, full, append, run = incremental_and_full(tmp_path, spark)

    gap = (-600, 600)  # m1's member: rows until 23:50 the day before, back at 00:10
    append([member_rows("c1", [-2 * 86400], gone=gap),  # an older partition still: the search widens before it ends
            member_rows("c1", range(-900, 300, 5), gone=gap), member_rows("c2", range(-900, -695, 5))])
    run()
    new = append([member_rows("c1", range(300, 500, 5), gone=gap), member_rows("c2", range(400, 600, 5))])
    us = lambda s: int(at(s).value // 1000)  # noqa: E731
    assert last_stored(SparkLakehouse(spark, inc), new) == {"c1": us(295), "c2": us(-700)}
    assert last_stored(SparkLakehouse(spark, inc), {**new, "c2": (us(-705), new["c2"][1])}) is None  # -705, -700 stored
    assert any("stuck_messages (incremental" in m for m in run())
    append([member_rows("c1", range(500, 700, 5), gone=gap)])
    said = run()
    assert "gold stuck_messages: a series resumes after a gap longer than the window, recomputing" in said, said
    assert [(f["instance"], f["code"], f["start_ts"]) for f in full.read("stuck_messages").to_pylist()] == [
        ("m1", "stranded-member", at(605).tz_localize("UTC").to_pydatetime())]  # 600 fell from 50: a delivery


def test_a_live_backup_destination_back_on_the_other_instance_after_a_long_gap_is_a_full_run(spark, tmp_path):
    """ActiveMQ: the queue follows the master role. amq-a (master) holds 50 until 100 s, then no master
    for longer than the window; amq-b, never master before, is master from 300 s holding 10, no consumer.
    The series' previous observation is amq-a's at 100 s, before the rows an increment reads: a full
    run sees the fall from 50 as a delivery (the run starts at 305 s, not 300 s), so only a full run
    is exact — whichever instance held the earlier rows."""
    _, full, append, run = incremental_and_full(tmp_path, spark)

    def part(seconds) -> tuple[list[dict], list[dict]]:
        dest, state = [], []
        for s in seconds:
            master = "amq-a" if s <= 100 else ("amq-b" if s >= 300 else None)
            for inst in ("amq-a", "amq-b"):
                answered = not (inst == "amq-a" and 100 < s)
                state.append(state_row(inst, s, reachable=answered, active=(inst == master) if answered else None,
                                       group="s") | {"kind": "activemq", "role": "master" if inst == master else "slave"})
            if master is not None:
                held = (50, 1, 10**6 + s, 10**6 + s) if master == "amq-a" else (10, 0, 10**6, 10**6)
                dest.append(dest_row(master, s, held[0], held[1], enqueued=held[2], dequeued=held[3], kind="activemq",
                                     group="s", destination="Q", logical="Q"))
        return dest, state

    append([part(range(0, 300, 5))])
    run()
    append([part(range(300, 400, 5))])
    said = run()
    assert "gold stuck_messages: a series resumes after a gap longer than the window, recomputing" in said, said
    assert [(f["instance"], f["code"], f["start_ts"]) for f in full.read("stuck_messages").to_pylist()] == [
        ("amq-b", "no-consumers", at(305).tz_localize("UTC").to_pydatetime())]
