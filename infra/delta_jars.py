"""delta-spark's JVM jars for Spark, fetched once with Maven into the cache, offline afterwards.

    python -m infra.artifacts            # fetches these too (infra/setup.sh runs it)
    python -m infra.delta_jars           # only these; prints the jar paths
    python -m infra.delta_jars --check   # verify every jar against its published SHA-1; exit 1 if not

The pair is pinned: pyspark 4.2.x with delta-spark 4.4.0 (pyproject.toml pins the Python side).
delta-spark 4.4.1 is on PyPI but NOT on Maven Central (tried on 2026-11-26, all "not found":
``io.delta:delta-spark_4.2_2.13:4.4.1``, ``io.delta:delta-spark_2.13:4.4.1``,
``io.delta:delta-storage:4.4.1``); 4.4.0 is the newest release served, built against Spark 4.2.0
(its POM: spark-sql_2.13 4.2.0, provided). The artifact carries the Spark line in its name
(``delta-spark_4.2_2.13``), as ``delta.pip_utils.configure_spark_with_delta_pip`` chooses it.

Maven resolves the runtime closure of that artifact (``dependency:list`` on a one-dependency POM,
``--strict-checksums``: a download whose checksum does not match fails). Jars of artifacts Spark
already ships in ``pyspark/jars`` (Hadoop, Parquet, Jackson, log4j, Scala, ... in other versions)
are left out — Spark's own win on the classpath anyway, and a second copy only invites conflicts.
The rest (delta-spark, delta-storage, delta-kernel-*, unitycatalog client, a few small libraries)
is copied with the ``.sha1`` Maven keeps beside each into::

    <cache>/delta-spark-4.4.0_spark-4.2/<jar>, <jar>.sha1, MANIFEST.json (written last: complete)

`jars()` is what a Spark session start asks (presence and sizes, no hashing: ~1 ms);
``--check`` re-hashes everything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from infra.artifacts import ArtifactError, _published_sha1, _sha1, cache_dir

__all__ = ["DELTA_VERSION", "SPARK_LINE", "coordinates", "jars", "ensure", "spark_jars_dir", "setup_command"]

#: the pinned pair: delta-spark release → the Spark line it is built for
DELTA_VERSION = "4.4.0"
SPARK_LINE = "4.2"
SCALA = "2.13"
#: shown in every "jars missing" message
setup_command = "python -m infra.delta_jars (or infra/setup.sh)"


def coordinates() -> str:
    return f"io.delta:delta-spark_{SPARK_LINE}_{SCALA}:{DELTA_VERSION}"


def spark_jars_dir() -> Path:
    import pyspark  # deferred: only the fetch needs to know which jars Spark ships

    return Path(pyspark.__file__).resolve().parent / "jars"


def _spark_line() -> str:
    import pyspark  # deferred: see spark_jars_dir

    return ".".join(pyspark.__version__.split(".")[:2])


def _home() -> Path:
    return cache_dir() / f"delta-spark-{DELTA_VERSION}_spark-{SPARK_LINE}"


def _check_pair() -> None:
    line = _spark_line()
    if line != SPARK_LINE:
        raise ArtifactError(
            f"pyspark {line}.x is installed but delta-spark {DELTA_VERSION} is built for Spark {SPARK_LINE}: "
            f"pip install 'pyspark=={SPARK_LINE}.*' (pyproject.toml pins the pair), or move DELTA_VERSION/"
            f"SPARK_LINE in infra/delta_jars.py to a pair Delta publishes")


def jars(verify: bool = False) -> list[Path] | None:
    """The cached jar set (delta-spark first), or None when it is missing or incomplete.
    verify: also compare each jar with its published SHA-1 (else presence and size only)."""
    manifest = _home() / "MANIFEST.json"
    try:
        entries = json.loads(manifest.read_text())["jars"]
    except (OSError, ValueError, KeyError):
        return None
    out = []
    for e in entries:
        f = _home() / e["file"]
        try:
            if f.stat().st_size != e["size"]:
                return None
        except OSError:
            return None
        if verify and (_sha1(f) != e["sha1"] or _published_sha1(f.with_name(f.name + ".sha1")) != e["sha1"]):
            return None
        out.append(f)
    return out


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>brokerscope</groupId><artifactId>delta-spark-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>io.delta</groupId><artifactId>delta-spark_{line}_{scala}</artifactId><version>{version}</version></dependency>
  </dependencies>
</project>
"""

# `dependency:list -DoutputAbsoluteArtifactFilename=true` lines: group:artifact:type[:classifier]:version:scope:/abs/path
_LISTED = re.compile(r"^\s*([^:\s]+):([^:\s]+):jar(?::[^:\s]+)?:([^:\s]+):(compile|runtime)(?::(/\S+))?")


def _resolve(work: Path) -> list[tuple[str, str, str, Path]]:
    """(group, artifact, version, jar in the local Maven repository) of the runtime closure."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ArtifactError("'mvn' not found: apt-get install maven (infra/setup.sh installs it)")
    (work / "pom.xml").write_text(_POM.format(line=SPARK_LINE, scala=SCALA, version=DELTA_VERSION))
    listing = work / "deps.txt"
    cmd = [mvn, "-B", "-q", "--strict-checksums", "-f", str(work / "pom.xml"), "dependency:list",
           "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        out = (done.stdout + done.stderr).strip().splitlines()
        raise ArtifactError(f"Maven could not resolve {coordinates()} (exit {done.returncode}); is Maven Central "
                            "reachable and the version served? Last lines:\n" + "\n".join(out[-8:]))
    found = []
    for line in listing.read_text().splitlines():
        m = _LISTED.match(line)
        if m and m.group(5):
            found.append((m.group(1), m.group(2), m.group(3), Path(m.group(5))))
    if not any(a.startswith("delta-spark_") for _g, a, _v, _p in found):
        raise ArtifactError(f"Maven's dependency list of {coordinates()} does not name the artifact itself "
                            f"({len(found)} entries in {listing}); cannot tell which jars Spark needs")
    return found


def _shipped_by_spark() -> set[str]:
    """Artifact ids of the jars in pyspark/jars (file names: <artifact>-<version>.jar)."""
    names = set()
    for f in spark_jars_dir().glob("*.jar"):
        m = re.match(r"^(.+?)-\d", f.name)
        if m:
            names.add(m.group(1))
    return names


def ensure() -> list[Path]:
    """The jar set, fetched and verified when missing; a present cache is a fast no-op."""
    _check_pair()
    have = jars()
    if have:
        return have
    home = _home()
    with tempfile.TemporaryDirectory(prefix="delta-jars-") as tmp:
        resolved = _resolve(Path(tmp))
    shipped = _shipped_by_spark()
    if home.exists():
        shutil.rmtree(home)  # an incomplete copy (no manifest)
    home.mkdir(parents=True)
    entries, left_out = [], []
    for group, artifact, version, src in resolved:
        if artifact in shipped:
            left_out.append(f"{group}:{artifact}:{version}")
            continue
        published = _published_sha1(src.with_name(src.name + ".sha1"))
        if not published or _sha1(src) != published:
            raise ArtifactError(f"{src} does not match the SHA-1 Maven keeps beside it ({published}); "
                                f"delete {src.parent} and run {setup_command} again")
        shutil.copy2(src, home / src.name)
        shutil.copy2(src.with_name(src.name + ".sha1"), home / (src.name + ".sha1"))
        entries.append({"coordinates": f"{group}:{artifact}:{version}", "file": src.name,
                        "size": src.stat().st_size, "sha1": published})
    entries.sort(key=lambda e: (not e["file"].startswith("delta-spark_"), e["file"]))
    manifest = {"coordinates": coordinates(), "jars": entries, "left_out_shipped_by_spark": sorted(left_out)}
    tmp_manifest = home / "MANIFEST.json.tmp"
    tmp_manifest.write_text(json.dumps(manifest, indent=1) + "\n")
    os.replace(tmp_manifest, home / "MANIFEST.json")
    got = jars(verify=True)
    if not got:
        raise ArtifactError(f"the jars copied to {home} do not verify; delete it and run {setup_command} again")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infra.delta_jars", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="verify the cached jars (SHA-1); exit 1 if missing or damaged")
    args = ap.parse_args(argv)
    try:
        if args.check:
            _check_pair()
            found = jars(verify=True)
            if not found:
                raise ArtifactError(f"delta-spark {DELTA_VERSION} jars are missing or damaged in {_home()}: "
                                    f"run {setup_command}")
        else:
            found = ensure()
    except ArtifactError as e:
        print(f"[delta_jars] {e}", file=sys.stderr)
        return 1
    for f in found:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
