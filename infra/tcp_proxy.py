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
        out = _Outbound(self, dst, done)
        try:
            while not done.is_set() and self._wait_forwarding():
                ready, _, _ = select.select([src], [], [], _POLL_S)
                if not ready or not self._forwarding.is_set():
                    continue  # cut between select and recv: leave the bytes in the kernel
                data = src.recv(65536)
                if not data:
                    break
                out.send(data)
        except (OSError, ValueError):  # ValueError: select() on a socket the other direction just closed
            pass
        finally:
            out.end(src)


class _Outbound:
    """One direction's sending side. Straight through while the proxy has no delay; from the first
    chunk sent under a delay on, through a writer thread that sends each chunk ``delay_s`` after it
    came in, in order (the delay can change while connections are open: `TcpProxy.delay_s`)."""

    def __init__(self, proxy: TcpProxy, dst: socket.socket, done: threading.Event) -> None:
        self.proxy, self.dst, self.done = proxy, dst, done
        self._queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self._ready = threading.Condition()
        self._writer = False
        self._src: socket.socket | None = None

    def send(self, data: bytes) -> None:
        """Called by the direction's one reader thread only."""
        with self._ready:
            if not self._writer and self.proxy.delay_s <= 0:
                queued = False
            else:
                queued = True
                if not self._writer:
                    self._writer = True
                    self.proxy._spawn(self._write, f"{self.proxy.name}-delay")
                self._queue.append((time.monotonic() + self.proxy.delay_s, data))
                self._ready.notify()
        if not queued:
            self.dst.sendall(data)

    def end(self, src: socket.socket) -> None:
        """The reader is done: close both sockets, after what is still queued when there is a writer."""
        with self._ready:
            if self._writer:
                self._src = src
                self._queue.append((time.monotonic() + self.proxy.delay_s, b""))
                self._ready.notify()
                return
        self.done.set()
        _close(src, self.dst)

    def _write(self) -> None:
        try:
            while True:
                with self._ready:
                    while not self._queue:
                        self._ready.wait()
                    due, data = self._queue.popleft()
                if (wait := due - time.monotonic()) > 0:
                    time.sleep(wait)
                if not data or self.done.is_set():
                    return
                self.dst.sendall(data)
        except OSError:
            pass
        finally:
            self.done.set()
            _close(*(s for s in (self._src, self.dst) if s is not None))


def _close(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            s.close()
