"""A small TCP proxy on loopback that can stop forwarding bytes, to cut one path to a database, or
delay them, to put a network between a client and a server (there is no `tc netem` here).

    proxy = TcpProxy(("127.0.0.1", pg_port)).start()   # listens on proxy.port
    proxy.cut()     # every byte in either direction is held (no RST, no FIN): a silent partition
    proxy.heal()    # bytes flow again, held ones first
    TcpProxy(("127.0.0.1", port), delay_s=0.010)       # every byte arrives 10 ms later, each way

Delay: what is read is forwarded `delay_s` after it was read, in order, by a writer thread per
direction (the reader keeps reading meanwhile), with TCP_NODELAY on both sides so that Nagle's
algorithm adds nothing of its own — a round trip through it costs 2 × delay_s more, whatever the
message size (latency, not bandwidth).

While cut, the proxy reads nothing from its sockets, so what the peers send waits in the kernel's
buffers (TCP flow control), exactly like packets waiting out a partition; connections made during
the cut are accepted by the kernel but only connected upstream after the heal. All in threads of
this process: nothing to stop by PID, ``close()`` ends every thread and socket.
"""

from __future__ import annotations

import collections
import contextlib
import select
import socket
import threading
import time

__all__ = ["TcpProxy"]

_POLL_S = 0.05


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` → ``upstream`` until :meth:`cut`; :meth:`heal` resumes."""

    def __init__(self, upstream: tuple[str, int], listen_port: int = 0, name: str = "proxy",
                 delay_s: float = 0.0) -> None:
        if delay_s < 0:
            raise ValueError(f"delay_s must be ≥ 0, not {delay_s}")
        self.upstream = upstream
        self.name = name
        self.delay_s = delay_s
        self._listener = socket.create_server(("127.0.0.1", listen_port), backlog=64)
        self.port: int = self._listener.getsockname()[1]
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.cuts: list[tuple[float, float | None]] = []  # (cut time, heal time) as time.time()

    @property
    def is_cut(self) -> bool:
        return not self._forwarding.is_set()

    def start(self) -> "TcpProxy":
        self._spawn(self._accept_loop, f"{self.name}-accept")
        return self

    def cut(self) -> float:
        """Stop forwarding bytes; returns the time of the cut."""
        self._forwarding.clear()
        now = time.time()
        self.cuts.append((now, None))
        return now

    def heal(self) -> float:
        """Forward again; returns the time of the heal."""
        now = time.time()
        if self.cuts and self.cuts[-1][1] is None:
            self.cuts[-1] = (self.cuts[-1][0], now)
        self._forwarding.set()
        return now

    def close(self) -> None:
        self._closed.set()
        self._forwarding.set()  # wake every waiting thread
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.close()
        for t in self._threads:
            t.join(5)

    def __enter__(self) -> "TcpProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _spawn(self, target, name: str, *args) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _track(self, s: socket.socket) -> socket.socket:
        with self._lock:
            self._sockets.append(s)
        return s

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            ready, _, _ = select.select([self._listener], [], [], _POLL_S)
            if not ready:
                continue
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._spawn(self._serve, f"{self.name}-conn", self._track(client))

    def _wait_forwarding(self) -> bool:
        """Block while cut; False once the proxy is closed."""
        while not self._forwarding.wait(_POLL_S):
            if self._closed.is_set():
                return False
        return not self._closed.is_set()

    def _serve(self, client: socket.socket) -> None:
        if not self._wait_forwarding():  # a connection made during a cut reaches upstream after the heal
            return
        try:
            upstream = self._track(socket.create_connection(self.upstream, timeout=5))
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        done = threading.Event()
        self._spawn(self._pump, f"{self.name}-up", client, upstream, done)
        self._pump(upstream, client, done)

    def _pump(self, src: socket.socket, dst: socket.socket, done: threading.Event) -> None:
        send = self._delayed_sender(dst, done) if self.delay_s > 0 else dst.sendall
        try:
            while not done.is_set() and self._wait_forwarding():
                ready, _, _ = select.select([src], [], [], _POLL_S)
                if not ready or not self._forwarding.is_set():
                    continue  # cut between select and recv: leave the bytes in the kernel
                data = src.recv(65536)
                if not data:
                    break
                send(data)
        except (OSError, ValueError):  # ValueError: select() on a socket the other direction just closed
            pass
        finally:
            if self.delay_s > 0:
                send(b"")  # its writer closes both once the bytes still in flight are out
            else:
                done.set()
                _close(src, dst)

    def _delayed_sender(self, dst: socket.socket, done: threading.Event):
        """A send function for one direction: each chunk goes out `delay_s` after it was handed in,
        in order, from a writer thread; b"" ends the direction once everything before it is out."""
        queue: collections.deque[tuple[float, bytes]] = collections.deque()
        ready = threading.Condition()

        def writer() -> None:
            try:
                while True:
                    with ready:
                        while not queue:
                            ready.wait()
                        due, data = queue.popleft()
                    if (wait := due - time.monotonic()) > 0:
                        time.sleep(wait)
                    if not data or done.is_set():
                        return
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                done.set()
                _close(dst)

        def send(data: bytes) -> None:
            with ready:
                queue.append((time.monotonic() + self.delay_s, data))
                ready.notify()

        self._spawn(writer, f"{self.name}-delay")
        return send


def _close(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            s.close()
