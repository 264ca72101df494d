"""The state of an HA group now, in one word and one line: ok, degraded, failing or unknown.

A pure function of what `dashboards.data.group_statuses` gathered for a group (the newest
broker_state row per member, open role intervals, open risks and incidents, ZooKeeper quorum) and
the time now. It never says more than the data shows:

* **unknown** — the group's newest observation is older than `stale_after_s` (a few scrape
  intervals plus the analysis interval: broker_state is written by the analysis). The line says
  how old, and what the group looked like then.
* **failing** — no live broker (or no quorum), or more than one live broker of an exclusive
  live/backup pair (split brain).
* **degraded** — one live but nothing to fail over to: its backup is not answering, not in sync,
  or not seen (unprotected live); an open HA risk (stale backup, quorum at risk, …); a ZooKeeper
  quorum that holds by a bare majority; a member or collector not answering.
* **ok** — otherwise, and only on fresh data.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import quote

from lakehouse.tables import STANDBY_ROLES

EXCLUSIVE_KINDS = ("activemq", "artemis")  # exactly one live broker, the others wait as backup
STALE_SCRAPES = 3  # data older than this many scrape intervals (plus the analysis interval) is not "now"
STATE_RANK = {"failing": 0, "unknown": 1, "degraded": 2, "ok": 3}
RISK_VIEW = "/risks"


@dataclass(frozen=True)
class GroupHealth:
    state: str  # ok | degraded | failing | unknown
    reason: str  # one line, for the card
    href: str | None  # the incident or finding view that says more
    age_s: float | None  # seconds since the group's newest observation (None: never observed)


def stale_after(scrape_interval_s: float, analysis_interval_s: float) -> float:
    """Seconds after which the newest observation of a group no longer tells its state now."""
    return STALE_SCRAPES * scrape_interval_s + analysis_interval_s


def age_text(seconds: float) -> str:
    """'42 s', '25 min', '3 h 10 min', '2 d 4 h'."""
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 172800:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def _utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts


def incident_href(incident_id: str) -> str:
    return "/incident/" + quote(incident_id, safe="")


def _worst_incident_href(grp: dict) -> str | None:
    open_ = grp.get("incidents") or []
    return incident_href(open_[0]["incident_id"]) if open_ else None


def _fresh(row: dict, now: datetime, stale_after_s: float) -> bool:
    ts = _utc(row.get("ts"))
    return ts is not None and (now - ts).total_seconds() <= stale_after_s


def _member_words(inst: str, r: dict) -> str:
    if not r.get("reachable"):
        return f"{inst} not answering"
    return f"{inst} {r.get('role') or 'answering'}"


def _risk_reason(grp: dict) -> tuple[str, str] | None:
    """The worst open HA risk as (reason, href): its incident when it has one, else the risk view."""
    risks = grp.get("risks") or []
    if not risks:
        return None
    rank = {"critical": 0, "error": 1, "warn": 2, "info": 3}
    r = min(risks, key=lambda x: rank.get(x.get("severity"), 9))
    where = f" on {r['instance']}" if r.get("instance") else ""
    return f"{r['code']}{where}: {r.get('message') or ''}".rstrip(": "), _worst_incident_href(grp) or RISK_VIEW


def exclusive_pair_health(grp: dict, now: datetime, stale_after_s: float) -> tuple[str, str]:
    """State and reason of an ActiveMQ/Artemis live/backup group from its members' newest rows."""
    members = grp.get("members") or {}
    fresh = {i: r for i, r in members.items() if _fresh(r, now, stale_after_s)}
    live = sorted(i for i, r in fresh.items() if r.get("reachable") and r.get("active"))
    others = ", ".join(_member_words(i, r) for i, r in sorted(fresh.items()) if i not in live)
    gone = sorted(set(members) - set(fresh))
    unseen = f"; no recent data from {', '.join(gone)}" if gone else ""
    if len(live) > 1:
        return "failing", f"split brain: {' and '.join(live)} both live{unseen}"
    if not live:
        return "failing", f"no live broker: {others or 'no member answering'}{unseen}"
    standby = [i for i, r in fresh.items() if i not in live and r.get("reachable") and r.get("role") in STANDBY_ROLES]
    if not standby:
        why = f"backup {others}" if others else "no backup observed"
        return "degraded", f"unprotected live {live[0]}: {why}{unseen}"
    unsynced = [i for i in standby if fresh[i].get("replica_sync") is False]
    if len(unsynced) == len(standby):
        return "degraded", f"live {live[0]}, but backup {', '.join(unsynced)} NOT synchronized{unseen}"
    if gone:
        return "degraded", f"live {live[0]}, backup {', '.join(standby)}{unseen}"
    return "ok", f"live {live[0]}, backup {', '.join(standby)} waiting"


def shared_group_health(grp: dict, now: datetime, stale_after_s: float) -> tuple[str, str]:
    """Kafka and WebLogic: every member serves; failing when none answers, degraded when some do not."""
    members = grp.get("members") or {}
    fresh = {i: r for i, r in members.items() if _fresh(r, now, stale_after_s)}
    up = sorted(i for i, r in fresh.items() if r.get("reachable"))
    down = sorted(set(members) - set(up))
    if not up:
        return "failing", f"no member answering ({', '.join(down)})"
    if down:
        return "degraded", f"{', '.join(down)} not answering; {', '.join(up)} up"
    return "ok", f"{len(up)} member(s) answering"


def quorum_health(grp: dict) -> tuple[str, str]:
    q = grp.get("quorum")
    if q is None:
        return "unknown", "quorum not observed"
    if q.get("status") != "present":
        return "failing", f"quorum {q.get('status')}: no leader can be elected"
    if q.get("bare_majority"):
        return "degraded", f"quorum at risk: bare majority of {q.get('voters')}, leader {q.get('leader') or '—'}"
    return "ok", f"quorum present, leader {q.get('leader') or '—'}"


def group_health(grp: dict, now: datetime, stale_after_s: float) -> GroupHealth:
    """The group's state now (see the module docstring); `now` is timezone-aware."""
    last = _utc(grp.get("last_seen"))
    age = None if last is None else max(0.0, (now - last).total_seconds())
    href = _worst_incident_href(grp)
    if age is None:
        return GroupHealth("unknown", "never observed: no broker_state rows for this group", href, None)
    if age > stale_after_s:
        then = f"; last seen live: {', '.join(grp['live'])}" if grp.get("live") else ""
        return GroupHealth("unknown", f"no data for {age_text(age)} (newer than {age_text(stale_after_s)} "
                                      f"is needed to tell the state now){then}", href, age)
    if grp.get("kind") == "zookeeper":
        state, reason = quorum_health(grp)
    elif grp.get("kind") in EXCLUSIVE_KINDS:
        state, reason = exclusive_pair_health(grp, now, stale_after_s)
    else:
        state, reason = shared_group_health(grp, now, stale_after_s)
    if state == "ok":
        risk = _risk_reason(grp)
        if risk:
            return GroupHealth("degraded", risk[0], risk[1], age)
        down = [r["target"] for r in grp.get("collector_errors") or []]
        if down:
            return GroupHealth("degraded", f"collector: {', '.join(down)} not answering", href, age)
    elif href is None and grp.get("risks"):
        href = RISK_VIEW
    return GroupHealth(state, reason, href, age)


def health_rank(h: GroupHealth) -> int:
    return STATE_RANK[h.state]
