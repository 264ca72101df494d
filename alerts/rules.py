"""Alert rules: pure functions from tables (pyarrow) and an evaluation time to the alerts firing now.

An alert is its label set (Alertmanager's identity): `fingerprint` hashes the sorted labels. A
rule returns the alerts whose condition holds at `now`; the pipeline compares them with the
stored alert state to find what started and what resolved. Each rule reads only its own tables;
a missing table gives no alerts from that rule, never an error.

The built-in pack (names are the `alertname` label; `alerts.rules` in the config tunes them):

| alertname | severity | fires while |
|---|---|---|
| SplitBrain | critical | a split_brain_windows row is open or ended within `event_hold`; or the live state shows two instances of an ActiveMQ/Artemis group active with overlapping observed active runs (`split_brain`) |
| NoActiveInstance | critical | the latest state of every instance of a group (live, else silver broker_state within `lookback`) shows none active |
| FailoverHappened | warning | a failover/failback (failover_events) happened within `failover_hold`; then it resolves itself |
| UnprotectedLive | from finding | risk_findings `unprotected-live` is open |
| StaleBackup | from finding | risk_findings `stale-backup` is open, or zk_findings `zk.backup-stale` / `zk.backup-not-taking-over` is recent |
| QuorumLost | critical | zk_quorum `lost` is open, zk_findings `zk.quorum-lost` is recent, or risk_findings `quorum-lost-pair` is open |
| QuorumAtRisk | warning | the open zk_quorum interval is at bare majority, zk `zk.bare-majority` / `zk.ensemble-too-small` is recent, or risk `quorum-too-small` is open |
| StuckMessages | from finding | a stuck_messages row is open (info rows only with `stuck_include_info`) |
| ReplicationLag | from finding | replication_findings `replication-lag` (above `replication_lag_s` when set) or `follower-lag` is open |
| ReplicationProblem | from finding | any other replication_findings code is open (label `code`) |
| GcPauseOverHaThreshold | critical | a gc_findings pause over ⅓ session-ms or the connection TTL happened within `event_hold` |
| CollectorCannotReachTarget | warning | a target's scrapes (or a replication cluster's Kafka-protocol reads) have gone unanswered for at least `unreachable_for` |
| HaGroupMisconfigured | warning | an ha_group_checks row was last seen within `finding_freshness` |

"Recent" = within `finding_freshness` of now, for tables without `is_open`. Rows later than `now`
are not seen (so a past `now` evaluates history as it was then, e.g. over a replayed recording).
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

from collectors.kafka_offsets.parse import exchange_health
from settings.alerts import AlertsConfig, BuiltinRules, ThresholdRule

__all__ = ["Alert", "fingerprint", "evaluate", "BUILTIN_RULES", "RULE_TABLES", "live_latest", "format_ts",
           "active_runs", "split_brain"]

_SEVERITY = {"critical": "critical", "error": "error", "warn": "warning", "warning": "warning", "info": "info"}


def fingerprint(labels: Mapping[str, str]) -> str:
    """Stable identity of a label set: 16 hex digits of sha256 over the sorted labels."""
    text = "\x1f".join(f"{k}\x1e{labels[k]}" for k in sorted(labels))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def format_ts(t: datetime | None) -> str:
    """RFC 3339 in UTC with milliseconds, as Alertmanager writes it; the zero time for None."""
    if t is None:
        return "0001-01-01T00:00:00Z"
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Alert:
    """One alert. `ends_at` is None while firing. `refs` names the evidence rows (table/id),
    used to join incidents and causes; it is not part of the identity."""

    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime | None = None
    source: str = ""
    refs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.labels)

    @property
    def status(self) -> str:
        return "firing" if self.ends_at is None else "resolved"

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", "")

    def labels_json(self) -> str:
        return json.dumps(self.labels, sort_keys=True, ensure_ascii=False)


def _labels(alertname: str, severity: str, **extra: object) -> dict[str, str]:
    """An alert's labels; the broker concerned is `broker` (as on every metric, alerts/exporter.py), never
    `instance`, which Prometheus and Alertmanager users read as the scraped endpoint."""
    out = {"alertname": alertname, "severity": severity}
    for k, v in extra.items():
        if v is not None and str(v) != "":
            out[k] = str(v)
    return out


def _rows(t: pa.Table | None) -> list[dict]:
    return [] if t is None or t.num_rows == 0 else t.to_pylist()


def _recent(ts: datetime | None, now: datetime, within: float) -> bool:
    return ts is not None and now - timedelta(seconds=within) <= ts <= now


def _sev(finding_severity: str | None, default: str = "warning") -> str:
    return _SEVERITY.get(str(finding_severity or "").lower(), default)


def _secs(v: float | None) -> str:
    return "?" if v is None else f"{v:.1f} s"


# --- live state ---------------------------------------------------------------------------------


def live_latest(live: pa.Table | None, now: datetime, lookback: float) -> dict[str, dict]:
    """Latest broker_state row per instance, among rows no older than `lookback`."""
    out: dict[str, dict] = {}
    if live is None or live.num_rows == 0:
        return out
    cutoff = now - timedelta(seconds=lookback)
    for r in live.select([c for c in ("ts", "kind", "group_name", "instance", "reachable", "active", "role", "error")
                          if c in live.column_names]).to_pylist():
        if r["ts"] is None or r["ts"] < cutoff or r["ts"] > now:
            continue
        prev = out.get(r["instance"])
        if prev is None or r["ts"] >= prev["ts"]:
            out[r["instance"]] = r
    return out


def active_runs(rows: Iterable[dict]) -> dict[str, datetime]:
    """instance → first `ts` of its current active run, over broker_state rows (any order), with
    the rules of `alerts.exporter.LatestState`: an `active` row starts a run (or continues it); an
    inactive row ends it; an unanswered scrape (active null) keeps it open (the role was not seen to
    end); uptime going back (a new JVM) ends it even without an inactive scrape between."""
    per: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("ts") is not None:
            per.setdefault(r["instance"], []).append(r)
    out: dict[str, datetime] = {}
    for inst, rs in per.items():
        rs.sort(key=lambda r: r["ts"])
        since: datetime | None = None
        uptime: int | None = None
        for r in rs:
            up = r.get("uptime_ms")
            if r.get("active") is False or (uptime is not None and up is not None and up < uptime):
                since = None
            if r.get("active") and since is None:
                since = r["ts"]
            if up is not None:
                uptime = up
        if since is not None:
            out[inst] = since
    return out


def split_brain(active: list[dict], active_since: Mapping[str, datetime]) -> bool:
    """Two or more instances active, and their active runs overlap in observed time: each was seen
    active after the other's run began. Latest rows of two instances are from different scrapes, so
    'both latest rows active' alone would flag every hand-over whose old live was last scraped
    before the kill and the new one after the takeover. `active`: the latest rows that are active;
    `active_since`: instance → first ts of its current active run (default: the row's own ts).
    The one implementation, used by the SplitBrain rule and by the exporter's metric."""
    if len(active) < 2:
        return False
    starts = [active_since.get(r["instance"], r["ts"]) for r in active]
    return max(starts) <= min(r["ts"] for r in active)


def _by_group(latest: dict[str, dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for r in latest.values():
        groups.setdefault(r["group_name"], []).append(r)
    return groups


# --- the built-in rules -------------------------------------------------------------------------

Tables = Mapping[str, pa.Table]


@dataclass(frozen=True)
class Context:
    now: datetime
    rules: BuiltinRules
    live: dict[str, dict]  # latest broker_state row per instance
    live_source: str  # live | broker_state
    live_rows: tuple[dict, ...] = ()  # every live row within the lookback (live_source "live" only)
    active_since: Mapping[str, datetime] = field(default_factory=dict)  # instance → start of its active run


def rule_split_brain(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("split_brain_windows")):
        if r["possible_end"] is not None and not _recent(r["certain_end"], ctx.now, ctx.rules.event_hold):
            continue
        out.append(Alert(
            _labels("SplitBrain", "critical", cluster=r["group_name"], group=r["group_name"]),
            {"summary": f"split brain in {r['group_name']}: {r['instance_a']} and {r['instance_b']} both active "
                        f"({r['certainty']}, {_secs(r['duration_s'])})",
             "description": f"{r['instance_a']} accepted {r['enqueued_a'] if r['enqueued_a'] is not None else '?'} and "
                            f"{r['instance_b']} {r['enqueued_b'] if r['enqueued_b'] is not None else '?'} messages "
                            f"between {format_ts(r['possible_start'] or r['certain_start'])} and "
                            f"{format_ts(r['possible_end'] or r['certain_end'])}.",
             "runbook": "Stop one side now (the one that took fewer messages), then reconcile: messages "
                        "accepted by both sides may be duplicated or lost. Check the HA lock/store and "
                        "check-for-live-server."},
            r["certain_start"], source="split_brain_windows", refs=[("split_brain_windows", r["window_id"])]))
    for group, rows in _by_group(ctx.live).items():
        if rows[0]["kind"] not in ("activemq", "artemis"):
            continue  # WebLogic members are all active by design; Kafka controllers: replication_findings
        active = sorted((r for r in rows if r["active"] is True), key=lambda r: r["instance"])
        # latest rows come from different scrapes: only runs seen overlapping are two masters
        if split_brain(active, ctx.active_since):
            out.append(Alert(
                _labels("SplitBrain", "critical", cluster=group, group=group),
                {"summary": f"split brain in {group}: {', '.join(r['instance'] for r in active)} are active at "
                            "once (live state)",
                 "runbook": "Stop one side now, then reconcile the messages each side accepted."},
                max(ctx.active_since.get(r["instance"], r["ts"]) for r in active), source=ctx.live_source))
    return out


def rule_no_active_instance(t: Tables, ctx: Context) -> list[Alert]:
    last_active: dict[str, datetime] = {}
    for r in _rows(t.get("role_intervals")):
        if r["end_ts"] is not None and r["end_ts"] <= ctx.now and \
                r["end_ts"] > last_active.get(r["group_name"], datetime.min.replace(tzinfo=timezone.utc)):
            last_active[r["group_name"]] = r["end_ts"]
    out = []
    for group, rows in _by_group(ctx.live).items():
        if rows[0]["kind"] == "zookeeper" or any(r["active"] is True for r in rows):
            continue
        since = last_active.get(group) or min(r["ts"] for r in rows)
        if (ctx.now - since).total_seconds() < ctx.rules.no_active_for:
            continue
        seen = ", ".join(f"{r['instance']} {'not answering' if not r['reachable'] else r['role']}"
                         for r in sorted(rows, key=lambda r: r["instance"]))
        unanswered = all(not r["reachable"] for r in rows)
        out.append(Alert(
            _labels("NoActiveInstance", "critical", cluster=group, group=group),
            {"summary": f"no active instance in {group}" + (" (none answers: indeterminate)" if unanswered else ""),
             "description": f"latest state: {seen}; last seen active {format_ts(last_active.get(group))}",
             "runbook": "Clients of this group cannot be served. Check why the backup did not take over: "
                        "lock/lease held by a dead process, ZooKeeper quorum, a backup out of sync."},
            since, source=ctx.live_source))
    return out


def rule_failover(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("failover_events")):
        if r["event_type"] not in ("failover", "failback") or not _recent(r["new_first_active"], ctx.now, ctx.rules.failover_hold):
            continue
        out.append(Alert(
            _labels("FailoverHappened", "warning", cluster=r["group_name"], group=r["group_name"], broker=r["to_instance"]),
            {"summary": f"{r['event_type']} in {r['group_name']}: {r['from_instance']} → {r['to_instance']}, "
                        f"outage ≤ {_secs(r['outage_upper_s'])}",
             "description": f"{r['from_instance']} last seen active {format_ts(r['old_last_active'])}; "
                            f"{r['to_instance']} first seen active {format_ts(r['new_first_active'])}.",
             "runbook": "Check why the old live stopped (GC pause, ZooKeeper session, process death) and "
                        "that it came back as backup; this alert resolves itself."},
            r["new_first_active"], source="failover_events", refs=[("failover_events", r["event_id"])]))
    return out


def _finding_alert(alertname: str, r: dict, source: str, default_sev: str, **extra: object) -> Alert:
    labels = _labels(alertname, _sev(r.get("severity"), default_sev), cluster=r.get("group_name"),
                     group=r.get("group_name"), broker=r.get("instance"), **extra)
    ann = {"summary": r["message"]}
    if r.get("advice"):
        ann["runbook"] = r["advice"]
    return Alert(labels, ann, r["start_ts"], source=source, refs=[(source, r["finding_id"])])


def _risk(t: Tables, codes: tuple[str, ...]) -> list[dict]:
    return [r for r in _rows(t.get("risk_findings")) if r["code"] in codes and r["is_open"]]


def _zk(t: Tables, ctx: Context, codes: tuple[str, ...]) -> list[dict]:
    return [r for r in _rows(t.get("zk_findings"))
            if r["code"] in codes and _recent(r["end_ts"], ctx.now, ctx.rules.finding_freshness)]


def rule_unprotected_live(t: Tables, ctx: Context) -> list[Alert]:
    return [_finding_alert("UnprotectedLive", r, "risk_findings", "error") for r in _risk(t, ("unprotected-live",))]


def rule_stale_backup(t: Tables, ctx: Context) -> list[Alert]:
    out = [_finding_alert("StaleBackup", r, "risk_findings", "warning") for r in _risk(t, ("stale-backup",))]
    out += [_finding_alert("StaleBackup", r, "zk_findings", "warning")
            for r in _zk(t, ctx, ("zk.backup-stale", "zk.backup-not-taking-over"))]
    return out


def _ensemble_alert(alertname: str, severity: str, ensemble: str, summary: str, start: datetime,
                    source: str, ref: str, runbook: str) -> Alert:
    return Alert(_labels(alertname, severity, cluster=ensemble, group=ensemble),
                 {"summary": summary, "runbook": runbook}, start, source=source, refs=[(source, ref)])


_QUORUM_RUNBOOK = ("Bring ZooKeeper servers back until a majority of the voters answers; brokers using the "
                   "ensemble for their lock cannot fail over meanwhile.")


def rule_quorum_lost(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("zk_quorum")):
        if r["status"] == "lost" and r["is_open"]:
            out.append(_ensemble_alert("QuorumLost", "critical", r["ensemble"],
                                       f"ZooKeeper ensemble {r['ensemble']} lost its quorum: fewer than a majority of "
                                       f"its {r['voters']} voters answer", r["start_ts"], "zk_quorum",
                                       r["interval_id"], _QUORUM_RUNBOOK))
    for r in _zk(t, ctx, ("zk.quorum-lost",)):
        out.append(_finding_alert("QuorumLost", dict(r, group_name=r["ensemble"] or r["group_name"]), "zk_findings", "critical"))
    out += [_finding_alert("QuorumLost", r, "risk_findings", "critical") for r in _risk(t, ("quorum-lost-pair",))]
    return out


def rule_quorum_at_risk(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("zk_quorum")):
        if r["status"] == "present" and r["is_open"] and r["bare_majority"]:
            out.append(_ensemble_alert("QuorumAtRisk", "warning", r["ensemble"],
                                       f"ZooKeeper ensemble {r['ensemble']} is at bare majority ({r['healthy_min']} of "
                                       f"{r['voters']}): one more loss loses the quorum", r["start_ts"], "zk_quorum",
                                       r["interval_id"], _QUORUM_RUNBOOK))
    for r in _zk(t, ctx, ("zk.bare-majority", "zk.ensemble-too-small")):
        out.append(_finding_alert("QuorumAtRisk", dict(r, group_name=r["ensemble"] or r["group_name"]), "zk_findings", "warning"))
    out += [_finding_alert("QuorumAtRisk", r, "risk_findings", "warning") for r in _risk(t, ("quorum-too-small",))]
    return out


def rule_stuck(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("stuck_messages")):
        if not r["is_open"] or (r["severity"] == "info" and not ctx.rules.stuck_include_info):
            continue
        if (r["messages"] or 0) < ctx.rules.stuck_min_messages:
            continue
        a = _finding_alert("StuckMessages", r, "stuck_messages", "warning", destination=r["destination"], code=r["code"])
        out.append(a)
    return out


_LAG_CODES = ("replication-lag", "follower-lag")


def rule_replication(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("replication_findings")):
        if not r["is_open"]:
            continue
        extra = {k: r[k] for k in ("flow", "topic", "client") if r.get(k)}
        if r["partition"] is not None:
            extra["partition"] = r["partition"]
        if r["code"] in _LAG_CODES:
            over = ctx.rules.replication_lag_s
            if r["code"] == "replication-lag" and over is not None and (r["value_last"] or 0) <= over:
                continue
            out.append(_finding_alert("ReplicationLag", r, "replication_findings", "warning", code=r["code"], **extra))
        else:
            out.append(_finding_alert("ReplicationProblem", r, "replication_findings", "warning", code=r["code"], **extra))
    return out


def rule_gc_pause(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("gc_findings")):
        if r["code"] not in ctx.rules.gc_codes or not _recent(r["ts"], ctx.now, ctx.rules.event_hold):
            continue
        out.append(Alert(
            _labels("GcPauseOverHaThreshold", "critical", cluster=r["group_name"], group=r["group_name"],
                    broker=r["target"], code=r["code"]),
            {"summary": r["message"], **({"runbook": r["advice"]} if r["advice"] else {})},
            r["ts"], source="gc_findings", refs=[("gc_findings", r["finding_id"])]))
    return out


def rule_collector(t: Tables, ctx: Context) -> list[Alert]:
    """A target whose every scrape since `since` went unanswered, for at least `unreachable_for`; the
    Kafka-protocol collector's clusters too (`<replication>/<cluster>`, from silver kafka_offsets)."""
    seen: dict[str, list[tuple[datetime, bool, str | None, str | None, str | None]]] = {}
    cutoff = ctx.now - timedelta(seconds=ctx.rules.lookback)
    for r in [*_rows(t.get("collector_health")), *exchange_health(_rows(t.get("kafka_offsets")))]:
        if r["ts"] < cutoff or r["ts"] > ctx.now:
            continue
        seen.setdefault(r["target"], []).append((r["ts"], r["answered"], r["error"], r["error_kind"], r["group_name"]))
    for r in ctx.live_rows:
        if cutoff <= r["ts"] <= ctx.now:
            seen.setdefault(r["instance"], []).append((r["ts"], bool(r["reachable"]), r.get("error"), None, r["group_name"]))
    out = []
    for target, obs in seen.items():
        obs.sort(key=lambda o: (o[0], o[1]))
        if obs[-1][1]:
            continue
        i = len(obs) - 1
        while i > 0 and not obs[i - 1][1]:
            i -= 1
        since, last = obs[i][0], obs[-1]
        if (last[0] - since).total_seconds() < ctx.rules.unreachable_for:
            continue
        group = next((o[4] for o in reversed(obs) if o[4]), None)
        out.append(Alert(
            _labels("CollectorCannotReachTarget", "warning", cluster=group, group=group, broker=target),
            {"summary": f"brokerscope cannot reach {target} since {format_ts(since)}"
                        + (f" ({last[3]})" if last[3] else ""),
             "description": last[2] or "no answer",
             "runbook": "The target's state is unknown (indeterminate, not down). Check the network path, "
                        "the Jolokia agent and the credentials; the error says which."},
            since, source="collector_health"))
    return out


def rule_clock_skew(t: Tables, ctx: Context) -> list[Alert]:
    """A target whose broker clock has differed from the collector's by at least `clock_skew_s` in
    every skew estimate (collector_health.clock_skew_s, from the Spark spine) for `clock_skew_for`."""
    seen: dict[str, list[tuple[datetime, float, str | None]]] = {}
    cutoff = ctx.now - timedelta(seconds=ctx.rules.lookback)
    for r in _rows(t.get("collector_health")):
        if r.get("clock_skew_s") is not None and cutoff <= r["ts"] <= ctx.now:
            seen.setdefault(r["target"], []).append((r["ts"], r["clock_skew_s"], r["group_name"]))
    out = []
    for target, obs in seen.items():
        obs.sort(key=lambda o: o[0])
        i = len(obs)
        while i > 0 and abs(obs[i - 1][1]) >= ctx.rules.clock_skew_s:
            i -= 1
        if i == len(obs) or (obs[-1][0] - obs[i][0]).total_seconds() < ctx.rules.clock_skew_for:
            continue
        since, skew, group = obs[i][0], obs[-1][1], obs[-1][2]
        way = "ahead of" if skew > 0 else "behind"
        out.append(Alert(
            _labels("ClockSkew", "warning", cluster=group, group=group, broker=target),
            {"summary": f"{target}'s clock is {abs(skew):.1f} s {way} brokerscope's since {format_ts(since)}",
             "description": "estimated from the Jolokia agent's answer timestamps (whole seconds; within about "
                            "0.1 s once 30 scrapes are in the estimate)",
             "runbook": "Check NTP/chrony on the broker's and the collector's hosts. Lease-based HA (the JDBC "
                        "lease locker, ZooKeeper sessions, Artemis lock managers) and log correlation assume "
                        "synchronized clocks. If only the collectors' clocks differ, set "
                        "analysis.clock_skew.correct: true."},
            since, source="collector_health"))
    return out


def rule_ha_group(t: Tables, ctx: Context) -> list[Alert]:
    out = []
    for r in _rows(t.get("ha_group_checks")):
        if not _recent(r["last_seen"], ctx.now, ctx.rules.finding_freshness):
            continue
        out.append(Alert(_labels("HaGroupMisconfigured", "warning", cluster=r["group_name"], group=r["group_name"],
                                 code=r["check"]),
                         {"summary": r["message"], "runbook": r["advice"], "description": f"instances: {r['instances']}"},
                         r["first_seen"], source="ha_group_checks", refs=[("ha_group_checks", r["check_id"])]))
    return out


# alertname → (rule, tables it reads)
BUILTIN_RULES: dict[str, tuple[Callable[[Tables, Context], list[Alert]], tuple[str, ...]]] = {
    "SplitBrain": (rule_split_brain, ("split_brain_windows",)),
    "NoActiveInstance": (rule_no_active_instance, ("role_intervals",)),
    "FailoverHappened": (rule_failover, ("failover_events",)),
    "UnprotectedLive": (rule_unprotected_live, ("risk_findings",)),
    "StaleBackup": (rule_stale_backup, ("risk_findings", "zk_findings")),
    "QuorumLost": (rule_quorum_lost, ("zk_quorum", "zk_findings", "risk_findings")),
    "QuorumAtRisk": (rule_quorum_at_risk, ("zk_quorum", "zk_findings", "risk_findings")),
    "StuckMessages": (rule_stuck, ("stuck_messages",)),
    "ReplicationLag": (rule_replication, ("replication_findings",)),
    "GcPauseOverHaThreshold": (rule_gc_pause, ("gc_findings",)),
    "CollectorCannotReachTarget": (rule_collector, ("collector_health", "kafka_offsets")),
    "HaGroupMisconfigured": (rule_ha_group, ("ha_group_checks",)),
    "ClockSkew": (rule_clock_skew, ("collector_health",)),
}
# ReplicationProblem comes from the ReplicationLag rule function (one pass over replication_findings)
ENRICH_TABLES = ("incidents", "finding_causes")
SILVER_WINDOWED = ("broker_state", "collector_health")  # read for the last `lookback` only


def RULE_TABLES(cfg: AlertsConfig) -> list[str]:
    """Every table the configured rules read (threshold rules included), enrichment last."""
    names: dict[str, None] = {}
    for alertname, (_fn, tables) in BUILTIN_RULES.items():
        if alertname not in cfg.rules.disabled:
            names.update(dict.fromkeys(tables))
    names["broker_state"] = None
    for r in cfg.threshold_rules:
        names[r.table] = None
    names.update(dict.fromkeys(ENRICH_TABLES))
    return list(names)


# --- user threshold rules -----------------------------------------------------------------------

_OPS: dict[str, Callable] = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
                             "==": operator.eq, "!=": operator.ne}


def rule_threshold(rule: ThresholdRule, table: pa.Table | None, now: datetime, lookback: float) -> list[Alert]:
    """Per distinct tuple of `rule.labels`: fires when the latest row holds `column op threshold`
    and the trailing run of rows that hold spans at least `rule.for_` seconds."""
    if table is None or table.num_rows == 0:
        return []
    tcol = rule.time_col
    cols = list(dict.fromkeys([tcol, rule.column, *rule.labels]))
    t = table.select(cols)
    cutoff = now - timedelta(seconds=lookback)
    t = t.filter(pc.and_(pc.greater_equal(t[tcol], pa.scalar(cutoff, t.schema.field(tcol).type)),
                         pc.less_equal(t[tcol], pa.scalar(now, t.schema.field(tcol).type))))
    series: dict[tuple, list[dict]] = {}
    for r in t.to_pylist():
        series.setdefault(tuple(r[c] for c in rule.labels), []).append(r)
    cmp = _OPS[rule.op]
    out = []
    for key, rows in series.items():
        rows.sort(key=lambda r: r[tcol])

        def holds(r: dict) -> bool:
            v = r[rule.column]
            return v is not None and bool(cmp(v, rule.threshold))

        if not holds(rows[-1]):
            continue
        i = len(rows) - 1
        while i > 0 and holds(rows[i - 1]):
            i -= 1
        since = rows[i][tcol]
        if (rows[-1][tcol] - since).total_seconds() < rule.for_:
            continue
        last = rows[-1]
        labels = _labels(rule.name, rule.severity, **{c: key[j] for j, c in enumerate(rule.labels)})
        thr = rule.threshold
        fmt = dict(last, value=last[rule.column],
                   threshold=int(thr) if isinstance(thr, float) and thr.is_integer() else thr)
        try:
            summary = rule.summary.format(**fmt) if rule.summary else None
        except (KeyError, IndexError, ValueError) as e:
            summary = f"{rule.summary} (cannot fill in: {e})"
        ann = {"summary": summary or f"{rule.table}.{rule.column} = {last[rule.column]} {rule.op} {fmt['threshold']}"
                                     + "".join(f", {c}={key[j]}" for j, c in enumerate(rule.labels))}
        if rule.runbook:
            ann["runbook"] = rule.runbook
        out.append(Alert(labels, ann, since, source=rule.table))
    return out


# --- enrichment: incident narrative, causes, dashboard link -------------------------------------


def enrich(alerts: Iterable[Alert], tables: Tables, dashboard_url: str | None) -> list[Alert]:
    """Add the incident narrative and link, and the probable causes, where the gold tables know them."""
    incidents = _rows(tables.get("incidents"))
    causes: dict[tuple[str, str], list[str]] = {}
    for c in _rows(tables.get("finding_causes")):
        causes.setdefault((c["effect_table"], c["effect_id"]), []).append(c["message"])
    out = []
    for a in alerts:
        cluster = a.labels.get("cluster")
        match = None
        for inc in incidents:
            if inc["cluster"] != cluster:
                continue
            if inc["start_ts"] - timedelta(seconds=60) <= a.starts_at <= inc["end_ts"] + timedelta(seconds=60) or (
                    inc["status"] == "open" and a.starts_at >= inc["start_ts"]):
                if match is None or inc["start_ts"] > match["start_ts"]:
                    match = inc
        ann = dict(a.annotations)
        if match is not None:
            ann["incident_id"] = match["incident_id"]
            ann["narrative"] = match["narrative"]
            if dashboard_url:
                ann["dashboard"] = f"{dashboard_url}/incident/{match['incident_id']}"
        found = [m for ref in a.refs for m in causes.get(ref, [])]
        if found:
            ann["cause"] = " ".join(dict.fromkeys(found))
        if "dashboard" not in ann and dashboard_url:
            ann["dashboard"] = dashboard_url
        a.annotations = ann
        out.append(a)
    return out


# --- evaluate: every rule, errors kept apart ----------------------------------------------------


@dataclass
class Evaluation:
    alerts: list[Alert]
    errors: dict[str, str]  # rule name → what went wrong (the other rules still ran)


def _active_since(state: pa.Table | None, now: datetime, lookback: float) -> dict[str, datetime]:
    """`active_runs` over the broker_state rows within `lookback` of `now` (a run that began
    earlier counts from the window's start: later, so never a split brain that was not seen)."""
    if state is None or state.num_rows == 0:
        return {}
    cutoff = now - timedelta(seconds=lookback)
    cols = [c for c in ("ts", "instance", "active", "uptime_ms") if c in state.column_names]
    return active_runs(r for r in state.select(cols).to_pylist()
                       if r["ts"] is not None and cutoff <= r["ts"] <= now)


def evaluate(cfg: AlertsConfig, tables: Tables, now: datetime, live: pa.Table | None = None) -> Evaluation:
    """All rules at `now` over `tables` (name → contract-shaped table; absent = no alerts from it).
    `live`: broker_state rows passed in by the service; without it, silver broker_state is used."""
    rules = cfg.rules
    live_source = "live" if live is not None else "broker_state"
    state = live if live is not None else tables.get("broker_state")
    live_rows = () if live is None else tuple(live.select(["ts", "group_name", "instance", "reachable", "error"]).to_pylist())
    ctx = Context(now=now, rules=rules, live=live_latest(state, now, rules.lookback), live_source=live_source,
                  live_rows=live_rows, active_since=_active_since(state, now, rules.lookback))
    alerts: list[Alert] = []
    errors: dict[str, str] = {}
    for name, (fn, _tables) in BUILTIN_RULES.items():
        if name in rules.disabled:
            continue
        try:
            alerts.extend(fn(tables, ctx))
        except Exception as e:  # noqa: BLE001 - one broken rule must not silence the others
            errors[name] = f"{type(e).__name__}: {e}"
    for tr in cfg.threshold_rules:
        try:
            data = tables.get(tr.table)
            if tr.table == "broker_state" and live is not None:
                data = live if data is None else pa.concat_tables([data, live.select(data.column_names).cast(data.schema)])
            alerts.extend(rule_threshold(tr, data, now, rules.lookback))
        except Exception as e:  # noqa: BLE001
            errors[tr.name] = f"{type(e).__name__}: {e}"
    alerts = [a for a in alerts if a.alertname not in rules.disabled]
    for a in alerts:
        if a.alertname in rules.severity:
            a.labels["severity"] = rules.severity[a.alertname]
    merged: dict[str, Alert] = {}
    for a in alerts:  # the same label set from two sources is one alert: keep the earliest start
        prev = merged.get(a.fingerprint)
        if prev is None:
            merged[a.fingerprint] = a
        else:
            prev.refs.extend(a.refs)
            if a.starts_at < prev.starts_at:
                prev.starts_at = a.starts_at
            if a.source and a.source not in prev.source.split(","):
                prev.source = f"{prev.source},{a.source}" if prev.source else a.source
    return Evaluation(enrich(merged.values(), tables, cfg.dashboard_url), errors)
