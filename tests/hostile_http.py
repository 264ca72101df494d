"""Answers a hostile or broken Jolokia endpoint gives, as routes for tests/jolokia_stub.py.

`RESPONSE_CLASSES` is the catalogue the fuzz suite draws from and the collector test serves all at
once beside a healthy target: each entry is (route, the error_kind the client must report, or None
when the answer is a Jolokia array whose items are wrong and the scrape itself is answered)."""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler

from tests.jolokia_stub import FIXTURES, Route, fixed, huge, replay, send


def raw(status: int, headers: dict[str, str], body: bytes) -> Route:
    """Exactly these headers and body (Content-Length added unless given)."""
    def route(h: BaseHTTPRequestHandler, _body: bytes) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        if "Content-Length" not in headers:
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return route


def trickle(every_s: float = 0.5, total_s: float = 30.0) -> Route:
    """A valid JSON start, then one byte every `every_s`: each read is quick, the answer never ends."""
    def route(h: BaseHTTPRequestHandler, _body: bytes) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        end = time.monotonic() + total_s
        try:
            h.wfile.write(b"[")
            h.wfile.flush()
            while time.monotonic() < end:
                time.sleep(every_s)
                h.wfile.write(b" ")
                h.wfile.flush()
        except OSError:
            pass  # the client gave up: what we want

    return route


def per_request(make_item) -> Route:
    """A well-formed bulk array: one item per request, built by `make_item(request)`."""
    def route(h: BaseHTTPRequestHandler, body: bytes) -> None:
        out = [make_item(r) for r in json.loads(body)]
        send(h, 200, json.dumps(out).encode())

    return route


def close_after_headers() -> Route:
    def route(h: BaseHTTPRequestHandler, _body: bytes) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.flush()
        h.connection.shutdown(socket.SHUT_RDWR)

    return route


def _poison(value, attrs: dict):
    """`value` with every attribute named in `attrs` (at any depth) replaced by its poison."""
    if isinstance(value, dict):
        return {k: attrs[k] if k in attrs else _poison(v, attrs) for k, v in value.items()}
    return value


def poisoned(attrs: dict, capture: str = "activemq_bulk_master_slave.json") -> Route:
    """A captured ActiveMQ master's answer with attributes replaced by what a broken broker sends."""
    captured = json.loads((FIXTURES / capture).read_text())["amq-a"]
    return replay([{**i, "value": _poison(i.get("value"), attrs)} for i in captured])


RESPONSE_CLASSES: dict[str, tuple[Route, str | None]] = {
    "unknown-charset": (raw(200, {"Content-Type": "application/json; charset=x-no-such-charset"}, b"[]"), "http"),
    "charset-utf-7-garbage": (raw(200, {"Content-Type": "application/json; charset=utf-7"}, b"+\xff\xfe-[]"), "not_json"),
    "trickle": (trickle(), "timeout"),
    "redirect-302": (raw(302, {"Location": "http://127.0.0.1:1/elsewhere"}, b""), "http"),
    "redirect-no-location": (raw(301, {}, b""), "http"),
    "html-200": (fixed(200, "<html><body>login</body></html>", "text/html"), "not_json"),
    "empty-200": (fixed(200, b""), "not_json"),
    "truncated": (fixed(200, '[{"status":200,"value":{"a":1'), "truncated"),
    "closed-after-headers": (close_after_headers(), "truncated"),
    "gzip-bomb-header": (raw(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, b"\x1f\x8b not gzip"), "other"),
    "enormous": (huge(40 << 20), "http"),
    "json-object": (fixed(200, '{"status":200,"value":1}'), "http"),
    "json-number": (fixed(200, "12"), "http"),
    "json-nan": (fixed(200, "NaN"), "http"),
    "nested-deep": (fixed(200, "[" * 100_000 + "]" * 100_000), "not_json"),
    "http-500-text": (fixed(500, "boom", "text/plain"), "not_json"),
    # answered arrays with wrong items: the scrape is answered, the items are facts to check
    "items-not-objects": (per_request(lambda r: "x"), None),
    "status-as-string": (per_request(lambda r: {"request": r, "status": "200", "value": {"Slave": False}}), None),
    "values-infinite": (poisoned({"TotalMessageCount": float("inf"), "MemoryPercentUsage": -float("inf"),
                                  "QueueSize": float("nan")}), None),
    "values-huge-int": (poisoned({"TotalMessageCount": 2**63, "QueueSize": 2**64 + 1, "UptimeMillis": -(2**70)}), None),
    "values-wrong-type": (poisoned({"BrokerName": 42, "BrokerId": ["x"], "Slave": "maybe", "Name": {"a": 1},
                                    "EnqueueCount": "12x"}), None),
    "values-bad-unicode": (poisoned({"BrokerName": "amq-\ud800-x"}), None),
    # the store's Name becomes the HA group's name when none is configured: shown by timeline
    "values-control-chars": (poisoned({"BrokerName": "amq\x1b[2J\x07\rfake", "Name": "kahadb\x1b]0;owned\x07"},
                                      "activemq_topics_health_store.json"), None),
}
