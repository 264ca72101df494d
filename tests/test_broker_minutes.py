"""gold broker_minutes (analysis/minutes.py): every value is what the minute's observations say
(checked against a plain Python rollup), and analysing part by part — appends across an hour and a
day boundary, late rows (one into an old hour), a commit that adds nothing — gives the same table
as one full run, on a real recording and on generated broker_state, rewriting only the
(obs_date, obs_hour) partitions new rows fall in, with native Delta and the bridge. A table of the
old layout (partitioned by obs_date alone) is rebuilt in full by the next run."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake
from deltalake.transaction import CommitProperties

from analysis.minutes import MINUTES_JOB, job_fingerprint, run_minutes
from analysis.watermark import Watermark, read_watermark
from bench.bench_spine import generate
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse, LakehouseError
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
            obs_date=day, obs_hour=minute.hour, minute=minute, kind=kind, group_name=group, instance=inst, observations=len(obs),
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


def fresh(root: Path, spark, rows: pa.Table, mode: str | None = None) -> tuple[Lakehouse, SparkLakehouse]:
    lh = Lakehouse(root)
    lh.overwrite("broker_state", rows)
    return lh, SparkLakehouse(spark, lh, mode=mode)


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


def analyse_in_parts(root: Path, spark, parts: list[pa.Table], mode: str | None = None) -> tuple[Lakehouse, list[str]]:
    lh, slh = fresh(root, spark, parts[0], mode)
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


def micros(t: pa.Table) -> np.ndarray:
    return t.column("ts").cast(pa.int64()).to_numpy()


def us_at(when: datetime) -> int:
    return int((when - EPOCH).total_seconds() * 1e6)


@pytest.mark.parametrize("mode", ["native", "bridge"])
def test_increments_equal_one_full_run_on_generated_rows(generated, tmp_path, spark, mode):
    t0 = datetime(2026, 11, 22, 22, 30, tzinfo=timezone.utc)
    parts = parts_of(generated, [t0 + timedelta(seconds=s) for s in (1830.5, 5370, 5500)])  # mid-minute cuts, one on each side of midnight
    # every 13th row of hour 22 arrives after all the others: late rows into an old hour of the old day
    old_hour = (micros(parts[0]) < us_at(t0 + timedelta(minutes=30))) & (np.arange(parts[0].num_rows) % 13 == 0)
    parts = [parts[0].filter(pa.array(~old_hour)), *parts[1:], parts[0].filter(pa.array(old_hour))]
    lh, said = analyse_in_parts(tmp_path / "inc", spark, parts, mode)
    assert said[0] == "gold broker_minutes (full)" and all("incremental" in m for m in said[1:]), said
    # 23:00:30.5 → 23:59:30 rewrites hour 23; 23:59:30 → 00:01:40 spans the day boundary; the late rows hour 22 alone
    assert [m.split(", ", 1)[1] for m in said[1:3]] == ["1 day(s), 1 hour(s))", "2 day(s), 2 hour(s))"], said
    assert said[-1].endswith(", 1 day(s), 1 hour(s))"), said
    assert read_watermark(lh, MINUTES_JOB, ["broker_minutes"]).input_version == lh.version("broker_state")
    full, full_slh = fresh(tmp_path / "full", spark, generated, mode)
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


@pytest.mark.parametrize("mode", ["native", "bridge"])
def test_only_the_hours_new_rows_fall_in_are_rewritten(generated, tmp_path, spark, mode):
    """Each run replaces the (obs_date, obs_hour) partitions its new rows fall in and no other file:
    the rest of an hour, the next day's first hour, then one late row into the first hour."""
    us, index = micros(generated), np.arange(generated.num_rows)
    late = int(np.argmax(us >= us_at(datetime(2026, 11, 22, 22, 40, tzinfo=timezone.utc))))
    late_in_hour, midnight = us_at(datetime(2026, 11, 22, 23, 50, tzinfo=timezone.utc)), us_at(datetime(2026, 11, 23, tzinfo=timezone.utc))
    lh, slh = fresh(tmp_path / "lh", spark, generated.filter(pa.array((us < late_in_hour) & (index != late))), mode)
    run_minutes(slh)

    def files() -> dict[tuple[str, int], set[str]]:
        adds = pa.table(lh._open("broker_minutes").get_add_actions(flatten=True)).to_pydict()
        out = defaultdict(set)
        for path, day, hour in zip(adds["path"], adds["partition.obs_date"], adds["partition.obs_hour"]):
            out[(day, hour)].add(path)
        return dict(out)

    said: list[str] = []
    for rows, hour in (((us >= late_in_hour) & (us < midnight), ("2026-11-22", 23)),
                       (us >= midnight, ("2026-11-23", 0)), (index == late, ("2026-11-22", 22))):
        before = files()
        lh.append("broker_state", generated.filter(pa.array(rows)))
        run_minutes(slh, said.append)
        after = files()
        assert said[-1] == (f"gold broker_minutes (incremental: broker_state up to version {lh.version('broker_state')}, "
                            "1 day(s), 1 hour(s))")
        assert after[hour] != before.get(hour)
        assert {k: v for k, v in after.items() if k != hour} == {k: v for k, v in before.items() if k != hour}
    assert set(files()) == {("2026-11-22", 22), ("2026-11-22", 23), ("2026-11-23", 0)}
    assert table_rows(lh) == approx_rows(python_rollup(generated.to_pylist()))


@pytest.mark.parametrize("mode", ["native", "bridge"])
def test_a_table_of_the_old_layout_is_rebuilt_in_full(generated, tmp_path, spark, mode):
    """broker_minutes as written before obs_hour (partitioned by obs_date alone, no obs_hour column),
    its watermark current but for one append: the next run rebuilds it in the contract's layout with
    the rows of a fresh full run, and the run after it goes on incrementally."""
    n = generated.num_rows
    old, new, newer = generated.slice(0, n - 800), generated.slice(n - 800, 400), generated.slice(n - 400)
    lh, slh = fresh(tmp_path / "lh", spark, old, mode)
    stale = [{k: v for k, v in r.items() if k != "obs_hour"} for r in python_rollup(old.to_pylist())]
    mark = Watermark(MINUTES_JOB, lh.version("broker_state"), job_fingerprint())
    write_deltalake(lh.uri("broker_minutes"), pa.Table.from_pylist(stale, pa.schema([f for f in BROKER_MINUTES.schema if f.name != "obs_hour"])),
                    partition_by=["obs_date"], commit_properties=CommitProperties(custom_metadata=mark.commit_info()))
    assert read_watermark(lh, MINUTES_JOB, ["broker_minutes"]) == mark  # were it not for the layout: an increment
    lh.append("broker_state", new)
    with pytest.raises(LakehouseError, match="mix the two layouts"):
        slh.write("broker_minutes", slh.read("broker_minutes").limit(0), mode="append")
    said: list[str] = []
    run_minutes(slh, said.append)
    assert said == ["gold broker_minutes (full): rebuilding it from broker_state, the stored table is partitioned by "
                    "(obs_date), the contract by (obs_date, obs_hour)"]
    assert lh.partition_columns("broker_minutes") == ["obs_date", "obs_hour"]
    both = pa.concat_tables([old, new])
    full, full_slh = fresh(tmp_path / "full", spark, both, mode)
    run_minutes(full_slh)
    assert table_rows(lh) == table_rows(full) == approx_rows(python_rollup(both.to_pylist()))
    lh.append("broker_state", newer)
    run_minutes(slh, said.append)
    assert "incremental" in said[-1], said
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
