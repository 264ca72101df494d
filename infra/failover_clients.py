"""Real clients that fail over between the brokers of an HA pair, counting every message the way
Jepsen does: what was sent and acknowledged by the broker, what was received, what was lost or
received twice. STOMP 1.2 over plain sockets (the lab's Artemis acceptors speak it), with the
client-side failover a STOMP client has to do itself: on any connection error, try each broker in
turn every `retry_s` until one accepts (a passive backup listens only once it is live).

    with FailoverConsumer(urls, "/queue/q", login=..., passcode=...) as consumer, \\
         FailoverProducer(urls, "/queue/q", login=..., passcode=..., rate=50) as producer:
        ...                                   # kill the live broker in between
    ledger = Ledger.of(producer, consumer)    # sent / acked / received / lost / duplicated
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from infra.lab_clients import _stomp_read, _stomp_write


@dataclass
class Connection:
    """One client connection's life: the broker, when the client dialled it (the broker counts the
    connection from about then), when CONNECTED came back, and when it was lost."""

    url: str
    dialed: float
    opened: float
    lost: float | None = None
    error: str | None = None


class FailoverClient(threading.Thread):
    def __init__(self, urls: list[str], destination: str, *, login: str, passcode: str, retry_s: float = 0.1,
                 name: str = "failover-client") -> None:
        super().__init__(name=name, daemon=True)
        self.urls, self.destination, self.retry_s = list(urls), destination, retry_s
        self._auth = {"login": login, "passcode": passcode}
        self.stopping = threading.Event()
        self.connections: list[Connection] = []
        self._sock: socket.socket | None = None
        self._buf = bytearray()

    def _connect(self) -> bool:
        """Try each broker once; True when one accepted (the connection is recorded)."""
        for url in self.urls:
            host, port = url.removeprefix("stomp://").rsplit(":", 1)
            dialed = time.time()
            try:
                sock = socket.create_connection((host, int(port)), timeout=2.0)
                sock.settimeout(2.0)
                buf = bytearray()
                _stomp_write(sock, "CONNECT", {"accept-version": "1.2", "host": "localhost", "heart-beat": "0,0",
                                               **self._auth})
                cmd, _hdrs, _body = _stomp_read(sock, buf)
                if cmd != "CONNECTED":
                    sock.close()
                    continue
            except (OSError, ValueError, RuntimeError):
                continue
            self._sock, self._buf = sock, buf
            self.connections.append(Connection(url, dialed, time.time()))
            self.on_connected()
            return True
        return False

    def _lost(self, err: BaseException) -> None:
        if self.connections and self.connections[-1].lost is None:
            self.connections[-1].lost, self.connections[-1].error = time.time(), f"{type(err).__name__}: {err}"
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = None

    def run(self) -> None:
        while not self.stopping.is_set():
            if self._sock is None and not self._connect():
                self.stopping.wait(self.retry_s)
                continue
            try:
                self.step()
            except socket.timeout:
                continue
            except Exception as e:  # noqa: BLE001 - any broken connection: fail over
                self._lost(e)
        if self._sock is not None:
            try:
                _stomp_write(self._sock, "DISCONNECT", {})
            except OSError:
                pass
            self._lost(RuntimeError("client stopped"))

    def on_connected(self) -> None:
        pass

    def step(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping.set()
        self.join(timeout)


class FailoverProducer(FailoverClient):
    """Sends persistent messages "0", "1", … at `rate` per second; each SEND asks for a RECEIPT.
    A message whose RECEIPT came is acknowledged; one sent without a RECEIPT before the connection
    broke is indeterminate (it may or may not be stored) and is sent again, as a client would."""

    def __init__(self, urls: list[str], destination: str, *, rate: float = 50.0, **kw) -> None:
        super().__init__(urls, destination, name="failover-producer", **kw)
        self.interval, self.next_seq = 1.0 / rate, 0
        self.attempted: list[int] = []
        self.acked: set[int] = set()
        self.paused = threading.Event()

    def step(self) -> None:
        if self.paused.is_set():
            time.sleep(self.interval)
            return
        seq = self.next_seq
        body = str(seq).encode()
        self.attempted.append(seq)
        _stomp_write(self._sock, "SEND", {"destination": self.destination, "destination-type": "ANYCAST",
                                          "persistent": "true", "content-length": str(len(body)), "receipt": str(seq)},
                     body)
        cmd, hdrs, _ = _stomp_read(self._sock, self._buf)
        if cmd != "RECEIPT" or hdrs.get("receipt-id") != str(seq):
            raise RuntimeError(f"SEND {seq}: {cmd} {hdrs.get('message', '')}")
        self.acked.add(seq)
        self.next_seq += 1
        time.sleep(self.interval)


class FailoverConsumer(FailoverClient):
    """Receives with client-individual acks; records every message body it got (duplicates too)."""

    def __init__(self, urls: list[str], destination: str, **kw) -> None:
        super().__init__(urls, destination, name="failover-consumer", **kw)
        self.received: list[int] = []
        self.commit_indeterminate: set[int] = set()  # client-individual acks, no transactions: never any
        self.last_received_at = 0.0

    def on_connected(self) -> None:
        _stomp_write(self._sock, "SUBSCRIBE", {"id": "0", "destination": self.destination,
                                               "destination-type": "ANYCAST", "ack": "client-individual"})

    def step(self) -> None:
        cmd, hdrs, body = _stomp_read(self._sock, self._buf)
        if cmd == "ERROR":
            raise RuntimeError(f"ERROR {hdrs.get('message', '')}")
        if cmd != "MESSAGE":
            return
        self.received.append(int(body.decode() or -1))
        self.last_received_at = time.time()
        _stomp_write(self._sock, "ACK", {"id": hdrs.get("ack", hdrs.get("message-id", ""))})


@dataclass
class Ledger:
    """Jepsen-style accounting of one run."""

    attempted: int
    acked: int
    received: int
    distinct_received: int
    lost: list[int] = field(default_factory=list)  # acknowledged by the broker, never received
    duplicated: dict[int, int] = field(default_factory=dict)  # received more than once: times
    unacked_delivered: int = 0  # sent without a RECEIPT (indeterminate) and received anyway
    # delivered, then the commit failed with its outcome unknown (AMQ219031, a timeout) and it
    # never came again: the application had it, the broker consumed it — not lost, not received
    commit_indeterminate: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, producer: FailoverProducer, *consumers: FailoverConsumer) -> "Ledger":
        """The producer's sends against what the consumers received: the application's consumer and,
        Jepsen's final read, a fresh one that drained the queue at the end (what is left is not lost).
        A consumer's `commit_indeterminate` ids are deliveries whose commit outcome the broker left
        unknown (the Core client's AMQ219031 or a timed-out commit; measured: drills artemis-clients-core
        and artemis-clients-core-pause-zk)."""
        received = [m for c in consumers for m in c.received]
        got = Counter(received)
        indeterminate = set(producer.attempted) - producer.acked
        unknown_commit = set().union(*(c.commit_indeterminate for c in consumers)) - set(got)
        return cls(attempted=len(set(producer.attempted)), acked=len(producer.acked), received=len(received),
                   distinct_received=len(got), lost=sorted(producer.acked - set(got) - unknown_commit),
                   duplicated={k: v for k, v in sorted(got.items()) if v > 1},
                   unacked_delivered=len(indeterminate & set(got)), commit_indeterminate=sorted(unknown_commit))
