"""gold broker_minutes (analysis/minutes.py): every value is what the minute's observations say
(checked against a plain Python rollup), and analysing part by part — appends, late rows, a
commit that adds nothing — gives the same table as one full run, on a real recording and on
generated broker_state, rewriting only the partitions new rows fall in."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from analysis.minutes import MINUTES_JOB, run_minutes
from analysis.watermark import read_watermark
from bench.bench_spine import generate
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from lakehouse.tables import BROKER_MINUTES, OBSERVED_STATES
from tests import recordings
from tests.spark_fixtures import spark  # noqa: F401

FIX = Path(__file__).parent / "fixtures" / "artemis"
RECORDING = FIX / "drill_replication_link_cut.jsonl.gz"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def table_rows(lh: Lakehouse) -> list[dict]:
    keys = BROKER_MINUTES.keys
    return sorted(lh.read("broker_minutes").to_pylist(), key=lambda r: tuple(str(r[k]) for k in keys))


def state_of(r: dict) -> str:
    role = (r.get("role") or "").lower()
    if not r.get("reachable"):
        return "unreachable"
    if r.get("active"):
        return "active"
    return "standby" if role in ("slave", "backup") else "starting" if role == "starting" else "unknown"


def python_rollup(rows: list[dict]) -> list[dict]:
    """The contract's columns, one observation at a time (the oracle)."""
    per = defaultdict(list)
    for r in rows:
        ts = r["ts"].astimezone(timezone.utc)
        minute = ts.replace(second=0, microsecond=0)
        per[(r["obs_date"], r["kind"], r["group_name"], r["instance"], minute)].append({**r, "ts": ts})
    out = []
    for (day, kind, group, inst, minute), obs in per.items():
        obs.sort(key=lambda r: (r["ts"], r["obs_key"]))
        states = [state_of(r) for r in obs]
        gaps = [(b["ts"] - a["ts"]).total_seconds() for a, b in zip(obs, obs[1:])]

        def largest(col):
            vals = [r.get(col) for r in obs if r.get(col) is not None]
            return max(vals) if vals else None

        out.append(dict(
            obs_date=day, minute=minute, kind=kind, group_name=group, instance=inst, observations=len(obs),
            first_ts=obs[0]["ts"], last_ts=obs[-1]["ts"], max_gap_s=max(gaps, default=0.0),
            first_state=states[0], last_state=states[-1], state_changes=sum(a != b for a, b in zip(states, states[1:])),
            **{f"{s}_obs": states.count(s) for s in OBSERVED_STATES},
            connections_max=largest("connections"), enqueued_max=largest("total_enqueued"),
            dequeued_max=largest("total_dequeued")))
    return sorted(out, key=lambda r: tuple(str(r[k]) for k in BROKER_MINUTES.keys))


def approx_rows(rows: list[dict]) -> list[dict]:
    return [{**r, "max_gap_s": pytest.approx(r["max_gap_s"], abs=1e-6)} for r in rows]


@pytest.fixture(scope="module")
def generated() -> pa.Table:
    """Generated broker_state over midnight (two obs_date partitions): failovers, restarts, unanswered
    scrapes; connections (none at all from g0000-a) and dequeue counters added (the generator has none)."""
    base, extra = generate(groups=3, obs=5300, extra=400, seed=11)  # 22:30 to 00:05
    t = pa.concat_tables([base, extra])
    n = t.num_rows
    inst = t.column("instance").to_pylist()
    conn = pa.array([None if i % 17 == 0 or inst[i] == "g0000-a" else (i * 7) % 50 for i in range(n)], pa.int64())
    return t.append_column("connections", conn).append_column(
        "total_dequeued", pc.subtract(t.column("total_enqueued"), pa.scalar(1, pa.int64())))


def fresh(root: Path, spark, rows: pa.Table) -> tuple[Lakehouse, SparkLakehouse]:
    lh = Lakehouse(root)
    lh.overwrite("broker_state", rows)
    return lh, SparkLakehouse(spark, lh)


def parts_of(t: pa.Table, cuts: list[datetime]) -> list[pa.Table]:
    """t's rows in time slices at `cuts`, the last slice missing every 9th row, which arrives after it (late)."""
    us = t.column("ts").cast(pa.int64()).to_numpy()
    edges = [int((c - EPOCH).total_seconds() * 1e6) for c in cuts]
    parts, lo = [], None
    for hi in [*edges, None]:
        sel = [i for i, u in enumerate(us) if (lo is None or u >= lo) and (hi is None or u < hi)]
        parts.append(sel)
        lo = hi
    last = parts.pop()
    late = set(last[::9])
    parts += [[i for i in last if i not in late], sorted(late)]
    return [t.take(pa.array(p, pa.int64())) for p in parts]


def analyse_in_parts(root: Path, spark, parts: list[pa.Table]) -> tuple[Lakehouse, list[str]]:
    lh, slh = fresh(root, spark, parts[0])
    said: list[str] = []
    run_minutes(slh, said.append)
    for p in parts[1:]:
        lh.append("broker_state", p)
        run_minutes(slh, said.append)
    return lh, said


def test_every_value_is_what_the_minute_observed(generated, tmp_path, spark):
    lh, slh = fresh(tmp_path / "lh", spark, generated)
    said: list[str] = []
    assert run_minutes(slh, said.append)["broker_minutes"] == len(python_rollup(generated.to_pylist()))
    assert said == ["gold broker_minutes (full)"]
    got = table_rows(lh)
    assert got == approx_rows(python_rollup(generated.to_pylist()))
    # the data has what the columns are for: changes inside a minute, unanswered scrapes, two days
    assert any(r["state_changes"] for r in got) and any(r["unreachable_obs"] for r in got)
    assert {r["obs_date"] for r in got} == {"2026-11-22", "2026-11-23"}
    assert {r["instance"] for r in got if r["connections_max"] is None} == {"g0000-a"}  # none observed: null, not 0


def test_increments_equal_one_full_run_on_generated_rows(generated, tmp_path, spark):
    t0 = datetime(2026, 11, 22, 22, 30, tzinfo=timezone.utc)
    parts = parts_of(generated, [t0 + timedelta(seconds=s) for s in (1830.5, 5370, 5500)])  # mid-minute cuts, one on each side of midnight
    lh, said = analyse_in_parts(tmp_path / "inc", spark, parts)
    assert said[0] == "gold broker_minutes (full)" and all("incremental" in m for m in said[1:]), said
    assert read_watermark(lh, MINUTES_JOB, ["broker_minutes"]).input_version == lh.version("broker_state")
    full, full_slh = fresh(tmp_path / "full", spark, generated)
    run_minutes(full_slh)
    assert table_rows(lh) == table_rows(full)


@pytest.mark.xdist_group(recordings.group(RECORDING))
def test_increments_equal_one_full_run_on_a_real_recording(analysed_recordings, tmp_path, spark):
    """The classic replication pair's link-cut drill (4 min of Artemis scrapes, the backup activates: a split
    brain); `analyze` wrote its broker_minutes in full."""
    drill = analysed_recordings(RECORDING)
    state = drill.lh.read("broker_state")
    first = pc.min(state.column("ts")).as_py()
    parts = parts_of(state, [first + timedelta(seconds=s) for s in (50, 95, 150)])
    assert all(p.num_rows for p in parts)
    lh, said = analyse_in_parts(tmp_path / "inc", spark, parts)
    assert sum("incremental" in m for m in said) == len(parts) - 1, "\n".join(said)
    assert table_rows(lh) == table_rows(drill.lh) == approx_rows(python_rollup(state.to_pylist()))
    assert any(r["state_changes"] for r in table_rows(lh))


def test_only_the_partitions_new_rows_fall_in_are_rewritten(generated, tmp_path, spark):
    day1 = generated.filter(pc.equal(generated.column("obs_date"), "2026-11-22"))
    day2 = generated.filter(pc.equal(generated.column("obs_date"), "2026-11-23"))
    cut = day2.num_rows // 2
    lh, slh = fresh(tmp_path / "lh", spark, pa.concat_tables([day1, day2.slice(0, cut)]))
    run_minutes(slh)

    def files(day: str) -> set[str]:
        adds = pa.table(lh._open("broker_minutes").get_add_actions(flatten=True)).to_pydict()
        return {p for p, d in zip(adds["path"], adds["partition.obs_date"]) if d == day}

    before = files("2026-11-22"), files("2026-11-23")
    lh.append("broker_state", day2.slice(cut))
    said: list[str] = []
    run_minutes(slh, said.append)
    assert said == [f"gold broker_minutes (incremental: broker_state up to version {lh.version('broker_state')}, 1 day(s))"]
    assert files("2026-11-22") == before[0] and files("2026-11-23") != before[1]
    assert table_rows(lh) == approx_rows(python_rollup(generated.to_pylist()))


def test_nothing_new_writes_nothing_and_an_empty_commit_only_moves_the_watermark(generated, tmp_path, spark):
    lh, slh = fresh(tmp_path / "lh", spark, generated)
    run_minutes(slh)
    rows, version = table_rows(lh), lh.version("broker_minutes")
    said: list[str] = []
    run_minutes(slh, said.append)
    assert said == ["gold broker_minutes: no new broker_state rows"] and lh.version("broker_minutes") == version
    slh.write("broker_state", slh.read("broker_state").limit(0), mode="append")  # a commit that adds no row
    run_minutes(slh, said.append)
    assert said[-1] == "gold broker_minutes: no new broker_state rows (watermark moved)"
    assert read_watermark(lh, MINUTES_JOB, ["broker_minutes"]).input_version == lh.version("broker_state")
    assert table_rows(lh) == rows
