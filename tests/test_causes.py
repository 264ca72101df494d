"""Causes (analysis/causes.py): GC pauses and ZooKeeper findings joined onto failovers and
split-brain windows, on tiny gold tables built per contract (positive and negative cases)."""

import pandas as pd
import pytest

from analysis.causes import CauseParams, finding_causes, group_ensembles
from analysis.runs import contract_frame
from lakehouse.tables import (BROKER_STATE, FAILOVER_EVENTS, GC_FINDINGS, REPLICATION_FINDINGS, SPLIT_BRAIN_WINDOWS,
                              ZK_COORDINATION, ZK_FINDINGS, contract)

T0 = pd.Timestamp("2026-11-22 02:13:00")
PARAMS = CauseParams(scrape_interval_s=5, scrapes=2, slack_s=30)


def at(s: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=s)


def frame(spark, rows, c):
    return spark.createDataFrame(contract_frame(rows, c), c.spark_schema())


def failover(event_type="failover", last=4.0, first=7.0, old="amq-a", new="amq-b") -> dict:
    return {"event_id": f"ev-{event_type}", "kind": "activemq", "group_name": "g", "event_type": event_type,
            "from_instance": old, "to_instance": new, "old_last_active": at(last), "new_first_active": at(first),
            "overlap": False, "old_first_unanswered": at(last + 0.5)}


def pause(s: float, ms: float, target="amq-a", code="gc.full", seq=1, event_type="full", cause="Allocation Failure") -> dict:
    return {"finding_id": f"gc-{code}-{target}-{seq}", "code": code, "severity": "error", "target": target, "group_name": "g",
            "ts": at(s), "file_id": "f1", "event_seq": seq, "event_type": event_type, "cause": cause, "value": ms,
            "threshold": 6000.0, "unit": "ms", "message": "m"}


def zk(code, s, e, group="g", ensemble="ens", instance=None, severity="warn") -> dict:
    return {"finding_id": f"zk-{code}-{group}", "code": code, "severity": severity, "ensemble": ensemble, "group_name": group,
            "instance": instance, "node_id": None, "start_ts": at(s), "end_ts": at(e), "observations": 1, "message": "m"}


def causes(spark, failovers=(), windows=(), gc=(), zk_rows=(), ensembles=(), repl=()):
    ens = spark.createDataFrame(list(ensembles) or [("", "")], "group_name string, ensemble string")
    if not ensembles:
        ens = ens.limit(0)
    df = finding_causes(frame(spark, list(failovers), FAILOVER_EVENTS), frame(spark, list(windows), SPLIT_BRAIN_WINDOWS),
                        frame(spark, list(gc), GC_FINDINGS), frame(spark, list(zk_rows), ZK_FINDINGS), ens, PARAMS,
                        repl=frame(spark, list(repl), REPLICATION_FINDINGS))
    return sorted(df.collect(), key=lambda r: (r.cause_table, r.cause_id_ref))


def test_a_long_gc_pause_on_the_old_live_is_the_likely_cause(spark):
    rows = causes(spark, [failover()], gc=[pause(5, 21300), pause(5, 21300, code="gc.pause-over-third-session")])
    assert len(rows) == 1  # one pause, one cause: its most telling finding
    c = rows[0]
    assert (c.cause_code, c.confidence, c.effect_table, c.instance) == ("gc.pause-over-third-session", "likely", "failover_events", "amq-a")
    assert c.lead_s == pytest.approx(2.0)
    assert c.message == "amq-a paused 21.3 s in a full GC at 02:13:05.0; amq-b took over at 02:13:07.0"


@pytest.mark.parametrize("gc_row, why", [
    (pause(-600, 21300), "ten minutes before: outside the look-back"),
    (pause(5, 21300, target="amq-b"), "on the new live, not the one that lost its role"),
    (pause(8, 21300), "began after the takeover"),
    (pause(5, 21300, code="gc.humongous"), "not a pause finding"),
])
def test_no_cause(spark, gc_row, why):
    assert causes(spark, [failover()], gc=[gc_row]) == [], why


def test_a_pause_over_before_the_live_was_last_seen_is_only_possible(spark):
    # a 2 s pause 20 s before: the live answered again afterwards; look-back = 2 + 30 s covers it
    (c,) = causes(spark, [failover(last=30, first=31)], gc=[pause(8, 2000)])
    assert c.confidence == "possible" and c.lead_s == pytest.approx(23)


def test_restarts_have_no_causes(spark):
    assert causes(spark, [failover("restart", old="amq-a", new="amq-a")], gc=[pause(5, 21300)]) == []


def test_a_paused_live_that_wakes_into_a_split_brain(spark):
    window = {"window_id": "w1", "kind": "artemis", "group_name": "g", "instance_a": "amq-a", "instance_b": "amq-b",
              "certain_start": at(25), "certain_end": at(40), "possible_start": at(24), "possible_end": at(41),
              "certainty": "certain", "duration_s": 15.0}
    (c,) = causes(spark, windows=[window], gc=[pause(3, 21300, event_type="young", cause="G1 Evacuation Pause")])
    assert c.effect_table == "split_brain_windows" and c.confidence == "likely"
    assert c.message == "amq-a paused 21.3 s in a young GC at 02:13:03.0; split brain of amq-a and amq-b began at 02:13:25.0"


def test_zookeeper_findings_of_the_group_and_its_ensemble(spark):
    rows = causes(spark, [failover()], zk_rows=[
        zk("zk.lease-vanished", 5, 6, instance="amq-a"),
        zk("zk.quorum-lost", 2, 20, group="ens", severity="error"),
        zk("zk.latency-spike", 3, 3, group="ens2", ensemble="ens2", instance="zk2"),
        zk("zk.lease-vanished", 5, 6, group="other"),
        zk("zk.backup-stale", 5, 6),  # a risk, not a cause
    ], ensembles=[("g", "ens"), ("g", "ens2")])
    got = {(r.cause_code, r.confidence) for r in rows}
    assert got == {("zk.lease-vanished", "likely"), ("zk.quorum-lost", "likely"), ("zk.latency-spike", "possible")}
    vanished = next(r for r in rows if r.cause_code == "zk.lease-vanished")
    assert vanished.message == "the lock lease vanished (amq-a) at 02:13:05.0; amq-b took over at 02:13:07.0"


def test_group_ensembles_from_findings_and_node_ids(spark):
    found = frame(spark, [zk("zk.lock-handover", 0, 1, group="g1", ensemble="e1"), zk("zk.quorum-lost", 0, 1, group="e2", ensemble="e2")], ZK_FINDINGS)
    coord = frame(spark, [{"obs_key": "k", "ts": at(0), "obs_date": "2026-11-22", "ensemble": "e3", "target": "z", "watch": "w",
                           "namespace": "", "node_id": "N1", "answered": True}], ZK_COORDINATION)
    state = frame(spark, [{"obs_key": "k", "ts": at(0), "obs_date": "2026-11-22", "kind": "artemis", "group_name": "g2",
                           "instance": "a", "reachable": True, "role": "live", "node_id": "N1"}], BROKER_STATE)
    got = {tuple(r) for r in group_ensembles(found, coord.select("ensemble", "node_id"), state.select("node_id", "group_name")).collect()}
    assert got == {("g1", "e1"), ("g2", "e3")}
    assert contract("finding_causes").keys == ("cause_id",)


def replica_gap(s: float, e: float, instance="amq-a", detail="amq-b answered as backup/live/starting") -> dict:
    return {"finding_id": f"repl-{instance}-{s}", "code": "replica-sync-gap", "severity": "error", "certainty": "certain",
            "kind": "artemis", "group_name": "g", "instance": instance, "flow": "artemis-replica", "start_ts": at(s),
            "end_ts": at(e), "is_open": False, "duration_s": e - s, "value_max": e - s, "value_last": e - s,
            "threshold": 60.0, "unit": "s", "detail": detail, "message": "m", "advice": "a"}


def test_a_live_that_lost_its_replica_before_a_split_brain_is_its_likely_cause(spark):
    """Classic replication after a silent link cut (docs/ARTEMIS_LAB.md 23): the live drops its backup
    at connection-ttl, the backup activates about a minute later; the second live's own gap, which
    begins with the window, is not a cause."""
    window = {"window_id": "w1", "kind": "artemis", "group_name": "g", "instance_a": "amq-a", "instance_b": "amq-b",
              "certain_start": at(115), "certain_end": at(220), "possible_start": at(114.5), "certainty": "certain"}
    repl = [replica_gap(59, 222), replica_gap(115, 220, instance="amq-b", detail="amq-a answered as live")]
    (c,) = causes(spark, windows=[window], repl=repl)
    assert (c.cause_table, c.cause_code, c.instance, c.confidence, c.lead_s) == (
        "replication_findings", "replica-sync-gap", "amq-a", "likely", pytest.approx(56))
    assert c.message == ("amq-a lost its replica at 02:13:59.0 (ReplicaSync false; amq-b answered as backup/live/starting); "
                         "split brain of amq-a and amq-b began at 02:14:55.0")
    assert causes(spark, windows=[window], repl=[replica_gap(0, 70)]) == []  # in sync again long before: outside the look-back
