"""Real local HTTP receivers for the alert tests: they record every request, can answer slowly,
fail with a status, go down (the port closed) and come back on the same port. A `validate`
callback checks each body on the server side (its error becomes a 400 with the reason)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: object
    at: float


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True
    block_on_close = False  # a held request must not keep stop() waiting


class RecordingReceiver:
    """An HTTP server on 127.0.0.1 recording POSTs. `status`: the answer; `hold`: seconds to wait
    before answering, or until `release` is set (the request is recorded first, and `arrived` is set)."""

    def __init__(self, port: int = 0, status: int = 200, hold: float = 0.0,
                 validate: Callable[[str, object], str | None] | None = None,
                 answer: Callable[[str, object], object] | None = None):
        self.port = port
        self.status = status
        self.hold = hold
        self.validate = validate
        self.answer = answer
        self.requests: list[Received] = []
        self.rejected: list[tuple[object, str]] = []
        self.arrived = threading.Event()
        self.release = threading.Event()  # ends a hold early
        self._srv: _Server | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "RecordingReceiver":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                problem = owner.validate(self.path, body) if owner.validate else None
                if problem:
                    with owner._lock:
                        owner.rejected.append((body, problem))
                    self._reply(400, {"status": "invalid event", "message": problem})
                    return
                with owner._lock:
                    owner.requests.append(Received(self.path, dict(self.headers.items()), body, time.time()))
                owner.arrived.set()
                if owner.hold:
                    owner.release.wait(owner.hold)
                out = owner.answer(self.path, body) if owner.answer else {"status": "ok"}
                self._reply(owner.status, out)

            def _reply(self, status: int, obj: object) -> None:
                data = json.dumps(obj).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client went away (killed mid-request)
                    pass

        self._srv = _Server(("127.0.0.1", self.port), Handler)
        self.port = self._srv.server_address[1]
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._srv is not None:
            self._srv.shutdown()
            self._srv.server_close()
            self._srv = None

    def bodies(self) -> list:
        with self._lock:
            return [r.body for r in self.requests]

    def __enter__(self) -> "RecordingReceiver":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def wait_for(cond: Callable[[], object], timeout: float = 20.0, every: float = 0.05, what: str = "condition"):
    """Poll until `cond()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(every)


def port_is_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0
