"""Simulated scenarios replayed through the whole pipeline (replay → analyze → gold) and scored
against their ground truth (brokerscope/simulate/score.py) — the P5 bar: recall 100 % for failovers
and split-brain windows with boundaries within one scrape interval, no split brain on clean
failovers, stuck / lag / stale-backup / GC findings matching the truth.

Several scenarios share one recording and one analysis (prefixed names), so Spark runs once per
module: the fast set here, every scenario × kind in the slow set."""

from __future__ import annotations

from dataclasses import replace

import pytest

from brokerscope.simulate import SCENARIOS, Spec, build
from brokerscope.simulate.render import write_suite
from brokerscope.simulate.score import score_dir

BASE = Spec("activemq", seed=1, interval=1.0, duration=30.0)
FAST = [("clean-failover", "activemq"), ("split-brain", "artemis"), ("stuck-member", "weblogic"), ("lag-spike", "kafka")]
ALL = [(name, kind) for name, e in SCENARIOS.items() for kind in e.kinds]
SLOW = [c for c in ALL if c not in FAST]
SKEW = [c for c in ALL if c[0] == "clock-skew"]


def run_suite(cases, tmp_path_factory, spark) -> dict:
    scenarios = [build(name, replace(BASE, kind=kind, prefix=f"{name}.{kind}.")) for name, kind in cases]
    out = tmp_path_factory.mktemp("sim")
    write_suite(scenarios, out / "suite")
    reports = score_dir(out / "suite", spark=spark, lakehouse=out / "lakehouse")
    return {(r.scenario, r.kind): r for r in reports}


@pytest.fixture(scope="module")
def fast(tmp_path_factory, spark):
    return run_suite(FAST, tmp_path_factory, spark)


@pytest.fixture(scope="module")
def slow(tmp_path_factory, spark):
    return run_suite(SLOW, tmp_path_factory, spark)


def by_finding(report) -> dict:
    return {(s.finding, s.table): s for s in report.scores}


def assert_bar(report) -> None:
    assert report.passed, report.text()
    scores = by_finding(report)
    fo, sb = scores[("failovers", "failover_events")], scores[("split_brain", "split_brain_windows")]
    assert fo.matched_truth == fo.truth and sb.matched_truth == sb.truth  # recall 100 %
    if not sb.truth:  # a clean failover (or no failover) must never produce a split-brain row
        assert sb.found == 0
    for s in report.scores:  # every truth item was found, nothing found that did not happen
        assert s.matched_truth == s.truth and s.matched_found == s.found, report.text()
    # boundaries reported, not part of the bar: a stuck run starts at the first scrape whose whole
    # interval saw no delivery; lag in time is derived from sampled throughput (see score.py)
    for key in (("stuck", "stuck_messages"), ("lag_in_time", "replication_findings")):
        s = scores.get(key)
        if s and s.boundary_s is not None:
            assert s.boundary_s <= 2 * report.interval + 0.002, report.text()


@pytest.mark.parametrize("name,kind", FAST)
def test_fast_scenarios_meet_the_bar(fast, name, kind):
    report = fast[(name, kind)]
    assert_bar(report)
    expected = {"clean-failover": {"failovers": 1}, "split-brain": {"split_brain": 1},
                "stuck-member": {"stuck": 1}, "lag-spike": {"lag": 2, "lag_in_time": 2}}[name]
    assert {s.finding: s.matched_truth for s in report.scores if s.finding in expected} == expected, report.text()


@pytest.mark.slow
@pytest.mark.parametrize("name,kind", [c for c in SLOW if c not in SKEW])
def test_every_fault_and_kind_meets_the_bar(slow, name, kind):
    assert_bar(slow[(name, kind)])


@pytest.mark.slow
def test_gc_caused_failover_is_found_with_its_cause(slow):
    scores = by_finding(slow[("gc-failover", "artemis")])
    assert scores[("gc", "gc_findings")].matched_truth == 1
    causes = scores.get(("causes", "finding_causes"))
    assert causes is not None and causes.matched_truth == causes.truth == 1, slow[("gc-failover", "artemis")].text()


@pytest.mark.slow
def test_stale_backup_is_found_from_zookeeper_and_as_a_risk(slow):
    scores = by_finding(slow[("stale-backup", "artemis")])
    assert scores[("stale_backup", "zk_findings")].matched_truth == 1
    assert scores[("stale_backup", "risk_findings")].matched_truth == 1


@pytest.mark.slow
@pytest.mark.parametrize("name,kind", SKEW)
def test_clock_skew_between_collectors_is_corrected(slow, name, kind):
    assert_bar(slow[(name, kind)])
