"""Native Delta writes through delta-spark's own transaction, without `WriteIntoDelta`'s fixed cost.

`df.write.format("delta").mode("overwrite").save(path)` (WriteIntoDelta) reconstructs the replaced
snapshot's whole state on the driver before it writes — `ImplicitMetadataOperation` asks it for its
domain metadata (`SnapshotState.computedState`, 1–3 Spark jobs) and `filterFiles()` collects its
file list in another job — even when the version's checksum file (`.crc`) already lists every file.
On the small gold tables an analysis rewrites each run that was 0.9 s per overwrite against 0.14 s
through the delta-rs bridge (BENCHMARKS.md, "Native Delta on Spark"), 4× more under load.

Here the same write is done by the same delta-spark classes a step lower: a transaction on the
snapshot just listed (`DeltaLog.startTransaction`), `writeFiles` (delta-spark's Parquet writer:
its statistics, NOT NULL and CHECK constraints, partitioning from the table's metadata), remove
actions for the replaced files taken from the `.crc`'s file list (lakehouse/delta_snapshot.py), and
`commit` with a `DeltaOperations.Write` (mode, partition predicate, userMetadata): the same log entry,
conflict checks (an overwrite reads the whole table, so a concurrent append conflicts instead of
surviving the overwrite), checksum and post-commit snapshot. Unlike WriteIntoDelta it commits an
overwrite that adds and removes nothing (a job's watermark on an empty output lands).

A missing table is created in the same transaction (`updateMetadataForNewTable`: the metadata
WriteIntoDelta would write — every column nullable, the session's table defaults merged, the
protocol delta-spark picks for it): an analysis into a fresh lakehouse creates ~20 tables, and the
public writer cost 0.5–1 s more per table than the transaction (BENCHMARKS.md, session 18). A schema
that differs from the table's (a contract that gained a column) goes through the public writer. These are internal
Scala APIs (pinned: infra/delta_jars.py); on a delta-spark without them `txn_write` returns None
and the caller uses the public writer.
"""

from __future__ import annotations

import json
import time
import uuid

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakehouse.delta_snapshot import missing_api, snapshot_files


def _same_columns(a: T.StructType, b: T.StructType) -> bool:
    """Same names, order and types (nullability aside: Spark reports file columns as nullable)."""
    return [(f.name, f.dataType) for f in a.fields] == [(f.name, f.dataType) for f in b.fields]


def partitions_matching(spark: SparkSession, partition_schema: T.StructType, keys, predicate: str) -> set[tuple]:
    """The tuples of partition values among `keys` (as the Delta log writes them: strings, None for
    null; in `partition_schema`'s order) that satisfy the SQL `predicate`, evaluated by Spark on the
    values cast to the partition columns' types — so it means what it means to Delta itself. Raises
    Spark's AnalysisException when the predicate uses anything but the partition columns. Shared by
    the native transaction and the delta-rs bridge's replace_where."""
    keys = sorted(set(keys), key=repr)
    raw = T.StructType([T.StructField(f"_raw{i}", T.StringType()) for i in range(len(partition_schema.fields))])
    frame = spark.createDataFrame(keys, raw).select(
        *[F.col(f"_raw{i}").cast(f.dataType).alias(f.name) for i, f in enumerate(partition_schema.fields)],
        *[F.col(f"_raw{i}") for i in range(len(partition_schema.fields))])
    return {tuple(r[f"_raw{i}"] for i in range(len(partition_schema.fields))) for r in frame.filter(predicate).collect()}


def _replaced(spark: SparkSession, files, replace_where: str | None, partition_schema: T.StructType):
    """The AddFiles an overwrite removes: all of them, or with `replace_where` those whose partition
    values satisfy it. None when the predicate is not one on the partition columns."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    files = list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(files))
    if replace_where is None:
        return files
    names = [f.name for f in partition_schema.fields]
    if not names:
        return None

    def key(f) -> tuple[str | None, ...]:
        values = f.partitionValues()  # a Scala Map[String, String]: the log's strings, null for null
        return tuple(values.get(p).get() if values.get(p).isDefined() else None for p in names)

    try:
        matched = partitions_matching(spark, partition_schema, [key(f) for f in files], replace_where)
    except Exception:  # noqa: BLE001 - not a partition predicate (AnalysisException): the public writer decides
        return None
    return [f for f in files if key(f) in matched]


def _nullable(field_type):
    """A Spark schema's JSON with every field, array element and map value nullable, as delta-spark
    stores a new table's schema (SchemaUtils.asNullable)."""
    if isinstance(field_type, dict):
        out = {k: _nullable(v) for k, v in field_type.items()}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in out:
                out[key] = True
        return out
    if isinstance(field_type, list):
        return [_nullable(v) for v in field_type]
    return field_type


def _new_table_metadata(jvm, columns: T.StructType, partition_schema: T.StructType):
    """The Metadata action of a new table in `columns`, partitioned by `partition_schema`'s columns."""
    return jvm.org.apache.spark.sql.delta.actions.Action.fromJson(json.dumps({"metaData": {
        "id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(_nullable(json.loads(columns.json()))),
        "partitionColumns": [f.name for f in partition_schema.fields], "configuration": {},
        "createdTime": int(time.time() * 1000)}}))


def txn_write(spark: SparkSession, uri: str, data: DataFrame | list[dict], *, overwrite: bool,
              schema: T.StructType | None = None, replace_where: str | None = None,
              partition_schema: T.StructType = T.StructType([]), commit_info: dict[str, str] | None = None) -> int | None:
    """Write to the Delta table at `uri` (created when missing) and return the committed version. `data`: a
    DataFrame in the table's columns (written by delta-spark's `writeFiles`), or the add actions
    (protocol JSON fields: path relative to the table, partitionValues, size, modificationTime,
    dataChange, stats) of Parquet files already written into the table's folder, whose columns are
    `schema`. overwrite: replace every file, or with `replace_where` (a predicate on the partition
    columns, `partition_schema`; rows already checked against it) the files of the partitions it
    matches. None when this path does not apply (a schema change, a predicate on other columns,
    APIs missing): use the public writer."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    scala_opt = jvm.scala.Option
    try:
        pair = jvm.org.apache.spark.sql.delta.DeltaLog.forTableWithSnapshot(spark._jsparkSession, uri)  # type: ignore[attr-defined]
        log, snapshot = pair._1(), pair._2()
        columns = data.schema if isinstance(data, DataFrame) else schema
        new = snapshot.version() < 0
        if not new and not _same_columns(T.StructType.fromJson(json.loads(snapshot.metadata().schemaString())), columns):
            return None
        txn = log.startTransaction(scala_opt.empty(), scala_opt.apply(snapshot))
        if new:  # two creators at once: the second commit of version 0 fails (delta-spark's own error)
            txn.updateMetadataForNewTable(_new_table_metadata(jvm, columns, partition_schema))
        actions = []
        if overwrite:
            removed = _replaced(spark, snapshot_files(spark, snapshot), replace_where, partition_schema)
            if removed is None:
                return None
            txn.readWholeTable()  # a concurrent append would otherwise outlive this overwrite
            now = int(time.time() * 1000)
            actions = [f.removeWithTimestamp(now, True) for f in removed]
        if isinstance(data, DataFrame):
            adds = list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(txn.writeFiles(data._jdf)))
        else:  # the log's own JSON form: no constructor whose arity changes between delta-spark versions
            adds = [jvm.org.apache.spark.sql.delta.actions.Action.fromJson(json.dumps({"add": a})) for a in data]
        actions = adds + actions
        save_mode = jvm.org.apache.spark.sql.SaveMode
        op = jvm.org.apache.spark.sql.delta.DeltaOperations.Write(
            save_mode.Overwrite if overwrite else save_mode.Append,
            scala_opt.apply(jvm.scala.jdk.javaapi.CollectionConverters.asScala([f.name for f in partition_schema.fields]).toList()),
            scala_opt.apply(replace_where),
            scala_opt.apply(json.dumps(commit_info, sort_keys=True) if commit_info else None),
            scala_opt.empty(), scala_opt.empty(), scala_opt.empty(), scala_opt.empty(), scala_opt.empty())
        return int(txn.commit(jvm.scala.jdk.javaapi.CollectionConverters.asScala(actions).toList(), op))
    except Py4JJavaError:  # delta-spark's own error (a conflict, a constraint, storage): the caller reports it
        raise
    except Py4JError as e:  # a method py4j cannot find in this delta-spark
        missing_api(e, "writes through its transaction (writes go through WriteIntoDelta)")
        return None
