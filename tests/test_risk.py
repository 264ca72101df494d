"""HA risk states (analysis/risk.py): each rule on tiny hand-made frames, positive and
negative, then the Spark wiring on a tiny lakehouse (the same answers as the pandas functions)."""

from datetime import timezone

import pandas as pd
import pytest

from analysis.params import risk_params
from analysis.risk import (STATE_COLUMNS, RiskParams, failover_duration, group_state_risks, quorum_findings,
                           restarted_into_split_brain, run_risk, shutdown_on_failure_off)
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from settings import config_from_dict

T0 = pd.Timestamp("2026-01-01 00:00:00")
PARAMS = RiskParams(unprotected_grace_s=60, stale_backup_grace_s=60, scrape_interval_s=5)


def at(s: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=s)


def obs(instance, s, active, role, reachable=True, kind="activemq", group="g", seq=None, error=None) -> dict:
    return {"ts": at(s), "kind": kind, "group_name": group, "instance": instance, "reachable": reachable,
            "active": active if reachable else None, "role": role if reachable else "unknown",
            "activation_sequence": seq, "error": error}


def state(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=STATE_COLUMNS)


def master_with_slave(slave, seconds=range(0, 300, 5)) -> list[dict]:
    """amq-a master throughout; amq-b as `slave(s)` returns (active, role, reachable) per scrape."""
    rows = [obs("amq-a", s, True, "master") for s in seconds]
    for s in seconds:
        active, role, reachable = slave(s)
        rows.append(obs("amq-b", s + 1, active, role, reachable, error=None if reachable else "connection refused"))
    return rows


# --- unprotected-live -------------------------------------------------------------------------------------------


def test_a_slave_that_stops_answering_leaves_the_master_unprotected():
    rows = master_with_slave(lambda s: (False, "slave", not 100 <= s < 200))
    found = group_state_risks(state(rows), PARAMS)
    assert found["code"].tolist() == ["unprotected-live"]
    f = found.iloc[0]
    assert f["instance"] == "amq-a" and f["severity"] == "error"
    assert f["certainty"] == "possible"  # the slave only did not answer: indeterminate
    assert f["start_ts"] == at(105) and f["end_ts"] == at(200)  # first/last master scrape without a fresh waiting slave
    assert f["start_lower"] == at(100) and f["end_upper"] == at(205)
    assert "connection refused" in f["message"] and "amq-b" in f["detail"]
    assert f["duration_s"] == pytest.approx(95) and f["threshold"] == 60


def test_a_slave_that_answers_without_waiting_is_certain():
    rows = master_with_slave(lambda s: (False, "starting" if 100 <= s < 200 else "slave", True))
    f = group_state_risks(state(rows), PARAMS).iloc[0]
    assert f["certainty"] == "certain" and "answered as starting" in f["message"]


def test_a_clean_failover_is_no_unprotected_live():
    # amq-a master until 100, killed; amq-b takes over at 101; amq-a back as slave at 130
    rows = [obs("amq-a", s, True, "master") for s in range(0, 100, 5)]
    rows += [obs("amq-a", s, None, "unknown", reachable=False) for s in range(100, 130, 5)]
    rows += [obs("amq-a", s, False, "slave") for s in range(130, 300, 5)]
    rows += [obs("amq-b", s + 1, s >= 100, "master" if s >= 100 else "slave") for s in range(0, 300, 5)]
    assert group_state_risks(state(rows), PARAMS).empty


def test_never_from_one_sample():
    # scrapes every 120 s: one master scrape without a waiting slave spans more than the grace, alone
    rows = [obs("amq-a", s, True, "master") for s in (0, 120, 240)]
    rows += [obs("amq-b", s + 1, False, "slave", reachable=s != 120) for s in (0, 120, 240)]
    assert group_state_risks(state(rows), RiskParams(scrape_interval_s=120)).empty


def test_a_single_replica_sync_false_sample_is_no_finding():
    # Artemis: the backup waits as backup throughout; a live's ReplicaSync=false sample is not this rule's
    rows = [obs("art-live", s, True, "live", kind="artemis") for s in range(0, 300, 5)]
    rows += [obs("art-backup", s + 1, False, "backup", kind="artemis") for s in range(0, 300, 5)]
    assert group_state_risks(state(rows), PARAMS).empty


def test_a_live_alone_in_its_group_is_possibly_unprotected():
    f = group_state_risks(state([obs("amq-a", s, True, "master") for s in range(0, 120, 5)]), PARAMS).iloc[0]
    assert f["code"] == "unprotected-live" and f["certainty"] == "possible" and f["is_open"]
    assert "no other instance" in f["message"]


def test_other_kinds_are_not_judged():
    rows = [obs("k1", s, True, "controller", kind="kafka") for s in range(0, 300, 5)]
    assert group_state_risks(state(rows), PARAMS).empty


# --- stale-backup -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backup_seq, expected", [(3, ["stale-backup"]), (4, [])])
def test_backup_behind_the_live_activation_sequence_is_stale(backup_seq, expected):
    rows = [obs("art-live", s, True, "live", kind="artemis", seq=4) for s in range(0, 120, 5)]
    rows += [obs("art-backup", s + 1, False, "backup", kind="artemis", seq=backup_seq) for s in range(0, 120, 5)]
    found = group_state_risks(state(rows), PARAMS)
    assert found["code"].tolist() == expected
    if expected:
        assert found.iloc[0]["instance"] == "art-backup" and found.iloc[0]["value"] == 1


# --- quorum arithmetic ------------------------------------------------------------------------------------------


def groups(*specs) -> pd.DataFrame:
    """(group, policy[, instances]) → the group summary run_risk builds from broker_state."""
    return pd.DataFrame([{"group_name": g, "kind": "artemis", "instances": (rest[0] if rest else f"{g}-live,{g}-backup"),
                          "ha_policy": p, "first_ts": at(0), "last_ts": at(600)} for g, p, *rest in specs])


def intervals(*spans) -> pd.DataFrame:
    return pd.DataFrame([{"group_name": g, "instance": i, "kind": "artemis", "start_ts": at(a), "end_ts": at(b),
                          "start_lower_state": None} for g, i, a, b in spans],
                        columns=["group_name", "instance", "kind", "start_ts", "end_ts", "start_lower_state"])


def test_vote_quorum_with_fewer_than_three_pairs():
    found = quorum_findings(groups(("p1", "Replicated"), ("p2", "Replication Primary w/quorum voting")),
                            intervals(("p1", "p1-live", 0, 600), ("p2", "p2-live", 0, 600)), PARAMS)
    assert [(f["code"], f["group_name"], f["value"]) for f in found] == [("quorum-too-small", "p1", 2), ("quorum-too-small", "p2", 2)]


def test_a_single_vote_quorum_pair_has_no_vote_at_all():
    """Artemis 2.40.0 with one classic replication pair: AMQ221083 "ignoring quorum vote as max
    cluster size is 1", and the backup activates (drill artemis-restart-split-brain)."""
    (found,) = quorum_findings(groups(("p1", "Replication Primary w/quorum voting")), intervals(("p1", "p1-live", 0, 600)),
                               PARAMS)
    assert found["value"] == 1 and "skips the vote" in found["message"] and "cannot be voted" not in found["message"]


def test_three_pairs_or_a_lock_manager_are_enough():
    three = groups(("p1", "Replicated"), ("p2", "Replicated"), ("p3", "Replicated"))
    lives = intervals(*((g, f"{g}-live", 0, 600) for g in ("p1", "p2", "p3")))
    assert quorum_findings(three, lives, PARAMS) == []
    assert quorum_findings(groups(("p1", "Replication Primary w/lock manager")), intervals(), PARAMS) == []


def test_configured_quorum_vote_wins_over_the_policy():
    params = RiskParams(ha={"p1-live": {"quorum_vote": True}})
    assert [f["code"] for f in quorum_findings(groups(("p1", None)), intervals(("p1", "p1-live", 0, 600)), params)] == ["quorum-too-small"]


def test_losing_a_pair_leaves_no_majority():
    found = quorum_findings(groups(("p1", "Replicated"), ("p2", "Replicated")),
                            intervals(("p1", "p1-live", 0, 600), ("p2", "p2-live", 0, 200), ("p2", "p2-backup", 400, 600)), PARAMS)
    lost = [f for f in found if f["code"] == "quorum-lost-pair"]
    assert len(lost) == 1 and lost[0]["group_name"] == "p2"
    assert (lost[0]["start_ts"], lost[0]["end_ts"]) == (at(200), at(400)) and lost[0]["threshold"] == 2
    short = quorum_findings(groups(("p1", "Replicated"), ("p2", "Replicated")),
                            intervals(("p1", "p1-live", 0, 600), ("p2", "p2-live", 0, 200), ("p2", "p2-backup", 230, 600)), PARAMS)
    assert not [f for f in short if f["code"] == "quorum-lost-pair"]  # a failover within the grace


# --- check-for-live-server, shutdown on failure -----------------------------------------------------------------


def window(a="art-a", b="art-b", start=300, end=320) -> pd.DataFrame:
    return pd.DataFrame([{"window_id": "w1", "kind": "artemis", "group_name": "g", "instance_a": a, "instance_b": b,
                          "certain_start": at(start), "certain_end": at(end), "possible_start": at(start - 5),
                          "possible_end": at(end + 5), "certainty": "certain", "duration_s": float(end - start)}])


@pytest.mark.parametrize("configured, expected", [(False, "certain"), (None, "possible"), (True, None)])
def test_restarted_primary_that_activates_beside_its_backup(configured, expected):
    # art-a live 0–100 (killed), art-b live from 110, art-a restarted and live again at 300 beside art-b
    ivs = intervals(("g", "art-a", 0, 100), ("g", "art-b", 110, 320), ("g", "art-a", 300, 320))
    params = RiskParams(ha={"art-a": {"check_for_live_server": configured}} if configured is not None else {})
    found = restarted_into_split_brain(window(), ivs, params)
    assert [f["certainty"] for f in found] == ([expected] if expected else [])
    if expected:
        assert found[0]["instance"] == "art-a" and found[0]["severity"] == "critical"
        assert "check-for-live-server" in found[0]["advice"]


def test_a_split_brain_without_a_returning_primary_is_not_this_rule():
    ivs = intervals(("g", "art-a", 0, 320), ("g", "art-b", 300, 320))  # art-b activated beside a live art-a
    assert restarted_into_split_brain(window(), ivs, PARAMS) == []


@pytest.mark.parametrize("master, slave, expected", [(False, False, 1), (True, False, 0), (None, False, 0)])
def test_shutdown_on_failure_both_off(master, slave, expected):
    ha = {"shutdown_on_slave_failure": slave} | ({} if master is None else {"shutdown_on_master_failure": master})
    g = pd.DataFrame([{"group_name": "s1", "kind": "activemq", "instances": "amq-a,amq-b", "ha_policy": None,
                       "first_ts": at(0), "last_ts": at(60)}])
    found = shutdown_on_failure_off(g, RiskParams(ha={"amq-a": ha}))
    assert len(found) == expected
    if expected:
        assert found[0]["instance"] == "amq-a" and found[0]["is_open"]


# --- failover durations against the configuration ---------------------------------------------------------------


def failover(kind="activemq", outage=6.0, to="amq-b") -> pd.DataFrame:
    return pd.DataFrame([{"event_id": "e1", "kind": kind, "group_name": "g", "event_type": "failover", "from_instance": "amq-a",
                          "to_instance": to, "old_last_active": at(100), "new_first_active": at(100 + outage),
                          "outage_upper_s": outage, "detection_s": outage - 0.5}])


def test_activemq_failover_bounded_by_the_lock_retry():
    g = groups(("g", None))
    found = failover_duration(failover(outage=6.0), g, PARAMS)
    assert len(found) == 1 and "lockAcquireSleepInterval = 10 s (default)" in found[0]["message"]
    assert found[0]["threshold"] == 10
    assert failover_duration(failover(outage=1.0), g, PARAMS) == []  # the demo's sub-second failover
    lease = failover_duration(failover(outage=6.0), g, RiskParams(ha={"amq-b": {"lease_duration_ms": 8000}}))
    assert "lease" in lease[0]["message"] and lease[0]["threshold"] == 8


def test_artemis_connection_ttl_far_above_session_ms():
    g = groups(("g", "Replication Primary w/lock manager"))
    found = failover_duration(failover("artemis", 19.0, to="art-b"), g, PARAMS)
    assert len(found) == 1 and "connection-ttl-override" in found[0]["advice"]
    # values set nowhere in the config are Artemis' defaults: said to be assumed, never as facts
    assert "session-ms 18 s (Artemis' default, assumed: set gc.zk_session_ms for this target)" in found[0]["message"]
    told = RiskParams(timeouts_ms={"art-b": {"connection_ttl_ms": 60000.0, "zk_session_ms": 4000.0,
                                             "assumed": ["connection_ttl_ms"]}})
    (said,) = failover_duration(failover("artemis", 19.0, to="art-b"), g, told)
    assert "session-ms 4.0 s)" in said["message"] and "connection-ttl 60 s (Artemis' default, assumed" in said["message"]
    tuned = RiskParams(timeouts_ms={"art-b": {"connection_ttl_ms": 20000.0, "zk_session_ms": 18000.0}})
    assert failover_duration(failover("artemis", 19.0, to="art-b"), g, tuned) == []
    assert failover_duration(failover("artemis", 19.0, to="art-b"), groups(("g", "Replicated")), PARAMS) == []


def test_params_from_config_take_the_ha_block_and_gc_timeouts():
    cfg = config_from_dict({"scrape_interval": "2s", "analysis": {"risk": {"unprotected_grace": "90s"}}, "targets": [
        {"name": "art-a", "kind": "artemis", "url": "http://a:8161/console/jolokia", "ha": {"check_for_live_server": False},
         "gc": {"connection_ttl_ms": 20000}}]})
    p = risk_params(cfg)
    assert p.unprotected_grace_s == 90 and p.scrape_interval_s == 2
    assert p.ha == {"art-a": {"check_for_live_server": False}}
    assert p.timeouts_ms["art-a"] == {"connection_ttl_ms": 20000.0, "zk_session_ms": 18000.0, "assumed": ["zk_session_ms"]}
    told = config_from_dict({"gc": {"zk_session_ms": 4000}, "targets": [
        {"name": "art-a", "kind": "artemis", "url": "http://a:8161/console/jolokia"}]})
    assert risk_params(told).timeouts_ms["art-a"]["assumed"] == ["connection_ttl_ms"]


# --- Spark wiring -----------------------------------------------------------------------------------------------


def test_run_risk_writes_what_the_pandas_rules_find(tmp_path, spark):
    rows = master_with_slave(lambda s: (False, "slave", not 100 <= s < 200))
    rows += [obs("solo", s, True, "master", group="g2") for s in range(0, 120, 5)]
    lh = Lakehouse(tmp_path / "lh")
    lh.overwrite("broker_state", [r | {"ts": r["ts"].tz_localize(timezone.utc), "obs_key": f"{r['instance']}-{i}",
                                       "obs_date": "2026-01-01"} for i, r in enumerate(rows)])
    counts = run_risk(SparkLakehouse(spark, lh), PARAMS)
    got = sorted((r["group_name"], r["code"], r["certainty"], r["start_ts"].replace(tzinfo=None)) for r in lh.read("risk_findings").to_pylist())
    want = sorted((f["group_name"], f["code"], f["certainty"], f["start_ts"].to_pydatetime())
                  for g in ("g", "g2") for _, f in group_state_risks(state([r for r in rows if r["group_name"] == g]), PARAMS).iterrows())
    assert counts["risk_findings"] == 2 and got == want


def test_a_bad_ha_setting_is_refused_naming_the_key():
    from settings import ConfigError

    with pytest.raises(ConfigError, match=r"targets\[0\]\.ha\.lock_acquire_sleep_ms"):
        config_from_dict({"targets": [{"name": "a", "kind": "activemq", "url": "http://a:8161/api/jolokia",
                                       "ha": {"lock_acquire_sleep_ms": -5}}]})
    with pytest.raises(ConfigError, match=r"targets\[0\]\.ha\.check_for_live_sever: unknown key"):
        config_from_dict({"targets": [{"name": "a", "kind": "artemis", "url": "http://a:8161/console/jolokia",
                                       "ha": {"check_for_live_sever": False}}]})
