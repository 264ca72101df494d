"""Binary artifacts the Artemis lab needs, fetched once from Maven Central with Maven itself.

    python -m infra.artifacts            # fetch what is missing, verify, unpack; prints the paths
    python -m infra.artifacts --check    # exit 1 (and say what to run) when something is missing

Cache: ``$BROKERSCOPE_CACHE`` or ``~/.cache/brokerscope`` (never the repository)::

    maven/<file>            the artifact as Maven copied it (``mvn dependency:copy``)
    maven/<file>.sha1       the checksum Central publishes beside it (fetched as its own artifact)
    apache-artemis-2.40.0/  the unpacked distribution (``.brokerscope-unpacked`` marks a whole unpack)

Maven resolves with ``--strict-checksums`` (a download whose checksum does not match fails), and
the copy in the cache is checked against the published ``.sha1`` on every fetch; a present,
verified, unpacked cache is a fast no-op. Central serves no ``.sha512`` for these artifacts (tried:
``org.apache.activemq:apache-artemis:2.40.0:tar.gz.sha512:bin`` → not found), so SHA-1 it is.
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

__all__ = ["ARTEMIS", "JOLOKIA_AGENT", "Artifact", "ArtifactError", "artemis_home", "cache_dir", "ensure", "jolokia_agent_jar"]


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
#: The official Jolokia 2.x JVM agent (2.6.0 = newest served on 2026-11-25), for JVMs without Jolokia.
JOLOKIA_AGENT = Artifact("org.jolokia", "jolokia-agent-jvm", "2.6.0", "jar", "javaagent")

_UNPACKED_MARK = ".brokerscope-unpacked"


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


def ensure() -> dict[str, Path]:
    return {"artemis_home": artemis_home(fetch_missing=True), "jolokia_agent": jolokia_agent_jar(fetch_missing=True)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infra.artifacts", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only report; exit 1 if something is missing")
    args = ap.parse_args(argv)
    try:
        paths = {"artemis_home": artemis_home(), "jolokia_agent": jolokia_agent_jar()} if args.check else ensure()
    except ArtifactError as e:
        print(f"[artifacts] {e}", file=sys.stderr)
        return 1
    for k, v in paths.items():
        print(f"{k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
