"""Receivers (alerts/receivers.py) on the wire, each against a real local HTTP server: the webhook
payload checked by a strict JSON schema of Alertmanager's v4 message (ANCHORS §1.6), PagerDuty
Events v2 checked by a server that validates the shape as PagerDuty documents it, and the
receiver config's safety rules."""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import pytest

from alerts.pipeline import AlertPipeline, group_key_of
from alerts.receivers import (IDEMPOTENCY_HEADER, Notification, Receiver, alertmanager_alerts, quote_meta,
                              webhook_payload)
from alerts.rules import Alert
from lakehouse.store import Lakehouse
from settings import ConfigError, config_from_dict
from settings.alerts import ReceiverConfig
from tests.alert_servers import RecordingReceiver

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "alerts" / "alertmanager_webhook_v4.schema.json").read_text())
NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


def check_v4(body: dict) -> None:
    jsonschema.validate(body, SCHEMA, format_checker=jsonschema.FormatChecker())


def notification(*alerts: Alert, receiver="ops.hook", reason="first notification") -> Notification:
    gl = {"alertname": alerts[0].labels["alertname"], "cluster": alerts[0].labels["cluster"]}
    return Notification("nid-1", receiver, group_key_of(gl), gl, tuple(alerts), reason, "http://bs.example", NOW)


FIRING = Alert({"alertname": "SplitBrain", "severity": "critical", "cluster": "store-1", "group": "store-1"},
               {"summary": "split brain in store-1", "dashboard": "http://dash/incident/i1"}, NOW - timedelta(seconds=30))
RESOLVED = Alert({"alertname": "SplitBrain", "severity": "critical", "cluster": "store-1", "broker": "amq-b"},
                 {"summary": "split brain, b side"}, NOW - timedelta(seconds=60), NOW - timedelta(seconds=5))


# --- webhook ------------------------------------------------------------------------------------


def test_webhook_payload_is_alertmanager_v4_exactly():
    body = webhook_payload(notification(FIRING, RESOLVED))
    check_v4(body)
    assert list(body) == ["version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels", "commonLabels",
                          "commonAnnotations", "externalURL", "alerts", "notification_reason"]
    assert body["version"] == "4" and body["status"] == "firing" and body["truncatedAlerts"] == 0
    assert body["groupKey"] == '{}:{alertname="SplitBrain", cluster="store-1"}'
    assert body["receiver"] == r"ops\.hook"  # regexp.QuoteMeta, as Alertmanager writes it
    assert body["commonLabels"] == {"alertname": "SplitBrain", "cluster": "store-1", "severity": "critical"}
    assert body["commonAnnotations"] == {}
    a, r = body["alerts"]
    assert a["status"] == "firing" and a["endsAt"] == "0001-01-01T00:00:00Z" and a["startsAt"] == "2026-11-22T11:59:30.000Z"
    assert a["generatorURL"] == "http://dash/incident/i1" and a["fingerprint"] == FIRING.fingerprint
    assert r["status"] == "resolved" and r["endsAt"] == "2026-11-22T11:59:55.000Z" and r["generatorURL"] == "http://bs.example"
    only_resolved = webhook_payload(notification(RESOLVED, reason="all alerts resolved"))
    check_v4(only_resolved)
    assert only_resolved["status"] == "resolved"
    truncated = webhook_payload(notification(FIRING, RESOLVED), max_alerts=1)
    check_v4(truncated)
    assert truncated["truncatedAlerts"] == 1 and len(truncated["alerts"]) == 1


@pytest.mark.parametrize("breakage", [
    lambda b: b.pop("notification_reason"),
    lambda b: b["alerts"][0].pop("fingerprint"),
    lambda b: b.update(version=4),
    lambda b: b["alerts"][0].update(endsAt="yesterday"),
    lambda b: b.update(extra="x"),
    lambda b: b["commonLabels"].update(n=1),
])
def test_the_schema_is_strict(breakage):
    body = webhook_payload(notification(FIRING))
    breakage(body)
    with pytest.raises(jsonschema.ValidationError):
        check_v4(body)
    assert quote_meta("a.b*c") == r"a\.b\*c"


def test_webhook_sender_delivers_v4_over_http(tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text("tok-123\n")
    with RecordingReceiver(validate=lambda path, body: _schema_problem(body)) as rx:
        rcfg = ReceiverConfig(name="hook", type="webhook", url=rx.url + "/alerts?x=1", bearer_token_file=token,
                              headers={"X-Env": "prod"})
        res = Receiver(rcfg).send(notification(FIRING, RESOLVED))
        assert res.ok and res.http_status == 200, res.error
        [req] = rx.requests
        assert rx.rejected == []
        assert req.path == "/alerts?x=1" and req.headers["Authorization"] == "Bearer tok-123"
        assert req.headers[IDEMPOTENCY_HEADER] == "nid-1" and req.headers["X-Env"] == "prod"
        assert req.headers["Content-Type"] == "application/json"
        rx.status = 500
        res = Receiver(rcfg).send(notification(FIRING))
        assert not res.ok and res.retriable and res.http_status == 500
        assert "x=1" not in res.error and "/alerts" not in res.error  # the URL's path and query may hold tokens
        rx.status = 400
        assert Receiver(rcfg).send(notification(FIRING)).retriable is False


def _schema_problem(body) -> str | None:
    try:
        check_v4(body)
    except jsonschema.ValidationError as e:
        return e.message
    return None


# --- PagerDuty Events v2 -------------------------------------------------------------------------

PD_SEVERITIES = {"critical", "error", "warning", "info"}


def pagerduty_problem(path: str, ev) -> str | None:
    """What PagerDuty's Events API v2 would refuse (developer.pagerduty.com, Send an Alert Event)."""
    if path != "/v2/enqueue" or not isinstance(ev, dict):
        return "POST one event object to /v2/enqueue"
    if not ev.get("routing_key") or len(ev["routing_key"]) != 32:
        return "routing_key: 32 characters"
    if ev.get("event_action") not in ("trigger", "acknowledge", "resolve"):
        return "event_action"
    if not ev.get("dedup_key") or len(ev["dedup_key"]) > 255:
        return "dedup_key"
    if ev["event_action"] == "trigger":
        p = ev.get("payload") or {}
        missing = [k for k in ("summary", "source", "severity") if not p.get(k)]
        if missing:
            return f"payload is missing {missing}"
        if p["severity"] not in PD_SEVERITIES or len(p["summary"]) > 1024:
            return "payload.severity / summary"
        datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
        if not isinstance(p.get("custom_details", {}), dict):
            return "custom_details"
    allowed = {"routing_key", "event_action", "dedup_key", "payload", "client", "client_url", "links", "images"}
    extra = set(ev) - allowed
    return f"unknown keys {sorted(extra)}" if extra else None


def test_pagerduty_trigger_and_resolve_with_the_fingerprint_as_dedup_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PD_KEY", "R0UT1NGKEY0123456789abcdefABCDEF")
    answer = lambda path, ev: {"status": "success", "message": "Event processed", "dedup_key": ev["dedup_key"]}  # noqa: E731
    with RecordingReceiver(status=202, validate=pagerduty_problem, answer=answer) as pd:
        root = tmp_path / "lh"
        cfg = config_from_dict({"lakehouse": str(root), "alerts": {"receivers": [
            {"name": "pd", "type": "pagerduty", "url": pd.url + "/v2/enqueue", "routing_key_env": "PD_KEY"}]}})
        lh = Lakehouse(root)
        sb = {"window_id": "w1", "kind": "activemq", "group_name": "store-1", "instance_a": "amq-a",
              "instance_b": "amq-b", "certain_start": NOW - timedelta(seconds=20), "certain_end": NOW - timedelta(seconds=2),
              "possible_end": None, "certainty": "certain", "duration_s": 18.0}
        lh.overwrite("split_brain_windows", [sb])
        p = AlertPipeline(cfg, lh)
        assert [n.outcome for n in p.tick(NOW).notifications] == ["sent"]
        lh.overwrite("split_brain_windows", [dict(sb, possible_end=NOW - timedelta(seconds=1))])
        assert [n.outcome for n in p.tick(NOW + timedelta(minutes=10)).notifications] == ["sent"]
        assert pd.rejected == []
        trigger, resolve = pd.bodies()
        fp = p.state.alerts and next(iter(p.state.alerts))
        assert trigger["event_action"] == "trigger" and trigger["dedup_key"] == fp
        assert trigger["payload"]["severity"] == "critical" and trigger["payload"]["source"] == "store-1"
        assert trigger["payload"]["class"] == "SplitBrain" and "split brain in store-1" in trigger["payload"]["summary"]
        assert resolve == {"routing_key": "R0UT1NGKEY0123456789abcdefABCDEF", "dedup_key": fp, "event_action": "resolve"}
        # the routing key went to PagerDuty only, never into the tables
        for name in ("alert_notifications", "alert_history"):
            assert "R0UT1NG" not in json.dumps(lh.read(name).to_pylist(), default=str)


def test_pagerduty_shape_errors_are_caught_by_the_validating_server(monkeypatch):
    monkeypatch.setenv("PD_KEY", "short")
    with RecordingReceiver(status=202, validate=pagerduty_problem) as pd:
        rcfg = ReceiverConfig(name="pd", type="pagerduty", url=pd.url + "/v2/enqueue", routing_key_env="PD_KEY")
        res = Receiver(rcfg).send(notification(FIRING))
        assert not res.ok and res.http_status == 400 and "routing_key" in res.error
        assert "short" not in res.error


# --- Alertmanager push --------------------------------------------------------------------------


def test_alertmanager_alerts_end_after_the_push_ttl_while_firing():
    firing, resolved = alertmanager_alerts(notification(FIRING, RESOLVED), push_ttl=300)
    assert firing["endsAt"] == "2026-11-22T12:05:00.000Z" and resolved["endsAt"] == "2026-11-22T11:59:55.000Z"
    assert set(firing) == {"labels", "annotations", "startsAt", "endsAt", "generatorURL"}


# --- config safety ------------------------------------------------------------------------------


@pytest.mark.parametrize("receiver, message", [
    ({"type": "webhook"}, r"a webhook receiver needs `url`"),
    ({"type": "webhook", "url": "ftp://x"}, r"url: .*http:// or https://"),
    ({"type": "webhook", "url": "http://x", "headers": {"Authorization": "Bearer x"}}, r"carries a secret"),
    ({"type": "pagerduty"}, r"exactly one of routing_key_env and routing_key_file"),
    ({"type": "webhook", "url": "http://x", "routing_key": "abc"}, r"routing_key: unknown key"),
    ({"type": "webhook", "url": "http://x", "basic_auth": {"username": "u", "password": "p"}}, r"password: unknown key"),
    ({"type": "alertmanager", "url": "http://x", "repush_interval": "5m", "push_ttl": "1m"}, r"repush_interval must be shorter"),
    ({"type": "email", "url": "http://x"}, r"type: "),
])
def test_receiver_config_errors_name_the_key(receiver, message):
    with pytest.raises(ConfigError, match=r"alerts\.receivers\[0\].*" + message):
        config_from_dict({"alerts": {"receivers": [{"name": "r"} | receiver]}})


def test_tls_is_verified_unless_switched_off():
    assert ReceiverConfig(name="r", type="webhook", url="https://x").verify_tls is True
    rcfg = ReceiverConfig(name="r", type="webhook", url="https://127.0.0.1:1/x", timeout=2)
    assert Receiver(rcfg)._verify() is True
