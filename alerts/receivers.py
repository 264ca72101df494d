"""Receivers: what a notification looks like on the wire, and sending it.

Payload builders are pure (`webhook_payload`, `pagerduty_events`, `alertmanager_alerts`); a
`Receiver` POSTs them with httpx (TLS verified unless the config says otherwise) and reports a
`SendResult`. Secrets (bearer token, basic-auth password, PagerDuty routing key) are resolved
from the environment or a file when sending, and never appear in errors, logs or tables.

- `webhook`: Alertmanager's webhook payload, version "4", exactly (ANCHORS §1.6: version, groupKey,
  truncatedAlerts, status, receiver, groupLabels, commonLabels, commonAnnotations, externalURL,
  alerts[] with status, labels, annotations, startsAt, endsAt, generatorURL, fingerprint) plus
  `notification_reason`. Firing alerts carry endsAt "0001-01-01T00:00:00Z", as Alertmanager sends.
- `pagerduty`: one Events API v2 event per alert: `trigger` while firing, `resolve` once resolved,
  `dedup_key` = the alert's fingerprint (so a re-sent trigger or resolve is idempotent).
- `alertmanager`: POST /api/v2/alerts of a real Alertmanager, so its routing, silences and
  inhibition apply. Firing alerts are sent with endsAt = now + push_ttl and pushed again before
  that lapses; a resolved alert is pushed with its real endsAt — also when Alertmanager has it
  silenced or inhibited, so nothing we opened stays open there.

Every request carries the header `X-Brokerscope-Notification-Id` (the idempotency key: the same
for a re-send of the same notification, e.g. after a crash in the in-flight window).
"""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx

from alerts.rules import Alert, format_ts
from settings.alerts import ReceiverConfig, secret

__all__ = ["Notification", "SendResult", "Receiver", "webhook_payload", "pagerduty_events", "alertmanager_alerts",
           "make_receiver", "IDEMPOTENCY_HEADER"]

IDEMPOTENCY_HEADER = "X-Brokerscope-Notification-Id"
_PD_SEVERITY = {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}


@dataclass(frozen=True)
class Notification:
    """One notification of one aggregation group to one receiver."""

    notification_id: str
    receiver: str
    group_key: str
    group_labels: dict[str, str]
    alerts: tuple[Alert, ...]  # firing first, then resolved; each sorted by fingerprint
    reason: str
    external_url: str
    now: datetime

    @property
    def status(self) -> str:
        return "firing" if any(a.status == "firing" for a in self.alerts) else "resolved"


@dataclass(frozen=True)
class SendResult:
    ok: bool
    retriable: bool = True
    http_status: int | None = None
    error: str | None = None
    elapsed_ms: float = 0.0


def _common(dicts: Sequence[dict[str, str]]) -> dict[str, str]:
    if not dicts:
        return {}
    out = dict(dicts[0])
    for d in dicts[1:]:
        out = {k: v for k, v in out.items() if d.get(k) == v}
    return dict(sorted(out.items()))


def quote_meta(s: str) -> str:
    """Go's regexp.QuoteMeta, which Alertmanager applies to the receiver name in the payload."""
    return "".join("\\" + ch if ch in r"\.+*?()|[]{}^$" else ch for ch in s)


def _generator_url(n: Notification, a: Alert) -> str:
    return a.annotations.get("dashboard") or n.external_url


def webhook_payload(n: Notification, max_alerts: int = 0) -> dict:
    """Alertmanager webhook JSON, version 4 (notify/webhook/webhook.go `Message`)."""
    alerts = list(n.alerts)
    shown = alerts[:max_alerts] if max_alerts else alerts
    return {
        "version": "4",
        "groupKey": n.group_key,
        "truncatedAlerts": len(alerts) - len(shown),
        "status": n.status,
        "receiver": quote_meta(n.receiver),
        "groupLabels": dict(sorted(n.group_labels.items())),
        "commonLabels": _common([a.labels for a in alerts]),
        "commonAnnotations": _common([a.annotations for a in alerts]),
        "externalURL": n.external_url,
        "alerts": [
            {
                "status": a.status,
                "labels": dict(sorted(a.labels.items())),
                "annotations": dict(sorted(a.annotations.items())),
                "startsAt": format_ts(a.starts_at),
                "endsAt": format_ts(a.ends_at),
                "generatorURL": _generator_url(n, a),
                "fingerprint": a.fingerprint,
            }
            for a in shown
        ],
        "notification_reason": n.reason,
    }


def pagerduty_events(n: Notification, routing_key: str) -> list[dict]:
    """PagerDuty Events API v2: one trigger or resolve per alert, dedup_key = fingerprint."""
    out = []
    for a in n.alerts:
        ev: dict = {"routing_key": routing_key, "dedup_key": a.fingerprint,
                    "event_action": "trigger" if a.status == "firing" else "resolve"}
        if a.status == "firing":
            summary = a.annotations.get("summary") or a.alertname
            ev["payload"] = {
                "summary": summary[:1024],
                "source": a.labels.get("broker") or a.labels.get("cluster") or "brokerscope",
                "severity": _PD_SEVERITY.get(a.labels.get("severity", ""), "warning"),
                "timestamp": format_ts(a.starts_at),
                "component": a.labels.get("broker") or a.labels.get("group", ""),
                "group": a.labels.get("cluster", ""),
                "class": a.alertname,
                "custom_details": {"labels": a.labels, "annotations": a.annotations,
                                   "notification_reason": n.reason, "group_key": n.group_key},
            }
            ev["client"] = "brokerscope"
            ev["client_url"] = _generator_url(n, a)
            if a.annotations.get("dashboard"):
                ev["links"] = [{"href": a.annotations["dashboard"], "text": "brokerscope"}]
        out.append(ev)
    return out


def alertmanager_alerts(n: Notification, push_ttl: float) -> list[dict]:
    """Alertmanager API v2 postable alerts: firing ones end at now + push_ttl (pushed again before
    that), resolved ones at their real end."""
    out = []
    for a in n.alerts:
        ends = a.ends_at if a.ends_at is not None else n.now + timedelta(seconds=push_ttl)
        out.append({"labels": dict(a.labels), "annotations": dict(a.annotations),
                    "startsAt": format_ts(a.starts_at), "endsAt": format_ts(ends),
                    "generatorURL": _generator_url(n, a)})
    return out


class Receiver:
    """Sends notifications for one configured receiver."""

    def __init__(self, cfg: ReceiverConfig):
        self.cfg = cfg
        self.name = cfg.name
        self.type = cfg.type
        self._client: httpx.Client | None = None

    # -- secrets and transport -------------------------------------------------------------------

    def _headers(self, notification_id: str) -> dict[str, str]:
        h = {"Content-Type": "application/json", "User-Agent": "brokerscope-alerts",
             IDEMPOTENCY_HEADER: notification_id, **self.cfg.headers}
        token = secret(f"receiver {self.name}", "bearer_token", self.cfg.bearer_token_env,
                               self.cfg.bearer_token_file)
        if token:
            h["Authorization"] = f"Bearer {token}"
        return h

    def _auth(self) -> httpx.BasicAuth | None:
        b = self.cfg.basic_auth
        if b is None:
            return None
        pw = secret(f"receiver {self.name}", "password", b.password_env, b.password_file)
        return httpx.BasicAuth(b.username, pw or "")

    def _http(self) -> httpx.Client:
        """One client per receiver, kept: building the TLS context costs ~0.15 s, and connections
        are reused. Secrets are not part of it (resolved per request, so a rotated token is used)."""
        if self._client is None:
            self._client = httpx.Client(timeout=self.cfg.timeout, verify=self._verify(), follow_redirects=False)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _verify(self):
        if not self.cfg.verify_tls:
            return False
        if self.cfg.ca_file:

            return ssl.create_default_context(cafile=str(self.cfg.ca_file))
        return True

    def _post(self, url: str, bodies: list, notification_id: str) -> SendResult:
        """POST each body in order; the first failure ends the attempt."""
        t0 = time.monotonic()
        try:
            headers = self._headers(notification_id)
            auth = self._auth()
        except ValueError as e:  # SecretError: a configuration problem, not worth retrying fast
            return SendResult(False, retriable=True, error=str(e))
        status = None
        try:
            client = self._http()
            for body in bodies:
                resp = client.post(url, json=body, headers=headers, auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT)
                status = resp.status_code
                if not 200 <= status < 300:
                    text = resp.text[:300].replace("\n", " ")
                    retriable = status >= 500 or status in (408, 429)
                    return SendResult(False, retriable, status, f"HTTP {status} from {self._where()}: {text}",
                                      (time.monotonic() - t0) * 1000)
        except httpx.HTTPError as e:
            return SendResult(False, True, status, f"{type(e).__name__} sending to {self._where()}: {_safe(e, url)}",
                              (time.monotonic() - t0) * 1000)
        return SendResult(True, False, status, None, (time.monotonic() - t0) * 1000)

    def _where(self) -> str:
        m = re.match(r"^(https?://[^/?#]+)", self.cfg.effective_url)  # never the path/query: tokens live there
        return f"receiver {self.name} ({m.group(1) if m else '?'})"

    # -- sending ---------------------------------------------------------------------------------

    def send(self, n: Notification) -> SendResult:
        if self.type == "webhook":
            return self._post(self.cfg.effective_url, [webhook_payload(n, self.cfg.max_alerts)], n.notification_id)
        if self.type == "pagerduty":
            try:
                key = secret(f"receiver {self.name}", "routing_key", self.cfg.routing_key_env,
                                     self.cfg.routing_key_file)
            except ValueError as e:
                return SendResult(False, True, None, str(e))
            return self._post(self.cfg.effective_url, pagerduty_events(n, key or ""), n.notification_id)
        url = self.cfg.effective_url.rstrip("/") + "/api/v2/alerts"
        return self._post(url, [alertmanager_alerts(n, self.cfg.push_ttl)], n.notification_id)


def _safe(e: Exception, url: str) -> str:
    """An exception's text without the URL's path and query (where webhook tokens live)."""
    text = str(e) or type(e).__name__
    return text.replace(url, "<url>")


def make_receiver(cfg: ReceiverConfig) -> Receiver:
    return Receiver(cfg)
