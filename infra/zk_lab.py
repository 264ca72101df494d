"""Real ZooKeeper 3.8 ensemble on loopback (Debian ``zookeeper`` package), plus a stand-in for the
Artemis lock manager that writes its znodes exactly as Curator would.

    from infra.zk_lab import ZkEnsemble
    with ZkEnsemble(Path("/tmp/zk")) as zk:          # start(): 3 nodes, waits for a leader
        old = zk.leader()
        zk.kill(old)                                  # SIGKILL
        new, t = zk.wait_for_leader(exclude={old})

Every node is one JVM (``org.apache.zookeeper.server.quorum.QuorumPeerMain``) with its own client,
quorum, election and AdminServer ports (free ports picked at construction, kept across restarts),
a 4lw whitelist (default ``mntr,srvr,ruok,stat``; per node overridable, e.g. to exercise the
AdminServer fallback) and a small ``tickTime`` so elections take a fraction of a second.

Classpath: the Debian ``zookeeper.jar`` (its manifest ``Class-Path`` pulls in jetty, netty, jackson …)
plus ``servlet-api.jar`` — without it the AdminServer does not start (measured: the Debian package
does not put it on the classpath) — plus ``slf4j-simple.jar`` so the node logs to ``node.log``.

Layout of ``<workdir>``::

    pids.json            pids and ports of the nodes started by this lab
    <name>/zoo.cfg       rendered configuration
    <name>/data/myid     the node's id (1, 2, 3 …)
    <name>/node.log      JVM stdout+stderr (slf4j-simple)
    <name>/gc.log        -Xlog:gc*,safepoint

Processes are stopped by PID after checking ``/proc/<pid>/cmdline`` for the lab's marker
properties (the same scheme as ``infra.lab``), never by name; an ``atexit`` hook stops what this
object started.

CLI: ``python -m infra.zk_lab start|stop|status|drill --workdir DIR`` (default ``.lab/zookeeper``);
``hold-lease`` runs one lock-manager stand-in that holds a lease until it is killed (tests SIGSTOP
it to let its session expire).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from infra.lab_cli import LabCli, run
from infra.lab_logs import tail
from infra.processes import LabError, LabProcesses, free_port, is_our_java, java_tool, marker_args, only_one, proc_state
from infra.processes import stop_recorded as lab_stop_recorded

__all__ = ["ZkEnsemble", "ZkNode", "LockManagerStandIn", "four_letter_word", "stop_recorded", "encode_sequence"]

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
SERVLET_API_JAR = Path("/usr/share/java/servlet-api.jar")  # the AdminServer needs javax.servlet
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEFAULT_WHITELIST = ("mntr", "srvr", "ruok", "stat")
SERVING = ("leader", "follower", "observer", "standalone", "read-only")

Mode = str  # leader | follower | observer | standalone | read-only | not-serving | down


def four_letter_word(port: int, command: str, host: str = "127.0.0.1", timeout: float = 1.0) -> str:
    """Send one 4lw and read the answer until the server closes (stdlib; independent of collectors/)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(command.encode())
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(chunk)


def mode_from_srvr(text: str) -> Mode:
    for line in text.splitlines():
        if line.startswith("Mode: "):
            return line[6:].strip()
    return "not-serving"


@dataclass
class ZkNode:
    """One node of the lab ensemble (ports stay the same across restarts)."""

    name: str
    myid: int
    client_port: int
    quorum_port: int
    election_port: int
    admin_port: int
    pid: int = 0
    started_at: float = 0.0

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}/commands"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class ZkEnsemble(LabProcesses):
    """A real ZooKeeper ensemble of ``size`` JVMs on 127.0.0.1.

    Measured (`python -m infra.zk_lab drill`, 2 vCPU container shared with other work, JDK 17,
    tickTime 200 ms, 96 MB heap, 3 runs): a leader 1.8-2.9 s after exec; after SIGKILL of the leader
    the lab's 20 ms poll sees a new one after 0.6-0.8 s (ZooKeeper's own `election_time` on the new
    leader: 450-640 ms); with two nodes dead the third answers `not-serving`; restarting one gives
    a quorum again after 1.4-2.7 s.
    """

    kind, recorded, cli = "node", "nodes", "infra.zk_lab"

    def __init__(
        self,
        workdir: Path,
        size: int = 3,
        tick_ms: int = 200,
        init_limit: int = 10,
        sync_limit: int = 5,
        whitelist: Sequence[str] | Mapping[str, Sequence[str]] = DEFAULT_WHITELIST,
        heap: str = "96m",
        max_session_ms: int | None = None,
        java: str | None = None,
        stop_grace: float = 10.0,
    ) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.workdir = Path(workdir).resolve()
        self.tick_ms, self.init_limit, self.sync_limit = tick_ms, init_limit, sync_limit
        self.heap = heap
        self.max_session_ms = max_session_ms
        self.java = java or java_tool("java")
        self.stop_grace = stop_grace
        self.nodes: dict[str, ZkNode] = {
            f"zk{i}": ZkNode(f"zk{i}", i, free_port(), free_port(), free_port(), free_port())
            for i in range(1, size + 1)
        }
        self._whitelist = {
            n: tuple(whitelist.get(n, DEFAULT_WHITELIST) if isinstance(whitelist, Mapping) else whitelist)
            for n in self.nodes
        }
        self._init_processes(self.nodes, forget_on_stop=False)

    # ---------------------------------------------------------------- properties

    @property
    def names(self) -> list[str]:
        return list(self.nodes)

    @property
    def connect_string(self) -> str:
        return ",".join(n.endpoint for n in self.nodes.values())

    def majority(self) -> int:
        return len(self.nodes) // 2 + 1

    # ---------------------------------------------------------------- lifecycle

    def start(self, timeout: float = 60) -> str:
        """Start every node, wait until one leads and all others serve; returns the leader."""
        try:
            for name in self.names:
                self.start_node(name, wait=False)
            return self.wait_for_quorum(timeout)
        except BaseException:
            self.stop()
            raise

    def start_node(self, name: str, wait: bool = True, timeout: float = 30) -> ZkNode:
        """(Re)start one node; with `wait`, until its client port answers `srvr`."""
        node = self._node(name)
        if self.is_running(name):
            return node
        self._refuse_foreign(name)
        missing = [str(p) for p in (ZK_JAR, SERVLET_API_JAR) if not p.exists()]
        if missing:
            raise LabError(f"missing {missing}: apt-get install zookeeper (infra/setup.sh installs it)")
        ndir = self.workdir / name
        (ndir / "data").mkdir(parents=True, exist_ok=True)
        (ndir / "data" / "myid").write_text(f"{node.myid}\n")
        cfg = ndir / "zoo.cfg"
        cfg.write_text(self._zoo_cfg(node, ndir / "data"))
        log = ndir / "node.log"
        classpath = [ZK_JAR, SERVLET_API_JAR] + ([SLF4J_SIMPLE_JAR] if SLF4J_SIMPLE_JAR.exists() else [])
        cmd = [
            self.java, f"-Xmx{self.heap}", "-XX:+UseSerialGC",
            f"-Xlog:gc*,safepoint:file={ndir / 'gc.log'}:time,uptime,level,tags:filecount=3,filesize=5m",
            "-Duser.timezone=UTC", "-Djava.awt.headless=true",
            *marker_args(self.workdir, name),
            # a dead peer's election port refuses at once on loopback; keep the connect timeout short anyway
            "-Dzookeeper.cnxTimeout=1000",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
            "-cp", os.pathsep.join(map(str, classpath)), MAIN_CLASS, str(cfg),
        ]
        proc, node.started_at = self._launch(name, cmd, log, ndir, banner=f": {' '.join(cmd)}")
        node.pid = proc.pid
        self._write_pids()
        if wait:
            self.wait_for(name, lambda m: m != "down", timeout, "to answer on its client port")
        return node

    def _zoo_cfg(self, node: ZkNode, data: Path) -> str:
        lines = [
            f"tickTime={self.tick_ms}",
            f"initLimit={self.init_limit}",
            f"syncLimit={self.sync_limit}",
            f"dataDir={data}",
            f"clientPort={node.client_port}",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=true",
            "admin.serverAddress=127.0.0.1",
            f"admin.serverPort={node.admin_port}",
            f"4lw.commands.whitelist={','.join(self._whitelist[node.name])}",
            "autopurge.purgeInterval=0",
        ]
        if self.max_session_ms:
            lines.append(f"maxSessionTimeout={self.max_session_ms}")
        for n in self.nodes.values():
            lines.append(f"server.{n.myid}=127.0.0.1:{n.quorum_port}:{n.election_port}")
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------- faults

    def kill(self, name: str, sig: int = signal.SIGKILL) -> float:
        """Send `sig` to the node's JVM; for SIGKILL wait until it is gone. Returns the send time."""
        return self._send(name, sig, wait=sig in (signal.SIGKILL, signal.SIGTERM))[1]

    def pause(self, name: str) -> float:
        """SIGSTOP the node (sockets stay open, nothing answers: what a long GC pause looks like)."""
        return self.kill(name, signal.SIGSTOP)

    def resume(self, name: str) -> float:
        return self.kill(name, signal.SIGCONT)

    # ---------------------------------------------------------------- state

    def mode(self, name: str, timeout: float = 1.0) -> Mode:
        """The node's `srvr` Mode (`not-serving` while it has no quorum), `down` if nothing answers."""
        node = self._node(name)
        if not self.is_running(name) or proc_state(node.pid) == "T":
            return "down"
        try:
            text = four_letter_word(node.client_port, "srvr", timeout=timeout)
        except OSError:
            return "down"
        return mode_from_srvr(text) if text else "down"

    def modes(self) -> dict[str, Mode]:
        return {n: self.mode(n) for n in self.names}

    def leader(self) -> str | None:
        modes = self.modes()
        return only_one(modes, modes.__getitem__, "leader")

    def wait_for(self, name: str, pred: Callable[[Mode], bool], timeout: float, what: str, *,
                 stamp: str = "seen", answer_timeout: float = 0.5) -> float:
        """Poll (every 20 ms) until `pred(mode(name))`; returns time.time() when first seen, or with
        stamp="asked" when the poll that saw it was sent (how the collector stamps a scrape; give
        `answer_timeout` room for a JVM that accepts a connection a second before it answers)."""
        return self._wait_state(name, lambda _: self.mode(name, timeout=answer_timeout), pred, timeout, what,
                                log=self.workdir / name / "node.log", every=0.02, stamp=stamp)

    def wait_for_leader(self, timeout: float = 30, exclude: set[str] = frozenset()) -> tuple[str, float]:
        """Poll until some node outside `exclude` reports Mode: leader; (name, time.time() seen)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name in self.names:
                if name not in exclude and self.mode(name, timeout=0.5) == "leader":
                    return name, time.time()
            time.sleep(0.02)
        raise LabError(f"no leader (outside {sorted(exclude)}) within {timeout:.1f}s; modes: {self.modes()}")

    def wait_for_quorum(self, timeout: float = 30) -> str:
        """Until one running node leads and every running node serves; returns the leader."""
        deadline = time.monotonic() + timeout
        modes: dict[str, Mode] = {}
        while time.monotonic() < deadline:
            modes = {n: self.mode(n, timeout=0.5) for n in self.names if self.is_running(n)}
            leaders = [n for n, m in modes.items() if m == "leader"]
            if len(leaders) == 1 and all(m in SERVING for m in modes.values()):
                return leaders[0]
            time.sleep(0.05)
        raise LabError(f"no quorum within {timeout:.1f}s; modes: {modes}\n"
                       + "\n".join(f"--- tail of {n}/node.log ---\n{tail(self.workdir / n / 'node.log', 15)}" for n in modes))

    # ---------------------------------------------------------------- internals

    def _node(self, name: str) -> ZkNode:
        try:
            return self.nodes[name]
        except KeyError:
            raise KeyError(f"unknown node {name!r}; nodes are {self.names}") from None

    def _pid_of(self, name: str) -> int:
        return self._node(name).pid  # KeyError for a name that is not a node

    def _pids_extra(self) -> dict[str, Any]:
        return {"connect_string": self.connect_string}


def stop_recorded(workdir: Path, grace: float = 10.0) -> list[int]:
    """Stop the nodes recorded in ``<workdir>/pids.json`` (verified via /proc/<pid>/cmdline)."""
    return lab_stop_recorded(workdir, grace, key="nodes")


# --------------------------------------------------------------------------------------------------
# The Artemis lock manager's znodes, written as Curator writes them (CATALOG §1.6)
# --------------------------------------------------------------------------------------------------


def encode_sequence(value: int) -> bytes:
    """Curator DistributedAtomicLong: 8-byte big-endian signed long."""
    return struct.pack(">q", value)


class LockManagerStandIn:
    """What `CuratorDistributedLockManager` does in ZooKeeper for one NodeID, with kazoo.

    * primary lock = Curator InterProcessSemaphoreV2 (maxLeases 1) at ``/<ns>/<id>/locks``: take the
      internal mutex (``locks/locks/_c_<uuid>-lock-<seq>``, ephemeral sequential), create the lease
      ``locks/leases/_c_<uuid>-lease-<seq>`` (ephemeral sequential, data = a fresh UUID), drop the mutex;
    * activation sequence = DistributedAtomicLong at ``/<ns>/<id>/activation-sequence``: CAS N → −(N+1)
      (claim), then −(N+1) → N+1 (commit), each a versioned setData.
    """

    def __init__(self, hosts: str, namespace: str, node_id: str, session_ms: int = 18000) -> None:

        self.root = f"/{namespace.strip('/')}/{node_id}" if namespace.strip("/") else f"/{node_id}"
        self.client = KazooClient(hosts=hosts, timeout=session_ms / 1000.0)
        self.client.start(timeout=15)
        self.lease_path: str | None = None
        self.lease_uuid: str | None = None

    @property
    def session_id(self) -> int:
        return self.client.client_id[0]

    def acquire(self) -> str:
        """Take the primary lock; returns the lease znode path."""
        protection = uuid.uuid4()
        mutex = self.client.create(f"{self.root}/locks/locks/_c_{protection}-lock-", b"",
                                   ephemeral=True, sequence=True, makepath=True)
        self.lease_uuid = str(uuid.uuid4())
        self.lease_path = self.client.create(f"{self.root}/locks/leases/_c_{protection}-lease-",
                                             self.lease_uuid.encode(), ephemeral=True, sequence=True,
                                             makepath=True)
        self.client.delete(mutex)
        return self.lease_path

    def release(self) -> None:
        if self.lease_path:
            self.client.delete(self.lease_path)
            self.lease_path = None

    def sequence(self) -> tuple[int, int]:
        """(value, znode version); a missing or empty node reads as 0 (as Curator reads it)."""
        path = f"{self.root}/activation-sequence"
        self.client.ensure_path(path)
        data, stat = self.client.get(path)
        return (struct.unpack(">q", data)[0] if len(data) == 8 else 0), stat.version

    def compare_and_set(self, expected: int, new: int) -> bool:
        value, version = self.sequence()
        if value != expected:
            return False

        try:
            self.client.set(f"{self.root}/activation-sequence", encode_sequence(new), version=version)
            return True
        except BadVersionError:
            return False

    def claim(self) -> int:
        """First CAS step of an activation: N → −(N+1). Returns N+1 (the claimed sequence)."""
        n, _ = self.sequence()
        if n < 0 or not self.compare_and_set(n, -(n + 1)):
            raise LabError(f"cannot claim activation sequence of {self.root}: value is {n}")
        return n + 1

    def commit(self, claimed: int) -> None:
        """Second CAS step: −claimed → claimed."""
        if not self.compare_and_set(-claimed, claimed):
            raise LabError(f"cannot commit activation sequence {claimed} of {self.root}")

    def activate(self) -> int:
        """A whole activation (claim, then commit, as the primary does once it holds the lock)."""
        claimed = self.claim()
        self.commit(claimed)
        return claimed

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop()
            self.client.close()


def _hold_lease(args: argparse.Namespace) -> int:
    """Subprocess entry: take the lock, print one JSON line (session, lease), then wait forever."""
    lm = LockManagerStandIn(args.hosts, args.namespace, args.node_id, session_ms=args.session_ms)
    lease = lm.acquire()
    if args.activate:
        lm.activate()
    print(json.dumps({"session": f"0x{lm.session_id:x}", "lease": lease, "uuid": lm.lease_uuid}), flush=True)

    def close_and_exit(*_: object) -> None:  # SIGTERM: release like a broker that stops cleanly
        lm.close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, close_and_exit)
    while True:
        time.sleep(3600)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _drill(zk: ZkEnsemble, out: dict[str, Any]) -> None:
    """Start 3 nodes, SIGKILL the leader, then a second node, restart one; timings (s) into ``out``."""
    t0 = time.time()
    first = zk.start()
    out["leader_after_exec_s"] = round(time.time() - t0, 3)
    t1 = zk.kill(first)
    second, seen = zk.wait_for_leader(exclude={first})
    out["new_leader_after_sigkill_s"] = round(seen - t1, 3)
    zk.kill(second)
    survivor = next(n for n in zk.names if n not in (first, second))
    out["survivor_after_second_kill"] = zk.mode(survivor)
    t2 = time.time()
    zk.start_node(first, wait=False)
    zk.wait_for_quorum(60)
    out["quorum_back_after_restart_s"] = round(time.time() - t2, 3)


def _status_line(name: str, rec: dict, workdir: Path, args) -> str:
    mode = "down"
    if is_our_java(int(rec["pid"]), workdir, name):
        with contextlib.suppress(OSError):
            mode = mode_from_srvr(four_letter_word(rec["client_port"], "srvr"))
    return (f"{name}\tpid={rec['pid']}\tmode={mode}\tclient=127.0.0.1:{rec['client_port']}\t"
            f"admin=http://127.0.0.1:{rec['admin_port']}/commands")


def _make(args, workdir: Path) -> ZkEnsemble:
    return ZkEnsemble(workdir, size=args.size)


def _report(zk: ZkEnsemble, leader: str) -> Iterator[str]:
    for name, node in zk.nodes.items():
        yield (f"{name}\tpid={node.pid}\tclient={node.endpoint}\tadmin={node.admin_url}"
               f"{'  (leader)' if name == leader else ''}")
    yield f"connect string: {zk.connect_string}"


def _arguments(ap) -> None:
    ap.add_argument("--size", type=int, default=3)
    ap.add_argument("--hosts", help="hold-lease: connect string")
    ap.add_argument("--namespace", default="artemis", help="hold-lease: lock manager namespace")
    ap.add_argument("--node-id", help="hold-lease: the NodeID whose lock to hold")
    ap.add_argument("--session-ms", type=int, default=18000, help="hold-lease: session timeout")
    ap.add_argument("--activate", action="store_true", help="hold-lease: also run one activation (CAS steps)")


def _hold_lease_command(args, ap) -> int:
    if not args.hosts or not args.node_id:
        ap.error("hold-lease needs --hosts and --node-id")
    return _hold_lease(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run(LabCli(prog="python -m infra.zk_lab", description=__doc__.split("\n")[0], workdir=Path(".lab/zookeeper"),
                      recorded="nodes", make=_make, report=_report, drill=_drill, status_line=_status_line, stop=stop_recorded,
                      add_arguments=_arguments, extra={"hold-lease": _hold_lease_command}), argv)


if __name__ == "__main__":
    sys.exit(main())
