"""The exporter's HTTP endpoint, shaped as Prometheus' own servers: the metrics on `/metrics`
only, `/-/healthy` (the process answers) and `/-/ready` (its state can be read), 404 elsewhere.

    srv = serve_metrics(LakehouseState(lh), "127.0.0.1:0")
    wait_metrics(srv.url)   # http://127.0.0.1:PORT/metrics
    srv.stop()
"""

from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Callable
from wsgiref.simple_server import make_server

from prometheus_client import CollectorRegistry, ProcessCollector, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer, _get_best_family, _SilentHandler

from alerts.exporter import DEFAULT_MAX_DESTINATION_SERIES, SnapshotCollector, StateSnapshot
from settings.service import parse_listen

METRICS_PATH = "/metrics"
HEALTHY_PATH = "/-/healthy"
READY_PATH = "/-/ready"


class MetricsListenError(OSError):
    """/metrics cannot be served where configured (port taken, address not local)."""


def _text(start_response, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]


def routed_app(metrics_app, ready: Callable[[], bool]):
    """WSGI: /metrics → the metrics; /-/healthy → 200; /-/ready → 200 once `ready()`, else 503; 404 elsewhere."""

    def app(environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        if path == METRICS_PATH:
            return metrics_app(environ, start_response)
        if path == HEALTHY_PATH:
            return _text(start_response, "200 OK", "brokerscope is Healthy.\n")
        if path == READY_PATH:
            if ready():
                return _text(start_response, "200 OK", "brokerscope is Ready.\n")
            return _text(start_response, "503 Service Unavailable",
                         "brokerscope is not ready: its state cannot be read yet.\n")
        return _text(start_response, "404 Not Found",
                     f"brokerscope: no page {path[:100]}; metrics are on {METRICS_PATH} "
                     f"({HEALTHY_PATH}, {READY_PATH})\n")

    return app


def snapshot_readable(snapshot: Callable[[], StateSnapshot]) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            snapshot()
        except Exception:  # noqa: BLE001 - not ready is the answer, the reason is in the /metrics log line
            return False
        return True

    return ready


@dataclass
class MetricsServer:
    """The /metrics HTTP endpoint on its own thread."""

    host: str
    port: int
    server: object
    thread: threading.Thread

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url + METRICS_PATH

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(snapshot: Callable[[], StateSnapshot], listen: str = "127.0.0.1:9464",
                  max_destination_series: int = DEFAULT_MAX_DESTINATION_SERIES,
                  ready: Callable[[], bool] | None = None) -> MetricsServer:
    """Start serving (loopback unless told otherwise); its own registry, so only brokerscope_
    families and the process' own (process_*) are exposed. `ready`: what /-/ready asks (default:
    the snapshot can be read)."""

    host, port = parse_listen(listen)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot, max_destination_series))
    ProcessCollector(registry=registry)

    class Server(ThreadingWSGIServer):
        """One class per server: the address family is set for this host (IPv4 or IPv6)."""

    try:
        Server.address_family, addr = _get_best_family(host, port)
        server = make_server(addr, port, routed_app(make_wsgi_app(registry), ready or snapshot_readable(snapshot)),
                             Server, handler_class=_SilentHandler)
    except OSError as e:
        raise MetricsListenError(f"cannot serve /metrics on {host}:{port}: {e.strerror or e}; "
                                 "choose another `service.metrics_listen` (port 0 picks a free one)") from None
    thread = threading.Thread(target=server.serve_forever, name="brokerscope-metrics", daemon=True)
    thread.start()
    return MetricsServer(host, server.server_address[1], server, thread)


def wait_metrics(url: str, timeout: float = 10.0) -> str:
    """GET /metrics until it answers (for tests and the bench)."""

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
