"""Hostile and broken inputs (P11): one target can never stop the others, a stop never loses
rows, and what a target sends never raises out of the collector.

Real servers on 127.0.0.1 (tests/hostile_http.py answers), a real collector, real Delta tables;
the stop tests send a real SIGTERM to a real `brokerscope collect` process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from collectors.jolokia import JolokiaClient, error_kind_of
from collectors.recording import read_envelopes
from collectors.scraper import Collector
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.hostile_http import RESPONSE_CLASSES, trickle
from tests.jolokia_stub import activemq_items, jolokia_stub
from tests.jolokia_stub import replay as replay_route
from tests.test_resilience import tiny_fs  # noqa: F401 - the real tmpfs fixture

ROOT = Path(__file__).resolve().parents[1]
TWO_READS = [{"type": "read", "mbean": "java.lang:type=Memory", "attribute": "HeapMemoryUsage"},
             {"type": "read", "mbean": "java.lang:type=Runtime", "attribute": "Uptime"}]


async def _bulk(url: str, timeout: float = 2.0):
    async with JolokiaClient(url, name="evil", retries=0, timeout=timeout) as c:
        return await c.bulk(TWO_READS)


@pytest.fixture(scope="module")
def hostile():
    routes = {f"/{k}": v[0] for k, v in RESPONSE_CLASSES.items()} | {"/good": replay_route(activemq_items("amq-a"))}
    with jolokia_stub(routes) as s:
        yield s


@pytest.mark.parametrize("case", [k for k, v in RESPONSE_CLASSES.items() if v[1]])
def test_every_failing_answer_class_is_an_exchange_error_never_an_exception(hostile, case):
    t0 = time.monotonic()
    ex = asyncio.run(_bulk(hostile.url(f"/{case}")))
    took = time.monotonic() - t0
    assert not ex.ok and ex.error.startswith("evil: "), ex.error
    assert ex.error_kind == RESPONSE_CLASSES[case][1], ex.error
    assert error_kind_of(ex.error) == ex.error_kind  # a recording keeps only the text
    assert took < 2.0 + 1.0, f"{case} took {took:.1f}s for a 2 s exchange timeout"


def test_trickled_answer_ends_at_the_total_deadline(hostile):
    """A byte every 0.5 s: every read is quick, so only a deadline for the whole exchange ends it."""
    t0 = time.monotonic()
    ex = asyncio.run(_bulk(hostile.url("/trickle"), timeout=1.5))
    took = time.monotonic() - t0
    assert ex.error_kind == "timeout" and "whole exchange" in ex.error and "1.5s" in ex.error
    assert 1.4 < took < 2.5, took


def test_redirect_says_it_was_a_redirect_and_where(hostile):
    ex = asyncio.run(_bulk(hostile.url("/redirect-302")))
    assert "HTTP 302 redirect to 'http://127.0.0.1:1/elsewhere'" in ex.error and "final address" in ex.error


def test_unknown_charset_is_read_as_utf8(hostile):
    ex = asyncio.run(_bulk(hostile.url("/unknown-charset")))
    assert ex.error_kind == "http" and "0 items for 2 requests" in ex.error  # the body was read, not raised on


def test_every_response_class_beside_a_healthy_target_in_one_running_collector(hostile, tmp_path):
    """The whole catalogue at once, one target per class, in one collector: the healthy target
    lands every scrape answered, every hostile one lands error rows or answered rows, none raises."""
    targets = [{"name": "healthy", "kind": "activemq", "url": hostile.url("/good"), "group": "g"}]
    targets += [{"name": f"h-{k}", "kind": "activemq", "url": hostile.url(f"/{k}"), "group": "g"} for k in RESPONSE_CLASSES]
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "1s", "flush_interval": "500ms",
                            "targets": targets})
    col = Collector(cfg, record=str(tmp_path / "rec.jsonl"))
    t0 = time.monotonic()
    stats = asyncio.run(col.run(duration=3.2))
    took = time.monotonic() - t0
    assert took < 3.2 + 2.5, f"the run took {took:.1f}s for --duration 3.2s (a target held it up)"
    print(json.dumps({"catalogue": {"classes": len(RESPONSE_CLASSES), "run_s": round(took, 2)}}))
    rows = Lakehouse(tmp_path / "lh").read("bronze_jolokia").to_pylist()
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["target"], []).append(r)
    healthy = by["healthy"]
    assert len(healthy) >= 3 and sum(r["error"] is None for r in healthy) >= 3
    for k, (_route, kind) in RESPONSE_CLASSES.items():
        got = by.get(f"h-{k}", [])
        assert got, f"{k}: no row at all"
        if kind is not None:
            assert all(r["error_kind"] in (kind, "timeout") for r in got), (k, {r["error"] for r in got})
    assert len(rows) == sum(s.scrapes for s in stats.targets.values()) == len(list(read_envelopes(tmp_path / "rec.jsonl")))


# --- stops that keep data: a real SIGTERM to a real `brokerscope collect` --------------------------


def _brokerscope(tmp_path: Path, targets: list[dict], *args: str, lakehouse: Path | None = None, flush: str = "30s",
                 interval: str = "200ms") -> subprocess.Popen:
    """A real `brokerscope <args>` process on a config of `targets` (written to tmp_path/c.yaml)."""
    cfg = {"lakehouse": str(lakehouse or tmp_path / "lh"), "scrape_interval": interval, "flush_interval": flush,
           "targets": targets}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    command, *rest = args
    return subprocess.Popen([sys.executable, "-m", "brokerscope", command, "-c", str(tmp_path / "c.yaml"), *rest],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _until_scraping(stub, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Wait for the process's first request to the stub: its start (imports, config) took over 3 s
    on a loaded machine, and a signal before that is a KeyboardInterrupt in an import."""
    deadline = time.monotonic() + timeout
    while not stub.seen:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no scrape within {timeout:.0f} s of the start"
        time.sleep(0.05)


def _signal_after(stub, proc: subprocess.Popen, seconds: float, sig: int = signal.SIGTERM) -> tuple[str, str, float]:
    """Let it scrape `seconds` from its first request, send `sig`; (stdout, stderr, seconds from the
    signal to the exit)."""
    _until_scraping(stub, proc)
    time.sleep(seconds)
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return out, err, time.monotonic() - sent


@pytest.mark.slow
@pytest.mark.lab
def test_sigterm_lands_the_unflushed_batch_within_a_bound(tmp_path):
    """flush_interval 30 s: nothing is committed before the SIGTERM; after it, every scrape is."""
    with jolokia_stub({"/good": replay_route(activemq_items("amq-a")), "/slow": trickle()}) as stub:
        targets = [{"name": "amq-a", "kind": "activemq", "url": stub.url("/good"), "group": "g"},
                   {"name": "amq-slow", "kind": "activemq", "url": stub.url("/slow"), "group": "g", "timeout": "20s"}]
        proc = _brokerscope(tmp_path, targets, "collect", "-q", "--record", str(tmp_path / "rec.jsonl"))
        _out, err, stop_s = _signal_after(stub, proc, 4.0)
    assert proc.returncode == 0, err
    assert "SIGTERM: stopping" in err
    keys = Lakehouse(tmp_path / "lh").read("bronze_jolokia").column("obs_key").to_pylist()
    recorded = [e for e in read_envelopes(tmp_path / "rec.jsonl")]
    assert len(keys) == len(recorded) and len(keys) >= 5
    assert stop_s < 5.0, f"stopping took {stop_s:.1f}s"
    print(json.dumps({"sigterm": {"rows_landed": len(keys), "recorded": len(recorded), "stop_s": round(stop_s, 2)}}))


@pytest.mark.slow
@pytest.mark.lab
def test_sigterm_stops_brokerscope_run_promptly_beside_a_trickling_target(tmp_path):
    """`run` with a target that trickles its answer (the scrape never ends by itself): SIGTERM ends
    the service within seconds, and every scrape it counted is in bronze."""
    with jolokia_stub({"/good": replay_route(activemq_items("amq-a")), "/slow": trickle(every_s=0.2)}) as stub:
        targets = [{"name": "amq-a", "kind": "activemq", "url": stub.url("/good"), "group": "g"},
                   {"name": "amq-slow", "kind": "activemq", "url": stub.url("/slow"), "group": "g", "timeout": "30s"}]
        proc = _brokerscope(tmp_path, targets, "run", "--no-metrics", "--no-analysis", interval="5s")
        _out, err, stop_s = _signal_after(stub, proc, 4.0)
    assert proc.returncode == 0, err
    rows = Lakehouse(tmp_path / "lh").read("bronze_jolokia").to_pylist()
    scrapes = {m.group(1): int(m.group(2)) for m in re.finditer(r"(amq-[a-z]+): (\d+) scrapes", err)}
    assert scrapes["amq-a"] >= 1 and len(rows) == sum(scrapes.values()), (scrapes, len(rows), err[-800:])
    assert stop_s < 6.0, f"stopping took {stop_s:.1f}s"
    print(json.dumps({"run_sigterm": {"stop_s": round(stop_s, 2), "rows": len(rows)}}))


@pytest.mark.slow
@pytest.mark.lab
def test_sigint_on_a_read_only_lakehouse_without_recording_spills_a_replayable_file(tmp_path, tiny_fs):
    """The lakehouse's mount turns read-only before the first commit: at the stop the rows go to a
    spill recording (beside the lakehouse is read-only too, so the working folder), the exit says
    where and fails, and replaying the file lands every row once."""
    with jolokia_stub({"/good": replay_route(activemq_items("amq-a"))}) as stub:
        targets = [{"name": "amq-a", "kind": "activemq", "url": stub.url("/good"), "group": "g"}]
        proc = _brokerscope(tmp_path, targets, "collect", "-q", lakehouse=tiny_fs / "lh")
        _until_scraping(stub, proc)
        time.sleep(1.0)
        subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], check=True)
        out, err, _stop_s = _signal_after(stub, proc, 1.0, signal.SIGINT)
    assert proc.returncode == 1, (out, err)
    spills = sorted(tmp_path.glob("brokerscope-spill-bronze_jolokia-*.jsonl"))
    assert len(spills) == 1, (out, err)
    assert f"they are in the spill recording {spills[0]}" in out and "brokerscope replay" in out and "read-only" in out
    envs = list(read_envelopes(spills[0]))
    scrapes = int(re.search(r"amq-a: (\d+) scrapes", out).group(1))
    assert len(envs) == scrapes >= 3 and all(e["target"] == "amq-a" for e in envs)  # every scrape, none lost
    from collectors.replay import replay

    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh2"), "targets": targets})
    assert replay(cfg, spills[0], progress=False).new_rows == len(envs)
    assert replay(cfg, spills[0], progress=False).new_rows == 0  # the same keys as live rows: never twice
    print(json.dumps({"spilled_rows": len(envs)}))


def test_a_lakehouse_path_that_cannot_be_a_folder_is_one_clear_error(tmp_path):
    (tmp_path / "blocked").write_text("a file")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"lakehouse": "blocked/lh", "targets": [
        {"name": "a", "kind": "activemq", "url": "http://127.0.0.1:1/j"}]}))
    r = subprocess.run([sys.executable, "-m", "brokerscope", "collect", "-c", str(tmp_path / "c.yaml"), "--duration", "1s"],
                       capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "the lakehouse folder cannot be created (Not a directory)" in r.stderr and "point `lakehouse:`" in r.stderr


# --- configuration: secrets typed where a name belongs, configs too large to hold -------------------


@pytest.mark.parametrize("section", ["target", "dashboard", "alert-receiver"])
def test_a_password_typed_into_password_env_is_never_echoed(section, tmp_path):
    from settings import ConfigError

    secret = "Hunter2!s3cr3t"
    data = {"lakehouse": str(tmp_path), "targets": [{"name": "a", "kind": "activemq", "url": "http://127.0.0.1:1/j"}]}
    if section == "target":
        data["targets"][0] |= {"username": "u", "password_env": secret}
    elif section == "dashboard":
        data["dashboard"] = {"auth": {"mode": "basic", "password_env": secret}}
    else:
        data["alerts"] = {"receivers": [{"name": "w", "type": "webhook", "url": "http://127.0.0.1:1/h",
                                         "basic_auth": {"username": "u", "password_env": secret}}]}
    with pytest.raises(ConfigError) as e:
        config_from_dict(data)
    assert secret not in str(e.value) and "not hold the secret itself" in str(e.value), str(e.value)


def test_a_lowercase_password_env_that_is_not_set_is_not_echoed(monkeypatch):
    from settings import ConfigError

    cfg = config_from_dict({"lakehouse": "/tmp/x", "targets": [{"name": "a", "kind": "activemq", "url": "http://127.0.0.1:1/j",
                                                                 "username": "u", "password_env": "hunter2"}]})
    with pytest.raises(ConfigError) as e:
        cfg.targets[0].password()
    assert "hunter2" not in str(e.value) and "may be the secret itself" in str(e.value)
    monkeypatch.delenv("BROKER_PW", raising=False)
    cfg = config_from_dict({"lakehouse": "/tmp/x", "targets": [{"name": "a", "kind": "activemq", "url": "http://127.0.0.1:1/j",
                                                                 "username": "u", "password_env": "BROKER_PW"}]})
    with pytest.raises(ConfigError, match="environment variable BROKER_PW"):
        cfg.targets[0].password()


def test_a_100000_target_config_is_refused_quickly_and_says_how_to_split(tmp_path):
    import tracemalloc

    from settings import ConfigError

    targets = [{"name": f"t{i}", "kind": "activemq", "url": f"http://127.0.0.1:{1 + i % 60000}/j"} for i in range(100_000)]
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(ConfigError) as e:
            config_from_dict({"lakehouse": str(tmp_path), "targets": targets})
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "100,000 targets; one collector takes at most 10,000" in str(e.value) and "Split the targets" in str(e.value)
    assert time.monotonic() - t0 < 1.0 and peak < 1 << 20


@pytest.mark.slow
@pytest.mark.lab
def test_control_characters_from_a_target_reach_the_log_escaped(tmp_path):
    """A Jolokia error text with ESC/BEL/CR, quoted in the collector's warning: escaped on stderr."""
    from tests.jolokia_stub import fixed

    evil = json.dumps({"status": 500, "error": "\x1b[2J\x1b]0;pwned\x07\rall good"})
    with jolokia_stub({"/evil": fixed(500, evil)}) as stub:
        cfg = {"lakehouse": str(tmp_path / "lh"), "scrape_interval": "300ms",
               "targets": [{"name": "amq-evil", "kind": "activemq", "url": stub.url("/evil")}]}
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        r = subprocess.run([sys.executable, "-m", "brokerscope", "-v", "collect", "-c", str(tmp_path / "c.yaml"), "-q",
                            "--duration", "1s"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert "amq-evil: HTTP 500 from Jolokia: \\x1b[2J\\x1b]0;pwned\\x07\\x0dall good" in r.stderr, r.stderr[-1500:]
    assert not any(c in r.stderr + r.stdout for c in "\x1b\x07\r")
