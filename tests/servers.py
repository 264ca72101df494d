"""Real processes and servers for tests: a JVM with our Jolokia agent, and HTTP endpoints that
misbehave the ways real ones do (an HTML login page, a body cut mid-JSON)."""

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
from typing import Iterator

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class AgentJVM:
    url: str
    pid: int


@contextmanager
def agent_jvm(tmp: Path, user: str | None = None, password: str | None = None, strict_origin: bool = False) -> Iterator[AgentJVM]:
    """Start `java -javaagent:<our agent> IdleMain.java`; yield its Jolokia URL and PID; stop by PID."""
    from infra.lab import agent_jvm_arg, build_agent

    jar = build_agent()
    port_file = tmp / f"agent-{time.monotonic_ns()}.port"
    pw_file = None
    if user:
        pw_file = tmp / "agent.pw"
        pw_file.write_text(password or "")
    arg = agent_jvm_arg(jar, port_file=port_file, user=user, password_file=pw_file, strict_origin=strict_origin)
    log = open(tmp / "agent-jvm.log", "wb")
    proc = subprocess.Popen(
        ["java", "-Xmx64m", "-Dsun.net.httpserver.nodelay=true", arg, str(HERE / "java" / "IdleMain.java")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agent JVM did not start: {(tmp / 'agent-jvm.log').read_text()[-2000:]}")
            time.sleep(0.05)
        yield AgentJVM(f"http://127.0.0.1:{int(port_file.read_text())}/jolokia", proc.pid)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    import signal
    import subprocess

    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
