"""Native Delta (delta-spark) and the delta-rs bridge give the same lakehouse, and each path carries
on from tables the other wrote (DESIGN.md "Scale").

Two real recordings: the ActiveMQ kill-master drill (tests/fixtures/drill_kill_master.*) and the
ZooKeeper drill (tests/fixtures/zookeeper/). Each is replayed into bronze (delta-rs, as a collector
writes it) and analysed by `brokerscope analyze` once per path; every silver and gold table must
hold the same rows. Then the paths swap: the rows of a second part of the recording are analysed
incrementally by the other path over the first one's tables (both directions), and must again give
what a single path gives.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from analysis.params import spine_params
from analysis.runner import analyze
from analysis.spine import run_spine
from collectors.replay import replay
from lakehouse.spark import DeltaSparkUnavailableError, SparkLakehouse, delta_native_available, spark_session
from lakehouse.store import Lakehouse
from lakehouse.tables import TABLES, contract
from tests.recordings import fixture_config
from tests.fixtures.zookeeper.drill import gc_finding

FIX = Path(__file__).parent / "fixtures"
DERIVED = tuple(n for n, c in TABLES.items() if c.layer in ("silver", "gold") and not n.startswith("alert_"))


@pytest.fixture(scope="module", autouse=True)
def _native(spark):
    if not delta_native_available(spark):
        pytest.fail("the tests' Spark session has no delta-spark: run `python -m infra.delta_jars` once "
                    "(BROKERSCOPE_DELTA=bridge must not be set for this test)")


def snapshot(lh: Lakehouse) -> dict[str, list[dict]]:
    """Every derived table that exists, its rows sorted by the contract's keys."""
    out = {}
    for t in DERIVED:
        if lh.exists(t):
            keys = contract(t).keys or contract(t).column_names
            out[t] = sorted(lh.read(t).to_pylist(), key=lambda r, k=keys: tuple(str(r[c]) for c in k))
    return out


def writers(lh: Lakehouse, table: str) -> set[str]:
    """Which engine made each commit: delta-spark's engineInfo, or the bridge's commit marker."""
    out = set()
    for h in lh.history(table):
        if h.get("brokerscope.writer") == "spark-bridge":
            out.add("bridge")
        elif "Delta-Lake/" in str(h.get("engineInfo", "")):
            out.add("native")
        else:
            out.add("delta-rs")
    return out


DRILLS = {
    "activemq-kill-master": (FIX / "drill_kill_master.yaml", FIX / "drill_kill_master.jsonl.gz"),
    "zookeeper": (FIX / "zookeeper" / "drill.yaml", FIX / "zookeeper" / "drill.jsonl.gz"),
}


def drill_config(name: str, root: Path):
    cfg = fixture_config(DRILLS[name][0], root)
    if name == "zookeeper":  # what the GC job would have found in art-d's log (tests/test_zk_replay.py)
        truth = json.loads((FIX / "zookeeper" / "drill.truth.json").read_text())
        Lakehouse(root).overwrite("gc_findings", [gc_finding(truth)])
    return cfg


def halves(name: str, workdir: Path) -> tuple[Path, Path]:
    """The recording cut in two at its middle line (two replays that together are the whole)."""
    lines = [x for x in gzip.open(DRILLS[name][1], "rt").read().splitlines() if x.strip()]
    cut = len(lines) // 2
    parts = []
    for i, chunk in enumerate((lines[:cut], lines[cut:])):
        p = workdir / f"{name}-part{i}.jsonl"
        p.write_text("\n".join(chunk) + "\n")
        parts.append(p)
    return parts[0], parts[1]


@pytest.mark.parametrize("drill", sorted(DRILLS))
def test_native_and_bridge_give_the_same_lakehouse(drill, tmp_path, spark, request):
    lakes = {}
    for mode in ("native", "bridge"):
        if mode == "native" and drill == "activemq-kill-master":  # the session's analysed drill (native, the default)
            lakes[mode] = Lakehouse(request.getfixturevalue("analysed_kill_master").root)
            continue
        cfg = drill_config(drill, tmp_path / mode)
        replay(cfg, DRILLS[drill][1])
        analyze(cfg, mode=mode, spark=spark)
        lakes[mode] = Lakehouse(tmp_path / mode)
    native, bridge = snapshot(lakes["native"]), snapshot(lakes["bridge"])
    assert set(native) == set(bridge)
    assert {"broker_state", "role_intervals"} <= set(native) and sum(map(len, native.values())) > 50
    for t in native:
        assert native[t] == bridge[t], f"{t}: native and bridge differ"
    # each lakehouse was written by the path it names
    assert writers(lakes["native"], "role_intervals") == {"native"}
    assert writers(lakes["bridge"], "role_intervals") == {"bridge"}


def spine(cfg, spark, mode: str) -> None:
    """The spine (bronze → silver → gold) as `brokerscope analyze` runs it, on one path."""
    run_spine(SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()), mode=mode), spine_params(cfg))


@pytest.mark.parametrize("first,then", [("bridge", "native"), ("native", "bridge")])
def test_each_path_carries_on_from_the_others_tables(first, then, tmp_path, spark, analysed_kill_master):
    drill = "activemq-kill-master"
    part0, part1 = halves(drill, tmp_path)
    mixed = drill_config(drill, tmp_path / "mixed")
    replay(mixed, part0)
    spine(mixed, spark, first)
    replay(mixed, part1)
    spine(mixed, spark, then)  # incremental, over silver and gold the other path wrote
    lh = Lakehouse(tmp_path / "mixed")
    assert writers(lh, "broker_state") == {first, then} and writers(lh, "role_intervals") == {first, then}
    got = snapshot(lh)
    assert {"broker_state", "role_intervals", "failover_events"} <= set(got)
    # the reference: the whole recording analysed in one full run (the session's, tests/conftest.py);
    # incremental = full is the spine's promise (tests/test_incremental.py)
    full = snapshot(Lakehouse(analysed_kill_master.root))
    assert got == {t: full[t] for t in got}
    # and delta-rs (the dashboard's reader) reads every table both engines wrote
    assert all(len(rows) == lh.count(t) for t, rows in got.items())


def test_native_is_the_default_and_the_bridge_is_chosen(spark, tmp_path, monkeypatch):
    """The session carries delta-spark (jars cached): native unless the bridge is asked for."""
    monkeypatch.delenv("BROKERSCOPE_DELTA", raising=False)
    lh = Lakehouse(tmp_path / "lh")
    assert SparkLakehouse(spark, lh).mode == "native"
    assert SparkLakehouse(spark, lh, mode="auto").mode == "native"
    monkeypatch.setenv("BROKERSCOPE_DELTA", "bridge")
    assert SparkLakehouse(spark, lh).mode == "bridge"


def test_missing_jars_name_the_setup_command(tmp_path, monkeypatch):
    """delta='native' with an empty cache fails before any JVM starts, saying what to run."""
    monkeypatch.setenv("BROKERSCOPE_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("BROKERSCOPE_DELTA_SPARK", raising=False)
    with pytest.raises(DeltaSparkUnavailableError, match=r"python -m infra\.delta_jars"):
        spark_session("never-started", delta="native", conf={"spark.jars": ""})
