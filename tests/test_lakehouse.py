"""Lakehouse (delta-rs) and SparkLakehouse (native / bridge) on tiny frames built from the real
table contracts. One local Spark session for the whole file (tests/spark_fixtures.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakehouse import spark as spark_module
from lakehouse.spark import DeltaSparkUnavailableError, SparkLakehouse, delta_native_available, spark_schema
from lakehouse.store import Lakehouse, LakehouseError
from lakehouse.tables import contract
from tests.spark_fixtures import spark  # noqa: F401

UTC = dt.timezone.utc
BASE = dt.datetime(2024, 5, 1, 23, 58, 0, 123456, tzinfo=UTC)  # rows cross midnight: 2 partitions


def make_rows(name: str, n: int, start: int = 0, step_s: int = 20, obs_date: str | None = None) -> list[dict]:
    """Rows for any contract: unique keys, every type exercised, some nulls in nullable columns."""
    c = contract(name)
    rows = []
    for i in range(start, start + n):
        ts = BASE + dt.timedelta(seconds=i * step_s)
        r = {}
        for col in c.columns:
            t = col.type
            if col.name == "obs_date":
                v = obs_date or ts.strftime("%Y-%m-%d")
            elif col.name == "obs_key":
                v = hashlib.sha256(f"obs-{i}".encode()).hexdigest()
            elif pa.types.is_timestamp(t):
                v = ts
            elif pa.types.is_string(t):
                if col.name in c.keys or not col.nullable:
                    v = f"{col.name}-{i}"
                else:
                    v = None if i % 3 == 0 else f"{col.name}-{i % 4}"
            elif pa.types.is_boolean(t):
                v = None if (col.nullable and i % 5 == 0) else i % 2 == 0
            elif pa.types.is_integer(t):
                v = None if (col.nullable and i % 7 == 0) else i * 7
            elif pa.types.is_floating(t):
                v = None if (col.nullable and i % 6 == 0) else i * 0.25
            else:
                v = None
            r[col.name] = v
        rows.append(r)
    return rows


def table_of(name: str, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=contract(name).schema)


def normalized(name: str, t: pa.Table) -> pa.Table:
    """Same schema (nullability aside) and row order, for comparing results of different engines."""
    c = contract(name)
    schema = pa.schema([f.with_nullable(True) for f in c.schema])
    return t.select(c.column_names).cast(schema).sort_by([(k, "ascending") for k in c.keys])


def files_under(path) -> set[str]:
    out = set()
    for d, _dirs, files in os.walk(path):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), path))
    return out


@pytest.fixture
def lh(tmp_path) -> Lakehouse:
    return Lakehouse(tmp_path / "lake")


@pytest.fixture
def slh(spark, lh) -> SparkLakehouse:  # noqa: F811
    return SparkLakehouse(spark, lh, mode="bridge")


# --- Lakehouse (delta-rs) ------------------------------------------------------------------------


def test_uri_layout_and_missing_table(lh, tmp_path):
    assert lh.uri("bronze_jolokia") == str(tmp_path / "lake" / "bronze" / "bronze_jolokia")
    assert lh.uri("role_intervals").endswith(os.path.join("gold", "role_intervals"))
    assert Lakehouse(f"file://{tmp_path}/lake2").uri("broker_state") == str(tmp_path / "lake2" / "silver" / "broker_state")
    assert not lh.exists("broker_state") and lh.version("broker_state") is None
    assert lh.history("broker_state") == [] and lh.delete_where("broker_state", "instance = 'x'") == 0
    empty = lh.read("broker_state")
    assert empty.num_rows == 0 and empty.schema == contract("broker_state").schema
    assert lh.read("broker_state", columns=["ts", "instance"]).schema.names == ["ts", "instance"]
    with pytest.raises(KeyError, match="unknown table"):
        lh.uri("no_such_table")


def test_append_and_snapshot_read(lh):
    rows = make_rows("bronze_jolokia", 10)
    assert lh.append("bronze_jolokia", rows[:6]) == 6
    assert lh.append("bronze_jolokia", table_of("bronze_jolokia", rows[6:])) == 4
    assert lh.exists("bronze_jolokia") and lh.version("bronze_jolokia") == 1
    got = lh.read("bronze_jolokia")
    assert got.schema == contract("bronze_jolokia").schema
    assert normalized("bronze_jolokia", got).equals(normalized("bronze_jolokia", table_of("bronze_jolokia", rows)))
    dt_ = DeltaTable(lh.uri("bronze_jolokia"))
    assert dt_.metadata().partition_columns == ["obs_date"]
    assert sorted(p["obs_date"] for p in dt_.partitions()) == ["2024-05-01", "2024-05-02"]
    # projection + SQL filter (partition pruning + row filter)
    some = lh.read("bronze_jolokia", columns=["obs_key", "obs_date"], filter="obs_date = '2024-05-02'")
    assert some.schema.names == ["obs_key", "obs_date"]
    assert some.num_rows == sum(r["obs_date"] == "2024-05-02" for r in rows) > 0
    # missing nullable columns become null; an empty batch writes nothing
    minimal = [{k: v for k, v in r.items() if not contract("bronze_jolokia").schema.field(k).nullable}
               for r in make_rows("bronze_jolokia", 1, start=50)]
    assert lh.append("bronze_jolokia", minimal) == 1
    assert lh.append("bronze_jolokia", []) == 0 and lh.version("bronze_jolokia") == 2
    last = lh.read("bronze_jolokia", filter=f"obs_key = '{minimal[0]['obs_key']}'").to_pylist()[0]
    assert last["response_json"] is None and last["request_json"] == minimal[0]["request_json"]


@pytest.mark.parametrize("strategy", ["antijoin", "merge"])
def test_append_new_twice_no_duplicates(lh, strategy):
    rows = make_rows("broker_state", 12)
    batch = rows[:8] + rows[:2]  # duplicates inside the batch too
    assert lh._append_new("broker_state", batch, strategy=strategy) == 8
    assert lh._append_new("broker_state", batch, strategy=strategy) == 0
    assert lh._append_new("broker_state", rows, strategy=strategy) == 4
    got = lh.read("broker_state")
    keys = list(zip(got.column("obs_key").to_pylist(), got.column("instance").to_pylist()))
    assert len(keys) == len(set(keys)) == 12
    assert normalized("broker_state", got).equals(normalized("broker_state", table_of("broker_state", rows)))


@pytest.mark.parametrize("strategy", ["antijoin", "merge"])
def test_append_new_keeps_every_key_when_duplicates_are_interleaved(lh, strategy):
    """A recording replayed with duplicated lines next to their originals: every distinct row lands
    once (the first of each key), none is dropped in exchange for a duplicate."""
    rows = make_rows("bronze_jolokia", 6)
    batch = [rows[0], rows[0], rows[1], rows[2], rows[1], rows[3], rows[4], rows[4], rows[5]]
    assert lh._append_new("bronze_jolokia", batch, strategy=strategy) == 6
    assert sorted(lh.read("bronze_jolokia").column("obs_key").to_pylist()) == sorted(r["obs_key"] for r in rows)


def test_append_new_default_and_first_write(lh):
    rows = make_rows("bronze_jolokia", 5)
    assert lh.append_new("bronze_jolokia", rows + rows) == 5  # table created by the first call
    assert lh.append_new("bronze_jolokia", rows) == 0
    assert lh.read("bronze_jolokia").num_rows == 5


def test_append_new_of_bronze_reads_only_the_files_its_time_reaches(lh, monkeypatch):
    """bronze keys hash ts to the millisecond: the key check reads only the files whose ts range
    reaches the batch's, and still finds every stored key — an old batch replayed, a batch mixing
    old and new rows, a duplicate later within its millisecond (the window's slack)."""
    hours = [make_rows("bronze_jolokia", 30, start=h * 180) for h in range(4)]  # 4 files, an hour apart
    for rows in hours:
        assert lh.append_new("bronze_jolokia", rows) == 30
    read = []
    scan = DeltaTable.scan
    monkeypatch.setattr(DeltaTable, "scan", lambda self, **kw: (read.append(kw.get("predicate")), scan(self, **kw))[1])
    assert lh.append_new("bronze_jolokia", hours[1]) == 0  # replayed
    assert "ts >=" in read[-1]
    later = make_rows("bronze_jolokia", 5, start=4 * 180)
    assert lh.append_new("bronze_jolokia", hours[0][:3] + later) == 5  # old and new: only the new land
    same_ms = dict(hours[2][7], ts=hours[2][7]["ts"] + dt.timedelta(microseconds=900))
    assert lh.append_new("bronze_jolokia", [same_ms]) == 0
    window = read[-1]
    assert lh.read("bronze_jolokia").num_rows == 4 * 30 + 5
    assert len(pa.table(scan(DeltaTable(lh.uri("bronze_jolokia")), columns=["obs_key"], predicate=window))) == 1


def test_overwrite_idempotent_and_partition_overwrite(lh):
    rows = make_rows("broker_state", 10)
    assert lh.overwrite("broker_state", rows) == 10
    assert lh.overwrite("broker_state", rows) == 10
    hist = lh.history("broker_state")
    assert [h["version"] for h in hist] == [1, 0]
    assert all(h["operationParameters"]["mode"] in ("Overwrite", "ErrorIfExists") for h in hist)
    assert normalized("broker_state", lh.read("broker_state")).equals(normalized("broker_state", table_of("broker_state", rows)))
    # replace one partition only: rows of other days are kept
    day2 = [r for r in rows if r["obs_date"] == "2024-05-02"]
    new_day2 = make_rows("broker_state", 3, start=100, obs_date="2024-05-02")
    for _ in range(2):  # idempotent too
        assert lh.overwrite("broker_state", new_day2, partition_filter={"obs_date": "2024-05-02"}) == 3
    got = lh.read("broker_state")
    assert got.num_rows == len(rows) - len(day2) + 3
    assert set(got.filter(pa.compute.equal(got["obs_date"], "2024-05-02"))["obs_key"].to_pylist()) == {
        r["obs_key"] for r in new_day2}
    # rows outside the filter are refused (nothing written)
    with pytest.raises(LakehouseError, match="broker_state"):
        lh.overwrite("broker_state", rows[:1], partition_filter="obs_date = '1999-01-01'")
    assert lh.read("broker_state").num_rows == got.num_rows


def test_delete_where(lh):
    rows = make_rows("broker_state", 10)
    lh.append("broker_state", rows)
    assert lh.delete_where("broker_state", "obs_date = '2024-05-01'") == sum(r["obs_date"] == "2024-05-01" for r in rows)
    assert set(lh.read("broker_state")["obs_date"].to_pylist()) == {"2024-05-02"}
    with pytest.raises(ValueError):
        lh.delete_where("broker_state", " ")


@pytest.mark.parametrize(
    "mutate, column",
    [
        (lambda r: r.update(bogus_col=1), "bogus_col"),
        (lambda r: r.update(connections="three"), "connections"),
        (lambda r: r.update(ts="2024-05-01T00:00:00Z"), "ts"),
        (lambda r: r.pop("instance"), "instance"),
        (lambda r: r.update(reachable=None), "reachable"),
    ],
    ids=["extra", "wrong-type", "ts-as-string", "missing-required", "null-required"],
)
def test_schema_errors_name_the_column(lh, mutate, column):
    rows = make_rows("broker_state", 3)
    mutate(rows[1])
    with pytest.raises(LakehouseError) as e:
        lh.append("broker_state", rows)
    assert repr(column) in str(e.value) and "broker_state" in str(e.value)
    assert not lh.exists("broker_state")


def test_arrow_schema_errors_name_the_column(lh):
    t = table_of("broker_state", make_rows("broker_state", 3))
    with pytest.raises(LakehouseError, match="'extra'"):
        lh.append("broker_state", t.append_column("extra", pa.array([1, 2, 3])))
    idx = t.schema.get_field_index("uptime_ms")
    with pytest.raises(LakehouseError, match="'uptime_ms'"):
        lh.append("broker_state", t.set_column(idx, "uptime_ms", pa.array(["a", "b", "c"])))
    # compatible types are cast: int32 → int64, naive timestamps (taken as UTC), large_string
    ok = t.set_column(idx, "uptime_ms", t["uptime_ms"].cast(pa.int32()))
    ok = ok.set_column(ok.schema.get_field_index("ts"), "ts", ok["ts"].cast(pa.timestamp("us")))
    ok = ok.set_column(ok.schema.get_field_index("kind"), "kind", ok["kind"].cast(pa.large_string()))
    assert lh.append("broker_state", ok) == 3
    assert normalized("broker_state", lh.read("broker_state")).equals(normalized("broker_state", t))


# --- corruption ----------------------------------------------------------------------------------


def test_garbled_log_gives_clear_error_and_writes_refuse(lh):
    lh.append("bronze_jolokia", make_rows("bronze_jolokia", 3))
    lh.append("bronze_jolokia", make_rows("bronze_jolokia", 3, start=3))
    commit = os.path.join(lh.uri("bronze_jolokia"), "_delta_log", "00000000000000000001.json")
    with open(commit, "w") as fh:
        fh.write('{"add": {"path": garbage')
    before = files_under(lh.uri("bronze_jolokia"))
    for op in (lambda: lh.read("bronze_jolokia"), lambda: lh.version("bronze_jolokia"),
               lambda: lh.append("bronze_jolokia", make_rows("bronze_jolokia", 1, start=9)),
               lambda: lh.overwrite("bronze_jolokia", make_rows("bronze_jolokia", 1, start=9))):
        with pytest.raises(LakehouseError) as e:
            op()
        msg = str(e.value)
        assert "'bronze_jolokia'" in msg and lh.uri("bronze_jolokia") in msg
        assert "00000000000000000001.json" in msg and "version 0" in msg and "what to do" in msg
    assert files_under(lh.uri("bronze_jolokia")) == before  # nothing written


def test_missing_data_file_gives_clear_error(lh, slh):
    lh.append("broker_state", make_rows("broker_state", 6))
    victim = DeltaTable(lh.uri("broker_state")).file_uris()[0]
    os.remove(victim)
    with pytest.raises(LakehouseError) as e:
        lh.read("broker_state")
    msg = str(e.value)
    assert "'broker_state'" in msg and "missing" in msg and os.path.basename(victim) in msg and "repair()" in msg
    with pytest.raises(LakehouseError, match=r"(?s)missing.*repair\(\)"):
        slh.read("broker_state")
    assert lh.version("broker_state") == 0  # the log itself is fine


@pytest.mark.parametrize("lookups_max", [64, 0], ids=["file-by-file", "one-listing"])
def test_the_files_of_a_remote_read_are_checked_too(lh, slh, monkeypatch, lookups_max):
    """An object store is looked up file by file for a few files, listed once for many (the check
    runs against pyarrow's filesystem as for s3://; here its local one)."""
    lh.append("broker_state", make_rows("broker_state", 6))
    lh.append("broker_state", make_rows("broker_state", 6, start=6))
    uris = DeltaTable(lh.uri("broker_state")).file_uris()
    rels = [os.path.relpath(u, lh.uri("broker_state")) for u in uris]
    monkeypatch.setattr(lh, "is_local", False)
    monkeypatch.setattr(spark_module, "REMOTE_LOOKUPS_MAX", lookups_max)
    contract_ = contract("broker_state")
    slh._check_files_exist(contract_, rels)  # all there: no error
    os.remove(uris[1])
    with pytest.raises(LakehouseError, match=r"(?s)1 data file\(s\).*missing.*" + re.escape(os.path.basename(uris[1]))):
        slh._check_files_exist(contract_, rels)
    slh._check_files_exist(contract_, rels[:1])  # only the files read are checked


def test_foreign_folder_is_refused_and_left_alone(lh, slh, spark):  # noqa: F811
    path = lh.uri("role_intervals")
    os.makedirs(path)
    with open(os.path.join(path, "notes.txt"), "w") as fh:
        fh.write("someone else's data")
    for op in (lambda: lh.read("role_intervals"),
               lambda: lh.append("role_intervals", make_rows("role_intervals", 2)),
               lambda: lh.overwrite("role_intervals", make_rows("role_intervals", 2)),
               lambda: slh.read("role_intervals"),
               lambda: slh.write("role_intervals", spark.createDataFrame(table_of("role_intervals", make_rows("role_intervals", 2))))):
        with pytest.raises(LakehouseError) as e:
            op()
        assert "'role_intervals'" in str(e.value) and "not a Delta table" in str(e.value) and "notes.txt" in str(e.value)
        assert "Move the folder away" in str(e.value)
    assert files_under(path) == {"notes.txt"}
    assert not lh.exists("role_intervals")


def test_first_write_killed_before_its_commit_is_not_foreign(lh, slh, spark):  # noqa: F811
    # what a kill -9 of the analyzer during a table's first bridge write leaves: staging, no log
    path = lh.uri("role_intervals")
    stale = os.path.join(path, "bridge-20261122T055800Z-51891df1385a", "_temporary", "0")
    os.makedirs(stale)
    with open(os.path.join(stale, "part-00000-x.snappy.parquet"), "wb") as fh:
        fh.write(b"PAR1 half written")
    assert not lh.exists("role_intervals")
    assert lh.read("role_intervals").num_rows == 0
    rows = make_rows("role_intervals", 3)
    assert slh.write("role_intervals", spark.createDataFrame(table_of("role_intervals", rows))) == 3
    assert lh.read("role_intervals").num_rows == 3
    assert not os.path.exists(os.path.dirname(os.path.dirname(stale)))  # the leftover is gone


def test_first_delta_rs_write_killed_before_its_commit_is_not_foreign(lh):
    # delta-rs writes the data files, then the log entry: a kill -9 in between (the GC tailer's
    # first poll, say) leaves part files in the partition folders and no log. Made for real here:
    # a first write, its log removed.
    name = "bronze_gc_lines"
    assert contract(name).partition_by
    path = lh.uri(name)
    lh.append(name, make_rows(name, 4))
    shutil.rmtree(os.path.join(path, "_delta_log"))
    leftovers = files_under(path)
    assert leftovers and all("=" in f.split("/")[0] and f.endswith(".parquet") for f in leftovers)
    assert not lh.exists(name)
    assert lh.read(name).num_rows == 0  # nothing was committed
    lh.append(name, make_rows(name, 3, start=10))
    assert lh.read(name).num_rows == 3  # only the committed rows; the orphans stay unreferenced
    # anything else beside such files is still someone else's folder
    other = lh.uri("bronze_zk")
    lh.append("bronze_zk", make_rows("bronze_zk", 2))
    shutil.rmtree(os.path.join(other, "_delta_log"))
    with open(os.path.join(other, "notes.txt"), "w") as fh:
        fh.write("someone else's data")
    with pytest.raises(LakehouseError, match="not a Delta table"):
        lh.read("bronze_zk")


# --- Spark: session, modes ------------------------------------------------------------------------


def test_spark_session_defaults(spark):  # noqa: F811
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"


def test_native_mode_without_jars_is_a_clear_error(spark, lh):  # noqa: F811
    if delta_native_available(spark):
        pytest.skip("delta-spark is on the classpath here")
    with pytest.raises(DeltaSparkUnavailableError, match=r"(?s)io\.delta\.sql\.DeltaSparkSessionExtension.*bridge"):
        SparkLakehouse(spark, lh, mode="native")
    assert SparkLakehouse(spark, lh).mode == "bridge"  # auto


def test_native_roundtrip(spark, lh):  # noqa: F811
    if not delta_native_available(spark):
        pytest.skip("delta_native_available(spark) is False: delta-spark's JVM classes are not on the classpath")
    nl = SparkLakehouse(spark, lh, mode="native")
    rows = make_rows("broker_state", 8)
    assert nl.write("broker_state", spark.createDataFrame(table_of("broker_state", rows))) == 8
    assert normalized("broker_state", lh.read("broker_state")).equals(normalized("broker_state", table_of("broker_state", rows)))
    assert normalized("broker_state", nl.read("broker_state").toArrow()).equals(normalized("broker_state", table_of("broker_state", rows)))


@pytest.mark.parametrize("mode", ["native", "bridge"])
def test_a_write_of_no_rows_over_no_rows_still_records_its_commit_info(spark, lh, mode):  # noqa: F811
    """delta-spark commits nothing when no file is added or removed; the job's watermark must still
    land in the table's latest commit, or every later run of the job recomputes in full."""
    if mode == "native" and not delta_native_available(spark):
        pytest.skip("delta_native_available(spark) is False: delta-spark's JVM classes are not on the classpath")
    sl = SparkLakehouse(spark, lh, mode=mode)
    empty = spark.createDataFrame(table_of("ha_group_checks", []))
    for run in ("1", "2"):
        sl.write("ha_group_checks", empty, commit_info={"brokerscope.watermark": run})
        last = lh.history("ha_group_checks")[0]
        recorded = json.loads(last["userMetadata"]) if mode == "native" else last
        assert recorded["brokerscope.watermark"] == run
    assert lh.count("ha_group_checks") == 0


def native_lakehouse(spark, lh) -> SparkLakehouse:  # noqa: F811
    if not delta_native_available(spark):
        pytest.skip("delta_native_available(spark) is False: delta-spark's JVM classes are not on the classpath")
    return SparkLakehouse(spark, lh, mode="native")


def log_actions(lh, name: str, version: int) -> list[dict]:
    with open(os.path.join(lh.uri(name), "_delta_log", f"{version:020d}.json")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_native_overwrite_append_and_replace_where_through_the_transaction(spark, lh):  # noqa: F811
    """Writes to an existing table go through delta-spark's own transaction (lakehouse/delta_txn.py):
    an overwrite removes exactly the files it replaces in its own version, replace_where only the
    partitions it matches, append adds; the job's commit info lands; and no Delta snapshot job runs
    (what WriteIntoDelta spent ~0.9 s on per overwrite)."""
    nl = native_lakehouse(spark, lh)
    first = table_of("broker_state", make_rows("broker_state", 10))
    second = table_of("broker_state", make_rows("broker_state", 6, start=500))
    nl.write("broker_state", spark.createDataFrame(first))
    group = "test-native-txn-write"
    spark.sparkContext.setJobGroup(group, "native writes through the transaction")
    try:
        for run in ("a", "b"):  # idempotent
            assert nl.write("broker_state", spark.createDataFrame(second), commit_info={"w": run}) == 6
            assert normalized("broker_state", lh.read("broker_state")).equals(normalized("broker_state", second))
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert delta_jobs_in_group(spark, group) == []
    hist = lh.history("broker_state")
    assert [h["version"] for h in hist] == [2, 1, 0] and json.loads(hist[0]["userMetadata"]) == {"w": "b"}
    assert hist[0]["operationParameters"]["mode"] == "Overwrite"
    actions = log_actions(lh, "broker_state", 2)
    added = {a["add"]["path"] for a in actions if "add" in a}
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    assert added and removed and removed.isdisjoint(added)
    assert removed == {a["add"]["path"] for a in log_actions(lh, "broker_state", 1) if "add" in a}
    assert nl.write("broker_state", spark.createDataFrame(first), mode="append") == 10
    assert nl.read("broker_state").count() == 16
    # replace_where: the matched partition's files only; rows outside it refused, nothing changes
    keep = [r for r in lh.read("broker_state").to_pylist() if r["obs_date"] == "2024-05-01"]
    new = make_rows("broker_state", 4, start=900, obs_date="2024-05-02")
    assert nl.write("broker_state", spark.createDataFrame(table_of("broker_state", new)),
                    replace_where="obs_date = '2024-05-02'") == 4
    assert normalized("broker_state", lh.read("broker_state")).equals(
        normalized("broker_state", table_of("broker_state", keep + new)))
    assert "obs_date = '2024-05-02'" in str(lh.history("broker_state")[0]["operationParameters"])
    v = lh.version("broker_state")
    with pytest.raises(LakehouseError, match="replace_where"):
        nl.write("broker_state", spark.createDataFrame(table_of("broker_state", keep[:1])), replace_where="obs_date = '2024-05-02'")
    assert lh.version("broker_state") == v
    # an overwrite with no rows empties the table in one version of removes
    assert nl.write("broker_state", spark.createDataFrame([], spark_schema("broker_state"))) == 0
    assert lh.read("broker_state").num_rows == 0 and lh.version("broker_state") == v + 1


def test_native_overwrite_conflicts_with_an_append_it_did_not_see(spark, lh):  # noqa: F811
    """An overwrite reads the whole table: a row appended by another writer (a collector) while it
    writes must make it fail, never be silently outlived or dropped."""
    nl = native_lakehouse(spark, lh)
    nl.write("broker_state", spark.createDataFrame(table_of("broker_state", make_rows("broker_state", 4))))
    uri, late = lh.uri("broker_state"), table_of("broker_state", make_rows("broker_state", 2, start=700))

    def append_meanwhile(batches):  # runs inside the overwrite's write job, i.e. after its snapshot
        Lakehouse(os.path.dirname(os.path.dirname(uri))).append("broker_state", late)
        yield from batches

    replacement = spark.createDataFrame(table_of("broker_state", make_rows("broker_state", 3, start=300)))
    racing = replacement.coalesce(1).mapInArrow(append_meanwhile, replacement.schema)
    with pytest.raises(LakehouseError, match="(?i)concurrent"):
        nl.write("broker_state", racing)
    assert {r["obs_key"] for r in lh.read("broker_state").to_pylist()} >= {r["obs_key"] for r in late.to_pylist()}


def delta_jobs_in_group(spark, group: str) -> list[str]:  # noqa: F811
    """Descriptions of delta-spark's own jobs ("Delta: Filtering files for query", "Delta: Compute
    snapshot …") among the jobs of a job group, from Spark's status store."""
    seq = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    jobs = [seq.apply(i) for i in range(seq.size())]
    return [j.description().get() for j in jobs if j.jobGroup().isDefined() and j.jobGroup().get() == group
            and j.description().isDefined() and j.description().get().startswith("Delta:")]


def test_native_reads_pin_one_snapshot_and_plan_no_delta_job(spark, lh):  # noqa: F811
    """A native read lists the table's files once, when it is made (lakehouse/delta_snapshot.py): it
    sees the commit just made, a frame read before a later commit keeps its version (as the bridge's
    file list does), and queries over it run none of delta-spark's file-listing jobs."""
    if not delta_native_available(spark):
        pytest.skip("delta_native_available(spark) is False: delta-spark's JVM classes are not on the classpath")
    nl = SparkLakehouse(spark, lh, mode="native")
    first, second = make_rows("broker_state", 8), make_rows("broker_state", 5, start=100)
    nl.write("broker_state", spark.createDataFrame(table_of("broker_state", first)))
    before = nl.read("broker_state")
    nl.write("broker_state", spark.createDataFrame(table_of("broker_state", second)))
    after = nl.read("broker_state")
    group = "test-native-pinned-read"
    spark.sparkContext.setJobGroup(group, "queries over pinned native reads")
    try:
        assert after.count() == 5 and before.count() == 8
        assert after.where("obs_date = '2024-05-02'").count() == sum(r["obs_date"] == "2024-05-02" for r in second)
        assert {r["obs_key"] for r in after.select("obs_key").collect()} == {r["obs_key"] for r in second}
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert delta_jobs_in_group(spark, group) == []


def test_native_reads_of_a_delta_rs_table_replay_its_log_once_per_version(spark, lh):  # noqa: F811
    """A table delta-rs wrote has no file list in a checksum: the first native read of a version
    replays its log (Spark jobs), later reads of that version reuse the list; a new version, and the
    same version of a table deleted and written again at the same path, are read afresh."""
    if not delta_native_available(spark):
        pytest.skip("delta_native_available(spark) is False: delta-spark's JVM classes are not on the classpath")
    nl = SparkLakehouse(spark, lh, mode="native")
    rows = make_rows("bronze_jolokia", 12)

    def jobs_of_reading(group: str) -> int:
        spark.sparkContext.setJobGroup(group, "native reads of a delta-rs table")
        try:
            frame = nl.read("bronze_jolokia")
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        seq = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
        return frame, sum(1 for i in range(seq.size()) if seq.apply(i).jobGroup().isDefined()
                          and seq.apply(i).jobGroup().get() == group)

    lh.append("bronze_jolokia", rows[:7])
    first, jobs = jobs_of_reading("native-rs-read-1")
    assert jobs > 0 and first.count() == 7  # the log replayed
    again, jobs = jobs_of_reading("native-rs-read-2")
    assert jobs == 0 and again.count() == 7
    lh.append("bronze_jolokia", rows[7:])
    newer, jobs = jobs_of_reading("native-rs-read-3")
    assert jobs > 0 and newer.count() == 12
    shutil.rmtree(lh.uri("bronze_jolokia"))
    lh.append("bronze_jolokia", rows[:3])
    lh.append("bronze_jolokia", rows[3:5])  # version 1 again, of another table
    other, jobs = jobs_of_reading("native-rs-read-4")
    assert other.count() == 5


# --- Spark bridge ---------------------------------------------------------------------------------


def test_bridge_spark_write_then_deltars_read_identical(spark, lh, slh):  # noqa: F811
    rows = make_rows("broker_state", 20)
    expected = table_of("broker_state", rows)
    assert slh.write("broker_state", spark.createDataFrame(expected)) == 20
    got = lh.read("broker_state")
    assert got.schema == contract("broker_state").schema
    assert normalized("broker_state", got).equals(normalized("broker_state", expected))
    dt_ = DeltaTable(lh.uri("broker_state"))
    assert dt_.metadata().partition_columns == ["obs_date"] and dt_.metadata().name == "broker_state"
    adds = pa.table(dt_.get_add_actions(flatten=True)).to_pylist()
    assert {a["partition.obs_date"] for a in adds} == {"2024-05-01", "2024-05-02"}
    for a in adds:  # Delta conventions: col=value folders, stats from the Parquet footers
        assert f"/obs_date={a['partition.obs_date']}/" in a["path"] and a["path"].startswith("bridge-")
        assert a["num_records"] > 0 and a["min.ts"] <= a["max.ts"] and a["null_count.obs_key"] == 0
    assert sum(a["num_records"] for a in adds) == 20
    assert not any(f.endswith("_SUCCESS") for f in files_under(lh.uri("broker_state")))
    # delta-rs uses the stats to prune files
    assert dt_.file_uris(file_pruning_predicate="ts > '2030-01-01T00:00:00Z'") == []
    assert dt_.file_uris(file_pruning_predicate="obs_key = 'zzz'") == []
    assert lh.read("broker_state", filter=f"obs_key = '{rows[3]['obs_key']}'").num_rows == 1


def test_bridge_deltars_write_then_spark_read_identical(spark, lh, slh):  # noqa: F811
    rows = make_rows("bronze_jolokia", 15)
    lh.append("bronze_jolokia", rows[:9])
    lh.append("bronze_jolokia", rows[9:])
    df = slh.read("bronze_jolokia")
    assert [(f.name, f.dataType) for f in df.schema.fields] == [(f.name, f.dataType) for f in spark_schema("bronze_jolokia").fields]
    got = df.toArrow()
    assert normalized("bronze_jolokia", got).equals(normalized("bronze_jolokia", table_of("bronze_jolokia", rows)))
    counts = {r["obs_date"]: r["count"] for r in df.groupBy("obs_date").count().collect()}
    assert counts == {d: sum(r["obs_date"] == d for r in rows) for d in ("2024-05-01", "2024-05-02")}


def test_bridge_partition_values_with_odd_characters_round_trip(spark, lh, slh):  # noqa: F811
    odd = ["2024-05-01 a:b%c", "x/y", "ü é", "q{1}[2]"]
    rows = [r for i, d in enumerate(odd) for r in make_rows("bronze_jolokia", 2, start=10 * i, obs_date=d)]
    lh.append("bronze_jolokia", rows[:4])  # delta-rs writes half, Spark the other half
    assert slh.write("bronze_jolokia", spark.createDataFrame(table_of("bronze_jolokia", rows[4:])), mode="append") == 4
    expected = normalized("bronze_jolokia", table_of("bronze_jolokia", rows))
    assert normalized("bronze_jolokia", slh.read("bronze_jolokia").toArrow()).equals(expected)
    assert normalized("bronze_jolokia", lh.read("bronze_jolokia")).equals(expected)


def test_bridge_overwrite_replaces_rows(spark, lh, slh):  # noqa: F811
    first = table_of("broker_state", make_rows("broker_state", 10))
    second = table_of("broker_state", make_rows("broker_state", 6, start=500))
    slh.write("broker_state", spark.createDataFrame(first))
    for _ in range(2):  # idempotent
        assert slh.write("broker_state", spark.createDataFrame(second), mode="overwrite") == 6
        assert normalized("broker_state", lh.read("broker_state")).equals(normalized("broker_state", second))
    hist = lh.history("broker_state")
    assert [h["version"] for h in hist] == [2, 1, 0]
    assert hist[0]["operationParameters"]["mode"] == "Overwrite"
    # the overwrite commit itself removes the files it replaces (one atomic version)
    with open(os.path.join(lh.uri("broker_state"), "_delta_log", "00000000000000000002.json")) as fh:
        actions = [json.loads(line) for line in fh if line.strip()]
    added = {a["add"]["path"] for a in actions if "add" in a}
    assert added and {a["remove"]["path"] for a in actions if "remove" in a}.isdisjoint(added)
    assert len([a for a in actions if "remove" in a]) >= 2
    assert hist[0]["brokerscope.writer"] == "spark-bridge"
    assert DeltaTable(lh.uri("broker_state")).count() == 6
    # append adds
    assert slh.write("broker_state", spark.createDataFrame(first), mode="append") == 10
    assert slh.read("broker_state").count() == 16
    # overwrite with nothing empties the table (a version with only removes)
    assert slh.write("broker_state", spark.createDataFrame([], spark_schema("broker_state"))) == 0
    assert lh.read("broker_state").num_rows == 0 and lh.version("broker_state") == 4


@pytest.mark.parametrize("via_removes", [False, True], ids=["overwrite+partition_filters", "remove-actions"])
def test_bridge_replace_where(spark, lh, slh, via_removes):  # noqa: F811
    slh._replace_where_via_removes = via_removes
    rows = make_rows("broker_state", 12)
    slh.write("broker_state", spark.createDataFrame(table_of("broker_state", rows)))
    keep = [r for r in rows if r["obs_date"] == "2024-05-01"]
    new = make_rows("broker_state", 4, start=900, obs_date="2024-05-02")
    for _ in range(2):
        n = slh.write("broker_state", spark.createDataFrame(table_of("broker_state", new)),
                      replace_where="obs_date = '2024-05-02'")
        assert n == 4
        assert normalized("broker_state", lh.read("broker_state")).equals(
            normalized("broker_state", table_of("broker_state", keep + new)))
    # rows outside the predicate, or a predicate on a data column: refused, nothing changes
    v, before = lh.version("broker_state"), files_under(lh.uri("broker_state"))
    with pytest.raises(LakehouseError, match="replace_where"):
        slh.write("broker_state", spark.createDataFrame(table_of("broker_state", keep[:1])),
                  replace_where="obs_date = '2024-05-02'")
    with pytest.raises(LakehouseError, match="partition column"):
        slh.write("broker_state", spark.createDataFrame(table_of("broker_state", new)), replace_where="instance = 'x'")
    assert lh.version("broker_state") == v and files_under(lh.uri("broker_state")) == before


def test_bridge_unpartitioned_round_trip_and_append(spark, lh, slh):  # noqa: F811
    rows = make_rows("role_intervals", 7)
    expected = table_of("role_intervals", rows)
    assert slh.write("role_intervals", spark.createDataFrame(expected)) == 7
    assert normalized("role_intervals", slh.read("role_intervals").toArrow()).equals(normalized("role_intervals", expected))
    assert normalized("role_intervals", lh.read("role_intervals")).equals(normalized("role_intervals", expected))
    more = make_rows("role_intervals", 3, start=7)
    lh.append("role_intervals", more)
    assert slh.read("role_intervals").count() == 10
    with pytest.raises(LakehouseError, match="partitioned"):
        slh.write("role_intervals", spark.createDataFrame(expected), replace_where="kind = 'x'")


def test_empty_table_reads_have_contract_schema(spark, lh, slh):  # noqa: F811
    for name in ("bronze_jolokia", "broker_state", "failover_events"):
        df = slh.read(name)
        assert df.count() == 0
        assert [(f.name, f.dataType) for f in df.schema.fields] == [(f.name, f.dataType) for f in spark_schema(name).fields]
        assert lh.read(name).schema == contract(name).schema
    ts_field = spark_schema("broker_state")["ts"]
    assert ts_field.dataType.typeName() == "timestamp"  # TimestampType (UTC instants), not NTZ


def test_bridge_write_schema_errors(spark, lh, slh):  # noqa: F811
    t = table_of("broker_state", make_rows("broker_state", 2))
    df = spark.createDataFrame(t)
    with pytest.raises(LakehouseError, match="'surprise'"):
        slh.write("broker_state", df.withColumn("surprise", df.uptime_ms))
    with pytest.raises(LakehouseError, match="'connections'"):
        slh.write("broker_state", df.withColumn("connections", df.instance))
    with pytest.raises(LakehouseError, match="'role'"):
        slh.write("broker_state", df.drop("role"))
    # compatible: int → bigint cast, missing nullable column → null
    ok = df.withColumn("uptime_ms", df.uptime_ms.cast("int")).drop("error")
    assert slh.write("broker_state", ok) == 2
    assert lh.read("broker_state")["error"].null_count == 2


def test_failing_spark_write_leaves_no_files_or_versions(spark, lh, slh):  # noqa: F811
    rows = make_rows("broker_state", 6)
    slh.write("broker_state", spark.createDataFrame(table_of("broker_state", rows)))
    before_files, before_version = files_under(lh.uri("broker_state")), lh.version("broker_state")
    bad = spark.createDataFrame(table_of("broker_state", make_rows("broker_state", 6, start=50)))
    from pyspark.sql import functions as F

    bad = bad.withColumn("reachable", F.when(F.col("uptime_ms") > 360, F.lit(None)).otherwise(F.col("reachable")))
    for mode in ("append", "overwrite"):
        with pytest.raises(LakehouseError, match=r"(?s)nothing was committed.*'reachable'"):
            slh.write("broker_state", bad, mode=mode)
        assert files_under(lh.uri("broker_state")) == before_files
        assert lh.version("broker_state") == before_version
    # a failing first write leaves no table behind either
    with pytest.raises(LakehouseError):
        slh.write("failover_events", spark.createDataFrame(
            table_of("failover_events", make_rows("failover_events", 2))).withColumn("overlap", F.lit(None).cast("boolean")))
    assert files_under(lh.uri("failover_events")) == set() and not lh.exists("failover_events")


def test_bridge_refuses_column_mapping_tables(spark, lh, slh):  # noqa: F811
    c = contract("broker_state")
    DeltaTable.create(lh.uri("broker_state"), c.schema, partition_by=list(c.partition_by),
                      configuration={"delta.columnMapping.mode": "name"})
    write_deltalake(lh.uri("broker_state"), table_of("broker_state", make_rows("broker_state", 3)), mode="append")
    assert lh.read("broker_state").num_rows == 3  # delta-rs honours column mapping
    with pytest.raises(LakehouseError, match="(?s)cannot read this table.*column mapping"):
        slh.read("broker_state")
    with pytest.raises(LakehouseError, match="(?s)cannot write this table.*column mapping"):
        slh.write("broker_state", spark.createDataFrame(table_of("broker_state", make_rows("broker_state", 1))))
    assert lh.read("broker_state").num_rows == 3


def test_lakehouse_error_is_informative():
    e = LakehouseError("t", "/x/t", "it broke", "do this")
    assert (e.table, e.path, e.cause, e.advice) == ("t", "/x/t", "it broke", "do this")
    assert str(e) == "table 't' at /x/t: it broke\n  what to do: do this"


def test_bridge_refuses_deletion_vectors_and_unknown_features(spark, lh, slh):  # noqa: F811
    from types import SimpleNamespace as NS

    def fake(reader_features, dv_rows):
        return NS(protocol=lambda: NS(reader_features=reader_features, min_reader_version=3),
                  metadata=lambda: NS(configuration={}),
                  deletion_vectors=lambda: [pa.record_batch({"filepath": pa.array(["f"] * dv_rows, pa.string())})])

    c = contract("broker_state")
    slh._check_bridge_readable(c, fake(["deletionVectors"], 0))  # feature enabled, none in use: fine
    with pytest.raises(LakehouseError, match="(?s)cannot read this table.*deletion vectors.*REORG"):
        slh._check_bridge_readable(c, fake(["deletionVectors"], 1))
    with pytest.raises(LakehouseError, match="reader feature.*fancyNewThing"):
        slh._check_bridge_readable(c, fake(["fancyNewThing"], 0))
