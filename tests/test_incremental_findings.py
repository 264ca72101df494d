"""Incremental runs of the finding jobs: stuck messages resumed from the job's watermark, lag and the
gold-on-gold jobs (risk, causes, incidents) skipped when their inputs did not change — analysing a
recording part by part gives the same gold as one full run, incident ids included."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from analysis.lag import LAG_TABLES
from analysis.lag_increment import run_lag
from analysis.params import analysis_params, lag_params, spine_params, stuck_params
from analysis.runner import analyze, run_findings
from analysis.spine import run_spine
from analysis.stuck import run_stuck
from collectors.replay import replay
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from tests.test_incremental import artemis, config, drill, snapshot

FIX = Path(__file__).parent / "fixtures"
FINDING_TABLES = ("stuck_messages", "risk_findings", "client_shifts", "finding_causes", "incidents", "incident_evidence")


def weblogic() -> tuple[dict, list[str]]:
    data = yaml.safe_load((FIX / "weblogic" / "weblogic.yaml").read_text())
    text = (FIX / "weblogic" / "weblogic_jolokia2.jsonl").read_text()  # not gzipped
    return data, [line for line in text.splitlines() if line.strip()]


def spine_and_stuck(cfg, spark, said: list[str], full: bool = False) -> None:
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()))
    run_spine(slh, spine_params(cfg), progress=said.append, full=full)
    run_stuck(slh, stuck_params(cfg), progress=said.append, full=full)


def in_parts(cfg, lines: list[str], cuts: list[int], workdir: Path, step) -> None:
    for i, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(lines)])):
        part = workdir / f"part{i}.jsonl"
        part.write_text("\n".join(lines[a:b]) + "\n")
        replay(cfg, part)
        step()


def full_run(data: dict, lines: list[str], root: Path, step) -> Lakehouse:
    cfg = config(data, root / "full")
    whole = root / "whole.jsonl"
    whole.write_text("\n".join(lines) + "\n")
    replay(cfg, whole)
    step(cfg)
    return Lakehouse(cfg.lakehouse_root())


ARTEMIS_STUCK_THRESHOLD = "5s"


def stuck_scenario(scenario, threshold: str) -> tuple[dict, list[str]]:
    data, lines = scenario()
    return {**data, "analysis": {"stuck": {"threshold": threshold}}}, lines


def spine_and_stuck_in_full(scenario, threshold: str, root: Path, spark) -> Lakehouse:
    """One full run (spine and stuck jobs, --full) over the whole recording, under `root`."""
    data, lines = stuck_scenario(scenario, threshold)
    return full_run(data, lines, root, lambda cfg: spine_and_stuck(cfg, spark, [], full=True))


@pytest.mark.parametrize("scenario, cuts, threshold", [
    (weblogic, [8, 16, 22], "20s"),  # stranded member open throughout; member unreachable across two cuts
    # an ageing subscription followed across the failover; for the spine, the cuts of
    # test_incremental.py's Artemis case at the default resume tail (600 s): live and backup up; live
    # dead, backup live; inside the split brain
    (artemis, [9, 26, 48], ARTEMIS_STUCK_THRESHOLD),
])
def test_stuck_part_by_part_equals_one_full_run(scenario, cuts, threshold, tmp_path, spark, request):
    data, lines = stuck_scenario(scenario, threshold)
    inc = config(data, tmp_path / "inc")
    said: list[str] = []
    in_parts(inc, lines, cuts, tmp_path, lambda: spine_and_stuck(inc, spark, said))
    assert any("stuck_messages (incremental" in m for m in said), said
    if scenario is artemis:  # this very full run, made once for the session (tests/conftest.py: artemis_in_full)
        full = request.getfixturevalue("artemis_in_full")
    else:
        full = spine_and_stuck_in_full(scenario, threshold, tmp_path, spark)
    got = snapshot(Lakehouse(inc.lakehouse_root()), ("stuck_messages",))
    assert got == snapshot(full, ("stuck_messages",)) and got["stuck_messages"]
    if scenario is artemis:  # the spine's own tables, resumed at the default tail (groups derived from the NodeID)
        assert_spine_incremental_equals_full(said, Lakehouse(inc.lakehouse_root()), full)


def assert_spine_incremental_equals_full(said: list[str], inc: Lakehouse, full: Lakehouse) -> None:
    """What test_incremental.test_analysing_part_by_part_equals_one_full_run checks: both spine jobs
    resumed incrementally, and their silver and gold tables equal a full run's."""
    assert any("bronze → silver" in m and "incremental" in m for m in said), said
    assert any("silver → gold" in m and "incremental" in m for m in said), said
    assert snapshot(inc) == snapshot(full)


def test_drill_analysed_in_parts_equals_a_full_run_and_reruns_write_nothing(analysed_kill_master, tmp_path, spark):
    data, lines = drill()
    cfg = config(data, tmp_path / "inc")
    said: list[str] = []
    in_parts(cfg, lines, [12, 24], tmp_path, lambda: analyze(cfg, spark=spark, progress=said.append))
    # the full run: the whole recording analysed on a fresh lakehouse, once for the session (tests/conftest.py)
    full = Lakehouse(analysed_kill_master.root)
    lh = Lakehouse(cfg.lakehouse_root())
    got = snapshot(lh, FINDING_TABLES)
    assert got == snapshot(full, FINDING_TABLES) and len(got["incidents"]) == 1
    # the spine too (cuts: before the kill; in the outage; after the old master is back)
    assert_spine_incremental_equals_full(said, lh, full)

    versions = {t: lh.version(t) for t in (*FINDING_TABLES, *LAG_TABLES)}
    said.clear()
    analyze(cfg, spark=spark, progress=said.append)
    assert {t: lh.version(t) for t in versions} == versions, said  # nothing new: nothing written
    assert "gold stuck_messages: no new broker_state rows" in said
    assert any("silver unchanged" in m for m in said) and sum("inputs unchanged" in m for m in said) == 4


def test_gold_jobs_rerun_when_an_input_changed(analysed_kill_master, tmp_path, spark):
    cfg = analysed_kill_master.copy_to(tmp_path / "lh")  # the drill analysed (tests/conftest.py); ours to change
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()))
    slh.write("failover_events", slh.read("failover_events").limit(0))  # someone rewrote an input
    said: list[str] = []
    run_findings(slh, analysis_params(cfg), said.append)
    assert "gold risk_findings" in said and "gold client_shifts" in said and "gold incidents, incident_evidence" in said
    assert slh.lakehouse.count("incidents") == 0 and slh.lakehouse.count("client_shifts") == 0  # no failover left
    said.clear()
    run_lag(slh, lag_params(cfg), progress=said.append, full=True)
    assert "gold replication_lag" in said  # --full always recomputes
