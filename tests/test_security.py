"""Security review, as tests against real servers on 127.0.0.1:

* only read-only Jolokia requests (read, search, list, version) can leave the collector — not
  through the config, not through a pack, not through broker-supplied names, not through the client;
  and never Jolokia proxy mode (`target`), which makes an agent open JMX/JNDI connections;
* credentials never reach logs, recordings or tables: a real collection against a server that
  requires basic auth with a known password (password_env), then every table, the recording and
  the captured log output are searched for the password (and its base64 form);
* TLS is verified by default, with `ca_file` for a private CA (a real TLS server, self-signed
  certificate made in the test);
* webhook requests go to the configured URL with the configured headers only, whatever the
  broker-supplied strings in an alert say.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import logging
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.base import scrape_requests
from collectors.jolokia import READ_ONLY_TYPES, JolokiaClient, UnsafeRequestError
from collectors.packs import PACKS
from collectors.recording import read_envelopes
from collectors.sampling import DestinationSampler
from collectors.scraper import Collector
from collectors.zookeeper.wire import READ_ONLY_COMMANDS, four_letter_word
from lakehouse.store import Lakehouse
from lakehouse.tables import TABLES
from settings import ConfigError, config_from_dict
from tests.jolokia_stub import activemq_items, basic_auth, fixed, jolokia_stub, replay, self_signed_cert
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "Pw-7f3c9e1a-do-not-log"
USER = "monitor"


def run(coro):
    return asyncio.run(coro)


# --- read-only, by construction --------------------------------------------------------------------

WRITE_REQUESTS = {
    "exec": {"type": "exec", "mbean": "org.apache.activemq:type=Broker,brokerName=b", "operation": "stop"},
    "write": {"type": "write", "mbean": "java.lang:type=Memory", "attribute": "Verbose", "value": True},
    "exec-uppercase": {"type": "EXEC", "mbean": "java.lang:type=Memory", "operation": "gc"},
    "notification": {"type": "notification", "command": "register"},
    "no-type": {"mbean": "java.lang:type=Memory"},
    "type-not-a-string": {"type": ["read", "exec"], "mbean": "java.lang:type=Memory"},
    "not-an-object": "exec",
    "read-via-proxy": {"type": "read", "mbean": "java.lang:type=Memory",
                       "target": {"url": "service:jmx:rmi:///jndi/ldap://evil.example/x"}},
    "search-via-proxy": {"type": "search", "mbean": "*:*", "target": {"url": "service:jmx:rmi:///jndi/rmi://10.0.0.1:1099/jmxrmi"}},
}


@pytest.mark.parametrize("case", list(WRITE_REQUESTS), ids=list(WRITE_REQUESTS))
def test_client_refuses_anything_but_read_only_and_sends_nothing(case):
    with jolokia_stub({"/jolokia": fixed(200, "[]")}) as s:
        async def go():
            async with JolokiaClient(s.url("/jolokia"), name="amq-a") as c:
                return await c.bulk([{"type": "version"}, WRITE_REQUESTS[case]])

        with pytest.raises(UnsafeRequestError, match="request 1") as e:
            run(go())
        assert s.seen == []  # refused before anything left the process
    assert "never" in str(e.value)


@pytest.mark.parametrize("kind", sorted(PACKS))
def test_every_pack_sends_only_read_only_requests(kind):
    pack = PACKS[kind]
    for broker_name in ("*", "b1", 'we"ird,name=x'):
        for r in scrape_requests(pack, broker_name):
            assert r["type"] in READ_ONLY_TYPES and "target" not in r and "operation" not in r and "value" not in r


def test_broker_supplied_destination_names_cannot_change_the_request_type():
    """In sampled mode the collector builds reads from MBean names the broker returned: hostile names
    (quotes, commas, '=', type=exec lookalikes) still only produce reads and searches."""
    pack = PACKS["activemq"]
    sampler = DestinationSampler(pack.destination_request(), pack.backlog_attribute, limit=4)
    names = [f'org.apache.activemq:type=Broker,brokerName=b,destinationType=Queue,destinationName="q{i}\\",type=exec,x=\\"",'
             for i in range(3)]
    names += [f"org.apache.activemq:type=Broker,brokerName=b,destinationType=Queue,destinationName=q{i}" for i in range(8)]
    value = {n: {"QueueSize": i} for i, n in enumerate(names)}
    first = sampler.requests()
    sampler.observe(first, [{"request": first[0], "status": 200, "value": value}])
    assert sampler.sampled
    for _ in range(30):
        reqs = sampler.requests()
        assert reqs and all(r["type"] in ("read", "search") and set(r) <= {"type", "mbean", "attribute", "config"} for r in reqs)
        sampler.observe(reqs, [{"request": {"type": "search", "mbean": "x"}, "status": 200, "value": names}])


@pytest.mark.parametrize("extra", [
    {"requests": [{"type": "exec", "mbean": "x:y=z", "operation": "stop"}]},
    {"operations": ["stop"]},
    {"type": "exec"},
    {"jolokia": {"type": "write"}},
    {"proxy_target": "service:jmx:rmi:///jndi/ldap://x"},
], ids=["requests", "operations", "type", "jolokia", "proxy_target"])
def test_config_cannot_express_a_request(extra):
    target = {"name": "amq-a", "kind": "activemq", "url": "http://127.0.0.1:8161/api/jolokia"} | extra
    with pytest.raises(ConfigError, match=r"targets\[0\]\.\w+: unknown key"):
        config_from_dict({"targets": [target]})


def test_only_the_jolokia_client_and_zookeeper_wire_talk_http():
    """Static check: every HTTP call in collectors/ lives in the two modules that enforce read-only."""
    allowed = {"collectors/jolokia.py", "collectors/zookeeper/wire.py"}
    offenders = []
    for path in (ROOT / "collectors").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("post", "put", "patch", "delete", "request", "stream", "get") and \
                    isinstance(node.func.value, (ast.Name, ast.Attribute)) and \
                    any(w in ast.unparse(node.func.value).lower() for w in ("client", "http", "httpx", "session")):
                if rel not in allowed:
                    offenders.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert offenders == []


@pytest.mark.parametrize("command", ["kill", "srst", "crst", "stmk", "dump", "wchp", "conf", "set_trace_mask", "reset"])
def test_zookeeper_commands_that_change_state_are_refused(command):
    assert command not in READ_ONLY_COMMANDS
    with pytest.raises(ValueError, match="refusing to send"):
        run(four_letter_word("zk1", f"zk://127.0.0.1:{free_port()}", command, 1.0))


def test_zookeeper_session_is_read_only_by_construction():
    from collectors.zookeeper.coordination import ReadOnlyZk

    public = {n for n in vars(ReadOnlyZk) if not n.startswith("_")}
    assert public <= {"ensure_started", "get", "get_children", "exists", "close"}, public


# --- credentials never logged or written ---------------------------------------------------------


def _all_strings_of_every_table(lh: Lakehouse) -> list[str]:
    out = []
    for name in TABLES:
        if not lh.exists(name):
            continue
        for col in lh.read(name).columns:
            out.extend(str(v) for v in col.to_pylist() if v is not None)
    return out


def _raw_bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def _secrets() -> list[str]:
    return [PASSWORD, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()]


def test_credentials_never_reach_logs_recordings_or_tables(tmp_path, caplog, capfd, monkeypatch):
    monkeypatch.setenv("P8_AMQ_PASSWORD", PASSWORD)
    monkeypatch.setenv("P8_WRONG_PASSWORD", PASSWORD + "-wrong")
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    caplog.set_level(logging.DEBUG)  # httpx, httpcore and ours, at their chattiest
    good = basic_auth(USER, PASSWORD, replay(activemq_items("amq-a")))
    with jolokia_stub({"/api/jolokia": good}) as s:
        auth = {"username": USER, "password_env": "P8_AMQ_PASSWORD"}
        cfg = config_from_dict({
            "lakehouse": str(tmp_path / "lh"), "scrape_interval": "300ms", "flush_interval": "300ms",
            "targets": [
                {"name": "amq-a", "kind": "activemq", "url": s.url("/api/jolokia"), "group": "g"} | auth,
                {"name": "amq-file", "kind": "activemq", "url": s.url("/api/jolokia"), "group": "g",
                 "username": USER, "password_file": str(tmp_path / "pw")},
                {"name": "amq-wrong", "kind": "activemq", "url": s.url("/api/jolokia"), "group": "g",
                 "username": USER, "password_env": "P8_WRONG_PASSWORD"},
                {"name": "amq-down", "kind": "activemq", "url": f"http://127.0.0.1:{free_port()}/api/jolokia", "group": "g"} | auth,
            ]})
        rec = tmp_path / "rec.jsonl"
        stats = run(Collector(cfg, record=str(rec)).run(duration=1.2))
        sent_auth = [h.get("Authorization") for _p, h in s.seen]
    assert stats.targets["amq-a"].errors == 0 and stats.targets["amq-file"].errors == 0  # the password was used …
    assert stats.targets["amq-wrong"].last_error and "401" in stats.targets["amq-wrong"].last_error
    assert any(a and a.startswith("Basic ") for a in sent_auth)
    lh = Lakehouse(tmp_path / "lh")
    assert lh.count("bronze_jolokia") >= 8
    out, err = capfd.readouterr()
    places = {
        "tables (every column of every row)": "\n".join(_all_strings_of_every_table(lh)),
        "table files (parquet + _delta_log)": _raw_bytes_under(tmp_path / "lh").decode("latin-1"),
        "recording": rec.read_text(),
        "log records": caplog.text + "\n".join(str(r.args) for r in caplog.records),
        "stdout/stderr": out + err,
        "collector stats": repr(stats),
        "config repr": repr(cfg) + cfg.model_dump_json(),
    }
    for where, text in places.items():
        for secret in _secrets():
            assert secret not in text, f"the password leaked into {where}"
    assert len(list(read_envelopes(rec))) >= 8


@pytest.mark.slow
def test_credentials_never_reach_silver_and_gold(tmp_path, monkeypatch, capfd, spark):
    """The same, after `brokerscope analyze` (Spark) has built silver and gold from that bronze: the
    command run in this process (its Spark session is the tests' local one, already started, whose
    JVM writes to this process's stdout/stderr too), everything it printed captured at the fds."""
    monkeypatch.setenv("P8_AMQ_PASSWORD", PASSWORD)
    with jolokia_stub({"/api/jolokia": basic_auth(USER, PASSWORD, replay(activemq_items("amq-a")))}) as s:
        cfg_text = (f"lakehouse: {tmp_path / 'lh'}\nscrape_interval: 300ms\nflush_interval: 300ms\ntargets:\n"
                    f"  - {{name: amq-a, kind: activemq, url: '{s.url('/api/jolokia')}', group: g, "
                    f"username: {USER}, password_env: P8_AMQ_PASSWORD}}\n")
        (tmp_path / "c.yaml").write_text(cfg_text)
        from settings import load_config

        run(Collector(load_config(tmp_path / "c.yaml")).run(duration=1.0))
    from brokerscope.cli import main

    root_logger = logging.getLogger()
    level, handlers = root_logger.level, list(root_logger.handlers)
    try:
        rc = main(["analyze", "--config", str(tmp_path / "c.yaml")])
    finally:  # main() configures logging as the command does; leave the test run's as it was
        root_logger.setLevel(level)
        root_logger.handlers[:] = handlers
    out, err = capfd.readouterr()
    assert rc == 0, err[-3000:]
    assert "broker_state:" in out and "· bronze → silver" in err  # its counts and progress were captured
    lh = Lakehouse(tmp_path / "lh")
    assert lh.count("broker_state") > 0
    text = "\n".join(_all_strings_of_every_table(lh)) + _raw_bytes_under(tmp_path / "lh").decode("latin-1") + out + err
    for secret in _secrets():
        assert secret not in text


def test_password_in_url_is_refused_before_it_can_be_logged():
    with pytest.raises(ConfigError) as e:
        config_from_dict({"targets": [{"name": "a", "kind": "activemq", "url": f"http://{USER}:{PASSWORD}@10.0.0.5:8161/api/jolokia"}]})
    assert PASSWORD not in str(e.value) and "password_env" in str(e.value)


# --- TLS ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_stub(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = self_signed_cert(folder)
    with jolokia_stub({"/api/jolokia": replay(activemq_items("amq-a"))}, tls=(cert, key)) as s:
        yield s, cert


def _collect_once(tmp_path: Path, target: dict) -> dict:
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "300ms", "flush_interval": "200ms",
                            "targets": [{"name": "amq-tls", "kind": "activemq", "group": "g"} | target]})
    run(Collector(cfg).run(duration=0.35))
    (row,) = Lakehouse(tmp_path / "lh").read("bronze_jolokia").to_pylist()[:1]
    return row


def test_tls_is_verified_by_default(tls_stub, tmp_path):
    s, _cert = tls_stub
    row = _collect_once(tmp_path, {"url": s.url("/api/jolokia")})
    assert row["error_kind"] == "tls" and row["response_json"] is None
    assert row["error"].startswith("amq-tls: TLS verification failed") and "set ca_file" in row["error"]


def test_tls_with_ca_file_works(tls_stub, tmp_path):
    s, cert = tls_stub
    row = _collect_once(tmp_path, {"url": s.url("/api/jolokia"), "ca_file": str(cert)})
    assert row["error"] is None and "amq-a" in row["response_json"]


def test_tls_with_another_ca_still_fails(tls_stub, tmp_path):
    s, _cert = tls_stub
    other, _key = self_signed_cert(tmp_path)
    row = _collect_once(tmp_path, {"url": s.url("/api/jolokia"), "ca_file": str(other)})
    assert row["error_kind"] == "tls"


def test_tls_verification_off_only_when_asked(tls_stub, tmp_path):
    s, _cert = tls_stub
    row = _collect_once(tmp_path, {"url": s.url("/api/jolokia"), "verify_tls": False})
    assert row["error"] is None
    assert config_from_dict({"targets": [{"name": "a", "kind": "kafka", "url": "https://h/j"}]}).targets[0].verify_tls is True


# --- webhooks: URL and headers from config only --------------------------------------------------


def test_webhook_goes_to_the_configured_url_with_configured_headers_only(tmp_path, monkeypatch):
    from alerts.receivers import Notification, Receiver
    from alerts.rules import Alert
    from settings.alerts import ReceiverConfig

    hostile = "x\r\nX-Injected: 1\r\nHost: evil.example"
    now = datetime(2026, 11, 22, tzinfo=timezone.utc)
    alert = Alert(labels={"alertname": "SplitBrain", "destination": hostile, "url": "http://evil.example/hook"},
                  annotations={"summary": hostile, "dashboard": "http://evil.example/"}, starts_at=now)
    n = Notification("nid-1", "oncall", "{}:{}", {"alertname": "SplitBrain"}, (alert,), "new", "http://dash.local", now)
    monkeypatch.setenv("P8_HOOK_TOKEN", "tok-123")
    with jolokia_stub({"/hooks/brokerscope": fixed(200, "{}")}) as s:
        cfg = ReceiverConfig(name="oncall", type="webhook", url=s.url("/hooks/brokerscope"),
                             headers={"X-Team": "sre"}, bearer_token_env="P8_HOOK_TOKEN")
        res = Receiver(cfg).send(n)
        seen = list(s.seen)
    assert res.ok, res.error
    assert [p for p, _h in seen] == ["/hooks/brokerscope"]
    headers = {k.lower(): v for k, v in seen[0][1].items()}
    assert headers["x-team"] == "sre" and headers["authorization"] == "Bearer tok-123"
    assert "x-injected" not in headers and headers["host"].startswith("127.0.0.1")
    with pytest.raises(ValueError, match="carries a secret"):
        ReceiverConfig(name="r", type="webhook", url="http://h/x", headers={"Authorization": "Bearer abc"})
