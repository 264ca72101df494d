"""Real ActiveMQ Classic master/slave lab on loopback (Debian ``activemq`` 5.17 package).

Two broker JVMs share one KahaDB directory guarded by the shared-file-locker, so exactly one of them is
master. Each JVM runs the official Jolokia 2.6.0 JVM agent, read-only (``infra/jvm_agents.py``), on its
own port, writes unified GC logs and its own logs under ``<workdir>/<name>/``.

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
    <name>/conf/jolokia-access.xml, jolokia-agent.properties   the agent's policy and options (0600:
                              the password when the lab uses Basic auth; see infra/jvm_agents.py)
    <name>/broker.log         JVM stdout+stderr (log4j console output, the agent's "started with URL" line)
    <name>/activemq.log       log4j file appender (upstream layout)
    <name>/gc.log             -Xlog:gc*,safepoint (rotated: gc.log.0 ... on restart)
    <name>/data/              broker dataDirectory (tmp_storage etc.)

CLI: ``python -m infra.lab start|stop|status|drill --workdir DIR`` (default ``.lab/activemq``).
``drill`` starts a pair, SIGKILLs the master, restarts it and prints the timings.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence
from urllib.parse import urlsplit
from xml.sax.saxutils import escape as _xml_escape

from infra.jvm_agents import ballast_jvm_arg, build_ballast, jolokia_jvm_args, wait_for_agent_url
from infra.lab_cli import LabCli, run
from infra.lab_clients import jolokia_request, stomp_send
from infra.processes import (  # LabError, free_port, java_tool, stop_recorded: also imported from here
    LabError,
    LabProcesses,
    free_port,
    is_our_java,
    java_tool,
    marker_args,
    only_one,
    proc_state,
    stop_recorded,
)

__all__ = [
    "ACTIVEMQ_HOME",
    "ActiveMQPair",
    "BrokerProcess",
    "LabError",
    "Role",
    "ballast_jvm_arg",
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
TEMPLATE_DIR = Path(__file__).resolve().parent / "activemq"

BROKER_MBEAN_PATTERN = "org.apache.activemq:type=Broker,brokerName=*"
AGENT_THREADS = 4

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


# --------------------------------------------------------------------------------------------------
# The pair
# --------------------------------------------------------------------------------------------------


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


class ActiveMQPair(LabProcesses):
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
        self._brokers: dict[str, BrokerProcess] = {}
        self._init_processes(self._brokers, forget_on_stop=True)

    # ---------------------------------------------------------------- properties

    @property
    def brokers(self) -> dict[str, BrokerProcess]:
        """Last process of every broker started by this object (also killed ones) until ``stop()``.

        Use :meth:`is_running` / :meth:`role` for liveness; URLs stay valid for polling a dead broker.
        """
        return dict(self._brokers)

    @property
    def failover_url(self) -> str:
        a, b = (f"tcp://127.0.0.1:{self._openwire_ports[n]}" for n in self.names)
        return f"failover:({a},{b})?randomize=false"

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
        self._refuse_foreign(name)
        bdir = self.workdir / name
        conf = bdir / "conf"
        data = bdir / "data"
        for d in (conf, data):
            d.mkdir(parents=True, exist_ok=True)
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
        # threads: the drills' 20 Hz role probes, the lab's role polls and the collector each get one, as
        # with the lab's agent before; on the agent's single thread a scrape queues behind a probe and
        # its send-time stamp runs ahead of what it read
        agent_args = jolokia_jvm_args(conf, port=self._jolokia_ports[name], user=self.jolokia_user,
                                      password=self.jolokia_password, threads=AGENT_THREADS)
        cmd = [
            self.java,
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *self.gc_flags,
            f"-Xlog:gc*,safepoint:file={gc_log}:time,uptime,level,tags:filecount=5,filesize=10m",
            "-Duser.timezone=UTC",
            "-Djava.awt.headless=true",
            *marker_args(self.workdir, name),
            *agent_args,
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
        log_start = log.stat().st_size if log.exists() else 0  # this JVM's lines follow
        proc, started_at = self._launch(name, cmd, log, bdir, banner=f": {' '.join(cmd)}")
        broker = BrokerProcess(
            name=name, pid=proc.pid, jolokia_url="", openwire_url=f"tcp://127.0.0.1:{openwire_port}",
            gc_log=gc_log, log=log, workdir=bdir, activemq_log=activemq_log,
            jolokia_port=0, openwire_port=openwire_port, started_at=started_at,
            stomp_url=f"stomp://127.0.0.1:{self._stomp_ports[name]}",
        )
        self._brokers[name] = broker
        self._write_pids()
        try:
            broker.jolokia_url = wait_for_agent_url(log, proc.pid, timeout, since=log_start, exited=proc,
                                                    what=f"broker {name}")
            broker.jolokia_port = urlsplit(broker.jolokia_url).port or 0
            self._jolokia_ports[name] = broker.jolokia_port  # the same port after a restart
            self._write_pids()
            remaining = max(1.0, timeout - (time.time() - started_at))
            self._wait_until(name, lambda r: r != "down", remaining, "to register its Broker MBean")
        except BaseException:
            self._terminate(name, sig=signal.SIGKILL, grace=5)
            raise
        return broker

    # ---------------------------------------------------------------- faults

    def kill(self, name: str, sig: int = signal.SIGKILL, wait: bool | None = None) -> int:
        """Send ``sig`` to the broker's JVM; returns its pid. Waits for exit for SIGKILL by default."""
        return self._send(name, sig, wait if wait is not None else sig == signal.SIGKILL)[0]

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
        return only_one(self.names, self.role, "master")

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
        return self._wait_state(name, lambda left: self.role(name, timeout=min(2.0, max(0.2, left))), pred, timeout,
                                what, log=self.workdir / name / "broker.log", every=0.05)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _drill(pair: ActiveMQPair, out: dict[str, Any]) -> None:
    """Start a pair, SIGKILL the master, restart it; timings (seconds) into ``out``."""
    a, b = pair.names
    for key, act, target, watch, role in (("a_master_after_exec_s", pair.start_broker, a, a, "master"),
                                          ("b_slave_after_exec_s", pair.start_broker, b, b, "slave"),
                                          ("b_master_after_sigkill_a_s", pair.kill, a, b, "master"),
                                          ("a_slave_after_restart_s", pair.start_broker, a, a, "slave")):
        t = time.time()
        act(target)
        out[key] = round(pair.wait_for_role(watch, role, 60) - t, 3)
    t4 = time.time()
    pair.stop()
    out["stop_s"] = round(time.time() - t4, 3)


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


def _make(args, workdir: Path) -> ActiveMQPair:
    return ActiveMQPair(workdir, lock_acquire_sleep_ms=args.lock_acquire_sleep_ms,
                        jolokia_user=args.jolokia_user, jolokia_password=args.jolokia_password)


def _report(pair: ActiveMQPair, _: None) -> Iterator[str]:
    for name, b in pair.brokers.items():
        yield f"{name}\tpid={b.pid}\tjolokia={b.jolokia_url}\topenwire={b.openwire_url}\tlog={b.log}"
    yield f"failover url: {pair.failover_url}"


def _arguments(ap) -> None:
    ap.add_argument("--lock-acquire-sleep-ms", type=int, default=500)
    ap.add_argument("--jolokia-user")
    ap.add_argument("--jolokia-password")


def main(argv: Sequence[str] | None = None) -> int:
    return run(LabCli(prog="python -m infra.lab", description=__doc__.split("\n")[0], workdir=Path(".lab/activemq"),
                      recorded="brokers", make=_make, report=_report, drill=_drill, status_line=_status_line,
                      stop=stop_recorded, add_arguments=_arguments), argv)


if __name__ == "__main__":
    sys.exit(main())
