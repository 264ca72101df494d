"""The ZooKeeper drill on a real 3-node ensemble (Debian ZooKeeper 3.8), collected live at 0.25 s,
analysed with Spark, checked against the drill's own ground truth (tests/fixtures/zookeeper/drill.py).
Broker facts (Artemis) are modeled; everything ZooKeeper — elections, quorum loss, the lock
manager's znodes written with kazoo, a lease holder frozen past its session — is real."""

import os
import re
from pathlib import Path

import pytest

from analysis.runner import analyze
from collectors.recording import bronze_row
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.fixtures.zookeeper import checks
from tests.fixtures.zookeeper.drill import artemis_envelopes, full_config, gc_finding, run_drill

pytestmark = [pytest.mark.slow, pytest.mark.lab]


@pytest.fixture(scope="module")
def drill(tmp_path_factory, spark):
    work = tmp_path_factory.mktemp("zk-live")
    truth, targets = run_drill(work, interval=0.25)
    cfg = config_from_dict(full_config(targets, str(work / "lh"), truth["interval"]))
    lh = Lakehouse(cfg.lakehouse_root())
    lh.append_new("bronze_jolokia", [bronze_row(e, "artemis", None, cfg.target(e["target"]).url, "drill")
                                     for e in artemis_envelopes(truth)])
    lh.overwrite("gc_findings", [gc_finding(truth)])
    analyze(cfg, spark=spark)
    return work, lh, truth, checks.gold(lh)


def test_killing_the_leader_yields_an_election_with_its_duration(drill):
    _, _, truth, g = drill
    measured = checks.check_leader_election(g, truth)
    print(f"\nelection after SIGKILL of {truth['leader1']}: {measured['election_s']:.3f} s "
          f"(bounds {measured['lower_s']:.3f}–{measured['upper_s']:.3f} s; ZooKeeper measured "
          f"{measured['zk_ms']:.0f} ms); first round without the old leader {measured['detected_after_s']:.3f} s after the kill")
    assert measured["detected_after_s"] <= truth["interval"] + checks.TICK_SLACK_S


def test_killing_a_second_node_loses_quorum_until_it_returns(drill):
    _, _, truth, g = drill
    checks.check_quorum_lost_until_return(g, truth)


def test_mntr_of_a_dead_server_is_an_error_observation(drill):
    _, lh, truth, g = drill
    checks.check_dead_server_is_an_error_observation(g, truth)
    dead = sorted((r for r in lh.read("bronze_zk").to_pylist() if r["target"] == truth["leader1"]
                   and checks._t(truth["kill1"] + checks.TICK_SLACK_S) < r["ts"] < checks._t(truth["restart"])),
                  key=lambda r: r["ts"])
    later = dead[checks.first_after_teardown(dead, "error_kind", "reset"):]
    assert later and {(r["command"], r["error_kind"]) for r in later} == {("srvr", "refused")}  # no mntr sent after that
    assert all(r["command"] == "srvr" for r in dead)
    assert all(r["response_text"] is None for r in dead)


def test_admin_server_stands_in_for_a_mntr_that_is_not_whitelisted(drill):
    checks.check_admin_fallback(drill[3])


def test_lock_manager_findings_on_real_znodes(drill):
    _, _, truth, g = drill
    checks.check_coordination(g, truth)
    print(f"\nlease of the SIGSTOPped holder gone {truth['lease_c_gone'] - truth['sigstop']:.2f} s after SIGSTOP "
          f"(session 1.5 s)")


def test_the_timeline_tells_elections_quorum_and_lock_events(drill):
    _, lh, truth, _ = drill
    text = checks.check_timeline(lh, truth)
    print("\n" + text)


def test_the_lab_leaves_no_process_behind(drill):
    work = str(drill[0] / "lab")
    ours = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"-Dbrokerscope.lab={work}".encode() in cmd or any(re.search(rb"zk_lab.*hold-lease", c) for c in cmd):
            ours.append(pid)
    assert ours == []
