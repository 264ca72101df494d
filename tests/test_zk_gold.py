"""The ZooKeeper gold logic on tiny hand-made frames: rounds, quorum intervals, elections, risk and
coordination findings (pure pandas), and the GC → election link (Spark)."""

from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from analysis.zookeeper import (ZkParams, backups_not_taking_over, elections, ensemble_risks, ensemble_rounds, gc_links, lock_findings, quorum_intervals,
                                server_spikes)
from lakehouse.tables import BROKER_STATE, COLLECTOR_HEALTH, GC_FINDINGS, ZK_ELECTIONS, ZK_FINDINGS, ZK_SERVER_STATE

T0 = datetime(2026, 11, 22, 1, 0, tzinfo=timezone.utc)


# the collector's words for a server that is down (nothing listens) and one that did not answer in time
REFUSED = "zk1: connection refused at 127.0.0.1:2181 ([Errno 111] Connection refused); ZooKeeper is not listening"
TIMED_OUT = "zk1: no answer within the timeout (1s) to 'srvr' at 127.0.0.1:2181"


def t(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def server(ts: float, inst: str, state: str, epoch: int | None = None, synced: int | None = None,
           leader_uptime: int | None = None, elections: int | None = None, election_sum: int | None = None,
           **kw) -> dict:
    row = {c: None for c in ZK_SERVER_STATE.column_names}
    unanswered = state in ("unanswered", "timeout")
    row.update(error={"unanswered": REFUSED, "timeout": TIMED_OUT}.get(state))
    row.update(ts=t(ts), ensemble="ens", instance=inst, reachable=not unanswered,
               state="unknown" if unanswered else state, zxid_epoch=epoch, synced_followers=synced,
               leader_uptime_ms=leader_uptime, quorum_size=3, elections=elections, election_time_sum_ms=election_sum)
    row.update(kw)
    return row


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def scripted(script: dict[str, str], epochs: dict[int, int], step: float = 1.0) -> pd.DataFrame:
    """script: server → one letter per round (L leader, F follower, N not serving, x refused: down)."""
    rows = []
    for inst, seq in script.items():
        for i, c in enumerate(seq):
            state = {"L": "leader", "F": "follower", "N": "not-serving", "x": "unanswered"}[c]
            lead = state == "leader"
            rows.append(server(i * step, inst, state, epoch=epochs.get(i) if lead else None,
                               synced=sum(1 for s in script.values() if s[i] == "F") if lead else None,
                               leader_uptime=300 if lead else None, elections=1 if lead else None,
                               election_sum=250 if lead else None))
    return frame(rows)


def test_rounds_tell_an_election_from_a_lost_quorum():
    states = scripted({"a": "LLxxxxxxN", "b": "FFNLLLxxL", "c": "FFNFFNNNF"}, {0: 1, 1: 1, 3: 2, 4: 2, 5: 2, 8: 3})
    rounds = ensemble_rounds(states, members=3)
    assert list(rounds["status"]) == ["present", "present", "election", "present", "present", "present",
                                      "lost", "lost", "present"]
    assert list(rounds["leader"].fillna("-")) == ["a", "a", "-", "b", "b", "b", "-", "-", "b"]
    q = quorum_intervals(rounds)
    assert [(r.status, r.leader, r.rounds, r.bare_majority) for r in q.itertuples()] == [
        ("present", "a", 2, False), ("election", None, 1, False), ("present", "b", 3, True),
        ("lost", None, 2, False), ("present", "b", 1, True)]
    e = elections(rounds)
    first, second = e.sort_values("new_first_seen").itertuples()
    assert (first.old_leader, first.new_leader, first.cause, first.old_leader_after) == ("a", "b", "old leader unanswered", "unanswered")
    assert first.old_last_seen == pd.Timestamp(t(1)).tz_localize(None) and first.duration_upper_s == pytest.approx(1.7)
    assert (second.old_leader, second.new_leader, second.cause) == ("b", "b", "quorum lost")  # re-elected, epoch 3


def stagger(rows: pd.DataFrame, ms_per_server: int = 7) -> pd.DataFrame:
    """Each server's answer stamped a few ms after the previous server's (a poller asking one after
    the other), instead of one stamp per round."""
    order = {name: i for i, name in enumerate(sorted(rows["instance"].unique()))}
    out = rows.copy()
    out["ts"] = [ts + timedelta(milliseconds=ms_per_server * order[i]) for ts, i in zip(rows["ts"], rows["instance"])]
    return out


def test_rounds_come_from_time_not_from_equal_stamps():
    states = scripted({"a": "LLxxxxxxN", "b": "FFNLLLxxL", "c": "FFNFFNNNF"}, {0: 1, 1: 1, 3: 2, 4: 2, 5: 2, 8: 3})
    same = ensemble_rounds(states, members=3)
    staggered = ensemble_rounds(stagger(states), members=3)
    assert list(staggered["status"]) == list(same["status"]) and list(staggered["leader"]) == list(same["leader"])
    assert len(elections(staggered)) == len(elections(same)) == 2


def test_the_same_leader_and_epoch_again_is_no_election():
    """Rounds where the leader's epoch is not known (its srvr answer lost) are no new leadership."""
    states = scripted({"a": "LLLLLL", "b": "FFFFFF", "c": "FFFFFF"}, {0: 4, 1: 4, 3: 4, 5: 4})  # rounds 2, 4: no epoch
    assert elections(ensemble_rounds(states, members=3)).empty


def test_missing_answers_are_no_evidence_of_a_lost_quorum():
    """One server answers, looking for a leader; the others' answers are missing: unknown, not
    lost. Two seen down (refused) and one looking: lost."""
    missing = frame([server(0, "a", "leader", epoch=1, synced=2), server(0, "b", "follower"), server(0, "c", "follower"),
                     server(9, "b", "not-serving")])
    rounds = ensemble_rounds(missing, members=3, hole_s=4.0)
    assert list(rounds["status"]) == ["present", "unknown", "unknown"]  # the hole, then one answer of three
    down = frame([server(0, "a", "leader", epoch=1, synced=2), server(0, "b", "follower"), server(0, "c", "follower"),
                  server(1, "a", "unanswered"), server(1, "b", "not-serving"), server(1, "c", "unanswered")])
    assert list(ensemble_rounds(down, members=3)["status"]) == ["present", "lost"]
    late = frame([server(0, "a", "leader", epoch=1, synced=2), server(0, "b", "follower"), server(0, "c", "follower"),
                  server(1, "a", "unanswered"), server(1, "b", "not-serving"), server(1, "c", "timeout")])
    # the leader refused (killed), c's answer timed out while b looks for a leader: c may be up and
    # electing too (measured: a leader kill on a busy host read as a 0.5 s quorum loss) → unknown
    assert list(ensemble_rounds(late, members=3)["status"]) == ["present", "unknown"]


def test_a_hole_in_the_rounds_is_unknown_not_continuity():
    rows = [server(s, n, st, epoch=1 if st == "leader" else None, synced=2 if st == "leader" else None)
            for s in (0, 1, 20, 21) for n, st in (("a", "leader"), ("b", "follower"), ("c", "follower"))]
    q = quorum_intervals(ensemble_rounds(frame(rows), members=3, scrape_interval_s=1.0, hole_s=4.0))
    assert [(r.status, r.rounds) for r in q.itertuples()] == [("present", 2), ("unknown", 1), ("present", 2)]
    assert elections(ensemble_rounds(frame(rows), members=3, hole_s=4.0)).empty  # the same leader after the hole


def test_risk_findings_of_an_ensemble():
    rounds = ensemble_rounds(scripted({"a": "LLxxxxxxN", "b": "FFNLLLxxL", "c": "FFNFFNNNF"},
                                      {0: 1, 1: 1, 3: 2, 4: 2, 5: 2, 8: 3}), members=3)
    found = ensemble_risks(rounds)
    codes = sorted(found["code"])
    assert codes == ["zk.bare-majority", "zk.bare-majority", "zk.quorum-lost"]
    lost = found[found["code"] == "zk.quorum-lost"].iloc[0]
    assert lost["observations"] == 2 and "c not-serving" in lost["message"]
    single = ensemble_risks(ensemble_rounds(frame([server(0, "solo", "standalone", quorum_size=None)]), members=1))
    assert list(single["code"]) == ["zk.ensemble-too-small"]


def test_election_time_as_zookeeper_measured_it():
    rows = [server(0, "a", "leader", epoch=1, synced=2, leader_uptime=5000, elections=1, election_sum=200),
            server(1, "a", "follower", elections=2, election_sum=900),  # 2nd election took 700 ms
            server(1, "b", "leader", epoch=2, synced=1, leader_uptime=400, elections=4, election_sum=1000)]
    rounds = ensemble_rounds(frame(rows), members=3)
    assert rounds["leader_election_ms"].tolist() == [200.0, 250.0]  # b: fresh to us, 1000 / 4


def test_latency_and_outstanding_spikes():
    rows = [server(i, "a", "follower", requests_total=100 * i, request_latency_sum_ms=lat, max_latency_ms=mx,
                   outstanding_requests=out)
            for i, (lat, mx, out) in enumerate([(0, 5, 0), (200, 5, 0), (30200, 900, 12), (30400, 900, 0)])]
    found = server_spikes(frame(rows), latency_ms=100.0, outstanding=10)
    assert sorted(zip(found["code"], found["value"])) == [("zk.latency-spike", 300.0), ("zk.outstanding-spike", 12.0)]


def coord(ts: float, count: int, holder: str | None, raw: int | None, mtime: float | None = None, answered=True) -> dict:
    return {"ts": t(ts), "ensemble": "ens", "namespace": "artemis", "node_id": "N1", "answered": answered,
            "lease_count": count, "holder_session": holder, "lease_sessions": holder, "sequence_raw": raw,
            "sequence_mtime": t(mtime) if mtime is not None else None}


def test_lock_findings():
    rows = [coord(0, 1, "0xa", 1), coord(1, 2, "0xa", 1), coord(2, 1, "0xa", 1), coord(3, 0, None, 1),
            coord(4, 0, None, 1, answered=False), coord(5, 1, "0xb", -2, mtime=4.5), coord(6, 1, "0xb", -2, mtime=4.5),
            coord(7, 1, "0xb", 2), coord(8, 1, "0xb", -3, mtime=8), coord(9, 1, "0xb", 3)]
    found = lock_findings(frame(rows), claim_grace_s=1.0)
    got = sorted((f.code, f.severity, f.start_ts.second, f.end_ts.second) for f in found.itertuples())
    assert got == [("zk.lease-count", "info", 1, 1),  # one snapshot of 2: a candidate's try, not (yet) two primaries
                   ("zk.lease-count", "warn", 3, 3),  # no lease (the unanswered snapshot at 4 proves nothing)
                   ("zk.lease-vanished", "warn", 2, 3),
                   ("zk.lock-handover", "info", 2, 5),  # 0xa's last snapshot → 0xb's first, free in between
                   ("zk.sequence-claim-lingering", "error", 5, 6)]  # 1.5 s ≥ grace; the claim at 8 lasted < 1 s
    assert "vanished" in found[found["code"] == "zk.lease-vanished"]["message"].iloc[0]


def test_lock_handover_between_sessions():
    """Seen free in between (a release, then the other's acquisition — what a loaded host's scrape
    catches): the lease vanished, and it was still handed over, across the free snapshot."""
    found = lock_findings(frame([coord(0, 1, "0xa", 1), coord(1, 0, None, 1), coord(2, 1, "0xb", 2)]))
    assert sorted(found["code"]) == ["zk.lease-count", "zk.lease-vanished", "zk.lock-handover"]
    h = found[found["code"] == "zk.lock-handover"].iloc[0]
    assert (h["instance"], h["start_ts"].second, h["end_ts"].second) == ("0xa", 0, 2)
    assert "0xa to 0xb" in h["message"] and "seen free" in h["message"]
    found = lock_findings(frame([coord(0, 1, "0xa", 1), coord(1, 1, "0xb", 2)]))
    (h,) = found.itertuples()
    assert h.code == "zk.lock-handover" and h.instance == "0xa" and "0xa to 0xb" in h.message


def test_a_zookeeper_server_pause_is_linked_to_the_election_it_caused(spark):
    def df(rows, contract):
        full = [{c: r.get(c) for c in contract.column_names} for r in rows]
        return spark.createDataFrame(full, contract.spark_schema())

    gc = df([{"finding_id": "g1", "code": "gc.pause-over-third-session", "severity": "error", "target": "zk2",
              "ts": t(10), "file_id": "f", "value": 4000.0, "threshold": 6000.0, "unit": "ms", "message": "m"},
             {"finding_id": "g2", "code": "gc.pause-over-third-session", "severity": "error", "target": "zk2",
              "ts": t(100), "file_id": "f", "value": 4000.0, "threshold": 6000.0, "unit": "ms", "message": "m"}],
            GC_FINDINGS)
    el = df([{"election_id": "e1", "ensemble": "ens", "old_leader": "zk2", "old_epoch": 4, "new_leader": "zk1",
              "new_epoch": 5, "old_last_seen": t(11), "old_gone_seen": t(12), "new_first_seen": t(13),
              "duration_upper_s": 2.0, "cause": "old leader unanswered"}], ZK_ELECTIONS)
    servers = df([{"obs_key": "k", "ts": t(0), "obs_date": "2026-11-22", "ensemble": "ens", "instance": "zk2",
                   "reachable": True, "state": "leader"}], ZK_SERVER_STATE)
    empty_findings = spark.createDataFrame([], ZK_FINDINGS.spark_schema())
    empty_state = spark.createDataFrame([], BROKER_STATE.spark_schema())
    links = gc_links(gc, empty_findings, el, empty_state, servers, slack_s=1.0).collect()
    assert [(r.code, r.instance, r.related) for r in links] == [("zk.gc-pause-election", "zk2", "g1,e1")]
    assert "paused 4000 ms (GC)" in links[0].message and "elected zk1 (epoch 5)" in links[0].message


@pytest.mark.parametrize("primary_scrapes, why", [
    ("timeout", "art-a was silent (its scrapes timed out from 01:00:00.0 to 01:00:10.0"),  # frozen, or a cut network
    ("woke", "art-a was silent (its scrapes timed out from 01:00:00.0 to 01:00:08.0"),  # SIGCONT: it answers again
    ("refused", "stale"),  # the primary is gone: a backup that could activate would have
    ("answered-between", "stale"),  # it answered in between: no evidence the link stayed open
])
def test_why_a_backup_did_not_take_the_free_lock(spark, primary_scrapes, why):
    """Artemis 2.40.0, measured: a replicating backup activates when its replication link fails, not
    when the lock is free, so beside a *silent* live (scrapes timing out: the link stays open to a
    frozen JVM) a backup waits without being stale (drill artemis-pause-zk); beside a live that is
    gone, a waiting backup is a stale one (drill artemis-stale-backup-zk)."""
    def df(rows, contract):
        return spark.createDataFrame([{c: r.get(c) for c in contract.column_names} for r in rows],
                                     contract.spark_schema())

    lock = df([{"finding_id": "f", "code": "zk.lease-count", "severity": "warn", "ensemble": "ens", "group_name": "N1",
                "node_id": "N1", "start_ts": t(0), "end_ts": t(10), "observations": 11, "value": 0.0, "unit": "leases",
                "message": "no lease"}], ZK_FINDINGS)
    state = df([{"obs_key": f"k{i}", "ts": t(i), "obs_date": "2026-11-22", "kind": "artemis", "group_name": "N1",
                 "instance": inst, "reachable": inst == "art-b", "role": "backup" if inst == "art-b" else "unknown",
                 "active": False if inst == "art-b" else None} for i in range(11) for inst in ("art-a", "art-b")],
               BROKER_STATE)
    answers = {"woke": {9, 10}, "answered-between": {5}}.get(primary_scrapes, set())
    kind = "refused" if primary_scrapes == "refused" else "timeout"
    health = df([{"obs_key": f"k{i}", "ts": t(i), "obs_date": "2026-11-22", "kind": "artemis", "target": "art-a",
                  "instance": "art-a", "answered": i in answers, "error_kind": None if i in answers else kind,
                  "items": 0, "items_ok": 0, "items_failed": 0} for i in range(11)], COLLECTOR_HEALTH)
    params = ZkParams(scrape_interval_s=1.0, session_s={"art-b": 4.0})
    (found,) = backups_not_taking_over(lock, state, params, health.select("instance", "ts", "answered", "error_kind")
                                       ).collect()
    assert (found.code, found.instance, found.value, found.threshold) == ("zk.backup-not-taking-over", "art-b", 10.0, 6.0)
    assert "did not take the free lock within its 4.0-s session" in found.message and why in found.message
    assert ("stop it (kill -9)" in found.advice) == (why != "stale")


def test_timeline_entries_for_elections_quorum_and_locks():
    from brokerscope.timeline import build_timeline, render_text
    from lakehouse.store import conform_arrow
    from lakehouse.tables import (
        FAILOVER_EVENTS,
        ROLE_INTERVALS,
        SPLIT_BRAIN_WINDOWS,
        ZK_QUORUM,
    )

    def table(contract, rows):
        return conform_arrow(contract, [{c: r.get(c) for c in contract.column_names} for r in rows])

    quorum = table(ZK_QUORUM, [{"interval_id": "q", "ensemble": "ens", "status": "lost", "start_ts": t(5),
                                "start_lower": t(4.5), "end_ts": t(9), "rounds": 9, "voters": 3,
                                "bare_majority": False, "is_open": False}])
    elected = {"ensemble": "ens", "old_epoch": 1, "new_epoch": 2, "old_last_seen": t(1), "old_gone_seen": t(1.5),
               "new_first_seen": t(2), "duration_upper_s": 0.8, "duration_lower_s": 0.3, "zk_election_ms": 450.0}
    el = table(ZK_ELECTIONS, [
        dict(elected, election_id="e1", old_leader="a", new_leader="b", elected_at=t(1.8), cause="old leader unanswered"),
        dict(elected, election_id="e2", old_leader="b", new_leader="c", elected_at=t(9.5), new_epoch=3,
             old_last_seen=t(4.5), old_gone_seen=t(5), new_first_seen=t(9.6), duration_upper_s=5.0,
             duration_lower_s=4.5, quorum_lost_s=4.6, cause="quorum lost")])
    found = table(ZK_FINDINGS, [{"finding_id": "f", "code": "zk.lock-handover", "severity": "info", "group_name": "N1",
                                 "instance": "0xa", "node_id": "N1", "start_ts": t(3), "end_ts": t(3.5),
                                 "observations": 2, "message": "NodeID N1: primary lock handed over from session 0xa to 0xb"}])
    empty = [table(c, []) for c in (ROLE_INTERVALS, FAILOVER_EVENTS, SPLIT_BRAIN_WINDOWS, BROKER_STATE)]
    entries = build_timeline(*empty, zk_tables={"zk_quorum": quorum, "zk_elections": el, "zk_findings": found})
    assert [e.what for e in entries] == ["zk-lock-handover", "zk-election", "zk-quorum-lost", "zk-quorum-back"]
    text = render_text(entries)
    assert "election: b leads (epoch 2); a (epoch 1) stopped answering between 01:00:01.0 and 01:00:01.5 — took ≤ 0.80 s, ≥ 0.30 s; ZooKeeper measured 450 ms" in text
    assert "quorum back: c leads (epoch 3) after 4.60 s without quorum" in text
    assert "QUORUM LOST: ensemble ens" in text and "(lost between 01:00:04.5 and 01:00:05.0)" in text


def test_an_ensemble_watched_through_one_member_has_rounds():
    """One server's rows only (a site that monitors its ensemble through one member): pandas turns
    a one-group groupby.apply into a wide frame — the rounds must still come, with its election time."""
    states = frame([server(i, "a", "leader", epoch=1, synced=2, leader_uptime=300, elections=1 if i < 2 else 2,
                           election_sum=250 if i < 2 else 650) for i in range(4)])
    rounds = ensemble_rounds(states, members=3)
    assert len(rounds) == 4 and set(rounds["leader"]) == {"a"}
    assert list(rounds["leader_election_ms"]) == [250.0, 250.0, 400.0, 400.0]
