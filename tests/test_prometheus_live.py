"""/metrics against the real tools: `promtool check metrics` on what the endpoint serves, and a
real Prometheus (Debian `prometheus`) scraping it, queried through its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from alerts.exporter import LakehouseState
from alerts.metrics_server import serve_metrics, wait_metrics
from tests.servers import free_port, stop_process
from tests.test_exporter import T0, drill_lakehouse

pytestmark = [
    pytest.mark.slow,
    pytest.mark.lab,
    pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("promtool")),
                       reason="Debian `prometheus` (with promtool) not installed; see infra/setup.sh"),
]


@pytest.fixture
def exporter(tmp_path):
    """/metrics on a free loopback port, serving the recorded drill from Delta tables."""
    lh = drill_lakehouse(tmp_path / "lh")
    server = serve_metrics(LakehouseState(lh, clock=lambda: T0 + timedelta(minutes=1)), "127.0.0.1:0")
    try:
        yield server
    finally:
        server.stop()


def test_metrics_endpoint_passes_promtool(exporter):
    text = wait_metrics(exporter.url)
    assert exporter.url.startswith("http://127.0.0.1:")
    assert "brokerscope_group_no_active_instance" in text and "process_cpu_seconds_total" in text
    res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), res.stdout + res.stderr


def test_promtool_fails_on_a_broken_exposition():
    """The check above can fail: promtool rejects a counter without _total."""
    bad = "# HELP x_requests requests\n# TYPE x_requests counter\nx_requests 1\n"
    res = subprocess.run(["promtool", "check", "metrics"], input=bad, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "_total" in (res.stdout + res.stderr)


@contextmanager
def prometheus(tmp: Path, target: str, rule_files: Sequence[Path] = ()) -> Iterator[str]:
    """A real Prometheus on a free loopback port scraping `target` (host:port) every second,
    evaluating `rule_files` every second; yields its base URL; stopped by PID."""
    port = free_port()
    cfg = tmp / "prometheus.yml"
    cfg.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        + (f"rule_files: {json.dumps([str(p) for p in rule_files])}\n" if rule_files else "")
        + "scrape_configs:\n"
        f"  - job_name: brokerscope\n    static_configs: [{{targets: ['{target}']}}]\n"
    )
    log = open(tmp / "prometheus.log", "wb")
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not become ready:\n{(tmp / 'prometheus.log').read_text()[-3000:]}")
            time.sleep(0.2)
        yield base
    finally:
        stop_process(proc, 20)
        log.close()


def query(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def wait_query(base: str, promql: str, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        result = query(base, promql)
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def test_real_prometheus_scrapes_the_series(exporter, tmp_path):
    with prometheus(tmp_path, f"127.0.0.1:{exporter.port}") as base:
        up = wait_query(base, 'up{job="brokerscope"} == 1')
        assert up, "Prometheus never scraped /metrics successfully"
        roles = wait_query(base, 'brokerscope_instance_role{group="store-1"}')
        assert {(r["metric"]["broker"], r["metric"]["role"]) for r in roles} == {("amq-a", "slave"), ("amq-b", "master")}
        assert {r["metric"]["instance"] for r in roles} == {f"127.0.0.1:{exporter.port}"}  # Prometheus' own, untouched
        assert not any("exported_instance" in r["metric"] for r in roles)
        active = query(base, 'sum by (group) (brokerscope_instance_active)')
        assert [(r["metric"]["group"], r["value"][1]) for r in active] == [("store-1", "1")]
        outage = query(base, 'brokerscope_group_no_active_instance{group="store-1"}')
        assert [r["value"][1] for r in outage] == ["0"]
        failovers = query(base, 'brokerscope_group_failovers_total')
        assert [r["value"][1] for r in failovers] == ["1"]
        errors = query(base, 'brokerscope_scrape_errors_total{broker="amq-a"}')
        assert [r["value"][1] for r in errors] == ["6"]
        build = query(base, "brokerscope_build_info")
        assert [(r["metric"]["version"], r["value"][1]) for r in build] == [(version("brokerscope"), "1")]
