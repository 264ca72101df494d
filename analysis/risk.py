"""HA risk states: silver broker_state + gold role_intervals, failover_events, split_brain_windows
(+ the targets' `ha:` config) → gold risk_findings.

Rules (thresholds: the config's `analysis.risk` section; HA facts: the targets' `ha:` blocks).

* `unprotected-live` (error): an instance of an ActiveMQ/Artemis group observed active while no
  other instance of its group was seen waiting as standby (`slave` / `backup`, answered, at most
  `STANDBY_MAX_AGE_SCRAPES` scrape intervals before), over two or more of its answered observations
  for at least `unprotected_grace` (60 s). A failover is therefore never one (the old live comes
  back as standby well within the grace), and never from one sample. Certain when every other
  instance answered throughout, showing it was not standby; possible when one did not answer (a
  missed scrape is indeterminate) or the group has no other monitored instance. A live whose backup
  is attached but not in sync (Artemis `ReplicaSync` false) is analysis/lag.py's
  `replica-sync-gap` (replication_findings), not repeated here.
* `stale-backup` (warn): an Artemis backup answering as backup with a local `ActivationSequence`
  below its live's (ActivationSequenceStateMachine: a candidate whose sequence differs is Stale and
  cannot take over) for `stale_backup_grace`. The ZooKeeper job's `zk.backup-stale` compares with
  the coordinated sequence in ZooKeeper instead; this needs no ZooKeeper access.
* `quorum-too-small` (warn): Artemis groups replicating with vote-based quorum (`HAPolicy`
  `Replicated`/`Replica`/`… w/quorum voting`, or `ha.quorum_vote: true`), all such groups of the
  lakehouse taken as one cluster, fewer than 3 of them: losing one live/backup pair leaves no
  majority to vote; a single pair has no vote at all (its backup activates on any loss of the
  primary, dead or cut off: measured on 2.40.0). `quorum-lost-pair` (error): some of those groups had no active instance for
  `unprotected_grace` and the rest were fewer than a majority of all.
* `check-for-live-server-off` (critical): in an Artemis split-brain window, the instance that became
  active second had been live before and came back (restart): a primary that restarts without
  `check-for-active-server` (the deprecated `check-for-live-server`; false by default; in no MBean)
  activates although its backup serves — seen on a real 2.40.0 classic replication pair (drill
  artemis-restart-split-brain). Certain with `ha.check_for_live_server: false`, possible when not
  configured, none when it is true.
* `shutdown-on-failure-off` (warn): an ActiveMQ target with both `ha.shutdown_on_master_failure`
  and `ha.shutdown_on_slave_failure` false (a standing condition, over the target's observations).
* `failover-duration` (warn): a failover whose duration is bounded by configuration, with advice:
  ActiveMQ — outage ≥ half the lock retry (`lockAcquireSleepInterval`, 10 s default) or lease
  (`lease_duration_ms`); Artemis with a ZooKeeper lock manager — connection-ttl (60 s default) well
  above session-ms (18 s default): clients hold on to a dead live long after the backup activated,
  so set connection-ttl-override near session-ms.

Shape: per-group sequence logic in pandas/numpy (`group_state_risks`, run by `applyInPandas` over
broker_state); the rules over gold tables and config are small pure functions over pandas frames
(gold tables hold a row per event). `run_risk` reads, calls and writes (overwrite: reruns and
`--full` give the same rows); incremental from the job's watermark (broker_state's version, kept with
the state table risk_carry): only the groups with new broker_state rows are recomputed, from shortly
before their last stored rows, and the rules over gold tables in whole from a per-group summary
(comment "incremental runs" below).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import runs as runs_module
from analysis.frames import days_spanned
from analysis.runs import (contract_frame, fmt_ts, latest_of, observed_certainty, other_state_words, run_bounds, seconds,
                           stable_id, true_runs, unobserved_note, utc_ns)
from analysis.watermark import Watermark, fingerprint, pinned_read, read_watermark
from lakehouse.tables import RISK_CARRY, RISK_FINDINGS

HA_KINDS = ("activemq", "artemis")  # exclusive live/backup kinds a backup can protect
STANDBY_ROLES = ("slave", "backup")
STANDBY_MAX_AGE_SCRAPES = 3  # a standby seen longer ago than this many scrape intervals no longer counts
DEFAULT_LOCK_ACQUIRE_SLEEP_MS = 10_000  # ActiveMQ AbstractLocker.DEFAULT_LOCK_ACQUIRE_SLEEP_INTERVAL
BOUND_SHARE = 0.5  # a failover at least this share of its configured bound was decided by it
TTL_OVER_SESSION = 1.5  # connection-ttl this much above session-ms: clients hang on after the failover
STATE_COLUMNS = ["ts", "kind", "group_name", "instance", "reachable", "active", "role", "activation_sequence", "error"]


@dataclass(frozen=True)
class RiskParams:
    """What the rules need from the config."""

    unprotected_grace_s: float = 60.0
    stale_backup_grace_s: float = 60.0
    scrape_interval_s: float = 5.0
    ha: dict[str, dict] = field(default_factory=dict)  # target → its `ha:` settings (unset keys absent)
    timeouts_ms: dict[str, dict] = field(default_factory=dict)  # target → connection_ttl_ms, zk_session_ms
    hole_s: float = math.inf  # no observation for longer than this is a hole (analysis.hole_tolerance)

    @property
    def standby_max_age(self) -> np.timedelta64:
        return np.timedelta64(int(STANDBY_MAX_AGE_SCRAPES * self.scrape_interval_s * 1e9), "ns")

    def setting(self, target: str, key: str):
        return self.ha.get(target, {}).get(key)




def _finding(code: str, severity: str, certainty: str, kind: str, group: str, instance: str | None, bounds: dict,
             value: float | None, threshold: float | None, unit: str | None, detail: str | None, message: str,
             advice: str) -> dict:
    row = dict(bounds, code=code, severity=severity, certainty=certainty, kind=kind, group_name=group, instance=instance,
               value=value, threshold=threshold, unit=unit, detail=detail, message=message, advice=advice)
    row["duration_s"] = seconds(np.datetime64(row["end_ts"], "ns") - np.datetime64(row["start_ts"], "ns"))
    row["finding_id"] = stable_id(code, group, instance, row["start_ts"])
    return row


def _secs(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def _span(row: dict) -> str:
    still = " (still so at the last scrape)" if row["is_open"] else ""
    return f"from {fmt_ts(row['start_ts'])} to {fmt_ts(row['end_ts'])}{still}{unobserved_note(row.get('unobserved_s') or 0)}"


# --- per group, from broker_state ------------------------------------------------------------------------


def standby_flags(other: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per observation of one instance: waiting as standby; answered."""
    answered = other["reachable"].astype(bool).to_numpy()
    idle = (other["active"].astype("boolean") == False).fillna(False).to_numpy(dtype=bool)  # noqa: E712
    return answered & idle & other["role"].isin(STANDBY_ROLES).to_numpy(), answered


def unprotected_live(state: pd.DataFrame, params: RiskParams, instances: list[str] | None = None,
                     series: dict | None = None) -> list[dict]:
    """unprotected-live findings of ONE group (rows of all its instances, any order). `instances`:
    every instance the group ever had, when `state` holds only recent rows (an incremental run):
    one without rows among them is one not seen lately, as in a full run. `series`, when given,
    receives per ("answered", instance) the times and flags (active, unprotected) of the series."""
    state = state.sort_values("ts", kind="stable")
    seen = dict(tuple(state.groupby("instance", sort=True)))
    by_instance = {i: seen.get(i, state.iloc[:0]).reset_index(drop=True) for i in sorted({*seen, *(instances or ())})}
    out = []
    for instance, rows in by_instance.items():
        rows = rows[rows["reachable"].astype(bool)].reset_index(drop=True)  # a missed scrape of the live says nothing
        if rows.empty:
            continue
        ts = utc_ns(rows["ts"])
        protected = np.zeros(len(rows), dtype=bool)
        unseen = np.zeros(len(rows), dtype=bool)  # some other instance not answering (or not seen recently)
        notes: dict[str, str] = {}
        for other_name, other in by_instance.items():
            if other_name == instance:
                continue
            if other.empty:  # known from the group's history, not among the rows read: not seen lately
                unseen[:] = True
                notes[other_name] = other_state_words(other, np.full(len(ts), -1))
                continue
            standby, answered = standby_flags(other)
            at = latest_of(other, ts, params.standby_max_age)
            protected |= (at >= 0) & standby[np.maximum(at, 0)]
            unseen |= (at < 0) | ~answered[np.maximum(at, 0)]
            notes[other_name] = other_state_words(other, at)
        active = (rows["active"].astype("boolean") == True).fillna(False).to_numpy(dtype=bool)  # noqa: E712
        if series is not None:
            series[("answered", instance)] = (ts, active & ~protected)
        starts, ends = true_runs(active & ~protected)
        bounds = run_bounds(ts, starts, ends, hole_s=params.hole_s)
        for k, (s, e) in enumerate(zip(starts, ends)):
            duration = seconds(ts[e] - ts[s])
            if e == s or duration < params.unprotected_grace_s:  # never from one sample
                continue
            first = rows.iloc[s]
            alone = not notes
            certainty = observed_certainty("possible" if alone or unseen[s : e + 1].any() else "certain",
                                           bounds["unobserved_s"][k])
            why = ("no other instance of the group is monitored" if alone
                   else "; ".join(f"{o} {text(s, e)}" for o, text in notes.items()))
            row = _finding(
                "unprotected-live", "error", certainty, first["kind"], first["group_name"], instance,
                {name: col[k] for name, col in bounds.items()}, duration, params.unprotected_grace_s, "s", why, "", "")
            row["message"] = (f"{instance} ({first['role']} of {first['group_name']}) served without a backup waiting "
                              f"for {_secs(duration)} {_span(row)}: {why}")
            row["advice"] = ("start (or repair) the backup so it waits for the lock / replicates again; until then "
                             "a failure of the live is an outage, and with replication also data loss")
            out.append(row)
    return out


def stale_backups(state: pd.DataFrame, params: RiskParams, series: dict | None = None) -> list[dict]:
    """stale-backup findings of ONE Artemis group: backups behind the live's activation sequence
    (`series`: as for unprotected_live, per ("backup", instance))."""
    state = state[state["kind"] == "artemis"].sort_values("ts", kind="stable")
    seq = pd.to_numeric(state["activation_sequence"], errors="coerce")
    answered = state["reachable"].astype(bool)
    live = state[answered & (state["active"].astype("boolean") == True).fillna(False) & (seq > 0)]  # noqa: E712
    out = []
    if live.empty:
        return out
    live_ts, live_seq = utc_ns(live["ts"]), pd.to_numeric(live["activation_sequence"]).to_numpy(dtype=float)
    for instance, rows in state[answered & (state["role"] == "backup") & (seq > 0)].groupby("instance"):
        rows = rows.reset_index(drop=True)
        ts = utc_ns(rows["ts"])
        own = pd.to_numeric(rows["activation_sequence"]).to_numpy(dtype=float)
        at = np.searchsorted(live_ts, ts, side="right") - 1
        fresh = (at >= 0) & (ts - live_ts[np.maximum(at, 0)] <= params.standby_max_age)
        theirs = np.where(fresh, live_seq[np.maximum(at, 0)], np.nan)
        if series is not None:
            series[("backup", instance)] = (ts, own < theirs)
        starts, ends = true_runs(own < theirs)
        bounds = run_bounds(ts, starts, ends, hole_s=params.hole_s)
        for k, (s, e) in enumerate(zip(starts, ends)):
            duration = seconds(ts[e] - ts[s])
            if e == s or duration < params.stale_backup_grace_s:
                continue
            first = rows.iloc[s]
            row = _finding("stale-backup", "warn", observed_certainty("certain", bounds["unobserved_s"][k]), "artemis", first["group_name"], instance,
                           {name: col[k] for name, col in bounds.items()}, theirs[e] - own[e], 0.0, "count",
                           f"ActivationSequence backup {own[e]:.0f}, live {theirs[e]:.0f}", "", "")
            row["message"] = (f"backup {instance} of {first['group_name']} has activation sequence {own[e]:.0f}, behind "
                              f"its live's {theirs[e]:.0f}, {_span(row)}: it is stale and cannot take over")
            row["advice"] = "restart the backup so it resynchronizes from the live before it is needed"
            out.append(row)
    return out


def group_state_risks(state: pd.DataFrame, params: RiskParams, instances: list[str] | None = None,
                      series: dict | None = None) -> pd.DataFrame:
    """unprotected-live and stale-backup findings of ONE group from its broker_state rows
    (`instances`, `series`: as for unprotected_live)."""
    if state.empty or state["kind"].iloc[0] not in HA_KINDS:
        return contract_frame([], RISK_FINDINGS)
    return contract_frame(unprotected_live(state, params, instances, series) + stale_backups(state, params, series),
                          RISK_FINDINGS)


# --- over gold tables and config ----------------------------------------------------------------------------


def is_vote_quorum(policy: str | None) -> bool:
    """Artemis HAPolicy names of replication with vote-based quorum (CATALOG §1.2)."""
    p = (policy or "").lower()
    return p in ("replicated", "replica") or ("quorum voting" in p and "pluggable" not in p)


def is_lock_manager(policy: str | None) -> bool:
    """Artemis HAPolicy names of replication coordinated by a lock manager (ZooKeeper)."""
    p = (policy or "").lower()
    return "lock manager" in p or "pluggable" in p or p in ("primary", "backup")


def standing_bounds(first_ts, last_ts) -> dict:
    """A condition that held over all observations: no observation before or after shows otherwise."""
    return {"start_ts": first_ts, "start_lower": None, "end_ts": last_ts, "end_upper": None, "is_open": True}


def vote_groups(groups: pd.DataFrame, params: RiskParams) -> pd.DataFrame:
    """The `groups` rows (group summary: group_name, kind, instances, ha_policy, first_ts, last_ts)
    of Artemis groups with vote-based quorum: the config's `ha.quorum_vote`, else the policy."""
    def votes(g) -> bool:
        configured = [params.setting(i, "quorum_vote") for i in g["instances"].split(",")]
        configured = [c for c in configured if c is not None]
        return any(configured) if configured else is_vote_quorum(g["ha_policy"])

    art = groups[groups["kind"] == "artemis"]
    return art[[votes(g) for _, g in art.iterrows()]] if len(art) else art


def quorum_findings(groups: pd.DataFrame, intervals: pd.DataFrame, params: RiskParams) -> list[dict]:
    """quorum-too-small per vote-quorum group; quorum-lost-pair where groups had no live and the
    rest were fewer than a majority of all."""
    vote = vote_groups(groups, params)
    n = len(vote)
    out = []
    names = ", ".join(sorted(vote["group_name"]))
    for _, g in vote.iterrows():
        if n >= 3:
            break
        out.append(_finding(
            "quorum-too-small", "warn", "certain", "artemis", g["group_name"], None, standing_bounds(g["first_ts"], g["last_ts"]),
            float(n), 3.0, "pairs", f"vote-quorum groups: {names}",
            f"{g['group_name']} replicates with vote-based quorum among {n} live/backup pair(s) ({names}): "
            + _too_few_voters(n),
            "run at least 3 live/backup pairs in the cluster, or coordinate through ZooKeeper (the lock-manager HA policy) "
            "instead of votes"))
    if n >= 2:
        out += lost_pairs(vote, intervals[intervals["group_name"].isin(vote["group_name"])], n, params)
    return out


def _too_few_voters(n: int) -> str:
    """What fewer than 3 vote-quorum pairs mean. One pair: Artemis skips the vote (2.40.0 logs
    AMQ221083 "ignoring quorum vote as max cluster size is 1") and the backup activates whenever it
    loses its primary — dead or only cut off."""
    if n == 1:
        return ("alone, there is nobody to vote, so Artemis skips the vote and the backup activates whenever it loses "
                "the primary — whether the primary died or only the link between them did: a network split gives two "
                "live brokers")
    return ("with fewer than 3, losing one pair leaves no majority to vote — a backup cannot be voted live, and a network "
            "split can leave both halves believing they may activate")


def lost_pairs(vote: pd.DataFrame, intervals: pd.DataFrame, n: int, params: RiskParams) -> list[dict]:
    """Per vote-quorum group: spans longer than the grace with no active instance of its own while
    fewer than a majority of the n groups had one."""
    majority = n // 2 + 1
    out = []
    cuts = np.unique(np.concatenate([utc_ns(intervals["start_ts"]), utc_ns(intervals["end_ts"]),
                                     utc_ns(vote["first_ts"]), utc_ns(vote["last_ts"])]))
    if len(cuts) < 2:
        return out
    mids = cuts[:-1] + (cuts[1:] - cuts[:-1]) // 2
    live = {g: np.zeros(len(mids), dtype=bool) for g in vote["group_name"]}
    for iv in intervals.itertuples():
        live[iv.group_name] |= (mids >= utc_ns([iv.start_ts])[0]) & (mids <= utc_ns([iv.end_ts])[0])
    lives = np.sum(list(live.values()), axis=0)
    for _, g in vote.iterrows():
        observed = (mids >= utc_ns([g["first_ts"]])[0]) & (mids <= utc_ns([g["last_ts"]])[0])
        lost = observed & ~live[g["group_name"]] & (lives < majority)
        starts, ends = true_runs(lost)
        for s, e in zip(starts, ends):
            start, end = cuts[s], cuts[e + 1]
            if seconds(end - start) < params.unprotected_grace_s:
                continue
            bounds = {"start_ts": start, "start_lower": None, "end_ts": end, "end_upper": None, "is_open": e + 1 == len(cuts) - 1}
            row = _finding("quorum-lost-pair", "error", "certain", "artemis", g["group_name"], None, bounds,
                           float(lives[s:e + 1].min()), float(majority), "pairs", None, "", "")
            row["message"] = (f"{g['group_name']} had no live broker {_span(row)} and only {int(lives[s:e + 1].min())} of the "
                              f"{n} vote-quorum pairs had one, fewer than the {majority} a vote needs: no backup can be "
                              "voted live until pairs return")
            row["advice"] = "bring the lost pair back; until then any further failure in the cluster is an outage"
            out.append(row)
    return out


def restarted_into_split_brain(windows: pd.DataFrame, intervals: pd.DataFrame, params: RiskParams) -> list[dict]:
    """check-for-live-server-off: Artemis split-brain windows opened by a live that came back."""
    out = []
    for w in windows[windows["kind"] == "artemis"].itertuples():
        start = utc_ns([w.certain_start])[0]
        mine = intervals[(intervals["group_name"] == w.group_name) & intervals["instance"].isin([w.instance_a, w.instance_b])]
        iv_ts = utc_ns(mine["start_ts"])
        later = mine[iv_ts == start]
        if later.empty:
            continue
        came_back = later.iloc[0]["instance"]
        before = mine[(mine["instance"] == came_back) & (iv_ts < start)]
        if before.empty:
            continue  # it had not been live before: not a restarted primary
        configured = params.setting(came_back, "check_for_live_server")
        if configured is True:
            continue
        other = w.instance_b if came_back == w.instance_a else w.instance_a
        bounds = {"start_ts": w.certain_start, "start_lower": w.possible_start, "end_ts": w.certain_end,
                  "end_upper": w.possible_end, "is_open": pd.isna(w.possible_end)}
        detail = "ha.check_for_live_server: false" if configured is False else "check-for-live-server not configured here"
        row = _finding("check-for-live-server-off", "critical", "certain" if configured is False else "possible", "artemis",
                       w.group_name, came_back, bounds, w.duration_s, None, "s", detail, "", "")
        row["message"] = (f"{came_back}, live of {w.group_name} before, came back and activated at {fmt_ts(w.certain_start)} "
                          f"while {other} was active: two live brokers for {_secs(w.duration_s)} — a restarted primary "
                          "that does not check for an active server takes over regardless")
        row["advice"] = ("set check-for-active-server=true (check-for-live-server before Artemis renamed it) on the "
                         "primary, with allow-failback on the backup, so a restarted primary asks the cluster first and "
                         "fails back cleanly — or coordinate through the ZooKeeper lock manager, whose activation "
                         "sequence keeps a stale primary passive; stop one of the two now")
        out.append(row)
    return out


def shutdown_on_failure_off(groups: pd.DataFrame, params: RiskParams) -> list[dict]:
    """ActiveMQ targets configured with both shutdownOnMasterFailure and shutdownOnSlaveFailure false."""
    out = []
    for _, g in groups[groups["kind"] == "activemq"].iterrows():
        for instance in g["instances"].split(","):
            if params.setting(instance, "shutdown_on_master_failure") is False and \
                    params.setting(instance, "shutdown_on_slave_failure") is False:
                out.append(_finding(
                    "shutdown-on-failure-off", "warn", "certain", "activemq", g["group_name"], instance,
                    standing_bounds(g["first_ts"], g["last_ts"]), None, None, None,
                    "shutdownOnMasterFailure=false, shutdownOnSlaveFailure=false",
                    f"{instance} ({g['group_name']}) has both shutdownOnMasterFailure and shutdownOnSlaveFailure false: when "
                    "its partner fails it keeps running on its own copy, and the two copies of the store can diverge",
                    "set shutdownOnSlaveFailure=true on the master (or waitForSlave) and shutdownOnMasterFailure=true on "
                    "the slave, or move to a shared store / JDBC lock"))
    return out


def failover_duration(events: pd.DataFrame, groups: pd.DataFrame, params: RiskParams) -> list[dict]:
    """failover-duration: a failover's outage compared with the configuration that bounds it."""
    policy = dict(zip(groups["group_name"], groups["ha_policy"]))
    out = []
    for ev in events[events["event_type"].isin(["failover", "failback"])].itertuples():
        outage = ev.outage_upper_s if not pd.isna(ev.outage_upper_s) else ev.detection_s
        if pd.isna(outage):
            continue
        said = describe_bound(ev, outage, policy.get(ev.group_name), params)
        if said is None:
            continue
        threshold, message, advice, detail = said
        bounds = {"start_ts": ev.old_last_active, "start_lower": None, "end_ts": ev.new_first_active,
                  "end_upper": None, "is_open": False}
        row = _finding("failover-duration", "warn", "certain", ev.kind, ev.group_name, ev.to_instance, bounds,
                       float(outage), threshold, "s", detail, message, advice)
        row["finding_id"] = stable_id("failover-duration", ev.event_id)
        out.append(row)
    return out


def describe_bound(ev, outage_s: float, policy: str | None, params: RiskParams):
    """(threshold s, message, advice, detail) when configuration decided how long `ev` took, else None."""
    head = f"{ev.event_type} {ev.from_instance} → {ev.to_instance} in {ev.group_name} took ≤ {_secs(outage_s)}"
    if ev.kind == "activemq":
        lease = params.setting(ev.to_instance, "lease_duration_ms")
        sleep = params.setting(ev.to_instance, "lock_acquire_sleep_ms")
        bound_ms = lease or sleep or DEFAULT_LOCK_ACQUIRE_SLEEP_MS
        if outage_s < BOUND_SHARE * bound_ms / 1000:
            return None
        if lease:
            what, key = f"the old master's lease ({_secs(lease / 1000)}) had to expire", "lease_duration_ms"
            advice = "shorten the lease (the locker's lockAcquireSleepInterval) if failovers must be faster; keep it above the DB's hiccups"
        else:
            default = "" if sleep else " (default)"
            what, key = f"the slave retries the lock only every lockAcquireSleepInterval = {_secs(bound_ms / 1000)}{default}", "lock_acquire_sleep_ms"
            advice = "lower lockAcquireSleepInterval on the locker (e.g. 1–2 s) to shorten failovers"
        return bound_ms / 1000, f"{head}: {what}", advice, f"{key}={bound_ms}"
    if ev.kind == "artemis" and is_lock_manager(policy):
        t = params.timeouts_ms.get(ev.to_instance, {"connection_ttl_ms": 60000.0, "zk_session_ms": 18000.0,
                                                     "assumed": ["connection_ttl_ms", "zk_session_ms"]})
        ttl, session = t["connection_ttl_ms"], t["zk_session_ms"]
        if ttl < TTL_OVER_SESSION * session:
            return None
        # a value set nowhere in the config is Artemis' default, assumed: say so, never as a fact
        assumed = {k: " (Artemis' default, assumed: set gc." + k + " for this target)" for k in t.get("assumed", ())}
        return (ttl / 1000,
                f"{head}; the backup can activate once the ZooKeeper session of the live expired (session-ms "
                f"{_secs(session / 1000)}{assumed.get('zk_session_ms', '')}), but clients notice a dead live only "
                f"after connection-ttl {_secs(ttl / 1000)}{assumed.get('connection_ttl_ms', '')}: "
                "they hang on to it long after the failover",
                "set connection-ttl-override (and the clients' connection-ttl / client-failure-check-period) near "
                "session-ms so clients fail over when the backup does",
                f"connection_ttl_ms={ttl:.0f}, zk_session_ms={session:.0f}")
    return None


# --- Spark wiring ----------------------------------------------------------------------------------------------


def state_risks(state: DataFrame, params: RiskParams) -> DataFrame:
    def per_group(pdf: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark inspects it (a partial warns)
        return group_state_risks(pdf, params)

    return (state.where(F.col("kind").isin(*HA_KINDS)).select(*STATE_COLUMNS)
            .groupBy("group_name").applyInPandas(per_group, RISK_FINDINGS.spark_schema()))


def carry_of(state: DataFrame) -> pd.DataFrame:
    """risk_carry rows (per group and instance of the HA kinds) of the broker_state rows `state`."""
    ts, answered = F.col("ts"), F.col("reachable")
    backup = answered & (F.col("kind") == "artemis") & (F.col("role") == "backup") & (F.col("activation_sequence") > 0)
    policy_ts = F.when(F.col("ha_policy").isNotNull(), ts)
    return contract_frame(state.where(F.col("kind").isin(*HA_KINDS)).groupBy("group_name", "instance").agg(
        F.min("kind").alias("kind"), F.min(ts).alias("first_ts"), F.max(ts).alias("last_ts"),
        F.min(F.when(answered, ts)).alias("first_answered_ts"), F.max(F.when(answered, ts)).alias("last_answered_ts"),
        F.min(F.when(backup, ts)).alias("first_backup_ts"), F.max(F.when(backup, ts)).alias("last_backup_ts"),
        F.max_by("ha_policy", policy_ts).alias("ha_policy"), F.max(policy_ts).alias("ha_policy_ts"),
    ).toPandas(), RISK_CARRY)


def merge_carry(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The carry of the stored rows and of the new ones, as the carry of all of them."""
    both = pd.concat([frame for frame in (old, new) if len(frame)], ignore_index=True) if len(old) + len(new) else old
    if both.empty:
        return contract_frame([], RISK_CARRY)
    key = ["group_name", "instance"]
    out = both.groupby(key, sort=True).agg(
        kind=("kind", "min"), first_ts=("first_ts", "min"), last_ts=("last_ts", "max"),
        first_answered_ts=("first_answered_ts", "min"), last_answered_ts=("last_answered_ts", "max"),
        first_backup_ts=("first_backup_ts", "min"), last_backup_ts=("last_backup_ts", "max"))
    policy = (both.dropna(subset=["ha_policy_ts"]).sort_values("ha_policy_ts", kind="stable")
              .groupby(key)[["ha_policy", "ha_policy_ts"]].last())
    return contract_frame(out.join(policy).reset_index(), RISK_CARRY)


def summary_of(carry: pd.DataFrame) -> pd.DataFrame:
    """Per HA group: kind, instances (comma-separated), last reported HAPolicy, first and last
    observation — what the config and quorum rules need (one row per group), from its carry."""
    rows = []
    for g, c in carry.groupby("group_name", sort=True):
        policy = c.dropna(subset=["ha_policy_ts"]).sort_values(["ha_policy_ts", "instance"], kind="stable")
        rows.append({"group_name": g, "kind": c["kind"].min(), "instances": ",".join(sorted(c["instance"])),
                     "ha_policy": policy["ha_policy"].iloc[-1] if len(policy) else None,
                     "first_ts": c["first_ts"].min(), "last_ts": c["last_ts"].max()})
    return pd.DataFrame(rows, columns=["group_name", "kind", "instances", "ha_policy", "first_ts", "last_ts"])


def gold_risks(groups: pd.DataFrame, intervals: pd.DataFrame, windows: pd.DataFrame, events: pd.DataFrame,
               params: RiskParams) -> pd.DataFrame:
    """The rules over gold tables and config, as one frame."""
    rows = (quorum_findings(groups, intervals, params) + restarted_into_split_brain(windows, intervals, params)
            + shutdown_on_failure_off(groups, params) + failover_duration(events, groups, params))
    return contract_frame(rows, RISK_FINDINGS)


RISK_JOB = "risk"
OUTPUTS = ("risk_findings", "risk_carry")
GOLD_INPUTS = ("role_intervals", "split_brain_windows", "failover_events")
INPUTS = ("broker_state", *GOLD_INPUTS)
STATE_CODES = ("unprotected-live", "stale-backup")  # from broker_state, group by group; the others: gold + config
CONTEXT_MISSING = "context-missing"  # an incremental run's marker (never written): only a full run is exact


def code_fingerprint(params: RiskParams) -> str:
    return fingerprint(RISK_JOB, repr(params), sources=[__file__, runs_module.__file__])


def risk_mark(slh, params: RiskParams) -> Watermark:
    """The watermark a run now would write: broker_state's version, and a fingerprint of the code and
    config (`code/…`) and of the gold inputs' versions (`…/gold`). analysis/runner.py skips the job
    when the stored one equals it; an incremental run needs only the code part to match."""
    version = slh.lakehouse.version("broker_state")
    gold = fingerprint([slh.lakehouse.version(t) for t in GOLD_INPUTS])
    return Watermark(RISK_JOB, -1 if version is None else version, f"{code_fingerprint(params)}/{gold}")


def gold_frames(slh) -> list[pd.DataFrame]:
    return [slh.read(t).toPandas() for t in GOLD_INPUTS]


def run_risk(slh, params: RiskParams, progress=None, mark: Watermark | None = None, full: bool = False) -> dict[str, int]:
    """broker_state + role_intervals, split_brain_windows, failover_events → risk_findings (and its
    state, risk_carry). Incremental from the job's watermark unless `full` (module comment below);
    both give the same table."""
    say = progress or (lambda m: None)
    say("gold risk_findings")
    mark = mark or risk_mark(slh, params)
    stored = None if full else read_watermark(slh.lakehouse, RISK_JOB, OUTPUTS)
    if stored is not None and stored.input_version >= 0 and \
            stored.fingerprint.split("/")[0] == mark.fingerprint.split("/")[0]:
        appended = slh.read_appended("broker_state", stored.input_version, [*STATE_COLUMNS, "ha_policy"])
        if appended is not None:
            written = risk_increment(slh, params, appended, Watermark(RISK_JOB, appended.version, mark.fingerprint), say)
            if written is not None:
                return written
    say("gold risk_findings (full)")
    state, version = pinned_read(slh, "broker_state", [*STATE_COLUMNS, "ha_policy"])
    carry = carry_of(state)
    found = gold_risks(summary_of(carry), *gold_frames(slh), params)
    df = state_risks(state, params).unionByName(slh.spark.createDataFrame(found, RISK_FINDINGS.spark_schema()))
    return write_risk(slh, carry, df, Watermark(RISK_JOB, version, mark.fingerprint))


def write_risk(slh, carry: pd.DataFrame, findings: DataFrame, mark: Watermark) -> dict[str, int]:
    """Both outputs, under one watermark (the state first: a run stopped between them is a full one next)."""
    carried = slh.write("risk_carry", slh.spark.createDataFrame(carry, RISK_CARRY.spark_schema()), commit_info=mark.commit_info())
    return {"risk_findings": slh.write("risk_findings", findings, commit_info=mark.commit_info()), "risk_carry": carried}


# --- incremental runs ----------------------------------------------------------------------------------------
#
# The group-wide rules (quorum-too-small, quorum-lost-pair: all vote-quorum groups of the lakehouse
# as one cluster; check-for-live-server-off, shutdown-on-failure-off, failover-duration) read only the
# gold tables, the config and a per-group summary (instances, kind, HAPolicy, first and last
# observation). That summary is folded from risk_carry (per instance: min/max times, last HAPolicy:
# exact when merged with the new rows' own), so every run recomputes those rules in whole from small
# inputs: exact whatever the gold tables did (rewritten, changed anywhere) — nothing to localise.
#
# unprotected-live and stale-backup are runs over one instance's series (its answered observations;
# an Artemis backup's answered backup observations with a sequence), each observation judged by the
# other instances' observations at most STANDBY_MAX_AGE_SCRAPES intervals (`max_age`) before it. New
# rows (all later than the group's stored rows, else a full run) change no stored observation's
# judgement, so only a run going on at a series' last stored observation can change: a stored open
# finding, or a run shorter than the grace (begun less than a grace before). Per group whose new rows
# extend a series, the job recomputes from a resume time R — a window W (2 × the longer grace +
# max_age) before the last stored observation of each extended series, its open findings' starts if
# earlier, its first new row at the latest — over the rows from R − W − max_age (each observation
# from R on sees every row that judges it; the one before R is read with its judgement); stored
# findings that began before R stay, the recomputed ones from R on replace the rest. Groups whose new
# rows extend no series (only unanswered scrapes) keep their findings. It recomputes everything
# whenever that could differ from a full run: a new row not later than its group's last stored one;
# a series whose first observation from R on is flagged (it may begin a run there) while the one before
# lies before R − W, unread or judged without all it needs (CONTEXT_MISSING: an instance back after a
# long silence straight into an unprotected live; an unflagged one begins no run there). A new
# instance in a known group changes how every run of it reads (another instance not seen: possible,
# and named): that group is recomputed from its first row. Instances of the group without rows read
# are passed in (risk_carry), as a full run sees them: not seen lately. Reads prune broker_state by
# obs_date partition and by time.


def resume_window(params: RiskParams) -> pd.Timedelta:
    return 2 * pd.Timedelta(seconds=max(params.unprotected_grace_s, params.stale_backup_grace_s)) + max_age(params)


def max_age(params: RiskParams) -> pd.Timedelta:
    return pd.Timedelta(params.standby_max_age)


def late_groups(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """Groups with a new row not later than their last stored one."""
    last = old.groupby("group_name")["last_ts"].max()
    first = new.groupby("group_name")["first_ts"].min()
    at = last.reindex(first.index)
    return sorted(first.index[at.notna() & (first <= at)])


def resume_plan(old: pd.DataFrame, new: pd.DataFrame, stored: pd.DataFrame, params: RiskParams) -> dict[str, tuple]:
    """group → (resume time R, read-from time), naive-UTC Timestamps, per group to recompute
    (`old`, `new`: carry of the stored and of the new rows; `stored`: risk_findings; module comment
    above)."""
    window, epoch = resume_window(params), pd.Timestamp(0)
    opens = stored[stored["is_open"].astype(bool) & stored["code"].isin(STATE_CODES)]
    open_starts: dict[tuple, list] = {}  # (group, instance, code) → its open findings' starts
    for key, t in zip(zip(opens["group_name"], opens["instance"], opens["code"]), opens["start_ts"]):
        open_starts.setdefault(key, []).append(pd.Timestamp(t))
    old_of = dict(tuple(old.groupby("group_name", sort=False)))  # one pass, not one filter per group
    plan = {}
    for g, rows in new.groupby("group_name", sort=True):
        mine = old_of.get(g, old.iloc[:0]).set_index("instance")
        first_new = pd.Timestamp(rows["first_ts"].min())
        if mine.empty:  # a new group: all its rows are new
            plan[g] = (first_new, first_new)
            continue
        if not set(rows["instance"]) <= set(mine.index):  # a new instance: every run of the group reads otherwise
            plan[g] = (epoch, pd.Timestamp(mine["first_ts"].min()))
            continue
        starts = []
        for r in rows.itertuples():
            for series, code in (("answered", "unprotected-live"), ("backup", "stale-backup")):
                if pd.isna(getattr(r, f"last_{series}_ts")):
                    continue  # no new observation in this series: its runs stay as stored
                last = mine.at[r.instance, f"last_{series}_ts"]
                starts += [first_new, *([] if pd.isna(last) else [pd.Timestamp(last) - window])]
                starts += open_starts.get((g, r.instance, code), [])
        if starts:
            resume = min(starts)
            plan[g] = (resume, resume - window - max_age(params))
    return plan


def kept_findings(stored: pd.DataFrame, plan: dict[str, tuple]) -> pd.DataFrame:
    """Stored findings of the per-group rules a resumed run leaves as they are: groups not
    recomputed; findings begun before the resume time."""
    mine = stored[stored["code"].isin(STATE_CODES)]
    at = mine["group_name"].map({g: resume for g, (resume, _) in plan.items()})
    return mine[at.isna() | (pd.to_datetime(mine["start_ts"]) < pd.to_datetime(at))]


def context_missing(series: dict, resume: np.datetime64, read_from: np.datetime64, first_before: dict,
                    params: RiskParams) -> bool:
    """Whether a series of ONE group (`series`: group_state_risks' times and flags per (series,
    instance) over the rows read) may begin a run at its first observation from `resume` on that a
    full run would see differently: that observation is flagged, its previous one is not among the
    rows read at least `max_age` after `read_from` (where it is judged as a full run judges it), and
    the series had observations before `resume` (`first_before`: instance → its first answered and
    first backup observation, stored). Unflagged, it starts no run: its previous one does not matter."""
    judged_from = read_from + np.timedelta64(params.standby_max_age, "ns")
    for (name, instance), (ts, flags) in series.items():
        first = first_before.get(instance, (None, None))[0 if name == "answered" else 1]
        if first is None or pd.isna(first) or utc_ns([first])[0] >= resume:
            continue  # nothing of this series before resume: it starts where the rows read start
        at = np.searchsorted(ts, resume, side="left")
        if at < len(ts) and flags[at] and not (at > 0 and ts[at - 1] >= judged_from):
            return True
    return False


def resumed_risks(slh, plan: dict[str, tuple], carry: pd.DataFrame, old: pd.DataFrame, params: RiskParams) -> pd.DataFrame:
    """Findings of the per-group rules from each planned group's resume time on, from its rows read
    from its read-from time (a CONTEXT_MISSING row for a group where only a full run is exact)."""
    lo = min(read_from for _, read_from in plan.values())
    hi = max(pd.Timestamp(carry["last_ts"].max()), lo)
    days = days_spanned([(lo.value // 1000, hi.value // 1000)])  # obs_date: ts's UTC day
    cut = F.broadcast(slh.spark.createDataFrame([(g, read_from.value // 1000) for g, (_, read_from) in plan.items()],
                                                "group_name string, read_from long")
                      .select("group_name", F.timestamp_micros("read_from").alias("read_from")))
    state = (slh.read_partitions("broker_state", "obs_date", days, STATE_COLUMNS)
             .where(F.col("kind").isin(*HA_KINDS) & (F.col("ts") >= F.timestamp_micros(F.lit(lo.value // 1000))))
             .join(cut, "group_name").where(F.col("ts") >= F.col("read_from")).select(*STATE_COLUMNS))
    bounds = {g: (np.datetime64(r.value, "ns"), np.datetime64(f.value, "ns")) for g, (r, f) in plan.items()}
    instances = {g: sorted(c["instance"]) for g, c in carry.groupby("group_name")}
    first_before = {g: {r.instance: (r.first_answered_ts, r.first_backup_ts) for r in c.itertuples()}
                    for g, c in old.groupby("group_name")}

    def per_group(pdf: pd.DataFrame) -> pd.DataFrame:
        g = pdf["group_name"].iloc[0]
        resume, read_from = bounds[g]
        series: dict = {}
        found = group_state_risks(pdf, params, instances[g], series)
        if context_missing(series, resume, read_from, first_before.get(g, {}), params):
            marker = _finding(CONTEXT_MISSING, "warn", "possible", pdf["kind"].iloc[0], g, None,
                              standing_bounds(resume, resume), None, None, None, None, "", "")
            return contract_frame([marker], RISK_FINDINGS)
        return found[utc_ns(found["start_ts"]) >= resume]

    return contract_frame(state.groupBy("group_name").applyInPandas(per_group, RISK_FINDINGS.spark_schema()).toPandas(),
                          RISK_FINDINGS)


def risk_increment(slh, params: RiskParams, appended, mark: Watermark, say) -> dict[str, int] | None:
    """Bring risk_findings up to date with the rows appended to broker_state; None when only a
    full run is exact."""
    new = carry_of(appended.new)
    old = contract_frame(slh.read("risk_carry").toPandas(), RISK_CARRY)
    late = late_groups(old, new)
    if late:
        say(f"gold risk_findings: rows not later than stored ones ({', '.join(late[:3])}…), recomputing")
        return None
    stored = contract_frame(slh.read("risk_findings").toPandas(), RISK_FINDINGS)
    plan = resume_plan(old, new, stored, params)
    carry = merge_carry(old, new)
    fresh = resumed_risks(slh, plan, carry, old, params) if plan else contract_frame([], RISK_FINDINGS)
    if (fresh["code"] == CONTEXT_MISSING).any():
        say("gold risk_findings: a series resumes after a gap longer than the window, recomputing")
        return None
    found = gold_risks(summary_of(carry), *gold_frames(slh), params)
    rows = contract_frame(pd.concat([kept_findings(stored, plan), fresh, found], ignore_index=True), RISK_FINDINGS)
    say(f"gold risk_findings (incremental: broker_state up to version {mark.input_version}, {len(plan)} groups resumed)")
    return write_risk(slh, carry, slh.spark.createDataFrame(rows, RISK_FINDINGS.spark_schema()), mark)
