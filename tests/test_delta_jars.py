"""delta-spark's jar cache (infra/delta_jars.py): offline once filled, damage detected, the pinned
pair enforced. No JVM; needs the cache `python -m infra.delta_jars` fills (infra/setup.sh)."""

from __future__ import annotations

import json
import shutil

import pytest

from infra import delta_jars
from infra.artifacts import ArtifactError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private copy of the filled cache (tests damage it)."""
    real = delta_jars.jars(verify=True)
    if real is None:
        pytest.fail(f"delta-spark's jars are not cached: run {delta_jars.setup_command}")
    home = real[0].parent
    monkeypatch.setenv("BROKERSCOPE_CACHE", str(tmp_path))
    shutil.copytree(home, tmp_path / home.name)
    return tmp_path / home.name


def test_the_cached_set_is_delta_spark_for_this_spark_and_nothing_spark_ships(cache):
    found = delta_jars.jars(verify=True)
    names = [f.name for f in found]
    assert names[0] == f"delta-spark_{delta_jars.SPARK_LINE}_2.13-{delta_jars.DELTA_VERSION}.jar"
    assert f"delta-storage-{delta_jars.DELTA_VERSION}.jar" in names
    shipped = {f.name for f in delta_jars.spark_jars_dir().glob("*.jar")}
    assert not shipped & set(names)
    manifest = json.loads((cache / "MANIFEST.json").read_text())
    left_out = {c.split(":")[1] for c in manifest["left_out_shipped_by_spark"]}
    assert {"scala-library", "jackson-databind", "parquet-hadoop"} <= left_out  # Spark's own versions win


def test_a_filled_cache_needs_no_maven(cache, monkeypatch):
    monkeypatch.setattr(delta_jars.shutil, "which", lambda _name: None)  # no mvn, no network
    assert delta_jars.ensure() == delta_jars.jars()


def test_damage_is_caught(cache, capsys):
    jar = cache / f"delta-storage-{delta_jars.DELTA_VERSION}.jar"
    data = bytearray(jar.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the hash can tell
    jar.write_bytes(bytes(data))
    assert delta_jars.jars() is not None and delta_jars.jars(verify=True) is None
    assert delta_jars.main(["--check"]) == 1
    assert "python -m infra.delta_jars" in capsys.readouterr().err
    jar.write_bytes(bytes(data[:100]))  # truncated: a session start notices (sizes)
    assert delta_jars.jars() is None


def test_an_incomplete_copy_is_not_a_cache(cache):
    (cache / "MANIFEST.json").unlink()  # written last: without it the copy did not finish
    assert delta_jars.jars() is None


def test_another_spark_line_is_refused_with_the_pin(cache, monkeypatch):
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", "4.1.1")
    with pytest.raises(ArtifactError, match=r"pyspark 4\.1\.x .* delta-spark 4\.4\.0 is built for Spark 4\.2"):
        delta_jars.ensure()
