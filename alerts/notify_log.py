"""The two Delta tables of the alerter, with their current state kept in memory.

- `alert_history` (AlertState): one row per status change of an alert. The latest row per
  fingerprint is the alert's state; it is written *before* anything about the change is sent,
  so after a restart (even `kill -9`) every alert that may have been notified firing is known
  and will be resolved.
- `alert_notifications` (NotificationLog): one row per delivery attempt (`sending`, then `sent`,
  `failed` or `rejected`). The latest `sent` row per (receiver, group_key) is the log entry the
  dedup decision compares with (Alertmanager's nflog).

Both are loaded once, at start, then appended to; memory mirrors what was committed.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime

from alerts.rules import Alert
from lakehouse.store import Lakehouse

__all__ = ["LogEntry", "NotificationLog", "AlertState", "alert_from_history"]


@dataclass(frozen=True)
class LogEntry:
    """What was last sent successfully to one receiver for one aggregation group."""

    receiver: str
    group_key: str
    seq: int
    firing: frozenset[str]
    resolved: frozenset[str]
    sent_at: datetime


class NotificationLog:
    """alert_notifications: the persisted notification log."""

    TABLE = "alert_notifications"

    def __init__(self, lakehouse: Lakehouse):
        self.lh = lakehouse
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], LogEntry] = {}
        self._attempts: dict[str, int] = {}  # notification_id → attempts made (any outcome but `sending`)
        self._in_flight: set[str] = set()  # `sending` with no outcome after it: a crash mid-send
        self.load()

    def load(self) -> None:
        t = self.lh.read(self.TABLE)
        last: dict[tuple[str, str], LogEntry] = {}
        attempts: dict[str, int] = {}
        sending: set[str] = set()
        finished: set[tuple[str, int]] = set()
        for r in t.to_pylist():
            nid = r["notification_id"]
            if r["outcome"] == "sending":
                sending.add((nid, r["attempt"]))
                continue
            finished.add((nid, r["attempt"]))
            attempts[nid] = max(attempts.get(nid, 0), r["attempt"])
            if r["outcome"] != "sent":
                continue
            key = (r["receiver"], r["group_key"])
            e = LogEntry(r["receiver"], r["group_key"], r["seq"], frozenset(r["firing_fingerprints"]),
                         frozenset(r["resolved_fingerprints"]), r["sent_at"])
            prev = last.get(key)
            if prev is None or (e.seq, e.sent_at) > (prev.seq, prev.sent_at):
                last[key] = e
        for nid, attempt in sending - finished:
            attempts[nid] = max(attempts.get(nid, 0), attempt)  # it may have reached the receiver
        with self._lock:
            self._last, self._attempts = last, attempts
            self._in_flight = {nid for nid, a in sending - finished}

    def last(self, receiver: str, group_key: str) -> LogEntry | None:
        return self._last.get((receiver, group_key))

    def entries(self, receiver: str | None = None) -> list[LogEntry]:
        return [e for (r, _k), e in self._last.items() if receiver is None or r == receiver]

    def attempts(self, notification_id: str) -> int:
        return self._attempts.get(notification_id, 0)

    def was_in_flight(self, notification_id: str) -> bool:
        """A previous process started sending this notification and died before its outcome."""
        return notification_id in self._in_flight

    def record(self, rows: list[dict]) -> None:
        """Append attempt rows (see the alert_notifications contract) and update the state."""
        if not rows:
            return
        with self._lock:
            self.lh.append(self.TABLE, rows)
            for r in rows:
                if r["outcome"] == "sending":
                    continue
                nid = r["notification_id"]
                self._attempts[nid] = max(self._attempts.get(nid, 0), r["attempt"])
                self._in_flight.discard(nid)
                if r["outcome"] == "sent":
                    key = (r["receiver"], r["group_key"])
                    self._last[key] = LogEntry(r["receiver"], r["group_key"], r["seq"],
                                               frozenset(r["firing_fingerprints"]),
                                               frozenset(r["resolved_fingerprints"]), r["sent_at"])


def alert_from_history(r: dict) -> Alert:
    a = Alert(json.loads(r["labels_json"]), json.loads(r["annotations_json"]), r["starts_at"],
              r["ends_at"] if r["status"] == "resolved" else None, source=r.get("source") or "")
    return a


@dataclass
class Tracked:
    """An alert's current state: the alert (ends_at None while firing) and when it last changed."""

    alert: Alert
    changed_at: datetime


class AlertState:
    """alert_history: alert state transitions; memory holds the latest per fingerprint."""

    TABLE = "alert_history"

    def __init__(self, lakehouse: Lakehouse):
        self.lh = lakehouse
        self.alerts: dict[str, Tracked] = {}
        self.load()

    def load(self) -> None:
        state: dict[str, Tracked] = {}
        for r in self.lh.read(self.TABLE).to_pylist():
            prev = state.get(r["fingerprint"])
            order = (r["changed_at"], r["status"] == "resolved")
            if prev is None or order >= (prev.changed_at, prev.alert.status == "resolved"):
                state[r["fingerprint"]] = Tracked(alert_from_history(r), r["changed_at"])
        self.alerts = state

    def firing(self) -> dict[str, Tracked]:
        return {fp: t for fp, t in self.alerts.items() if t.alert.status == "firing"}

    def record(self, changes: list[Tracked]) -> None:
        if not changes:
            return
        rows = [{
            "fingerprint": t.alert.fingerprint, "alertname": t.alert.alertname,
            "severity": t.alert.labels.get("severity"), "cluster": t.alert.labels.get("cluster"),
            "status": t.alert.status, "starts_at": t.alert.starts_at, "ends_at": t.alert.ends_at,
            "changed_at": t.changed_at, "labels_json": t.alert.labels_json(),
            "annotations_json": json.dumps(t.alert.annotations, sort_keys=True, ensure_ascii=False),
            "source": t.alert.source or None,
        } for t in changes]
        self.lh.append(self.TABLE, rows)  # memory mirrors the table: no transition is written twice
        for t in changes:
            self.alerts[t.alert.fingerprint] = t
