"""Binary artifacts the labs need (Artemis, Kafka, the Jolokia JVM agent every lab JVM without a Jolokia of
its own loads), fetched once from Maven Central with Maven itself.

    python -m infra.artifacts            # fetch what is missing, verify, unpack; prints the paths
    python -m infra.artifacts --check    # exit 1 (and say what to run) when something is missing

Cache: ``$BROKERSCOPE_CACHE`` or ``~/.cache/brokerscope`` (never the repository)::

    maven/<file>            the artifact as Maven copied it (``mvn dependency:copy``)
    maven/<file>.sha1       the checksum Central publishes beside it (fetched as its own artifact)
    apache-artemis-2.40.0/  the unpacked distribution (``.brokerscope-unpacked`` marks a whole unpack)
    kafka-4.3.1/m2/         Kafka's jars and their dependencies, as a Maven local repository (each
                            jar beside the ``.sha1`` Central published for it)
    kafka-4.3.1/classpath.txt   the verified classpath, one jar a line (written last: marks a whole fetch)

Maven resolves with ``--strict-checksums`` (a download whose checksum does not match fails), and
the copy in the cache is checked against the published ``.sha1`` on every fetch; a present,
verified, unpacked cache is a fast no-op. Central serves no ``.sha512`` for these artifacts (tried:
``org.apache.activemq:apache-artemis:2.40.0:tar.gz.sha512:bin`` → not found), so SHA-1 it is.

Kafka: Central serves no distribution tarball, so the lab runs Kafka from its jars:
``kafka_2.13``, ``connect-runtime``, ``connect-mirror``, ``connect-mirror-client`` and ``kafka-tools``
with their runtime dependencies, plus ``log4j-slf4j-impl`` (the binding the distribution ships;
without it Kafka logs nothing). Version 4.3.1, not 4.4.0: tried on 2026-11-26,
``org.apache.kafka:connect-mirror:4.4.0`` and ``org.apache.kafka:connect-mirror-client:4.4.0`` are
not served (``Could not find artifact``) while ``kafka_2.13`` and ``connect-runtime`` 4.4.0 are;
4.3.1 is served for all five, and one version for every module avoids a mixed classpath.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ARTEMIS", "JOLOKIA_AGENT", "KAFKA_MODULES", "KAFKA_VERSION", "Artifact", "ArtifactError", "artemis_home",
           "cache_dir", "ensure", "jolokia_agent_jar", "kafka_classpath"]


class ArtifactError(RuntimeError):
    """An artifact could not be fetched or verified (the message says what to do)."""


@dataclass(frozen=True)
class Artifact:
    group: str
    artifact: str
    version: str
    extension: str
    classifier: str

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}:{self.extension}:{self.classifier}"

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}-{self.classifier}.{self.extension}"


#: Apache ActiveMQ Artemis binary distribution (2.40.0's bin is served; 2.56.0's is not).
ARTEMIS = Artifact("org.apache.activemq", "apache-artemis", "2.40.0", "tar.gz", "bin")
#: The official Jolokia 2.x JVM agent (2.6.0 = newest served on 2026-11-25), for JVMs without Jolokia
#: (configured read-only by infra/jvm_agents.py).
JOLOKIA_AGENT = Artifact("org.jolokia", "jolokia-agent-jvm", "2.6.0", "jar", "javaagent")

_UNPACKED_MARK = ".brokerscope-unpacked"

#: Kafka (KRaft brokers/controllers, Connect, MirrorMaker 2, the admin tools): one version for all
KAFKA_VERSION = "4.3.1"
KAFKA_MODULES = ("kafka_2.13", "connect-runtime", "connect-mirror", "connect-mirror-client", "kafka-tools")
#: the slf4j 1.x binding to log4j2 (Kafka 4.3.1 resolves slf4j-api 1.7.36 and log4j-core 2.25.4)
KAFKA_LOG_BINDING = ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.4")


def cache_dir() -> Path:
    return Path(os.environ.get("BROKERSCOPE_CACHE") or Path.home() / ".cache" / "brokerscope")


def _sha1(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _published_sha1(path: Path) -> str | None:
    try:
        return path.read_text().split()[0].strip().lower()  # "<hex>" or "<hex>  <file>"
    except (OSError, IndexError):
        return None


def verified(art: Artifact) -> Path | None:
    """The cached file when it matches its published SHA-1, else None."""
    f = cache_dir() / "maven" / art.file_name
    expected = _published_sha1(f.with_name(f.name + ".sha1"))
    return f if f.exists() and expected and _sha1(f) == expected else None


def _mvn_copy(coordinates: str, dest: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ArtifactError("'mvn' not found: apt-get install maven (infra/setup.sh installs it)")
    cmd = [mvn, "-B", "-q", "--strict-checksums", "dependency:copy",
           f"-Dartifact={coordinates}", f"-DoutputDirectory={dest}", "-Dmdep.overWriteReleases=true"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        out = (done.stdout + done.stderr).strip().splitlines()
        raise ArtifactError(f"Maven could not fetch {coordinates} (exit {done.returncode}); is Maven Central "
                            f"reachable and the version served? Last lines:\n" + "\n".join(out[-8:]))


def fetch(art: Artifact) -> Path:
    """The verified artifact in the cache, fetched through Maven when missing or not matching."""
    found = verified(art)
    if found:
        return found
    dest = cache_dir() / "maven"
    dest.mkdir(parents=True, exist_ok=True)
    _mvn_copy(art.coordinates, dest)
    sha = Artifact(art.group, art.artifact, art.version, art.extension + ".sha1", art.classifier)
    _mvn_copy(sha.coordinates, dest)
    found = verified(art)
    if found is None:
        f = dest / art.file_name
        raise ArtifactError(f"{f} does not match its published SHA-1 ({_published_sha1(f.with_name(f.name + '.sha1'))}); "
                            f"delete {dest} and run python -m infra.artifacts again")
    return found


def _unpack(tarball: Path, into: Path, top: str) -> Path:
    """Unpack the distribution (members must stay under ``top``); a marker says it finished."""
    home = into / top
    if (home / _UNPACKED_MARK).exists():
        return home
    if home.exists():
        shutil.rmtree(home)  # a half-finished unpack
    with tarfile.open(tarball) as tar:
        bad = [m.name for m in tar.getmembers() if not (m.name == top or m.name.startswith(top + "/")) or ".." in m.name.split("/")]
        if bad:
            raise ArtifactError(f"{tarball} has entries outside {top}/ ({bad[:3]}); refusing to unpack it")
        tar.extractall(into, filter="tar")
    (home / _UNPACKED_MARK).write_text(f"{tarball.name} sha1={_sha1(tarball)}\n")
    return home


def artemis_home(fetch_missing: bool = False) -> Path:
    """``$BROKERSCOPE_ARTEMIS_HOME`` or the unpacked cached distribution; with ``fetch_missing``
    fetch and unpack it first, else a clear error when it is not there."""
    override = os.environ.get("BROKERSCOPE_ARTEMIS_HOME")
    if override:
        return Path(override)
    home = cache_dir() / f"apache-artemis-{ARTEMIS.version}"
    if (home / _UNPACKED_MARK).exists():
        return home
    if not fetch_missing:
        raise ArtifactError(f"Artemis {ARTEMIS.version} is not unpacked at {home}: run python -m infra.artifacts "
                            "(infra/setup.sh does) or set BROKERSCOPE_ARTEMIS_HOME")
    return _unpack(fetch(ARTEMIS), cache_dir(), f"apache-artemis-{ARTEMIS.version}")


def jolokia_agent_jar(fetch_missing: bool = False) -> Path:
    found = verified(JOLOKIA_AGENT) if not fetch_missing else fetch(JOLOKIA_AGENT)
    if found is None:
        raise ArtifactError(f"{JOLOKIA_AGENT.coordinates} is not in {cache_dir() / 'maven'}: run python -m infra.artifacts")
    return found


def kafka_home() -> Path:
    return cache_dir() / f"kafka-{KAFKA_VERSION}"


def _kafka_pom() -> str:
    deps = [("org.apache.kafka", m, KAFKA_VERSION) for m in KAFKA_MODULES] + [KAFKA_LOG_BINDING]
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
                   for g, a, v in deps)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"<groupId>brokerscope.lab</groupId><artifactId>kafka-lab</artifactId><version>{KAFKA_VERSION}</version>"
            f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n")


def _verify_jars(jars: list[Path]) -> list[str]:
    """What is wrong with the jars of a Maven local repository (each must match its ``.sha1``)."""
    bad = []
    for j in jars:
        expected = _published_sha1(j.with_name(j.name + ".sha1"))
        if not j.exists() or expected is None or _sha1(j) != expected:
            bad.append(f"{j.name} (published sha1 {expected})")
    return bad


def kafka_classpath(fetch_missing: bool = False) -> list[Path]:
    """The jars to run Kafka, Connect and MirrorMaker 2 from (``$BROKERSCOPE_KAFKA_LIBS``, a folder
    of jars, overrides); with ``fetch_missing`` resolve them with Maven (strict checksums) into the
    cache, verify every jar against its published SHA-1, then record the classpath."""
    override = os.environ.get("BROKERSCOPE_KAFKA_LIBS")
    if override:
        return sorted(Path(override).glob("*.jar"))
    home = kafka_home()
    listing = home / "classpath.txt"
    if listing.exists():
        jars = [Path(line) for line in listing.read_text().split("\n") if line]
        if jars and all(j.exists() for j in jars):
            return jars
    if not fetch_missing:
        raise ArtifactError(f"Kafka {KAFKA_VERSION} jars are not in {home}: run python -m infra.artifacts "
                            "(infra/setup.sh does) or set BROKERSCOPE_KAFKA_LIBS to a folder of Kafka jars")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ArtifactError("'mvn' not found: apt-get install maven (infra/setup.sh installs it)")
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(_kafka_pom())
    out = home / "classpath.tmp"
    cmd = [mvn, "-B", "-q", "--strict-checksums", "-f", str(home / "pom.xml"), f"-Dmaven.repo.local={home / 'm2'}",
           "dependency:build-classpath", "-DincludeScope=runtime", f"-Dmdep.outputFile={out}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()
        raise ArtifactError(f"Maven could not resolve Kafka {KAFKA_VERSION} ({', '.join(KAFKA_MODULES)}; exit "
                            f"{done.returncode}): is Maven Central reachable and the version served? Last lines:\n"
                            + "\n".join(lines[-8:]))
    jars = [Path(p) for p in out.read_text().strip().split(os.pathsep) if p]
    bad = _verify_jars(jars)
    if bad or not jars:
        raise ArtifactError(f"{len(bad)} Kafka jars do not match their published SHA-1 ({bad[:3]}); "
                            f"delete {home} and run python -m infra.artifacts again")
    tmp = home / "classpath.txt.tmp"
    tmp.write_text("".join(f"{j}\n" for j in jars))
    os.replace(tmp, listing)
    out.unlink()
    return jars


def ensure() -> dict[str, Path]:
    kafka_classpath(fetch_missing=True)
    return {"artemis_home": artemis_home(fetch_missing=True), "jolokia_agent": jolokia_agent_jar(fetch_missing=True),
            "kafka_classpath": kafka_home() / "classpath.txt"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infra.artifacts", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only report; exit 1 if something is missing")
    args = ap.parse_args(argv)
    try:
        paths = ({"artemis_home": artemis_home(), "jolokia_agent": jolokia_agent_jar(),
                  "kafka_classpath": kafka_home() / "classpath.txt" if kafka_classpath() else None}
                 if args.check else ensure())
    except ArtifactError as e:
        print(f"[artifacts] {e}", file=sys.stderr)
        return 1
    for k, v in paths.items():
        print(f"{k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
