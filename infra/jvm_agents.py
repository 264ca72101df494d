"""The Java agents the lab JVMs load, built from source with the JDK on first use: the read-only
Jolokia agent of the ActiveMQ brokers (``infra/jolokia_agent``) and the GC ballast (``infra/gc_ballast``)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Iterator, Sequence

from infra.processes import LabError, java_tool

__all__ = ["JOLOKIA_CORE_JAR", "JSON_SIMPLE_JAR", "agent_build_dir", "agent_jvm_arg", "ballast_jvm_arg",
           "build_agent", "build_ballast", "build_jar"]

JOLOKIA_CORE_JAR = Path("/usr/share/java/jolokia-core.jar")
JSON_SIMPLE_JAR = Path("/usr/share/java/json-simple.jar")
AGENT_SRC_DIR = Path(__file__).resolve().parent / "jolokia_agent"
AGENT_JAR_NAME = "brokerscope-jolokia-agent.jar"
AGENT_MAIN_CLASS = "brokerscope.jolokia.JolokiaAgent"


def agent_build_dir() -> Path:
    """``infra/jolokia_agent/build`` (gitignored) or ``$BROKERSCOPE_AGENT_BUILD_DIR``."""
    override = os.environ.get("BROKERSCOPE_AGENT_BUILD_DIR")
    return Path(override) if override else AGENT_SRC_DIR / "build"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _skip_bundled_entry(name: str) -> bool:
    upper = name.upper()
    return (
        name.endswith("/")
        or upper == "META-INF/MANIFEST.MF"
        or upper.startswith("META-INF/MAVEN/")
        or upper.endswith((".SF", ".RSA", ".DSA", ".EC"))
        or name.endswith("module-info.class")
    )


def build_agent(force: bool = False) -> Path:
    """Build (if missing or older than its sources/dependencies) and return the agent jar.

    The jar is self-contained: our classes plus the unpacked Debian jolokia-core 1.7.1 and json-simple
    jars, so it works from any classpath (the javaagent is loaded by the system class loader, which
    ActiveMQ's own class loader delegates to first). Safe to call concurrently (file lock).
    """
    deps = [JOLOKIA_CORE_JAR, JSON_SIMPLE_JAR]
    missing = [str(d) for d in deps if not d.exists()]
    if missing:
        raise LabError(
            f"missing {missing}: apt-get install libjolokia-core-java libjson-simple-java (infra/setup.sh)"
        )
    manifest = (
        "Manifest-Version: 1.0\n"
        f"Premain-Class: {AGENT_MAIN_CLASS}\n"
        f"Agent-Class: {AGENT_MAIN_CLASS}\n"
        f"Main-Class: {AGENT_MAIN_CLASS}\n"
        "Implementation-Title: brokerscope read-only Jolokia agent (bundles Debian jolokia-core"
        " 1.7.1 + json-simple)\n"
    )
    return build_jar(AGENT_SRC_DIR, agent_build_dir() / AGENT_JAR_NAME, manifest, deps, force)


BALLAST_SRC_DIR = Path(__file__).resolve().parent / "gc_ballast"
BALLAST_MAIN_CLASS = "brokerscope.ballast.GcBallast"


def build_ballast(force: bool = False) -> Path:
    """Build (if needed) and return the GC ballast agent jar (``infra/gc_ballast``): ``-javaagent:<jar>=mb=N``
    gives a JVM a live set of N MiB of small, randomly linked objects (see GcBallast.java)."""
    manifest = (
        "Manifest-Version: 1.0\n"
        f"Premain-Class: {BALLAST_MAIN_CLASS}\n"
        f"Main-Class: {BALLAST_MAIN_CLASS}\n"
    )
    return build_jar(BALLAST_SRC_DIR, agent_build_dir() / "brokerscope-gc-ballast.jar", manifest, [], force)


def ballast_jvm_arg(mb: int) -> str:
    return f"-javaagent:{build_ballast()}=mb={int(mb)}"


def build_jar(src_dir: Path, jar_path: Path, manifest_text: str, deps: Sequence[Path], force: bool,
              bundle: bool = True) -> Path:
    """javac the ``*.java`` of ``src_dir`` against ``deps``, bundle the deps' classes (unless not
    ``bundle``: then they stay on the runtime classpath), jar with the manifest.

    Rebuilt only when missing or older than a source or dependency; concurrent callers wait on a file lock.
    """
    out_dir = jar_path.parent
    sources = sorted(src_dir.glob("*.java"))
    if not sources:
        raise LabError(f"no Java sources in {src_dir}")

    def up_to_date() -> bool:
        if force or not jar_path.exists():
            return False
        newest = max(p.stat().st_mtime for p in [*sources, *deps])
        return jar_path.stat().st_mtime >= newest

    if up_to_date():
        return jar_path
    with _file_lock(out_dir / ".build.lock"):
        if up_to_date():  # somebody else built it while we waited
            return jar_path
        tmp = Path(tempfile.mkdtemp(prefix="jar-", dir=out_dir))
        try:
            classes = tmp / "classes"
            classes.mkdir()
            cmd = [java_tool("javac"), "--release", "17", "-encoding", "UTF-8", "-nowarn", "-d", str(classes)]
            if deps:
                cmd += ["-cp", os.pathsep.join(str(d) for d in deps)]
            res = subprocess.run([*cmd, *map(str, sources)], capture_output=True, text=True)
            if res.returncode != 0:
                raise LabError(f"javac failed ({res.returncode}):\n{res.stdout}{res.stderr}")
            for dep in deps if bundle else ():
                _unpack_into(dep, classes)
            manifest = tmp / "MANIFEST.MF"
            manifest.write_text(manifest_text)
            tmp_jar = tmp / jar_path.name
            res = subprocess.run(
                [java_tool("jar"), "--create", "--file", str(tmp_jar), "--manifest", str(manifest),
                 "-C", str(classes), "."],
                capture_output=True, text=True,
            )
            if res.returncode != 0:
                raise LabError(f"jar failed ({res.returncode}):\n{res.stdout}{res.stderr}")
            os.replace(tmp_jar, jar_path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return jar_path


def _unpack_into(dep: Path, classes: Path) -> None:
    with zipfile.ZipFile(dep) as zf:
        for info in zf.infolist():
            if _skip_bundled_entry(info.filename):
                continue
            target = classes / info.filename
            if target.exists():
                raise LabError(f"bundling conflict: {info.filename} from {dep}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))


def agent_jvm_arg(
    jar: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    path: str = "/jolokia",
    port_file: Path | None = None,
    user: str | None = None,
    password_file: Path | None = None,
    strict_origin: bool = False,
    **extra: str,
) -> str:
    """``-javaagent:<jar>=...`` for the agent (values must not contain ',')."""
    opts: dict[str, str] = {"host": host, "port": str(port), "path": path}
    if port_file is not None:
        opts["portFile"] = str(port_file)
    if user is not None:
        if password_file is None:
            raise ValueError("user needs password_file")
        opts["user"] = user
        opts["passwordFile"] = str(password_file)
    if strict_origin:
        opts["strictOrigin"] = "true"
    opts.update({k: str(v) for k, v in extra.items()})
    for k, v in opts.items():
        if "," in v or "," in k:
            raise ValueError(f"agent option {k}={v!r} must not contain ','")
    return f"-javaagent:{jar}=" + ",".join(f"{k}={v}" for k, v in opts.items())
