"""Stdlib clients the labs use to talk to their brokers: Jolokia over HTTP, STOMP to put messages on
a queue (deliberately independent of collectors/, which sits a floor up)."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import urllib.parse
from typing import Any, Callable, Iterable

from infra.processes import LabError

__all__ = ["jolokia_request", "stomp_send"]


# --------------------------------------------------------------------------------------------------
# Minimal Jolokia client (stdlib only; deliberately independent of collectors/)
# --------------------------------------------------------------------------------------------------


def jolokia_request(
    url: str,
    body: Any = None,
    *,
    get_path: str | None = None,
    user: str | None = None,
    password: str | None = None,
    timeout: float = 2.0,
    headers: dict[str, str] | None = None,
    on_sent: Callable[[], None] | None = None,
) -> tuple[int, Any]:
    """POST ``body`` (JSON) to ``url`` or GET ``url/get_path``. Returns (HTTP status, parsed JSON or text).

    HTTP errors are returned, not raised; connection problems raise ``OSError``. ``on_sent`` is called
    once the whole request is in the kernel's hands, before the answer is awaited: a probe that times
    a stalled JVM needs that moment, not the one before its own thread got to send.
    """
    hdrs = dict(headers or {})
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        hdrs["Authorization"] = f"Basic {token}"
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    if get_path is not None:
        method, data, path = "GET", None, path.rstrip("/") + "/" + get_path.lstrip("/")
    else:
        hdrs.setdefault("Content-Type", "application/json; charset=utf-8")
        method, data = "POST", json.dumps(body).encode()
    if parts.query:
        path += "?" + parts.query
    connection = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = connection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=hdrs)
        if on_sent is not None:
            on_sent()
        resp = conn.getresponse()
        status, raw = resp.status, resp.read()
    except http.client.HTTPException as exc:  # a malformed answer is a connection problem to the callers
        raise OSError(f"{url}: {type(exc).__name__}: {exc}") from exc
    finally:
        conn.close()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


# --------------------------------------------------------------------------------------------------
# STOMP (stdlib) to put messages on the lab brokers
# --------------------------------------------------------------------------------------------------


def _stomp_write(sock: socket.socket, command: str, headers: dict[str, str], body: bytes = b"") -> None:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")

    head = "".join(f"{esc(k)}:{esc(v)}\n" for k, v in headers.items())
    sock.sendall(f"{command}\n{head}\n".encode() + body + b"\0")


def _stomp_read(sock: socket.socket, buf: bytearray) -> tuple[str, dict[str, str], bytes]:
    while True:
        while buf[:1] in (b"\n", b"\r"):  # heart-beats
            del buf[:1]
        end = buf.find(b"\0")
        if end >= 0:
            frame = bytes(buf[:end])
            del buf[: end + 1]
            head, _, body = frame.partition(b"\n\n")
            lines = head.decode("utf-8", "replace").split("\n")
            hdrs = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
            return lines[0].strip(), hdrs, body
        chunk = sock.recv(65536)
        if not chunk:
            raise LabError("STOMP connection closed by broker")
        buf.extend(chunk)


def stomp_send(
    url: str,
    destination: str,
    bodies: Iterable[str],
    *,
    persistent: bool = True,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> int:
    """Send text messages over STOMP 1.2 (``url`` = ``BrokerProcess.stomp_url``; only the master listens).

    ``destination`` like ``/queue/BROKERSCOPE.LAB``. Every SEND waits for its RECEIPT, so the messages
    are stored when this returns. Returns the number of messages sent.
    """
    parsed = urllib.parse.urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port
    if port is None:
        raise ValueError(f"no port in {url!r}")
    sent = 0
    buf = bytearray()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        _stomp_write(sock, "CONNECT", {"accept-version": "1.2", "host": "localhost", "heart-beat": "0,0"})
        cmd, hdrs, body = _stomp_read(sock, buf)
        if cmd != "CONNECTED":
            raise LabError(f"STOMP CONNECT failed: {cmd} {hdrs} {body[:200]!r}")
        for body_text in bodies:
            data = body_text.encode("utf-8")
            frame_headers = {
                "destination": destination,
                "persistent": "true" if persistent else "false",
                "content-type": "text/plain;charset=utf-8",
                "content-length": str(len(data)),
                "receipt": f"m{sent}",
                **(headers or {}),
            }
            _stomp_write(sock, "SEND", frame_headers, data)
            cmd, hdrs, body = _stomp_read(sock, buf)
            if cmd != "RECEIPT":
                raise LabError(f"STOMP SEND failed: {cmd} {hdrs} {body[:200]!r}")
            sent += 1
        _stomp_write(sock, "DISCONNECT", {"receipt": "bye"})
        with contextlib.suppress(OSError, LabError):
            _stomp_read(sock, buf)
    return sent
