"""Real Apache Kafka 4.3.1 on loopback: a primary KRaft cluster of three combined broker+controller
nodes, a DR cluster of one combined node, and MirrorMaker 2 in dedicated mode replicating
primary → dr (topics, consumer-group checkpoints with offset sync, heartbeats); the official
Jolokia 2.6.0 JVM agent, read-only (infra/jvm_agents.py), on every JVM. Runs from the jars
``python -m infra.artifacts`` fetched.

    from infra.kafka_lab import KafkaLab
    with KafkaLab(Path("/tmp/kafka")) as lab:     # start(): 4 Kafka JVMs, the topic, then MM2
        lab.kill("p2")                              # SIGKILL
        lab.start_node("p2")

Why combined nodes: three controllers plus three brokers would be six JVMs on two cores; combined
mode (``process.roles=broker,controller``) keeps the primary at three and still has a controller
quorum of three, so killing the active controller is a real controller failover. Heaps are small
(``heap``, default 256m, SerialGC, C1 only) and the failure detectors short (broker session 3 s,
heartbeat 500 ms, replica lag 5 s), so a killed broker is fenced and leaves the ISRs within seconds.

The lab's topic (``topic``, default ``lab.orders``): ``partitions`` partitions, replication factor 3,
``min.insync.replicas=2``. MirrorMaker 2 (DefaultReplicationPolicy) mirrors it to ``primary.lab.orders``
on the DR cluster and checkpoints every group to ``primary.checkpoints.internal`` every second.

``wan=True``: MirrorMaker 2 runs beside DR, as recommended, and reaches the primary over a "WAN":
each primary node has a second listener ``WAN``, advertised at an ``infra.tcp_proxy.TcpProxy`` in
front of it, and MM2 bootstraps the primary there, so everything MM2 exchanges with the primary
(fetches, metadata, offset syncs, checkpoints' group reads) crosses the proxies and nothing else
does. ``set_wan_delay(seconds)`` delays every byte on them each way (0: none).

Layout of ``<workdir>``::

    pids.json                 pids and endpoints of the JVMs started by this lab
    cluster-ids.json          the KRaft cluster ids (kept: a restart reuses the formatted logs)
    log4j2.properties         one logging config: ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)``, UTC
    <name>/server.properties  p1 p2 p3 (primary) and d1 (dr)
    <name>/data/              the node's log dir and KRaft metadata log
    <name>/node.log           JVM stdout+stderr (the server log goes to stdout)
    <name>/gc.log
    mm2/mm2.properties, mm2/node.log, mm2/gc.log

Processes are stopped by PID after checking ``/proc/<pid>/cmdline`` for the lab's marker properties
(infra.processes), never by name.

CLI: ``python -m infra.kafka_lab start|stop|status|drill --workdir DIR`` (default ``.lab/kafka``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from infra.artifacts import kafka_classpath
from infra.jvm_agents import jolokia_jvm_args
from infra.kafka_clients import broker_ids, create_topic, topic_names
from infra.lab_cli import LabCli, run
from infra.lab_clients import jolokia_request
from infra.lab_logs import matching_lines, tail
from infra.processes import LabError, LabProcesses, free_port, is_our_java, java_tool, marker_args, stop_recorded
from infra.tcp_proxy import TcpProxy

__all__ = ["KafkaLab", "KafkaNode", "CLUSTERS", "log_times", "stop_recorded_nodes"]

PRIMARY, DR = "primary", "dr"
#: cluster → its nodes (a node name is unique across the lab)
CLUSTERS: dict[str, tuple[str, ...]] = {PRIMARY: ("p1", "p2", "p3"), DR: ("d1",)}
MM2 = "mm2"
KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
ACTIVE_CONTROLLER = "kafka.controller:type=KafkaController,name=ActiveControllerCount"
LOG_PATTERN = "[%d{yyyy-MM-dd HH:mm:ss,SSS}{UTC}] %p %m (%c)%n"
_LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (?P<msg>.*)$")


@dataclass
class KafkaNode:
    """One JVM of the lab (ports stay the same across restarts); ``cluster`` is ``mm2`` for MirrorMaker."""

    name: str
    cluster: str
    node_id: int
    port: int  # the PLAINTEXT listener (0 for MM2)
    controller_port: int  # the CONTROLLER listener (0 for MM2)
    jolokia_port: int
    wan_port: int = 0  # the WAN listener (wan=True, primary nodes), behind a proxy
    pid: int = 0
    started_at: float = 0.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def jolokia_url(self) -> str:
        return f"http://127.0.0.1:{self.jolokia_port}/jolokia/"

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"jolokia_url": self.jolokia_url}


def log_times(log: Path, pattern: str, since: float = 0.0) -> list[tuple[float, str]]:
    """(epoch, message) of the lab-log lines whose message matches ``pattern``, at or after ``since``."""
    return matching_lines(log, _LOG_LINE, pattern, since)


def kraft_cluster_id(random_bytes=lambda: uuid.uuid4().bytes) -> str:
    """The base64url form of a random UUID, as ``kafka-storage random-uuid`` prints it.

    Like Kafka's ``Uuid.randomUuid`` it never starts with '-': one id in 64 would, and
    ``kafka-storage format -t -abc…`` then reads the id as an option and refuses to format.
    """
    while True:
        text = base64.urlsafe_b64encode(random_bytes()).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaLab(LabProcesses):
    """The primary cluster, the DR cluster and MirrorMaker 2 (see the module doc)."""

    kind, recorded, cli = "node", "nodes", "infra.kafka_lab"

    def __init__(self, workdir: Path, *, heap: str = "256m", topic: str = "lab.orders", partitions: int = 3,
                 mirror: bool = True, wan: bool = False, java: str | None = None, stop_grace: float = 15.0) -> None:
        self.workdir = Path(workdir).resolve()
        self.heap, self.topic, self.partitions, self.mirror = heap, topic, partitions, mirror
        self.java = java or java_tool("java")
        self.stop_grace = stop_grace
        self.nodes: dict[str, KafkaNode] = {}
        for cluster, names in CLUSTERS.items():
            for i, name in enumerate(names, start=1):
                self.nodes[name] = KafkaNode(name, cluster, i, free_port(), free_port(), free_port())
        self.nodes[MM2] = KafkaNode(MM2, MM2, 0, 0, 0, free_port())
        # MM2's path to the primary (wan=True): a proxy per primary node, bound now (its port is advertised)
        self.wan: dict[str, TcpProxy] = {}
        for name in CLUSTERS[PRIMARY] if wan else ():
            self.nodes[name].wan_port = free_port()
            self.wan[name] = TcpProxy(("127.0.0.1", self.nodes[name].wan_port), name=f"wan-{name}")
        self._init_processes(self.nodes, forget_on_stop=False)

    # ---------------------------------------------------------------- endpoints

    @property
    def names(self) -> list[str]:
        return list(self.nodes)

    def bootstrap(self, cluster: str) -> str:
        return ",".join(self.nodes[n].bootstrap for n in CLUSTERS[cluster])

    def mm2_bootstrap(self, cluster: str) -> str:
        """Where MM2 dials ``cluster``: the WAN proxies for the primary when there are any."""
        if cluster == PRIMARY and self.wan:
            return ",".join(f"127.0.0.1:{p.port}" for p in self.wan.values())
        return self.bootstrap(cluster)

    def set_wan_delay(self, seconds: float) -> float:
        """Delay every byte between MM2 and the primary by ``seconds`` each way from now on (bytes
        already in flight keep theirs); returns the time it took effect."""
        if not self.wan:
            raise LabError("set_wan_delay needs a lab made with wan=True")
        for proxy in self.wan.values():
            proxy.delay_s = seconds
        return time.time()

    @property
    def mirrored_topic(self) -> str:
        return f"{PRIMARY}.{self.topic}"  # DefaultReplicationPolicy: <source alias>.<topic>

    def node_log(self, name: str) -> Path:
        return self.workdir / name / "node.log"

    def target(self, name: str, **extra: Any) -> dict:
        """A brokerscope config target for one JVM (group: its cluster; MM2 is its own group)."""
        node = self._node(name)
        return {"name": name, "kind": "kafka", "url": node.jolokia_url, "group": f"kafka-{node.cluster}",
                "timeout": "2s", **extra}

    # ---------------------------------------------------------------- lifecycle

    def start(self, timeout: float = 120) -> dict[str, float]:
        """Both clusters (every broker registered, a controller elected), the topic, then MM2 until the
        mirrored topic exists on DR. Returns seconds from exec to each milestone."""
        t0 = time.time()
        out: dict[str, float] = {}
        for proxy in self.wan.values():
            proxy.start()
        try:
            for name in [*CLUSTERS[PRIMARY], *CLUSTERS[DR]]:
                self.start_node(name, wait=False)
            for cluster in CLUSTERS:
                self.wait_for_cluster(cluster, timeout)
                out[f"{cluster}_ready_s"] = round(time.time() - t0, 3)
            create_topic(self.bootstrap(PRIMARY), self.topic, self.partitions, 3, {"min.insync.replicas": "2"})
            if self.mirror:
                self.start_node(MM2, wait=False)
                self.wait_for_mirrored_topic(timeout)
                out["mm2_mirroring_s"] = round(time.time() - t0, 3)
        except BaseException:
            self.stop()
            raise
        return out

    def start_node(self, name: str, wait: bool = True, timeout: float = 60) -> KafkaNode:
        """(Re)start one JVM; with ``wait``, until its Jolokia agent answers (MM2) or it is a registered
        broker of its cluster."""
        node = self._node(name)
        if self.is_running(name):
            return node
        self._refuse_foreign(name)
        ndir = self.workdir / name
        ndir.mkdir(parents=True, exist_ok=True)
        classpath = os.pathsep.join(map(str, kafka_classpath()))
        if name == MM2:
            cfg = ndir / "mm2.properties"
            cfg.write_text(self._mm2_properties())
            main = [MM2_MAIN, str(cfg), "--clusters", DR]
        else:
            cfg = ndir / "server.properties"
            cfg.write_text(self._server_properties(node))
            self._format(node, cfg, classpath)
            main = [KAFKA_MAIN, str(cfg)]
        agent = jolokia_jvm_args(ndir, port=node.jolokia_port)  # read-only, as in every lab JVM
        cmd = [self.java, *self._jvm_args(ndir), *agent, *marker_args(self.workdir, name), "-cp", classpath, *main]
        proc, node.started_at = self._launch(name, cmd, ndir / "node.log", ndir, banner=f": {main[0]}")
        node.pid = proc.pid
        self._write_pids()
        if wait:
            if name == MM2:
                self._wait_state(name, lambda _: self.jolokia_up(name), bool, timeout, "for its Jolokia agent",
                                 log=ndir / "node.log", every=0.1, down=False)
            else:
                self.wait_for_cluster(node.cluster, timeout)
        return node

    def _jvm_args(self, ndir: Path) -> list[str]:
        return [f"-Xmx{self.heap}", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Xlog:gc*,safepoint:file={ndir / 'gc.log'}:time,uptime,level,tags:filecount=3,filesize=5m",
                "-Duser.timezone=UTC", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self._log4j2()}"]

    def _log4j2(self) -> Path:
        path = self.workdir / "log4j2.properties"
        if not path.exists():
            self.workdir.mkdir(parents=True, exist_ok=True)
            path.write_text("rootLogger.level=INFO\nrootLogger.appenderRef.stdout.ref=STDOUT\n"
                            "appender.stdout.type=Console\nappender.stdout.name=STDOUT\n"
                            f"appender.stdout.layout.type=PatternLayout\nappender.stdout.layout.pattern={LOG_PATTERN}\n"
                            # the request/state-change chatter would drown the lines the drills read
                            "logger.kafka.name=kafka\nlogger.kafka.level=INFO\n"
                            "logger.reflections.name=org.reflections\nlogger.reflections.level=ERROR\n")
        return path

    def _cluster_id(self, cluster: str) -> str:
        """A KRaft cluster id per cluster, made once and kept in ``cluster-ids.json``."""
        path = self.workdir / "cluster-ids.json"
        ids = json.loads(path.read_text()) if path.exists() else {}
        if cluster not in ids:
            ids[cluster] = kraft_cluster_id()
            path.write_text(json.dumps(ids))
        return ids[cluster]

    def _format(self, node: KafkaNode, cfg: Path, classpath: str) -> None:
        """``kafka-storage format`` once per node (its ``meta.properties`` says it was)."""
        if (self.workdir / node.name / "data" / "meta.properties").exists():
            return
        cmd = [self.java, "-Xmx128m", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={self._log4j2()}",
               "-cp", classpath, STORAGE_TOOL, "format", "-t", self._cluster_id(node.cluster), "-c", str(cfg),
               "--ignore-formatted"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise LabError(f"kafka-storage format of {node.name} failed (exit {done.returncode}); delete "
                           f"{self.workdir / node.name / 'data'} and start again:\n{(done.stdout + done.stderr)[-2000:]}")

    def _server_properties(self, node: KafkaNode) -> str:
        peers = [self.nodes[n] for n in CLUSTERS[node.cluster]]
        voters = ",".join(f"{p.node_id}@127.0.0.1:{p.controller_port}" for p in peers)
        rf = min(3, len(peers))
        wan = self.wan.get(node.name)  # a client that bootstraps on WAN is told the proxies' addresses
        listeners = f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        lines = [
            "process.roles=broker,controller", f"node.id={node.node_id}", f"controller.quorum.voters={voters}",
            f"listeners={listeners}" + (f",WAN://127.0.0.1:{node.wan_port}" if wan else ""),
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{node.port}" + (f",WAN://127.0.0.1:{wan.port}" if wan else ""),
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT" + (",WAN:PLAINTEXT" if wan else ""),
            f"log.dirs={self.workdir / node.name / 'data'}",
            f"offsets.topic.replication.factor={rf}", "offsets.topic.num.partitions=3",
            f"transaction.state.log.replication.factor={rf}", f"transaction.state.log.min.isr={min(2, rf)}",
            f"default.replication.factor={rf}", "num.partitions=1", "group.initial.rebalance.delay.ms=0",
            # short failure detection: a killed broker is fenced (and leaves the ISRs) within seconds
            "broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=500", "replica.lag.time.max.ms=5000",
            "num.network.threads=2", "num.io.threads=2", "num.replica.fetchers=1", "background.threads=2",
            "log.segment.bytes=16777216", "log.retention.check.interval.ms=60000",
            # the log cleaner allocates its dedupe buffer (default 128 MiB) in one piece at start: half
            # of the 256-MiB heap, so a node sometimes died of OutOfMemoryError in LogCleaner.startup
            # (P10 loop, session 9). 8 MiB dedupes ~350 k keys per pass: plenty for __consumer_offsets here
            "log.cleaner.dedupe.buffer.size=8388608",
        ]
        return "\n".join(lines) + "\n"

    def _mm2_properties(self) -> str:
        lines = [
            f"clusters={PRIMARY},{DR}", f"{PRIMARY}.bootstrap.servers={self.mm2_bootstrap(PRIMARY)}",
            f"{DR}.bootstrap.servers={self.bootstrap(DR)}",
            f"{PRIMARY}->{DR}.enabled=true", f"{DR}->{PRIMARY}.enabled=false",
            f"{PRIMARY}->{DR}.topics={re.escape(self.topic)}", f"{PRIMARY}->{DR}.groups=.*",
            "replication.factor=1", "checkpoints.topic.replication.factor=1", "heartbeats.topic.replication.factor=1",
            "offset-syncs.topic.replication.factor=1", "offset.storage.replication.factor=1",
            "config.storage.replication.factor=1", "status.storage.replication.factor=1",
            "emit.heartbeats.enabled=true", "emit.heartbeats.interval.seconds=1",
            "emit.checkpoints.enabled=true", "emit.checkpoints.interval.seconds=1",
            "sync.group.offsets.enabled=true", "sync.group.offsets.interval.seconds=1",
            "refresh.topics.interval.seconds=2", "refresh.groups.interval.seconds=2",
            "sync.topic.configs.enabled=false", "sync.topic.acls.enabled=false",
            # an offset sync after every 10 records: translation is exact to within 10 messages
            "offset.lag.max=10", "tasks.max=1",
        ]
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------- faults

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` to the JVM; for SIGKILL/SIGTERM wait until it is gone. Returns the pid."""
        return self._send(name, sig, wait=sig in (signal.SIGKILL, signal.SIGTERM))[0]

    # ---------------------------------------------------------------- state

    def jolokia_read(self, name: str, mbean: str, attribute: str | None = None, timeout: float = 1.0) -> Any:
        """One value through the node's Jolokia agent; None when it does not answer or has no such MBean."""
        body = {"type": "read", "mbean": mbean, **({"attribute": attribute} if attribute else {})}
        try:
            status, resp = jolokia_request(self._node(name).jolokia_url, body, timeout=timeout)
        except OSError:
            return None
        return resp.get("value") if status == 200 and isinstance(resp, dict) and resp.get("status") == 200 else None

    def jolokia_up(self, name: str) -> bool:
        try:
            status, _ = jolokia_request(self._node(name).jolokia_url, get_path="version", timeout=1.0)
        except OSError:
            return False
        return status == 200

    def active_controller(self, cluster: str = PRIMARY) -> str | None:
        """The one running node of ``cluster`` whose ActiveControllerCount is 1 (None: none, or several)."""
        found = [n for n in CLUSTERS[cluster]
                 if self.is_running(n) and self.jolokia_read(n, ACTIVE_CONTROLLER, "Value", 0.5) == 1]
        return found[0] if len(found) == 1 else None

    def wait_for_cluster(self, cluster: str, timeout: float = 60) -> float:
        """Until every running node of ``cluster`` is a registered broker and one is the active controller."""
        want = {self.nodes[n].node_id for n in CLUSTERS[cluster] if self.is_running(n)}
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for n in CLUSTERS[cluster]:
                proc = self._procs.get(n)
                if proc is not None and proc.poll() is not None:
                    raise LabError(f"node {n} exited with code {proc.returncode} while {cluster} was starting.\n"
                                   f"--- tail of {self.node_log(n)} ---\n{tail(self.node_log(n))}")
            last = broker_ids(self.bootstrap(cluster), timeout=2.0)
            if last is not None and want <= last and self.active_controller(cluster):
                return time.time()
            time.sleep(0.2)
        logs = "\n".join(f"--- tail of {self.node_log(n)} ---\n{tail(self.node_log(n), 15)}" for n in CLUSTERS[cluster])
        raise LabError(f"{cluster} cluster not ready within {timeout:.0f}s (brokers seen: {last}, want {sorted(want)})\n{logs}")

    def wait_for_mirrored_topic(self, timeout: float = 60) -> float:
        return self._wait_state(MM2, lambda _: self.mirrored_topic in (topic_names(self.bootstrap(DR)) or ()),
                                bool, timeout, f"to create {self.mirrored_topic} on {DR}",
                                log=self.node_log(MM2), every=0.5, down=False)

    # ---------------------------------------------------------------- internals

    def _node(self, name: str) -> KafkaNode:
        try:
            return self.nodes[name]
        except KeyError:
            raise KeyError(f"unknown node {name!r}; the lab has {self.names}") from None

    def stop(self) -> None:
        super().stop()
        for proxy in self.wan.values():
            proxy.close()

    def _pids_extra(self) -> dict[str, Any]:
        return {"bootstrap": {c: self.bootstrap(c) for c in CLUSTERS}, "topic": self.topic}


def stop_recorded_nodes(workdir: Path, grace: float = 15.0) -> list[int]:
    """Stop the JVMs recorded in ``<workdir>/pids.json`` (verified via /proc/<pid>/cmdline)."""
    return stop_recorded(workdir, grace, key="nodes")


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _drill(lab: KafkaLab, out: dict[str, Any]) -> None:
    """Start, SIGKILL the active controller, wait for a new one, restart the old; timings into ``out``."""
    out.update(lab.start())
    old = lab.active_controller()
    t = time.time()
    lab.kill(old)
    deadline = time.monotonic() + 30
    while (new := lab.active_controller()) in (None, old):
        if time.monotonic() > deadline:
            raise LabError("no new active controller within 30 s")
        time.sleep(0.05)
    out["old_controller"], out["new_controller"] = old, new
    out["new_controller_seen_s"] = round(time.time() - t, 3)
    t = time.time()
    lab.start_node(old)
    out["restarted_rejoined_s"] = round(time.time() - t, 3)


def _status_line(name: str, rec: dict, workdir: Path, args) -> str:
    alive = is_our_java(int(rec["pid"]), workdir, name)
    return (f"{name}\tcluster={rec['cluster']}\tpid={rec['pid']}\t{'up' if alive else 'down'}\t"
            f"kafka=127.0.0.1:{rec['port']}\tjolokia={rec['jolokia_url']}")


def _make(args, workdir: Path) -> KafkaLab:
    return KafkaLab(workdir, heap=args.heap, mirror=not args.no_mirror)


def _report(lab: KafkaLab, timings: dict) -> Iterator[str]:
    for name, node in lab.nodes.items():
        yield f"{name}\tcluster={node.cluster}\tpid={node.pid}\tkafka={node.bootstrap}\tjolokia={node.jolokia_url}"
    for cluster in CLUSTERS:
        yield f"{cluster} bootstrap: {lab.bootstrap(cluster)}"
    yield f"start-up: {json.dumps(timings)}"


def _arguments(ap) -> None:
    ap.add_argument("--heap", default="256m")
    ap.add_argument("--no-mirror", action="store_true", help="do not start MirrorMaker 2")


def main(argv: Sequence[str] | None = None) -> int:
    return run(LabCli(prog="python -m infra.kafka_lab", description=__doc__.split("\n")[0], workdir=Path(".lab/kafka"),
                      recorded="nodes", make=_make, report=_report, drill=_drill, status_line=_status_line,
                      stop=stop_recorded_nodes, add_arguments=_arguments), argv)


if __name__ == "__main__":
    sys.exit(main())
