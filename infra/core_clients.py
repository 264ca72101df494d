"""Real Artemis Core JMS clients — what AMQ 7 / JBoss EAP applications run — failing over with a lab
pair through their connection URL, each a JVM of its own (``infra/core_clients/CoreFailoverClient.java``,
compiled on first use against the client jars of the Artemis distribution in the cache, no network).

    settings = FailoverSettings(reconnect_attempts=50, retry_interval_ms=200)
    with CoreClients(workdir, settings.url(ports), "brokerscope.lab", "admin", password) as clients:
        clients.start_consumer(); clients.start_producer(rate=50)
        ...                                        # kill the live broker in between
    ledger = Ledger.of(clients.ledger("core-producer"), clients.ledger("core-consumer"))

Each client writes a ledger of JSON lines (``<workdir>/<name>.ledger.jsonl``): what it sent and the
broker acknowledged, what it received and committed, and its own listeners' view of the failover
(FailoverEventListener: FAILURE_DETECTED, FAILOVER_COMPLETED, FAILOVER_FAILED; ExceptionListener),
each stamped with the client's clock. Processes are started and stopped by verified pid
(infra.processes.LabProcesses); SIGTERM lets a client finish and close its connection.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from infra.artifacts import artemis_home
from infra.jvm_agents import agent_build_dir, build_jar
from infra.processes import LabError, LabProcesses, java_tool, marker_args, signal_pid, stop_recorded

__all__ = ["CLIENT_JARS", "ClientLedger", "CoreClients", "FailoverSettings", "build_core_clients", "client_classpath"]

SRC_DIR = Path(__file__).resolve().parent / "core_clients"
MAIN_CLASS = "brokerscope.clients.CoreFailoverClient"
#: what an application of the Artemis JMS client has on its classpath (artemis-jms-client's own
#: dependencies); the distribution ships them in lib/ (2.40.0 has no lib/client/ and no -all jar)
CLIENT_JARS = ("artemis-jms-client-*.jar", "artemis-core-client-*.jar", "artemis-commons-*.jar",
               "artemis-selector-*.jar", "jakarta.jms-api-*.jar", "netty-*.jar", "slf4j-api-*.jar",
               "commons-beanutils-*.jar", "commons-collections-*.jar", "commons-logging-*.jar",
               "jctools-core-*.jar")
COMPILE_JARS = ("artemis-jms-client-*.jar", "artemis-core-client-*.jar", "artemis-commons-*.jar",
                "jakarta.jms-api-*.jar")


@dataclass(frozen=True)
class FailoverSettings:
    """The client's failover knobs, as its URL carries them (Artemis names and units)."""

    reconnect_attempts: int = 50  # -1: for ever
    retry_interval_ms: int = 200
    retry_interval_multiplier: float = 1.0
    client_failure_check_period_ms: int = 1000  # the client pings; a silent connection fails after this
    connection_ttl_ms: int = 5000  # the broker drops a client it has not heard from for this long
    call_timeout_ms: int = 30000  # a blocking call (a durable send, a commit, the failover check) waits this long

    def url(self, ports: list[int]) -> str:
        hosts = ",".join(f"tcp://127.0.0.1:{p}" for p in ports)
        return (f"({hosts})?ha=true&reconnectAttempts={self.reconnect_attempts}&retryInterval={self.retry_interval_ms}"
                f"&retryIntervalMultiplier={self.retry_interval_multiplier}"
                f"&clientFailureCheckPeriod={self.client_failure_check_period_ms}&connectionTTL={self.connection_ttl_ms}"
                f"&callTimeout={self.call_timeout_ms}")

    @property
    def reconnect_budget_s(self) -> float | None:
        """How long the client keeps trying before FAILOVER_FAILED (None: for ever)."""
        if self.reconnect_attempts < 0:
            return None
        total, wait = 0.0, self.retry_interval_ms / 1000
        for _ in range(self.reconnect_attempts):
            total, wait = total + wait, wait * self.retry_interval_multiplier
        return round(total, 3)

    def to_json(self) -> dict:
        return {**asdict(self), "reconnect_budget_s": self.reconnect_budget_s}


def _jars(patterns: tuple[str, ...]) -> list[Path]:
    lib = artemis_home() / "lib"
    found = [j for p in patterns for j in sorted(lib.glob(p))]
    missing = [p for p in patterns if not list(lib.glob(p))]
    if missing:
        raise LabError(f"{lib} lacks {missing}: is the Artemis distribution complete? (python -m infra.artifacts)")
    return found


def build_core_clients(force: bool = False) -> Path:
    """The client jar, compiled when missing or older than its source or the distribution's jars."""
    manifest = f"Manifest-Version: 1.0\nMain-Class: {MAIN_CLASS}\n"
    return build_jar(SRC_DIR, agent_build_dir() / "brokerscope-core-clients.jar", manifest, _jars(COMPILE_JARS),
                     force)


def client_classpath() -> str:
    return ":".join(str(p) for p in [build_core_clients(), *_jars(CLIENT_JARS)])


#: a failed commit whose error says the transaction was rolled back (the message comes again); any
#: other failure of a commit (a timeout, a failover) leaves its outcome unknown
#: (the JMS client throws TransactionRolledBackException, e.g. AMQ219030 "The transaction was rolled
#: back on failover to a backup server")
DEFINITE_ROLLBACKS = ("TransactionRolledBackException", "AMQ219030")


@dataclass
class ClientLedger:
    """One client's ledger, read back: what Ledger (infra.failover_clients) counts, and the events."""

    name: str
    events: list[dict] = field(default_factory=list)

    @classmethod
    def read(cls, name: str, path: Path) -> "ClientLedger":
        events = []
        for line in path.read_text().splitlines() if path.exists() else []:
            try:
                events.append(json.loads(line))
            except ValueError:  # a line cut by a SIGKILL: the client never finished writing it
                continue
        return cls(name, events)

    def ids(self, ev: str) -> list[int]:
        return [int(e["id"]) for e in self.events if e["ev"] == ev and e.get("id") is not None]

    @property
    def attempted(self) -> list[int]:
        return self.ids("send")

    @property
    def acked(self) -> set[int]:
        return set(self.ids("acked"))

    @property
    def received(self) -> list[int]:
        """Committed deliveries (a delivery whose commit failed comes again and is not counted)."""
        return self.ids("committed")

    @property
    def commit_indeterminate(self) -> set[int]:
        """Deliveries whose commit failed without the client being told it was rolled back: the
        application had the message and the broker may have consumed it. Measured: AMQ219031
        ("rolled back on failover however commit may have been successful", fact 30) and AMQ219014
        (the commit timed out on a frozen live, which committed it on SIGCONT: fact 32). Only
        DEFINITE_ROLLBACKS say it was not; counted by Ledger.of as neither received nor lost unless it
        came again."""
        return {int(e["id"]) for e in self.events
                if e["ev"] == "rolled-back" and e.get("id") is not None
                and not any(code in (e.get("error") or "") for code in DEFINITE_ROLLBACKS)}

    def times(self, ev: str, **match) -> list[float]:
        return [e["t"] for e in self.events if e["ev"] == ev and all(e.get(k) == v for k, v in match.items())]

    def failovers(self) -> list[dict]:
        """The FailoverEventListener's events and the ExceptionListener's, in order."""
        return [e for e in self.events if e["ev"] in ("failover", "exception", "connected", "fatal")]

    def summary(self) -> dict:
        return {"attempted": len(set(self.attempted)), "acked": len(self.acked), "committed": len(self.received),
                "deliveries": len(self.ids("received")), "send_failed": len(self.ids("send-failed")),
                "rolled_back": len(self.times("rolled-back")), "last": self.events[-1] if self.events else None,
                "events": self.failovers()}


@dataclass
class CoreClient:
    """One client JVM of the lab (its last start)."""

    name: str
    pid: int
    mode: str
    ledger: Path
    log: Path
    started_at: float

    def to_json(self) -> dict:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


class CoreClients(LabProcesses):
    """A producer and a consumer JVM on one failover URL; see the module doc."""

    kind = "client"
    recorded = "clients"
    cli = "infra.core_clients"

    def __init__(self, workdir: Path, url: str, queue: str, user: str, password: str, stop_grace: float = 15.0) -> None:
        self.workdir = Path(workdir).resolve()
        self.url, self.queue, self.user, self._password = url, queue, user, password
        self.stop_grace = stop_grace
        self._clients: dict[str, CoreClient] = {}
        self._init_processes(self._clients, forget_on_stop=False)

    def start(self) -> "CoreClients":
        return self

    def start_consumer(self, name: str = "core-consumer", timeout: float = 60) -> CoreClient:
        return self._start(name, "consume", [], timeout)

    def start_producer(self, name: str = "core-producer", rate: float = 50.0, timeout: float = 60) -> CoreClient:
        return self._start(name, "produce", [str(rate)], timeout)

    def thread_dumps(self) -> None:
        """SIGQUIT every running client: the JVM prints its threads to its log and runs on (where a
        client stuck in a call is stuck)."""
        for name, c in self._clients.items():
            if self._verify(name, c.pid):
                signal_pid(c.pid, signal.SIGQUIT)

    def stop_client(self, name: str) -> None:
        """SIGTERM one client (it finishes the message in hand, closes, writes `stopped`); SIGKILL after the grace."""
        self._terminate(name, signal.SIGTERM, self.stop_grace)

    def ledger(self, name: str) -> ClientLedger:
        return ClientLedger.read(name, self.workdir / f"{name}.ledger.jsonl")

    def _start(self, name: str, mode: str, extra: list[str], timeout: float) -> CoreClient:
        self.workdir.mkdir(parents=True, exist_ok=True)
        ledger, log = self.workdir / f"{name}.ledger.jsonl", self.workdir / f"{name}.log"
        ledger.unlink(missing_ok=True)
        cmd = [java_tool("java"), *marker_args(self.workdir, name), "-Xmx64m", "-cp", client_classpath(), MAIN_CLASS,
               mode, self.url, self.queue, self.user, str(ledger), *extra]
        env = {"ARTEMIS_PASSWORD": self._password, "PATH": "/usr/bin:/bin"}
        proc, started = self._launch(name, cmd, log, self.workdir, env=env)
        self._clients[name] = CoreClient(name, proc.pid, mode, ledger, log, started)
        self._write_pids()
        self._wait_state(name, lambda _: self.ledger(name).times("connected"), bool, timeout, "to connect",
                         log=log, every=0.05, down=None)
        return self._clients[name]


def main(argv: list[str] | None = None) -> int:
    """``python -m infra.core_clients stop --workdir DIR``: stop the clients another process left there."""
    ap = argparse.ArgumentParser(prog="python -m infra.core_clients", description=main.__doc__)
    ap.add_argument("command", choices=["stop"])
    ap.add_argument("--workdir", type=Path, required=True)
    args = ap.parse_args(argv)
    pids = stop_recorded(args.workdir, key=CoreClients.recorded)
    print(f"stopped pids {pids}" if pids else "nothing running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
