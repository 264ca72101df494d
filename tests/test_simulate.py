"""The scenario generator (brokerscope/simulate), without Spark: determinism, every simulated
exchange read by the real packs / ZooKeeper parser / GC parser, truth consistent with the model,
the scoring arithmetic on hand-made gold rows, and the CLI."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from brokerscope.cli import main
from brokerscope.simulate import SCENARIOS, ScenarioError, Spec, build
from brokerscope.simulate.jolokia import Jolokia1, Jolokia2, MBean, Throws, answer
from brokerscope.simulate.model import within
from brokerscope.simulate.render import envelopes, gc_envelopes, merged_config, write_scenario, write_suite
from brokerscope.simulate.scenarios import T0, suite
from brokerscope.simulate.score import TypeScore, match, score
from collectors.base import parse_ts, scrape_requests
from collectors.gc.parser import parse_lines
from collectors.packs import PACKS
from collectors.recording import observation_from_envelope, read_envelopes, validate_envelope
from collectors.zookeeper.parse import coordination_rows, server_state_row
from settings import config_from_dict

INTERVAL, DURATION = 1.0, 30.0
CASES = [(name, kind) for name, e in SCENARIOS.items() for kind in e.kinds]


def scenario(name: str, kind: str, seed: int = 1, **kw):
    return build(name, Spec(kind, seed, INTERVAL, DURATION, **kw))


def t(iso: str) -> datetime:
    return parse_ts(iso)


def rows_of(sc) -> dict[str, list[dict]]:
    """broker_state rows per target, from every Jolokia envelope read by the kind's real pack."""
    out: dict[str, list[dict]] = {}
    for env in envelopes(sc):
        if env["source"] != "jolokia":
            continue
        m = next(x for x in sc.members if x.name == env["target"])
        rows = PACKS[m.kind].normalize(observation_from_envelope(env, m.kind, m.group), "k")
        out.setdefault(m.name, []).extend(rows.broker_state)
    return out


# --- determinism -----------------------------------------------------------------------------------


def test_same_seed_same_bytes_other_seed_other_fault_times(tmp_path):
    write_scenario(scenario("split-brain", "artemis"), tmp_path / "a")
    write_scenario(scenario("split-brain", "artemis"), tmp_path / "b")
    for f in ("recording.jsonl.gz", "truth.json", "brokerscope.yaml"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    other = scenario("split-brain", "artemis", seed=2).truth["split_brain"][0]["start"]
    assert other != scenario("split-brain", "artemis").truth["split_brain"][0]["start"]


# --- every exchange goes through the real code ------------------------------------------------------


@pytest.mark.parametrize("name,kind,jolokia", [(n, k, 2) for n, k in CASES] + [
    ("failback", "activemq", 1), ("gc-failover", "artemis", 1), ("lag-spike", "kafka", 1), ("stuck-member", "weblogic", 1)])
def test_every_exchange_is_a_valid_envelope_the_pack_reads(name, kind, jolokia):
    sc = scenario(name, kind, jolokia=jolokia)
    envs = envelopes(sc)
    assert envs == sorted(envs, key=lambda e: (e["ts"], e["source"], e["target"]))
    for env in envs:
        assert validate_envelope(env) is None
        if env["source"] == "jolokia":
            assert env["request"] == scrape_requests(PACKS[kind])  # exactly what the collector sends
    rows = rows_of(sc)
    assert set(rows) == {m.name for m in sc.members}
    for m in sc.members:
        for r in rows[m.name]:
            true_t = (r["ts"] - timedelta(seconds=m.skew_s) - T0).total_seconds()
            if r["reachable"]:
                assert r["active"] is m.is_active(true_t), (m.name, r["ts"], r["role"], r["error"])
            else:  # no answer only while the process is down (refused) or frozen (timeout)
                assert r["active"] is None and (within(m.down, true_t) or within(m.frozen, true_t)), (m.name, r["ts"])


def test_passive_backup_answers_404_for_queues_and_the_slave_throws_not_started():
    sc = scenario("clean-failover", "artemis")
    backup = next(e for e in envelopes(sc) if e["target"] == "art-b")
    queues = backup["response"][-1]
    assert queues["status"] == 404 and queues["error_type"] == "javax.management.InstanceNotFoundException"
    assert "found for READ request" in queues["error"]
    sc = build("clean-failover", Spec("activemq", 1, INTERVAL, DURATION))
    slave = next(e for e in envelopes(sc) if e["target"] == "amq-b")
    (totals,) = slave["response"][1]["value"].values()
    assert totals["BrokerId"] == {".error": True, "error_type": "javax.management.RuntimeMBeanException",
                                  "error_type_jmx": "javax.management.RuntimeMBeanException",
                                  "error": "java.lang.IllegalStateException: Broker is not yet started."}
    assert isinstance(totals["UptimeMillis"], int)  # answered by a waiting slave (real capture)


def test_agent_follows_jolokia_read_rules():
    ts = datetime(2026, 11, 23, tzinfo=timezone.utc)
    reg = [MBean("d", [("type", "B"), ("name", '"x"')], {"A": 1, "S": Throws("not started")})]
    one = answer(Jolokia1(), {"type": "read", "mbean": "d:type=B,name=*", "attribute": ["A", "Z"]}, reg, ts)
    assert one["value"] == {'d:name="x",type=B': {"A": 1}} and one["timestamp"] == int(ts.timestamp())
    assert one["request"]["mbean"] == "d:name=*,type=B"  # 1.x echoes the canonical name
    failed = answer(Jolokia2(), {"type": "read", "mbean": "d:type=B,name=*", "attribute": "S"}, reg, ts)
    assert (failed["status"], failed["error"]) == (500, "not started")
    assert failed["request"]["mbean"] == "d:name=*,type=B"  # 2.x too echoes a pattern canonical …
    named = answer(Jolokia2(), {"type": "read", "mbean": 'd:type=B,name="x"', "attribute": "A"}, reg, ts)
    assert named["request"]["mbean"] == 'd:type=B,name="x"' and named["value"] == 1  # … and a name as sent
    marked = answer(Jolokia1(), {"type": "read", "mbean": "d:type=B,name=*", "attribute": ["S"],
                                 "config": {"ignoreErrors": True}}, reg, ts)
    assert list(marked["value"].values())[0]["S"].startswith("ERROR: java.lang.IllegalStateException: not started")
    none = answer(Jolokia2(), {"type": "read", "mbean": "d:type=C,*", "attribute": "A"}, reg, ts)
    assert none["status"] == 404 and "No MBean with pattern d:type=C,*" in none["error"]
    with pytest.raises(ValueError, match="only read requests"):
        answer(Jolokia2(), {"type": "exec", "mbean": "d:type=B"}, reg, ts)


def test_zookeeper_answers_parse_and_the_snapshot_carries_the_committed_sequence():
    sc = scenario("stale-backup", "artemis")
    envs = envelopes(sc)
    zk1 = [e for e in envs if e["target"] == "zk1" and e["source"] == "zk.4lw"][:2]
    row = server_state_row(zk1, {"target": "zk1"})
    assert (row["state"], row["serving"], row["metrics_source"], row["reachable"]) == ("leader", True, "4lw", True)
    snaps = [e for e in envs if e["source"] == "zk.znode"]
    assert len(snaps) == sc.ticks()
    when = t(sc.truth["stale_backups"][0]["start"])
    seqs = {parse_ts(e["ts"]) >= when: coordination_rows(e, {"target": "zk1"})[0]["committed_sequence"] for e in snaps}
    assert seqs == {False: 7, True: 8}
    backup = [r for r in rows_of(sc)["art-b"] if r["reachable"]]
    assert {r["activation_sequence"] for r in backup} == {7}  # stale: behind ZooKeeper's 8


def test_gc_log_parses_with_the_real_parser_and_shows_the_pause_that_caused_the_failover():
    sc = scenario("gc-failover", "artemis")
    lines = [ln for e in gc_envelopes(sc) if e["target"] == "art-a" for ln in e["lines"]]
    events, stats = parse_lines(lines)
    assert stats.lines_unknown == 0 and stats.incomplete_events == 0
    (full,) = [e for e in events if e.event_type == "full"]
    truth = sc.truth["gc_pauses"][0]
    assert full.wall_time == t(truth["start"]) and full.pause_ms == truth["ms"]
    takeover = t(sc.truth["failovers"][0]["new_live_active"])
    assert full.wall_time < takeover < full.wall_time + timedelta(milliseconds=full.pause_ms)
    assert all(e.pause_ms < 100 for e in events if e.event_type == "young")


# --- truth consistency ------------------------------------------------------------------------------


@pytest.mark.parametrize("name,kind", CASES)
def test_truth_is_consistent_with_the_model(name, kind):
    sc = scenario(name, kind)
    tr = sc.truth
    start, end = T0, T0 + timedelta(seconds=DURATION)
    names = {m.name for m in sc.members + sc.zookeeper}
    assert set(tr["targets"]) == names
    for f in tr["failovers"]:
        lost, active = t(f["old_live_lost"]), t(f["new_live_active"])
        assert start < lost < active < end and {f["from"], f["to"]} <= names
        new = next(m for m in sc.members if m.name == f["to"])
        assert new.is_active((active - T0).total_seconds()) and not new.is_active((active - T0).total_seconds() - 0.01)
    for w in tr["split_brain"]:
        a, b = (next(m for m in sc.members if m.name == n) for n in w["instances"])
        mid = ((t(w["start"]) - T0) + (t(w["end"]) - T0)).total_seconds() / 2
        assert a.is_active(mid) and b.is_active(mid)
    if name == "clean-failover":  # nothing else happens: at most one instance active at any time
        for step in range(int(DURATION * 100)):
            assert sum(m.is_active(step / 100) for m in sc.members) <= 1
    assert not any(k for k in tr if k not in {"expect", "groups", "targets"} and tr[k] is None)


def test_split_brain_length_and_skew_follow_the_options():
    sc = scenario("split-brain", "activemq", split_length=4.0)
    w = sc.truth["split_brain"][0]
    assert (t(w["end"]) - t(w["start"])).total_seconds() == 4.0
    sc = scenario("clock-skew", "artemis", skew=-1.25)
    assert sc.truth["skew"] == [{"target": "art-b", "offset_s": -1.25}]
    env = next(e for e in envelopes(sc) if e["target"] == "art-b")
    item_ts = env["response"][0]["timestamp"]
    assert parse_ts(env["ts"]).timestamp() - item_ts == pytest.approx(-1.25, abs=1.0)


def test_bad_requests_are_refused_with_the_choices():
    with pytest.raises(ScenarioError, match="unknown scenario 'nope'.*clean-failover"):
        build("nope", Spec("activemq", 1, 1.0, 60.0))
    with pytest.raises(ScenarioError, match="does not apply to kind 'weblogic'.*activemq"):
        build("split-brain", Spec("weblogic", 1, 1.0, 60.0))
    with pytest.raises(ScenarioError, match="at least 20 scrape intervals"):
        build("split-brain", Spec("activemq", 1, 1.0, 5.0))


def test_a_suite_shares_one_recording_without_name_clashes(tmp_path):
    scs = suite(Spec("activemq", 1, INTERVAL, DURATION))
    assert len(scs) == len(CASES)
    names = [m.name for sc in scs for m in sc.members + sc.zookeeper]
    assert len(names) == len(set(names))
    cfg = config_from_dict(merged_config(scs))  # a valid config: every target, per-target GC thresholds
    assert len(cfg.targets) == len(names)
    write_suite(scs[:2], tmp_path)
    assert [x["scenario"] for x in json.loads((tmp_path / "truth.json").read_text())["suite"]] == \
        [scs[0].name, scs[1].name]


# --- scoring arithmetic ------------------------------------------------------------------------------


class FakeLakehouse:
    def __init__(self, tables: dict[str, list[dict]]):
        self.tables = tables

    def exists(self, name):
        return name in self.tables

    def read(self, name):
        import pyarrow as pa

        return pa.Table.from_pylist(self.tables[name])


def failover_row(sc, new_first_active: datetime, old_last_active: datetime, event_type="failover") -> dict:
    f = sc.truth["failovers"][0]
    return {"event_id": "e1", "group_name": f["group"], "event_type": event_type, "from_instance": f["from"],
            "to_instance": f["to"], "old_last_active": old_last_active, "new_first_active": new_first_active,
            "overlap": False}


def test_scoring_counts_recall_precision_and_boundaries_and_can_fail():
    sc = scenario("clean-failover", "activemq")
    f = sc.truth["failovers"][0]
    lost, active = t(f["old_live_lost"]), t(f["new_live_active"])
    good = failover_row(sc, active + timedelta(seconds=0.4), lost - timedelta(seconds=0.6))
    report = score(FakeLakehouse({"failover_events": [good], "split_brain_windows": []}), sc.truth)
    fo, sb = report.scores
    assert (fo.recall, fo.precision, fo.boundary_s, fo.passed) == (1.0, 1.0, pytest.approx(0.6), True)
    assert report.passed and sb.found == 0
    late = failover_row(sc, active + timedelta(seconds=1.5), lost - timedelta(seconds=0.2))
    spurious = {"window_id": "w", "group_name": f["group"], "instance_a": "amq-a", "instance_b": "amq-b",
                "certain_start": lost, "certain_end": lost, "certainty": "certain", "duration_s": 0.0}
    report = score(FakeLakehouse({"failover_events": [late], "split_brain_windows": [spurious]}), sc.truth)
    fo, sb = report.scores
    assert fo.boundary_s == pytest.approx(1.5) and not fo.passed
    assert (sb.truth, sb.found, sb.precision, sb.passed) == (0, 1, 0.0, False)
    assert not report.passed and "BELOW BAR" in report.text()
    missed = score(FakeLakehouse({"failover_events": []}), sc.truth).scores[0]
    assert (missed.recall, missed.passed) == (0.0, False) and missed.notes[0].startswith("missed: failover amq-a → amq-b")


def test_rows_of_other_scenarios_are_not_counted():
    sc = scenario("clean-failover", "activemq")
    other = failover_row(sc, T0, T0) | {"group_name": "some-other-group"}
    assert score(FakeLakehouse({"failover_events": [other]}), sc.truth).scores[0].found == 0


def test_match_pairs_closest_first_one_to_one():
    pairs, missed, extra = match([{"v": 0}, {"v": 10}], [{"v": 9}, {"v": 1}, {"v": 50}],
                                 lambda a, b: True, lambda a, b: abs(a["v"] - b["v"]))
    assert [(a["v"], b["v"]) for a, b, _ in pairs] == [(0, 1), (10, 9)] and extra == [{"v": 50}] and not missed
    assert TypeScore("x", "t", 0, 0, 0, 0, None, 1.0).passed


# --- the command line ------------------------------------------------------------------------------------


def test_cli_lists_writes_and_refuses(tmp_path, capsys):
    assert main(["simulate", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in SCENARIOS)
    out = tmp_path / "sb"
    assert main(["simulate", "split-brain", "--kind", "kafka", "--out", str(out), "--seed", "7",
                 "--interval", "500ms", "--duration", "20s", "--split-length", "3s"]) == 0
    truth = json.loads((out / "truth.json").read_text())
    assert (truth["kind"], truth["seed"], truth["interval_s"]) == ("kafka", 7, 0.5)
    cfg = config_from_dict(yaml.safe_load((out / "brokerscope.yaml").read_text()))
    assert {x.kind for x in cfg.targets} == {"kafka"} and cfg.scrape_interval == 0.5
    # 20 s at 500 ms: the collector's period is 1/29 of the interval shorter (collectors/schedule.py)
    assert len(list(read_envelopes(out / "recording.jsonl.gz", strict=True))) == int(20 // (0.5 - 0.5 / 29)) * 3 == 41 * 3
    assert main(["simulate", "split-brain", "--kind", "weblogic", "--out", str(tmp_path / "x")]) == 2
    assert "applies to: activemq, artemis, kafka" in capsys.readouterr().err
    assert main(["simulate", "clean-failover"]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["simulate", "score", str(tmp_path / "missing")]) == 2


def test_replicator_stall_and_catch_up_and_what_the_pack_reads():
    from brokerscope.simulate.kafka import ReplicatorFlow
    from brokerscope.simulate.model import Span

    flow = ReplicatorFlow(rate=100.0, stall=Span(10.0, 18.0))
    assert (flow.lag(9.9), flow.lag(14.0), flow.lag(18.0), flow.lag(22.0)) == (0.0, 400.0, 800.0, 0.0)
    assert (flow.throughput(12.0), flow.throughput(19.0), flow.throughput(23.0)) == (0.0, 300.0, 100.0)
    over = flow.over(3.0)
    assert (over.start, over.end) == (13.0, 20.5)
    assert flow.lag_s(over.start) == pytest.approx(3.0) and flow.lag_s(over.end) == pytest.approx(3.0)
    sc = scenario("lag-spike", "kafka")
    worker = sc.members[-1]
    env = next(e for e in envelopes(sc) if e["target"] == worker.name)
    rows = PACKS["kafka"].normalize(observation_from_envelope(env, "kafka", worker.group), "k")
    assert {(r["flow"], r["topic"], r["partition"]) for r in rows.replication_stats} == {
        ("replicator", "orders", 0), ("replicator", "orders", 1)}
    assert [t["code"] for t in sc.truth["lag"]] == ["follower-lag", "under-replicated", "replication-lag", "replication-lag"]
