"""Replication lag: silver replication_stats + broker_state + collector_health (+ gold failover_readiness)
→ gold replication_lag, replication_findings.

Thresholds: the config's `analysis.lag` section (defaults in settings/analysis.py).

**Kafka cluster health** (flow `isr`, one row per broker scrape). The brokers of a group are aligned
into scrape rounds: the collector scrapes every target once per interval, spread over it, so the
grid of the interval (estimated as the median gap between a broker's scrapes) with its boundaries
in the widest gap between the brokers' phases puts one scrape of each broker in each round. Per
round: controllers = Σ ActiveControllerCount, under-replicated = Σ UnderReplicatedPartitions (each
partition is counted by its leader only), under-min-ISR = Σ, offline = max OfflinePartitionsCount
(the controller's), follower lag = max ReplicaFetcherManager MaxLag. Runs of rounds give
`no-controller` (Σ = 0), `multiple-controllers` (Σ ≥ 2), `under-replicated`, `under-min-isr`,
`offline-partitions` (> 0) and `follower-lag` (> `follower_lag_messages`, default 1000). A broker
that did not answer in a round is unknown: a count over the others is a lower bound, so
`no-controller` is only `certain` when every broker answered; controller findings of a single
round are `possible` (a controller moving between two brokers' scrapes of one round looks like 0
or 2). A round with no row at all of a broker (a lost row, a late answer stamped into the next
round) is unknown for a rule the others' lower bound does not already meet: a run goes on across
it (beyond the hole tolerance: counted as unobserved), it neither starts nor ends one. Controller rules need the cluster declared as one group (an undeclared broker is its own
group and says nothing about the others).

**Cross-cluster and consumer lag** (flows `replicator`, `mirrormaker2`, `mirrormaker2-checkpoint`,
`consumer`, one row per topic-partition and scrape; `mirror-offsets` per round of a Kafka-protocol
replication, analysis/mirror_lag.py). What the collected facts support:
- mirror-offsets: both clusters' log end offsets, read by the brokers' own protocol: position = DR's
  end, log end = the primary's — real offsets, so the (log end, time) points below are measured ones
  and every Burrow rule applies (`log-offsets`).
- Replicator reports lag in messages and throughput, no offsets. The replicated position is derived
  by integrating throughput over time, the source log end as position + lag; these (log end, time)
  points are Kafka Lag Exporter's lookup table. The consumer application (`records-lag`) reports
  lag only. MirrorMaker 2 has no lag metric of its own (KIP-971 never merged); the Kafka pack gives its
  rows the lag its replication consumer reports (`records-lag` per source partition: fetched by
  MM2, not yet acknowledged by the target, counts as replicated) and they carry latency too.
- `lag_s`, KLE's method made safe. Points with non-increasing time are dropped; a log end that goes
  back (counter reset, restart) starts a new table; runs of an equal log end keep their first and
  latest point (idle topics do not flush history); at most `lookup_points` (60) are kept. For
  position o at time t: o ≥ newest log end → 0 (`caught-up`); fewer than 2 points → null
  (`insufficient-data`, where KLE says NaN); bracketed by two points → linear interpolation
  (`interpolated`); older than the oldest point → the lag is certainly ≥ t − t_oldest, and
  extrapolating along oldest→newest is accepted only up to `max_extrapolation` × the table's own
  span beyond that (`extrapolated`); farther, or on a quiet topic (no slope: KLE's division gives
  "astronomical" values), the certain lower bound t − t_oldest is reported (`lower-bound`). Flows
  without positions: `no-positions` (consumer), or the flow's own latency (`reported-latency`, MM2).
  Where a flow reports its latency and that is larger than the derived lag, the latency stands
  (`reported-latency`): MM2's records-lag is counted against the log end of its last fetch, so over
  a slow link it says 0 while replication-latency-ms says seconds (drill kafka-mm2-slow-link).
- `status`: Burrow's partition rules in ANCHORS §1.3's order over the last `window` (10)
  observations ("commits"), evaluated at every scrape of the reporting instance ("broker ticks"),
  now = that scrape: 1 complete = observations/window < `min_complete` → OK; 2 current lag ≤
  `allowed_lag` → OK; 3 STOP: now − last > last − first and not recently caught up (a window log
  end ≤ the last position; lag-only: a window lag ≤ allowed) — a partition that stops being reported
  while its instance answers (an unanswered scrape is judged as of the last answered one); 4 REWIND:
  a position below its predecessor never climbed back; 5 only if lag > allowed at every
  observation: STALL (all positions equal), else WARN (lag never decreased); 6 OK. Positions exist
  only as derived ones (Replicator): they never go back, so REWIND cannot show there, and STALL
  means throughput 0 throughout. Lag-only flows (consumer)
  cannot be judged for REWIND/STALL (`status_basis`). No flow reports broker end offsets apart from
  its own scrape, so "broker ticks" are the reporting instance's scrapes. The order is ANCHORS'
  (REWIND before the lag-at-every-commit gate, with the climbed-back rule); Burrow's caching.go
  checks REWIND (any decrease) only inside that gate.
- Findings: `replication-lag` (lag_s > `lag_threshold`, default 60 s; possible where extrapolated)
  and `consumer-warn|stop|stall|rewind` (runs of that status).

**Failover readiness** (flow `failover-readiness`, from gold failover_readiness, analysis/readiness.py):
runs of the rounds in which a group and partition was `lossy` (`failover-readiness-lossy`, error: a
failover now would skip messages), `no-translation` (`failover-readiness-untranslated`) or `stale`
(`failover-readiness-stale`, threshold `failover_readiness.stale_after`); an `unknown` round (a
cluster did not answer) is no observation: a run goes on across it, beyond the hole tolerance counted
as unobserved.

**Artemis replica sync** (flow `artemis-replica`, one row per live scrape): `replica-sync-gap` when
`in_sync` stays false for at least `replica_sync_grace` (60 s) over two or more observations —
ReplicaSync reads false during every failover and initial sync by design, so never from one sample.
Its `detail` says how the group's other instances looked meanwhile: a backup that answered as in
sync (its own `ReplicaSync` true) while the live had dropped it means the two lost each other — the
replication link, not the backup (measured on Artemis 2.40.0: after a silent cut the live drops its
backup at connection-ttl, the backup notices only 60-120 s after the cut; docs/ARTEMIS_LAB.md 23).

Shape: per-group / per-instance / per-series sequence logic in pandas and numpy (`group_findings`,
`instance_lag`, `series_findings`; Burrow over all windows at once with `sliding_window_view`), run by
`applyInPandas`. The per-series steps can stop and go on (`series_lag_carried`,
`series_findings_carried`: what they carry is all a later row depends on), so `run_lag`
(analysis/lag_increment.py) runs incrementally over the rows appended since its last run, and in
full when that could differ from a full run; both give the same tables, reruns change nothing.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis.runs import (contract_frame, count_between, fmt_ts, holes_ns_upto, latest_of, numbers, observed_certainty,
                           other_state_words, run_bounds, seconds, stable_id, true_runs, unobserved_note, utc_ns)
from analysis.mirror_lag import MIRROR_FLOW, MIRROR_STATUS_ADVICE
from lakehouse.tables import REPLICATION_FINDINGS, REPLICATION_LAG

SERIES_KEY = ["instance", "flow", "source_cluster", "target_cluster", "topic", "partition", "client"]
LAG_FLOWS = ("replicator", "mirrormaker2", "mirrormaker2-checkpoint", "consumer")
EXPIRE_S = 7 * 24 * 3600  # stop evaluating a partition this long after it was last reported (Burrow expire-group)
OK, WARN, STOP, STALL, REWIND = "OK", "WARN", "STOP", "STALL", "REWIND"


# --- lag in time --------------------------------------------------------------------------------


def derived_positions(ts_s: np.ndarray, throughput: np.ndarray, before: tuple[float, float] | None = None) -> np.ndarray:
    """Replicated position from a rate reported at each observation (the rate over the interval
    that ends there): Σ rate_i × (t_i − t_(i−1)), 0 at the first observation. `before`: (time,
    position) of the observation before `ts_s[0]` — the sum goes on from it, term by term in the
    same order, so the values are those of one sum over all observations, to the last bit."""
    if before is None:
        return np.cumsum(np.nan_to_num(throughput) * np.diff(ts_s, prepend=ts_s[:1]))
    terms = np.nan_to_num(throughput) * np.diff(ts_s, prepend=before[0])
    return np.cumsum(np.concatenate(([before[1]], terms)))[1:]


class LookupTable:
    """Kafka Lag Exporter's table of (time, log end) points, with its rules (module doc)."""

    def __init__(self, max_points: int):
        self.max_points = max_points
        self.t: list[float] = []
        self.p: list[float] = []

    def add(self, t: float, p: float) -> None:
        if np.isnan(p) or (self.t and t <= self.t[-1]):
            return
        if self.p and p < self.p[-1]:  # a log end never goes back: a reset starts over
            self.t, self.p = [], []
        if len(self.p) >= 2 and self.p[-1] == self.p[-2] == p:  # flat run: keep first and latest
            self.t[-1] = t
            return
        self.t.append(t)
        self.p.append(p)
        if len(self.t) > self.max_points:
            del self.t[0], self.p[0]


def time_behind(table: LookupTable, position: float, now: float, max_extrapolation: float) -> tuple[float, str]:
    """(lag in seconds, method) of `position` at `now` from the table (module doc: never NaN as a
    value — null with `insufficient-data` — and never beyond what the points support)."""
    T, P = np.asarray(table.t), np.asarray(table.p)
    if np.isnan(position):
        return np.nan, "insufficient-data"
    if len(P) and position >= P[-1]:
        return 0.0, "caught-up"
    if len(P) < 2:
        return np.nan, "insufficient-data"
    if position >= P[0]:
        k = int(np.searchsorted(P, position, side="right"))  # P[k-1] ≤ position < P[k]
        at = T[k - 1] + (position - P[k - 1]) / (P[k] - P[k - 1]) * (T[k] - T[k - 1])
        return now - at, "interpolated"
    at_least = now - T[0]  # the log end had passed `position` before the oldest point
    span = T[-1] - T[0]
    slope = (P[-1] - P[0]) / span
    if slope > 0:
        estimate = now - (T[0] - (P[0] - position) / slope)
        if estimate <= at_least + max_extrapolation * span:
            return estimate, "extrapolated"
    return at_least, "lower-bound"


def lag_seconds(ts_s: np.ndarray, log_end: np.ndarray, position: np.ndarray, *, max_points: int,
                max_extrapolation: float, table: LookupTable | None = None) -> tuple[np.ndarray, np.ndarray]:
    """lag_s and method at each observation of one series (sorted by time); `table`: the points
    recorded before them (it goes on with these)."""
    table = LookupTable(max_points) if table is None else table
    out_s, out_m = np.full(len(ts_s), np.nan), np.empty(len(ts_s), dtype=object)
    for i, (t, p, o) in enumerate(zip(ts_s, log_end, position)):
        table.add(t, p)
        out_s[i], out_m[i] = time_behind(table, o, t, max_extrapolation)
    return out_s, out_m


# --- Burrow status -----------------------------------------------------------------------------------


def trailing_windows(x: np.ndarray, window: int) -> np.ndarray:
    """Row j: the `window` values ending at j; slots before the first value are NaN (Burrow's
    empty ring slots)."""
    return sliding_window_view(np.concatenate((np.full(window - 1, np.nan), x)), window)


def rewinds(offsets: np.ndarray) -> np.ndarray:
    """Per window row: a position below its predecessor that later positions never climbed back to."""
    later_max = np.maximum.accumulate(np.nan_to_num(offsets, nan=-np.inf)[:, ::-1], axis=1)[:, ::-1]
    prev = offsets[:, :-1]
    return ((offsets[:, 1:] < prev) & (later_max[:, 1:] < prev)).any(axis=1)


def burrow_statuses(commit_ts: np.ndarray, offsets: np.ndarray, lags: np.ndarray, log_ends: np.ndarray, now: np.ndarray,
                    last: np.ndarray, *, window: int, min_complete: float, allowed_lag: float) -> np.ndarray:
    """Burrow's partition status (rules in ANCHORS §1.3's order, module doc) at each evaluation time
    `now[k]`, over the `window` observations ending at observation `last[k]` (−1: none yet).
    Observations are commits: time, position, lag and log end; all-NaN positions = lag-only."""
    out = np.full(len(now), OK, dtype=object)
    if not len(commit_ts):
        return out
    T, O, L, E = (trailing_windows(x, window) for x in (commit_ts, offsets, lags, log_ends))
    has_offsets = not np.isnan(offsets).any()
    with np.errstate(invalid="ignore"):
        caught_up = ((E <= offsets[:, None]) if has_offsets else (L <= allowed_lag)).any(axis=1)
        lag_throughout = (np.isnan(L) | (L > allowed_lag)).all(axis=1)
        decreased = (np.diff(L, axis=1) < 0).any(axis=1)
        stalled = (np.nanmax(O, axis=1) == np.nanmin(O, axis=1)) if has_offsets else np.zeros(len(O), bool)
        rewound = rewinds(O) if has_offsets else np.zeros(len(O), bool)
    j = np.maximum(last, 0)
    complete = (~np.isnan(T)).sum(axis=1)[j] / window
    judged = (last >= 0) & (complete >= min_complete) & (lags[j] > allowed_lag)  # 1, 2
    first_ts = np.nanmin(T, axis=1)[j]
    stop = judged & (now - commit_ts[j] > commit_ts[j] - first_ts) & ~caught_up[j]  # 3
    rewind = judged & ~stop & rewound[j]  # 4
    gate = judged & ~stop & ~rewind & lag_throughout[j]  # 5: lag at every observation
    stall = gate & stalled[j]
    warn = gate & ~stall & ~decreased[j]
    out[stop], out[rewind], out[stall], out[warn] = STOP, REWIND, STALL, WARN
    return out


# --- per series --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LagRules:
    """The `analysis.lag` knobs the per-series evaluation needs (defaults: settings/analysis.py)."""

    window: int
    min_complete: float
    allowed_lag: float
    lookup_points: int
    max_extrapolation: float

    @classmethod
    def of(cls, settings) -> "LagRules":
        return cls(**{k: getattr(settings, k) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class LagParams:
    """The lag job's parameters (analysis/params.py builds them from `analysis.lag`; meanings there)."""

    lag_threshold: float = 60.0
    follower_lag_messages: float = 1000.0
    replica_sync_grace: float = 60.0
    window: int = 10
    min_complete: float = 0.5
    allowed_lag: float = 0.0
    lookup_points: int = 60
    max_extrapolation: float = 1.0
    hole_s: float = math.inf  # no observation for longer than this is a hole (analysis.hole_tolerance)
    stale_after_s: float = 60.0  # failover_readiness.stale_after (the threshold of failover-readiness-stale)
    replications: dict = field(default_factory=dict)  # failover_readiness.replications by name (flow mirror-offsets)
    scrape_interval_s: float = 0.0  # the collector's tick: a Kafka-protocol round (analysis.readiness)


class NotExact(Exception):
    """An incremental step cannot give the full run's rows (analysis/lag_increment.py): recompute in full."""


def _basis(has_commit: bool, all_measured: bool, all_throughput: bool) -> str:
    if has_commit and all_measured:
        return "log-offsets"
    if has_commit and all_throughput:
        return "derived-offsets"
    return "lag-only" if has_commit else "none"


def series_lag(obs: pd.DataFrame, scrapes_ns: np.ndarray, answered: np.ndarray, rules: LagRules) -> pd.DataFrame:
    """replication_lag rows of ONE topic-partition series: its observations (any order) evaluated at
    every scrape of its instance (sorted `scrapes_ns`, `answered` or not) from its first observation
    until it expires. An unanswered scrape shows nothing new: it is judged as of the last answered
    one (a missed scrape never makes a STOP)."""
    return series_lag_carried(obs, scrapes_ns, answered, rules)[0]


def series_lag_carried(obs: pd.DataFrame, scrapes_ns: np.ndarray, answered: np.ndarray, rules: LagRules,
                       carry: dict | None = None) -> tuple[pd.DataFrame, dict | None]:
    """`series_lag`, and what a later run needs to go on from where this one stops (`carry`, JSON-able:
    analysis/lag_increment.py). With `carry` (None: from the series' first observation), `obs` and
    `scrapes_ns` are the ones after it — all later than every tick it covered — and the rows are
    those a run over everything gives at the new ticks, to the last bit; NotExact where they are not
    (the new observations change the basis of the stored rows)."""
    obs = obs.sort_values("ts", kind="stable").reset_index(drop=True)
    ts_ns = utc_ns(obs["ts"])
    ts_s = ts_ns.astype("int64") / 1e9
    lag, throughput, latency = numbers(obs["lag_messages"]), numbers(obs["throughput_per_s"]), numbers(obs["latency_ms"])
    commit = ~np.isnan(lag)
    measured = numbers(obs["position"]) if "position" in obs else np.full(len(obs), np.nan)
    c = carry or {"n_commits": 0, "all_measured": True, "all_throughput": True, "table_t": [], "table_p": [],
                  "window": [[], [], [], []], "now_s": -math.inf, "last_lag": math.nan, "position": math.nan}
    has_commit = bool(c["n_commits"]) or bool(commit.any())
    all_measured = c["all_measured"] and not np.isnan(measured[commit]).any()
    all_throughput = c["all_throughput"] and not np.isnan(throughput[commit]).any()
    basis = _basis(has_commit, all_measured, all_throughput)
    if carry is not None and basis != carry["basis"]:
        raise NotExact(f"the basis of {carry['key']} changes from {carry['basis']} to {basis}")
    before = None if carry is None else (carry["last_obs_ns"] / 1e9, carry["position"])
    derived = derived_positions(ts_s, throughput, before) if len(obs) else np.zeros(0)
    if basis == "log-offsets":
        position = np.where(commit, measured, np.nan)
    elif basis == "derived-offsets":
        position = np.where(commit, derived, np.nan)
    else:
        position = np.full(len(obs), np.nan)
    log_end = position + lag
    table = LookupTable(rules.lookup_points)
    table.t, table.p = list(c["table_t"]), list(c["table_p"])
    if basis in ("derived-offsets", "log-offsets"):
        lag_s, method = lag_seconds(ts_s, log_end, position, max_points=rules.lookup_points,
                                    max_extrapolation=rules.max_extrapolation, table=table)
    elif basis == "lag-only":
        lag_s, method = np.full(len(obs), np.nan), np.full(len(obs), "no-positions", dtype=object)
    else:
        lag_s = latency / 1000.0
        method = np.where(np.isnan(lag_s), "insufficient-data", "reported-latency").astype(object)
    if basis != "none":
        # the flow's own latency (MM2: record created on the source → acknowledged by the target) is a
        # measured lag in time; a derived one below it is contradicted: a replication consumer's
        # records-lag counts against the log end of its last fetch, which over a slow link is old
        # (drill kafka-mm2-slow-link: records-lag 0, latency 1.5 s, 50 messages behind per partition)
        reported = latency / 1000.0
        higher = ~np.isnan(reported) & (np.isnan(lag_s) | (reported > lag_s))
        lag_s = np.where(higher, reported, lag_s)
        method = np.where(higher, "reported-latency", method).astype(object)

    first_ns = ts_ns[0] if carry is None else np.datetime64(carry["first_ns"], "ns")
    last_ns = ts_ns[-1] if len(obs) else np.datetime64(carry["last_obs_ns"], "ns")
    alive = (scrapes_ns >= first_ns) & (scrapes_ns <= last_ns + np.timedelta64(EXPIRE_S, "s"))
    ticks, first_of = np.unique(np.concatenate((ts_ns, scrapes_ns[alive])), return_index=True)
    if not len(ticks):
        return contract_frame([], REPLICATION_LAG), carry
    answered_tick = np.concatenate((np.ones(len(ts_ns), bool), answered[alive]))[first_of]
    now_s = np.maximum.accumulate(np.concatenate(([c["now_s"]], np.where(answered_tick, ticks.astype("int64") / 1e9, -np.inf))))[1:]
    last_obs = np.searchsorted(ts_ns, ticks, side="right") - 1  # −1: before the first new observation
    observed = (last_obs >= 0) & (np.append(ts_ns, np.datetime64("NaT", "ns"))[last_obs] == ticks)
    commits = np.flatnonzero(commit)
    before_commits = c["n_commits"]
    last_commit = before_commits + np.searchsorted(commits, last_obs, side="right") - 1  # −1: none yet
    in_window = np.minimum(last_commit + 1, rules.window)

    def at_tick(values: np.ndarray, missing=np.nan) -> np.ndarray:
        return np.where(observed, np.append(values, missing)[np.where(observed, last_obs, -1)], missing)

    # the last `window` commits before these (Burrow's ring) and these: window rows end at the new ones
    w_ts, w_pos, w_lag, w_end = (np.concatenate((np.asarray(old, dtype="float64"), new)) for old, new in
                                 zip(c["window"], (ts_s[commits], position[commits], lag[commits], log_end[commits])))
    last_in_window = last_commit - before_commits + len(c["window"][0])
    status = None
    if basis != "none":
        status = burrow_statuses(w_ts, w_pos, w_lag, w_end, now_s, np.where(last_commit >= 0, last_in_window, -1),
                                 window=rules.window, min_complete=rules.min_complete, allowed_lag=rules.allowed_lag)
    head = {k: (obs.iloc[0][k] if carry is None else carry[k]) for k in ("kind", "group_name")}
    key = dict(zip(SERIES_KEY, carry["key"])) if carry is not None else {k: obs.iloc[0][k] for k in SERIES_KEY}
    lags_known = np.concatenate(([c["last_lag"]] if before_commits else [], lag[commits], [np.nan]))
    rows = pd.DataFrame({
        **head, **key,
        "ts": ticks,
        "obs_date": pd.DatetimeIndex(ticks).strftime("%Y-%m-%d"),
        "observed": observed,
        "lag_messages": lags_known[np.where(last_commit >= 0, last_commit - before_commits + (1 if before_commits else 0), -1)],
        "position": at_tick(position),
        "log_end": at_tick(log_end),
        "lag_s": at_tick(lag_s),
        "lag_s_method": at_tick(method, "not-observed"),
        "latency_ms": at_tick(latency),
        "status": status,
        "status_basis": basis,
        "window_commits": in_window,
        "window_complete": in_window / rules.window,
    })
    n_commits = before_commits + len(commits)
    out = {
        **head, "key": [None if pd.isna(key[k]) else (int(key[k]) if k == "partition" else key[k]) for k in SERIES_KEY],
        "basis": basis, "first_ns": int(first_ns.astype("int64")), "last_obs_ns": int(last_ns.astype("int64")),
        "last_tick_ns": int(ticks[-1].astype("int64")), "n_commits": int(n_commits),
        "all_measured": bool(all_measured), "all_throughput": bool(all_throughput),
        "position": float(derived[-1]) if len(obs) else c["position"],
        "table_t": [float(x) for x in table.t], "table_p": [float(x) for x in table.p],
        "window": [[float(x) for x in w[len(w) - min(len(w), rules.window):]] for w in (w_ts, w_pos, w_lag, w_end)],
        "now_s": float(now_s[-1]), "last_lag": float(lag[commits][-1]) if len(commits) else c["last_lag"],
    }
    return rows, out


def instance_lag(obs: pd.DataFrame, health: pd.DataFrame, *, rules: LagRules) -> pd.DataFrame:
    """replication_lag rows of ONE instance: each of its series evaluated at its scrapes."""
    return instance_lag_carried(obs, health, rules=rules)[0]


def series_key(values) -> tuple:
    """A series' key (SERIES_KEY values) with None for null and the partition as int: how carries are looked up."""
    return tuple(None if pd.isna(v) else (int(v) if k == "partition" else v) for k, v in zip(SERIES_KEY, values))


def instance_lag_carried(obs: pd.DataFrame, health: pd.DataFrame, *, rules: LagRules, carries: dict[tuple, dict] | None = None,
                         stored_until_ns: int | None = None) -> tuple[pd.DataFrame, dict[tuple, dict]]:
    """`instance_lag`, and each series' carry (`series_lag_carried`). With `carries` (by `series_key`):
    `obs` and `health` are what came after them (`stored_until_ns`: the instance's last stored row);
    a carried series with neither new observations nor scrapes within its expiry gives no rows and
    keeps its carry. NotExact where stored scrapes would come back to life: a series reported again
    after it had expired (a full run evaluates it at the stored scrapes since expiry too)."""
    carries = dict(carries or {})
    if obs.empty and not carries:
        return contract_frame([], REPLICATION_LAG), carries
    health = health.sort_values("ts", kind="stable")
    scrapes, answered = utc_ns(health["ts"]), health["answered"].eq(True).to_numpy(dtype=bool)
    groups = {series_key(k): g for k, g in obs.groupby(SERIES_KEY, dropna=False, sort=False)} if len(obs) else {}
    parts = []
    for key in [*groups, *(k for k in carries if k not in groups)]:
        carry = carries.get(key)
        expiry = None if carry is None else carry["last_obs_ns"] + EXPIRE_S * 10**9
        if key not in groups and (not len(scrapes) or scrapes.min().astype("int64") > expiry):
            continue  # expired before anything new: nothing to evaluate
        if key in groups and carry is not None and stored_until_ns is not None and stored_until_ns > expiry:
            raise NotExact(f"{key} is reported again after it expired")
        empty = obs.iloc[:0] if key not in groups else groups[key]
        rows, carries[key] = series_lag_carried(empty, scrapes, answered, rules, carry)
        parts.append(rows)
    if not parts:
        return contract_frame([], REPLICATION_LAG), carries
    return contract_frame(pd.concat(parts, ignore_index=True), REPLICATION_LAG), carries


# --- findings: shared shape ----------------------------------------------------------------------------


def finding_rows(code: str, severity: str, base: dict, ts: np.ndarray, flags: np.ndarray, values: np.ndarray, *,
                 unit: str, threshold: float | None, certainty: Callable[[int, int], str],
                 describe: Callable[[dict, int, int], tuple[str, str, str | None]],
                 last_ts: np.ndarray | None = None, hole_s: float = math.inf,
                 known: np.ndarray | None = None, carried: dict | None = None) -> list[dict]:
    """One finding per run of `flags` over sorted observations (`ts`, and `last_ts` where an
    observation spans time); `certainty(s, e)` and `describe(row, s, e) → (message, advice, detail)`
    get the run's first and last index; a run across a hole (`hole_s`) is at most possible.

    `known`: False where an observation cannot tell whether the condition held (a broker's answer
    missing from a round). Those are no observation at all: a run goes on across them, and beyond
    `hole_s` counts them as a hole — as a missing scrape is treated everywhere else.

    `carried`: a run still open at observation 0, as an earlier call left it (a row's `_open`: its
    start, the bound before it, the largest value, certainty and ns of holes so far); the run from
    0 goes on from it, as one run over all observations would. An open run's row says so in `_open`."""
    last_ts = ts if last_ts is None else last_ts
    at = np.arange(len(ts)) if known is None else np.flatnonzero(known)
    starts, ends = true_runs(np.asarray(flags)[at])
    starts, ends = at[starts], at[ends]
    bounds = run_bounds(ts[at], np.searchsorted(at, starts), np.searchsorted(at, ends), last_ts[at], hole_s)
    holes = holes_ns_upto(ts[at], last_ts[at], hole_s)
    out = []
    for k, (s, e) in enumerate(zip(starts, ends)):
        row = dict(base, code=code, severity=severity, unit=unit, threshold=threshold,
                   **{name: col[k] for name, col in bounds.items()})
        holes_ns = int(holes[np.searchsorted(at, e)] - holes[np.searchsorted(at, s)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a run with no known value: value_max stays null
            value_max = np.nanmax(values[s : e + 1])
        sure = certainty(s, e) == "certain"
        if carried is not None and s == at[0]:
            row["start_ts"] = np.datetime64(carried["start_ns"], "ns")
            row["start_lower"] = np.datetime64("NaT", "ns") if carried["lower_ns"] is None else np.datetime64(carried["lower_ns"], "ns")
            holes_ns += carried["holes_ns"]
            value_max, sure = np.fmax(carried["value_max"], value_max), sure and carried["certain"]
            row["unobserved_s"] = holes_ns / 1e9
        row["duration_s"] = seconds(row["end_ts"] - row["start_ts"])
        row["value_max"], row["value_last"] = value_max, values[e]
        row["certainty"] = observed_certainty("certain" if sure else "possible", row["unobserved_s"])
        row["message"], row["advice"], row["detail"] = describe(row, s, e)
        row["finding_id"] = stable_id(code, *(base.get(k) for k in ("group_name", *SERIES_KEY)), row["start_ts"])
        if row["is_open"]:
            row["_open"] = {"start_ns": int(row["start_ts"].astype("int64")), "holes_ns": holes_ns, "certain": bool(sure),
                            "lower_ns": None if np.isnat(row["start_lower"]) else int(row["start_lower"].astype("int64")),
                            "value_max": float(value_max)}
        out.append(row)
    return out


def _span(row: dict) -> str:
    still = " (still so at the last scrape)" if row["is_open"] else ""
    return f"from {fmt_ts(row['start_ts'])} to {fmt_ts(row['end_ts'])}{still}{unobserved_note(row['unobserved_s'])}"


# --- Kafka cluster health over aligned rounds -------------------------------------------------------------


def scrape_rounds(ts_ns: np.ndarray, instances: np.ndarray) -> np.ndarray:
    """Round number per observation of one group (module doc)."""
    if len(ts_ns) == 0:
        return np.zeros(0, dtype=np.int64)
    t = (ts_ns - ts_ns.min()).astype("int64")
    gaps = np.concatenate([np.diff(np.sort(t[instances == i])) for i in np.unique(instances)])
    gaps = gaps[gaps > 0]
    if not len(gaps):
        return np.unique(t, return_inverse=True)[1]
    interval = int(np.median(gaps))
    phases = np.unique(t % interval)
    widest = np.diff(np.concatenate((phases, [phases[0] + interval])))
    k = int(np.argmax(widest))
    boundary = (phases[k] + widest[k] // 2) % interval
    return (t - boundary) // interval


def cluster_rounds(state: pd.DataFrame, isr: pd.DataFrame, follower_lag_messages: float) -> pd.DataFrame:
    """One row per scrape round of a group: its first and last scrape, the cluster sums, and the
    brokers that did not answer / claimed the controller / lagged beyond the threshold."""
    state = state.sort_values("ts", kind="stable").assign(_ts=lambda d: utc_ns(d["ts"]))
    state["round"] = scrape_rounds(state["_ts"].to_numpy(), state["instance"].to_numpy())
    last = state.groupby(["round", "instance"], sort=False).tail(1)
    isr = isr.assign(_ts=lambda d: utc_ns(d["ts"])).drop(columns=["ts", "group_name"])
    per_broker = last.merge(isr, on=["instance", "_ts"], how="left")
    total = lambda s: s.sum(min_count=1)  # noqa: E731 — no broker answered: unknown, not 0
    rounds = per_broker.groupby("round").agg(
        start=("_ts", "min"), end=("_ts", "max"),
        controllers=("active_controllers", total), under_replicated=("under_replicated", total),
        under_min_isr=("under_min_isr", total), offline=("offline_partitions", "max"), follower_lag=("lag_max_messages", "max"),
    )

    def brokers(mask) -> pd.Series:
        return per_broker[mask].groupby("round")["instance"].agg(lambda i: sorted(set(i))).reindex(rounds.index).map(
            lambda v: v if isinstance(v, list) else [])

    life = state.groupby("instance")["_ts"].agg(["min", "max"])
    answered = brokers(per_broker["active_controllers"].notna())
    rounds["missing"] = [
        sorted(set(life.index[(life["min"] <= r.end) & (life["max"] >= r.start)]) - set(answered[r.Index]))
        for r in rounds.itertuples()
    ]
    # absent: no row at all in the round of a broker seen within an interval of it (one whose first
    # or last answer was stamped into the neighbouring round counts too)
    present = per_broker.groupby("round")["instance"].agg(set).reindex(rounds.index)
    step = np.median(np.diff(rounds["start"].to_numpy())) if len(rounds) > 1 else 0
    rounds["absent"] = [
        sorted(set(life.index[(life["min"] - step <= r.end) & (life["max"] + step >= r.start)]) - present[r.Index])
        for r in rounds.itertuples()
    ]
    rounds["claimants"] = brokers(per_broker["active_controllers"] >= 1)
    rounds["lagging"] = brokers(per_broker["lag_max_messages"] > follower_lag_messages)
    return rounds.sort_index().reset_index()


@dataclass(frozen=True)
class ClusterRule:
    code: str
    severity: str
    column: str  # the rounds column compared
    unit: str
    holds: Callable[[np.ndarray, float], np.ndarray]  # (values, threshold) → flags
    what: str  # the message after the group name and count
    advice: str
    named: str = "missing"  # the rounds column of brokers the finding names
    controller: bool = False  # meaningful only with the whole cluster in one group
    shown_by_some: bool = True  # the brokers that answered can prove it (a Σ or max above a threshold)


CLUSTER_RULES = (
    ClusterRule("no-controller", "error", "controllers", "controllers", lambda v, _: v == 0,
                "no broker reported itself active controller (Σ ActiveControllerCount = 0)",
                "without a controller no leader can be elected and no ISR can change: check the controller quorum "
                "(the brokers' ZooKeeper sessions, or the KRaft controllers) and the brokers' logs", controller=True,
                shown_by_some=False),
    ClusterRule("multiple-controllers", "error", "controllers", "controllers", lambda v, _: v >= 2,
                "brokers reported themselves active controller at once",
                "a stale controller (after a ZooKeeper session expiry or a network partition) can issue conflicting "
                "leadership decisions: restart the broker that should not be controller and check its connectivity",
                named="claimants", controller=True),
    ClusterRule("under-replicated", "warn", "under_replicated", "partitions", lambda v, _: v > 0,
                "partitions were under-replicated (ISR smaller than the replica set)",
                "a broker is down or its followers cannot keep up: check the brokers that did not answer, and follower lag"),
    ClusterRule("under-min-isr", "error", "under_min_isr", "partitions", lambda v, _: v > 0,
                "partitions had fewer in-sync replicas than min.insync.replicas: acks=all writes to them were refused",
                "restore the missing replicas (bring the broker back); until then producers with acks=all fail on them"),
    ClusterRule("offline-partitions", "error", "offline", "partitions", lambda v, _: v > 0,
                "partitions had no leader (offline)",
                "bring back a broker that holds a replica of them; unclean leader election loses data — a last resort"),
    ClusterRule("follower-lag", "warn", "follower_lag", "messages", lambda v, th: v > th,
                "messages of follower lag (ReplicaFetcherManager MaxLag)",
                "a follower is catching up (expected right after a restart); if it lasts, check its network, disk and "
                "num.replica.fetchers", named="lagging"),
)


def group_cluster_findings(state: pd.DataFrame, isr: pd.DataFrame, *, follower_lag_messages: float,
                           hole_s: float = math.inf) -> pd.DataFrame:
    """Kafka cluster findings of ONE group from its broker_state and `isr` rows."""
    if isr.empty or state.empty:
        return contract_frame([], REPLICATION_FINDINGS)
    rounds = cluster_rounds(state, isr, follower_lag_messages)
    group = state["group_name"].iloc[0]
    declared = set(state["instance"]) != {group}
    first_ts, last_ts = rounds["start"].to_numpy(), rounds["end"].to_numpy()
    absent = rounds["absent"].map(len).to_numpy()
    base = {"kind": "kafka", "group_name": group, "instance": None, "flow": "isr"}

    def union(column: str, s: int, e: int) -> list[str]:
        return sorted(set().union(*rounds[column].iloc[s : e + 1]))

    out: list[dict] = []
    for rule in CLUSTER_RULES:
        if rule.controller and not declared:
            continue
        values = rounds[rule.column].to_numpy(dtype="float64")

        def certainty(s: int, e: int, rule=rule) -> str:
            if not rule.controller:
                return "certain"  # the brokers' own counts; unanswered ones only make them lower bounds
            aligned = e > s  # one round alone may be a controller move between two brokers' scrapes
            answered = rule.code == "multiple-controllers" or not union("missing", s, e)
            return "certain" if aligned and answered else "possible"

        def describe(row: dict, s: int, e: int, rule=rule) -> tuple[str, str, str | None]:
            named, missing = union(rule.named, s, e), union("missing", s, e)
            count = "" if rule.code == "no-controller" else f"{row['value_max']:.0f} "
            message = f"{group}: {count}{rule.what} {_span(row)}"
            if rule.named != "missing" and named:
                message += f" ({', '.join(named)})"
            if missing:
                message += f"; {', '.join(missing)} did not answer meanwhile, so the count is a lower bound"
            return message, rule.advice, ",".join(named) or None

        flags = rule.holds(np.nan_to_num(values, nan=-1), follower_lag_messages)  # no broker answered: unknown, never a hit
        # a round without any row of a broker (lost, or stamped into the next round): the count
        # over the others is a lower bound, which can show "above" (under-replicated, two
        # controllers) but never "none" (the absent broker may be the controller)
        known = (absent == 0) | (flags if rule.shown_by_some else ~flags)
        threshold = follower_lag_messages if rule.code == "follower-lag" else None
        out += finding_rows(rule.code, rule.severity, base, first_ts, flags, values, unit=rule.unit, threshold=threshold,
                            certainty=certainty, describe=describe, last_ts=last_ts, hole_s=hole_s, known=known)
    return contract_frame(out, REPLICATION_FINDINGS)


# --- findings per topic-partition (from replication_lag) ------------------------------------------------------

LAG_ADVICE = ("the replication falls behind: check the connector's tasks, its throughput and the target cluster; "
              "a failover now would lose about that much data")
STATUS_ADVICE = {
    WARN: ("its lag never decreased over the window (Burrow WARN): it keeps up less than the producers",
           "scale the consumers / connector tasks or speed up processing"),
    STOP: ("it stopped being reported with lag outstanding (Burrow STOP)",
           "check that the consumer or connector task is running and still assigned this partition"),
    STALL: ("its position did not move over the window while lag remained (Burrow STALL)",
            "the consumer is stuck (a poison message, a blocked task): check its logs; skip or dead-letter the message"),
    REWIND: ("its position went back and did not recover (Burrow REWIND)",
             "an offset reset or replay: check for resets (auto.offset.reset, manual resets); messages are processed again"),
}


def series_name(row) -> str:
    """`replicator orders-0 (dc1→dc2) [replicator-dc1-dc2/0]` for messages."""
    partition = "" if pd.isna(row["partition"]) else int(row["partition"])
    clusters = f" ({row['source_cluster']}→{row['target_cluster']})" if row["source_cluster"] or row["target_cluster"] else ""
    return f"{row['flow']} {row['topic'] or ''}-{partition}{clusters}" + (f" [{row['client']}]" if row["client"] else "")


def series_findings(lag: pd.DataFrame, *, lag_threshold_s: float, hole_s: float = math.inf) -> pd.DataFrame:
    """replication-lag and consumer-<status> findings of ONE series from its replication_lag rows."""
    return contract_frame(series_findings_carried(lag, lag_threshold_s=lag_threshold_s, hole_s=hole_s)[0], REPLICATION_FINDINGS)


#: what the findings of a series read of its replication_lag rows (the last one is carried)
FINDING_INPUT = ("ts", "observed", "lag_s", "lag_s_method", "status", "lag_messages")


def series_findings_carried(lag: pd.DataFrame, *, lag_threshold_s: float, hole_s: float = math.inf,
                            carried: dict | None = None) -> tuple[list[dict], dict]:
    """`series_findings` (as rows: contract_frame them, once for many series), and what a later call needs to go on (`last`: the last row's FINDING_INPUT,
    `open`: per code the run still open at it, finding_rows' `_open`). With `carried` (what an
    earlier call gave), `lag` holds the rows after its last one: the findings are those a call over
    all rows gives for runs still open then or begun since (the earlier ones do not change)."""
    lag = lag.sort_values("ts", kind="stable").reset_index(drop=True)
    first = lag.iloc[0]
    if carried is not None:  # the last row before these: where the open runs stand, the bound before new ones
        head = lag.iloc[:1].copy()
        for k, v in dict(carried["last"], ts=pd.Timestamp(carried["last"]["ts"])).items():
            head[k] = [v]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # a carried null (lag_s of a row not observed) is a null here too
            lag = pd.concat([head, lag], ignore_index=True)
    opened = {} if carried is None else carried["open"]
    base = {k: first[k] for k in ("kind", "group_name", *SERIES_KEY)}
    base["partition"] = None if pd.isna(base["partition"]) else int(base["partition"])
    name = series_name(first)
    ts = utc_ns(lag["ts"])
    observed = lag["observed"].to_numpy(dtype=bool)
    out: list[dict] = []

    lag_s = numbers(lag["lag_s"])
    methods = lag["lag_s_method"].to_numpy()
    out += finding_rows(
        "replication-lag", "warn", base, ts, np.nan_to_num(lag_s) > lag_threshold_s, lag_s, unit="s", threshold=lag_threshold_s,
        certainty=lambda s, e: "possible" if (methods[s : e + 1] == "extrapolated").any() else "certain", hole_s=hole_s,
        describe=lambda row, s, e: (f"{name}: lag reached {row['value_max']:.1f} s (over {lag_threshold_s:.0f} s) {_span(row)}",
                                    LAG_ADVICE, None), carried=opened.get("replication-lag"))
    status = lag["status"].fillna(OK).to_numpy()
    lags = numbers(lag["lag_messages"])
    for code in (WARN, STOP, STALL, REWIND):
        what, advice = (MIRROR_STATUS_ADVICE if first["flow"] == MIRROR_FLOW else STATUS_ADVICE)[code]
        out += finding_rows(
            f"consumer-{code.lower()}", "warn" if code == WARN else "error", base, ts, status == code, lags,
            unit="messages", threshold=None, hole_s=hole_s,
            certainty=lambda s, e, code=code: "certain" if code == STOP or observed[s : e + 1].all() else "possible",
            describe=lambda row, s, e, what=what, advice=advice: (
                f"{name}: {what}, lag {row['value_last']:.0f} messages {_span(row)}", advice, None),
            carried=opened.get(f"consumer-{code.lower()}"))
    end = lag.iloc[-1]
    carry = {"open": {row["code"]: row["_open"] for row in out if "_open" in row},
             "last": {k: (int(utc_ns([end[k]])[0].astype("int64")) if k == "ts" else _plain(end[k])) for k in FINDING_INPUT}}
    return out, carry


def _plain(v):
    """A cell as JSON takes it (numpy scalars as Python's; null as None)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


# --- failover readiness (from gold failover_readiness) -------------------------------------------------------

READINESS_KEY = ["replication", "consumer_group", "topic", "partition"]
#: code → (severity, the status whose runs it is, value column, unit, what (of the last value), advice)
READINESS_RULES = {
    "failover-readiness-lossy": (
        "error", "lossy", "skipped", "messages", lambda v: f"{_count(v)} message(s) would be skipped if it failed over now",
        "the offset the group would start from on DR is ahead of its commit (a reset or rewind on the primary, which "
        "MirrorMaker 2 does not sync backwards; or auto.offset.reset=latest without a translation): before failing "
        "over, set the group's offsets on DR to its commit (kafka-consumer-groups --reset-offsets)"),
    "failover-readiness-untranslated": (
        "warn", "no-translation", "re_read", "messages",
        lambda v: "no translated offset on DR: a failover now starts it where its auto.offset.reset says"
                  + ("" if not np.isfinite(v) else f" ({_count(v)} message(s) read again)"),
        "check that MirrorMaker 2 checkpoints this group (groups filter, emit.checkpoints.enabled, "
        "sync.group.offsets.enabled) and mirrors the topic; MM2 translates only from an offset sync at or below the "
        "commit, and after a burst it may hold none for a while"),
    "failover-readiness-stale": (
        "warn", "stale", "checkpoint_age_s", "s",
        lambda v: f"the last checkpoint is {v:.0f} s old and translates an older commit than the group's",
        "check that MirrorMaker 2's checkpoint connector (MirrorCheckpointConnector) and its replication run; if they "
        "do, the group lies too far behind the log end for MM2's sparse offset syncs (keep it closer, or lower "
        "offset.lag.max); until then a failover re-reads what the group committed since"),
}


def _count(v: float) -> str:
    return f"{v:.0f}" if np.isfinite(v) else "?"


def readiness_findings_of(series: pd.DataFrame, *, stale_after_s: float, hole_s: float = math.inf) -> pd.DataFrame:
    """failover-readiness-* findings of ONE (replication, group, topic, partition) from its
    failover_readiness rows: a run of rounds with that status; an unknown round is no observation
    (a run goes on across it, beyond `hole_s` counted as unobserved)."""
    series = series.sort_values("ts", kind="stable").reset_index(drop=True)
    first = series.iloc[0]
    base = {"kind": "kafka", "group_name": first["group_name"], "instance": first["replication"], "flow": "failover-readiness",
            "source_cluster": first["source_cluster"], "target_cluster": first["target_cluster"], "topic": first["topic"],
            "partition": int(first["partition"]), "client": first["consumer_group"]}
    name = f"consumer group {first['consumer_group']} on {first['topic']}-{int(first['partition'])} ({first['source_cluster']}→{first['target_cluster']})"
    ts, status = utc_ns(series["ts"]), series["status"].to_numpy()
    details = series["detail"].to_numpy()
    out: list[dict] = []
    for code, (severity, wanted, column, unit, what, advice) in READINESS_RULES.items():
        values = numbers(series[column])
        flags = status == wanted
        if not flags.any():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a run with no known value: value_max stays null
            out += finding_rows(
                code, severity, base, ts, flags, values, unit=unit,
                threshold=stale_after_s if code == "failover-readiness-stale" else None, certainty=lambda s, e: "certain",
                hole_s=hole_s, known=status != "unknown", describe=lambda row, s, e, what=what, advice=advice: (
                    f"{name}: {what(row['value_last'])} {_span(row)} — {details[e]}", advice, None))
    return contract_frame(out, REPLICATION_FINDINGS)


# --- Artemis replica sync -------------------------------------------------------------------------------------


def replica_sync_gaps(replica: pd.DataFrame, state: pd.DataFrame, *, grace_s: float,
                      hole_s: float = math.inf) -> pd.DataFrame:
    """replica-sync-gap findings of ONE live instance from its artemis-replica rows; `state`: broker_state
    rows of its group (its own say when it was not seen, the others how the backup looked meanwhile)."""
    if replica.empty:
        return contract_frame([], REPLICATION_FINDINGS)
    replica = replica.sort_values("ts", kind="stable").reset_index(drop=True)
    first = replica.iloc[0]
    ts = utc_ns(replica["ts"])
    in_sync = pd.Series(replica["in_sync"], dtype="boolean")
    announced = pd.Series(replica["backup_announced"], dtype="boolean").to_numpy(dtype=object, na_value=None)
    own = state["instance"] == first["instance"]
    missed = np.sort(utc_ns(state.loc[own & ~state["reachable"].astype(bool), "ts"]))
    others = backups_meanwhile(state[~own], ts)
    base = {"kind": first["kind"], "group_name": first["group_name"], "instance": first["instance"], "flow": "artemis-replica"}
    starts, ends = true_runs((in_sync == False).fillna(False).to_numpy(dtype=bool))  # noqa: E712
    long_enough, elapsed = np.zeros(len(ts), dtype=bool), np.zeros(len(ts))
    for s, e in zip(starts, ends):
        if e > s and seconds(ts[e] - ts[s]) >= grace_s:  # never from one sample
            long_enough[s : e + 1] = True
            elapsed[s : e + 1] = seconds(ts[s : e + 1] - ts[s])

    def describe(row: dict, s: int, e: int) -> tuple[str, str, str | None]:
        no_backup = all(a is False for a in announced[s : e + 1])
        why = ("no backup was announced in the cluster topology: the live was unprotected" if no_backup
               else "a backup was attached but not synchronized (initial sync running, or replication dropped)")
        seen, link_lost = others(s, e)
        if link_lost:
            why = ("the replication link was lost, not the backup: it kept answering and reported itself in sync "
                   "(ReplicaSync true) after the live had dropped it")
        return (f"{first['instance']} (live of {first['group_name']}) was not in sync with a backup for "
                f"{row['duration_s']:.0f} s {_span(row)}: {why}",
                "start or repair the backup (its replication connection, the initial synchronization); until it is in "
                "sync a failure of the live cannot be taken over without losing data", seen)

    def certainty(s: int, e: int) -> str:
        return "certain" if count_between(missed, ts[s : s + 1], ts[e : e + 1])[0] == 0 else "possible"

    return contract_frame(finding_rows("replica-sync-gap", "error", base, ts, long_enough, elapsed, unit="s", threshold=grace_s,
                                       certainty=certainty, describe=describe, hole_s=hole_s), REPLICATION_FINDINGS)


def backups_meanwhile(others: pd.DataFrame, ts: np.ndarray) -> Callable[[int, int], tuple[str | None, bool]]:
    """Over a run [s, e] of a live's observations at `ts`: the group's other instances in words
    (None: none monitored), and whether one answered as an in-sync backup (Backup, ReplicaSync true)
    during it — the two sides disagree, so what they lost is the link between them."""
    step = np.median(np.diff(ts)) if len(ts) > 1 else np.timedelta64(0, "ns")
    views = []
    for name, rows in others.sort_values("ts", kind="stable").groupby("instance", sort=True):
        rows = rows.reset_index(drop=True)
        at = latest_of(rows, ts, 3 * step)  # as fresh as the live's own scrapes (3 of them)
        claims = (rows["reachable"].astype(bool) & (rows["role"] == "backup")
                  & (pd.Series(rows["replica_sync"], dtype="boolean") == True).fillna(False)).to_numpy(dtype=bool)  # noqa: E712
        views.append((name, at, claims, other_state_words(rows, at)))

    def words(s: int, e: int) -> tuple[str | None, bool]:
        if not views:
            return None, False
        picked = [(name, at[s : e + 1], claims, text) for name, at, claims, text in views]
        link = any(((a >= 0) & claims[np.maximum(a, 0)]).any() for _, a, claims, _ in picked)
        return "; ".join(f"{name} {text(s, e)}" for name, _, _, text in picked), link

    return words


# --- per group: Kafka cluster health and Artemis replica sync ------------------------------------------------


def group_findings(state: pd.DataFrame, repl: pd.DataFrame, *, follower_lag_messages: float, grace_s: float,
                   hole_s: float = math.inf) -> pd.DataFrame:
    """Findings of ONE group from its broker_state rows and its `isr` / `artemis-replica` rows."""
    parts = [contract_frame([], REPLICATION_FINDINGS)]
    if (state["kind"] == "kafka").any():
        parts.append(group_cluster_findings(state[state["kind"] == "kafka"], repl[repl["flow"] == "isr"],
                                            follower_lag_messages=follower_lag_messages, hole_s=hole_s))
    for instance, rows in repl[repl["flow"] == "artemis-replica"].groupby("instance"):
        parts.append(replica_sync_gaps(rows, state, grace_s=grace_s, hole_s=hole_s))
    return pd.concat(parts, ignore_index=True)


# --- Spark wiring ---------------------------------------------------------------------------------------------

_GROUP_COLUMNS = ["ts", "kind", "group_name", "instance", "flow", "under_replicated", "under_min_isr", "offline_partitions",
                  "active_controllers", "lag_max_messages", "in_sync", "backup_announced"]


def broker_findings(state: DataFrame, repl: DataFrame, *, follower_lag_messages: float, grace_s: float,
                    hole_s: float = math.inf) -> DataFrame:
    facts = repl.where(F.col("flow").isin("isr", "artemis-replica")).select(*_GROUP_COLUMNS)
    return (
        state.select("ts", "kind", "group_name", "instance", "reachable", "role", "replica_sync", "error").groupBy("group_name")
        .cogroup(facts.groupBy("group_name"))
        .applyInPandas(partial(group_findings, follower_lag_messages=follower_lag_messages, grace_s=grace_s, hole_s=hole_s),
                       REPLICATION_FINDINGS.spark_schema())
    )


def readiness_findings(ready: DataFrame, *, stale_after_s: float, hole_s: float = math.inf) -> DataFrame:
    def per_series(pdf: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark inspects it (a partial warns)
        return readiness_findings_of(pdf, stale_after_s=stale_after_s, hole_s=hole_s)

    return ready.groupBy(*READINESS_KEY).applyInPandas(per_series, REPLICATION_FINDINGS.spark_schema())


def lag_findings(lag: DataFrame, *, lag_threshold_s: float, hole_s: float = math.inf) -> DataFrame:
    def per_series(pdf: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark inspects it (a partial warns)
        return series_findings(pdf, lag_threshold_s=lag_threshold_s, hole_s=hole_s)

    return lag.groupBy(*SERIES_KEY).applyInPandas(per_series, REPLICATION_FINDINGS.spark_schema())


LAG_JOB = "lag"
LAG_TABLES = ("replication_lag", "replication_findings")
