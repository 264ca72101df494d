"""Stuck messages: silver destination_stats + broker_state (+ gold failover_events) → gold stuck_messages.

Rules (thresholds: the config's `analysis.stuck` section; defaults in settings/analysis.py).

* An observation of a destination is *idle* when it holds messages (`messages > 0`) that nobody
  takes — no consumer, or delivery paused — and nothing was delivered since the previous
  observation of that destination: `dequeued` did not grow; where the kind has no dequeue counter
  (WebLogic) `enqueued` grew by no more than `messages` did; where no counter can be compared (the
  first observation, a counter reset by a restart, another instance after a failover) only a fall
  of `messages` proves a delivery.
* A run of idle observations is stuck once it lasted the threshold (default 60 s; for a logical
  destination listed in `forward_delays`, its forward delay: WebLogic forwards a member's messages
  to members with consumers after `ForwardDelay`, so only longer is stuck). Where the broker
  reports the age of the oldest message (Artemis `FirstMessageAge`, producer-clock based) and it
  rose during the run, the head message has waited that long: the run counts as that long.
  - `stranded-member` (error): kinds whose group members all serve at once (WebLogic clusters) — a
    queue member whose siblings (other servers' members of the same logical destination) had
    consumers during the run: a member's messages go only to its own consumers (WebLogic Fig. 9-3).
  - `no-consumers` (warn; info on dead-letter/expiry queues): otherwise. For live/backup kinds a
    destination is one series per group, followed across failovers whichever instance is live.
  Certain when every scrape of the instance(s) inside the run answered, or when the reported
  oldest-message age grew with the clock (the head never left); else possible.
* `unreachable-member` (warn): member kinds only — a member seen holding messages at its server's
  last serving observation, then the server stopped serving (no answer, or answered without
  serving: WebLogic JMS server absent or failed). Those messages are unavailable until it returns
  (count last seen, since when). Never from one missed scrape: at least two observations not
  serving, or one that answered and positively showed it not serving (then certain; a stretch of
  unanswered scrapes alone is possible — we could not see, DESIGN "a missed scrape is
  indeterminate").
* `prepared-transaction` (warn): `prepared_tx_messages > 0` (Artemis) for at least the threshold.
* `replay-after-failover` (error): ActiveMQ — after a failover event, the new master's first
  depth of a destination exceeds the old master's last depth + what the new master received since
  (its `enqueued`) + what the old master could have received before it died (its enqueue rate over
  its last minute × time from its last observation to its first missed or inactive one). Journaled
  JDBC persistence replays messages its journal had not checkpointed: consumers get old messages
  again. Certain when the old master's rate was measured, possible when it had to be assumed 0.

Shape: `group_stuck` is the per-group sequence logic (pandas, run by `cogroup(...).applyInPandas` over
destination_stats and broker_state), built from small pure functions over numpy arrays; the
failover events (a small gold table) travel to it as pandas. `run_stuck` reads, calls and writes
(overwrite: reruns give the same table).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import frames as frames_module
from analysis import runs as runs_module
from analysis.frames import partition_days, utc_day
from analysis.groups import nonexclusive_kinds
from analysis.runs import (NAT, contract_frame, count_between, fmt_ts, numbers, observed_certainty, run_bounds, seconds,
                           stable_id, true_runs, unobserved_note, utc_ns)
from analysis.watermark import RESUME_TAIL_US, Watermark, appended_since, fingerprint, pinned_read
from lakehouse.tables import STUCK_MESSAGES

DEAD_LETTER_NAMES = frozenset({"DLQ", "ExpiryQueue", "ActiveMQ.DLQ"})  # the brokers' default names
HEAD_STAYED_RATIO = 0.9  # oldest-message age grew by ≥ 90 % of the elapsed time: same head message
REPLAY_KINDS = ("activemq",)
RATE_WINDOW_S = 60  # the old master's enqueue rate is measured over its last minute
PER_DESTINATION = ["destination_type", "destination"]

DEST_COLUMNS = [
    "ts", "kind", "group_name", "instance", "destination", "logical_destination", "destination_type",
    "messages", "consumers", "enqueued", "dequeued", "oldest_message_age_ms", "paused", "prepared_tx_messages",
]
STATE_COLUMNS = ["ts", "group_name", "instance", "reachable", "active"]
EVENT_COLUMNS = ["event_id", "kind", "group_name", "from_instance", "to_instance", "old_last_active",
                 "old_first_unanswered", "old_first_inactive", "new_first_active"]

ADVICE = {
    "stranded-member": (
        "attach consumers to every member (consumers connected to each server of the cluster), or "
        "configure forwarding on the distributed queue (ForwardDelay ≥ 0) so messages move to members "
        "that have consumers"
    ),
    "no-consumers": (
        "start or reconnect the consumer of this destination (or resume delivery if it is paused); if "
        "nobody will read it again (an abandoned durable subscription), remove it so messages stop piling up"
    ),
    "dead-letter": "inspect the dead-letter/expiry queue: reprocess or purge it, and find out why delivery failed",
    "unreachable-member": (
        "bring the server back (its messages return with it) or migrate its JMS server to a running one "
        "(service migration); a member's messages cannot be consumed through other servers"
    ),
    "prepared-transaction": (
        "the transaction manager has not completed these prepared transactions: check its recovery; as a "
        "last resort resolve them with the queue's listPreparedTransactions / commitPreparedTransaction / "
        "rollbackPreparedTransaction operations"
    ),
    "replay-after-failover": (
        "consumers will see old messages again: make them idempotent; for JDBC master/slave use JDBC "
        "persistence without the journal (or a shared KahaDB store) so the new master sees exactly what "
        "the old one committed"
    ),
}


# --- per observation -------------------------------------------------------------------------------


def held_without_consumers(messages, consumers, paused) -> np.ndarray:
    """Messages are there and nobody takes them: no consumer, or delivery paused (unknown → no)."""
    m, c = numbers(messages), numbers(consumers)
    is_paused = pd.Series(paused, dtype="boolean").fillna(False).to_numpy(dtype=bool)
    return (m > 0) & ((c == 0) | is_paused)


def delivered_since_previous(messages, enqueued, dequeued, same_instance) -> np.ndarray:
    """Whether each observation proves a delivery since the previous one (the first proves none)."""
    m, enq, deq = numbers(messages), numbers(enqueued), numbers(dequeued)
    d_msg, d_enq, d_deq = (np.diff(x, prepend=np.nan) for x in (m, enq, deq))
    comparable = np.asarray(same_instance, dtype=bool) & ~(d_enq < 0) & ~(d_deq < 0)  # a counter going back = restarted
    return np.where(
        comparable & ~np.isnan(d_deq), d_deq > 0,
        np.where(comparable & ~np.isnan(d_enq), d_enq - d_msg > 0, d_msg < 0),
    )


def idle_observations(series: pd.DataFrame) -> np.ndarray:
    """Idle = held without consumers and no delivery since the previous observation (series by ts)."""
    inst = series["instance"].to_numpy()
    same_instance = np.concatenate(([False], inst[1:] == inst[:-1]))
    held = held_without_consumers(series["messages"], series["consumers"], series["paused"])
    return held & ~delivered_since_previous(series["messages"], series["enqueued"], series["dequeued"], same_instance)


# --- runs -------------------------------------------------------------------------------------------


def stuck_runs(series: pd.DataFrame, flags: np.ndarray, counts: np.ndarray, unanswered: np.ndarray, threshold_s: float,
               age_is_evidence: bool, hole_s: float = math.inf) -> pd.DataFrame:
    """Runs of `flags` in one destination series (sorted by ts) that lasted the threshold, with the
    `counts` they concern (messages held, or held by prepared transactions).

    `unanswered`: sorted times of unanswered scrapes of the instance(s) serving the series. With
    `age_is_evidence`, the oldest-message age, where reported and rising, stretches a run to the
    head message's wait."""
    starts, ends = true_runs(flags)
    runs = pd.DataFrame(run_bounds(utc_ns(series["ts"]), starts, ends, hole_s=hole_s))
    runs["duration_s"] = seconds(runs["end_ts"].to_numpy() - runs["start_ts"].to_numpy())
    age = numbers(series["oldest_message_age_ms"])
    age_start, age_end = age[starts], age[ends]
    rising = (age_end > age_start) & age_is_evidence
    runs["stuck_for_s"] = np.fmax(runs["duration_s"], np.where(rising, age_end / 1000.0, np.nan))
    head_stayed = rising & ((age_end - age_start) / 1000.0 >= HEAD_STAYED_RATIO * runs["duration_s"].to_numpy())
    missed = count_between(unanswered, runs["start_ts"].to_numpy(), runs["end_ts"].to_numpy())
    # a rising age of the same head message is evidence across missed scrapes and holes alike
    observed = observed_certainty(np.where(missed == 0, "certain", "possible"), runs["unobserved_s"].to_numpy())
    runs["certainty"] = np.where(head_stayed, "certain", observed)
    instances = series["instance"].to_numpy()
    runs["instance"] = instances[ends]
    runs["instances"] = [",".join(sorted(set(instances[s : e + 1]))) for s, e in zip(starts, ends)]
    runs["messages"] = counts[ends]
    runs["messages_max"] = [np.nanmax(counts[s : e + 1]) for s, e in zip(starts, ends)]
    runs["oldest_message_age_ms"] = age_end
    runs["consumers"] = np.nan_to_num(numbers(series["consumers"])[ends]) > 0
    runs["paused"] = pd.Series(series["paused"], dtype="boolean").fillna(False).to_numpy(dtype=bool)[ends]
    return runs[runs["stuck_for_s"] >= threshold_s].reset_index(drop=True)


def siblings_with_consumers(dest: pd.DataFrame, logical: str, instance: str, start, end) -> list[str]:
    """Other servers whose member of the same logical queue had consumers between start and end."""
    ts = utc_ns(dest["ts"])
    rows = dest[
        (dest["logical_destination"] == logical)
        & (dest["destination_type"] == "queue")
        & (dest["instance"] != instance)
        & (numbers(dest["consumers"]) > 0)
        & (ts >= start)
        & (ts <= end)
    ]
    return sorted(set(rows["instance"]))


# --- findings ---------------------------------------------------------------------------------------


def _secs_text(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def _span(run) -> str:
    return f"{fmt_ts(run['start_ts'])} → {fmt_ts(run['end_ts'])}{unobserved_note(run.get('unobserved_s', 0))}"


def _finding(code: str, severity: str, dest_row: pd.Series, run, threshold_s: float | None, message: str,
             advice: str, **extra) -> dict:
    """A stuck_messages row: the destination's identity, the run's bounds and counts, the words."""
    row = {
        "finding_id": stable_id(code, dest_row["group_name"], run["instance"], dest_row["destination_type"],
                                dest_row["destination"], run["start_ts"]),
        "code": code,
        "severity": severity,
        "threshold_s": threshold_s,
        "message": message,
        "advice": advice,
        **{k: dest_row[k] for k in ("kind", "group_name", "destination", "logical_destination", "destination_type")},
    }
    for col in ("certainty", "instance", "start_ts", "start_lower", "end_ts", "end_upper", "is_open", "duration_s", "unobserved_s",
                "stuck_for_s", "messages", "messages_max", "oldest_message_age_ms", "instances"):
        if col in run:
            row[col] = run[col]
    return row | extra


def idle_findings(series: pd.DataFrame, dest: pd.DataFrame, unanswered: np.ndarray, threshold_s: float,
                  member_kind: bool, hole_s: float = math.inf) -> list[dict]:
    """stranded-member / no-consumers findings of one destination series."""
    idle = idle_observations(series)
    if not idle.any():  # most series of a healthy fleet: no run to build
        return []
    first = series.iloc[0]
    runs = stuck_runs(series, idle, numbers(series["messages"]), unanswered, threshold_s, age_is_evidence=True, hole_s=hole_s)
    out = []
    for _, run in runs.iterrows():
        siblings = []
        if member_kind and first["destination_type"] == "queue":
            siblings = siblings_with_consumers(dest, first["logical_destination"], run["instance"],
                                               run["start_ts"], run["end_ts"])
        held = f"{run['messages']:.0f} messages on {first['destination']} ({run['instance']})"
        how = "delivery paused" if run["consumers"] else "no consumer" + (" (delivery paused too)" if run["paused"] else "")
        if siblings:
            code, severity, advice = "stranded-member", "error", ADVICE["stranded-member"]
            message = (f"{held} sat with {how} and no delivery for {_secs_text(run['stuck_for_s'])} ({_span(run)}) while "
                       f"{', '.join(siblings)} consumed from {first['logical_destination']}: they are stranded on this member")
        else:
            dead = first["destination"] in DEAD_LETTER_NAMES
            code, severity = "no-consumers", "info" if dead else "warn"
            advice = ADVICE["dead-letter" if dead else "no-consumers"]
            age = run["oldest_message_age_ms"]
            oldest = f"; the oldest is {age / 1000:.0f} s old" if not np.isnan(age) else ""
            message = (f"{held} have waited with {how} and no delivery for at least {_secs_text(run['stuck_for_s'])} "
                       f"({_span(run)}){oldest}")
        out.append(_finding(code, severity, first, run, threshold_s, message, advice,
                            siblings_with_consumers=",".join(siblings) or None))
    return out


def prepared_findings(series: pd.DataFrame, unanswered: np.ndarray, threshold_s: float,
                      hole_s: float = math.inf) -> list[dict]:
    """prepared-transaction findings of one destination series (the head's age is not theirs)."""
    prepared = numbers(series["prepared_tx_messages"])
    if not (prepared > 0).any():
        return []
    first = series.iloc[0]
    out = []
    runs = stuck_runs(series, prepared > 0, prepared, unanswered, threshold_s, age_is_evidence=False, hole_s=hole_s)
    for _, run in runs.iterrows():
        message = (f"{run['messages']:.0f} messages on {first['destination']} ({run['instance']}) have been held by "
                   f"prepared transactions for {_secs_text(run['duration_s'])} ({_span(run)})")
        out.append(_finding("prepared-transaction", "warn", first, run, threshold_s, message, ADVICE["prepared-transaction"]))
    return out


def unreachable_members(dest: pd.DataFrame, state: pd.DataFrame, hole_s: float = math.inf) -> list[dict]:
    """Members seen holding messages at their server's last serving observation, then unavailable."""
    out = []
    dest_ts = utc_ns(dest["ts"])
    for instance, st in state.sort_values("ts").groupby("instance", sort=False):
        ts = utc_ns(st["ts"])
        active = st["active"].astype("boolean")
        serving = active.fillna(False).to_numpy(dtype=bool)
        shown_not_serving = (st["reachable"].astype(bool) & (active == False)).fillna(False).to_numpy(dtype=bool)  # noqa: E712
        starts, ends = true_runs(~serving)
        for s, e in zip(starts, ends):
            positive = shown_not_serving[s : e + 1].any()
            if s == 0 or (e == s and not positive):
                continue  # nothing seen before it, or one missed scrape: indeterminate
            run = {k: v[0] for k, v in run_bounds(ts, np.array([s]), np.array([e]), hole_s=hole_s).items()}
            run |= {"instance": instance, "instances": instance,
                    "certainty": observed_certainty("certain" if positive else "possible", run["unobserved_s"]),
                    "duration_s": seconds(run["end_ts"] - run["start_ts"])}
            run["stuck_for_s"] = run["duration_s"]
            until = f"until {fmt_ts(run['end_upper'])}" if not pd.isna(run["end_upper"]) else "and has not returned yet"
            held = dest[(dest["instance"] == instance) & (dest_ts == ts[s - 1]) & (numbers(dest["messages"]) > 0)]
            for _, row in held.iterrows():
                message = (f"{row['messages']:.0f} messages on {row['destination']} ({row['logical_destination']}) were "
                           f"unavailable: {instance} stopped serving after {fmt_ts(run['start_lower'])} (last seen with them) "
                           f"{until}; a member's messages are only reachable through its own server")
                counts = {"messages": row["messages"], "messages_max": row["messages"]}
                out.append(_finding("unreachable-member", "warn", row, run | counts, None, message, ADVICE["unreachable-member"]))
    return out


# --- replay after failover -------------------------------------------------------------------------------


def replay_excess(old: pd.DataFrame, new_first: pd.Series, old_gone: np.datetime64) -> dict:
    """How many more messages the new master's first observation of a destination holds than can
    be explained: the old master's last depth + what the new one received + what the old one could
    have received until it was gone (its rate over `old`, its observations of the last minute)."""
    old_ts, enq = utc_ns(old["ts"]), numbers(old["enqueued"])
    span = seconds(old_ts[-1] - old_ts[0])
    rate = (enq[-1] - enq[0]) / span if span > 0 and enq[-1] >= enq[0] else np.nan
    allowance = float(np.ceil(np.nan_to_num(rate) * seconds(old_gone - old_ts[-1])))
    received = float(np.nan_to_num(numbers([new_first["enqueued"]])[0]))
    old_depth = float(numbers(old["messages"])[-1])
    return {"excess": float(numbers([new_first["messages"]])[0]) - (old_depth + received + allowance), "rate": rate,
            "allowance": allowance, "received": received, "old_depth": old_depth, "old_last_ts": old_ts[-1]}


def replay_findings(dest: pd.DataFrame, events: pd.DataFrame) -> list[dict]:
    """replay-after-failover findings of one group: `dest` its rows sorted by ts, `events` its
    failover_events rows."""
    ts = utc_ns(dest["ts"])
    out = []
    for ev in events.itertuples():
        old_last = utc_ns([ev.old_last_active])[0]
        old_gone = utc_ns([next(t for t in (ev.old_first_unanswered, ev.old_first_inactive, ev.new_first_active)
                                if not pd.isna(t))])[0]
        last_minute = (ts <= old_last) & (ts >= old_last - np.timedelta64(RATE_WINDOW_S, "s"))
        old = dest[(dest["instance"] == ev.from_instance) & last_minute]
        new = dest[(dest["instance"] == ev.to_instance) & (ts >= utc_ns([ev.new_first_active])[0])]
        new_firsts = new.groupby(PER_DESTINATION, sort=False).head(1).set_index(PER_DESTINATION)
        for key, old_rows in old.groupby(PER_DESTINATION, sort=False):
            if key not in new_firsts.index:
                continue
            head = new_firsts.loc[key]
            r = replay_excess(old_rows, head, old_gone)
            if not r["excess"] > 0:
                continue
            new_ts = utc_ns([head["ts"]])[0]
            run = {"instance": ev.to_instance, "instances": f"{ev.from_instance},{ev.to_instance}",
                   "certainty": "possible" if np.isnan(r["rate"]) else "certain",
                   "start_ts": new_ts, "start_lower": r["old_last_ts"], "end_ts": new_ts, "end_upper": NAT, "is_open": False,
                   "duration_s": 0.0, "messages": r["excess"], "messages_max": head["messages"]}
            message = (f"{ev.to_instance} held {head['messages']:.0f} messages on {key[1]} at its first scrape after taking "
                       f"over from {ev.from_instance}, {r['excess']:.0f} more than {ev.from_instance} last held "
                       f"({r['old_depth']:.0f}) plus what {ev.to_instance} received since ({r['received']:.0f}) and what "
                       f"{ev.from_instance} could have received before it died (≤ {r['allowance']:.0f}): "
                       "old messages were replayed")
            out.append(_finding("replay-after-failover", "error", old_rows.iloc[0], run, None, message,
                                ADVICE["replay-after-failover"], failover_event_id=ev.event_id))
    return out


# --- per group -------------------------------------------------------------------------------------------


def group_stuck(dest: pd.DataFrame, state: pd.DataFrame, *, threshold_s: float, forward_delays: dict[str, float],
                member_kinds: list[str], events: dict[str, pd.DataFrame] | None = None,
                hole_s: float = math.inf) -> pd.DataFrame:
    """Stuck-message findings of ONE group from its destination_stats and broker_state rows
    (`events`: failover_events of the replay kinds by group)."""
    if dest.empty:
        return contract_frame([], STUCK_MESSAGES)
    dest = dest.sort_values("ts", kind="stable").reset_index(drop=True)
    member_kind = dest["kind"].iloc[0] in member_kinds
    unanswered = state[~state["reachable"].astype(bool)]
    missed_by_instance = {i: np.sort(utc_ns(g["ts"])) for i, g in unanswered.groupby("instance")}
    missed_in_group = np.sort(utc_ns(unanswered["ts"]))
    no_misses = np.array([], "datetime64[ns]")
    # a member kind's destination lives on one server; a live/backup group's moves with the live role
    key = ["instance", *PER_DESTINATION] if member_kind else PER_DESTINATION
    findings: list[dict] = []
    for _, series in dest.groupby(key, sort=False, dropna=False):
        series = series.reset_index(drop=True)
        missed = missed_by_instance.get(series["instance"].iloc[0], no_misses) if member_kind else missed_in_group
        threshold = float(forward_delays.get(series["logical_destination"].iloc[0], threshold_s))
        findings += idle_findings(series, dest, missed, threshold, member_kind, hole_s)
        findings += prepared_findings(series, missed, threshold, hole_s)
    if member_kind:
        findings += unreachable_members(dest, state, hole_s)
    group_events = (events or {}).get(dest["group_name"].iloc[0])
    if group_events is not None:
        findings += replay_findings(dest, group_events)
    return contract_frame(findings, STUCK_MESSAGES)


# --- the job -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StuckParams:
    """The stuck-message job's parameters (analysis/params.py builds them from `analysis.stuck`)."""

    threshold: float = 60.0  # held with no consumer and no delivery for at least this long (s)
    forward_delays: dict[str, float] = field(default_factory=dict)  # logical destination → its threshold (s)
    hole_s: float = math.inf  # no observation for longer than this is a hole (analysis.hole_tolerance)


def stuck_messages(dest: DataFrame, state: DataFrame, failovers: pd.DataFrame, *, threshold_s: float,
                   forward_delays: dict[str, float] | None = None, hole_s: float = math.inf) -> DataFrame:
    """`failovers`: failover_events of the replay kinds, as pandas (small: one row per failover)."""
    events = dict(tuple(failovers.groupby("group_name"))) if len(failovers) else {}
    per_group = partial(group_stuck, threshold_s=threshold_s, forward_delays=dict(forward_delays or {}),
                        member_kinds=nonexclusive_kinds(), events=events, hole_s=hole_s)
    return (
        dest.select(*DEST_COLUMNS).groupBy("group_name")
        .cogroup(state.select(*STATE_COLUMNS).groupBy("group_name"))
        .applyInPandas(per_group, STUCK_MESSAGES.spark_schema())
    )


STUCK_JOB = "stuck"


def run_stuck(slh, rules: StuckParams, progress=None, full: bool = False) -> dict[str, int]:
    """Stuck messages from silver. Incremental from
    the job's watermark (broker_state's version) unless `full`; both give the same table."""
    say = progress or (lambda m: None)
    say("gold stuck_messages")  # before its reads, so a tick's breakdown puts them here
    fp = fingerprint(STUCK_JOB, rules.threshold, sorted(rules.forward_delays.items()), rules.hole_s, nonexclusive_kinds(),
                     sources=[__file__, runs_module.__file__, frames_module.__file__])
    failovers = (slh.read("failover_events").where(F.col("kind").isin(list(REPLAY_KINDS)))
                 .select(*EVENT_COLUMNS).toPandas())
    appended = None if full else appended_since(slh, STUCK_JOB, ["stuck_messages"], "broker_state", fp, ["group_name", "ts"])
    if appended is not None:
        mark = Watermark(STUCK_JOB, appended.version, fp)
        if appended.new.isEmpty():
            say("gold stuck_messages: no new broker_state rows")
            return {"stuck_messages": slh.lakehouse.count("stuck_messages")}
        written = stuck_increment(slh, appended, failovers, rules, mark, say)
        if written is not None:
            return {"stuck_messages": written}
    say("gold stuck_messages (full)")
    state, version = pinned_read(slh, "broker_state", STATE_COLUMNS)
    df = stuck_messages(slh.read("destination_stats"), state, failovers,
                        threshold_s=rules.threshold, forward_delays=rules.forward_delays, hole_s=rules.hole_s)
    return {"stuck_messages": slh.write("stuck_messages", df, commit_info=Watermark(STUCK_JOB, version, fp).commit_info())}


# --- incremental runs ----------------------------------------------------------------------------------------
#
# Findings are runs over each destination's (and each member server's) observations. New rows can
# only change runs that are still going on at the last stored observation: open findings, and idle
# runs not yet long enough to be findings (shorter than the threshold, so begun less than a threshold
# before). Per group with new rows the job therefore recomputes from a resume time R — a window W
# (2 × the longest threshold) before its last stored row, or an open finding's start if earlier —
# reading rows from R − W (each series' previous observation: the delivery test and the bounds need
# it) and, for a failover to replay-check, the old master's last minute. Stored findings that began
# before R stay; recomputed ones from R on replace the rest. Whenever that could differ from a full
# run (rows not later than stored ones; a series whose previous observation lies before the rows
# read) it recomputes everything.


def resume_window_s(rules) -> float:
    return 2 * max([rules.threshold, *rules.forward_delays.values()])


def stuck_increment(slh, appended, failovers: pd.DataFrame, rules, mark, say) -> int | None:
    """Bring stuck_messages up to date with rows appended to broker_state; None when only a full
    run is exact. Every read is of the newest obs_date partitions only, on a normal tick (below)."""
    spark = slh.spark
    new = {r.group_name: (r.first, r.n) for r in appended.new.groupBy("group_name")
           .agg(F.min(F.unix_micros("ts")).alias("first"), F.count(F.lit(1)).alias("n")).collect()}
    last_old = last_stored(slh, new)
    if last_old is None:
        say("gold stuck_messages: rows older than stored ones, recomputing")
        return None
    stored = slh.read("stuck_messages").toPandas()
    plan = resume_plan(stored, last_old, sorted(new), failovers, resume_window_s(rules))
    cut = F.broadcast(spark.createDataFrame(plan, "group_name string, resume long, read_from long")
                      .select("group_name", *(F.timestamp_micros(c).alias(c) for c in ("resume", "read_from"))))
    since = min(r for _, _, r in plan)  # the resumed reads: from the earliest read-from time on, its partitions on
    dest = rows_between(slh, "destination_stats", DEST_COLUMNS, since, None).join(cut, "group_name").where(F.col("ts") >= F.col("read_from"))
    state = rows_between(slh, "broker_state", STATE_COLUMNS, since, None).join(cut, "group_name").where(F.col("ts") >= F.col("read_from"))
    if context_missing(slh, dest, state, cut, plan):
        say("gold stuck_messages: a series resumes after a gap longer than the window, recomputing")
        return None
    resume = {g: pd.Timestamp(r, unit="us") for g, r, _ in plan}
    events = failovers[[pd.Timestamp(t) >= resume[g] if g in resume else False
                        for g, t in zip(failovers["group_name"], failovers["new_first_active"])]]
    fresh = (stuck_messages(dest.select(*DEST_COLUMNS), state.select(*STATE_COLUMNS), events, threshold_s=rules.threshold,
                            forward_delays=rules.forward_delays, hole_s=rules.hole_s)
             .join(cut, "group_name").where(F.col("start_ts") >= F.col("resume")).select(*STUCK_MESSAGES.column_names))
    kept = spark.createDataFrame(contract_frame(kept_findings(stored, resume, failovers), STUCK_MESSAGES), STUCK_MESSAGES.spark_schema())
    say(f"gold stuck_messages (incremental: broker_state up to version {mark.input_version}, {len(plan)} groups with new rows)")
    return slh.write("stuck_messages", kept.unionByName(fresh), commit_info=mark.commit_info())


# --- reading the newest partitions first ----------------------------------------------------------------
#
# What an increment needs from before its resumed reads — each group's last stored row, and whether a
# series that reappears had rows before — lies, on a normal tick, in the last minutes. destination_stats
# and broker_state are partitioned by obs_date (the UTC date of ts), so the search reads spans going
# back from there, newest first: the first span (FIRST_SPAN_US) from its partitions only, each next
# one 16 times wider, until what is looked for is found or a span reaches below the oldest partition
# (then it has no lower bound: the search is exhaustive). That is exact — a group's last row is the
# latest of the newest span holding any of its rows; "no older row" is said only after every partition
# was read — and a normal tick reads one span of one or two partitions. The price is on rare runs: a
# group new to the table (no stored row) and a series that never had an older row are searched down
# to the oldest partition. A carried per-series state (last seen) would avoid that, at the price of a
# state table kept in step with stuck_messages for every series of every destination; searching
# costs nothing when nothing is to be found on a normal tick (no reappearing series: no search).

FIRST_SPAN_US = RESUME_TAIL_US
WIDER = 16


def rows_between(slh, table: str, columns: list[str], lo: int | None, hi: int | None, days: list[str] | None = None) -> DataFrame:
    """`table`'s rows with lo ≤ ts < hi (µs; None: unbounded), reading only the obs_date partitions
    that can hold them (`days`: the table's partitions, when already listed)."""
    days = partition_days(slh, table) if days is None else days
    want = [d for d in days if (lo is None or d >= utc_day(lo)) and (hi is None or d <= utc_day(hi))]
    df = slh.read_partitions(table, "obs_date", want, columns=columns)
    if lo is not None:
        df = df.where(F.col("ts") >= F.timestamp_micros(F.lit(lo)))
    if hi is not None:
        df = df.where(F.col("ts") < F.timestamp_micros(F.lit(hi)))
    return df


def spans_back(days: list[str], top: int, hi: int | None = None):
    """[lo, hi) spans in µs going back from `top` (the first: [top − FIRST_SPAN_US, hi)), each WIDER
    times wider than the one before; the last has lo None (unbounded), once a span would reach the
    oldest partition of `days` (a table's obs_date partitions, sorted)."""
    width = FIRST_SPAN_US
    while True:
        lo = top - width
        if not days or utc_day(lo) <= days[0]:
            yield None, hi
            return
        yield lo, hi
        hi, width = lo, width * WIDER


def last_stored(slh, new: dict[str, tuple[int, int]]) -> dict[str, int] | None:
    """Each group's last stored broker_state row (µs), for the groups with new rows (`new`: group →
    (first new row µs, new rows)); None when a stored row of a group is not older than its new ones.

    On the current snapshot (stored rows + the new ones, appended: `read_appended`): a group's rows
    at or after its first new one number its new rows exactly when no stored row is that late, and
    then its last stored row is its last row before the first new one."""
    if not new:
        return {}
    days = partition_days(slh, "broker_state")
    bounds = F.broadcast(slh.spark.createDataFrame([(g, f) for g, (f, _) in new.items()], "group_name string, first long"))
    found: dict[str, int] = {}
    for i, (lo, hi) in enumerate(spans_back(days, min(f for f, _ in new.values()))):
        rows = (rows_between(slh, "broker_state", ["group_name", "ts"], lo, hi, days)
                .join(bounds.where(~F.col("group_name").isin(list(found))), "group_name")
                .select("group_name", F.unix_micros("ts").alias("t"), "first"))
        got = rows.groupBy("group_name").agg(F.max(F.when(F.col("t") < F.col("first"), F.col("t"))).alias("last"),
                                             F.count(F.when(F.col("t") >= F.col("first"), 1)).alias("later")).collect()
        if i == 0 and any(r.later > new[r.group_name][1] for r in got):  # the first span holds every row ≥ a first new one
            return None
        found.update({r.group_name: r.last for r in got if r.last is not None})
        if len(found) == len(new):
            break
    return found


def resume_plan(stored: pd.DataFrame, last_old: dict[str, int], groups: list[str], failovers: pd.DataFrame,
                window_s: float) -> list[tuple[str, int, int]]:
    """(group, resume time R, read-from time), µs since the epoch, per group with new rows
    (`last_old`: a group's last stored row, µs; module comment above). Frames: naive UTC."""
    window = pd.Timedelta(seconds=window_s)
    rate = pd.Timedelta(seconds=RATE_WINDOW_S)
    plan = []
    for g in groups:
        if g not in last_old:
            plan.append((g, 0, 0))  # a new group: everything
            continue
        opens = stored[(stored["group_name"] == g) & stored["is_open"].astype(bool)]
        resume = min([pd.Timestamp(last_old[g], unit="us") - window, *map(pd.Timestamp, opens["start_ts"])])
        events = failovers[failovers["group_name"] == g]
        olds = [pd.Timestamp(o) - rate for o, n in zip(events["old_last_active"], events["new_first_active"])
                if pd.Timestamp(n) >= resume]
        plan.append((g, resume.value // 1000, min([resume - window, *olds]).value // 1000))
    return plan


def kept_findings(stored: pd.DataFrame, resume: dict, failovers: pd.DataFrame) -> pd.DataFrame:
    """Stored findings a resumed run leaves as they are: groups without new rows; findings begun
    before the resume time; replay findings of failovers before it (only later ones are re-checked)."""
    if stored.empty:
        return stored
    at = stored["group_name"].map(resume)
    new_active = stored["failover_event_id"].map(dict(zip(failovers["event_id"], failovers["new_first_active"])))
    replay = stored["code"] == "replay-after-failover"
    before = pd.to_datetime(stored["start_ts"]) < at
    replay_before = pd.to_datetime(new_active) < at
    return stored[at.isna() | (~replay & before) | (replay & replay_before.fillna(False))]


def context_missing(slh, dest: DataFrame, state: DataFrame, cut: DataFrame, plan: list[tuple[str, int, int]]) -> bool:
    """A series (a destination as `group_stuck` follows it — one server's member, or a live/backup
    group's destination whichever instance is live — or an instance's scrapes) that has stored rows
    before the rows read but none of its rows read falls before the resume time: its previous
    observation is missing, and only a full run treats it exactly. (A live/backup destination is
    one series across a failover: its previous observation may be the old live's, before the rows
    read, when the group had no live for longer than the window.) The series whose first row read
    is that late are few (none on a normal tick: every series observed all along has rows from the
    read-from time on); only for them are older rows looked for, newest partitions first (the
    comment above `rows_between`). A group read from the beginning has no older row."""
    read_from = {g: r for g, _, r in plan if r > 0}
    members = nonexclusive_kinds()

    def by_server(rows: DataFrame) -> DataFrame:  # group_stuck's series key: the server only for member kinds
        return rows.withColumn("server", F.when(F.col("kind").isin(members), F.col("instance")).otherwise(F.lit("")))

    def missing(rows: DataFrame, table: str, key: list[str], columns: list[str], series_of=lambda df: df) -> bool:
        late = (series_of(rows).groupBy("group_name", *key).agg(F.min("ts").alias("first"), F.first("resume").alias("resume"))
                .where(F.col("first") >= F.col("resume")).select("group_name", *key).collect())
        late = [tuple(r) for r in late if r.group_name in read_from]
        if not late:
            return False
        schema = ", ".join(f"{c} string" for c in ("group_name", *key))
        series = F.broadcast(slh.spark.createDataFrame(late, schema).join(cut, "group_name"))
        days = partition_days(slh, table)
        starts = [read_from[r[0]] for r in late]
        for lo, hi in spans_back(days, min(starts), max(starts)):
            older = (series_of(rows_between(slh, table, ["group_name", *columns, "ts"], lo, hi, days))
                     .join(series, ["group_name", *key]).where(F.col("ts") < F.col("read_from")))
            if not older.isEmpty():
                return True
        return False

    return (missing(dest, "destination_stats", ["server", *PER_DESTINATION], ["kind", "instance", *PER_DESTINATION], by_server)
            or missing(state, "broker_state", ["instance"], ["instance"]))
