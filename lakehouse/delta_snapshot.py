"""Native Delta reads with the table's file list resolved once per read, not once per query.

`spark.read.format("delta").load(path)` leaves the file list open: delta-spark's optimizer rule
PrepareDeltaScan lists the snapshot's files again in a Spark job ("Delta: Filtering files for
query") for every query that touches the DataFrame, and the first listing of a new version also
replays its log and aggregates its state ("Compute snapshot for version: N", two to three jobs).
A job is 0.3–1 s of scheduling on two loaded cores whatever the table's size, and an analysis runs
a few queries over each table it reads: on the kill-master drill these were 67 of the 86 Spark
jobs native Delta ran beyond the delta-rs bridge (BENCHMARKS.md, issue 20).

Here the read pins one snapshot (`DeltaLog.forTableWithSnapshot`: the log listed now, so our own
last commit is seen) and hands its files to delta-spark's own scan over a fixed file list
(`DeltaLog.createDataFrame` → TahoeBatchFileIndex: the same Parquet reader, partition pruning on
the driver, deletion vectors and column mapping applied), so later queries plan with no Delta job.
A DataFrame read before a later commit keeps reading its own version, as the bridge's file list
does. The files come from the version's checksum file when delta-spark wrote them there (it keeps
every file of a table of up to `spark.databricks.delta.allFilesInCrc.thresholdNumFiles` = 50 files
in `<version>.crc`, computed incrementally at commit), else from one log replay. What is lost against the open reader is
min/max data skipping (partition pruning stays); the bridge has none either.

These are delta-spark's internal Scala APIs (pinned: infra/delta_jars.py); a delta-spark without
them (another version on a cluster image) makes `pinned_frame` return None and the caller uses the
public reader.
"""

from __future__ import annotations

import collections
import logging

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.sql import DataFrame, SparkSession

_log = logging.getLogger("brokerscope.lakehouse.spark")
_WARNED: set[str] = set()


def _snapshot(spark: SparkSession, uri: str, version: int | None):
    """(DeltaLog, Snapshot): the latest (the log listed now) or the one at `version`."""
    delta_log = spark._jvm.org.apache.spark.sql.delta.DeltaLog  # type: ignore[attr-defined]
    if version is None:
        pair = delta_log.forTableWithSnapshot(spark._jsparkSession, uri)  # type: ignore[attr-defined]
        return pair._1(), pair._2()
    log = delta_log.forTable(spark._jsparkSession, uri)  # type: ignore[attr-defined]
    none = spark._jvm.scala.Option.empty()  # type: ignore[attr-defined]
    return log, log.getSnapshotAt(version, none, none, False)


# (Spark application, path, version, table id, commit time) → (AddFiles, how many)
_FILES: collections.OrderedDict = collections.OrderedDict()
_FILES_KEPT = 50_000  # AddFiles held in all (~1 KB each with statistics: ~50 MB of a 1 g driver)


def snapshot_files(spark: SparkSession, snapshot):
    """The snapshot's AddFiles (a Scala Seq): its checksum's list when it has one (no Spark job),
    else its log replay — a Spark job or three, kept per version (up to `_FILES_KEPT` files in
    all, least recently used out) so reading one version of a table that has no file list in its checksum
    (written by delta-rs, or more than allFilesInCrc.thresholdNumFiles files) several times in a
    run replays its log once. A version is immutable; the table id and the version's commit time
    tell a table deleted and created again at the same path from the old one."""
    crc = snapshot.checksumOpt()
    if crc.isDefined() and crc.get().allFiles().isDefined():
        return crc.get().allFiles().get()
    key = (spark.sparkContext.applicationId, str(snapshot.path()), snapshot.version(), snapshot.metadata().id(),
           snapshot.timestamp())
    if key in _FILES:
        _FILES.move_to_end(key)
        return _FILES[key][0]
    listed = snapshot.allFiles().collectAsList()
    files = spark._jvm.scala.jdk.javaapi.CollectionConverters.asScala(listed).toSeq()  # type: ignore[attr-defined]
    _FILES[key] = (files, listed.size())
    while len(_FILES) > 1 and sum(n for _, n in _FILES.values()) > _FILES_KEPT:
        _FILES.popitem(last=False)
    return files


def pinned_frame(spark: SparkSession, uri: str, version: int | None = None) -> DataFrame | None:
    """The Delta table at `uri` (its latest version, or `version`) as a DataFrame over the files of
    that one snapshot, read by delta-spark; None when this delta-spark lacks the APIs used."""
    try:
        log, snapshot = _snapshot(spark, uri, version)
        jdf = log.createDataFrame(snapshot, snapshot_files(spark, snapshot), False, spark._jvm.scala.Option.empty())  # type: ignore[attr-defined]
    except Py4JJavaError:  # delta-spark's own error (a corrupt log, storage): surface it
        raise
    except Py4JError as e:  # a method py4j cannot find in this delta-spark
        missing_api(e, "pinned reads (reads plan their files per query)")
        return None
    return DataFrame(jdf, spark)


def missing_api(e: Py4JError, what: str) -> None:
    """Say once per use that this delta-spark lacks an internal API we call (the caller then takes
    the public one, slower)."""
    if what not in _WARNED:
        _WARNED.add(what)
        _log.warning("this delta-spark lacks the internal APIs for %s: %s; using its public API",
                     what, str(e).splitlines()[0])
