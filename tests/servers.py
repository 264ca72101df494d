"""Real processes and servers for tests: a JVM with the lab's Jolokia agent (the official 2.6.0 JVM
agent, read-only), and HTTP endpoints that misbehave the ways real ones do (an HTML login page, a
body cut mid-JSON)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

from infra.processes import free_port  # noqa: F401 - the tests' one way to pick a port

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class AgentJVM:
    url: str
    pid: int
    conf_dir: Path  # the agent's jolokia-access.xml and jolokia-agent.properties
    log: Path  # the JVM's stdout+stderr

    def request(self, body: Any = None, **kw: Any) -> tuple[int, Any]:
        """``infra.lab_clients.jolokia_request`` against this agent."""
        from infra.lab_clients import jolokia_request

        return jolokia_request(self.url, body, **kw)


@contextmanager
def agent_jvm(tmp: Path, user: str | None = None, password: str | None = None,
              strict_origin: bool = False) -> Iterator[AgentJVM]:
    """Start ``java <the lab's Jolokia agent> IdleMain.java`` (an otherwise idle JVM); yield its Jolokia URL
    and PID; stop it by PID."""
    from infra.jvm_agents import jolokia_jvm_args, wait_for_agent_url

    conf_dir = tmp / f"agent-jvm-{time.monotonic_ns()}"
    args = jolokia_jvm_args(conf_dir, user=user, password=password, strict_origin=strict_origin)
    log = conf_dir / "agent-jvm.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["java", "-Xmx64m", *args, str(HERE / "java" / "IdleMain.java")],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = wait_for_agent_url(log, proc.pid, 60, exited=proc, what="the agent JVM")
        yield AgentJVM(url, proc.pid, conf_dir, log)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)  # a test may have left it stopped
        stop_process(proc)




class _Handler(BaseHTTPRequestHandler):
    mode = "html"

    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "html":
            body = b"<html><head><title>Login</title></head><body>Please sign in</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.mode == "truncated":
            body = b'[{"request":{"type":"read","mbean":"java.lang:type=Memory"},"value":{"HeapMemoryUsage":{"used":12'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) + 200))  # promise more than we send
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif self.mode == "hang":  # a frozen JVM: the answer comes long after any scrape timeout
            time.sleep(2.0)
            self.send_response(500)
            self.end_headers()
        elif self.mode == "reset":
            # close with an RST, as the kernel does for a process killed mid-request
            import struct

            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()


@contextmanager
def bad_http(mode: str) -> Iterator[str]:
    """An HTTP server on loopback answering 'html' (a login page), 'truncated' (cut-off JSON),
    'reset' (the connection reset before any answer) or 'hang' (nothing for 2 s)."""
    handler = type("H", (_Handler,), {"mode": mode})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/jolokia"
    finally:
        srv.shutdown()
        srv.server_close()


def stop_process(proc, grace: float = 10.0) -> None:
    """Stop a server the test started (a subprocess.Popen): SIGTERM, then SIGKILL after `grace` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
