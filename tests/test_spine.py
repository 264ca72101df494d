"""The spine job on a real drill's recording, and on tiny hand-made frames."""

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import yaml

from analysis.runner import analyze
from analysis.split_brain import split_brain_windows
from brokerscope.timeline import build_timeline, render_text
from collectors.replay import replay
from lakehouse.store import Lakehouse
from lakehouse.tables import BROKER_STATE
from tests.recordings import fixture_config
from tests.drill_checks import check_kill_master

FIX = Path(__file__).parent / "fixtures"
TRUTH = yaml.safe_load((FIX / "drill_kill_master.truth.json").read_text())


def drill_config(tmp_path):
    return fixture_config(FIX / "drill_kill_master.yaml", tmp_path / "lh")


def gold(lh):
    key = {"role_intervals": "interval_id", "failover_events": "event_id", "split_brain_windows": "window_id"}
    return {t: sorted(lh.read(t).to_pylist(), key=lambda r: r[k]) for t, k in key.items()}


def test_replay_of_a_real_drill_reconstructs_the_failover(tmp_path, spark):
    cfg = drill_config(tmp_path)
    res = replay(cfg, FIX / "drill_kill_master.jsonl.gz")
    assert res.envelopes == res.new_rows == 38
    counts = analyze(cfg, spark=spark)
    lh = Lakehouse(cfg.lakehouse_root())
    g = gold(lh)
    check_kill_master(g["failover_events"], g["role_intervals"], g["split_brain_windows"], TRUTH)

    state = lh.read("broker_state").to_pylist()
    a = [r for r in state if r["instance"] == "amq-a" and r["active"]]
    assert max(r["total_enqueued"] for r in a) >= TRUTH["sent_before_kill"]
    b = [r for r in state if r["instance"] == "amq-b" and r["active"]]
    assert max(r["total_enqueued"] for r in b) >= TRUTH["sent_after_failover"]
    assert {r["role"] for r in state} >= {"master", "slave", "unknown"}
    q = [r for r in lh.read("destination_stats").to_pylist() if r["instance"] == "amq-b"]
    assert max(r["messages"] for r in q) == TRUTH["sent_before_kill"] + TRUTH["sent_after_failover"]

    health = lh.read("collector_health").to_pylist()
    assert len(health) == 38
    down = [h for h in health if not h["answered"]]
    assert down and {h["error_kind"] for h in down} == {"refused"} and {h["target"] for h in down} == {"amq-a"}
    slave = [h for h in health if h["answered"] and h["target"] == "amq-b" and h["items_failed"]]
    assert slave and all("404" in h["item_errors"] for h in slave)  # a slave's missing queue MBeans, counted

    text = render_text(build_timeline(lh.read("role_intervals"), lh.read("failover_events"),
                                      lh.read("split_brain_windows"), lh.read("broker_state")))
    assert "failover amq-a → amq-b, outage ≤" in text
    assert "amq-a stopped answering (connection refused)" in text
    assert "amq-a back, as slave" in text

    # idempotent: replaying again adds nothing, re-analysing rewrites the same rows
    assert replay(cfg, FIX / "drill_kill_master.jsonl.gz").new_rows == 0
    assert analyze(cfg, spark=spark) == counts
    assert gold(lh) == g


T0 = datetime(2026, 11, 21, 22, 0, tzinfo=timezone.utc)


def state_frame(spark, seqs: dict[str, str], step=1.0):
    """seqs: instance → string of M (active), S (standby), x (no answer); enqueued grows on M."""
    rows = []
    for inst, seq in seqs.items():
        enq = 0
        for i, c in enumerate(seq):
            enq += 5 if c == "M" else 0
            ts = T0 + timedelta(seconds=i * step)
            rows.append({
                "obs_key": f"{inst}{i}", "ts": ts, "obs_date": "2026-11-21", "kind": "activemq",
                "group_name": "g", "instance": inst, "reachable": c != "x",
                "active": {"M": True, "S": False, "x": None}[c], "role": {"M": "master", "S": "slave", "x": "unknown"}[c],
                "uptime_ms": 10_000_000 + i * 1000 if c != "x" else None,
                "total_enqueued": enq if c != "x" else None,
            })
    pdf = pd.DataFrame(rows)
    for c in BROKER_STATE.column_names:
        if c not in pdf:
            pdf[c] = None
    return spark.createDataFrame(pdf[BROKER_STATE.column_names], BROKER_STATE.spark_schema())


def windows(spark, seqs):
    from analysis.intervals import role_intervals

    st = state_frame(spark, seqs)
    return [r.asDict() for r in split_brain_windows(role_intervals(st), st).collect()]


def test_split_brain_certain_with_traffic(spark):
    (w,) = windows(spark, {"a": "MMMMMMSS", "b": "SSMMMMMM"})
    assert (w["instance_a"], w["instance_b"], w["certainty"]) == ("a", "b", "certain")
    assert w["certain_start"] == T0.replace(tzinfo=None) + timedelta(seconds=2)
    assert w["certain_end"] == T0.replace(tzinfo=None) + timedelta(seconds=5)
    assert w["duration_s"] == 3.0
    assert w["possible_start"] == T0.replace(tzinfo=None) + timedelta(seconds=1)
    assert w["possible_end"] == T0.replace(tzinfo=None) + timedelta(seconds=6)
    # counter growth on each side's active observations in the possible window [t1, t6]:
    # a 10 → 30 (t1..t5), b 5 → 25 (t2..t6); b's passive t1 does not count
    assert w["enqueued_a"] == 20 and w["enqueued_b"] == 20


def test_split_brain_across_a_gap_is_only_possible(spark):
    (w,) = windows(spark, {"a": "MMxxMMSS", "b": "SSSMMMMM"})
    assert w["certainty"] == "possible"


def test_clean_failover_is_not_split_brain(spark):
    assert windows(spark, {"a": "MMMxxxSS", "b": "SSSSMMMM"}) == []


def test_misconfigured_pair_is_a_group_check_finding(spark):
    from analysis.groups import ha_group_checks, identity_sightings

    st = state_frame(spark, {"a": "MMMM", "b": "MMMM", "c": "MMSS"})
    from pyspark.sql import functions as F

    st = st.withColumn("store", F.expr(
        "CASE instance WHEN 'a' THEN 'KahaDB[/data/a]' WHEN 'b' THEN 'KahaDB[/data/b]' ELSE 'KahaDB[/data/a]' END"))
    st = st.withColumn("group_name", F.expr(
        "CASE instance WHEN 'c' THEN 'other' ELSE 'g' END"))
    got = {r["check"]: r for r in ha_group_checks(identity_sightings(st).toArrow()).to_pylist()}
    assert set(got) == {"group-members-disagree", "identity-in-several-groups"}
    d = got["group-members-disagree"]
    assert (d["group_name"], d["instances"], d["identities"]) == ("g", "a, b", "KahaDB[/data/a], KahaDB[/data/b]")
    s = got["identity-in-several-groups"]
    assert (s["group_name"], s["instances"], s["identities"]) == ("g, other", "a, c", "KahaDB[/data/a]")


def test_derived_groups_reach_rows_that_cannot_name_theirs(spark):
    from pyspark.sql import functions as F

    from analysis.groups import fill_derived_groups

    # b: waiting slave (group falls back to 'b'), then master of store S, then unanswered
    st = state_frame(spark, {"b": "SSMMx"}).withColumn(
        "group_name", F.when(F.col("active"), F.lit("S")).otherwise(F.col("instance")))
    rows = sorted(fill_derived_groups(st, configured=set()).collect(), key=lambda r: r.ts)
    assert [r.group_name for r in rows] == ["S"] * 5
    kept = sorted(fill_derived_groups(st, configured={"b"}).collect(), key=lambda r: r.ts)
    assert [r.group_name for r in kept] == ["b", "b", "S", "S", "b"]
