"""Alert rules (alerts/rules.py): each built-in rule on tiny contract-shaped tables, the user
threshold rules with their config validation, and the enrichment (incident narrative, cause,
dashboard link). Pure: no lakehouse, no network."""

from datetime import datetime, timedelta, timezone

import pytest

from alerts.rules import evaluate, fingerprint, format_ts, rule_threshold
from lakehouse.store import conform_arrow
from lakehouse.tables import contract
from settings import ConfigError, config_from_dict
from settings.alerts import AlertsConfig

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


def ago(s: float) -> datetime:
    return NOW - timedelta(seconds=s)


def table(name: str, *rows: dict):
    return conform_arrow(contract(name), list(rows))


def run(tables: dict, live=None, **alerts_cfg):
    cfg = AlertsConfig.model_validate(alerts_cfg)
    ev = evaluate(cfg, tables, NOW, live)
    assert ev.errors == {}
    return ev.alerts


def names(alerts) -> list[str]:
    return sorted(a.alertname for a in alerts)


def state(instance, group, active, reachable=True, kind="activemq", s=1.0, role=None):
    return {"obs_key": f"k-{instance}-{s}", "ts": ago(s), "obs_date": "2026-11-22", "kind": kind, "group_name": group,
            "instance": instance, "reachable": reachable, "active": active,
            "role": role or ("master" if active else ("slave" if reachable else "unknown"))}


def bounds(start_s: float, end_s: float, is_open: bool) -> dict:
    return {"start_ts": ago(start_s), "end_ts": ago(end_s), "is_open": is_open, "duration_s": start_s - end_s,
            "end_upper": None if is_open else ago(end_s - 1)}


# --- identity ---------------------------------------------------------------------------------


def test_fingerprint_is_the_label_set():
    assert fingerprint({"a": "1", "b": "2"}) == fingerprint({"b": "2", "a": "1"})
    assert fingerprint({"a": "1"}) != fingerprint({"a": "1", "b": ""})
    assert len(fingerprint({"a": "1"})) == 16
    assert format_ts(None) == "0001-01-01T00:00:00Z"
    assert format_ts(NOW) == "2026-11-22T12:00:00.000Z"


# --- built-in rules -----------------------------------------------------------------------------


def split_brain_row(possible_end_s):
    return {"window_id": "w1", "kind": "activemq", "group_name": "store-1", "instance_a": "amq-a", "instance_b": "amq-b",
            "certain_start": ago(30), "certain_end": ago(20 if possible_end_s is None else possible_end_s + 1),
            "possible_start": ago(31), "possible_end": None if possible_end_s is None else ago(possible_end_s),
            "certainty": "certain", "duration_s": 10.0, "enqueued_a": 5, "enqueued_b": 7}


def test_split_brain_open_or_recent_window_is_critical():
    alerts = run({"split_brain_windows": table("split_brain_windows", split_brain_row(None))})
    assert names(alerts) == ["SplitBrain"]
    a = alerts[0]
    assert a.labels == {"alertname": "SplitBrain", "severity": "critical", "cluster": "store-1", "group": "store-1"}
    assert a.starts_at == ago(30) and "amq-a and amq-b" in a.annotations["summary"]
    assert run({"split_brain_windows": table("split_brain_windows", split_brain_row(60))})  # ended 1 min ago: held
    assert not run({"split_brain_windows": table("split_brain_windows", split_brain_row(3600))})


def test_split_brain_from_live_state_not_for_weblogic():
    live = table("broker_state", state("amq-a", "store-1", True), state("amq-b", "store-1", True))
    assert names(run({}, live)) == ["SplitBrain"]
    wls = table("broker_state", state("w1", "c", True, kind="weblogic"), state("w2", "c", True, kind="weblogic"))
    assert run({}, wls) == []
    # the same split brain from gold and live is one alert
    both = run({"split_brain_windows": table("split_brain_windows", split_brain_row(None))}, live)
    assert names(both) == ["SplitBrain"] and "split_brain_windows" in both[0].source


def test_live_split_brain_needs_overlapping_active_runs():
    """Latest rows come from different scrapes: amq-a last scraped active just before it was killed,
    amq-b active from the scrape after its takeover — both latest rows active, a clean failover."""
    rows = [state("amq-a", "store-1", True, s=20), state("amq-b", "store-1", False, s=19.5),
            state("amq-a", "store-1", True, s=10),  # amq-a's last answer, then the kill
            state("amq-b", "store-1", True, s=8), state("amq-b", "store-1", True, s=2)]
    assert run({}, table("broker_state", *rows)) == []
    # amq-a seen active again after amq-b's run began: the runs overlap, two masters
    alerts = run({}, table("broker_state", *rows, state("amq-a", "store-1", True, s=1)))
    assert names(alerts) == ["SplitBrain"] and alerts[0].starts_at == ago(8)
    # … unless amq-a was seen inactive (or restarted) in between: a new run, after amq-b's began
    back = [state("amq-a", "store-1", False, s=5), state("amq-a", "store-1", True, s=1)]
    assert run({}, table("broker_state", *rows, *back)) == []  # amq-b not seen active since
    alerts = run({}, table("broker_state", *rows, *back, state("amq-b", "store-1", True, s=0.5)))
    assert names(alerts) == ["SplitBrain"] and alerts[0].starts_at == ago(1)
    # the same from silver broker_state (no live rows passed in)
    assert run({"broker_state": table("broker_state", *rows)}) == []


def test_split_brain_overlap_has_one_implementation():
    from alerts import exporter, rules

    assert exporter.split_brain is rules.split_brain
    runs = rules.active_runs([
        {"instance": "a", "ts": ago(5), "active": True, "uptime_ms": 900},
        {"instance": "a", "ts": ago(4), "active": None},  # unanswered: the run stays open
        {"instance": "a", "ts": ago(3), "active": True, "uptime_ms": 1000},
        {"instance": "b", "ts": ago(4), "active": True, "uptime_ms": 5000},
        {"instance": "b", "ts": ago(2), "active": True, "uptime_ms": 100},  # uptime back: a new JVM
        {"instance": "c", "ts": ago(3), "active": True}, {"instance": "c", "ts": ago(1), "active": False}])
    assert runs == {"a": ago(5), "b": ago(2)}


def test_no_active_instance_from_live_state():
    down = table("broker_state", state("amq-a", "store-1", None, reachable=False), state("amq-b", "store-1", False))
    alerts = run({"role_intervals": table("role_intervals", {
        "interval_id": "i1", "kind": "activemq", "group_name": "store-1", "instance": "amq-a", "start_ts": ago(100),
        "end_ts": ago(5), "is_open": False, "observations": 10, "unanswered_inside": 0})}, down)
    assert names(alerts) == ["NoActiveInstance"]
    assert alerts[0].starts_at == ago(5)  # since the group was last seen active
    assert "amq-a not answering" in alerts[0].annotations["description"]
    ok = table("broker_state", state("amq-a", "store-1", False), state("amq-b", "store-1", True))
    assert run({}, ok) == []
    zk = table("broker_state", state("zk1", "zk", False, kind="zookeeper"))
    assert run({}, zk) == []
    # rows older than the lookback are not the live state
    stale = table("broker_state", state("amq-a", "store-1", False, s=3600))
    assert run({}, stale) == []


def failover_row(age_s: float, event_type="failover"):
    return {"event_id": f"e{age_s}", "kind": "activemq", "group_name": "store-1", "event_type": event_type,
            "from_instance": "amq-a", "to_instance": "amq-b", "old_last_active": ago(age_s + 1),
            "new_first_active": ago(age_s), "outage_upper_s": 1.0, "overlap": False}


def test_failover_fires_within_hold_then_resolves_itself():
    alerts = run({"failover_events": table("failover_events", failover_row(10))})
    assert names(alerts) == ["FailoverHappened"]
    assert alerts[0].labels["severity"] == "warning" and alerts[0].labels["broker"] == "amq-b"
    assert run({"failover_events": table("failover_events", failover_row(400))}) == []
    assert run({"failover_events": table("failover_events", failover_row(400))}, rules={"failover_hold": "10m"})
    assert run({"failover_events": table("failover_events", failover_row(10, "restart"))}) == []


def risk_row(code, is_open=True, severity="critical", instance="amq-a"):
    return {"finding_id": f"r-{code}", "code": code, "severity": severity, "certainty": "certain", "kind": "artemis",
            "group_name": "pair-1", "instance": instance, **bounds(120, 1, is_open),
            "message": f"{code} on {instance}", "advice": "add a backup"}


def test_risk_findings_while_open():
    t = {"risk_findings": table("risk_findings", risk_row("unprotected-live"), risk_row("stale-backup", severity="warn"),
                                risk_row("quorum-too-small", severity="warn", instance=None),
                                risk_row("quorum-lost-pair", is_open=False))}
    alerts = {a.alertname: a for a in run(t)}
    assert sorted(alerts) == ["QuorumAtRisk", "StaleBackup", "UnprotectedLive"]
    u = alerts["UnprotectedLive"]
    assert u.labels["severity"] == "critical" and u.labels["broker"] == "amq-a"
    assert u.annotations == {"summary": "unprotected-live on amq-a", "runbook": "add a backup"}
    assert alerts["StaleBackup"].labels["severity"] == "warning"
    assert "broker" not in alerts["QuorumAtRisk"].labels and "instance" not in alerts["QuorumAtRisk"].labels


def test_quorum_from_zookeeper_tables():
    q = lambda status, bare, is_open: {  # noqa: E731
        "interval_id": f"q-{status}", "ensemble": "zk-prod", "status": status, "start_ts": ago(30), "end_ts": ago(1),
        "rounds": 10, "voters": 3, "healthy_min": 2, "bare_majority": bare, "is_open": is_open}
    alerts = run({"zk_quorum": table("zk_quorum", q("lost", False, True))})
    assert names(alerts) == ["QuorumLost"] and alerts[0].labels["cluster"] == "zk-prod"
    assert names(run({"zk_quorum": table("zk_quorum", q("present", True, True))})) == ["QuorumAtRisk"]
    assert run({"zk_quorum": table("zk_quorum", q("lost", False, False), q("present", False, True))}) == []
    zf = lambda code, end_s: {  # noqa: E731
        "finding_id": f"z-{code}", "code": code, "severity": "warn", "ensemble": "zk-prod", "group_name": "pair-1",
        "instance": "amq-b", "start_ts": ago(end_s + 5), "end_ts": ago(end_s), "observations": 3, "message": code}
    alerts = run({"zk_findings": table("zk_findings", zf("zk.backup-stale", 10), zf("zk.bare-majority", 3600))})
    assert names(alerts) == ["StaleBackup"]  # the bare-majority finding is an hour old: not current


def stuck_row(severity="error", is_open=True, messages=12):
    return {"finding_id": "s1", "code": "no-consumers", "severity": severity, "certainty": "certain", "kind": "activemq",
            "group_name": "store-1", "instance": "amq-b", "destination": "orders", **bounds(300, 1, is_open),
            "messages": messages, "message": "12 messages on orders, no consumer for 5 min", "advice": "start a consumer"}


def test_stuck_messages():
    alerts = run({"stuck_messages": table("stuck_messages", stuck_row())})
    assert names(alerts) == ["StuckMessages"]
    assert alerts[0].labels["destination"] == "orders" and alerts[0].labels["severity"] == "error"
    assert run({"stuck_messages": table("stuck_messages", stuck_row(is_open=False))}) == []
    assert run({"stuck_messages": table("stuck_messages", stuck_row(severity="info"))}) == []
    assert run({"stuck_messages": table("stuck_messages", stuck_row(severity="info"))}, rules={"stuck_include_info": True})
    assert run({"stuck_messages": table("stuck_messages", stuck_row(messages=3))}, rules={"stuck_min_messages": 5}) == []


def repl_row(code, value, unit="s"):
    return {"finding_id": f"f-{code}", "code": code, "severity": "warn", "certainty": "certain", "kind": "kafka",
            "group_name": "dc1", "instance": "connect-1", "flow": "mirrormaker2", "topic": "orders", "partition": 0,
            **bounds(200, 1, True), "value_max": value, "value_last": value, "threshold": 60.0, "unit": unit,
            "message": f"{code} {value}", "advice": "scale the connector"}


def test_replication_lag_threshold_override():
    t = {"replication_findings": table("replication_findings", repl_row("replication-lag", 90.0),
                                       repl_row("under-replicated", 3, "partitions"))}
    alerts = {a.alertname: a for a in run(t)}
    assert sorted(alerts) == ["ReplicationLag", "ReplicationProblem"]
    assert alerts["ReplicationLag"].labels["topic"] == "orders" and alerts["ReplicationLag"].labels["partition"] == "0"
    assert alerts["ReplicationProblem"].labels["code"] == "under-replicated"
    assert names(run(t, rules={"replication_lag_s": 120})) == ["ReplicationProblem"]


def test_gc_pause_over_ha_threshold():
    gc = lambda code, age: {  # noqa: E731
        "finding_id": f"g-{code}-{age}", "code": code, "severity": "error", "target": "amq-a", "group_name": "store-1",
        "ts": ago(age), "file_id": "f", "value": 7000.0, "threshold": 6000.0, "unit": "ms",
        "message": "amq-a GC pause 7.0 s — over ⅓ of session-ms 18.0 s", "advice": "tune the heap"}
    alerts = run({"gc_findings": table("gc_findings", gc("gc.pause-over-third-session", 30), gc("gc.full", 30),
                                       gc("gc.pause-over-connection-ttl", 7200))})
    assert names(alerts) == ["GcPauseOverHaThreshold"]
    assert alerts[0].labels["broker"] == "amq-a" and alerts[0].labels["severity"] == "critical"


def health(target, s, answered):
    return {"obs_key": f"h-{target}-{s}", "ts": ago(s), "obs_date": "2026-11-22", "kind": "activemq", "target": target,
            "instance": target, "group_name": "store-1", "answered": answered, "items": 1, "items_ok": int(answered),
            "items_failed": 0, "error_kind": None if answered else "refused",
            "error": None if answered else "connection refused: is the broker running?"}


def test_collector_cannot_reach_target_after_unreachable_for():
    rows = [health("amq-a", 30, True)] + [health("amq-a", s, False) for s in (25, 20, 15, 10, 5)]
    alerts = run({"collector_health": table("collector_health", *rows)})
    assert names(alerts) == ["CollectorCannotReachTarget"]
    a = alerts[0]
    assert a.starts_at == ago(25) and "(refused)" in a.annotations["summary"]
    assert run({"collector_health": table("collector_health", *rows)}, rules={"unreachable_for": "30s"}) == []
    assert run({"collector_health": table("collector_health", *rows, health("amq-a", 1, True))}) == []


def kafka_answer(s, cluster, call, error=None, **where):
    return {"obs_key": f"k-{cluster}-{call}-{s}", "ts": ago(s), "obs_date": "2026-11-22", "replication": "orders-dr",
            "group_name": "kafka-primary", "cluster": cluster, "call": call, "fact": "answer", "answered": error is None,
            "error": error, "error_kind": None if error is None else "refused", **where}


def test_a_replication_cluster_the_kafka_protocol_reads_cannot_reach_alerts_too():
    refused = "orders-dr: dr (127.0.0.1:9093) refused the connection: is the cluster up?"
    rows = [kafka_answer(30, "dr", "committed"), kafka_answer(30, "primary", "groups")]
    for s in (25, 20, 15, 10, 5):
        rows += [kafka_answer(s, "dr", "checkpoints", f"not asked in this round: {refused}"),
                 kafka_answer(s, "dr", "committed", refused), kafka_answer(s, "primary", "groups"),
                 # a group's own error is no failed exchange of the cluster
                 kafka_answer(s, "primary", "committed", "group g is not a consumer group", consumer_group="g")]
    alerts = run({"kafka_offsets": table("kafka_offsets", *rows)})
    assert names(alerts) == ["CollectorCannotReachTarget"]
    a = alerts[0]
    assert a.labels["broker"] == "orders-dr/dr" and a.labels["group"] == "kafka-primary" and a.starts_at == ago(25)
    assert a.annotations["description"] == refused  # the failed call's error, not "not asked"
    assert run({"kafka_offsets": table("kafka_offsets", *rows, kafka_answer(1, "dr", "committed"))}) == []


def skewed(target, s, skew):
    return dict(health(target, s, True), clock_skew_s=skew)


def test_clock_skew_after_clock_skew_for_in_every_estimate():
    # amq-b's broker clock 3.4 s behind for the last 150 s (one estimate under the bar before that)
    rows = [skewed("amq-b", 200, -1.2)] + [skewed("amq-b", s, -3.4) for s in range(150, 0, -10)]
    rows += [skewed("amq-a", s, 0.04) for s in range(150, 0, -10)] + [health("amq-a", 1, True)]  # null: no estimate
    alerts = run({"collector_health": table("collector_health", *rows)})
    assert names(alerts) == ["ClockSkew"]
    a = alerts[0]
    assert a.labels["broker"] == "amq-b" and a.labels["severity"] == "warning" and a.starts_at == ago(150)
    assert "3.4 s behind brokerscope's" in a.annotations["summary"] and "NTP" in a.annotations["runbook"]
    assert run({"collector_health": table("collector_health", *rows)}, rules={"clock_skew_for": "3m"}) == []
    assert run({"collector_health": table("collector_health", *rows)}, rules={"clock_skew_s": 5}) == []
    # the latest estimate back under the bar resolves it
    assert run({"collector_health": table("collector_health", *rows, skewed("amq-b", 0.5, -0.1))}) == []


def test_disabled_rules_and_severity_override():
    t = {"failover_events": table("failover_events", failover_row(10)),
         "split_brain_windows": table("split_brain_windows", split_brain_row(None))}
    alerts = run(t, rules={"disabled": ["FailoverHappened"], "severity": {"SplitBrain": "error"}})
    assert names(alerts) == ["SplitBrain"] and alerts[0].labels["severity"] == "error"
    with pytest.raises(ConfigError, match=r"alerts\.rules\.disabled: .*unknown built-in rule\(s\) Nope"):
        config_from_dict({"alerts": {"rules": {"disabled": ["Nope"]}}})


def test_a_missing_table_is_no_alert_and_a_broken_rule_does_not_silence_the_others():
    assert run({}) == []
    cfg = AlertsConfig()
    broken = table("split_brain_windows", split_brain_row(None)).drop(["certain_end"])  # not the contract
    ev = evaluate(cfg, {"split_brain_windows": broken, "failover_events": table("failover_events", failover_row(5))}, NOW)
    assert list(ev.errors) == ["SplitBrain"] and "certain_end" in ev.errors["SplitBrain"]
    assert names(ev.alerts) == ["FailoverHappened"]


# --- threshold rules ---------------------------------------------------------------------------


def dest(instance, s, messages, destination="orders"):
    return {"obs_key": f"d-{instance}-{s}", "ts": ago(s), "obs_date": "2026-11-22", "kind": "activemq",
            "group_name": "store-1", "instance": instance, "destination": destination, "logical_destination": destination,
            "destination_type": "queue", "messages": messages}


def test_threshold_rule_with_for_and_labels_from_columns():
    cfg = AlertsConfig.model_validate({"threshold_rules": [{
        "name": "DeepQueue", "table": "destination_stats", "column": "messages", "op": ">", "threshold": 100,
        "for": "20s", "labels": ["instance", "destination"], "severity": "error",
        "summary": "{destination} on {instance} holds {value} messages (> {threshold})"}]})
    rule = cfg.threshold_rules[0]
    rows = table("destination_stats", dest("amq-a", 40, 50), dest("amq-a", 30, 150), dest("amq-a", 5, 170),
                 dest("amq-a", 5, 900, "audit"), dest("amq-b", 30, 500), dest("amq-b", 5, 10))
    alerts = rule_threshold(rule, rows, NOW, 600)
    assert len(alerts) == 1  # audit: above for only 0 s; amq-b: back under
    a = alerts[0]
    assert a.labels == {"alertname": "DeepQueue", "severity": "error", "instance": "amq-a", "destination": "orders"}
    assert a.starts_at == ago(30) and a.annotations["summary"] == "orders on amq-a holds 170 messages (> 100)"
    # through evaluate, with the live broker_state too
    ev = evaluate(cfg, {"destination_stats": rows}, NOW)
    assert [x.alertname for x in ev.alerts] == ["DeepQueue"]


def test_threshold_rule_over_live_broker_state():
    cfg = AlertsConfig.model_validate({"threshold_rules": [{
        "name": "ManyConnections", "table": "broker_state", "column": "connections", "op": ">=", "threshold": 10,
        "labels": ["instance"]}]})
    live = table("broker_state", dict(state("amq-a", "store-1", True), connections=12))
    ev = evaluate(cfg, {"broker_state": table("broker_state", dict(state("amq-a", "store-1", True, s=20), connections=1))},
                  NOW, live)
    assert [a.labels["instance"] for a in ev.alerts if a.alertname == "ManyConnections"] == ["amq-a"]


@pytest.mark.parametrize("rule, message", [
    ({"table": "destination_stat", "column": "messages"}, r"table 'destination_stat' is not a silver or gold table; use one of: .*destination_stats"),
    ({"table": "destination_stats", "column": "mesages"}, r"column: destination_stats has no column 'mesages'; its columns: .*messages"),
    ({"table": "destination_stats", "column": "messages", "labels": ["queue"]}, r"labels: destination_stats has no column 'queue'"),
    ({"table": "broker_state", "column": "role", "op": ">"}, r"op: role is string, not a number; only == and != apply"),
    ({"table": "bronze_jolokia", "column": "http_status"}, r"not a silver or gold table"),
    ({"table": "destination_stats", "column": "messages", "name": "SplitBrain"}, r"SplitBrain is a built-in rule"),
])
def test_threshold_rule_is_validated_against_the_contracts(rule, message):
    full = {"name": "R", "op": ">", "threshold": 1} | rule
    with pytest.raises(ConfigError, match=r"alerts\.threshold_rules\[0\].*" + message):
        config_from_dict({"alerts": {"threshold_rules": [full]}})


# --- enrichment ---------------------------------------------------------------------------------


def test_incident_narrative_cause_and_dashboard_link():
    tables = {
        "failover_events": table("failover_events", failover_row(10)),
        "incidents": table("incidents", {
            "incident_id": "inc-42", "cluster": "store-1", "kind": "activemq", "severity": "warn", "status": "open",
            "start_ts": ago(15), "end_ts": ago(9), "duration_s": 6.0, "title": "failover in store-1",
            "narrative": "amq-a paused 21 s in a full GC; amq-b took over.", "advice": "tune GC", "codes": "failover",
            "finding_count": 2, "has_split_brain": False, "has_failover": True}),
        "finding_causes": table("finding_causes", {
            "cause_id": "c1", "effect_table": "failover_events", "effect_id": "e10", "cause_table": "gc_findings",
            "cause_id_ref": "g1", "cause_code": "gc.full", "group_name": "store-1", "cause_ts": ago(12),
            "effect_ts": ago(10), "lead_s": 2.0, "confidence": "likely", "message": "amq-a paused 21 s in a full GC"}),
    }
    [a] = run(tables, dashboard_url="https://dash.example/bs/")
    assert a.annotations["dashboard"] == "https://dash.example/bs/incident/inc-42"
    assert a.annotations["narrative"].startswith("amq-a paused 21 s")
    assert a.annotations["cause"] == "amq-a paused 21 s in a full GC"
    [b] = run({"failover_events": table("failover_events", failover_row(10))}, dashboard_url="https://dash.example")
    assert b.annotations["dashboard"] == "https://dash.example" and "narrative" not in b.annotations
