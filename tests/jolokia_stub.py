"""A Jolokia-shaped HTTP server on 127.0.0.1 for tests whose object under test is our collector:
each path answers the way one kind of endpoint does (a replayed capture, an HTML login page, a
401, a 50 MB body, basic auth, a skewed clock, TLS with a self-signed certificate).

`replay(items)` answers each request of a bulk POST with the captured item whose request reads the
same MBean (ObjectNames compared parsed, not as strings) and attributes, or with Jolokia's 404 item,
so any pack's requests get a Jolokia answer.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

from collectors.objectname import ObjectNameError, parse_object_name

FIXTURES = Path(__file__).resolve().parent / "fixtures"

Route = Callable[[BaseHTTPRequestHandler, bytes], None]


def send(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str = "application/json") -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def _request_key(req: dict) -> tuple | None:
    try:
        name = parse_object_name(req.get("mbean", ""))
    except ObjectNameError:
        return None
    attr = req.get("attribute")
    attrs = tuple(attr) if isinstance(attr, list) else (attr,)
    return req.get("type"), name.domain, tuple(sorted(name.props)), attrs


def activemq_items(target: str = "amq-a") -> list[dict]:
    """The real captured bulk answer of one lab broker (amq-a: master, amq-b: slave)."""
    return json.loads((FIXTURES / "activemq_bulk_master_slave.json").read_text())[target]


def replay(items: list[dict], clock_offset_s: float = 0.0) -> Route:
    """Answer every bulk POST from captured items; `clock_offset_s` skews the broker's timestamps."""
    by_key = {_request_key(i["request"]): i for i in items}

    def route(h: BaseHTTPRequestHandler, body: bytes) -> None:
        now = int(time.time() + clock_offset_s)
        out = []
        for req in json.loads(body):
            item = by_key.get(_request_key(req))
            if item is None:
                out.append({"request": req, "status": 404, "timestamp": now,
                            "error_type": "javax.management.InstanceNotFoundException",
                            "error": f"javax.management.InstanceNotFoundException : {req.get('mbean')}"})
            else:
                out.append({**item, "request": req, "timestamp": now})
        send(h, 200, json.dumps(out).encode())

    return route


def fixed(status: int, body: bytes | str, ctype: str = "application/json") -> Route:
    data = body.encode() if isinstance(body, str) else body

    def route(h: BaseHTTPRequestHandler, _body: bytes) -> None:
        send(h, status, data, ctype)

    return route


def huge(n_bytes: int, declare_length: bool = True) -> Route:
    """A syntactically valid JSON array of about `n_bytes`, streamed (never built whole)."""
    piece = b'{"status":200,"value":"' + b"x" * 65000 + b'"},'

    def route(h: BaseHTTPRequestHandler, _body: bytes) -> None:
        n = max(1, n_bytes // len(piece))
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if declare_length:
            h.send_header("Content-Length", str(1 + n * len(piece) + 1))
        h.end_headers()
        try:
            h.wfile.write(b"[")
            for _ in range(n - 1):
                h.wfile.write(piece)
            h.wfile.write(piece[:-1] + b"]")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on it: what we want

    return route


def basic_auth(user: str, password: str, inner: Route) -> Route:
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def route(h: BaseHTTPRequestHandler, body: bytes) -> None:
        if h.headers.get("Authorization") != expected:
            h.send_response(401)
            h.send_header("WWW-Authenticate", 'Basic realm="jolokia"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        inner(h, body)

    return route


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Route] = {}
    seen: list[tuple[str, dict]] = []

    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, dict(self.headers)))
        route = self.routes.get(self.path)
        if route is None:
            send(self, 404, b"<html><body>Not Found</body></html>", "text/html")
        else:
            route(self, body)

    do_GET = do_POST


class Stub:
    """A running stub: `url(path)`, and what it saw (path, headers) per request."""

    def __init__(self, base: str, seen: list[tuple[str, dict]]):
        self.base, self.seen = base, seen

    def url(self, path: str) -> str:
        return self.base + path


@contextmanager
def jolokia_stub(routes: dict[str, Route], tls: tuple[Path, Path] | None = None) -> Iterator[Stub]:
    """Serve `routes` (path → route) on 127.0.0.1; with `tls` = (certfile, keyfile), over HTTPS."""
    seen: list[tuple[str, dict]] = []
    handler = type("H", (_Handler,), {"routes": routes, "seen": seen})
    server_class = type("S", (ThreadingHTTPServer,), {"request_queue_size": 128})  # many targets at once
    srv = server_class(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    scheme = "http"
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(tls[0]), str(tls[1]))
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        scheme = "https"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield Stub(f"{scheme}://127.0.0.1:{srv.server_address[1]}", seen)
    finally:
        srv.shutdown()
        srv.server_close()


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A CA-less self-signed certificate for 127.0.0.1 (its own CA): (cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "brokerscope test broker")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem, key_pem = folder / "broker-cert.pem", folder / "broker-key.pem"
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert_pem, key_pem
