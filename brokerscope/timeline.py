"""The failover story in plain words, from gold tables (read with delta-rs, no JVM)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow as pa

from collectors.text import printable


@dataclass(frozen=True)
class Entry:
    ts: datetime
    group: str
    instance: str
    what: str  # active | last-active | unanswered | silent-while-active | failover | failback | restart | answering
    #           | back-inactive | split-brain | gc-pause | clients
    #           | zk-election | zk-quorum-lost | zk-quorum-back | zk-lock-handover | zk-lease-vanished | zk-gc-lost-lease | zk-gc-election
    text: str
    instances: tuple[str, ...] = ()  # every instance concerned (a split brain: both); default: (instance,)
    facts: dict = field(default_factory=dict, compare=False)  # the numbers in the text, as fields (JSON)

    def as_json(self) -> dict:
        """ts (RFC 3339 UTC), group, what, text, instance (None when several), instances, then the
        numbers behind the text as fields (outage bounds, messages per side, …; timestamps as RFC 3339)."""
        many = self.instances or (self.instance,)
        facts = {k: _iso(v) if isinstance(v, datetime) else v for k, v in self.facts.items()}
        return {"ts": _iso(self.ts), "group": self.group, "what": self.what, "text": self.text,
                "instance": many[0] if len(many) == 1 else None, "instances": list(many), **facts}


def _iso(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hms(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%H:%M:%S.") + f"{ts.microsecond // 100000}"


def _rows(t: pa.Table) -> list[dict]:
    return t.to_pylist()


def _fmt_s(x: float | None) -> str:
    return "?" if x is None else f"{x:.1f} s"


#: the broker_state columns the timeline reads (`reachable` may be missing from older callers' reads)
STATE_COLUMNS = ["instance", "ts", "error", "role", "active", "reachable"]


def build_timeline(
    intervals: pa.Table,
    failovers: pa.Table,
    split_brain: pa.Table,
    broker_state: pa.Table,
    group: str | None = None,
    since: datetime | None = None,
    gc_findings: pa.Table | None = None,
    zk_tables: dict[str, pa.Table] | None = None,
    until: datetime | None = None,
    client_shifts: pa.Table | None = None,
) -> list[Entry]:
    state_rows = _rows(broker_state.select([c for c in STATE_COLUMNS if c in broker_state.column_names]))
    errors = {(r["instance"], r["ts"]): r["error"] for r in state_rows if r["error"]}
    unanswered = {(r["instance"], r["ts"]): r["error"] or "no answer" for r in state_rows
                  if r.get("reachable", not r["error"]) is False}
    role_at = {(r["instance"], r["ts"]): r["role"] for r in state_rows}
    standby_seen: dict[str, list[datetime]] = {}
    role_word = {}
    for r in sorted(state_rows, key=lambda r: r["ts"]):
        if r["active"] is True:
            role_word[r["instance"]] = r["role"]
        elif r["role"] in ("slave", "backup"):
            standby_seen.setdefault(r["instance"], []).append(r["ts"])
    entries: list[Entry] = []
    handed_over = {(e["to_instance"], e["new_first_active"]) for e in _rows(failovers)}
    ended_by_event = {(e["from_instance"], e["old_last_active"]) for e in _rows(failovers)}

    for iv in _rows(intervals):
        inst, g = iv["instance"], iv["group_name"]
        word = role_word.get(inst, "active")
        entries.extend(silent_while_active(iv, state_rows, unanswered, word))
        if (inst, iv["start_ts"]) not in handed_over:
            entries.append(Entry(iv["start_ts"], g, inst, "active", f"{inst} {word} (first seen active)"))
        if iv["is_open"]:
            continue
        if (inst, iv["end_ts"]) not in ended_by_event:
            entries.append(Entry(iv["end_ts"], g, inst, "last-active", f"{inst} last seen {word}"))
        if iv["end_upper"] is not None and iv["end_upper_state"] == "unanswered":
            err = errors.get((inst, iv["end_upper"])) or "no answer"
            entries.append(Entry(iv["end_upper"], g, inst, "unanswered", f"{inst} stopped answering ({_short(err)})"))
        back = iv["first_inactive_after"]
        if back is not None:
            role = role_at.get((inst, back), "standby")
            if role in ("slave", "backup"):
                entries.append(Entry(back, g, inst, "back-inactive", f"{inst} back, as {role}"))
            else:
                entries.append(Entry(back, g, inst, "answering", f"{inst} answering again ({role}, not {word})"))
                later = [t for t in standby_seen.get(inst, []) if t > back]
                if later:
                    standby = role_at[(inst, later[0])]
                    entries.append(Entry(later[0], g, inst, "back-inactive", f"{inst} back, as {standby}"))
    for e in _rows(failovers):
        g, old, new = e["group_name"], e["from_instance"], e["to_instance"]
        word = role_word.get(new, "active")
        entries.append(Entry(e["old_last_active"], g, old, "last-active", f"{old} last seen {role_word.get(old, 'active')}"))
        if e["event_type"] == "restart":
            text = f"{new} {word} again after a restart"
        else:
            text = f"{new} became {word} — {e['event_type']} {old} → {new}"
        if e["outage_upper_s"] is not None:
            lower = f", ≥ {e['outage_lower_s']:.1f} s" if e["outage_lower_s"] is not None else ""
            text += f", outage ≤ {e['outage_upper_s']:.1f} s{lower}"
        if e["detection_s"] is not None:
            text += f" (taken over {_fmt_s(e['detection_s'])} after {old}'s first missed scrape)"
        if e["overlap"]:
            text += " — both were active for a while, see SPLIT BRAIN"
        facts = {"from_instance": old, "to_instance": new, "old_last_active": e["old_last_active"],
                 "new_first_active": e["new_first_active"], "outage_lower_s": e["outage_lower_s"],
                 "outage_upper_s": e["outage_upper_s"], "detection_s": e["detection_s"], "overlap": bool(e["overlap"])}
        entries.append(Entry(e["new_first_active"], g, new, e["event_type"], text, facts=facts))
    for w in _rows(split_brain):
        text = (
            f"SPLIT BRAIN ({w['certainty']}): {w['instance_a']} and {w['instance_b']} both active "
            f"from {_hms(w['certain_start'])} to {_hms(w['certain_end'])} ({w['duration_s']:.1f} s observed"
        )
        if w["possible_start"] is not None and w["possible_end"] is not None:
            text += f", at most {(w['possible_end'] - w['possible_start']).total_seconds():.1f} s"
        text += ")"
        if w["enqueued_a"] is not None or w["enqueued_b"] is not None:
            text += f"; messages accepted: {w['instance_a']} {w['enqueued_a'] or 0}, {w['instance_b']} {w['enqueued_b'] or 0}"
        pair = (w["instance_a"], w["instance_b"])
        facts = {"certainty": w["certainty"], "certain_start": w["certain_start"], "certain_end": w["certain_end"],
                 "possible_start": w["possible_start"], "possible_end": w["possible_end"],
                 "duration_s": w["duration_s"],
                 "messages_accepted": {w["instance_a"]: w["enqueued_a"], w["instance_b"]: w["enqueued_b"]}}
        entries.append(Entry(w["certain_start"], w["group_name"], f"{pair[0]}+{pair[1]}", "split-brain", text,
                             instances=pair, facts=facts))

    if client_shifts is not None:
        entries.extend(client_shift_entries(client_shifts))
    if gc_findings is not None:
        entries.extend(gc_pause_entries(gc_findings))
    if zk_tables:
        entries.extend(zk_entries(**zk_tables))

    seen = set()
    out = []
    for e in sorted(entries, key=lambda e: (e.group, e.ts, e.what != "last-active")):
        key = (e.ts, e.instance, e.what)
        if key in seen:
            continue
        seen.add(key)
        if group and e.group != group:
            continue
        if since and e.ts < since or until and e.ts > until:
            continue
        out.append(e)
    return out


def client_shift_entries(shifts: pa.Table) -> list[Entry]:
    """The clients' move of each failover (gold client_shifts) where it was measured: when they were
    first seen on the new live, or, when none came, where the look ended."""
    out = []
    for r in _rows(shifts):
        if r["state"] not in ("arrived", "none-arrived"):
            continue
        at = r["arrived_ts"] or r["window_end"]
        facts = {k: r[k] for k in ("connections_before", "connections_after", "moved_fraction", "arrived_after",
                                   "shift_lower_s", "shift_upper_s", "quality")}
        quality = "" if r["quality"] == "bounded" else f" [{r['quality']}]"
        out.append(Entry(at, r["group_name"], r["to_instance"], "clients", f"clients: {r['message']}{quality}",
                         facts=facts))
    return out


# GC findings that bear on failover: a JVM frozen past a ZooKeeper session's third or a connection TTL
GC_TIMELINE_CODES = ("gc.pause-over-connection-ttl", "gc.pause-over-third-session", "gc.safepoint-not-gc")


def _secs(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


def gc_pause_entries(findings: pa.Table) -> list[Entry]:
    """One entry per stop-the-world pause with a GC_TIMELINE_CODES finding (its codes in one line)."""
    by_pause: dict[tuple, list[dict]] = {}
    for f in _rows(findings):
        if f["code"] in GC_TIMELINE_CODES and f["ts"] is not None and f["event_seq"] is not None:
            by_pause.setdefault((f["target"], f["file_id"], f["event_seq"]), []).append(f)
    out = []
    for fs in by_pause.values():
        f = fs[0]
        codes = {x["code"]: x for x in fs}
        reasons = []
        if "gc.pause-over-connection-ttl" in codes:
            reasons.append(f"over connection-ttl {_secs(codes['gc.pause-over-connection-ttl']['threshold'])}")
        for code in ("gc.pause-over-third-session", "gc.safepoint-not-gc"):
            if code in codes:
                reasons.append(f"over ⅓ of session-ms {_secs(codes[code]['threshold'] * 3)}")
        what = f"{f['event_type']}, {f['cause']}" if f["cause"] else f["event_type"]
        head = (f"stopped {_secs(f['value'])} in a safepoint ({f['cause']}, not GC)" if f["event_type"] == "safepoint"
                else f"GC pause {_secs(f['value'])} ({what})")
        out.append(Entry(f["ts"], f["group_name"] or f["target"], f["target"], "gc-pause",
                         f"{f['target']} {head} — {', '.join(reasons)}"))
    return out


# ZooKeeper: elections, quorum loss and return (zk_quorum, zk_elections), lock events (zk_findings)
ZK_TIMELINE_TABLES = ("zk_quorum", "zk_elections", "zk_findings")
ZK_EVENT_CODES = {"zk.lock-handover": "zk-lock-handover", "zk.lease-vanished": "zk-lease-vanished",
                  "zk.gc-pause-lost-lease": "zk-gc-lost-lease", "zk.gc-pause-election": "zk-gc-election"}


ZK_ELECTION_CAUSES = {"old leader unanswered": "stopped answering", "old leader not serving": "stopped serving",
                      "leader stepped down": "stepped down"}


def _dur(s: float | None) -> str:
    return "?" if s is None else (f"{s:.2f} s" if s < 10 else f"{s:.1f} s")


def zk_entries(zk_quorum: pa.Table | None = None, zk_elections: pa.Table | None = None,
               zk_findings: pa.Table | None = None) -> list[Entry]:
    """Elections (with their duration), quorum lost / back, lock handovers and vanished leases."""
    out = []
    for q in _rows(zk_quorum) if zk_quorum is not None else []:
        if q["status"] == "lost":
            out.append(Entry(q["start_ts"], q["ensemble"], q["ensemble"], "zk-quorum-lost",
                             f"QUORUM LOST: ensemble {q['ensemble']} — fewer than a majority of its {q['voters']} "
                             f"servers answer, no leader can be elected"
                             + (f" (lost between {_hms(q['start_lower'])} and {_hms(q['start_ts'])})" if q["start_lower"] else "")))
    for e in _rows(zk_elections) if zk_elections is not None else []:
        measured = f"; ZooKeeper measured {e['zk_election_ms']:.0f} ms" if e["zk_election_ms"] is not None else ""
        lower = f", ≥ {_dur(e['duration_lower_s'])}" if e["duration_lower_s"] is not None else ""
        at = e["elected_at"] or e["new_first_seen"]
        if e["cause"] == "quorum lost":
            text = (f"quorum back: {e['new_leader']} leads (epoch {e['new_epoch']}) after {_dur(e['quorum_lost_s'])} "
                    f"without quorum — {_dur(e['duration_upper_s'])} after {e['old_leader']} was last seen leading{measured}")
            what = "zk-quorum-back"
        else:
            why = ZK_ELECTION_CAUSES.get(e["cause"], e["cause"])
            text = (f"election: {e['new_leader']} leads (epoch {e['new_epoch']}); {e['old_leader']} (epoch "
                    f"{e['old_epoch']}) {why} between {_hms(e['old_last_seen'])} and {_hms(e['old_gone_seen'])} — "
                    f"took ≤ {_dur(e['duration_upper_s'])}{lower}{measured}")
            what = "zk-election"
        out.append(Entry(at, e["ensemble"], e["new_leader"], what, text))
    for f in _rows(zk_findings) if zk_findings is not None else []:
        if f["code"] in ZK_EVENT_CODES:
            out.append(Entry(f["end_ts"], f["group_name"], f["instance"] or f["node_id"] or f["group_name"],
                             ZK_EVENT_CODES[f["code"]], f["message"]))
    return out


def silent_while_active(iv: dict, state_rows: list[dict], unanswered: dict, word: str) -> list[Entry]:
    """Runs of unanswered scrapes INSIDE an active interval (the instance answered as active before
    and after): a frozen JVM (SIGSTOP, a long GC pause) or a cut network. Its state there is unknown
    and clients got no answer, even though the interval (and a failover's outage bound, which is
    about the role) runs through it."""
    if not iv["unanswered_inside"]:
        return []
    inst, lo, hi = iv["instance"], iv["start_ts"], iv["end_ts"]
    mine = sorted(r["ts"] for r in state_rows if r["instance"] == inst and lo <= r["ts"] <= hi)
    out, run = [], []
    for ts in mine + [None]:
        if ts is not None and (inst, ts) in unanswered:
            run.append(ts)
            continue
        if run:
            err = _short(unanswered[(inst, run[0])])
            out.append(Entry(run[0], iv["group_name"], inst, "silent-while-active",
                             f"{inst} not answering while {word} ({err}) until {_hms(run[-1])}: {len(run)} scrape(s), "
                             f"{(run[-1] - run[0]).total_seconds():.1f} s or more with its state unknown "
                             "(frozen JVM or cut network?)", facts={"until": run[-1], "scrapes": len(run)}))
            run = []
    return out


def _short(err: str) -> str:
    first = err.split(";")[0]
    if "within the timeout" in first:
        return "no answer within the timeout"
    for marker in ("connection refused", "connection reset", "HTTP 401", "HTTP 403", "truncated", "HTML"):
        if marker.lower() in first.lower():
            return marker
    return first[:80]




def render_text(entries: list[Entry]) -> str:
    """Entries by group, one line each (an empty list: the caller says why, see brokerscope.cli)."""
    lines = []
    group = None
    for e in entries:
        if e.group != group:
            group = e.group
            lines.append(f"group {printable(group)}  ({e.ts.astimezone(timezone.utc):%Y-%m-%d} UTC)")
        lines.append(f"  {_hms(e.ts)}  {printable(e.text)}")
    return "\n".join(lines) + "\n"


def render_incidents(incidents: pa.Table, group: str | None = None, since: datetime | None = None,
                     until: datetime | None = None) -> str:
    """Gold incidents as text, oldest first: title, when, status, the narrative and the advice
    (`group`: only that cluster; `since`/`until`: only incidents going on between them)."""
    rows = incidents_between(incidents, group, since, until)
    if not rows:
        return ""
    lines = ["", "=== incidents ==="]
    for r in rows:
        start = r["start_ts"].astimezone(timezone.utc)
        lines.append(f"[{printable(r['severity'].upper())}] {printable(r['title'])}")
        lines.append(f"  {start:%Y-%m-%d %H:%M:%S} UTC, {_dur(r['duration_s'])}, {r['status']}, "
                     f"{r['finding_count']} finding(s) (incident {r['incident_id'][:8]})")
        lines.extend(f"  {printable(line)}" for line in r["narrative"].splitlines())
        lines.extend(f"  → {printable(line)}" for line in (r["advice"] or "").splitlines())
    return "\n".join(lines) + "\n"


INCIDENT_JSON_FIELDS = ("incident_id", "cluster", "kind", "severity", "status", "start_ts", "end_ts", "duration_s",
                        "title", "narrative", "advice", "finding_count", "has_split_brain", "has_failover")


def incident_json(r: dict) -> dict:
    """One gold incident for machines: its fields, the 8-character short id, instances and codes as lists."""
    out = {k: (_iso(r[k]) if isinstance(r.get(k), datetime) else r.get(k)) for k in INCIDENT_JSON_FIELDS}
    out["short_id"] = r["incident_id"][:8]
    out["instances"] = [x for x in (r.get("instances") or "").split(",") if x]
    out["codes"] = [x for x in (r.get("codes") or "").split(",") if x]
    return out


def incidents_between(incidents: pa.Table, group: str | None, since: datetime | None, until: datetime | None) -> list[dict]:
    """Incidents of the group (all when None) going on at some point from since to until, oldest first."""
    rows = [r for r in _rows(incidents) if (not group or r["cluster"] == group) and (not since or r["end_ts"] >= since)
            and (not until or r["start_ts"] <= until)]
    return sorted(rows, key=lambda r: (r["start_ts"], r["incident_id"]))


def render_json(entries: list[Entry], incidents: list[dict] | None = None, since: datetime | None = None,
                until: datetime | None = None) -> str:
    """{"since", "until", "entries": [...], "incidents": [...]} (Entry.as_json, incident_json)."""
    doc = {"since": since and _iso(since), "until": until and _iso(until), "entries": [e.as_json() for e in entries],
           "incidents": [incident_json(r) for r in incidents or []]}
    return json.dumps(doc, indent=2) + "\n"
