"""Incremental runs: analysing a recording part by part, as it arrives, gives the same silver and
gold as one full run over all of it — on the real drill, on Artemis captures (groups derived from
the NodeID), and on generated broker_state with failovers, restarts, gaps and split brains. (The drill and the Artemis
captures at the default resume tail are analysed part by part with the finding jobs, in
tests/test_incremental_findings.py, which checks these tables too.)"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml

from analysis import spine_increment
from analysis import watermark as watermark_module
from analysis.params import spine_params
from analysis.runner import analyze
from analysis.spine import GOLD_OUTPUTS, GOLD_TABLES, run_gold, run_spine
from analysis.watermark import read_watermark
from bench.bench_spine import generate
from collectors.replay import replay
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from lakehouse.tables import SILVER_FROM_JOLOKIA, contract
from settings import config_from_dict

FIX = Path(__file__).parent / "fixtures"
ARTEMIS = [FIX / "artemis" / f for f in ("failover_jolokia1.jsonl.gz", "split_brain.jsonl.gz")]


def snapshot(lh: Lakehouse, tables=(*SILVER_FROM_JOLOKIA, *GOLD_OUTPUTS)) -> dict[str, list[dict]]:
    return {t: sorted(lh.read(t).to_pylist(), key=lambda r, k=contract(t).keys: tuple(str(r[c]) for c in k)) for t in tables}


def recording_lines(paths: list[Path]) -> list[str]:
    return [line for p in paths for line in gzip.open(p, "rt").read().splitlines() if line.strip()]


def spine(cfg, spark, said: list[str] | None = None, full: bool = False) -> None:
    """What `brokerscope analyze` runs for the spine (its other jobs are not under test here)."""
    slh = SparkLakehouse(spark, Lakehouse(cfg.lakehouse_root()))
    run_spine(slh, spine_params(cfg), progress=None if said is None else said.append, full=full)


def analyse_in_parts(cfg, lines: list[str], cuts: list[int], workdir: Path, spark) -> list[str]:
    """Replay the recording's lines up to each cut, analysing after each part; the progress."""
    said: list[str] = []
    for i, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(lines)])):
        part = workdir / f"part{i}.jsonl"
        part.write_text("\n".join(lines[a:b]) + "\n")
        replay(cfg, part)
        spine(cfg, spark, said)
    return said


def config(data: dict, root: Path):
    return config_from_dict({**data, "lakehouse": str(root)})


def drill() -> tuple[dict, list[str]]:
    return yaml.safe_load((FIX / "drill_kill_master.yaml").read_text()), recording_lines([FIX / "drill_kill_master.jsonl.gz"])


def artemis() -> tuple[dict, list[str]]:
    targets = [{"name": n, "kind": "artemis", "url": f"http://{n}.example:8161/console/jolokia"}
               for n in ("art-live", "art-backup", "art-a", "art-b")]
    return {"targets": targets}, recording_lines(ARTEMIS)


# The same comparison at the default resume tail (600 s, every resume point inside it) runs with the finding
# jobs in tests/test_incremental_findings.py, which check these silver and gold tables as well: the drill cut
# [12, 24] (before the kill; in the outage; after the old master is back) and Artemis cut [9, 26, 48] (live and
# backup up; live dead, backup live; inside the split brain). Here: Artemis at a 1 s tail, where silver looks
# up stored rows older than 1 s per instance, not in the tail (gold resumes from its carried state).
def test_analysing_part_by_part_equals_one_full_run(artemis_in_full, tmp_path, spark, monkeypatch):
    monkeypatch.setattr(watermark_module, "RESUME_TAIL_US", 1 * 1_000_000)
    data, lines = artemis()
    inc = config(data, tmp_path / "inc")
    said = analyse_in_parts(inc, lines, [9, 26, 48], tmp_path, spark)
    assert any("bronze → silver" in m and "incremental" in m for m in said), said
    assert any("silver → gold" in m and "incremental" in m for m in said), said
    # one full run over the whole recording, once for the session (tests/conftest.py; its stuck job
    # settings play no part in these tables)
    assert snapshot(Lakehouse(inc.lakehouse_root())) == snapshot(artemis_in_full)


def test_nothing_new_changes_nothing_and_full_recomputes(analysed_kill_master, kill_master_rerun_in_full, tmp_path, spark):
    # the whole drill replayed and analysed once for the session (tests/conftest.py); a copy, as it reruns
    first = analysed_kill_master.counts
    cfg = analysed_kill_master.copy_to(tmp_path / "lh")
    lh = Lakehouse(cfg.lakehouse_root())
    versions = {t: lh.version(t) for t in (*SILVER_FROM_JOLOKIA, *GOLD_TABLES)}
    said: list[str] = []
    assert analyze(cfg, spark=spark, progress=said.append) == first
    assert {t: lh.version(t) for t in versions} == versions  # nothing new: nothing written
    assert "bronze → silver: no new bronze rows" in said
    # `--full` over the same analysed lakehouse (its copy, rerun once for the session: tests/conftest.py)
    full = kill_master_rerun_in_full
    assert any("(full)" in m for m in full.said) and snapshot(Lakehouse(full.root)) == snapshot(lh)
    assert full.counts == first


# --- the gold job on generated broker_state ------------------------------------------------------------


@pytest.fixture(scope="module")
def generated():
    """Generated rows; the active ones report a store (group g0001's second instance another one:
    findings in ha_group_checks)."""
    return tuple(with_stores(t) for t in generate(groups=6, obs=600, extra=150, seed=3))


def with_stores(rows: pa.Table) -> pa.Table:
    group, instance = rows.column("group_name").to_pylist(), rows.column("instance").to_pylist()
    stores = [f"KahaDB[/data/{i if g == 'g0001' else g}]" for g, i in zip(group, instance)]
    return rows.append_column("store", pa.array(stores, pa.string()))


def gold_lakehouse(root: Path, spark, rows) -> tuple[Lakehouse, SparkLakehouse]:
    lh = Lakehouse(root)
    lh.overwrite("broker_state", rows)
    return lh, SparkLakehouse(spark, lh)


@pytest.fixture(scope="module")
def generated_base_gold(generated, tmp_path_factory, spark) -> Path:
    """A lakehouse of the generated base rows and the gold of one run over them (a first run: the full
    path), once for the module: the start of the increments and the full run over the base. Read only."""
    base, _extra = generated
    root = tmp_path_factory.mktemp("generated-base") / "lh"
    _lh, slh = gold_lakehouse(root, spark, base)
    said: list[str] = []
    run_gold(slh, said.append)
    assert any("(full)" in m for m in said), said
    return root


@pytest.fixture(scope="module")
def generated_full_gold(generated, tmp_path_factory, spark):
    """The gold of one full run over all the generated rows (the resume tail plays no part in it)."""
    base, extra = generated
    full_lh, full_slh = gold_lakehouse(tmp_path_factory.mktemp("generated-full"), spark, base)
    full_lh.append("broker_state", extra)
    run_gold(full_slh, lambda m: None, full=True)
    return snapshot(full_lh, GOLD_TABLES)


@pytest.mark.parametrize("driver_rows", [spine_increment.DRIVER_ROWS, 0])  # the pass on the driver / in Spark
def test_gold_increments_equal_a_full_run(generated, generated_base_gold, generated_full_gold, tmp_path, spark, monkeypatch,
                                          driver_rows):
    monkeypatch.setattr(spine_increment, "DRIVER_ROWS", driver_rows)
    _base, extra = generated
    shutil.copytree(generated_base_gold, tmp_path / "inc")  # the base rows and their gold, ours to append to
    lh = Lakehouse(tmp_path / "inc")
    slh = SparkLakehouse(spark, lh)
    said: list[str] = []
    for lo, hi in ((0, 50), (50, 100), (100, 150)):  # three appends of 50 observations per instance
        lh.append("broker_state", extra.take(ticks_between(extra, 600 + lo, 600 + hi)))
        run_gold(slh, said.append)
    assert sum("incremental" in m for m in said) == 3, said
    assert read_watermark(lh, "spine-gold", GOLD_OUTPUTS).input_version == lh.version("broker_state")

    got = snapshot(lh, GOLD_TABLES)
    assert got == generated_full_gold
    assert got["split_brain_windows"] and {e["event_type"] for e in got["failover_events"]} >= {"failover", "restart"}
    assert {c["check"] for c in got["ha_group_checks"]} == {"group-members-disagree"}


def ticks_between(rows, lo: int, hi: int) -> list[int]:
    """Positions of the generated rows whose observation number lies in [lo, hi)."""
    return [i for i, k in enumerate(rows.column("obs_key").to_pylist()) if lo <= int(k.rsplit("/", 1)[1]) < hi]


def test_gold_carried_through_small_increments_with_holes(generated, tmp_path, spark):
    """Appends of 1 to 50 observations per instance, cutting through outages, restarts and split
    brains, with observations lost (holes, at a 2.5 s tolerance): every gold table and the carried
    state equal a full run's, and the carry stays a few rows per instance."""
    base, extra = generated
    rows = pa.concat_tables([base, extra])
    rng = np.random.default_rng(11)
    keep = rng.random(rows.num_rows) >= 0.03
    keep[ticks_between(rows, 690, 712)[::2]] = False  # a collector down for ~20 s: every other instance
    rows = rows.filter(pa.array(keep))
    hole_us = 2.5e6
    tables = (*GOLD_TABLES, "spine_carry", "ha_identity_sightings")
    full_lh, full_slh = gold_lakehouse(tmp_path / "full", spark, rows)
    run_gold(full_slh, lambda m: None, full=True, hole_us=hole_us)

    lh, slh = gold_lakehouse(tmp_path / "inc", spark, rows.take(ticks_between(rows, 0, 600)))
    run_gold(slh, lambda m: None, hole_us=hole_us)
    said: list[str] = []
    cuts = [600, 601, 603, 610, 627, 660, 700, 701, 750]
    for lo, hi in zip(cuts, cuts[1:]):
        lh.append("broker_state", rows.take(ticks_between(rows, lo, hi)))
        run_gold(slh, said.append, hole_us=hole_us)
    assert sum("incremental" in m for m in said) == len(cuts) - 1, said
    assert snapshot(lh, tables) == snapshot(full_lh, tables)
    instances = len(set(rows.column("instance").to_pylist()))
    assert lh.count("spine_carry") <= 6 * instances
    got = snapshot(lh, GOLD_TABLES)
    assert any(r["unobserved_s"] for r in got["role_intervals"]) and got["split_brain_windows"]


def test_late_rows_fall_back_to_a_full_run(generated, generated_base_gold, tmp_path, spark):
    base, extra = generated
    ticks = [int(k.rsplit("/", 1)[1]) for k in base.column("obs_key").to_pylist()]
    early = [i for i, t in enumerate(ticks) if t < 500]
    late = [i for i, t in enumerate(ticks) if t >= 500 and t % 7 == 0]  # arrives after rows newer than it
    rest = [i for i, t in enumerate(ticks) if t >= 500 and t % 7]
    lh, slh = gold_lakehouse(tmp_path / "inc", spark, base.take(early + rest))
    run_gold(slh, lambda m: None)
    lh.append("broker_state", base.take(late))
    said: list[str] = []
    run_gold(slh, said.append)
    assert any("rows older than stored ones" in m for m in said), said
    # the full run over all of base: a first run on a fresh lakehouse (the full path), once for the module
    assert snapshot(lh, GOLD_TABLES) == snapshot(Lakehouse(generated_base_gold), GOLD_TABLES)
