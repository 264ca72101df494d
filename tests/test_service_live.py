"""`brokerscope run` for real: the real ActiveMQ pair, the real alert pipeline, a webhook receiver
on loopback. A kill -9 of the master must reach the webhook within two scrape intervals plus two
seconds (asserted with 2 s of slack for this shared 2-core machine; bench/bench_alert_latency.py
measures it over many drills). Then the slow path: one Spark analysis run turns the same scrapes
into a gold failover, shown on /metrics and sent as FailoverHappened. And the CLI process stops on
SIGTERM with everything it collected in bronze."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from alerts.metrics_server import wait_metrics
from bench.bench_alert_latency import GROUP, WebhookReceiver, drill, relevant_firing, settle, write_config
from brokerscope.service import Service
from lakehouse.store import Lakehouse
from settings import load_config
from tests.lab_fixtures import activemq_pair, agent_jar, requires_lab  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.lab]

INTERVAL = 1.0
BOUND = 2 * INTERVAL + 2  # the promise
SLACK = 2.0  # shared CPU: the test must not flake; the bench reports the real figures


def wait_until(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


@requires_lab
def test_kill_master_reaches_the_webhook_then_gold_follows(activemq_pair, tmp_path, spark):
    pair = activemq_pair
    hook = WebhookReceiver()
    cfg = load_config(write_config(tmp_path, pair, hook.url, INTERVAL, 0, analysis=False, analysis_interval=30))
    lines: list[str] = []
    svc = Service(cfg, progress=lines.append, spark=spark)
    runner = threading.Thread(target=svc.run, name="service", daemon=True)
    runner.start()
    try:
        wait_until(lambda: svc.metrics_server is not None and all(svc.live.latest(n) for n in pair.names), 30,
                   f"the service never saw both brokers: {lines}")
        assert svc.metrics_server.url.startswith("http://127.0.0.1:")
        settle(pair, hook)
        r = drill(pair, hook)
        assert r["latency_s"] is not None, f"no NoActiveInstance/FailoverHappened webhook after the kill: {lines}"
        assert r["latency_s"] <= BOUND + SLACK, f"fault → webhook {r['latency_s']:.3f} s (bound {BOUND:g} s + {SLACK:g} s slack)"
        first = next(d for d in hook.deliveries if d.arrived >= r["kill_ts"] and relevant_firing(d))
        p = first.payload
        assert p["version"] == "4" and p["status"] == "firing" and p["receiver"] == "bench"
        assert {a["labels"]["alertname"] for a in p["alerts"]} & {"NoActiveInstance", "FailoverHappened"}
        assert any(f"{r['killed']} not answering" in x for x in lines)

        # the slow path: Spark turns the same scrapes into a gold failover; /metrics and a FailoverHappened follow
        svc.collector.flush()
        counts = svc.analyze_once()
        assert counts["failover_events"] >= 1
        text = wait_metrics(svc.metrics_server.url)
        assert re.search(r'brokerscope_group_failovers_total\{group="store-1",kind="activemq"\} [1-9]', text), text
        assert f'brokerscope_instance_role{{broker="{r["new_master"]}",group="store-1",kind="activemq",role="master"}} 1.0' in text
        assert 'brokerscope_analysis_runs_total 1.0' in text
        svc.tick()  # the service ticks after every scrape anyway (it may have sent it during the run already)
        got = hook.wait_for(lambda d: "FailoverHappened" in relevant_firing(d, GROUP, since=r["kill_ts"]), after=r["kill_ts"], timeout=30)
        assert got is not None, f"FailoverHappened never sent: {lines}"
    finally:
        svc.stop()
        runner.join(60)
        hook.stop()
    assert not runner.is_alive()
    stats = svc.collector.stats
    scrapes = sum(s.scrapes for s in stats.targets.values())
    assert Lakehouse(cfg.lakehouse_root()).count("bronze_jolokia") == scrapes  # all landed on the way out


def test_sigterm_stops_the_cli_with_everything_in_bronze(tmp_path):
    """A target that refuses connections (no JVM needed): the service runs, says so, and on SIGTERM
    lands every scrape in bronze and exits 0."""
    port = _closed_port()
    (tmp_path / "c.yaml").write_text(
        "lakehouse: ./lh\nscrape_interval: 500ms\n"
        f"targets:\n  - {{name: gone, kind: activemq, url: 'http://127.0.0.1:{port}/api/jolokia', group: g}}\n"
        "service: {metrics_listen: '127.0.0.1:0', analysis: false}\n"
    )
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "brokerscope", "run", "-c", str(tmp_path / "c.yaml")],
                                cwd=Path(__file__).resolve().parents[1], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_until(lambda: "gone not answering: gone: connection refused" in log.read_text(), 30, log.read_text())
        url = re.search(r"serving (http://127\.0\.0\.1:\d+/metrics)", log.read_text()).group(1)
        assert 'brokerscope_group_no_active_instance{group="g",kind="activemq"} 1.0' in wait_metrics(url)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text()
    assert "SIGTERM: stopping (landing what was collected in bronze)" in text
    # no `alerts.receivers` in this config: said once at the start, the rules still run
    assert text.count("warning: alerts: ") == 1 and "alerts.receivers is empty" in text and "nobody is notified" in text
    m = re.search(r"stopped: (\d+) bronze rows in \d+ commits \(gone: (\d+) scrapes, (\d+) errors\)", text)
    assert m and m.group(1) == m.group(2) == m.group(3), text
    assert Lakehouse(tmp_path / "lh").count("bronze_jolokia") == int(m.group(1))


def _closed_port() -> int:
    """A loopback port nobody listens on (bound then released)."""
    from tests.servers import free_port

    return free_port()
