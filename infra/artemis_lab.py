"""Real Apache ActiveMQ Artemis 2.40.0 primary/backup pair on loopback (the distribution that
``python -m infra.artifacts`` fetched from Maven Central).

    from infra.artemis_lab import ArtemisPair
    with ArtemisPair(Path("/tmp/art")) as pair:        # start(): art-a active, art-b passive backup
        pair.kill("art-a")                               # SIGKILL
        pair.wait_for_role("art-b", "active", 30)

Topologies: ``shared-store`` (one journal folder ``<workdir>/shared``, the file lock decides) and
``replication-zk`` (each broker its own journal, replication over the cluster connection, the
ZooKeeper lock manager ``CuratorDistributedLockManager`` on ``zk_connect``, e.g. an
``infra.zk_lab.ZkEnsemble``) or ``replication`` (classic: no lock manager, Artemis' default quorum
vote). With ``replication_proxy`` the brokers reach each other only through an
``infra.tcp_proxy.TcpProxy`` in front of each one's acceptor (``pair.links``): the static cluster
connectors and the connectors they announce in the topology — the one a backup dials for
replication — point at the proxies; ``cut_link()`` is a silent partition between the two (clients
and consoles still reach both), ``heal_link()`` ends it. Failback switches: ``allow_failback`` (backup steps aside when the primary returns; Artemis's default true),
``check_for_active`` (replication primary), ``failover_on_shutdown``.

Each broker is an instance made by ``artemis create`` (infra.artemis.instance) with its web console
bound to 127.0.0.1 and the console's Jolokia at ``/console/jolokia`` as shipped: HTTP Basic against
the JAAS realm, ``jolokia-access.xml`` strict Origin checking (``*://127.0.0.1*``). The lab adds a
read-only monitoring user (``monitor_user``/``monitor_password``, its password also in
``<workdir>/monitor.password`` for a target's ``password_file``) and an admin user for its own
STOMP sends. Ports (acceptor, http) are free ports fixed at construction, kept across restarts.

Layout of ``<workdir>``::

    pids.json                   pids and endpoints (infra.lab.stop_recorded reads the same format)
    monitor.password            the monitoring user's password (0600)
    shared/                     the shared journal, bindings, paging, large-messages (shared-store)
    <name>/instance/            the `artemis create` instance (etc/, data/ for replication, log/)
    <name>/instance/log/artemis.log   the broker's own log (UTC timestamps)
    <name>/console.log          JVM stdout+stderr
    <name>/gc.log               -Xlog:gc*

Processes are started as ``<instance>/bin/artemis run`` (it execs java, so the pid is the JVM's)
with the lab's marker properties, and stopped by pid after checking ``/proc/<pid>/cmdline``.

CLI: ``python -m infra.artemis_lab start|stop|status|drill --workdir DIR`` (default ``.lab/artemis``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

from infra.artemis.instance import ADMIN_USER, MONITOR_USER, HaSpec, InstanceSpec, create
from infra.artifacts import artemis_home
from infra.jvm_agents import ballast_jvm_arg
from infra.lab_cli import LabCli, run
from infra.lab_clients import _stomp_read, _stomp_write, jolokia_request
from infra.lab_logs import matching_lines
from infra.tcp_proxy import TcpProxy
from infra.processes import (
    LabError,
    LabProcesses,
    free_port,
    is_our_java,
    marker_args,
    only_one,
    proc_state,
    stop_recorded,
)

__all__ = ["ArtemisPair", "ArtemisBroker", "Role", "TOPOLOGIES", "console_read", "log_times", "stomp_send", "stop_recorded"]

Role = Literal["active", "backup", "starting", "down"]
TOPOLOGIES = ("shared-store", "replication-zk", "replication")
CONSOLE_JOLOKIA = "/console/jolokia"
BROKER_MBEAN = "org.apache.activemq.artemis:broker=*"
#: log codes that say a broker is serving (AMQ221001 start as primary, AMQ221007 "Server is now
#: active", AMQ221010 "Backup Server is now active") or waiting as backup (AMQ221109 shared store,
#: AMQ221024 replica synchronized, AMQ221031 backup announced)
ACTIVE_CODES = ("AMQ221001", "AMQ221007", "AMQ221010")
BACKUP_CODES = ("AMQ221109", "AMQ221024", "AMQ221031")
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) +\w+ +\[[^\]]*\] (?P<msg>.*)$")


@dataclass
class ArtemisBroker:
    """One broker JVM of the lab (its last start)."""

    name: str
    pid: int
    jolokia_url: str  # http://127.0.0.1:<http_port>/console/jolokia
    acceptor_port: int
    http_port: int
    instance: Path
    log: Path  # the broker's artemis.log
    console_log: Path  # JVM stdout+stderr
    gc_log: Path
    started_at: float

    @property
    def stomp_url(self) -> str:  # the one acceptor speaks every protocol (CORE, STOMP, OpenWire …)
        return f"stomp://127.0.0.1:{self.acceptor_port}"

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


def console_read(url: str, user: str, password: str, origin: str, mbean: str = BROKER_MBEAN,
                 attributes: Sequence[str] = ("Active", "Backup"), timeout: float = 2.0) -> dict:
    """One read through the console's Jolokia (bulk POST, with the Origin its strict check wants);
    the response item. Raises OSError when nothing answers, LabError for an HTTP-level refusal."""
    status, body = jolokia_request(url, [{"type": "read", "mbean": mbean, "attribute": list(attributes)}],
                                   user=user, password=password, timeout=timeout, headers={"Origin": origin})
    if status != 200 or not isinstance(body, list) or not body:
        raise LabError(f"{url}: HTTP {status}: {str(body)[:200]}")
    return body[0]


def broker_values(item: dict) -> dict | None:
    """The attributes of the one broker a wildcard broker-MBean read answered; None for an error
    (500 "not started", 404) or not exactly one broker."""
    if item.get("status") != 200:
        return None
    values = [v for v in (item.get("value") or {}).values() if isinstance(v, dict)]
    return values[0] if len(values) == 1 else None


def role_of(item: dict) -> Role:
    """active | backup | starting from one broker-MBean read (500 "not started" and 404 = starting)."""
    values = broker_values(item)
    if values is None:
        return "starting"
    active, backup = values.get("Active"), values.get("Backup")
    if active is True:
        return "active"
    return "backup" if backup is True else "starting"


def log_times(log: Path, pattern: str, since: float = 0.0) -> list[tuple[float, str]]:
    """(epoch, message) of the broker-log lines matching ``pattern`` at or after ``since``."""
    return matching_lines(log, _LOG_LINE, pattern, since)


def first_log_times(pair: ArtemisPair, lines: dict[str, tuple[str, str]], since: float) -> dict[str, float | None]:
    """{what: epoch of the first line of broker `name` matching `pattern` at or after `since`, None when
    absent} for lines = {what: (name, pattern)}."""
    out: dict[str, float | None] = {}
    for what, (name, pattern) in lines.items():
        found = log_times(pair.broker_log(name), pattern, since)
        out[what] = found[0][0] if found else None
    return out


def stomp_send(url: str, destination: str, bodies, *, login: str, passcode: str, timeout: float = 5.0) -> int:
    """Persistent text messages to an anycast ``destination`` over STOMP 1.2 with a login (the lab's
    brokers require one); each SEND waits for its RECEIPT. Returns the number sent."""
    host, port = url.removeprefix("stomp://").rsplit(":", 1)
    sent, buf = 0, bytearray()
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        _stomp_write(sock, "CONNECT", {"accept-version": "1.2", "host": "localhost", "heart-beat": "0,0",
                                       "login": login, "passcode": passcode})
        cmd, hdrs, body = _stomp_read(sock, buf)
        if cmd != "CONNECTED":
            raise LabError(f"STOMP CONNECT to {url} failed: {cmd} {hdrs.get('message', '')} {body[:200]!r}")
        for text in bodies:
            data = text.encode()
            _stomp_write(sock, "SEND", {"destination": destination, "destination-type": "ANYCAST",
                                        "persistent": "true", "content-length": str(len(data)),
                                        "receipt": f"m{sent}"}, data)
            cmd, hdrs, body = _stomp_read(sock, buf)
            if cmd != "RECEIPT":
                raise LabError(f"STOMP SEND to {url} failed: {cmd} {hdrs.get('message', '')} {body[:200]!r}")
            sent += 1
        _stomp_write(sock, "DISCONNECT", {})
    return sent


class ArtemisPair(LabProcesses):
    """A real Artemis primary/backup pair (two JVMs) on 127.0.0.1; see the module doc.

    ``start()`` launches the primary (first name), waits until it is active and has logged
    AMQ221001, then the backup until it reports ``Backup=true`` and has logged that it waits
    (AMQ221109 shared store; AMQ221024 synchronized, replication).
    """

    cli = "infra.artemis_lab"

    def __init__(
        self,
        workdir: Path,
        topology: str = "shared-store",
        names: Sequence[str] = ("art-a", "art-b"),
        *,
        heap: str = "256m",
        allow_failback: bool = True,
        check_for_active: bool = False,
        failover_on_shutdown: bool = False,
        ha_overrides: Mapping[str, Mapping[str, Any]] | None = None,  # broker → HaSpec fields for it alone
        zk_connect: str | None = None,
        zk_session_ms: int = 18000,
        stop_grace: float = 20.0,
        replication_proxy: bool = False,
        ballast_mb: Mapping[str, int] | None = None,  # broker → a live set of N MiB, serial collector (GC pauses)
        cluster_password: str | None = None,  # shared by every pair of one cluster (infra.artemis_cluster)
    ) -> None:
        if topology not in TOPOLOGIES:
            raise ValueError(f"topology must be one of {TOPOLOGIES}, not {topology!r}")
        if topology == "replication-zk" and not zk_connect:
            raise ValueError("replication-zk needs zk_connect (e.g. infra.zk_lab.ZkEnsemble(...).connect_string)")
        if len(names) != 2 or len(set(names)) != 2:
            raise ValueError("names must be two distinct broker names (primary first)")
        self.workdir = Path(workdir).resolve()
        self.topology = topology
        self.names: tuple[str, str] = (names[0], names[1])
        self.heap = heap
        self.stop_grace = stop_grace
        self.ballast_mb = dict(ballast_mb or {})
        # ha_overrides: a pair whose halves disagree, as misconfigured sites have them
        self.ha = {n: replace(HaSpec(topology, backup=(n == names[1]), failover_on_shutdown=failover_on_shutdown,
                                     allow_failback=allow_failback, check_for_active=check_for_active,
                                     zk_connect=zk_connect, zk_session_ms=zk_session_ms),
                              **(ha_overrides or {}).get(n, {})) for n in self.names}
        self.acceptor_ports = {n: free_port() for n in self.names}
        self.http_ports = {n: free_port() for n in self.names}
        self.monitor_user = MONITOR_USER
        self.monitor_password = secrets.token_urlsafe(12)
        self.admin_password = secrets.token_urlsafe(12)
        self._cluster_password = cluster_password or secrets.token_urlsafe(12)
        # acceptors of brokers outside this pair in the same cluster (static connectors): set before start()
        self.cluster_peers: tuple[int, ...] = ()
        # broker-to-broker traffic through a proxy per broker: fixed ports (broker.xml names them), up while the pair runs
        self.link_ports: dict[str, int] = {n: free_port() for n in self.names} if replication_proxy else {}
        self.links: dict[str, TcpProxy] = {}
        self.origin = "http://127.0.0.1"  # what jolokia-access.xml's allow-origin *://127.0.0.1* accepts
        self._brokers: dict[str, ArtemisBroker] = {}
        self._init_processes(self._brokers, forget_on_stop=True)
        self._created: set[str] = set()

    # ---------------------------------------------------------------- endpoints

    @property
    def brokers(self) -> dict[str, ArtemisBroker]:
        return dict(self._brokers)

    @property
    def password_file(self) -> Path:
        return self.workdir / "monitor.password"

    def jolokia_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.http_ports[name]}{CONSOLE_JOLOKIA}"

    def instance_dir(self, name: str) -> Path:
        return self.workdir / name / "instance"

    def broker_log(self, name: str) -> Path:
        return self.instance_dir(name) / "log" / "artemis.log"

    def target(self, name: str, **extra: Any) -> dict:
        """A brokerscope target for ``name``: the console Jolokia, the monitoring user, the Origin."""
        return {"name": name, "kind": "artemis", "url": self.jolokia_url(name), "username": self.monitor_user,
                "password_file": str(self.password_file), "origin": self.origin, "timeout": "2s", **extra}

    # ---------------------------------------------------------------- lifecycle

    def start(self, timeout: float = 90) -> None:
        """Primary until active, then backup until passive; stops both if either fails."""
        primary, backup = self.names
        deadline = time.monotonic() + timeout
        for name, port in self.link_ports.items():
            if name not in self.links:
                self.links[name] = TcpProxy(("127.0.0.1", self.acceptor_ports[name]), port, f"link-to-{name}").start()
        try:
            self.start_broker(primary, "active", timeout)
            self.start_broker(backup, "backup", max(5.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise

    def start_broker(self, name: str, expect: Role | None = None, timeout: float = 60) -> ArtemisBroker:
        """(Re)start one broker JVM; with ``expect``, wait until it reports that role and has logged
        the matching line."""
        if self.is_running(name):
            return self._brokers[name]
        self._refuse_foreign(name)
        self._create(name)
        broker = self._spawn(name)
        if expect is not None:
            try:
                self.wait_ready(name, expect, timeout)
            except BaseException:
                self._terminate(name, signal.SIGKILL, 5)
                raise
        return broker

    def wait_ready(self, name: str, expect: Role, timeout: float) -> float:
        """Until the console answers with role ``expect`` and the log has its line; returns when the
        role was first seen (epoch s)."""
        seen = self.wait_for_role(name, expect, timeout)
        codes = ACTIVE_CODES if expect == "active" else BACKUP_CODES
        since = self._brokers[name].started_at
        self._wait(name, lambda: log_times(self.broker_log(name), "|".join(codes), since - 1), bool,
                   max(5.0, timeout), f"to log one of {codes}")
        return seen

    def stop(self) -> None:
        super().stop()
        while self.links:
            self.links.popitem()[1].close()

    # ---------------------------------------------------------------- faults

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` to the broker's JVM (verified pid); waits for the exit of a SIGKILL."""
        return self._send(name, sig, wait=sig == signal.SIGKILL)[0]

    def cut_link(self) -> float:
        """Stop every byte between the two brokers (``replication_proxy``); returns the time of the cut."""
        if not self.links:
            raise LabError("cut_link needs a pair started with replication_proxy=True")
        now = time.time()
        for proxy in self.links.values():
            proxy.cut()
        return now

    def heal_link(self) -> float:
        now = time.time()
        for proxy in self.links.values():
            proxy.heal()
        return now

    def pause(self, name: str) -> int:
        return self.kill(name, signal.SIGSTOP)

    def resume(self, name: str) -> int:
        return self.kill(name, signal.SIGCONT)

    # ---------------------------------------------------------------- roles

    def role(self, name: str, timeout: float = 2.0) -> Role:
        """From the console's Jolokia: active / backup / starting; ``down`` when the JVM is gone,
        paused, or nothing answers."""
        b = self._brokers.get(name)
        if b is None or not self._alive(name) or proc_state(b.pid) == "T":
            return "down"
        try:
            return role_of(console_read(b.jolokia_url, self.monitor_user, self.monitor_password, self.origin,
                                        timeout=timeout))
        except (OSError, ValueError, LabError):
            return "down"

    def connections(self, name: str, timeout: float = 2.0) -> list[dict] | None:
        """The broker's own list of its remoting connections (``listConnectionsAsJSON``, as the admin
        user: the monitoring user may not invoke it): address, protocol, sessions, creation time (epoch
        s) each; None when it does not answer. What ``ConnectionCount`` counts, connection by connection."""
        b = self._brokers.get(name)
        if b is None or not self._alive(name):
            return None
        try:
            status, body = jolokia_request(b.jolokia_url, [{"type": "exec", "mbean": f'{BROKER_MBEAN[:-1]}"{name}"',
                                                            "operation": "listConnectionsAsJSON()"}],
                                           user=ADMIN_USER, password=self.admin_password, timeout=timeout,
                                           headers={"Origin": self.origin})
            listed = json.loads(body[0]["value"]) if status == 200 and body[0].get("status") == 200 else None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        return None if listed is None else [
            {"address": c.get("clientAddress"), "protocol": c.get("protocol"), "sessions": c.get("sessionCount"),
             "created": c["creationTime"] / 1000 if c.get("creationTime") else None} for c in listed]

    def roles(self) -> dict[str, Role]:
        return {n: self.role(n) for n in self.names}

    def active(self) -> str | None:
        """The single active broker; None when none (or both: split brain) is."""
        return only_one(self.names, self.role, "active")

    def wait_for_role(self, name: str, role: Role, timeout: float = 30) -> float:
        """Poll every 50 ms until ``role(name) == role``; returns time.time() when first seen."""
        return self._wait(name, lambda: self.role(name, timeout=1.0), lambda r: r == role, timeout, f"to become {role}")

    # ---------------------------------------------------------------- internals

    def _create(self, name: str) -> None:
        """The instance of ``name``: made anew the first time this object starts it (an earlier
        object's instance has other ports and passwords), reused on restarts."""
        if name not in self._created:
            if not self._created:
                shutil.rmtree(self.workdir / "shared", ignore_errors=True)
            shutil.rmtree(self.workdir / name, ignore_errors=True)
            (self.workdir / name).mkdir(parents=True)
            self._created.add(name)
        other = next(n for n in self.names if n != name)
        data = self.workdir / "shared" if self.topology == "shared-store" else self.instance_dir(name) / "data"
        create(artemis_home(), self.instance_dir(name), InstanceSpec(
            name=name, acceptor_port=self.acceptor_ports[name], http_port=self.http_ports[name],
            peer_port=self.link_ports.get(other, self.acceptor_ports[other]), data_dir=data, heap=self.heap.upper(),
            admin_password=self.admin_password, monitor_password=self.monitor_password,
            cluster_password=self._cluster_password, ha=self.ha[name],
            announce_port=self.link_ports.get(name), serial_gc=name in self.ballast_mb,
            cluster_ports=self.cluster_peers))
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(self.monitor_password + "\n")

    def _spawn(self, name: str) -> ArtemisBroker:
        bdir = self.workdir / name
        console_log, gc_log = bdir / "console.log", bdir / "gc.log"
        extra = [*marker_args(self.workdir, name), "-Duser.timezone=UTC",
                 f"-Xlog:gc*,safepoint:file={gc_log}:time,uptime,level,tags:filecount=3,filesize=5m"]
        if name in self.ballast_mb:
            # start-up must not run a full GC of the whole live set (6.5–7.2 s with 384 MiB: a broker
            # under the lock manager lost its session before it was up — measured): a high first
            # metaspace threshold ("Metadata GC Threshold") and the whole heap from the start
            # (no "Allocation Failure" full GC to grow the old generation)
            extra += [ballast_jvm_arg(self.ballast_mb[name]), "-XX:MetaspaceSize=256m", f"-Xms{self.heap}"]
        env = {**os.environ, "JAVA_ARGS_APPEND": " ".join(extra)}
        env.pop("JAVA_ARGS", None)  # the instance's artemis.profile sets them
        cmd = [str(self.instance_dir(name) / "bin" / "artemis"), "run"]
        proc, started = self._launch(name, cmd, console_log, bdir, env=env)
        self._brokers[name] = ArtemisBroker(
            name=name, pid=proc.pid, jolokia_url=self.jolokia_url(name), acceptor_port=self.acceptor_ports[name],
            http_port=self.http_ports[name], instance=self.instance_dir(name), log=self.broker_log(name),
            console_log=console_log, gc_log=gc_log, started_at=started)
        self._write_pids()
        return self._brokers[name]

    def _wait(self, name: str, state: Callable[[], Any], pred: Callable[[Any], bool], timeout: float,
              what: str) -> float:
        return self._wait_state(name, lambda _: state(), pred, timeout, what, log=self.workdir / name / "console.log",
                                every=0.05, down=None, timeout_log=self.broker_log(name))


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _drill(pair: ArtemisPair, out: dict[str, Any]) -> None:
    """Shared-store pair: SIGKILL the primary, time the backup's takeover, restart the primary; timings (s) into ``out``."""
    a, b = pair.names
    t0 = time.time()
    pair.start()
    out["pair_ready_s"] = round(time.time() - t0, 3)
    t1 = time.time()
    pair.kill(a)
    out["backup_active_after_sigkill_s"] = round(pair.wait_for_role(b, "active", 60) - t1, 3)
    takeover = log_times(pair.broker_log(b), "AMQ221010", t1)
    out["takeover_log_after_sigkill_s"] = round(takeover[0][0] - t1, 3) if takeover else None
    t2 = time.time()
    pair.start_broker(a, "active", 60)
    out["primary_back_after_restart_s"] = round(time.time() - t2, 3)
    out["backup_again_after_restart_s"] = round(pair.wait_for_role(b, "backup", 60) - t2, 3)


def _status_line(name: str, rec: dict, workdir: Path, args) -> str:
    alive = is_our_java(int(rec["pid"]), workdir, name)
    return f"{name}\tpid={rec['pid']}\t{'running' if alive else 'gone'}\tjolokia={rec['jolokia_url']}"


def _make(args, workdir: Path) -> ArtemisPair:
    return ArtemisPair(workdir, args.topology, zk_connect=args.zk_connect)


def _report(pair: ArtemisPair, _: None) -> Iterator[str]:
    for name, b in pair.brokers.items():
        yield f"{name}\tpid={b.pid}\tjolokia={b.jolokia_url}\tacceptor=tcp://127.0.0.1:{b.acceptor_port}\tlog={b.log}"
    yield f"monitoring user {pair.monitor_user}, password in {pair.password_file}, Origin {pair.origin}"


def _arguments(ap) -> None:
    ap.add_argument("--topology", choices=TOPOLOGIES, default="shared-store")
    ap.add_argument("--zk-connect", help="ZooKeeper connect string (replication-zk)")


def main(argv: Sequence[str] | None = None) -> int:
    return run(LabCli(prog="python -m infra.artemis_lab", description=__doc__.split("\n")[0],
                      workdir=Path(".lab/artemis"), recorded="brokers", make=_make, report=_report, drill=_drill,
                      status_line=_status_line, stop=stop_recorded, add_arguments=_arguments), argv)


if __name__ == "__main__":
    sys.exit(main())
