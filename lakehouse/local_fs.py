"""Hadoop's local file system without a child process per call, for local Spark sessions.

Without Hadoop's native library (pyspark ships none), RawLocalFileSystem spawns `readlink` for
every link-status lookup — FileContext asks it of both paths of every rename, and delta-spark
commits and writes its `.crc` by rename — and `chmod` for every permission it sets: 440 spawns for
30 small delta-spark operations (strace, session 18), each one a posix_spawn of the driver JVM.
`lakehouse/localfs/*.java` overrides just those two calls (java.nio instead; symbolic links and
sticky bits keep Hadoop's code). The jar is compiled once against Spark's own Hadoop jar into
lakehouse/localfs/build; without a JDK it is skipped with a warning and Hadoop's classes serve.
$BROKERSCOPE_HADOOP_LOCAL_FS=hadoop keeps Hadoop's own classes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

_log = logging.getLogger("brokerscope.lakehouse.spark")

SRC_DIR = Path(__file__).resolve().parent / "localfs"
FS_CLASS = "brokerscope.hadoop.NoForkLocalFileSystem"  # fs.file.impl (FileSystem API)
FS_CONTEXT_CLASS = "brokerscope.hadoop.NoForkLocalFs"  # fs.AbstractFileSystem.file.impl (FileContext API)
_BUILT: dict[str, Path | None] = {}


def local_fs_jar() -> Path | None:
    """The jar, built if missing or older than its sources; None (one warning) when it cannot be."""
    if "jar" in _BUILT:
        return _BUILT["jar"]
    from infra.delta_jars import spark_jars_dir  # deferred: pyspark's location
    from infra.jvm_agents import build_jar

    hadoop = sorted(spark_jars_dir().glob("hadoop-client-api-*.jar"))
    jar = None
    try:
        if not hadoop:
            raise RuntimeError(f"no hadoop-client-api jar in {spark_jars_dir()}")
        jar = build_jar(SRC_DIR, SRC_DIR / "build" / "brokerscope-localfs.jar", "Manifest-Version: 1.0\n", hadoop[-1:])
    except Exception as e:  # noqa: BLE001 - no javac, a read-only checkout: Hadoop's own classes still work
        _log.warning("Spark keeps Hadoop's local file system (a process spawn per rename and chmod): "
                     "could not build lakehouse/localfs: %s", str(e).splitlines()[0] if str(e) else type(e).__name__)
    _BUILT["jar"] = jar
    return jar


def with_local_fs(settings: dict[str, str]) -> None:
    """Put the no-spawn local file system on a local session's driver (before its JVM starts),
    unless the settings already choose one or $BROKERSCOPE_HADOOP_LOCAL_FS is `hadoop`."""
    if os.environ.get("BROKERSCOPE_HADOOP_LOCAL_FS", "").strip().lower() == "hadoop":
        return
    if "spark.hadoop.fs.file.impl" in settings or "spark.hadoop.fs.AbstractFileSystem.file.impl" in settings:
        return
    jar = local_fs_jar()
    if jar is None:
        return
    path = settings.get("spark.driver.extraClassPath", "")
    settings["spark.driver.extraClassPath"] = os.pathsep.join(x for x in (path, str(jar)) if x)
    settings["spark.hadoop.fs.file.impl"] = FS_CLASS
    settings["spark.hadoop.fs.AbstractFileSystem.file.impl"] = FS_CONTEXT_CLASS
