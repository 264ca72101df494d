"""The alert pipeline, in Alertmanager's shape: evaluate → reconcile → group → dedup → send → record.

    pipeline = AlertPipeline(cfg, lakehouse)
    result = pipeline.tick(now, live_state=None)     # one pass; returns what was sent and why

Stages (each a small function, testable alone):

1. evaluate (alerts.rules.evaluate): the rules over the gold tables (and the live broker_state
   rows the service passes in) → the alerts firing now.
2. reconcile (`reconcile`, pure): against the stored state (alert_history) → alerts that started
   and alerts that resolved. A rule that failed this tick (or whose table could not be read)
   resolves nothing. The changes are committed to alert_history before anything is sent.
3. group (`group_alerts`, pure): per receiver (its `match`), by the `group_by` labels → aggregation
   groups keyed Alertmanager-style `{}:{alertname="SplitBrain", cluster="store-1"}`. A resolved
   alert goes to each group whose last notification carried it as firing (so the resolve reaches
   every receiver that was told, after a restart and after a receiver outage too).
4. dedup (`should_notify`, pure): Alertmanager's group_wait / group_interval timers and its
   `needsUpdate` decision against the last successful notification of the group
   (alert_notifications) → Decision(notify, reason). Sent reasons are Alertmanager's
   `notification_reason` strings. A group whose last notification was "all alerts resolved" starts
   afresh (Alertmanager deletes the emptied aggregation group): group_wait, not group_interval.
5. send with retry (`_deliver`): up to `retry.attempts` tries per tick with exponential backoff
   for retriable failures (connection errors, 5xx, 408, 429); after that the group waits
   (backoff doubling up to `max_backoff`) and is tried again at a later tick.
6. record: a `sending` row before the first try, then one row per attempt (`sent` / `failed` /
   `rejected`). Only `sent` rows move the log entry on.

Delivery is at-least-once. The in-flight window is between a receiver accepting a notification
and its `sent` row landing in alert_notifications (one Delta commit, tens of ms); a crash there
(kill -9) makes the restarted alerter send that one notification again, with the same
`notification_id` (header `X-Brokerscope-Notification-Id`, the idempotency key: hash of
receiver, group key, sequence number and the firing/resolved sets), so a receiver can drop it.
Nothing else is sent twice, and nothing notified firing is left without its resolve.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

from alerts.notify_log import AlertState, LogEntry, NotificationLog, Tracked
from alerts.receivers import Notification, Receiver, SendResult, make_receiver
from alerts.rules import BUILTIN_RULES, RULE_TABLES, SILVER_WINDOWED, Alert, evaluate
from lakehouse.store import Lakehouse, LakehouseError
from lakehouse.tables import contract
from settings.alerts import AlertsConfig, ReceiverConfig

__all__ = ["AlertPipeline", "TickResult", "NotificationOutcome", "Decision", "should_notify", "reconcile",
           "group_alerts", "group_key_of", "notification_id", "receiver_timing", "first_commit_pending"]

log = logging.getLogger(__name__)

# Alertmanager's notification_reason values (notify/notify.go)
FIRST, NEW_ALERTS, SOME_RESOLVED, ALL_RESOLVED, REPEAT = (
    "first notification", "new alerts added", "some alerts resolved", "all alerts resolved", "repeat interval elapsed")


# --- dedup: the pure decision --------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    notify: bool
    reason: str


def _at(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def should_notify(entry: LogEntry | None, firing: frozenset[str] | set[str], resolved: frozenset[str] | set[str], *,
                  now: datetime, send_resolved: bool, group_wait: float, group_interval: float,
                  repeat_interval: float, group_since: datetime | None) -> Decision:
    """Should this aggregation group be notified now, and why (Alertmanager dispatch timers +
    notify/dedup_stage.go `needsUpdate`).

    `entry`: the group's last successful notification (None: never); `firing` / `resolved`: the
    fingerprints firing now / resolved and owed to this receiver; `group_since`: when the group's
    oldest firing alert started firing here (group_wait counts from it).

    A group whose last notification had nothing firing ("all alerts resolved") is a new group, as
    in Alertmanager, which deletes an aggregation group once all its alerts are resolved and
    flushed: the next alert waits group_wait from its start, not group_interval from that
    notification (which could hold a short critical alert until after it resolved, so that it
    reached nobody). With group_wait 0 it goes out at the tick that first sees it firing.
    An alert seen only as resolved in a new group is never sent (no lone "resolved")."""
    firing, resolved = frozenset(firing), frozenset(resolved)
    if entry is not None and not entry.firing:
        if not firing:
            return Decision(False, "all resolved, and already notified")
        entry = None  # the group was deleted after its "all alerts resolved": it starts afresh
    if entry is None:
        if not firing:
            return Decision(False, "nothing firing, and nothing was sent before")
        if group_since is not None and now < group_since + timedelta(seconds=group_wait):
            return Decision(False, f"group_wait: first notification at {_at(group_since + timedelta(seconds=group_wait))}")
        return Decision(True, FIRST)
    if now < entry.sent_at + timedelta(seconds=group_interval):
        return Decision(False, f"group_interval: next flush at {_at(entry.sent_at + timedelta(seconds=group_interval))}")
    if not firing <= entry.firing:
        return Decision(True, NEW_ALERTS)
    if not firing:
        # sent irrespective of send_resolved, to clear the receiver's state (as Alertmanager does)
        if entry.firing:
            return Decision(True, ALL_RESOLVED)
        return Decision(False, "all resolved, and already notified")
    if send_resolved and not resolved <= entry.resolved:
        return Decision(True, SOME_RESOLVED)
    if now >= entry.sent_at + timedelta(seconds=repeat_interval):
        return Decision(True, REPEAT)
    return Decision(False, f"unchanged since {_at(entry.sent_at)}; repeat at "
                           f"{_at(entry.sent_at + timedelta(seconds=repeat_interval))}")


def receiver_timing(acfg: AlertsConfig, r: ReceiverConfig) -> tuple[float, float, float]:
    """(group_wait, group_interval, repeat_interval) for one receiver. An Alertmanager receiver
    gets every change at once and a re-push every `repush_interval`: it does its own grouping."""
    if r.type == "alertmanager":
        return 0.0, 0.0, r.repush_interval
    repeat = acfg.repeat_interval
    if acfg.group_interval > 0:  # Alertmanager rounds repeat_interval up to a multiple of group_interval
        n = -(-repeat // acfg.group_interval)
        repeat = n * acfg.group_interval
    return acfg.group_wait, acfg.group_interval, repeat


# --- reconcile: evaluated alerts vs stored state --------------------------------------------------


def reconcile(state: dict[str, Tracked], evaluated: Iterable[Alert], now: datetime,
              unknown: set[str] = frozenset()) -> tuple[list[Tracked], dict[str, Tracked]]:
    """(changes to record, new state). New alerts start firing; firing alerts no rule returns any
    more resolve at `now` — except those of the alertnames in `unknown` (their rule failed)."""
    new = dict(state)
    changes: list[Tracked] = []
    seen: set[str] = set()
    for a in evaluated:
        fp = a.fingerprint
        seen.add(fp)
        prev = state.get(fp)
        if prev is not None and prev.alert.status == "firing":
            kept = Alert(a.labels, a.annotations, prev.alert.starts_at, None, a.source or prev.alert.source, a.refs)
            new[fp] = Tracked(kept, prev.changed_at)
            continue
        starts = a.starts_at
        if starts > now:
            starts = now
        if prev is not None and prev.alert.ends_at is not None and starts <= prev.alert.ends_at:
            starts = now  # fires again: a new episode starts now
        t = Tracked(Alert(a.labels, a.annotations, starts, None, a.source, a.refs), now)
        new[fp] = t
        changes.append(t)
    for fp, prev in state.items():
        if fp in seen or prev.alert.status != "firing" or prev.alert.alertname in unknown:
            continue
        a = prev.alert
        t = Tracked(Alert(a.labels, a.annotations, a.starts_at, max(now, a.starts_at), a.source, a.refs), now)
        new[fp] = t
        changes.append(t)
    return changes, new


# --- group ----------------------------------------------------------------------------------------


def group_key_of(group_labels: dict[str, str]) -> str:
    """Alertmanager's aggregation-group key for the root route: `{}:{a="1", b="2"}`."""
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(group_labels.items()))
    return "{}:{" + inner + "}"


@dataclass
class Group:
    key: str
    labels: dict[str, str]
    firing: list[Tracked] = field(default_factory=list)
    resolved: list[Tracked] = field(default_factory=list)

    @property
    def since(self) -> datetime | None:
        return min((t.changed_at for t in self.firing), default=None)


def group_alerts(receiver: ReceiverConfig, group_by: list[str], state: dict[str, Tracked],
                 entries: Iterable[LogEntry]) -> dict[str, Group]:
    """The aggregation groups of one receiver: firing alerts it matches, by the group_by labels;
    resolved alerts under every group whose last notification carried them as firing.

    Also, as Alertmanager keeps a resolved alert in its aggregation group until a flush carried it:
    an alert that started and resolved while its group was held (group_interval after a
    notification that still had alerts firing) goes, as resolved, with the group's next
    notification, so a short critical outage in a busy group is not lost. It is never sent alone:
    only to a group whose receiver was told of alerts still firing (a new group — first alert, or
    after "all alerts resolved" — sends nothing for an alert it only sees resolved; with group_wait
    0 such an alert was already sent firing at its first tick)."""
    groups: dict[str, Group] = {}
    entries = list(entries)
    busy = {e.group_key: e for e in entries if e.firing}  # groups whose receiver holds firing alerts
    for t in state.values():
        a = t.alert
        if not receiver.matches(a.labels):
            continue
        labels = {k: a.labels[k] for k in group_by if k in a.labels}
        key = group_key_of(labels)
        if a.status == "firing":
            groups.setdefault(key, Group(key, labels)).firing.append(t)
            continue
        e = busy.get(key)
        if e is not None and t.changed_at > e.sent_at and a.fingerprint not in e.firing \
                and a.fingerprint not in e.resolved:
            # resolved since the group's last notification, which did not carry it firing: as every
            # notification carries all the group's firing alerts, it started after that one
            groups.setdefault(key, Group(key, labels)).resolved.append(t)
    for e in entries:
        for fp in e.firing:
            t = state.get(fp)
            if t is None or t.alert.status != "resolved":
                continue
            g = groups.get(e.group_key)
            if g is None:
                labels = {k: t.alert.labels[k] for k in group_by if k in t.alert.labels}
                g = groups[e.group_key] = Group(e.group_key, labels)
            g.resolved.append(t)
    for g in groups.values():
        g.firing.sort(key=lambda t: t.alert.fingerprint)
        g.resolved.sort(key=lambda t: t.alert.fingerprint)
    return groups


def notification_id(receiver: str, group_key: str, seq: int, firing: Iterable[str], resolved: Iterable[str]) -> str:
    text = "\n".join([receiver, group_key, str(seq), ",".join(sorted(firing)), ",".join(sorted(resolved))])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# --- results ----------------------------------------------------------------------------------------


@dataclass
class NotificationOutcome:
    receiver: str
    group_key: str
    decision: Decision
    firing: list[str]
    resolved: list[str]
    outcome: str  # sent | failed | rejected | suppressed | dry-run
    notification_id: str | None = None
    attempts: int = 0
    error: str | None = None
    http_status: int | None = None
    redelivery: bool = False  # a previous process was sending it when it died (the in-flight window)


@dataclass
class TickResult:
    now: datetime
    firing: list[Alert]
    started: list[Alert]
    resolved: list[Alert]
    notifications: list[NotificationOutcome]
    rule_errors: dict[str, str]
    elapsed_s: float = 0.0

    @property
    def sent(self) -> list[NotificationOutcome]:
        return [n for n in self.notifications if n.outcome == "sent"]

    @property
    def suppressed(self) -> list[NotificationOutcome]:
        return [n for n in self.notifications if n.outcome == "suppressed"]

    @property
    def failed(self) -> list[NotificationOutcome]:
        return [n for n in self.notifications if n.outcome in ("failed", "rejected")]

    def lines(self) -> list[str]:
        """One line per alert change and per group decision, for the CLI and logs."""
        out = [f"{_at(self.now)} {len(self.firing)} firing, {len(self.started)} started, {len(self.resolved)} resolved"]
        out += [f"  started  {a.alertname} {a.labels}" for a in self.started]
        out += [f"  resolved {a.alertname} {a.labels}" for a in self.resolved]
        for n in self.notifications:
            what = f"{len(n.firing)} firing, {len(n.resolved)} resolved"
            extra = f" after {n.attempts} attempt(s)" if n.attempts > 1 else ""
            err = f": {n.error}" if n.error else ""
            out.append(f"  {n.outcome:10} {n.receiver} {n.group_key} ({what}) — {n.decision.reason}{extra}{err}")
        out += [f"  rule {name} failed: {e}" for name, e in self.rule_errors.items()]
        return out


# --- the pipeline -------------------------------------------------------------------------------------


class AlertPipeline:
    """One alerter over one lakehouse. State is loaded from alert_history and alert_notifications
    at construction, so a restarted alerter resolves what its predecessor notified."""

    def __init__(self, cfg, lakehouse: Lakehouse, *, sleep: Callable[[float], None] = time.sleep):
        self.cfg = cfg
        self.acfg: AlertsConfig = cfg.alerts
        self.lh = lakehouse
        self.sleep = sleep
        self.state = AlertState(lakehouse)
        self.log = NotificationLog(lakehouse)
        self.receivers: dict[str, Receiver] = {r.name: make_receiver(r) for r in self.acfg.receivers}
        self._cache: dict[str, tuple[object, pa.Table]] = {}
        self._retry_at: dict[tuple[str, str], tuple[datetime, int]] = {}  # (receiver, group) → (when, failures)
        self._live: pa.Table | None = None  # live broker_state rows of recent ticks

    def _remember_live(self, live: pa.Table | None, now: datetime) -> pa.Table | None:
        """The live rows of this tick plus those of earlier ticks within `rules.lookback` (at most
        MAX_LIVE_ROWS): the service passes only the latest rows, and `for`-style rules need the run."""
        if live is None:
            return None
        buf = live if self._live is None else pa.concat_tables([self._live, live])
        cutoff = pa.scalar(now - timedelta(seconds=self.acfg.rules.lookback), buf.schema.field("ts").type)
        buf = buf.filter(pc.greater_equal(buf["ts"], cutoff))
        if buf.num_rows > MAX_LIVE_ROWS:
            buf = buf.slice(buf.num_rows - MAX_LIVE_ROWS)
        self._live = buf
        return buf

    def close(self) -> None:
        """Close the receivers' HTTP connections (the state is in the tables: nothing to flush)."""
        for r in self.receivers.values():
            r.close()

    # -- reading ---------------------------------------------------------------------------------

    def read_tables(self, now: datetime) -> tuple[dict[str, pa.Table], dict[str, str]]:
        """The tables the rules read (absent ones left out), reusing a table's last read while its
        Delta version is unchanged; silver tables only for the last `rules.lookback`. A table a
        writer is still creating (its folder has no `_delta_log` commit yet, `first_commit_pending`)
        is absent; a damaged log, a folder of other files or unreachable storage is an error."""
        tables: dict[str, pa.Table] = {}
        errors: dict[str, str] = {}
        lookback = self.acfg.rules.lookback
        for name in RULE_TABLES(self.acfg):
            try:
                try:
                    version = self.lh.version(name)  # None: no table (yet); a folder that is not one raises
                except LakehouseError:
                    if first_commit_pending(self.lh, name):
                        continue  # a writer is creating it (e.g. a first Spark run): absent, not an error
                    raise
                if version is None:
                    continue
                c = contract(name)
                windowed = name in SILVER_WINDOWED or c.layer == "silver" or "obs_date" in c.column_names
                since = (now - timedelta(seconds=lookback)).date()
                key = (version, since if windowed else None)
                cached = self._cache.get(name)
                if cached is not None and cached[0] == key:
                    tables[name] = cached[1]
                    continue
                flt = f"obs_date >= '{since.isoformat()}'" if "obs_date" in c.column_names else None
                t = self.lh.read(name, filter=flt)
                if windowed and "ts" in t.column_names and t.num_rows:
                    cutoff = pa.scalar(now - timedelta(seconds=lookback), t.schema.field("ts").type)
                    t = t.filter(pc.greater_equal(t["ts"], cutoff))
                self._cache[name] = (key, t)
                tables[name] = t
            except (LakehouseError, OSError, ValueError) as e:
                errors[name] = str(e).splitlines()[0]
        return tables, errors

    # -- the tick --------------------------------------------------------------------------------

    def tick(self, now: datetime | None = None, live_state: pa.Table | None = None, *,
             dry_run: bool = False) -> TickResult:
        """Evaluate, reconcile, group, dedup, send and record once. `live_state`: the latest silver
        broker_state rows (same columns as the contract), used instead of the stored ones.
        `dry_run`: decide only — nothing is sent or written."""
        t0 = time.monotonic()
        now = now or datetime.now(timezone.utc)
        if now.tzinfo is None:
            now = now.replace(tzinfo=timezone.utc)
        tables, read_errors = self.read_tables(now)
        ev = evaluate(self.acfg, tables, now, self._remember_live(live_rows(live_state), now))
        rule_errors = dict(ev.errors)
        unknown = set(ev.errors)
        for name, err in read_errors.items():
            rule_errors[f"table {name}"] = err
            for alertname, (_fn, needs) in BUILTIN_RULES.items():
                if name in needs:
                    unknown.add(alertname)
            unknown.update(r.name for r in self.acfg.threshold_rules if r.table == name)
        if "ReplicationLag" in unknown:  # one rule function gives both
            unknown.add("ReplicationProblem")
        changes, new_state = reconcile(self.state.alerts, ev.alerts, now, unknown)
        if not dry_run:
            self.state.record(changes)  # before anything is sent: a crash after this resolves on restart
            self.state.alerts.update(new_state)
        started = [t.alert for t in changes if t.alert.status == "firing"]
        resolved = [t.alert for t in changes if t.alert.status == "resolved"]
        firing = [t.alert for t in new_state.values() if t.alert.status == "firing"]
        outcomes = self._notify_all(now, new_state, dry_run)
        return TickResult(now, firing, started, resolved, outcomes, rule_errors, time.monotonic() - t0)

    def _notify_all(self, now: datetime, state: dict[str, Tracked], dry_run: bool) -> list[NotificationOutcome]:
        plans: dict[str, list] = {}
        outcomes: list[NotificationOutcome] = []
        for rcfg in self.acfg.receivers:
            gw, gi, ri = receiver_timing(self.acfg, rcfg)
            groups = group_alerts(rcfg, self.acfg.group_by, state, self.log.entries(rcfg.name))
            for g in groups.values():
                fset = frozenset(t.alert.fingerprint for t in g.firing)
                rset = frozenset(t.alert.fingerprint for t in g.resolved)
                entry = self.log.last(rcfg.name, g.key)
                d = should_notify(entry, fset, rset, now=now, send_resolved=rcfg.send_resolved, group_wait=gw,
                                  group_interval=gi, repeat_interval=ri, group_since=g.since)
                retry = self._retry_at.get((rcfg.name, g.key))
                if d.notify and retry is not None and now < retry[0]:
                    d = Decision(False, f"delivery failed {retry[1]} time(s); next try at {_at(retry[0])} ({d.reason})")
                if not d.notify:
                    if entry is not None or fset:  # quiet groups with nothing to say are not worth a line
                        outcomes.append(NotificationOutcome(rcfg.name, g.key, d, sorted(fset), sorted(rset), "suppressed"))
                    continue
                plans.setdefault(rcfg.name, []).append((g, d, entry, fset, rset))
        if dry_run:
            for rname, items in plans.items():
                for g, d, _e, fset, rset in items:
                    outcomes.append(NotificationOutcome(rname, g.key, d, sorted(fset), sorted(rset), "dry-run"))
            return outcomes
        results: dict[str, list[NotificationOutcome]] = {}

        def run(rname: str) -> None:
            out = results.setdefault(rname, [])
            for g, d, e, fset, rset in plans[rname]:
                try:
                    out.append(self._deliver(self.receivers[rname], now, g, d, e, fset, rset))
                except Exception as exc:  # noqa: BLE001 - e.g. the log could not be written: retried next tick
                    log.warning("alerts: %s / %s: %s", rname, g.key, exc)
                    out.append(NotificationOutcome(rname, g.key, d, sorted(fset), sorted(rset), "failed",
                                                   error=f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))

        threads = [threading.Thread(target=run, args=(r,), name=f"alerts-{r}") for r in plans]
        if len(threads) == 1:
            threads[0].run()
        else:
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        for rname in plans:
            outcomes.extend(results.get(rname, []))
        return outcomes

    def _deliver(self, rec: Receiver, now: datetime, g: Group, d: Decision, entry: LogEntry | None,
                 fset: frozenset[str], rset: frozenset[str]) -> NotificationOutcome:
        """Send one notification with retries and record every attempt."""
        seq = (entry.seq if entry else 0) + 1
        nid = notification_id(rec.name, g.key, seq, fset, rset)
        redelivery = self.log.was_in_flight(nid)
        prior = self.log.attempts(nid)
        n = Notification(nid, rec.name, g.key, g.labels, tuple(t.alert for t in g.firing + g.resolved), d.reason,
                         self.acfg.external_url, now)
        base = {"notification_id": nid, "receiver": rec.name, "receiver_type": rec.type, "group_key": g.key,
                "seq": seq, "status": n.status, "reason": d.reason, "firing_fingerprints": sorted(fset),
                "resolved_fingerprints": sorted(rset)}
        self.log.record([dict(base, attempt=prior + 1, outcome="sending", sent_at=now)])
        retry = rec.cfg.retry
        res = SendResult(False, error="not sent")
        attempt = prior
        for i in range(retry.attempts):
            attempt = prior + i + 1
            res = rec.send(n)
            outcome = "sent" if res.ok else ("failed" if res.retriable else "rejected")
            self.log.record([dict(base, attempt=attempt, outcome=outcome, error=res.error, http_status=res.http_status,
                                  sent_at=now, elapsed_ms=res.elapsed_ms)])
            if res.ok or not res.retriable:
                break
            if i + 1 < retry.attempts:
                self.sleep(min(retry.backoff * 2 ** i, retry.max_backoff))
        key = (rec.name, g.key)
        if res.ok:
            self._retry_at.pop(key, None)
        else:
            failures = self._retry_at.get(key, (now, 0))[1] + 1
            wait = min(retry.backoff * 2 ** (retry.attempts + failures - 1), retry.max_backoff)
            self._retry_at[key] = (now + timedelta(seconds=wait), failures)
            log.warning("alerts: %s", res.error)
        return NotificationOutcome(rec.name, g.key, d, sorted(fset), sorted(rset),
                                   "sent" if res.ok else ("failed" if res.retriable else "rejected"), nid,
                                   attempt - prior, res.error, res.http_status, redelivery)


# what a Delta writer leaves in a table's folder before its first commit: data files (in partition
# folders too), their checksums, Spark's job markers, and `_delta_log/` with no commit in it yet
_WRITER_FILE = re.compile(r"(^|/)(_delta_log/.*|[^/]*\.parquet|[^/]*\.crc|_SUCCESS|_started_\d+|_committed_\d+)$")


def first_commit_pending(lakehouse: Lakehouse, name: str) -> bool:
    """Is the table's folder one a writer is still creating: no `_delta_log` commit at all
    (`Lakehouse.exists` is false) and only what a Delta writer puts there before its first commit?
    A log with commits that cannot be read (damaged) is not pending, nor is a folder holding other
    files (not a Delta table), nor storage that cannot be listed: those stay errors."""
    if lakehouse.exists(name):
        return False  # there are commits: whatever failed is the table's own problem
    path = lakehouse.uri(name)
    if lakehouse.is_local:  # every file
        if not os.path.exists(path):
            return True
        try:
            for dirpath, _dirs, files in os.walk(path, onerror=_raise):
                for f in files:
                    if not _WRITER_FILE.search(os.path.relpath(os.path.join(dirpath, f), path).replace(os.sep, "/")):
                        return False
        except OSError:
            return False
        return True
    # remote: the store's own listing (a sample of the files; "unknown" when it cannot list)
    state, sample = lakehouse._folder_state(path)  # noqa: SLF001
    if state in ("absent", "empty"):
        return True
    return state == "foreign" and all(_WRITER_FILE.search(f) for f in sample)


def _raise(e: OSError) -> None:
    raise e


def live_rows(live_state: pa.Table | None) -> pa.Table | None:
    """The service's live broker_state rows in the contract's types. The rules need `ts`, `kind`,
    `group_name`, `instance`, `reachable`, `active`; other contract columns may be absent (null),
    unknown columns are dropped. A clear error for anything else."""
    if live_state is None:
        return None
    c = contract("broker_state")
    where = "AlertPipeline.tick(live_state=…)"
    missing = [n for n in LIVE_COLUMNS if n not in live_state.column_names]
    if missing:
        raise ValueError(f"{where}: broker_state rows without column(s) {', '.join(missing)}; pass the silver "
                         "broker_state rows (lakehouse/tables.py)")
    arrays = []
    for f in c.schema:
        if f.name not in live_state.column_names:
            arrays.append(pa.nulls(live_state.num_rows, f.type))
            continue
        col = live_state.column(f.name)
        try:
            arrays.append(col if col.type == f.type else col.cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValueError(f"{where}: column {f.name!r} has type {col.type}, the broker_state contract says "
                             f"{f.type} ({e})") from None
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(f.name, f.type) for f in c.schema]))


MAX_LIVE_ROWS = 200_000
LIVE_COLUMNS = ("ts", "kind", "group_name", "instance", "reachable", "active")


def history(lakehouse: Lakehouse, since: datetime | None = None) -> pa.Table:
    """alert_history rows (optionally since a time), oldest first."""
    t = lakehouse.read("alert_history")
    if since is not None and t.num_rows:
        t = t.filter(pc.greater_equal(t["changed_at"], pa.scalar(since, t.schema.field("changed_at").type)))
    return t.sort_by([("changed_at", "ascending"), ("fingerprint", "ascending")])

