"""`SparkLakehouse.read_appended` (lakehouse/spark.py): what commits since a version added, from the
commits' JSON files — over many commits and across delta-rs checkpoints it equals the answer of two
snapshots (the table now minus the table at that version), and it is None once a commit since removed
files (an overwrite, a compaction, a delete) or a commit it needs is gone."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakehouse.spark import SparkLakehouse, added_files
from lakehouse.store import Lakehouse
from lakehouse.tables import contract
from tests.spark_fixtures import spark  # noqa: F401

T0 = dt.datetime(2026, 11, 27, 23, 59, 50, tzinfo=dt.timezone.utc)


def health(k: int, n: int = 3) -> pa.Table:
    """n scrapes of commit k, across midnight (two obs_date partitions)."""
    rows = []
    for i in range(n):
        ts = T0 + dt.timedelta(seconds=k + i / 10)
        rows.append({"obs_key": f"i{i}/{k}", "ts": ts, "obs_date": ts.strftime("%Y-%m-%d"), "kind": "activemq",
                     "target": f"i{i}", "instance": f"i{i}", "group_name": "g", "answered": True,
                     "items": k, "items_ok": k, "items_failed": 0})
    return pa.Table.from_pylist(rows, schema=contract("collector_health").schema)


def keys(df) -> Counter:
    return Counter((r.obs_key, r.obs_date, r.items) for r in df.collect())


def at_version(lh: Lakehouse, version: int | None) -> Counter:
    t = pa.table(DeltaTable(lh.uri("collector_health"), version=version).to_pyarrow_dataset().to_table(
        columns=["obs_key", "obs_date", "items"]))
    return Counter(zip(*(t.column(c).to_pylist() for c in ("obs_key", "obs_date", "items"))))


def test_read_appended_over_many_commits_equals_two_snapshots(tmp_path, spark):  # noqa: F811
    lh = Lakehouse(tmp_path)
    for k in range(112):  # past the checkpoint delta-rs writes at version 99
        lh.append("collector_health", health(k))
    slh = SparkLakehouse(spark, lh)
    now = lh.version("collector_health")
    assert now == 111
    assert os.path.exists(os.path.join(lh.uri("collector_health"), "_delta_log", f"{99:020d}.checkpoint.parquet"))
    for since in (0, 57, 98, 99, 100, 104, now):
        got = slh.read_appended("collector_health", since)
        assert got is not None and got.version == now
        assert keys(got.new) == at_version(lh, None) - at_version(lh, since), since
        assert keys(got.old) == at_version(lh, since), since
    assert len(added_files(lh, "collector_health", 0, now)) >= now  # a file per commit and partition


def test_read_appended_is_none_after_an_overwrite_a_compaction_or_a_delete(tmp_path, spark):  # noqa: F811
    for change in ("overwrite", "compact", "delete", "ahead"):
        lh = Lakehouse(tmp_path / change)
        for k in range(5):
            lh.append("collector_health", health(k))
        slh = SparkLakehouse(spark, lh)
        assert slh.read_appended("collector_health", 2) is not None
        if change == "overwrite":
            lh.overwrite("collector_health", health(9))
        elif change == "compact":
            DeltaTable(lh.uri("collector_health")).optimize.compact()
        elif change == "delete":
            lh.delete_where("collector_health", "items = 1")
        lh.append("collector_health", health(6))
        since = 9 if change == "ahead" else 2
        assert slh.read_appended("collector_health", since) is None, change
        got = slh.read_appended("collector_health", lh.version("collector_health") - 1)  # the append after it
        assert got is not None and keys(got.new) == Counter((f"i{i}/6", "2026-11-27", 6) for i in range(3)), change
    # a commit after the version asked for is gone (log cleanup)
    os.remove(os.path.join(lh.uri("collector_health"), "_delta_log", f"{3:020d}.json"))
    assert added_files(lh, "collector_health", 2, 5) is None
    assert added_files(lh, "collector_health", 3, 5) is not None


@pytest.mark.parametrize("mode", ["bridge", "auto"])
def test_read_appended_since_the_current_version_is_empty(tmp_path, spark, mode):  # noqa: F811
    lh = Lakehouse(tmp_path)
    lh.append("collector_health", health(0))
    got = SparkLakehouse(spark, lh, mode=mode).read_appended("collector_health", 0)
    assert got is not None and got.new.count() == 0 and got.old.count() == 3
