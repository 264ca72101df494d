"""lakehouse/local_fs.py: the local Spark session's file:// is the no-spawn file system, and it answers
exactly what Hadoop's own RawLocalFileSystem answers for the calls it replaces."""

from __future__ import annotations

import os
import stat

import pytest

from lakehouse.local_fs import FS_CLASS, FS_CONTEXT_CLASS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def hadoop(spark):
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    ours = jvm.org.apache.hadoop.fs.FileSystem.getLocal(conf).getRaw()
    theirs = jvm.org.apache.hadoop.fs.RawLocalFileSystem()
    theirs.initialize(jvm.java.net.URI("file:///"), conf)
    return jvm, conf, ours, theirs


def test_the_session_uses_it_for_both_hadoop_apis(spark, hadoop):
    jvm, conf, ours, _ = hadoop
    assert ours.getClass().getName() == "brokerscope.hadoop.NoForkRawLocalFileSystem"
    assert jvm.org.apache.hadoop.fs.FileSystem.getLocal(conf).getClass().getName() == FS_CLASS
    context = jvm.org.apache.hadoop.fs.FileContext.getLocalFSFileContext(conf)
    assert context.getDefaultFileSystem().getClass().getName() == FS_CONTEXT_CLASS


def _status(fs, jvm, path: str):
    try:
        s = fs.getFileLinkStatus(jvm.org.apache.hadoop.fs.Path(path))
    except Exception as e:  # noqa: BLE001 - the answer compared is the exception's class
        return type(e).__name__, str(e).split("java.io.")[-1].split(":")[0].strip()
    target = str(s.getSymlink().toUri().getPath()) if s.isSymlink() else None
    return (str(s.getPath().toUri().getPath()), s.isFile(), s.isDirectory(), s.isSymlink(), target, s.getLen(),
            s.getModificationTime())


def test_link_status_is_hadoops_for_files_directories_links_and_missing_paths(hadoop, tmp_path):
    jvm, _, ours, theirs = hadoop
    (tmp_path / "file").write_text("x" * 17)
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    for name in ("file", "dir", "link", "dangling", "missing"):
        for path in (str(tmp_path / name), f"file://{tmp_path / name}"):  # Hadoop sees links in bare paths only
            assert _status(ours, jvm, path) == _status(theirs, jvm, path), path
    assert _status(ours, jvm, str(tmp_path / "link"))[3:5] == (True, str(tmp_path / "file"))
    assert _status(ours, jvm, str(tmp_path / "missing"))[0] == "Py4JJavaError"


@pytest.mark.parametrize("mode", [0o644, 0o750, 0o600, 0o777, 0o1777, 0o000])
def test_set_permission_gives_the_mode_hadoop_gives(hadoop, tmp_path, mode):
    jvm, _, ours, theirs = hadoop
    modes = []
    for fs, name in ((ours, "ours"), (theirs, "theirs")):
        p = tmp_path / name
        p.mkdir()
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(f"file://{p}"), jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
        modes.append(stat.S_IMODE(os.stat(p).st_mode))
    assert modes[0] == modes[1] == mode


def test_a_delta_commit_renames_through_it(spark, tmp_path):
    """delta-spark commits by FileContext rename (HDFSLogStore) and writes its .crc the same way."""
    from lakehouse.spark import SparkLakehouse
    from lakehouse.store import Lakehouse

    if SparkLakehouse(spark, Lakehouse(str(tmp_path))).mode != "native":
        pytest.skip("delta-spark's jars are not cached (bridge)")
    df = spark.createDataFrame([("a", 1)], "k string, v long")
    df.write.format("delta").save(str(tmp_path / "t"))
    df.write.format("delta").mode("append").save(str(tmp_path / "t"))
    logs = sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir() if not p.name.startswith("."))
    assert logs[:4] == ["00000000000000000000.crc", "00000000000000000000.json", "00000000000000000001.crc",
                        "00000000000000000001.json"]
    assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 2
