"""The Java agents the lab JVMs load: the official Jolokia 2.x JVM agent (``org.jolokia:jolokia-agent-jvm``,
fetched by ``infra.artifacts``), configured read-only, and the GC ballast (``infra/gc_ballast``, built
from source with the JDK on first use).

Jolokia: ``jolokia_jvm_args(conf_dir, ...)`` writes two files and returns the JVM arguments::

    <conf_dir>/jolokia-access.xml        the policy: loopback clients, commands read, list, search and
                                         version (exec and write get status 403); with strict_origin
                                         <cors><strict-checking/></cors>
    <conf_dir>/jolokia-agent.properties  (mode 0600) host=127.0.0.1, the port, discoveryEnabled=false,
                                         policyLocation, disabledServices, user and password

The command line carries only ``-javaagent:<jar>=config=<properties>``, so ``ps`` never shows the
password. ``disabledServices`` turns off what the ``<commands>`` list does not restrict in 2.6.0: the
JSR-160 proxy (a ``read`` with a ``target`` makes the agent open a JMX connection to the URL it is
given; by default only ``ldap`` JNDI URLs are refused) and the notification backends (``notification``
requests pass the policy whatever it lists).

The port: ``port=0`` lets the kernel pick a free one as the agent binds, so nothing can take it
between choosing and binding (a port chosen beforehand is free for any other process on a shared
machine during the second or more before the JVM binds it, and the agent then fails while the JVM
runs on). The agent prints ``Jolokia: Agent 2.6.0 started with URL http://127.0.0.1:<port>/jolokia and
PID <pid>`` on stdout; ``wait_for_agent_url`` reads that line from the JVM's log, for that PID only,
so the line of an earlier JVM in the same log is never taken. A restarted JVM is given its first
port back by its lab.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

from infra.artifacts import jolokia_agent_jar
from infra.lab_logs import tail
from infra.processes import LabError, java_tool

__all__ = ["DISABLED_SERVICES", "JOLOKIA_ACCESS_FILE", "JOLOKIA_PROPERTIES_FILE", "READ_ONLY_COMMANDS",
           "agent_build_dir", "ballast_jvm_arg", "build_ballast", "build_jar", "jolokia_jvm_args", "wait_for_agent_url"]

JOLOKIA_ACCESS_FILE = "jolokia-access.xml"
JOLOKIA_PROPERTIES_FILE = "jolokia-agent.properties"
#: the only request types the agent serves; any other gets status 403 ("... not allowed due to policy used")
READ_ONLY_COMMANDS = ("read", "list", "search", "version")
#: Jolokia services a read-only agent goes without (see the module docstring)
DISABLED_SERVICES = (
    "org.jolokia.service.jsr160.Jsr160RequestHandler",
    "org.jolokia.service.notif.pull.PullNotificationBackend",
    "org.jolokia.service.notif.sse.SseNotificationBackend",
)
_AGENT_STARTED = re.compile(r"^Jolokia: Agent (?:\S+ )?started with URL (?P<url>\S+) and PID (?P<pid>\d+)\s*$", re.M)
_AGENT_FAILED = "Could not start Jolokia agent"


def _policy_xml(strict_origin: bool) -> str:
    commands = "".join(f"    <command>{c}</command>\n" for c in READ_ONLY_COMMANDS)
    # strict-checking alone (no <allow-origin>): a request without Origin or Referer gets status 403,
    # any Origin passes
    cors = "  <cors>\n    <strict-checking/>\n  </cors>\n" if strict_origin else ""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            "<!-- written by infra/jvm_agents.py: the lab's read-only Jolokia policy -->\n"
            "<restrict>\n  <remote>\n    <host>127.0.0.1</host>\n  </remote>\n"
            f"  <commands>\n{commands}  </commands>\n{cors}</restrict>\n")


def _property_value(value: str) -> str:
    """``value`` as java.util.Properties.load reads it back (the file is ISO-8859-1: other characters,
    and everything outside printable ASCII, as \\uXXXX escapes)."""
    out = []
    for i, ch in enumerate(value):
        if ch == "\\":
            out.append("\\\\")
        elif ch == " " and i == 0:
            out.append("\\ ")  # a leading blank would be dropped
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            units = ch.encode("utf-16-be")  # a character beyond U+FFFF is two escapes (a surrogate pair)
            out.extend(f"\\u{units[j]:02x}{units[j + 1]:02x}" for j in range(0, len(units), 2))
    return "".join(out)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by this user only from its first byte."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(text)


def jolokia_jvm_args(
    conf_dir: Path,
    *,
    port: int = 0,
    user: str | None = None,
    password: str | None = None,
    strict_origin: bool = False,
    threads: int | None = None,
) -> list[str]:
    """Write the agent's policy and properties into ``conf_dir``; the JVM arguments that load it.

    ``port=0``: the kernel picks it (read it back with :func:`wait_for_agent_url`). ``user`` and
    ``password`` switch on HTTP Basic auth; ``threads`` serves requests on that many threads (the
    agent's default is one). ``-Dsun.net.httpserver.nodelay=true`` comes along: without it the JDK
    HTTP server's answers on a kept-alive connection wait ~40 ms for the client's delayed ACK.
    """
    if (user is None) != (password is None):
        raise ValueError("user and password go together")
    conf_dir = Path(conf_dir).resolve()
    conf_dir.mkdir(parents=True, exist_ok=True)
    properties_file = conf_dir / JOLOKIA_PROPERTIES_FILE
    if "," in str(properties_file):
        raise ValueError(f"{properties_file}: the agent splits its options at ',', so the path cannot hold one")
    policy = conf_dir / JOLOKIA_ACCESS_FILE
    policy.write_text(_policy_xml(strict_origin))
    props = {
        "host": "127.0.0.1",
        "port": str(int(port)),
        "discoveryEnabled": "false",
        "policyLocation": policy.as_uri(),
        "disabledServices": ",".join(DISABLED_SERVICES),
    }
    if user is not None:
        props |= {"user": user, "password": password or ""}
    if threads is not None:
        props |= {"executor": "fixed", "threadNr": str(int(threads))}
    _write_private(properties_file, "# written by infra/jvm_agents.py\n"
                   + "".join(f"{k}={_property_value(v)}\n" for k, v in props.items()))
    return ["-Dsun.net.httpserver.nodelay=true", f"-javaagent:{jolokia_agent_jar()}=config={properties_file}"]


def wait_for_agent_url(log: Path, pid: int, timeout: float, *, since: int = 0,
                       exited: "subprocess.Popen[bytes] | None" = None, what: str = "JVM") -> str:
    """The URL the Jolokia agent of JVM ``pid`` reports in ``log`` (read from byte ``since``, where that
    JVM's output starts). Fails at once when the agent says it could not start or ``exited`` ends."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(log, "rb") as fh:
                fh.seek(since)
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            text = ""
        for m in _AGENT_STARTED.finditer(text):
            if int(m.group("pid")) == pid:
                return m.group("url").rstrip("/")
        if _AGENT_FAILED in text:
            raise LabError(f"the Jolokia agent of {what} (pid {pid}) failed to start.\n--- tail of {log} ---\n{tail(log)}")
        if exited is not None and exited.poll() is not None:
            raise LabError(f"{what} exited with code {exited.returncode} before its Jolokia agent listened.\n"
                           f"--- tail of {log} ---\n{tail(log)}")
        if time.monotonic() >= deadline:
            raise LabError(f"timeout after {timeout:.1f}s waiting for the Jolokia agent of {what} (pid {pid}).\n"
                           f"--- tail of {log} ---\n{tail(log)}")
        time.sleep(0.02)


# --------------------------------------------------------------------------------------------------
# The GC ballast
# --------------------------------------------------------------------------------------------------

BALLAST_SRC_DIR = Path(__file__).resolve().parent / "gc_ballast"
BALLAST_MAIN_CLASS = "brokerscope.ballast.GcBallast"


def agent_build_dir() -> Path:
    """``infra/gc_ballast/build`` (gitignored) or ``$BROKERSCOPE_AGENT_BUILD_DIR``."""
    override = os.environ.get("BROKERSCOPE_AGENT_BUILD_DIR")
    return Path(override) if override else BALLAST_SRC_DIR / "build"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_ballast(force: bool = False) -> Path:
    """Build (if needed) and return the GC ballast agent jar (``infra/gc_ballast``): ``-javaagent:<jar>=mb=N``
    gives a JVM a live set of N MiB of small, randomly linked objects (see GcBallast.java)."""
    manifest = f"Manifest-Version: 1.0\nPremain-Class: {BALLAST_MAIN_CLASS}\nMain-Class: {BALLAST_MAIN_CLASS}\n"
    return build_jar(BALLAST_SRC_DIR, agent_build_dir() / "brokerscope-gc-ballast.jar", manifest, [], force)


def build_jar(src_dir: Path, jar_path: Path, manifest_text: str, deps: Sequence[Path], force: bool = False) -> Path:
    """javac the ``*.java`` of ``src_dir`` against ``deps`` (which stay on the runtime classpath) and jar
    them with the manifest.

    Rebuilt only when missing or older than a source or dependency; concurrent callers wait on a file lock.
    """
    out_dir = jar_path.parent
    sources = sorted(src_dir.glob("*.java"))
    if not sources:
        raise LabError(f"no Java sources in {src_dir}")

    def up_to_date() -> bool:
        return (not force and jar_path.exists()
                and jar_path.stat().st_mtime >= max(p.stat().st_mtime for p in [*sources, *deps]))

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
            manifest = tmp / "MANIFEST.MF"
            manifest.write_text(manifest_text)
            tmp_jar = tmp / jar_path.name
            res = subprocess.run([java_tool("jar"), "--create", "--file", str(tmp_jar), "--manifest", str(manifest),
                                  "-C", str(classes), "."], capture_output=True, text=True)
            if res.returncode != 0:
                raise LabError(f"jar failed ({res.returncode}):\n{res.stdout}{res.stderr}")
            os.replace(tmp_jar, jar_path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return jar_path


def ballast_jvm_arg(mb: int) -> str:
    return f"-javaagent:{build_ballast()}=mb={int(mb)}"
