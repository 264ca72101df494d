"""Real ActiveMQ Classic master/slave lab on loopback (Debian ``activemq`` 5.17 package).

Two broker JVMs share one KahaDB directory guarded by the shared-file-locker, so exactly one of them is
master. Each JVM runs our read-only Jolokia agent (``infra/jolokia_agent``, jolokia-core 1.7.1) on its own
port, writes unified GC logs and its own logs under ``<workdir>/<name>/``.

    from infra.lab import ActiveMQPair
    with ActiveMQPair(Path("/tmp/lab")) as pair:      # start(): amq-a master, amq-b slave
        pair.kill("amq-a")                             # SIGKILL
        pair.wait_for_role("amq-b", "master", 30)

Stores (``ActiveMQPair(store=...)``): ``shared-kahadb`` (the default, above); ``separate-kahadb``
(each broker its own ``<name>/kahadb``: a misconfigured pair, both master); ``jdbc-lease`` (a JDBC
store in PostgreSQL with the lease-database-locker, ``jdbc_urls`` per broker, e.g. through an
``infra.tcp_proxy.TcpProxy`` to an ``infra.pg_lab.PgCluster``; the driver jar is linked into
``<name>/lib``). ``gc_flags`` picks the collector (default G1); ``ballast_jvm_arg(mb)`` adds a live
set (``infra/gc_ballast``).

Layout of ``<workdir>``::

    pids.json                 pids and endpoints of the brokers started by this lab
    shared/kahadb/            the shared KahaDB store (lock file: shared/kahadb/lock)
    <name>/kahadb/            its own KahaDB (store="separate-kahadb")
    <name>/lib/               postgresql.jar link (store="jdbc-lease")
    <name>/conf/activemq.xml  rendered from infra/activemq/activemq.xml
    <name>/conf/log4j.xml     rendered from infra/activemq/log4j.xml
    <name>/broker.log         JVM stdout+stderr (log4j console output, agent messages)
    <name>/activemq.log       log4j file appender (upstream layout)
    <name>/gc.log             -Xlog:gc*,safepoint (rotated: gc.log.0 ... on restart)
    <name>/jolokia.port       written by the agent once it listens
    <name>/data/              broker dataDirectory (tmp_storage etc.)

CLI: ``python -m infra.lab start|stop|status|drill|build-agent --workdir DIR`` (default ``.lab/activemq``).
``drill`` starts a pair, SIGKILLs the master, restarts it and prints the timings.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Sequence
from xml.sax.saxutils import escape as _xml_escape

from infra.lab_cli import LabCli, run

__all__ = [
    "ACTIVEMQ_HOME",
    "ActiveMQPair",
    "BrokerProcess",
    "LabError",
    "Role",
    "agent_jvm_arg",
    "ballast_jvm_arg",
    "build_agent",
    "build_ballast",
    "jolokia_request",
    "stomp_send",
    "stop_recorded",
]

Role = Literal["master", "slave", "down"]
#: shared-kahadb: one KahaDB + shared-file-locker (a correct pair); separate-kahadb: one KahaDB per broker
#: (a misconfigured pair: both are master); jdbc-lease: JDBC store + lease-database-locker (PostgreSQL)
Store = Literal["shared-kahadb", "separate-kahadb", "jdbc-lease"]
STORES = ("shared-kahadb", "separate-kahadb", "jdbc-lease")
POSTGRESQL_JAR = Path(os.environ.get("BROKERSCOPE_PG_JDBC_JAR", "/usr/share/java/postgresql.jar"))

ACTIVEMQ_HOME = Path(os.environ.get("BROKERSCOPE_ACTIVEMQ_HOME", "/usr/share/activemq"))
JOLOKIA_CORE_JAR = Path("/usr/share/java/jolokia-core.jar")
JSON_SIMPLE_JAR = Path("/usr/share/java/json-simple.jar")
AGENT_SRC_DIR = Path(__file__).resolve().parent / "jolokia_agent"
TEMPLATE_DIR = Path(__file__).resolve().parent / "activemq"
AGENT_JAR_NAME = "brokerscope-jolokia-agent.jar"
AGENT_MAIN_CLASS = "brokerscope.jolokia.JolokiaAgent"

BROKER_MBEAN_PATTERN = "org.apache.activemq:type=Broker,brokerName=*"

# JVM module flags used by the Debian /usr/bin/activemq script for Java > 8.
_ACTIVEMQ_JDK17_FLAGS = (
    "--add-reads=java.xml=java.logging",
    "--add-opens=java.base/java.security=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.naming/javax.naming.spi=ALL-UNNAMED",
    "--add-opens=java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.www.protocol.http=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.www.protocol.https=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.www.protocol.jar=ALL-UNNAMED",
    "--add-exports=jdk.xml.dom/org.w3c.dom.html=ALL-UNNAMED",
    "--add-exports=jdk.naming.rmi/com.sun.jndi.url.rmi=ALL-UNNAMED",
)


class LabError(RuntimeError):
    """Lab could not reach the requested state (message includes the broker log tail when useful)."""


# --------------------------------------------------------------------------------------------------
# Jolokia agent build
# --------------------------------------------------------------------------------------------------


def agent_build_dir() -> Path:
    """``infra/jolokia_agent/build`` (gitignored) or ``$BROKERSCOPE_AGENT_BUILD_DIR``."""
    override = os.environ.get("BROKERSCOPE_AGENT_BUILD_DIR")
    return Path(override) if override else AGENT_SRC_DIR / "build"


def java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).exists():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise LabError(f"'{name}' not found (install openjdk-17-jdk-headless; see infra/setup.sh)")
    return found


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
    return _build_jar(AGENT_SRC_DIR, agent_build_dir() / AGENT_JAR_NAME, manifest, deps, force)


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
    return _build_jar(BALLAST_SRC_DIR, agent_build_dir() / "brokerscope-gc-ballast.jar", manifest, [], force)


def ballast_jvm_arg(mb: int) -> str:
    return f"-javaagent:{build_ballast()}=mb={int(mb)}"


def _build_jar(src_dir: Path, jar_path: Path, manifest_text: str, deps: Sequence[Path], force: bool) -> Path:
    """javac the ``*.java`` of ``src_dir`` against ``deps``, bundle the deps' classes, jar with the manifest.

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
            for dep in deps:
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


# --------------------------------------------------------------------------------------------------
# Minimal Jolokia client (stdlib only; deliberately independent of collectors/)
# --------------------------------------------------------------------------------------------------


def jolokia_request(
    url: str,
    body: Any = None,
    *,
    get_path: str | None = None,
    user: str | None = None,
    password: str | None = None,
    timeout: float = 2.0,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """POST ``body`` (JSON) to ``url`` or GET ``url/get_path``. Returns (HTTP status, parsed JSON or text).

    HTTP errors are returned, not raised; connection problems raise ``OSError``.
    """
    hdrs = dict(headers or {})
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        hdrs["Authorization"] = f"Basic {token}"
    if get_path is not None:
        req = urllib.request.Request(url.rstrip("/") + "/" + get_path.lstrip("/"), headers=hdrs)
    else:
        hdrs.setdefault("Content-Type", "application/json; charset=utf-8")
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=hdrs, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


# --------------------------------------------------------------------------------------------------
# STOMP (stdlib) to put messages on the lab brokers
# --------------------------------------------------------------------------------------------------


def _stomp_write(sock: socket.socket, command: str, headers: dict[str, str], body: bytes = b"") -> None:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")

    head = "".join(f"{esc(k)}:{esc(v)}\n" for k, v in headers.items())
    sock.sendall(f"{command}\n{head}\n".encode() + body + b"\0")


def _stomp_read(sock: socket.socket, buf: bytearray) -> tuple[str, dict[str, str], bytes]:
    while True:
        while buf[:1] in (b"\n", b"\r"):  # heart-beats
            del buf[:1]
        end = buf.find(b"\0")
        if end >= 0:
            frame = bytes(buf[:end])
            del buf[: end + 1]
            head, _, body = frame.partition(b"\n\n")
            lines = head.decode("utf-8", "replace").split("\n")
            hdrs = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
            return lines[0].strip(), hdrs, body
        chunk = sock.recv(65536)
        if not chunk:
            raise LabError("STOMP connection closed by broker")
        buf.extend(chunk)


def stomp_send(
    url: str,
    destination: str,
    bodies: Iterable[str],
    *,
    persistent: bool = True,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> int:
    """Send text messages over STOMP 1.2 (``url`` = ``BrokerProcess.stomp_url``; only the master listens).

    ``destination`` like ``/queue/BROKERSCOPE.LAB``. Every SEND waits for its RECEIPT, so the messages
    are stored when this returns. Returns the number of messages sent.
    """
    parsed = urllib.parse.urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port
    if port is None:
        raise ValueError(f"no port in {url!r}")
    sent = 0
    buf = bytearray()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        _stomp_write(sock, "CONNECT", {"accept-version": "1.2", "host": "localhost", "heart-beat": "0,0"})
        cmd, hdrs, body = _stomp_read(sock, buf)
        if cmd != "CONNECTED":
            raise LabError(f"STOMP CONNECT failed: {cmd} {hdrs} {body[:200]!r}")
        for body_text in bodies:
            data = body_text.encode("utf-8")
            frame_headers = {
                "destination": destination,
                "persistent": "true" if persistent else "false",
                "content-type": "text/plain;charset=utf-8",
                "content-length": str(len(data)),
                "receipt": f"m{sent}",
                **(headers or {}),
            }
            _stomp_write(sock, "SEND", frame_headers, data)
            cmd, hdrs, body = _stomp_read(sock, buf)
            if cmd != "RECEIPT":
                raise LabError(f"STOMP SEND failed: {cmd} {hdrs} {body[:200]!r}")
            sent += 1
        _stomp_write(sock, "DISCONNECT", {"receipt": "bye"})
        with contextlib.suppress(OSError, LabError):
            _stomp_read(sock, buf)
    return sent


# --------------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [p.decode("utf-8", "replace") for p in raw.split(b"\0") if p]


def proc_state(pid: int) -> str | None:
    """Single-letter state from /proc/<pid>/stat (R, S, T, Z, ...) or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def marker_args(workdir: Path, name: str) -> tuple[str, str]:
    return f"-Dbrokerscope.lab={workdir}", f"-Dbrokerscope.broker={name}"


def is_our_java(pid: int, workdir: Path, name: str) -> bool:
    """True if pid is alive (not a zombie) and is the java process of ``name`` in ``workdir``."""
    if proc_state(pid) in (None, "Z", "X"):
        return False
    args = cmdline(pid)
    if not args or not os.path.basename(args[0]).startswith("java"):
        return False
    return all(m in args for m in marker_args(workdir, name))


def tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return f"<no log at {path}>"
    return "\n".join(data.splitlines()[-lines:])


@dataclass
class BrokerProcess:
    """One running broker JVM of the lab."""

    name: str
    pid: int
    jolokia_url: str  # e.g. http://127.0.0.1:41234/jolokia
    openwire_url: str  # e.g. tcp://127.0.0.1:41235
    gc_log: Path
    log: Path  # stdout+stderr of the JVM
    workdir: Path  # <lab workdir>/<name>
    activemq_log: Path = field(default=Path())
    jolokia_port: int = 0
    openwire_port: int = 0
    stomp_url: str = ""  # e.g. stomp://127.0.0.1:41236 (see stomp_send)
    started_at: float = 0.0  # time.time() just before exec

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("gc_log", "log", "workdir", "activemq_log"):
            d[k] = str(d[k])
        return d


#: fragments filled in when the caller gives none: activemq.xml defaults to the shared-KahaDB pair
_DEFAULT_FRAGMENTS = {"PERSISTENCE_ADAPTER": "persistence-kahadb.xml", "EXTRA_BEANS": None}


def _render(template: str, values: dict[str, str], raw: dict[str, str] | None = None) -> str:
    """Fill ``@@KEY@@`` placeholders: ``values`` XML-escaped, ``raw`` (rendered fragments) as they are."""
    text = (TEMPLATE_DIR / template).read_text()
    raw = dict(raw or {})
    for key, fragment in _DEFAULT_FRAGMENTS.items():  # e.g. a KahaDB pair unless told otherwise
        if f"@@{key}@@" in text and key not in raw:
            raw[key] = _render(fragment, values) if fragment else ""
    for key, val in raw.items():
        text = text.replace(f"@@{key}@@", val)
    for key, val in values.items():
        text = text.replace(f"@@{key}@@", _xml_escape(val, {'"': "&quot;"}))
    left = re.findall(r"@@[A-Z0-9_]+@@", text)
    if left:
        raise LabError(f"unrendered placeholders {left} in {template}")
    return text


def signal_pid(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


class ActiveMQPair:
    """A real ActiveMQ Classic shared-storage master/slave pair (two JVMs) on 127.0.0.1.

    ``start()`` launches the first name, waits until it is master, then the second one and waits until it
    reports ``Slave=true``. Roles are read through the broker's own Jolokia agent
    (``org.apache.activemq:type=Broker,brokerName=*`` attribute ``Slave``; a broker whose JVM/agent does
    not answer, or whose Broker MBean is not registered yet, is ``"down"``).

    Ports: OpenWire ports are fixed at construction (free ports unless given), so ``failover_url`` is
    stable. Jolokia ports given as 0 are picked by the agent at first start and reused on restart.

    Measured with ``python -m infra.lab drill`` (2 vCPU container, JDK 17.0.15, 256 MB heap,
    lockAcquireSleepInterval=500 ms, 5 runs, 50 ms polling): first master 1.0-2.1 s after exec; second
    broker reports Slave=true 0.7-1.5 s after exec; slave becomes master 0.77-0.99 s after SIGKILL of the
    master; restarted old master reports Slave=true 0.7-1.8 s after exec; stop() of both 0.4 s.
    """

    def __init__(
        self,
        workdir: Path,
        names: Sequence[str] = ("amq-a", "amq-b"),
        lock_acquire_sleep_ms: int = 500,
        jolokia_ports: Sequence[int] = (0, 0),
        openwire_ports: Sequence[int] = (0, 0),
        heap: str = "256m",
        jolokia_user: str | None = None,
        jolokia_password: str | None = None,
        *,
        stomp_ports: Sequence[int] = (0, 0),
        java: str | None = None,
        extra_jvm_args: Sequence[str] = (),
        stop_grace: float = 15.0,
        store: Store = "shared-kahadb",
        jdbc_urls: dict[str, str] | None = None,
        lock_keep_alive_ms: int = 500,
        gc_flags: Sequence[str] = ("-XX:+UseG1GC",),
    ) -> None:
        if store not in STORES:
            raise ValueError(f"store must be one of {STORES}, not {store!r}")
        if store == "jdbc-lease" and set(jdbc_urls or {}) != set(names):
            raise ValueError(f"store jdbc-lease needs jdbc_urls for {list(names)} (each broker's path to PostgreSQL)")
        if len(names) != 2 or len(set(names)) != 2:
            raise ValueError("names must be two distinct broker names")
        if len(jolokia_ports) != 2 or len(openwire_ports) != 2:
            raise ValueError("need two jolokia ports and two openwire ports")
        if (jolokia_user is None) != (jolokia_password is None):
            raise ValueError("jolokia_user and jolokia_password go together")
        self.workdir = Path(workdir).resolve()
        self.names: tuple[str, str] = (names[0], names[1])
        self.lock_acquire_sleep_ms = int(lock_acquire_sleep_ms)
        self.heap = heap
        self.jolokia_user = jolokia_user
        self.jolokia_password = jolokia_password
        self.java = java or java_tool("java")
        self.extra_jvm_args = tuple(extra_jvm_args)
        self.stop_grace = stop_grace
        self.kahadb_dir = self.workdir / "shared" / "kahadb"
        self.store: Store = store
        self.jdbc_urls = dict(jdbc_urls or {})
        self.lock_keep_alive_ms = int(lock_keep_alive_ms)
        self.gc_flags = tuple(gc_flags)
        self._jolokia_ports = dict(zip(self.names, (int(p) for p in jolokia_ports)))
        self._openwire_ports = {n: (int(p) or free_port()) for n, p in zip(self.names, openwire_ports)}
        self._stomp_ports = {n: (int(p) or free_port()) for n, p in zip(self.names, stomp_ports)}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._brokers: dict[str, BrokerProcess] = {}
        self._atexit_registered = False

    # ---------------------------------------------------------------- properties

    @property
    def brokers(self) -> dict[str, BrokerProcess]:
        """Last process of every broker started by this object (also killed ones) until ``stop()``.

        Use :meth:`is_running` / :meth:`role` for liveness; URLs stay valid for polling a dead broker.
        """
        return dict(self._brokers)

    def is_running(self, name: str) -> bool:
        """True while the broker's JVM (started by this object) exists and is not a zombie."""
        return self._alive(name)

    @property
    def failover_url(self) -> str:
        a, b = (f"tcp://127.0.0.1:{self._openwire_ports[n]}" for n in self.names)
        return f"failover:({a},{b})?randomize=false"

    @property
    def pids_file(self) -> Path:
        return self.workdir / "pids.json"

    def jolokia_url(self, name: str) -> str:
        b = self._brokers.get(name)
        if b is None:
            raise KeyError(f"{name} was never started")
        return b.jolokia_url

    def jolokia_auth(self) -> dict[str, str]:
        """kwargs (user/password) for :func:`jolokia_request` when the lab uses Basic auth."""
        if self.jolokia_user is None:
            return {}
        return {"user": self.jolokia_user, "password": self.jolokia_password or ""}

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> "ActiveMQPair":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def second_role(self) -> Role:
        """What the second broker becomes: slave on a shared store, master on a store of its own."""
        return "master" if self.store == "separate-kahadb" else "slave"

    def store_dir(self, name: str) -> Path:
        """The KahaDB directory of ``name`` (the shared one unless each broker has its own)."""
        return self.workdir / name / "kahadb" if self.store == "separate-kahadb" else self.kahadb_dir

    def start(self, timeout: float = 60) -> None:
        """Start the first broker, wait until master; start the second, wait for :attr:`second_role`."""
        first, second = self.names
        deadline = time.monotonic() + timeout
        try:
            self.start_broker(first, timeout=timeout)
            self.wait_for_role(first, "master", max(1.0, deadline - time.monotonic()))
            self.start_broker(second, timeout=max(1.0, deadline - time.monotonic()))
            self.wait_for_role(second, self.second_role, max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise

    def start_broker(self, name: str, timeout: float = 60) -> BrokerProcess:
        """(Re)start one broker JVM and wait until its agent answers with a role (master or slave)."""
        if name not in self.names:
            raise KeyError(f"unknown broker {name!r}; names are {self.names}")
        if self._alive(name):
            return self._brokers[name]
        rec = self._read_pids().get(name)
        if rec and is_our_java(int(rec["pid"]), self.workdir, name):
            raise LabError(
                f"broker {name} of {self.workdir} is already running as pid {rec['pid']} (started by another "
                f"process); stop it first: python -m infra.lab stop --workdir {self.workdir}"
            )
        self._register_atexit()
        jar = build_agent()
        bdir = self.workdir / name
        conf = bdir / "conf"
        data = bdir / "data"
        for d in (conf, data):
            d.mkdir(parents=True, exist_ok=True)
        port_file = bdir / "jolokia.port"
        port_file.unlink(missing_ok=True)
        log = bdir / "broker.log"
        activemq_log = bdir / "activemq.log"
        gc_log = bdir / "gc.log"
        openwire_port = self._openwire_ports[name]

        (conf / "activemq.xml").write_text(
            _render(
                "activemq.xml",
                {
                    "BROKER_NAME": name,
                    "DATA_DIR": str(data),
                    "OPENWIRE_PORT": str(openwire_port),
                    "STOMP_PORT": str(self._stomp_ports[name]),
                },
                raw=self._store_fragments(name),
            )
        )
        (conf / "log4j.xml").write_text(
            _render("log4j.xml", {"ACTIVEMQ_LOG": str(activemq_log), "LOCKER_LOG_LEVEL": "INFO"})
        )
        agent_opts: dict[str, Any] = {}
        if self.jolokia_user is not None:
            pw_file = self.workdir / "jolokia.password"
            fd = os.open(pw_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write((self.jolokia_password or "") + "\n")
            agent_opts = {"user": self.jolokia_user, "password_file": pw_file}
        agent_arg = agent_jvm_arg(
            jar, port=self._jolokia_ports[name], port_file=port_file, **agent_opts
        )
        cmd = [
            self.java,
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *self.gc_flags,
            f"-Xlog:gc*,safepoint:file={gc_log}:time,uptime,level,tags:filecount=5,filesize=10m",
            "-Duser.timezone=UTC",
            "-Dsun.net.httpserver.nodelay=true",
            "-Djava.awt.headless=true",
            *marker_args(self.workdir, name),
            agent_arg,
            f"-Dlog4j.configuration=file:{conf / 'log4j.xml'}",
            f"-Dactivemq.home={ACTIVEMQ_HOME}",
            f"-Dactivemq.base={bdir}",
            f"-Dactivemq.conf={conf}",
            f"-Dactivemq.data={data}",
            f"-Dactivemq.classpath={conf}",
            *_ACTIVEMQ_JDK17_FLAGS,
            *self.extra_jvm_args,
            "-jar",
            str(ACTIVEMQ_HOME / "bin" / "activemq.jar"),
            "start",
            f"xbean:file:{conf / 'activemq.xml'}",
        ]
        with open(log, "ab") as out:
            out.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} lab start "
                      f"{name}: {' '.join(cmd)}\n".encode())
            out.flush()
            started_at = time.time()
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=bdir, start_new_session=True, close_fds=True,
            )
        self._procs[name] = proc
        broker = BrokerProcess(
            name=name, pid=proc.pid, jolokia_url="", openwire_url=f"tcp://127.0.0.1:{openwire_port}",
            gc_log=gc_log, log=log, workdir=bdir, activemq_log=activemq_log,
            jolokia_port=0, openwire_port=openwire_port, started_at=started_at,
            stomp_url=f"stomp://127.0.0.1:{self._stomp_ports[name]}",
        )
        self._brokers[name] = broker
        self._write_pids()
        try:
            port = self._wait_port_file(name, port_file, timeout)
            broker.jolokia_port = port
            broker.jolokia_url = f"http://127.0.0.1:{port}/jolokia"
            self._jolokia_ports[name] = port  # keep the same port across restarts
            self._write_pids()
            remaining = max(1.0, timeout - (time.time() - started_at))
            self._wait_until(name, lambda r: r != "down", remaining, "to register its Broker MBean")
        except BaseException:
            self._terminate(name, sig=signal.SIGKILL, grace=5)
            raise
        return broker

    def stop(self) -> None:
        """SIGTERM the brokers started by this object (by verified PID), SIGKILL after ``stop_grace`` s.

        Idempotent. Brokers recorded by another process are left alone (see :func:`stop_recorded`).
        """
        names = set(self._brokers)
        pending: dict[str, int] = {}
        for name in names:
            pid = self._pid_of(name)
            if pid is not None and self._verify(name, pid):
                signal_pid(pid, signal.SIGTERM)
                signal_pid(pid, signal.SIGCONT)  # a SIGSTOPped JVM must run to handle SIGTERM
                pending[name] = pid
        deadline = time.monotonic() + self.stop_grace
        while pending and time.monotonic() < deadline:
            for name, pid in list(pending.items()):
                if not self._reap_check(name, pid):
                    pending.pop(name)
            time.sleep(0.05)
        for name, pid in pending.items():
            if self._verify(name, pid):
                signal_pid(pid, signal.SIGKILL)
        for name, pid in pending.items():
            self._wait_gone(name, pid, 10)
        for proc in self._procs.values():
            proc.poll()  # reap children that had already exited (no zombies left behind)
        self._procs.clear()
        self._brokers.clear()
        if names:
            with contextlib.suppress(OSError):
                self.pids_file.unlink()
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def detach(self) -> None:
        """Forget the running brokers without stopping them (CLI ``start``); ``pids.json`` stays."""
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False
        self._procs.clear()

    # ---------------------------------------------------------------- faults

    def kill(self, name: str, sig: int = signal.SIGKILL, wait: bool | None = None) -> int:
        """Send ``sig`` to the broker's JVM; returns its pid. Waits for exit for SIGKILL by default."""
        pid = self._require_pid(name)
        if sig == signal.SIGTERM:
            signal_pid(pid, signal.SIGCONT)
        os.kill(pid, sig)
        if wait if wait is not None else sig == signal.SIGKILL:
            self._wait_gone(name, pid, 30)
            self._write_pids()
        return pid

    def pause(self, name: str) -> int:
        """SIGSTOP the broker JVM (it keeps its file lock and sockets, but answers nothing)."""
        return self.kill(name, signal.SIGSTOP, wait=False)

    def resume(self, name: str) -> int:
        """SIGCONT a paused broker JVM."""
        return self.kill(name, signal.SIGCONT, wait=False)

    # ---------------------------------------------------------------- roles

    def role(self, name: str, timeout: float = 2.0) -> Role:
        """'master' / 'slave' from the Jolokia read of ``Slave``; 'down' if the JVM, agent or MBean is absent."""
        b = self._brokers.get(name)
        if b is None or not b.jolokia_url or not self._alive(name):
            return "down"
        if proc_state(b.pid) == "T":  # stopped (SIGSTOP): would only time out
            return "down"
        try:
            status, body = jolokia_request(
                b.jolokia_url,
                {"type": "read", "mbean": BROKER_MBEAN_PATTERN, "attribute": "Slave"},
                timeout=timeout,
                **self.jolokia_auth(),
            )
        except (OSError, ValueError):
            return "down"
        if status != 200 or not isinstance(body, dict) or body.get("status") != 200:
            return "down"
        values = [v.get("Slave") for v in (body.get("value") or {}).values() if isinstance(v, dict)]
        if not values or any(v is None for v in values):
            return "down"
        return "slave" if all(values) else "master"

    def roles(self) -> dict[str, Role]:
        """``{name: role(name)}`` for both brokers."""
        return {n: self.role(n) for n in self.names}

    def master(self) -> str | None:
        """The single broker reporting ``Slave=false``; None if none (or, split brain, both) do."""
        masters = [n for n in self.names if self.role(n) == "master"]
        return masters[0] if len(masters) == 1 else None

    def wait_for_role(self, name: str, role: Role, timeout: float = 30) -> float:
        """Poll (every 50 ms) until ``role(name) == role``; returns ``time.time()`` when first seen."""
        return self._wait_until(name, lambda r: r == role, timeout, f"to become {role}")

    # ---------------------------------------------------------------- internals

    def _store_fragments(self, name: str) -> dict[str, str]:
        """The persistence adapter (and beans) of ``name``'s activemq.xml, rendered; prepares its store."""
        if self.store == "jdbc-lease":
            self._link_jdbc_driver(name)
            values = {"BROKER_NAME": name, "LOCK_ACQUIRE_SLEEP_MS": str(self.lock_acquire_sleep_ms),
                      "LOCK_KEEP_ALIVE_MS": str(self.lock_keep_alive_ms), "JDBC_URL": self.jdbc_urls[name],
                      "JDBC_CONNECT_TIMEOUT_S": "60"}
            return {"PERSISTENCE_ADAPTER": _render("persistence-jdbc-lease.xml", values),
                    "EXTRA_BEANS": _render("beans-jdbc-lease.xml", values)}
        kahadb = self.store_dir(name)
        kahadb.mkdir(parents=True, exist_ok=True)
        values = {"KAHADB_DIR": str(kahadb), "LOCK_ACQUIRE_SLEEP_MS": str(self.lock_acquire_sleep_ms)}
        return {"PERSISTENCE_ADAPTER": _render("persistence-kahadb.xml", values), "EXTRA_BEANS": ""}

    def _link_jdbc_driver(self, name: str) -> None:
        """ActiveMQ's launcher adds ``<activemq.base>/lib/*.jar`` to the broker's class path."""
        if not POSTGRESQL_JAR.exists():
            raise LabError(f"PostgreSQL JDBC driver {POSTGRESQL_JAR} missing: apt-get install "
                           "libpostgresql-jdbc-java (or set BROKERSCOPE_PG_JDBC_JAR)")
        lib = self.workdir / name / "lib"
        lib.mkdir(parents=True, exist_ok=True)
        link = lib / POSTGRESQL_JAR.name
        if not link.exists():
            link.symlink_to(POSTGRESQL_JAR)

    def _wait_until(self, name: str, pred: Any, timeout: float, what: str) -> float:
        deadline = time.monotonic() + timeout
        last: Role = "down"
        while True:
            last = self.role(name, timeout=min(2.0, max(0.2, deadline - time.monotonic())))
            if pred(last):
                return time.time()
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None and not pred("down"):
                raise LabError(
                    f"broker {name} exited with code {proc.returncode} while waiting {what}.\n"
                    f"--- tail of {self.workdir / name / 'broker.log'} ---\n"
                    f"{tail(self.workdir / name / 'broker.log')}"
                )
            if time.monotonic() >= deadline:
                raise LabError(
                    f"timeout after {timeout:.1f}s waiting for {name} {what} (last role: {last}).\n"
                    f"--- tail of {self.workdir / name / 'broker.log'} ---\n"
                    f"{tail(self.workdir / name / 'broker.log')}"
                )
            time.sleep(0.05)

    def _wait_port_file(self, name: str, port_file: Path, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        proc = self._procs[name]
        log = self.workdir / name / "broker.log"
        next_log_check = time.monotonic() + 0.25
        while time.monotonic() < deadline:
            try:
                text = port_file.read_text().strip()
                if text:
                    return int(text)
            except (OSError, ValueError):
                pass
            if time.monotonic() >= next_log_check:
                next_log_check = time.monotonic() + 0.25
                recent = tail(log, 200)
                if "[brokerscope-jolokia] agent failed to start" in recent.rsplit("==== ", 1)[-1]:
                    raise LabError(
                        f"Jolokia agent of {name} failed to start.\n--- tail of {log} ---\n{tail(log)}"
                    )
            if proc.poll() is not None:
                raise LabError(
                    f"broker {name} exited with code {proc.returncode} before its Jolokia agent listened.\n"
                    f"--- tail of {self.workdir / name / 'broker.log'} ---\n"
                    f"{tail(self.workdir / name / 'broker.log')}"
                )
            time.sleep(0.02)
        raise LabError(
            f"timeout after {timeout:.1f}s waiting for the Jolokia agent of {name} ({port_file}).\n"
            f"--- tail of {self.workdir / name / 'broker.log'} ---\n{tail(self.workdir / name / 'broker.log')}"
        )

    def _register_atexit(self) -> None:
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True

    def _pid_of(self, name: str) -> int | None:
        b = self._brokers.get(name)
        return b.pid if b is not None else None

    def _verify(self, name: str, pid: int) -> bool:
        return is_our_java(pid, self.workdir, name)

    def _alive(self, name: str) -> bool:
        b = self._brokers.get(name)
        if b is None:
            return False
        proc = self._procs.get(name)
        if proc is not None and proc.pid == b.pid:
            return proc.poll() is None
        return self._verify(name, b.pid)

    def _require_pid(self, name: str) -> int:
        pid = self._pid_of(name)
        if pid is None or not self._verify(name, pid):
            raise LabError(f"broker {name} is not running")
        return pid

    def _reap_check(self, name: str, pid: int) -> bool:
        """Reap if it is our child; True while the process still exists."""
        proc = self._procs.get(name)
        if proc is not None and proc.pid == pid:
            return proc.poll() is None
        return self._verify(name, pid)

    def _wait_gone(self, name: str, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._reap_check(name, pid):
            if time.monotonic() >= deadline:
                raise LabError(f"broker {name} (pid {pid}) did not exit")
            time.sleep(0.02)

    def _terminate(self, name: str, sig: int, grace: float) -> None:
        pid = self._pid_of(name)
        if pid is None or not self._verify(name, pid):
            return
        signal_pid(pid, sig)
        with contextlib.suppress(LabError):
            self._wait_gone(name, pid, grace)
        if self._verify(name, pid):
            signal_pid(pid, signal.SIGKILL)
            self._wait_gone(name, pid, 10)

    def _read_pids(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.pids_file.read_text())
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in data.get("brokers", {}).items() if isinstance(v, dict)}

    def _write_pids(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        brokers = {n: b.to_json() for n, b in self._brokers.items() if self._alive(n)}
        tmp = self.pids_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"workdir": str(self.workdir), "brokers": brokers}, indent=2))
        os.replace(tmp, self.pids_file)


def stop_recorded(workdir: Path, grace: float = 15.0, key: str = "brokers") -> list[int]:
    """Stop the processes a lab recorded under `key` in ``<workdir>/pids.json`` (each verified via
    /proc/<pid>/cmdline): SIGTERM (after SIGCONT: a stopped JVM must run to handle it), SIGKILL
    after `grace`. For a lab started by another process (CLI). Returns the pids that were signalled.
    """
    workdir = Path(workdir).resolve()
    pids_file = workdir / "pids.json"
    try:
        recs = json.loads(pids_file.read_text()).get(key, {})
    except (OSError, ValueError):
        recs = {}
    targets = {
        name: int(rec["pid"])
        for name, rec in recs.items()
        if is_our_java(int(rec["pid"]), workdir, name)
    }
    for pid in targets.values():
        signal_pid(pid, signal.SIGTERM)
        signal_pid(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(is_our_java(p, workdir, n) for n, p in targets.items()):
        time.sleep(0.05)
    for name, pid in targets.items():
        if is_our_java(pid, workdir, name):
            signal_pid(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        pids_file.unlink()
    return list(targets.values())


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _drill(workdir: Path) -> dict[str, Any]:
    """Start a pair, SIGKILL the master, restart it; return timings (seconds)."""
    out: dict[str, Any] = {}
    pair = ActiveMQPair(workdir)
    a, b = pair.names
    try:
        t0 = time.time()
        pair.start_broker(a)
        out["a_master_after_exec_s"] = round(pair.wait_for_role(a, "master", 60) - t0, 3)
        t1 = time.time()
        pair.start_broker(b)
        out["b_slave_after_exec_s"] = round(pair.wait_for_role(b, "slave", 60) - t1, 3)
        t2 = time.time()
        pair.kill(a)
        out["b_master_after_sigkill_a_s"] = round(pair.wait_for_role(b, "master", 60) - t2, 3)
        t3 = time.time()
        pair.start_broker(a)
        out["a_slave_after_restart_s"] = round(pair.wait_for_role(a, "slave", 60) - t3, 3)
        t4 = time.time()
        pair.stop()
        out["stop_s"] = round(time.time() - t4, 3)
    finally:
        pair.stop()
    return out


def _status_line(name: str, rec: dict, workdir: Path, args) -> str:
    pid, role = int(rec["pid"]), "down"
    if is_our_java(pid, workdir, name) and rec.get("jolokia_url"):
        try:
            _, body = jolokia_request(
                rec["jolokia_url"],
                {"type": "read", "mbean": BROKER_MBEAN_PATTERN, "attribute": "Slave"},
                user=args.jolokia_user, password=args.jolokia_password,
            )
            vals = [v.get("Slave") for v in (body.get("value") or {}).values()]
            role = "slave" if vals and all(vals) else ("master" if vals else "down")
        except (OSError, AttributeError, ValueError):
            role = "down"
    return f"{name}\tpid={pid}\trole={role}\tjolokia={rec.get('jolokia_url')}\topenwire={rec.get('openwire_url')}"


def _start(args, workdir: Path) -> None:
    pair = ActiveMQPair(
        workdir, lock_acquire_sleep_ms=args.lock_acquire_sleep_ms,
        jolokia_user=args.jolokia_user, jolokia_password=args.jolokia_password,
    )
    pair.start()
    pair.detach()
    for name, b in pair.brokers.items():
        print(f"{name}\tpid={b.pid}\tjolokia={b.jolokia_url}\topenwire={b.openwire_url}\tlog={b.log}")
    print(f"failover url: {pair.failover_url}")


def _arguments(ap) -> None:
    ap.add_argument("--lock-acquire-sleep-ms", type=int, default=500)
    ap.add_argument("--jolokia-user")
    ap.add_argument("--jolokia-password")


def _build_agent(args, ap) -> int:
    print(build_agent(force=True))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(LabCli(prog="python -m infra.lab", description=__doc__.split("\n")[0], workdir=Path(".lab/activemq"),
                      recorded="brokers", start=_start, drill=_drill, status_line=_status_line,
                      stop=stop_recorded, add_arguments=_arguments, extra={"build-agent": _build_agent}), argv)


if __name__ == "__main__":
    sys.exit(main())
