"""The Prometheus exporter on real data: a recorded kill-master drill fed scrape by scrape through
the service's fast path, the same rows stored as Delta tables, and the naming/cardinality rules.
(promtool and a real Prometheus: tests/test_prometheus_live.py.)"""

from __future__ import annotations

import platform
import re
from datetime import datetime, timedelta, timezone
from importlib.metadata import version
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from alerts.exporter import (
    METRICS,
    OTHER,
    LakehouseState,
    LatestState,
    SnapshotCollector,
    StateSnapshot,
    metric_families,
    metrics_table_markdown,
    split_brain,
)
from brokerscope.service import TickStats, observation_rows, service_values, state_change
from collectors.base import collector_health_row
from collectors.recording import observation_from_envelope, read_envelopes
from lakehouse.store import Lakehouse
from lakehouse.tables import contract
from settings import ConfigError, config_from_dict, load_config
from settings.service import parse_listen

FIX = Path(__file__).parent / "fixtures"
UTC = timezone.utc
T0 = datetime(2026, 11, 22, 0, 5, 56, tzinfo=UTC)


def drill_envelopes() -> tuple[dict, list[dict]]:
    cfg = load_config(FIX / "drill_kill_master.yaml")
    envs = sorted(read_envelopes(FIX / "drill_kill_master.jsonl.gz"), key=lambda e: e["ts"])
    return {t.name: t for t in cfg.targets}, envs


def samples(fams, name: str) -> dict[tuple, float]:
    """{sorted label items: value} of one metric's samples."""
    out = {}
    for f in fams:
        for s in f.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def value(fams, name: str, **labels) -> float | None:
    return samples(fams, name).get(tuple(sorted(labels.items())))


def test_recorded_failover_through_the_live_state():
    """Scrape by scrape, as `brokerscope run` sees them: master, then no active instance once the
    killed master stops answering, then the slave as master; never split brain."""
    targets, envs = drill_envelopes()
    live = LatestState({"store-1"})
    seen = []
    lines = []
    for env in envs:
        rows = observation_rows(env, targets[env["target"]])
        prev = live.latest(env["target"])
        live.observe(rows.broker_state, rows.destination_stats, rows.replication_stats)
        lines.append(state_change(prev, live.latest(env["target"])))
        fams = metric_families(live.fill(StateSnapshot()))
        g = {"group": "store-1", "kind": "activemq"}
        seen.append((value(fams, "brokerscope_group_no_active_instance", **g), value(fams, "brokerscope_group_split_brain", **g)))
    states = [s for s, _ in seen]
    assert states[0] == 0 and states[-1] == 0
    assert 1 in states, "the window after the kill, with amq-a not answering and amq-b still slave"
    first_outage = states.index(1)
    assert states[first_outage:].index(0) > 0  # back to an active instance only later
    assert {sb for _, sb in seen} == {0}
    said = [x for x in lines if x]
    assert said[0] == "amq-a is master in group store-1"
    assert any(x.startswith("amq-a not answering: amq-a: connection refused") for x in said)
    assert "amq-b is master (was slave) in group store-1" in said

    fams = metric_families(live.fill(StateSnapshot()))
    inst = {"group": "store-1", "broker": "amq-b", "kind": "activemq"}
    assert value(fams, "brokerscope_instance_active", **inst) == 1
    assert value(fams, "brokerscope_instance_role", role="master", **inst) == 1
    assert value(fams, "brokerscope_instance_role", role="slave", group="store-1", broker="amq-a", kind="activemq") == 1
    assert value(fams, "brokerscope_destination_messages", destination="BROKERSCOPE.LAB", type="queue", **inst) == 30


def drill_live_state(until=lambda env: False) -> LatestState:
    """The recorded drill fed into a LatestState, up to the first envelope for which `until` holds."""
    targets, envs = drill_envelopes()
    live = LatestState({"store-1"})
    for env in envs:
        rows = observation_rows(env, targets[env["target"]])
        live.observe(rows.broker_state, rows.destination_stats, rows.replication_stats)
        if until(env):
            break
    return live


def test_unanswered_scrape_makes_state_unknown_not_inactive():
    live = drill_live_state(until=lambda env: env["target"] == "amq-a" and env["error"])
    fams = metric_families(live.fill(StateSnapshot()))
    a = {"group": "store-1", "broker": "amq-a", "kind": "activemq"}
    assert value(fams, "brokerscope_instance_reachable", **a) == 0
    assert value(fams, "brokerscope_instance_active", **a) is None  # absent: unknown, never "down"
    assert value(fams, "brokerscope_group_unknown_instances", group="store-1", kind="activemq") == 1
    assert not [k for k in samples(fams, "brokerscope_destination_messages") if ("broker", "amq-a") in k]


def row(instance: str, ts: datetime, active: bool | None, group: str = "g", uptime_ms: int | None = None) -> dict:
    return {"instance": instance, "group_name": group, "kind": "activemq", "ts": ts, "reachable": active is not None,
            "active": active, "role": {True: "master", False: "slave", None: "unknown"}[active], "uptime_ms": uptime_ms}


def test_split_brain_needs_overlapping_observations():
    s = lambda sec: T0 + timedelta(seconds=sec)  # noqa: E731
    live = LatestState({"g"})
    live.observe([row("a", s(0), True), row("b", s(0.5), False)])
    live.observe([row("a", s(1), True)])  # a last scraped before b took over …
    live.observe([row("b", s(1.5), True)])  # … and b active after: a hand-over, not two masters
    snap = live.fill(StateSnapshot())
    active = [r for r in snap.instances if r["active"]]
    assert len(active) == 2 and not split_brain(active, snap.active_since)
    live.observe([row("a", s(2), True)])  # a still active after b began: both masters at once
    snap = live.fill(StateSnapshot())
    assert split_brain([r for r in snap.instances if r["active"]], snap.active_since)
    assert value(metric_families(snap), "brokerscope_group_split_brain", group="g", kind="activemq") == 1


def test_unanswered_scrape_keeps_the_active_run_and_a_restart_ends_it():
    s = lambda sec: T0 + timedelta(seconds=sec)  # noqa: E731
    live = LatestState({"g"})
    live.observe([row("a", s(0), True, uptime_ms=5000)])
    live.observe([row("a", s(1), None)])
    live.observe([row("a", s(2), True, uptime_ms=7000)])
    assert live.fill(StateSnapshot()).active_since["a"] == s(0)
    live.observe([row("a", s(3), True, uptime_ms=100)])  # uptime went back: a new JVM
    assert live.fill(StateSnapshot()).active_since["a"] == s(3)
    live.observe([row("a", s(2.5), False)])  # older than what is stored: ignored
    assert live.latest("a")["ts"] == s(3)


def test_waiting_slave_takes_the_group_its_instance_derived():
    """No `group` configured: an ActiveMQ master's group is its store; the waiting slave's rows
    carry only the instance name, and get the store the instance last served (fill_derived_groups)."""
    live = LatestState()
    live.observe([row("a", T0, True, group="KahaDB[/data]")])
    live.observe([row("a", T0 + timedelta(seconds=1), False, group="a")])
    assert live.latest("a")["group_name"] == "KahaDB[/data]"
    live.observe([row("b", T0, False, group="b")])  # never derived one: stays on its own
    assert live.latest("b")["group_name"] == "b"
    assert live.broker_state().schema == contract("broker_state").schema


def dest(name: str, messages: int, age_ms: int | None = None, instance: str = "a") -> dict:
    return {"group_name": "g", "instance": instance, "kind": "artemis", "destination": name, "destination_type": "queue",
            "messages": messages, "consumers": 1, "oldest_message_age_ms": age_ms}


def test_destination_series_are_capped_with_an_other_bucket():
    rows = [dest(f"q{i:02d}", i, age_ms=1000 * i) for i in range(60)] + [dest("tiny-but-old", 0, age_ms=10**7)]
    snap = StateSnapshot(destinations=rows)
    fams = metric_families(snap, max_destination_series=50)
    msgs = samples(fams, "brokerscope_destination_messages")
    assert len(msgs) == 51
    other = {"group": "g", "broker": "a", "kind": "artemis", "destination": OTHER, "type": ""}
    assert value(fams, "brokerscope_destination_messages", **other) == sum(range(10))  # q00..q09 summed
    assert value(fams, "brokerscope_destination_oldest_message_age_seconds", **other) == 10**4  # the largest age
    kept = {dict(k)["destination"] for k in msgs}
    assert kept == {dict(k)["destination"] for k in samples(fams, "brokerscope_destination_consumers")}  # one choice for all
    assert value(fams, "brokerscope_exporter_folded_series", metric="brokerscope_destination_messages") == 11


def test_cap_is_configurable_and_must_be_positive():
    fams = metric_families(StateSnapshot(destinations=[dest(f"q{i}", i) for i in range(5)]), max_destination_series=2)
    assert len(samples(fams, "brokerscope_destination_messages")) == 3
    with pytest.raises(ValueError, match="max_destination_series must be at least 1"):
        SnapshotCollector(StateSnapshot, max_destination_series=0)
    with pytest.raises(ConfigError, match=r"service\.max_destination_series"):
        config_from_dict({"service": {"max_destination_series": 0}})


def test_names_and_labels_follow_prometheus_conventions():
    # one label names a monitored JVM everywhere: `broker` (README, 'Running it: alerts, metrics, dashboard');
    # never `target` (the config's word) nor `instance` (Prometheus sets it to the exporter's address)
    bounded = {"group", "broker", "server", "kind", "role", "ensemble", "status", "state", "code", "severity",
               "flow", "source_cluster", "target_cluster", "metric", "version", "python_version"}
    capped = {"destination", "type", "topic", "partition", "client"}  # folded into `other` beyond the cap
    for name, (kind, labels, help_text) in METRICS.items():
        assert re.fullmatch(r"brokerscope_[a-z0-9_]+", name), name
        assert name.endswith("_total") == (kind == "counter"), name
        assert not re.search(r"_(ms|millis|milliseconds|minutes)(_|$)", name), f"{name}: base units are seconds"
        assert set(labels) <= bounded | capped, name
        assert help_text and "\n" not in help_text
    table = metrics_table_markdown()
    assert all(f"`{n}`" in table for n in METRICS)
    doc = Path(__file__).resolve().parents[1] / "docs" / "ALERTS.md"
    assert table in doc.read_text(), "docs/ALERTS.md's metric table is generated: paste metrics_table_markdown()"


def test_every_emitted_family_is_documented():
    snap = drill_live_state().fill(StateSnapshot())
    snap.scrapes = [{"target": "amq-a", "kind": "activemq", "group": "store-1", "scrapes": 19, "errors": 6,
                     "last_ok": 1.8e9, "last_elapsed_ms": 4.2, "up": True}]
    snap.zk_quorum = [{"ensemble": "zk", "status": "election", "voters": 3, "bare_majority": True}]
    snap.gc_pauses = [{"target": "amq-a", "group_name": "store-1", "count": 4, "sum_ms": 120.0, "max_recent_ms": 80.0}]
    snap.service = service_values(TickStats(runs=3), TickStats(runs=1, last_duration_s=12.5), True, True)
    fams = metric_families(snap)
    for f in fams:
        assert f.name in METRICS or f"{f.name}_total" in METRICS, f.name
    text = generate_latest(_registry(snap)).decode()
    assert 'brokerscope_zookeeper_quorum{ensemble="zk",status="election"} 1.0' in text
    assert 'brokerscope_zookeeper_quorum{ensemble="zk",status="present"} 0.0' in text
    assert 'brokerscope_gc_pause_seconds_sum{broker="amq-a",group="store-1"} 0.12' in text
    assert f'brokerscope_build_info{{python_version="{platform.python_version()}",version="{version("brokerscope")}"}} 1.0' in text
    assert "brokerscope_scrape_errors_total" in text and "brokerscope_alert_evaluations_total 3.0" in text


def _registry(snap: StateSnapshot) -> CollectorRegistry:
    reg = CollectorRegistry()
    reg.register(SnapshotCollector(lambda: snap))
    return reg


def test_a_failing_state_read_leaves_metrics_up():
    def broken() -> StateSnapshot:
        raise OSError("lakehouse unreachable")

    reg = CollectorRegistry()
    reg.register(SnapshotCollector(broken))
    assert generate_latest(reg) == b""


def test_lakehouse_state_from_stored_silver_and_gold(tmp_path):
    """The same drill as stored tables: /metrics without a running service."""
    lh = drill_lakehouse(tmp_path / "lh")
    snap = LakehouseState(lh, clock=lambda: T0 + timedelta(minutes=1))()
    fams = metric_families(snap)
    g = {"group": "store-1", "kind": "activemq"}
    assert value(fams, "brokerscope_group_active_instances", **g) == 1
    assert value(fams, "brokerscope_group_split_brain", **g) == 0
    assert value(fams, "brokerscope_group_failovers_total", **g) == 1
    assert value(fams, "brokerscope_group_last_failover_outage_seconds", **g) == 1.5
    b = {"group": "store-1", "broker": "amq-b", "kind": "activemq"}
    assert value(fams, "brokerscope_instance_role", role="master", **b) == 1
    assert value(fams, "brokerscope_destination_messages", destination="BROKERSCOPE.LAB", type="queue", **b) == 30
    assert value(fams, "brokerscope_stuck_messages", destination="BROKERSCOPE.LAB", code="no-consumers", severity="error", **b) == 30
    assert value(fams, "brokerscope_stuck_age_seconds", destination="BROKERSCOPE.LAB", code="no-consumers", severity="error", **b) == 9
    assert value(fams, "brokerscope_scrape_errors_total", broker="amq-a", kind="activemq", group="store-1") == 6
    assert value(fams, "brokerscope_target_clock_skew_seconds", broker="amq-b", kind="activemq", group="store-1") == -3.25
    assert [dict(k)["broker"] for k in samples(fams, "brokerscope_target_clock_skew_seconds")] == ["amq-b"]  # no estimate: no sample
    # a day later nothing recent is left in silver: no stale instance state is shown as current
    later = metric_families(LakehouseState(lh, clock=lambda: T0 + timedelta(days=3))())
    assert not samples(later, "brokerscope_instance_active")


def drill_lakehouse(path: Path) -> Lakehouse:
    """The recorded drill as silver tables (rows from the same packs the Spark job runs), plus a
    gold failover and an open stuck-messages finding."""
    targets, envs = drill_envelopes()
    lh = Lakehouse(path)
    state, dests, health = [], [], []
    for env in envs:
        rows = observation_rows(env, targets[env["target"]])
        state += rows.broker_state
        dests += rows.destination_stats
        t = targets[env["target"]]
        health.append(collector_health_row(observation_from_envelope(env, t.kind, t.group), rows.broker_state[0]["obs_key"], None))
        if env["target"] == "amq-b":  # as the spine estimates it (analysis/clock_skew.py clock_skews)
            health[-1]["clock_skew_s"] = -3.25
    lh.append("broker_state", state)
    lh.append("destination_stats", dests)
    lh.append("collector_health", health)
    failover = {c: None for c in contract("failover_events").column_names}
    failover.update(event_id="e1", kind="activemq", group_name="store-1", event_type="failover", from_instance="amq-a",
                    to_instance="amq-b", old_last_active=T0 + timedelta(seconds=3), new_first_active=T0 + timedelta(seconds=4.5),
                    outage_upper_s=1.5, overlap=False)
    lh.append("failover_events", [failover])
    stuck = {c: None for c in contract("stuck_messages").column_names}
    stuck.update(finding_id="s1", code="no-consumers", severity="error", certainty="certain", kind="activemq", group_name="store-1",
                 instance="amq-b", destination="BROKERSCOPE.LAB", start_ts=T0, end_ts=T0 + timedelta(seconds=9), is_open=True,
                 duration_s=9.0, stuck_for_s=9.0, messages=30, message="30 messages without consumer", advice="start a consumer")
    lh.append("stuck_messages", [stuck])
    return lh


def test_listen_address_defaults_to_loopback_and_errors_say_what_to_write():
    assert parse_listen("9464") == ("127.0.0.1", 9464)
    assert parse_listen("0.0.0.0:9100") == ("0.0.0.0", 9100)
    assert parse_listen("[::1]:0") == ("::1", 0)
    assert config_from_dict({}).service.metrics_listen.startswith("127.0.0.1:")
    with pytest.raises(ConfigError, match=r"service\.metrics_listen: 'localhost' is not host:port; write e\.g\. 127\.0\.0\.1:9464"):
        config_from_dict({"service": {"metrics_listen": "localhost"}})
    with pytest.raises(ConfigError, match=r"service\.analysis_interval: .*not a duration"):
        config_from_dict({"service": {"analysis_interval": "often"}})


def test_a_taken_port_is_refused_with_the_key_to_change():
    import socket

    from alerts.metrics_server import MetricsListenError, serve_metrics

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(MetricsListenError, match=rf"cannot serve /metrics on 127\.0\.0\.1:{port}: .*service\.metrics_listen"):
            serve_metrics(StateSnapshot, f"127.0.0.1:{port}")


def test_metrics_only_on_metrics_with_health_and_readiness_paths():
    import urllib.error
    import urllib.request

    from alerts.metrics_server import serve_metrics

    def get(url: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    readable = {"yes": True}

    def snapshot() -> StateSnapshot:
        if not readable["yes"]:
            raise OSError("lakehouse unreachable")
        return StateSnapshot()

    srv = serve_metrics(snapshot, "127.0.0.1:0")
    try:
        status, body = get(srv.url)
        assert srv.url.endswith("/metrics") and status == 200 and "brokerscope_build_info{" in body
        assert get(srv.base_url + "/-/healthy") == (200, "brokerscope is Healthy.\n")
        assert get(srv.base_url + "/-/ready") == (200, "brokerscope is Ready.\n")
        for path in ("/", "/metricsx", "/favicon.ico", "/-/reload"):
            status, body = get(srv.base_url + path)
            assert status == 404 and "brokerscope_" not in body and "metrics are on /metrics" in body, path
        readable["yes"] = False
        assert get(srv.base_url + "/-/ready")[0] == 503
        assert get(srv.base_url + "/-/healthy")[0] == 200  # alive, only not ready
    finally:
        srv.stop()


def test_finding_counters_only_go_up_while_gold_is_rewritten():
    """A counter counts distinct findings seen by the collector: a finding dropped from gold (a
    merge, a re-analysis, a dropped partition) stays counted; a new one adds one; the same one
    twice counts once."""
    def gc(fid: str, target: str = "amq-a") -> dict:
        return {"finding_id": fid, "target": target, "group_name": "store-1", "code": "gc.full", "severity": "warn"}

    def fo(eid: str) -> dict:
        return {"event_id": eid, "group_name": "store-1", "kind": "activemq", "event_type": "failover",
                "new_first_active": T0, "outage_upper_s": 1.0}

    snaps = [StateSnapshot(gc_findings=[gc("f1"), gc("f2")], failovers=[fo("e1")]),
             StateSnapshot(gc_findings=[gc("f2")], failovers=[]),  # rows gone from gold
             StateSnapshot(gc_findings=[gc("f2"), gc("f3"), gc("f3"), gc("f9", "amq-b")], failovers=[fo("e1"), fo("e2")])]
    reg, it = CollectorRegistry(), iter(snaps)
    reg.register(SnapshotCollector(lambda: next(it)))
    gc_a = {"broker": "amq-a", "group": "store-1", "code": "gc.full", "severity": "warn"}
    got = []
    for _ in snaps:
        text = generate_latest(reg).decode()
        fams = list(text_string_to_metric_families(text))
        got.append((value(fams, "brokerscope_gc_findings_total", **gc_a),
                    value(fams, "brokerscope_group_failovers_total", group="store-1", kind="activemq")))
    assert got == [(2, 1), (2, 1), (3, 2)]
    assert value(fams, "brokerscope_gc_findings_total", broker="amq-b", group="store-1", code="gc.full", severity="warn") == 1
    # without a long-lived collector (one-shot use) the count is what the snapshot holds
    assert value(metric_families(snaps[1]), "brokerscope_gc_findings_total", **gc_a) == 1
