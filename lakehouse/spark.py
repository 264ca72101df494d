"""Spark access to the lakehouse: delta-spark when its JVM classes are there, else a bridge.

`SparkLakehouse.read/write` give the same result in both modes (DESIGN.md "Scale"):

* **native** — delta-spark reads and writes (needs its jars on the classpath and the Delta session
  extension; see `spark_session`): ``df.write.format("delta")``, and reads that list a snapshot's
  files once, when the read is made (lakehouse/delta_snapshot.py: delta-spark's own scan over that
  list, no Delta job per query; the public ``spark.read.format("delta")`` when that API is missing).
* **bridge** — no Delta JVM code at all:

  - *read*: delta-rs gives the current snapshot's files and partition values
    (``DeltaTable.get_add_actions(flatten=True)``); Spark reads exactly those Parquet files in
    parallel (``spark.read.schema(...).parquet(*files)``), the partition columns (not stored in
    Delta data files) are re-attached by joining ``_metadata.file_path`` with a broadcast
    frame of file → partition values, and the result is cast to the contract schema. (Reading
    each partition's files separately and adding literal columns was measured too: as fast
    for 30 partitions, 6× slower for 365 — one scan per partition.)
  - *write*: Spark writes the Parquet files itself (distributed, ``partitionBy`` for the
    contract's partition columns) into a fresh folder ``<table>/bridge-<time>-<id>/``; the
    driver lists them, reads their footers for Delta statistics (row count, min/max, null
    counts) and commits them with delta-rs in ONE transaction:
    ``deltalake.transaction.create_table_with_add_actions`` for a new table,
    ``DeltaTable.create_write_transaction(adds, mode="append"|"overwrite", ...)`` otherwise —
    in overwrite mode delta-rs adds the remove actions for the replaced files to the same
    commit (with ``partition_filters`` for a replace_where on the partition column). If
    anything fails before the commit, the staging folder is deleted: no half-written data and
    no new version.

  The bridge refuses tables whose features it cannot honour (column mapping, deletion vectors,
  unknown reader/writer features, CHECK constraints, generated columns).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as _dt
import hashlib
import json
import logging
import os
import re
import shutil
import time
import urllib.parse
import uuid
from collections.abc import Sequence
from typing import Literal

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from infra import delta_jars
from lakehouse.delta_files import delta_stats, partition_string, partition_values_from_path
from lakehouse.delta_snapshot import pinned_frame
from lakehouse.delta_txn import partitions_matching, txn_write
from lakehouse.store import BRIDGE_STAGING_RE, Lakehouse, LakehouseError, _first_line, _pyarrow_fs, partition_predicate
from lakehouse.tables import TableContract, contract
from lakehouse.spark_session import (  # noqa: F401  re-exported: lakehouse.spark is the jobs' one import
    DELTA_EXTENSION,
    STATS_COLUMNS,
    DeltaSparkUnavailableError,
    delta_choice,
    delta_native_available,
    lakehouse_mode,
    log4j2_config_file,
    spark_session,
)

_log = logging.getLogger("brokerscope.lakehouse.spark")

__all__ = [
    "spark_session",
    "delta_choice",
    "delta_native_available",
    "SparkLakehouse",
    "DeltaSparkUnavailableError",
    "spark_schema",
    "Appended",
]

REMOTE_LOOKUPS_MAX = 64  # files of a remote read looked up one by one; more: one listing of the folder

# Features the bridge can honour. Reading: the Parquet files + partition values are the whole
# truth. Writing: plain add/remove actions are all it produces.
_BRIDGE_READER_FEATURES = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors"}
_BRIDGE_WRITER_FEATURES = {
    "appendOnly", "invariants", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "deletionVectors", "changeDataFeed", "domainMetadata", "checkpointProtection", "inCommitTimestamp",
}


@contextlib.contextmanager
def _quiet_analysis_errors():
    """pyspark logs every captured AnalysisException (with the JVM stack) on the
    "SQLQueryContextLogger" logger; for predicates we validate on purpose that is noise."""
    log = logging.getLogger("SQLQueryContextLogger")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


class Appended:
    """A table's rows split at a version: what it held then (`old`), and what commits since appended
    (`new`, up to `version`). `old` may be given as a function that makes it: it is made on first use
    only (reading the files of the whole history costs a file listing over all of them, and most
    callers only read `new`)."""

    __slots__ = ("_old", "new", "version")

    def __init__(self, old, new: DataFrame, version: int):
        self._old, self.new, self.version = old, new, version

    @property
    def old(self) -> DataFrame:
        if callable(self._old):
            self._old = self._old()
        return self._old

    def __iter__(self):
        return iter((self.old, self.new, self.version))


# --- types ------------------------------------------------------------------------------------


def spark_type(t: pa.DataType) -> T.DataType:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    for check, st in ((pa.types.is_int8, T.ByteType), (pa.types.is_int16, T.ShortType),
                      (pa.types.is_int32, T.IntegerType), (pa.types.is_int64, T.LongType),
                      (pa.types.is_float32, T.FloatType), (pa.types.is_float64, T.DoubleType),
                      (pa.types.is_date32, T.DateType)):
        if check(t):
            return st()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz else T.TimestampNTZType()
    if pa.types.is_decimal(t):
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return T.BinaryType()
    raise TypeError(f"no Spark type for {t}")


def spark_schema(c: TableContract | str) -> T.StructType:
    """The contract as a Spark schema (timestamps: TimestampType, i.e. UTC instants)."""
    c = contract(c) if isinstance(c, str) else c
    return T.StructType([T.StructField(x.name, spark_type(x.type), x.nullable) for x in c.columns])


_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = _INTEGRAL + (T.FloatType, T.DoubleType, T.DecimalType)


def _spark_compatible(src: T.DataType, dst: T.DataType) -> bool:
    if src == dst or isinstance(src, T.NullType):
        return True
    if isinstance(dst, T.StringType):
        return isinstance(src, (T.StringType, T.VarcharType, T.CharType))
    if isinstance(dst, _INTEGRAL):
        return isinstance(src, _INTEGRAL)
    if isinstance(dst, (T.FloatType, T.DoubleType, T.DecimalType)):
        return isinstance(src, _NUMERIC)
    if isinstance(dst, T.TimestampType):  # NTZ values are read in the session time zone (UTC)
        return isinstance(src, (T.TimestampType, T.TimestampNTZType))
    return type(src) is type(dst)


# --- path helpers -------------------------------------------------------------------------------

def _glob_escape(path: str) -> str:
    """Spark globs path arguments containing {}[]*?\\ — escape them."""
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path) if re.search(r"[{}\[\]*?\\]", path) else path


def _is_uri(path: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://", path))


# --- the Spark side of the lakehouse ------------------------------------------------------------


class SparkLakehouse:
    """Read/write contract tables as Spark DataFrames (native delta-spark or the delta-rs bridge)."""

    #: tests flip this to exercise the remove-action path of replace_where
    _replace_where_via_removes = False

    def __init__(self, spark: SparkSession, lakehouse: Lakehouse,
                 mode: Literal["auto", "native", "bridge"] | None = None):
        mode = lakehouse_mode(mode)
        if mode not in ("auto", "native", "bridge"):
            raise ValueError(f"mode must be 'auto', 'native' or 'bridge', not {mode!r}")
        self.spark = spark
        self.lakehouse = lakehouse
        native = delta_native_available(spark) if mode != "bridge" else False
        if mode == "native" and not native:
            raise DeltaSparkUnavailableError(
                "mode='native' needs delta-spark in this Spark session: the class "
                f"{DELTA_EXTENSION} is not loadable or not configured in spark.sql.extensions. "
                f"Cache the jars once with {delta_jars.setup_command} and start Spark through "
                "lakehouse.spark.spark_session() (not with delta='bridge' / BROKERSCOPE_DELTA=bridge), "
                "or use mode='auto' / 'bridge' (delta-rs commits, no jars needed)."
            )
        self.mode: str = "native" if native else "bridge"

    def __repr__(self) -> str:
        return f"SparkLakehouse({self.lakehouse.root!r}, mode={self.mode!r})"

    # -- public --------------------------------------------------------------------------------

    def read(self, name: str, version: int | None = None, columns: Sequence[str] | None = None) -> DataFrame:
        """Current snapshot (or the one at `version`) with the contract's columns and types
        (timestamps as TimestampType, UTC); an empty DataFrame with that schema when the table
        does not exist yet. Spark reports file-sourced columns as nullable; non-null columns are
        enforced on write. `columns`: only these (the bridge then skips attaching partition
        values when none is asked for)."""
        c = contract(name)
        dt = self.lakehouse._open(name) if version is None else self._open_version(name, version)
        if dt is None:
            return _project(self._empty(c), columns)
        if self.mode == "native":
            return _project(self._to_contract(c, self._native_read(name, version)), columns)
        return self._bridge_read(c, dt, columns=columns)

    def read_partitions(self, name: str, column: str | Sequence[str], values: Sequence,
                        columns: Sequence[str] | None = None) -> DataFrame:
        """The current snapshot's rows of the partitions whose partition column `column` is one of
        `values` (several columns: `values` are tuples, e.g. (obs_date, obs_hour) pairs): the bridge
        reads only those partitions' files, native delta-spark prunes them by the same predicate."""
        c = contract(name)
        names = [column] if isinstance(column, str) else list(column)
        unknown = [n for n in names if n not in c.partition_by]
        if unknown:
            raise ValueError(f"{', '.join(map(repr, unknown))} not a partition column of {name} "
                             f"({', '.join(c.partition_by) or 'none'})")
        wanted = {(v,) if isinstance(column, str) else tuple(v) for v in values}
        dt = self.lakehouse._open(name)
        if dt is None or not wanted:
            return _project(self._empty(c), columns)
        if self.mode == "native":
            return _project(self._to_contract(c, self._native_read(name, None)).where(partition_predicate(names, wanted)),
                            columns)
        adds = pa.table(dt.get_add_actions(flatten=True))
        stored = zip(*(adds.column(f"partition.{n}").to_pylist() for n in names))
        keep = {p for p, key in zip(adds.column("path").to_pylist(), stored) if key in wanted}
        return self._bridge_read(c, dt, keep, columns)

    def read_time_range(self, name: str, days: Sequence[str], lo_us: int, hi_us: int,
                        columns: Sequence[str] | None = None) -> DataFrame:
        """The rows of the obs_date partitions `days` with lo_us <= ts < hi_us (epoch µs; `columns`
        must hold ts), reading only the files whose ts statistics in the Delta log overlap that
        range (a file without them is read): a tick's minutes out of a day that collectors appended
        to thousands of times, not the day. Native reads of a pinned snapshot skip no file by its
        statistics (lakehouse/delta_snapshot.py), so both modes read the chosen files as the bridge
        does (as `read_appended`); a table with features that read cannot honour (deletion vectors,
        column mapping) is read whole per day."""
        c = contract(name)
        in_range = (F.col("ts") >= F.timestamp_micros(F.lit(lo_us))) & (F.col("ts") < F.timestamp_micros(F.lit(hi_us)))
        dt = self.lakehouse._open(name)
        if dt is None or not days:
            return _project(self._empty(c), columns)
        adds = pa.table(dt.get_add_actions(flatten=True))

        def stat(column: str) -> list[int | None]:
            return (adds.column(column).cast(pa.int64()).to_pylist() if column in adds.column_names
                    else [None] * adds.num_rows)

        # the log's timestamp statistics are cut to milliseconds: one ms of slack on either side
        wanted = set(days)
        keep = {p for p, day, lo, hi in zip(adds.column("path").to_pylist(), adds.column("partition.obs_date").to_pylist(),
                                            stat("min.ts"), stat("max.ts"))
                if day in wanted and (lo is None or lo < hi_us + 1000) and (hi is None or hi >= lo_us - 1000)}
        try:
            return self._bridge_read(c, dt, keep, columns).where(in_range)
        except LakehouseError:
            return self.read_partitions(name, "obs_date", days, columns).where(in_range)

    def read_appended(self, name: str, since_version: int, columns: Sequence[str] | None = None) -> Appended | None:
        """The rows as of `since_version` and the rows committed after it, when every commit
        since only added files (collectors' appends); None when a commit since removed or
        rewrote files (an overwrite, a compaction) or that version is gone: the caller then
        reads the whole table. Both modes read the files delta-rs lists (no change data feed
        needed).

        What was added comes from the commits after `since_version` (`added_files`: their JSON
        files, one read each), not from a second snapshot at `since_version`: opening an old
        version replays the log from the checkpoint before it and lists every file of the
        history, which grew with the table's commits and files on every call. `old` is made only
        when used."""
        c = contract(name)
        now = self.lakehouse._open(name)
        if now is None:
            return None
        version = now.version()
        added = added_files(self.lakehouse, name, since_version, version)
        if added is None:
            return None
        try:
            new = self._bridge_read(c, now, added, columns)
        except LakehouseError:  # features the file-level read cannot honour: read the table
            return None

        def old() -> DataFrame:
            current = {urllib.parse.unquote(p) for p in pa.table(now.get_add_actions(flatten=True)).column("path").to_pylist()}
            return self._bridge_read(c, now, current - added, columns)

        return Appended(old, new, version)

    def _open_version(self, name: str, version: int) -> DeltaTable | None:
        if self.lakehouse._open(name) is None:
            return None
        return DeltaTable(self.lakehouse.uri(name), version=version, storage_options=self.lakehouse.storage_options)

    def write(self, name: str, df: DataFrame, mode: Literal["overwrite", "append"] = "overwrite",
              replace_where: str | None = None, commit_info: dict[str, str] | None = None) -> int:
        """Write `df` (cast/validated to the contract) and return the rows written.

        overwrite: replaces the table — or, with `replace_where` (a Spark SQL predicate on the
        partition columns, e.g. ``obs_date >= '2024-05-01'``), only the partitions matching it;
        every row written must match it. Reruns give the same table (idempotent).
        append: adds the rows. Missing tables are created with the contract's partitioning.
        commit_info: string entries recorded in the commit itself (bridge: top-level commitInfo
        fields; native: the commit's `userMetadata`, as JSON), e.g. a job's watermark."""
        c = contract(name)
        if mode not in ("overwrite", "append"):
            raise ValueError(f"mode must be 'overwrite' or 'append', not {mode!r}")
        if replace_where is not None and mode != "overwrite":
            raise ValueError("replace_where only makes sense with mode='overwrite'")
        sdf = self._conform(c, df, replace_where)
        dt = self.lakehouse._open(name)
        relayout = self._relayout(c, dt, mode, replace_where)
        if self.mode == "native":
            return self._native_write(c, dt, sdf, mode, replace_where, commit_info, relayout)
        return self._bridge_write(c, dt, sdf, mode, replace_where, commit_info, relayout)

    def _relayout(self, c: TableContract, dt: DeltaTable | None, mode: str, replace_where: str | None) -> bool:
        """Does this write change the stored table's partitioning to the contract's (a contract whose
        partitioning changed, e.g. broker_minutes gaining obs_hour)? Only a whole-table overwrite may:
        an append or a replace_where would put files of two layouts into one table."""
        stored = None if dt is None else list(dt.metadata().partition_columns)
        if stored is None or stored == list(c.partition_by):
            return False
        if mode != "overwrite" or replace_where:
            raise self._error(
                c, f"the stored table is partitioned by ({', '.join(stored)}), the contract by "
                   f"({', '.join(c.partition_by)}): an {'append' if mode == 'append' else 'overwrite of some partitions'} "
                   "would mix the two layouts",
                "rewrite the whole table (its job's full run, e.g. `brokerscope analyze -c CFG --full`)")
        return True

    def write_arrow(self, name: str, table: pa.Table, commit_info: dict[str, str] | None = None) -> int:
        """Replace table `name` with a small result held in Arrow on the driver (an incremental run's
        gold, a few thousand rows): the bridge stages and commits it without a Spark job; native
        Delta and partitioned tables go through `write`. Returns the rows written."""
        c = contract(name)
        try:
            table = table.select(c.column_names).cast(c.schema)
        except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise self._error(c, f"rejected the data: {e}",
                              "fix the job so its output matches lakehouse/tables.py (`brokerscope tables`)") from None
        if self.mode == "native" and not c.partition_by and self.lakehouse._open(name) is not None:
            rows = self._native_arrow_write(c, table, "overwrite", commit_info)
            if rows is not None:
                return rows
        if self.mode == "native" or c.partition_by:
            return self.write(name, self.spark.createDataFrame(table, c.spark_schema()), commit_info=commit_info)
        return self._bridge_write(c, self.lakehouse._open(name), table, "overwrite", None, commit_info)

    # -- conversions ---------------------------------------------------------------------------

    def _spark_uri(self, name: str) -> str:
        uri = self.lakehouse.uri(name)
        return ("file:" + uri) if self.lakehouse.is_local else uri

    def _empty(self, c: TableContract) -> DataFrame:
        return self.spark.createDataFrame([], spark_schema(c))

    def _error(self, c: TableContract, cause: str, advice: str = "") -> LakehouseError:
        return LakehouseError(c.name, self.lakehouse.uri(c.name), cause, advice)

    def _to_contract(self, c: TableContract, df: DataFrame) -> DataFrame:
        present = {f.name: f.dataType for f in df.schema.fields}
        cols = []
        for f in spark_schema(c).fields:
            if f.name in present:
                e = F.col(f.name) if present[f.name] == f.dataType else F.col(f.name).cast(f.dataType)
            else:  # a column added to the contract after the table was written
                e = F.lit(None).cast(f.dataType)
            cols.append(e.alias(f.name))
        return df.select(*cols)

    def _conform(self, c: TableContract, df: DataFrame, replace_where: str | None) -> DataFrame:
        advice = "fix the job so its output matches lakehouse/tables.py (`brokerscope tables`)"
        names = [f.name for f in df.schema.fields]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise self._error(c, f"rejected the data: duplicate column(s) {', '.join(dup)}", advice)
        extra = [n for n in names if n not in c.column_names]
        if extra:
            raise self._error(c, f"rejected the data: unknown column(s) {', '.join(map(repr, extra))}; "
                                 f"the contract has: {', '.join(c.column_names)}", advice)
        src = {f.name: f for f in df.schema.fields}
        cols = []
        for col, f in zip(c.columns, spark_schema(c).fields):
            if col.name not in src:
                if not col.nullable:
                    raise self._error(c, f"rejected the data: required column {col.name!r} ({col.type}) is missing", advice)
                cols.append(F.lit(None).cast(f.dataType).alias(col.name))
                continue
            s = src[col.name]
            if not _spark_compatible(s.dataType, f.dataType):
                raise self._error(c, f"rejected the data: column {col.name!r} has type "
                                     f"{s.dataType.simpleString()}, the contract says {f.dataType.simpleString()} ({col.type})", advice)
            e = F.col(col.name) if s.dataType == f.dataType else F.col(col.name).cast(f.dataType)
            if not col.nullable and s.nullable:
                # checked row by row while writing (no extra pass over the data)
                e = F.when(e.isNull(), F.raise_error(F.lit(
                    f"brokerscope: table {c.name}: column {col.name!r} is required but a row has null"
                ))).otherwise(e)
            cols.append(e.alias(col.name))
        out = df.select(*cols)
        if replace_where:
            try:
                with _quiet_analysis_errors():
                    out.filter(replace_where).schema  # noqa: B018 - analyse the predicate now
            except Exception as e:  # noqa: BLE001
                raise self._error(c, f"replace_where {replace_where!r} is not a valid predicate on the contract's columns: {_first_line(e)}") from None
            first = c.columns[0].name
            out = out.withColumn(first, F.when(F.coalesce(F.expr(replace_where), F.lit(False)), F.col(first)).otherwise(
                F.raise_error(F.lit(f"brokerscope: table {c.name}: a row does not match replace_where {replace_where!r}"))))
        return out

    # -- bridge read ---------------------------------------------------------------------------

    def _check_bridge_readable(self, c: TableContract, dt: DeltaTable) -> None:
        p = dt.protocol()
        rf = set(p.reader_features or [])
        conf = dt.metadata().configuration or {}
        problems = []
        cm = (conf.get("delta.columnMapping.mode") or "none").lower()
        if cm != "none" or "columnMapping" in rf:
            problems.append(f"column mapping (delta.columnMapping.mode={cm})")
        if "deletionVectors" in rf and self._has_deletion_vectors(dt):
            problems.append("deletion vectors")
        unknown = rf - _BRIDGE_READER_FEATURES - {"columnMapping"}
        if unknown:
            problems.append(f"reader feature(s) {', '.join(sorted(unknown))}")
        if p.min_reader_version > 3:
            problems.append(f"reader protocol version {p.min_reader_version}")
        if problems:
            raise self._error(
                c, f"the Spark bridge cannot read this table: it uses {'; '.join(problems)}",
                "read it with delta-rs (`Lakehouse.read`), run Spark with delta-spark's jars "
                "(SparkLakehouse mode='native'), or rewrite the table without those features "
                "(deletion vectors: delta-spark `REORG TABLE ... APPLY (PURGE)`; column mapping "
                "needs a full rewrite)")

    @staticmethod
    def _has_deletion_vectors(dt: DeltaTable) -> bool:
        try:
            for batch in dt.deletion_vectors():
                if batch.num_rows:
                    return True
            return False
        except Exception:  # noqa: BLE001 - cannot tell: assume the worst
            return True

    def _check_bridge_writable(self, c: TableContract, dt: DeltaTable) -> None:
        p = dt.protocol()
        wf = set(p.writer_features or [])
        conf = dt.metadata().configuration or {}
        problems = []
        if (conf.get("delta.columnMapping.mode") or "none").lower() != "none":
            problems.append("column mapping")
        constraints = [k for k in conf if k.startswith("delta.constraints.")]
        if constraints:
            problems.append(f"CHECK constraints ({', '.join(constraints)})")
        for f in dt.schema().fields:  # rules the bridge would not enforce
            keys = [k for k in (f.metadata or {}) if k in ("delta.generationExpression", "delta.invariants")
                    or k.startswith("delta.identity.")]
            if keys:
                problems.append(f"column {f.name!r} with {', '.join(keys)}")
        unknown = wf - _BRIDGE_WRITER_FEATURES
        if unknown:
            problems.append(f"writer feature(s) {', '.join(sorted(unknown))}")
        if p.min_writer_version > 7:
            problems.append(f"writer protocol version {p.min_writer_version}")
        if problems:
            raise self._error(
                c, f"the Spark bridge cannot write this table: it uses {'; '.join(problems)}",
                "write it with delta-spark (mode='native') or with delta-rs (`Lakehouse`)")

    def _bridge_read(self, c: TableContract, dt: DeltaTable, only: set[str] | None = None,
                     columns: Sequence[str] | None = None) -> DataFrame:
        """The snapshot's rows (or those of the files in `only`, paths as the log has them)."""
        self._check_bridge_readable(c, dt)
        adds = pa.table(dt.get_add_actions(flatten=True))
        if only is not None:
            only = {urllib.parse.unquote(p) for p in only}
            adds = adds.filter(pa.array([urllib.parse.unquote(p) in only for p in adds.column("path").to_pylist()], pa.bool_()))
        if adds.num_rows == 0:
            return _project(self._empty(c), columns)
        table_schema = pa.schema(dt.schema().to_arrow())
        part_cols = list(dt.metadata().partition_columns)
        data_fields = [f for f in table_schema if f.name not in part_cols and f.name in c.column_names]
        if not data_fields:
            raise self._error(c, "the table has none of the contract's data columns",
                              "check that the path holds this table; rewrite it from its source")
        read_schema = T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in data_fields])

        base = self._spark_uri(c.name)
        rels = [p if _is_uri(p) else urllib.parse.unquote(p) for p in adds.column("path").to_pylist()]
        self._check_files_exist(c, rels)
        paths = [r if _is_uri(r) else f"{base}/{r}" for r in rels]
        df = self.spark.read.schema(read_schema).parquet(*[_glob_escape(p) for p in paths])
        if part_cols and (columns is None or set(part_cols) & set(columns)):
            keys = self._spark_file_keys(df, c, rels)
            take = pa.array([i for _k, i in keys], pa.int64())
            fmap = {"_bridge_file": pa.array([k for k, _i in keys], pa.string()),
                    "_bridge_hit": pa.array([True] * len(keys))}
            for pc_ in part_cols:
                fmap[pc_] = adds.column(f"partition.{pc_}").take(take)
            ftab = pa.table(fmap)
            mapping = self.spark.createDataFrame(ftab)
            df = (
                df.withColumn("_bridge_file", F.col("_metadata.file_path"))
                .join(F.broadcast(mapping), "_bridge_file", "left")
            )
            # a file whose path did not match would lose its partition values: fail loudly instead
            guard = F.when(F.col("_bridge_hit").isNull(), F.raise_error(F.concat(
                F.lit(f"brokerscope bridge: cannot map a data file of table {c.name} to its partition values: "),
                F.col("_bridge_file"))))
            first = part_cols[0]
            df = df.withColumn(first, F.coalesce(guard, F.col(first))).drop("_bridge_file", "_bridge_hit")
        return _project(self._to_contract(c, df), columns)

    def _check_files_exist(self, c: TableContract, rels: list[str]) -> None:
        """The snapshot's files checked before the job (a clear error instead of a lazy FileNotFound
        deep inside it): each file looked up, so the cost follows the files read, not every file the
        folder ever held; a remote read of many files lists the folder once instead (one request)."""
        uri = self.lakehouse.uri(c.name)
        local = [r for r in rels if not _is_uri(r)]
        try:
            if self.lakehouse.is_local:
                present = {r for r in local if os.path.isfile(os.path.join(uri, r))}
            else:
                fs, base = _pyarrow_fs(uri)
                if len(local) <= REMOTE_LOOKUPS_MAX:
                    infos = fs.get_file_info([f"{base.rstrip('/')}/{r}" for r in local])
                else:
                    infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
                present = {i.path[len(base):].lstrip("/") for i in infos if i.type == pafs.FileType.File}
        except Exception:  # noqa: BLE001 - cannot look: let Spark find out
            return
        missing = [r for r in rels if not _is_uri(r) and r not in present]
        if missing:
            raise self._error(
                c, f"{len(missing)} data file(s) referenced by the current snapshot are missing "
                   f"from storage, e.g. {missing[0]}",
                "restore them from a backup if you have one; otherwise drop them from the log with "
                f"`deltalake.DeltaTable({uri!r}).repair()` (FSCK: their rows are lost) and rebuild "
                "what they held (silver/gold: `brokerscope analyze`; bronze: backup or `brokerscope replay`)")

    def _spark_file_keys(self, df: DataFrame, c: TableContract, rels: list[str]) -> list[tuple[str, int]]:
        """(what Spark reports as `_metadata.file_path`, index into rels) for every file of `df`.

        Spark's own file index gives the paths (`inputFiles()`, no job); `_metadata.file_path`
        is the same URI after java.net.URI.normalize(), which drops an empty authority
        ("file:///x" → "file:/x"). Each is mapped back to its log entry by percent-decoding it
        and cutting the table folder off."""
        uri = self.lakehouse.uri(c.name)
        table_path = uri if self.lakehouse.is_local else urllib.parse.urlparse(uri).path
        table_path = table_path.rstrip("/") + "/"
        index = {r: i for i, r in enumerate(rels)}
        out = []
        for f in df.inputFiles():
            key = re.sub(r"^([A-Za-z][A-Za-z0-9+.\-]*):///", r"\1:/", f)
            dec = urllib.parse.unquote(key)
            i = None
            m = re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:(//[^/]*)?", dec)
            path_part = dec[m.end():] if m else dec
            if path_part.startswith(table_path):
                i = index.get(path_part[len(table_path):])
            if i is None:  # absolute paths in the log (e.g. shallow clones)
                for r, j in index.items():
                    if _is_uri(r) and urllib.parse.unquote(re.sub(r"^[A-Za-z][A-Za-z0-9+.\-]*:(//[^/]*)?", "", r)) == path_part:
                        i = j
                        break
            if i is None:
                raise self._error(c, f"the Spark bridge cannot map file {f} to an entry of the Delta log",
                                  "report this (path encoding); read the table with delta-rs meanwhile")
            out.append((key, i))
        return out

    # -- bridge write --------------------------------------------------------------------------

    def _replace_where_targets(self, c: TableContract, dt: DeltaTable | None,
                               replace_where: str) -> pa.Table | None:
        """The current files whose partition values satisfy `replace_where` (evaluated by Spark,
        so the predicate means exactly what it means natively). Non-partition columns are
        refused: the bridge replaces whole files."""
        part = list(c.partition_by)
        if not part:
            raise self._error(c, "replace_where needs a partitioned table in bridge mode",
                              "overwrite the whole table, or use mode='native'")
        pschema = T.StructType([f for f in spark_schema(c).fields if f.name in part])
        if dt is None:
            files = pa.table({"path": pa.array([], pa.string()), "size_bytes": pa.array([], pa.int64()),
                              **{p: pa.array([], c.schema.field(p).type) for p in part}})
        else:
            adds = pa.table(dt.get_add_actions(flatten=True))
            files = pa.table({"path": adds.column("path"), "size_bytes": adds.column("size_bytes"),
                              **{p: adds.column(f"partition.{p}").cast(c.schema.field(p).type) for p in part}})
        # the log's strings, as partitions_matching takes them (delta-rs types them by the schema)
        keys = list(zip(*(files.column(p).cast(pa.string()).to_pylist() for p in part))) if files.num_rows else []
        try:
            with _quiet_analysis_errors():
                matched = partitions_matching(self.spark, pschema, keys, replace_where)
        except Exception as e:  # noqa: BLE001
            raise self._error(
                c, f"replace_where {replace_where!r} can only use the partition column(s) "
                   f"{', '.join(part)} in bridge mode: {_first_line(e)}",
                "restrict the predicate to partition columns, or use mode='native'") from None
        return files.filter(pa.array([k in matched for k in keys], pa.bool_()))

    def _bridge_write(self, c: TableContract, dt: DeltaTable | None, sdf: DataFrame | pa.Table, mode: str,
                      replace_where: str | None, commit_info: dict[str, str] | None = None,
                      relayout: bool = False) -> int:
        uri = self.lakehouse.uri(c.name)
        if dt is not None:
            self._check_bridge_writable(c, dt)
        else:
            self._delete_uncommitted_staging(c)
        targets = self._replace_where_targets(c, dt, replace_where) if replace_where else None
        part = list(c.partition_by)
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        staging_rel = f"bridge-{stamp}-{uuid.uuid4().hex[:12]}"
        staging_spark = f"{self._spark_uri(c.name)}/{staging_rel}"
        committed = False
        conf_key = "spark.sql.parquet.outputTimestampType"
        old_ts = self.spark.conf.get(conf_key, None)
        try:
            # delta-rs and the Delta protocol want int64 microsecond timestamps, not INT96
            self.spark.conf.set(conf_key, "TIMESTAMP_MICROS")
            if part:
                sdf.write.mode("errorifexists").option("compression", "snappy").partitionBy(*part).parquet(staging_spark)
            else:
                self._stage_with_arrow(c, sdf, staging_rel)
            adds, rows = self._staged_adds(c, staging_rel)
            props = CommitProperties(custom_metadata={
                "brokerscope.writer": "spark-bridge",
                "brokerscope.staging": staging_rel,
                **({"brokerscope.replaceWhere": replace_where} if replace_where else {}),
                **(commit_info or {}),
            })
            schema = DeltaSchema.from_arrow(c.schema)
            if dt is None or relayout:
                # a new partitioning is a new table's metadata: delta-rs' overwrite transaction would
                # keep the old partition columns beside the new schema (a table no reader can open)
                create_table_with_add_actions(
                    uri, schema, adds, mode="overwrite" if relayout else "error", partition_by=part or None,
                    name=c.name, description=c.doc[:4000], storage_options=self.lakehouse.storage_options,
                    commit_properties=props)
            elif mode == "append":
                dt.create_write_transaction(adds, "append", schema, part or None, commit_properties=props)
            elif targets is None:
                # whole-table overwrite: delta-rs removes every current file in this commit
                dt.create_write_transaction(adds, "overwrite", schema, part or None, commit_properties=props)
            else:
                self._commit_replace_where(c, dt, adds, schema, targets, props)
            committed = True
            return rows
        except BaseException as e:
            if not committed and not self._staging_committed(c, staging_rel):
                self._delete_staging(c, staging_rel)
            if isinstance(e, (LakehouseError, KeyboardInterrupt, SystemExit)):
                raise
            raise self._error(c, f"the Spark bridge write failed, nothing was committed: {_first_line(e)}",
                              "fix the cause above and rerun; the staging files were removed") from e
        finally:
            if old_ts is None:
                self.spark.conf.unset(conf_key)
            else:
                self.spark.conf.set(conf_key, old_ts)

    def _commit_replace_where(self, c, dt, adds, schema, targets: pa.Table, props) -> None:
        part = list(c.partition_by)
        if targets.num_rows == 0:
            dt.create_write_transaction(adds, "append", schema, part, commit_properties=props)
            return
        values = sorted(set(targets.column(part[0]).to_pylist()), key=str)
        simple = (len(part) == 1 and pa.types.is_string(c.schema.field(part[0]).type)
                  and None not in values and not self._replace_where_via_removes)
        if simple:
            # delta-rs derives the remove actions from the filter, in the same commit
            dt.create_write_transaction(adds, "overwrite", schema, part,
                                        partition_filters=[(part[0], "in", values)], commit_properties=props)
            return
        # several partition columns (delta-rs filters are one conjunction): explicit removes
        now = int(time.time() * 1000)
        removes = []
        for row in targets.to_pylist():
            pv = {p: (None if row[p] is None else partition_string(row[p])) for p in part}
            removes.append(RemoveAction(urllib.parse.unquote(row["path"]), True, now, row["size_bytes"], pv))
        dt.create_write_transaction(adds + removes, "append", schema, part, commit_properties=props)

    def _stage_with_arrow(self, c: TableContract, sdf: DataFrame | pa.Table, staging_rel: str) -> None:
        """An unpartitioned table into the staging folder through the driver: collected as Arrow,
        written as one Parquet file by pyarrow. The unpartitioned contracts hold events, intervals and
        findings (the per-scrape series are partitioned by date), so a result is thousands of rows, not
        millions. Spark's own Parquet write (a write job, its output-commit protocol) of such small
        results cost 1.5 s more per 10-s analysis of the kill-master drill (BENCHMARKS.md, session 13)."""
        table = (sdf if isinstance(sdf, pa.Table) else sdf.toArrow()).cast(c.schema)
        fs, base = _pyarrow_fs(self.lakehouse.uri(c.name))
        stage = f"{base}/{staging_rel}"
        fs.create_dir(stage, recursive=True)
        if table.num_rows:
            pq.write_table(table, f"{stage}/part-00000-{uuid.uuid4()}.snappy.parquet", filesystem=fs,
                           compression="snappy")

    def _staged_adds(self, c: TableContract, staging_rel: str) -> tuple[list[AddAction], int]:
        """AddActions for the Parquet files Spark wrote under the staging folder."""

        uri = self.lakehouse.uri(c.name)
        fs, base = _pyarrow_fs(uri)
        stage = f"{base}/{staging_rel}"
        infos = fs.get_file_info(pafs.FileSelector(stage, recursive=True))
        part = list(c.partition_by)
        files = []
        for i in infos:
            if i.type != pafs.FileType.File:
                continue
            rel = i.path[len(stage):].lstrip("/")
            name = rel.rsplit("/", 1)[-1]
            if name.startswith(("_", ".")) or not name.endswith(".parquet"):
                fs.delete_file(i.path)  # _SUCCESS, .crc: not part of the table
                continue
            files.append((rel, i.size, int(i.mtime.timestamp() * 1000) if i.mtime else int(time.time() * 1000)))
        data_cols = [x.name for x in c.columns if x.name not in part]

        def info(f):
            rel, size, mtime = f
            md = pq.read_metadata(f"{stage}/{rel}", filesystem=fs)
            return rel, size, mtime, md.num_rows, delta_stats(md, data_cols)

        workers = max(1, min(16, len(files)))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            infos_ = list(pool.map(info, files))
        adds, rows = [], 0
        for rel, size, mtime, n, stats in infos_:
            if n == 0:  # Spark writes an empty file for an empty non-partitioned write
                fs.delete_file(f"{stage}/{rel}")
                continue
            pv = partition_values_from_path(rel, part)
            adds.append(AddAction(f"{staging_rel}/{rel}", size, pv, mtime, True, stats))
            rows += n
        return adds, rows

    def _staging_committed(self, c: TableContract, staging_rel: str) -> bool:
        """After a failed commit call: did the commit land anyway (e.g. a timeout after success)?"""
        try:
            dt = self.lakehouse._open(c.name)
            if dt is None:
                return False
            paths = pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
            return any(p.startswith(staging_rel + "/") for p in paths)
        except Exception:  # noqa: BLE001 - cannot tell: keep the files (never destroy data)
            return True

    def _delete_uncommitted_staging(self, c: TableContract) -> None:
        """Before a table's first commit: staging folders left by a writer killed before ITS first
        commit hold nothing any reader can see (there is no log to reference them)."""
        if not self.lakehouse.is_local:
            return  # remote leftovers stay until a vacuum: listing a bucket here costs too much
        uri = self.lakehouse.uri(c.name)
        with contextlib.suppress(OSError):
            for d in os.listdir(uri):
                if BRIDGE_STAGING_RE.match(d):
                    _log.info("%s: removing %s, left by a write killed before the first commit", c.name, d)
                    self._delete_staging(c, d)

    def _delete_staging(self, c: TableContract, staging_rel: str) -> None:
        uri = self.lakehouse.uri(c.name)
        try:
            if self.lakehouse.is_local:
                shutil.rmtree(os.path.join(uri, staging_rel), ignore_errors=True)
            else:
                fs, base = _pyarrow_fs(uri)
                fs.delete_dir(f"{base}/{staging_rel}")
        except Exception:  # noqa: BLE001 - last resort: Hadoop FS (what Spark wrote with)
            try:
                jvm = self.spark._jvm  # type: ignore[attr-defined]
                hp = jvm.org.apache.hadoop.fs.Path(f"{self._spark_uri(c.name)}/{staging_rel}")
                hp.getFileSystem(self.spark._jsc.hadoopConfiguration()).delete(hp, True)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001
                pass

    # -- native --------------------------------------------------------------------------------

    def _native_read(self, name: str, version: int | None) -> DataFrame:
        """delta-spark's reader over one snapshot's files (lakehouse/delta_snapshot.py: no Delta
        job per query), or its public reader when this delta-spark lacks the APIs for that."""
        uri = self._spark_uri(name)
        pinned = pinned_frame(self.spark, uri, version)
        if pinned is not None:
            return pinned
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(uri)

    def _native_write(self, c: TableContract, dt: DeltaTable | None, sdf: DataFrame, mode: str,
                      replace_where: str | None, commit_info: dict[str, str] | None = None,
                      relayout: bool = False) -> int:
        if dt is None:  # a new table replaces nothing: an overwrite would still plan Delta's empty file list
            mode, replace_where = "append", None
        via_txn = not relayout  # the transaction writes files in the table's stored partitioning
        if via_txn and not c.partition_by:  # results (events, intervals, findings): thousands of rows, through the driver
            try:
                table = sdf.toArrow()
            except Exception as e:  # noqa: BLE001 - a row the contract refuses (raise_error in _conform)
                raise self._error(c, f"rejected the data: {_first_line(e)}",
                                  "fix the job so its output matches lakehouse/tables.py (`brokerscope tables`)") from e
            rows = self._native_arrow_write(c, table.cast(c.schema), mode, commit_info)
            if rows is not None:
                return rows
        elif via_txn:
            try:
                pschema = T.StructType([f for f in spark_schema(c).fields if f.name in c.partition_by])
                version = txn_write(self.spark, self._spark_uri(c.name), sdf, overwrite=mode == "overwrite",
                                    replace_where=replace_where, partition_schema=pschema, commit_info=commit_info)
            except Exception as e:  # noqa: BLE001
                raise self._error(c, f"the delta-spark write failed: {_first_line(e)}",
                                  "fix the cause above and rerun (delta-spark commits atomically)") from e
            if version is not None:
                return self._committed_rows(c)
        w = sdf.write.format("delta").mode(mode)
        if commit_info:
            w = w.option("userMetadata", json.dumps(commit_info, sort_keys=True))
        if replace_where:
            w = w.option("replaceWhere", replace_where)
        if c.partition_by:
            w = w.partitionBy(*c.partition_by)
        if relayout:  # delta-spark refuses another partitioning without it
            w = w.option("overwriteSchema", "true")
        try:
            w.save(self._spark_uri(c.name))
        except Exception as e:  # noqa: BLE001
            raise self._error(c, f"the delta-spark write failed: {_first_line(e)}",
                              "fix the cause above and rerun (delta-spark commits atomically)") from e
        if commit_info and dt is not None and json.dumps(commit_info, sort_keys=True) != self._last_commit(c).get("userMetadata"):
            self._metadata_commit(c, commit_info)  # nothing was committed: no file to add and none to remove
            return 0
        return self._committed_rows(c)

    def _native_arrow_write(self, c: TableContract, table: pa.Table, mode: str,
                            commit_info: dict[str, str] | None) -> int | None:
        """An unpartitioned result held in Arrow: one Parquet file written by pyarrow into the
        table's folder, committed by delta-spark's transaction (lakehouse/delta_txn.py). A Spark write
        job for a few thousand rows cost ~0.7 s of its 1.2 s per write (codegen, output committer),
        the file itself milliseconds. None when the transaction path does not apply."""
        missing = [f.name for f in c.schema if not f.nullable and table.column(f.name).null_count]
        if missing:
            raise self._error(c, f"rejected the data: null in required column(s) {', '.join(missing)}",
                              "fix the job so its output matches lakehouse/tables.py (`brokerscope tables`)")
        fs, base = _pyarrow_fs(self.lakehouse.uri(c.name))
        adds, rel = [], None
        if table.num_rows:
            fs.create_dir(base, recursive=True)  # a new table's folder
            rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
            footers: list = []
            pq.write_table(table, f"{base}/{rel}", filesystem=fs, compression="snappy", metadata_collector=footers)
            info = fs.get_file_info(f"{base}/{rel}")
            adds.append({"path": rel, "partitionValues": {}, "size": info.size, "dataChange": True,
                         "modificationTime": int(info.mtime.timestamp() * 1000) if info.mtime else int(time.time() * 1000),
                         "stats": delta_stats(footers[0], c.column_names[:STATS_COLUMNS])})
        version = None
        try:
            version = txn_write(self.spark, self._spark_uri(c.name), adds, schema=spark_schema(c),
                                overwrite=mode == "overwrite", commit_info=commit_info)
        except Exception as e:  # noqa: BLE001
            raise self._error(c, f"the delta-spark commit failed: {_first_line(e)}",
                              "fix the cause above and rerun (delta-spark commits atomically)") from e
        finally:
            if rel and version is None and not self._references(c, rel):
                with contextlib.suppress(OSError):
                    fs.delete_file(f"{base}/{rel}")  # never committed: no reader can see it
        return None if version is None else table.num_rows

    def _references(self, c: TableContract, rel: str) -> bool:
        """Does the table's current version hold the file `rel` (a commit that failed after landing)?"""
        try:
            dt = self.lakehouse._open(c.name)
            return dt is not None and rel in pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
        except Exception:  # noqa: BLE001 - cannot tell: keep the file (never destroy data)
            return True

    def _last_commit(self, c: TableContract) -> dict:
        last = self.lakehouse.history(c.name)[:1]
        return last[0] if last else {}

    def _committed_rows(self, c: TableContract) -> int:
        """Rows the table's latest commit wrote (its operationMetrics; -1 when it has none)."""
        metrics = self._last_commit(c).get("operationMetrics") or {}
        for k in ("numOutputRows", "num_added_rows"):
            if k in metrics:
                return int(metrics[k])
        return -1


    def _metadata_commit(self, c: TableContract, commit_info: dict[str, str]) -> None:
        """A commit carrying `commit_info` that changes no data. delta-spark commits nothing for a
        write that adds and removes no file (an empty table overwritten with no rows), but a job's
        watermark must land in every output's latest commit (analysis/watermark.py): a table
        property set to the watermark's hash makes that commit."""
        text = json.dumps(commit_info, sort_keys=True)
        key = "spark.databricks.delta.commitInfo.userMetadata"
        self.spark.conf.set(key, text)
        try:
            self.spark.sql(f"ALTER TABLE delta.`{self._spark_uri(c.name)}` SET TBLPROPERTIES "
                           f"('brokerscope.last_write' = '{hashlib.sha256(text.encode()).hexdigest()[:16]}')")
        except Exception as e:  # noqa: BLE001
            raise self._error(c, f"the delta-spark commit of the job's watermark failed: {_first_line(e)}",
                              "rerun: the job recomputes in full when its watermark is missing") from e
        finally:
            self.spark.conf.unset(key)


def added_actions(lakehouse: Lakehouse, name: str, since_version: int, version: int) -> list[dict] | None:
    """The add actions (as the log has them: `path` percent-encoded, `stats` JSON text) of the
    commits `since_version` + 1 .. `version` of table `name`, read from those commits' JSON files;
    None when one of them removed a file (an overwrite, a delete, a compaction), is gone (log
    cleanup) or cannot be read, or `since_version` is not a version up to `version`. One small read
    per commit since: the cost does not grow with the table's history (no snapshot replay at an old
    version, no listing of every file of the history)."""
    if since_version < 0 or since_version > version:
        return None
    fs, base = _pyarrow_fs(lakehouse.uri(name))
    added: list[dict] = []
    for v in range(since_version + 1, version + 1):
        try:
            with fs.open_input_stream(f"{base}/_delta_log/{v:020d}.json") as f:
                text = f.read().decode()
        except OSError:  # FileNotFoundError too: cleaned up, or not readable
            return None
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except ValueError:
                return None
            if "remove" in action:
                return None
            if "add" in action:
                added.append(action["add"])
    return added


def added_rows(lakehouse: Lakehouse, name: str, add: dict) -> int:
    """Rows in the file an add action (added_actions) added: its statistics' numRecords, else the
    file's Parquet footer."""
    stats = add.get("stats")
    if stats:
        n = json.loads(stats).get("numRecords")
        if n is not None:
            return int(n)
    fs, base = _pyarrow_fs(lakehouse.uri(name))
    return pq.read_metadata(f"{base}/{urllib.parse.unquote(add['path'])}", filesystem=fs).num_rows


def read_added(lakehouse: Lakehouse, name: str, adds: list[dict], columns: list[str]) -> list[pa.Table]:
    """`columns` of the files the add actions `adds` (added_actions) added, one table per file, read
    by pyarrow (no Spark; the partition columns are not in the files). KeyError for an absolute
    path (a shallow clone's files: not read here)."""
    fs, base = _pyarrow_fs(lakehouse.uri(name))
    tables = []
    for a in adds:
        if "://" in a["path"]:
            raise KeyError(a["path"])
        tables.append(pq.read_table(f"{base}/{urllib.parse.unquote(a['path'])}", columns=columns, filesystem=fs))
    return tables


def added_files(lakehouse: Lakehouse, name: str, since_version: int, version: int) -> set[str] | None:
    """The paths (percent-decoded) of `added_actions`' files; None where it gives None."""
    adds = added_actions(lakehouse, name, since_version, version)
    return None if adds is None else {a["path"] if _is_uri(a["path"]) else urllib.parse.unquote(a["path"]) for a in adds}


def _project(df: DataFrame, columns: Sequence[str] | None) -> DataFrame:
    return df if columns is None else df.select(*columns)


# --- Delta conventions ----------------------------------------------------------------------------
