"""Incidents (analysis/incidents.py): grouping and summaries on tiny evidence frames, the
evidence of tiny gold tables through Spark (a GC cause pulled into a split brain's incident; a clean
failover is no split-brain incident), and the real kill-master drill end to end: one incident with
the failover in it, told in plain words, with the same id after a `--full` rerun."""

import pandas as pd

from analysis.incidents import (EVIDENCE_COLUMNS, SOURCE_TABLES, assign_incidents, evidence, incident_tables,
                                summarize_incident)
from analysis.runs import contract_frame, stable_id
from lakehouse.store import Lakehouse
from lakehouse.tables import contract

T0 = pd.Timestamp("2026-11-22 02:13:00")


def at(s: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=s)


def ev(source_id, s, e=None, code="failover", severity="error", table="failover_events", cluster="g", advice=None,
       attach_to=None, confidence=None, is_open=False, message=None, instance="amq-a") -> dict:
    return {"source_table": table, "source_id": source_id, "code": code, "severity": severity, "group_name": cluster,
            "instance": instance, "start_ts": at(s), "end_ts": at(s if e is None else e),
            "message": message or f"{code} {source_id}", "cluster": cluster, "kind": "activemq", "advice": advice,
            "is_open": is_open, "headline": f"{code} in {cluster}", "attach_to": attach_to, "confidence": confidence}


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=EVIDENCE_COLUMNS)


def incident_of(assigned: pd.DataFrame) -> dict[str, str]:
    return dict(zip(assigned["source_id"], assigned["incident_id"]))


# --- grouping ---------------------------------------------------------------------------------------------------


def test_findings_close_in_time_form_one_incident():
    got = incident_of(assign_incidents(frame([ev("a", 0, 10), ev("b", 250, 260, code="unprotected-live", table="risk_findings"),
                                              ev("c", 1000)]), gap_s=300))
    assert got["a"] == got["b"] != got["c"]
    assert got["a"] == stable_id("g", "failover_events", "a")  # the cluster and its first finding
    assert got["c"] == stable_id("g", "failover_events", "c")


def test_a_long_finding_extends_the_incident():
    got = incident_of(assign_incidents(frame([ev("a", 0, 900, code="stale-backup", table="risk_findings"), ev("b", 1100)]), 300))
    assert got["a"] == got["b"]


def test_standing_conditions_do_not_glue_events_together():
    rows = [ev("cfg", 0, 5000, code="shutdown-on-failure-off", table="risk_findings"), ev("a", 100), ev("b", 3000)]
    got = incident_of(assign_incidents(frame(rows), 300))
    assert len({got["cfg"], got["a"], got["b"]}) == 3


def test_a_cause_joins_its_event_even_when_far_before_it():
    rows = [ev("a", 100), ev("gc1", 10, 31, code="gc.full", table="gc_findings", attach_to="a"),
            ev("c1", 10, code="gc.full", table="finding_causes", severity="info", attach_to="a", confidence="likely")]
    got = incident_of(assign_incidents(frame(rows), gap_s=30))
    assert got["gc1"] == got["c1"] == got["a"] == stable_id("g", "failover_events", "a")


def test_the_id_does_not_depend_on_the_row_order():
    rows = [ev("a", 0), ev("b", 60), ev("c", 61)]
    assert incident_of(assign_incidents(frame(rows), 300)) == incident_of(assign_incidents(frame(rows[::-1]), 300))


# --- summaries --------------------------------------------------------------------------------------------------


def test_summary_worst_severity_title_narrative_and_advice():
    rows = [ev("a", 30, message="failover amq-a → amq-b", advice="find out why"),
            ev("w", 32, 40, code="split-brain", severity="critical", table="split_brain_windows", message="SPLIT BRAIN",
               advice="stop one", is_open=True, instance="amq-a,amq-b"),
            ev("gc1", 10, 31, code="gc.full", table="gc_findings", attach_to="a", advice="find out why", message="bare gc"),
            ev("c1", 10, code="gc.full", table="finding_causes", severity="info", attach_to="a", confidence="likely",
               message="likely cause: amq-a paused 21.3 s")]
    a = assign_incidents(frame(rows), 300)
    row = summarize_incident(a).iloc[0]
    assert row["severity"] == "critical" and row["status"] == "open"
    assert row["title"] == "split-brain in g — likely cause: gc.full in g"
    assert row["narrative"].splitlines() == ["02:13:10.000  likely cause: amq-a paused 21.3 s",
                                             "02:13:30.000  failover amq-a → amq-b", "02:13:32.000  SPLIT BRAIN"]
    assert row["advice"] == "find out why\nstop one"
    assert row["instances"] == "amq-a,amq-b" and row["finding_count"] == 4
    assert row["has_split_brain"] and row["has_failover"]
    assert row["start_ts"] == at(10) and row["end_ts"] == at(40)


# --- evidence from gold tables (Spark) ---------------------------------------------------------------------------


def gold_frames(spark, **rows):
    return {t: spark.createDataFrame(contract_frame(rows.get(t, []), contract(t)), contract(t).spark_schema()) for t in SOURCE_TABLES}


FAILOVER = {"event_id": "ev1", "kind": "activemq", "group_name": "g", "event_type": "failover", "from_instance": "amq-a",
            "to_instance": "amq-b", "old_last_active": at(4), "old_first_unanswered": at(4.5), "new_first_active": at(7),
            "outage_upper_s": 3.0, "overlap": False}


def run(spark, gap_s=300, **rows):
    found, rows_ev = incident_tables(evidence(gold_frames(spark, **rows), {"amq-a": "activemq"}), gap_s)
    return found.to_dict("records"), rows_ev.to_dict("records")


def test_a_clean_failover_is_one_incident_without_split_brain(spark):
    (inc,), (e,) = run(spark, failover_events=[FAILOVER])
    assert inc["severity"] == "error" and not inc["has_split_brain"] and inc["has_failover"]
    assert inc["title"] == "failover amq-a → amq-b in g (outage ≤ 3.0 s)"
    assert inc["narrative"] == ("02:13:04.000  failover amq-a → amq-b: amq-a last seen active 02:13:04.0 (stopped answering "
                                "02:13:04.5), amq-b first seen active 02:13:07.0 (outage ≤ 3.0 s)")
    assert e["source_table"] == "failover_events" and e["incident_id"] == inc["incident_id"]


def test_a_gc_cause_joins_the_split_brain_incident(spark):
    window = {"window_id": "w1", "kind": "activemq", "group_name": "g", "instance_a": "amq-a", "instance_b": "amq-b",
              "certain_start": at(30), "certain_end": at(40), "possible_start": at(29), "possible_end": at(41),
              "certainty": "certain", "duration_s": 10.0, "enqueued_a": 3, "enqueued_b": 5}
    gc = {"finding_id": "gc1", "code": "gc.full", "severity": "warn", "target": "amq-a", "group_name": None, "ts": at(5),
          "file_id": "f", "event_seq": 1, "event_type": "full", "value": 21300.0, "unit": "ms", "message": "full GC 21.3 s",
          "advice": "find its cause"}
    cause = {"cause_id": "c1", "effect_table": "split_brain_windows", "effect_id": "w1", "cause_table": "gc_findings",
             "cause_id_ref": "gc1", "cause_code": "gc.full", "group_name": "g", "instance": "amq-a", "cause_ts": at(5),
             "effect_ts": at(30), "lead_s": 25.0, "confidence": "likely", "message": "amq-a paused 21.3 s in a full GC"}
    same_pause = gc | {"finding_id": "gc2", "code": "gc.pause-over-third-session", "severity": "error"}
    found, rows = run(spark, split_brain_windows=[window], gc_findings=[gc, same_pause], finding_causes=[cause])
    assert len(found) == 1
    inc = found[0]
    assert inc["cluster"] == "g" and inc["severity"] == "critical" and inc["has_split_brain"] and not inc["has_failover"]
    assert inc["title"] == "split brain in g (certain, 10.0 s) — likely cause: amq-a paused 21.3 s in a full GC"
    lines = inc["narrative"].splitlines()
    assert lines[0] == "02:13:05.000  likely cause: amq-a paused 21.3 s in a full GC" and "SPLIT BRAIN (certain)" in lines[1]
    assert "messages accepted: amq-a 3, amq-b 5" in lines[1] and len(lines) == 2  # the bare GC findings are told by the cause
    assert sorted(r["source_id"] for r in rows) == ["c1", "gc1", "gc2", "w1"]  # the pause's other finding too, untold


def test_info_findings_are_no_incidents(spark):
    stuck = {"finding_id": "s1", "code": "no-consumers", "severity": "info", "certainty": "certain", "kind": "artemis",
             "group_name": "g", "instance": "a", "destination": "DLQ", "start_ts": at(0), "end_ts": at(100), "is_open": False,
             "duration_s": 100.0, "message": "m", "advice": "a"}
    assert run(spark, stuck_messages=[stuck]) == ([], [])


# --- the real drill, end to end -----------------------------------------------------------------------------------


def test_drill_kill_master_is_one_incident_with_its_failover(analysed_kill_master, kill_master_rerun_in_full):
    # the recording replayed and analysed, then rerun with --full, once for the session (tests/conftest.py)
    counts = analysed_kill_master.counts
    lh = Lakehouse(analysed_kill_master.root)
    assert counts["incidents"] == 1 and counts["risk_findings"] == 0  # a clean failover: no risk state
    inc = lh.read("incidents").to_pylist()[0]
    assert inc["cluster"] == "store-1" and inc["kind"] == "activemq" and inc["status"] == "closed"
    assert inc["has_failover"] and not inc["has_split_brain"] and inc["severity"] == "error"
    assert inc["title"].startswith("failover amq-a → amq-b in store-1 (outage ≤ ")
    assert "amq-a last seen active" in inc["narrative"] and "amq-b first seen active" in inc["narrative"]
    assert "stopped answering" in inc["narrative"]
    assert "amq-a" in inc["advice"]
    evidence_rows = lh.read("incident_evidence").to_pylist()
    event = lh.read("failover_events").to_pylist()[0]
    assert [(r["source_table"], r["source_id"]) for r in evidence_rows] == [("failover_events", event["event_id"])]
    assert inc["incident_id"] == stable_id("store-1", "failover_events", event["event_id"])

    assert Lakehouse(kill_master_rerun_in_full.root).read("incidents").to_pylist() == [inc]  # stable across a full rerun


def test_timeline_prints_incidents_with_narrative_and_advice():
    import pyarrow as pa

    from brokerscope.timeline import render_incidents
    from lakehouse.tables import INCIDENTS

    assigned = assign_incidents(frame([ev("a", 0, 3, message="failover amq-a → amq-b", advice="find out why"),
                                       ev("b", 400, code="restart", severity="warn")]), 300)
    row = summarize_incident(assigned[assigned["source_id"] == "a"])
    table = pa.Table.from_pandas(row, schema=INCIDENTS.schema, preserve_index=False)
    text = render_incidents(table)
    assert text.splitlines()[1:] == [
        "=== incidents ===", "[ERROR] failover in g", "  2026-11-22 02:13:00 UTC, 3.00 s, closed, 1 finding(s) (incident "
        + row["incident_id"].iloc[0][:8] + ")", "  02:13:00.000  failover amq-a → amq-b", "  → find out why"]
    assert render_incidents(table, group="other") == ""
