"""Replication lag (analysis/lag.py): lag in time and its failure modes (Kafka Lag Exporter's NaN
and "astronomical" values: single point, quiet topic, old position, restart), Burrow's rules in
ANCHORS §1.3 order, scrape rounds, then the Kafka captures (controller failover, two controllers,
MM2/Replicator/consumer lag) and Artemis' replica sync — in pandas, and once through the Spark
wiring."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analysis.lag import (LAG_FLOWS, SERIES_KEY, LagRules, LookupTable, broker_findings, burrow_statuses,
                          group_cluster_findings, instance_lag, lag_findings, lag_seconds, replica_sync_gaps,
                          scrape_rounds, series_findings, series_lag, time_behind)
from analysis.lag_increment import replication_lag
from lakehouse.tables import contract
from settings import LagSettings
from tests.fixtures.analytics.silver import silver

T = pd.Timestamp


def table_of(points, max_points=60) -> LookupTable:
    t = LookupTable(max_points)
    for ts, p in points:
        t.add(ts, p)
    return t


# --- the lookup table and lag in time -----------------------------------------------------------


def test_lookup_table_keeps_kle_rules():
    t = table_of([(0, 0), (10, 100), (10, 150), (5, 160)])  # same or earlier time: rejected
    assert (t.t, t.p) == ([0, 10], [0, 100])
    t = table_of([(0, 0), (10, 100), (20, 100), (30, 100)])  # an idle run keeps its first and latest point
    assert (t.t, t.p) == ([0, 10, 30], [0, 100, 100])
    t = table_of([(0, 0), (10, 100), (20, 50)])  # the log end went back (reset): start over
    assert (t.t, t.p) == ([20], [50])
    assert table_of([(i, i) for i in range(10)], max_points=3).t == [7, 8, 9]


def test_interpolation_and_caught_up():
    t = table_of([(0, 0), (10, 100), (20, 200)])
    assert time_behind(t, 150, 25, 1.0) == (10.0, "interpolated")  # the log end was at 150 at t=15
    assert time_behind(t, 200, 25, 1.0) == (0.0, "caught-up")


def test_single_point_is_insufficient_not_a_number():
    lag, method = time_behind(table_of([(0, 500)]), 400, 0, 1.0)
    assert np.isnan(lag) and method == "insufficient-data"  # null in the table, never a NaN value


def test_quiet_topic_gives_the_certain_lower_bound():
    # KLE: NaN or a division by a zero slope; here: the position predates the whole (flat) table
    assert time_behind(table_of([(0, 500), (30, 500)]), 400, 30, 1.0) == (30.0, "lower-bound")


def test_extrapolation_is_bounded():
    steady = table_of([(100, 1000), (200, 2000)])  # 10/s
    assert time_behind(steady, 900, 200, 1.0) == (110.0, "extrapolated")
    crawling = table_of([(100, 1000), (200, 1001)])  # 0.01/s: KLE would say ≈ 10,100 s
    assert time_behind(crawling, 900, 200, 1.0) == (100.0, "lower-bound")
    assert time_behind(steady, 900, 200, 0.0) == (100.0, "lower-bound")  # no extrapolation allowed


def test_restart_starts_a_new_table():
    lag, method = lag_seconds(np.array([0, 10, 20, 30, 40.0]), np.array([0, 100, 200, 50, 150.0]),
                              np.array([0, 50, 150, 0, 100.0]), max_points=60, max_extrapolation=1.0)
    assert method.tolist() == ["caught-up", "interpolated", "interpolated", "insufficient-data", "interpolated"]
    assert lag[[0, 1, 2, 4]].tolist() == [0, 5, 5, 5] and np.isnan(lag[3])  # KLE keeps the stale table: 30 s


# --- Burrow --------------------------------------------------------------------------------------

COMMITS = np.array([0, 10, 20, 30, 40.0])
RISING = np.array([10, 11, 12, 13, 14.0])
NO_OFFSETS = np.full(5, np.nan)


@pytest.mark.parametrize(
    "now, offsets, lags, expected, why",
    [
        (40, RISING, [5, 6, 7, 8, 0], "OK", "2: current lag 0"),
        (100, RISING, [5, 6, 7, 8, 9], "STOP", "3: no observation for longer than the window spans"),
        (100, RISING, [4, 6, 7, 8, 9], "WARN", "3: caught up recently (first log end 14 ≤ last offset 14): not STOP"),
        (40, np.array([10, 11, 8, 9, 10.0]), [0, 5, 6, 7, 8], "REWIND", "4: back and never climbed back, before the lag gate"),
        (40, np.array([10, 11, 8, 12, 13.0]), [5, 5, 6, 7, 8], "WARN", "4: climbed back: no rewind"),
        (40, np.full(5, 10.0), [5, 6, 7, 8, 9], "STALL", "5: lag at every commit, offset never moved"),
        (40, RISING, [5, 6, 6, 7, 9], "WARN", "5: lag never decreased"),
        (40, RISING, [5, 7, 6, 8, 9], "OK", "6: lag decreased once"),
        (40, RISING, [0, 7, 8, 9, 9], "OK", "5: lag zero at a commit: neither STALL nor WARN"),
        (40, NO_OFFSETS, [5, 5, 5, 5, 5], "WARN", "lag-only: STALL cannot be judged"),
        (100, NO_OFFSETS, [5, 6, 7, 8, 9], "STOP", "lag-only: STOP from times and lags"),
    ],
)
def test_burrow_rules_in_order(now, offsets, lags, expected, why):
    assert status_at(now, COMMITS, offsets, lags) == expected, why


def status_at(now, commits, offsets, lags, window=5) -> str:
    """Burrow's status at `now` over the window ending at the last commit."""
    lags = np.asarray(lags, dtype=float)
    (got,) = burrow_statuses(commits, offsets, lags, offsets + lags, np.array([now]), np.array([len(commits) - 1]),
                             window=window, min_complete=0.5, allowed_lag=0)
    return got


def test_burrow_window_slides_and_an_incomplete_one_is_not_judged():
    assert status_at(100, COMMITS[3:], RISING[3:], [8, 9]) == "OK"  # 2 of 5 slots filled
    many = np.arange(0, 100, 10.0)
    lags = [0, 0, 0, 0, 0, 5, 6, 7, 8, 9]  # the last 5 carry lag throughout: WARN; 10 slots see the zeros: OK
    assert status_at(90, many, many + 100, lags) == "WARN" and status_at(90, many, many + 100, lags, window=10) == "OK"


def stopping_partition(answered_after: bool) -> pd.DataFrame:
    """A consumer reports lag 5…9 at 0–40 s, then not any more; its instance is scraped until 120 s."""
    obs = pd.DataFrame({"ts": [T("2026-01-01") + pd.Timedelta(seconds=s) for s in (0, 10, 20, 30, 40)],
                        "kind": "kafka", "group_name": "app", "instance": "app", "flow": "consumer", "source_cluster": None,
                        "target_cluster": None, "topic": "t", "partition": 0, "client": "c",
                        "lag_messages": [5.0, 6, 7, 8, 9], "latency_ms": np.nan, "throughput_per_s": np.nan})
    scrapes = (T("2026-01-01") + pd.to_timedelta(np.arange(0, 130, 10), unit="s")).to_numpy()
    answered = np.arange(13) < 5 if not answered_after else np.ones(13, bool)
    return series_lag(obs, scrapes, answered, LagRules.of(LagSettings(window=5)))


def test_partition_that_stops_reporting_turns_stop_at_later_scrapes():
    rows = stopping_partition(answered_after=True)
    assert rows["status"].tolist() == ["OK", "OK", "WARN", "WARN", "WARN", "WARN", "WARN", "WARN", "WARN"] + ["STOP"] * 4
    assert rows["observed"].tolist() == [True] * 5 + [False] * 8
    assert set(rows["lag_messages"][5:]) == {9.0} and set(rows["lag_s_method"]) == {"no-positions", "not-observed"}
    assert rows["window_commits"].tolist() == [1, 2, 3, 4, 5] + [5] * 8
    # the instance itself stopped answering: nothing seen, nothing concluded (a missed scrape is no STOP)
    assert set(stopping_partition(answered_after=False)["status"][4:]) == {"WARN"}


# --- scrape rounds -----------------------------------------------------------------------------------------


def test_rounds_put_one_scrape_of_each_broker_in_each_round():
    rng = np.random.default_rng(7)
    base = np.datetime64("2026-01-01T00:00:00", "ns")
    times, names = [], []
    for r in range(6):  # the collector spreads 3 targets over a 10-s interval, with jitter
        for i, name in enumerate(("a", "b", "c")):
            times.append(base + np.timedelta64(int((10 * r + 10 * i / 3 + rng.uniform(-0.2, 0.2)) * 1e9), "ns"))
            names.append(name)
    rounds = scrape_rounds(np.array(times), np.array(names))
    per_round = pd.Series(names).groupby(rounds).agg(sorted)
    assert all(len(v) == len(set(v)) for v in per_round)  # never two scrapes of one broker in a round
    assert all(v == ["a", "b", "c"] for v in per_round.iloc[1:-1])  # evenly spread: only the edge rounds are partial
    assert sum(map(len, per_round)) == 18


# --- Kafka captures --------------------------------------------------------------------------------------


def kafka_cluster(capture: str, brokers, group):
    facts = silver(f"kafka/{capture}", {b: ("kafka", group) for b in brokers})
    isr = facts["replication_stats"][facts["replication_stats"]["flow"] == "isr"]
    return facts, group_cluster_findings(facts["broker_state"][["ts", "group_name", "instance", "reachable"]], isr,
                                         follower_lag_messages=1000)


def test_controller_failover_capture():
    _, got = kafka_cluster("kafka_controller_failover.jsonl.gz", ("kafka-1", "kafka-2", "kafka-3"), "prod-east")
    t = lambda s: T("2026-11-23 10:00:00") + pd.Timedelta(seconds=s)  # noqa: E731 — brokers at +0/+2/+4 ms
    rows = {f["code"]: f for f in got.to_dict("records")}
    assert set(rows) == {"no-controller", "under-replicated", "under-min-isr", "offline-partitions", "follower-lag"}
    expected = {  # code: (start_lower, start, end, end_upper, max, last, certainty, detail)
        "no-controller": (t(25.004), t(30), t(35.004), t(40), 0, 0, "possible", "kafka-1"),  # kafka-1 away: may still hold it
        "under-replicated": (t(35.004), t(40), t(65.004), t(70), 27, 11, "certain", "kafka-1"),
        "under-min-isr": (t(35.004), t(40), t(60.004), t(65), 5, 5, "certain", "kafka-1"),
        "offline-partitions": (t(35.004), t(40), t(55.004), t(60), 2, 2, "certain", "kafka-1"),
        "follower-lag": (t(55.004), t(60), t(65.004), t(70), 15230, 4210, "certain", "kafka-1"),
    }
    for code, want in expected.items():
        f = rows[code]
        columns = ("start_lower", "start_ts", "end_ts", "end_upper", "value_max", "value_last", "certainty", "detail")
        assert tuple(f[c] for c in columns) == want, code
    assert rows["follower-lag"]["threshold"] == 1000 and "did not answer" in rows["under-replicated"]["message"]


@pytest.mark.parametrize("lost_s", [10, 45])  # a quiet round; a round inside the under-replicated run
def test_a_round_without_a_brokers_row_neither_starts_nor_ends_a_finding(lost_s):
    """A broker's row lost from a round (or stamped into the next one): the others' Σ is a lower
    bound, so 0 there is no evidence of no controller, nor the end of an under-replicated run."""
    facts, whole = kafka_cluster("kafka_controller_failover.jsonl.gz", ("kafka-1", "kafka-2", "kafka-3"), "prod-east")
    state, isr = facts["broker_state"], facts["replication_stats"][facts["replication_stats"]["flow"] == "isr"]
    at = T("2026-11-23 10:00:00") + pd.Timedelta(seconds=lost_s)
    rows = isr[(isr["ts"] >= at) & (isr["ts"] < at + pd.Timedelta(seconds=1))]
    carrier = rows.sort_values(["active_controllers", "under_replicated"], na_position="first").iloc[-1]
    gone = lambda d: d[~((d["instance"] == carrier["instance"]) & (d["ts"] == carrier["ts"]))]  # noqa: E731
    got = group_cluster_findings(gone(state)[["ts", "group_name", "instance", "reachable"]], gone(isr),
                                 follower_lag_messages=1000)
    assert len(gone(isr)) == len(isr) - 1
    columns = ["code", "start_ts", "end_ts", "certainty"]
    assert got[columns].sort_values("code").to_dict("records") == whole[columns].sort_values("code").to_dict("records")


def test_two_controllers_capture():
    _, got = kafka_cluster("kafka_dual_controller.jsonl.gz", ("west-1", "west-2", "west-3"), "prod-west")
    (f,) = got.to_dict("records")
    t = lambda s: T("2026-11-23 12:00:00") + pd.Timedelta(seconds=s)  # noqa: E731
    assert (f["code"], f["certainty"], f["value_max"]) == ("multiple-controllers", "certain", 2)
    assert f["detail"] == "west-1,west-3"  # who claimed it
    assert (f["start_lower"], f["start_ts"], f["end_ts"], f["end_upper"]) == (t(15.004), t(20), t(40.004), t(45))


def test_undeclared_brokers_say_nothing_about_the_controller():
    facts = silver("kafka/kafka_dual_controller.jsonl.gz", {b: ("kafka", None) for b in ("west-1", "west-2", "west-3")})
    for broker, state in facts["broker_state"].groupby("instance"):
        isr = facts["replication_stats"][facts["replication_stats"]["instance"] == broker]
        assert group_cluster_findings(state, isr, follower_lag_messages=1000).empty


LAG_TARGETS = {"mm2-worker": ("kafka", None), "replicator-worker": ("kafka", None), "orders-app": ("kafka", None)}


def cross_cluster_lag(settings: LagSettings) -> pd.DataFrame:
    facts = silver("kafka/kafka_cross_cluster_lag.jsonl.gz", LAG_TARGETS)
    repl, health = facts["replication_stats"], facts["collector_health"]
    flows = repl[repl["flow"].isin(LAG_FLOWS) & (repl["lag_messages"].notna() | repl["latency_ms"].notna())]
    rules = LagRules.of(settings)
    return pd.concat([instance_lag(g, health[health["instance"] == i], rules=rules) for i, g in flows.groupby("instance")])


def test_cross_cluster_capture_lag_in_messages_and_time():
    lag = cross_cluster_lag(LagSettings(window=3))
    offset_ms = {"mm2-worker": 0, "replicator-worker": 2, "orders-app": 4}  # each target's place in the step

    def row(inst, flow, topic, s):
        ts = T("2026-11-23 11:00:00") + pd.Timedelta(seconds=s, milliseconds=offset_ms[inst])
        hit = (lag["instance"] == inst) & (lag["flow"] == flow) & (lag["topic"] == topic) & (lag["partition"] == 0)
        return lag[hit & (lag["ts"] == ts)].iloc[0]

    peak = row("replicator-worker", "replicator", "orders", 25)  # 6100 behind; the log end passed its position ≈13.4 s
    assert (peak["lag_messages"], peak["lag_s_method"], peak["status"], peak["status_basis"]) == (
        6100, "interpolated", "WARN", "derived-offsets")
    assert peak["lag_s"] == pytest.approx(11.64, abs=0.01) and peak["latency_ms"] == 11500  # Replicator's own latency agrees
    missed = row("replicator-worker", "replicator", "orders", 30)  # the worker timed out: last known lag, no lag_s
    assert (missed["observed"], missed["lag_messages"], missed["lag_s_method"], missed["status"]) == (
        False, 6100, "not-observed", "WARN")
    assert pd.isna(missed["lag_s"])
    mm2 = row("mm2-worker", "mirrormaker2", "primary.orders", 25)  # MM2 reports no lag in messages
    assert (mm2["lag_s"], mm2["lag_s_method"], mm2["status"], mm2["status_basis"]) == (3.3, "reported-latency", None, "none")
    assert pd.isna(mm2["lag_messages"])
    consumer = lag[(lag["flow"] == "consumer") & (lag["partition"] == 0)].sort_values("ts")
    assert consumer["status"].tolist() == ["OK", "OK", "OK", "WARN", "WARN", "WARN", "OK", "OK", "OK", "OK"]
    assert set(consumer["lag_s_method"]) == {"no-positions"}
    assert not lag["lag_s"].apply(lambda v: v is not None and np.isinf(v)).any()


def test_cross_cluster_findings():
    lag = cross_cluster_lag(LagSettings(window=3))
    got = pd.concat([series_findings(g, lag_threshold_s=5) for _, g in lag.groupby(SERIES_KEY, dropna=False)])
    consumer_warn = got[(got["code"] == "consumer-warn") & (got["instance"] == "orders-app") & (got["partition"] == 0)].iloc[0]
    assert (consumer_warn["start_ts"], consumer_warn["end_ts"], consumer_warn["end_upper"], consumer_warn["certainty"]) == (
        T("2026-11-23 11:00:15.004"), T("2026-11-23 11:00:25.004"), T("2026-11-23 11:00:30.004"), "certain")
    late = got[got["code"] == "replication-lag"]
    assert sorted(late["topic"] + "-" + late["partition"].astype(str)) == ["orders-0", "orders-1", "payments-0", "payments-1"]
    assert set(late["start_ts"]) == {T("2026-11-23 11:00:20.002")} and set(late["end_upper"]) == {T("2026-11-23 11:00:30.002")}
    # Burrow's default window (10) holds the caught-up start: nothing to report at the default thresholds
    quiet = cross_cluster_lag(LagSettings())
    assert pd.concat([series_findings(g, lag_threshold_s=60) for _, g in quiet.groupby(SERIES_KEY, dropna=False)]).empty


# --- Artemis replica sync ---------------------------------------------------------------------------------


def replica_rows(flags, step_s=10, announced=True) -> pd.DataFrame:
    return pd.DataFrame({"ts": [T("2026-01-01") + pd.Timedelta(seconds=step_s * i) for i in range(len(flags))],
                         "kind": "artemis", "group_name": "pair", "instance": "live", "in_sync": flags,
                         "backup_announced": announced})


NO_STATE = pd.DataFrame(columns=["ts", "group_name", "instance", "reachable"])


def test_replica_sync_gap_never_from_one_sample():
    assert replica_sync_gaps(replica_rows([True, False, True], step_s=120), NO_STATE, grace_s=60).empty
    (f,) = replica_sync_gaps(replica_rows([True, False, False, False, True], step_s=30), NO_STATE, grace_s=60).to_dict("records")
    assert (f["code"], f["start_ts"], f["end_ts"], f["end_upper"], f["value_max"]) == (
        "replica-sync-gap", T("2026-01-01 00:00:30"), T("2026-01-01 00:01:30"), T("2026-01-01 00:02:00"), 60)
    assert "not synchronized" in f["message"]
    assert replica_sync_gaps(replica_rows([False, False], step_s=30), NO_STATE, grace_s=60).empty  # 30 s < grace


def backup_rows(replica_sync, reachable=True, step_s=30) -> pd.DataFrame:
    n = len(replica_sync)
    return pd.DataFrame({"ts": [T("2026-01-01") + pd.Timedelta(seconds=step_s * i + 1) for i in range(n)],
                         "group_name": "pair", "instance": "backup", "reachable": reachable,
                         "role": "backup" if reachable else "unknown", "replica_sync": replica_sync,
                         "error": None if reachable else "connection refused"})


def test_a_backup_claiming_sync_after_its_live_dropped_it_names_the_link():
    """A silent cut of the replication link (docs/ARTEMIS_LAB.md 23): the live drops its backup at
    connection-ttl while the backup still reports ReplicaSync true — they lost each other, so the
    finding names the link; a backup that stopped answering is not a link."""
    live = replica_rows([True, False, False, False, True], step_s=30)
    (f,) = replica_sync_gaps(live, backup_rows([True, True, True, False, True]), grace_s=60).to_dict("records")
    assert "the replication link was lost, not the backup" in f["message"]
    assert f["detail"] == "backup answered as backup"
    (g,) = replica_sync_gaps(live, backup_rows([None] * 5, reachable=False), grace_s=60).to_dict("records")
    assert "link" not in g["message"] and "not synchronized" in g["message"]
    assert g["detail"] == "backup did not answer (connection refused)"
    (h,) = replica_sync_gaps(live, backup_rows([False] * 5), grace_s=60).to_dict("records")  # syncing: both agree
    assert "link" not in h["message"] and h["detail"] == "backup answered as backup"


def test_artemis_failover_capture_replica_sync():
    facts = silver("artemis/failover_jolokia2.jsonl.gz", {"art-live": ("artemis", "pair"), "art-backup": ("artemis", "pair")})
    repl, state = facts["replication_stats"], facts["broker_state"]
    gaps = lambda grace: pd.concat([replica_sync_gaps(g, state[state["instance"] == i], grace_s=grace)  # noqa: E731
                                    for i, g in repl[repl["flow"] == "artemis-replica"].groupby("instance")])
    assert gaps(60).empty  # the initial sync (1 s) and the new live's 6 s without backup stay under the grace
    rows = {f["instance"]: f for f in gaps(1).to_dict("records")}
    new_live = rows["art-backup"]
    assert (new_live["start_ts"], new_live["end_ts"], new_live["is_open"], new_live["certainty"]) == (
        T("2026-11-23 09:00:13.009"), T("2026-11-23 09:00:19.009"), True, "certain")
    assert "no backup was announced" in new_live["message"] and "not synchronized" in rows["art-live"]["message"]


# --- the Spark wiring -------------------------------------------------------------------------------------


def spark_frame(spark, pdf: pd.DataFrame, table: str):
    c = contract(table)
    return spark.createDataFrame(pa.Table.from_pandas(pdf[c.column_names], schema=c.schema, preserve_index=False))


def test_spark_jobs_give_the_pandas_answers(spark):
    kfo = silver("kafka/kafka_controller_failover.jsonl.gz", {f"kafka-{i}": ("kafka", "prod-east") for i in (1, 2, 3)})
    lag = silver("kafka/kafka_cross_cluster_lag.jsonl.gz", LAG_TARGETS)
    art = silver("artemis/failover_jolokia2.jsonl.gz", {"art-live": ("artemis", "pair"), "art-backup": ("artemis", "pair")})
    tables = ("broker_state", "replication_stats", "collector_health")
    merged = {t: pd.concat([kfo[t], lag[t], art[t]], ignore_index=True) for t in tables}
    state, repl, health = (spark_frame(spark, merged[t], t) for t in tables)
    series = replication_lag(repl, health, LagRules.of(LagSettings(window=3))).cache()
    findings = (broker_findings(state, repl, follower_lag_messages=1000, grace_s=1)
                .unionByName(lag_findings(series, lag_threshold_s=5))).toPandas()
    assert series.count() == len(cross_cluster_lag(LagSettings(window=3))) == 120
    assert sorted(findings["code"].value_counts().items()) == [
        ("consumer-warn", 6), ("follower-lag", 1), ("no-controller", 1), ("offline-partitions", 1), ("replica-sync-gap", 2),
        ("replication-lag", 4), ("under-min-isr", 1), ("under-replicated", 1)]
    assert findings["finding_id"].is_unique
    series.unpersist()


def test_a_flows_own_latency_outweighs_a_derived_lag_below_it():
    """Measured (drill kafka-mm2-slow-link, 2026-11-27): over a slow link MM2's replication consumer
    reports records-lag 0 (counted against the log end of its last fetch, already old) while its
    replication-latency-ms says 1.5 s and the target is 50 messages behind per partition. The
    derived 'caught-up' must not stand against the flow's own measurement; a derived lag above the
    latency keeps its method."""
    t0 = T("2026-11-27 04:40:00")
    latency = [60.0, 70.0, 1500.0, 1500.0, 40.0]
    obs = pd.DataFrame({"ts": [t0 + pd.Timedelta(seconds=s) for s in range(5)], "kind": "kafka", "group_name": "g",
                        "instance": "mm2", "flow": "mirrormaker2", "source_cluster": "primary", "target_cluster": "dr",
                        "topic": "primary.orders", "partition": 0, "client": None,
                        "lag_messages": [0.0] * 5, "throughput_per_s": [16.7] * 5, "latency_ms": latency})
    scrapes = obs["ts"].to_numpy().astype("datetime64[ns]")
    rules = LagRules.of(LagSettings())
    got = series_lag(obs, scrapes, np.ones(len(obs), bool), rules)
    assert got["lag_s"].tolist() == pytest.approx([v / 1000 for v in latency])
    assert set(got["lag_s_method"]) == {"reported-latency"} and set(got["status"]) == {"OK"}
    obs["latency_ms"] = np.nan  # no latency reported: the derived lag as before
    assert set(series_lag(obs, scrapes, np.ones(len(obs), bool), rules)["lag_s_method"]) == {"caught-up"}
