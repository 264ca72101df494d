"""The Spark session brokerscope's jobs run in: local or a cluster master, quiet log4j2, and
delta-spark's jars and session extension when they are cached (infra/delta_jars.py), else none —
then lakehouse.spark.SparkLakehouse takes the delta-rs bridge. `lakehouse_mode` says which Delta
access path SparkLakehouse uses."""

from __future__ import annotations

import glob
import logging
import os
import re
import tempfile
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from infra import delta_jars
from lakehouse.local_fs import with_local_fs
from lakehouse.tables import TABLES

_log = logging.getLogger("brokerscope.lakehouse.spark")

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DELTA_TABLE_DEFAULTS = "spark.databricks.delta.properties.defaults."  # + a table property without "delta."
DELTA_LOGS_KEPT = 2 * len(TABLES)  # every table of a lakehouse twice over: `brokerscope run` keeps all of its own
STATS_COLUMNS = 8  # delta.dataSkippingNumIndexedCols of the tables delta-spark creates

class DeltaSparkUnavailableError(RuntimeError):
    """mode="native" was asked for but delta-spark is not usable in this Spark session."""


# --- session ----------------------------------------------------------------------------------


def _delta_jars_hint(conf: dict[str, str]) -> bool:
    """Before the JVM starts: are delta-spark's classes provided by someone else (the user's
    spark.jars / spark.jars.packages / driver class path, a jar in $SPARK_HOME/jars or pyspark/jars,
    or BROKERSCOPE_DELTA_SPARK=1 for a cluster image that has them)?"""
    if os.environ.get("BROKERSCOPE_DELTA_SPARK", "").strip().lower() in ("1", "true", "yes"):
        return True
    for key in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath"):
        if re.search(r"delta[-_](spark|core)", conf.get(key, "") or ""):
            return True
    dirs = [os.path.join(os.path.dirname(pyspark.__file__), "jars")]
    if os.environ.get("SPARK_HOME"):
        dirs.append(os.path.join(os.environ["SPARK_HOME"], "jars"))
    return any(glob.glob(os.path.join(d, p)) for d in dirs for p in ("delta-spark_*.jar", "delta-core_*.jar"))


LOG4J2_TEMPLATE = """# brokerscope: Spark's own log lines at {level} and above only, to stderr (spark_session)
# The root starts at {root}: at another level than WARN the driver announces "Setting default log level"
# (Spark's Logging, pyspark counts as a shell); setLogLevel({level}) follows once the session exists.
rootLogger.level = {root}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
# known start-up warnings, said on every start and fixed by nothing a user can do here
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = {level}
"""
LOG4J_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


def log4j2_config_file(level: str) -> str:
    """A log4j2 properties file for the driver JVM at `level`: without one, Spark prints its default
    profile's banner and startup warnings (NativeCodeLoader, …) before setLogLevel can act."""
    level = level.upper() if level.upper() in LOG4J_LEVELS else "ERROR"
    path = Path(tempfile.gettempdir()) / f"brokerscope-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}-{level}.properties"
    quiet = LOG4J_LEVELS.index(level) > LOG4J_LEVELS.index("WARN")
    text = LOG4J2_TEMPLATE.format(level=level.lower(), root="warn" if quiet else level.lower())
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return str(path)


def delta_choice(delta: str | None = None) -> str:
    """auto | native | bridge: the argument, else $BROKERSCOPE_DELTA, else auto."""
    choice = (delta or os.environ.get("BROKERSCOPE_DELTA") or "auto").strip().lower()
    if choice not in ("auto", "native", "bridge"):
        raise ValueError(f"Delta access must be 'auto', 'native' or 'bridge' (argument or $BROKERSCOPE_DELTA), not {choice!r}")
    return choice


def _with_delta(settings: dict[str, str], delta: str) -> None:
    """Put delta-spark on the session: the cached jars in spark.jars (unless someone else provides
    them) and the Delta extension + catalog. bridge: neither (a JVM without Delta classes)."""
    if delta == "bridge":
        return
    if not _delta_jars_hint(settings):
        cached = delta_jars.jars()
        if cached is None:
            if delta == "native":
                raise DeltaSparkUnavailableError(
                    f"native Delta needs delta-spark {delta_jars.DELTA_VERSION}'s jars, which are not in the cache "
                    f"({delta_jars.cache_dir()}): run {delta_jars.setup_command} once (Maven Central), or start "
                    "with BROKERSCOPE_DELTA=bridge (delta-rs commits, no jars needed)")
            _log.warning("delta-spark's jars are not in the cache: Spark uses the delta-rs bridge. Run %s once "
                         "for native Delta", delta_jars.setup_command)
            return
        settings["spark.jars"] = ",".join(x for x in (settings.get("spark.jars", ""), *map(str, cached)) if x)
    ext = settings.get("spark.sql.extensions", "")
    if DELTA_EXTENSION not in ext:
        settings["spark.sql.extensions"] = ",".join(x for x in (ext, DELTA_EXTENSION) if x)
    settings.setdefault("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    # delta-spark collects min/max/null statistics on the first 32 columns of every file it writes,
    # generating the code for them in every write task: about 0.6 s per write of a 20-column table on
    # two loaded cores (BENCHMARKS.md). The contracts lead with their key, time, group and instance
    # columns, the ones readers filter on; the rest only ever get scanned.
    settings.setdefault(DELTA_TABLE_DEFAULTS + "dataSkippingNumIndexedCols", str(STATS_COLUMNS))
    # A checkpoint is a Spark job writing Parquet: ~2 s on two loaded cores however small the table.
    # delta-spark writes one every 10 commits by default; the gold tables are rewritten on every
    # analysis tick, so that was +0.2 s per write on average (BENCHMARKS.md). Every version has its
    # `.crc` (file list, protocol, metadata), so reads replay no log; 100 is delta-rs's interval.
    settings.setdefault(DELTA_TABLE_DEFAULTS + "checkpointInterval", "100")
    # Each commit's `.crc` lists every file of the table only up to 50 files (delta-spark's default);
    # past that, the first read of each new version replays the log in 1–3 Spark jobs, and the
    # partitioned series pass 50 files within a day of ticks. Listing up to 10,000 costs a few MB
    # of JSON per commit (computed incrementally from the previous `.crc`, no job) and saves the
    # replay on every tick's reads (BENCHMARKS.md, session 18).
    settings.setdefault("spark.databricks.delta.allFilesInCrc.thresholdNumFiles", "10000")
    # delta-spark keeps the log of every table it touched (its snapshot, the snapshot's cached state)
    # for an hour, up to 10,000 tables: ~2.6 MB of driver heap per small table (measured, 150 fresh
    # tables: 507 MB live vs 177 MB with 20 kept). A lakehouse has len(TABLES) tables; the suite
    # makes hundreds of lakehouses in an hour, and a 1 g driver ran out of memory (CI, session 19).
    settings.setdefault("spark.databricks.delta.delta.log.cacheSize", str(DELTA_LOGS_KEPT))


def _local_cores(master: str) -> int:
    """local → 1, local[4] → 4, local[*] / local[*, 3] → the machine's cores."""
    m = re.match(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$", master.strip())
    if not m or not m.group(1):
        return 1 if master.strip() == "local" else (os.cpu_count() or 2)
    return (os.cpu_count() or 2) if m.group(1) == "*" else max(1, int(m.group(1)))


def spark_session(app_name: str = "brokerscope", master: str | None = None,
                  conf: dict | None = None, delta: str | None = None) -> SparkSession:
    """A SparkSession with sane local defaults (reuses the active one — getOrCreate).

    master: argument, else $BROKERSCOPE_SPARK_MASTER, else local[2] (under spark-submit the
    submitted master is kept). delta (argument, else $BROKERSCOPE_DELTA, else auto): auto and
    native put delta-spark on the session — the jars `python -m infra.delta_jars` cached (unless
    the classpath already has them) and the Delta extension + catalog; auto falls back to the
    delta-rs bridge when the jars are not cached, native raises DeltaSparkUnavailableError;
    bridge starts Spark without Delta classes. $BROKERSCOPE_SPARK_LOG_LEVEL sets the log level
    (default ERROR; `brokerscope -v`: WARN), from the JVM's start (a log4j2 file,
    log4j2_config_file). `conf` wins over every default."""
    user = {str(k): str(v) for k, v in (conf or {}).items()}
    settings: dict[str, str] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "1g",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.parquet.compression.codec": "snappy",
        # Spark keeps the code it generates per query shape in a cache of 100 by default; one analysis
        # needs ~260 (measured, drill_replication_zk_kill), so every run recompiled them all (Janino, then
        # the JIT compiling ~520 new classes): −20 % JVM CPU per repeated analysis with room for them
        "spark.sql.codegen.cache.maxEntries": "2000",
        # PySpark's DataFrame debugging tags every pyspark.sql.functions call with its Python call
        # site: ~10 JVM round trips per call (active session, conf, origin set/clear), 30,000 of the
        # 55,000 py4j calls of one analysis (drill_replication_zk_kill). Off: 10-16 % less wall per
        # analysis, half the Python CPU (BENCHMARKS.md "Suite time"); a failing expression's error
        # then names the plan node, not the Python line.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
    }
    master = master or os.environ.get("BROKERSCOPE_SPARK_MASTER")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit: keep its master
    if not master and not submitted:
        master = "local[2]"
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to loopback" noise
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
        # Delta rebuilds a snapshot's file list in a job of 50 tasks by default (sized for large logs
        # on a cluster); our logs are small and local mode has a few cores: one task per core. Measured
        # on the kill-master drill (2 cores): the analysis took 452 s with 50, see BENCHMARKS.md.
        settings["spark.databricks.delta.snapshotPartitions"] = str(_local_cores(master))
    level = os.environ.get("BROKERSCOPE_SPARK_LOG_LEVEL", "ERROR")
    settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{log4j2_config_file(level)}"
    settings.update(user)
    if master and master.startswith("local") and not submitted:  # our JVM, one machine: its file:// is ours
        with_local_fs(settings)
    _with_delta(settings, delta_choice(delta))
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(level)
    return spark


_NATIVE_CACHE: dict[str, bool] = {}


def delta_native_available(spark: SparkSession) -> bool:
    """True when io.delta.sql.DeltaSparkSessionExtension can be loaded in the driver JVM AND is
    configured in spark.sql.extensions (without it delta-spark refuses most operations).
    False on any failure (e.g. Spark Connect: no JVM). Cached per Spark application."""
    try:
        key = f"{spark.sparkContext.applicationId}:{id(spark)}"
    except Exception:  # noqa: BLE001
        return False
    if key in _NATIVE_CACHE:
        return _NATIVE_CACHE[key]
    ok = False
    try:
        jvm = spark._jvm  # type: ignore[attr-defined]
        found = False
        for load in (
            lambda: jvm.org.apache.spark.util.Utils.classForName(DELTA_EXTENSION, False, False),
            lambda: jvm.java.lang.Class.forName(
                DELTA_EXTENSION, False, jvm.java.lang.Thread.currentThread().getContextClassLoader()),
            lambda: jvm.java.lang.Class.forName(DELTA_EXTENSION),
        ):
            try:
                load()
                found = True
                break
            except Exception:  # noqa: BLE001
                continue
        ok = found and DELTA_EXTENSION in (spark.conf.get("spark.sql.extensions", "") or "")
    except Exception:  # noqa: BLE001
        ok = False
    _NATIVE_CACHE[key] = ok
    return ok


def lakehouse_mode(mode: str | None = None) -> str:
    """How Spark reads and writes the tables: the argument, else $BROKERSCOPE_DELTA, else auto.
    auto (the default): native delta-spark when the session has it, else the delta-rs bridge (a
    site without the jars). native: delta-spark or an error; bridge: delta-rs commits."""
    return (mode or os.environ.get("BROKERSCOPE_DELTA") or "auto").strip().lower()
