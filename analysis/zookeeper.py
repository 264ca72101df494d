"""The ZooKeeper job: bronze_zk → silver zk_server_state, zk_coordination → gold zk_quorum,
zk_elections, zk_findings (joined with broker_state, collector_health and, when P3 has written it, gc_findings).

Small pure steps: row-level parsing lives in `collectors.zookeeper.parse`; the per-ensemble,
per-server and per-NodeID sequence logic is plain pandas (run inside `applyInPandas`); joins are
DataFrame → DataFrame. `run_zookeeper` only reads, calls and writes (overwrite: idempotent reruns).

Time follows the design's rule: an observation is a point. A scrape round is a point for the whole
ensemble; between two rounds the truth is unknown, so every interval and event carries the
neighbouring rounds as bounds, and an unanswered server is indeterminate, never 'down'.
"""

from __future__ import annotations

import hashlib
import math
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from analysis.frames import cached, typed_frame
from collectors.jolokia import error_kind_of
from collectors.zookeeper.parse import SERVING_STATES, coordination_rows, server_state_row
from lakehouse.tables import ZK_COORDINATION, ZK_ELECTIONS, ZK_FINDINGS, ZK_QUORUM, ZK_SERVER_STATE
from settings import GcSettings, ZkOptions

SOURCES_SERVER = ("zk.4lw", "zk.admin")
LEASE_EVENT_CODES = ("zk.lease-vanished", "zk.lock-handover")
# P3's codes for a stop-the-world pause long enough to lose a ZooKeeper session / connection
GC_SESSION_CODES = ("gc.pause-over-third-session", "gc.pause-over-connection-ttl")


@dataclass(frozen=True)
class ZkParams:
    """What the job needs from the config."""

    targets: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # name → (kind, group)
    members: dict[str, int] = field(default_factory=dict)  # ensemble → configured servers
    options: dict[str, ZkOptions] = field(default_factory=dict)  # zookeeper target → its `zookeeper:` options
    scrape_interval_s: float = 5.0
    hole_s: float = math.inf  # no answer from an ensemble for longer than this is a hole (unknown)
    session_s: dict[str, float] = field(default_factory=dict)  # Artemis target → its lock-manager session-ms, in s

    def ensemble(self, target: str, stored: str | None) -> str:
        """The config wins over what was stored at collection time (a group can be declared later)."""
        if target in self.targets:
            return self.targets[target][1] or target
        return stored or target

    def option(self, target: str, name: str):
        """A target's `zookeeper:` option, else its default."""
        return getattr(self.options.get(target) or ZkOptions(), name)




def _id(*parts: object) -> str:
    return hashlib.sha256("/".join("" if p is None else str(p) for p in parts).encode()).hexdigest()[:32]


def _secs(a, b) -> float | None:
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return None
    return (pd.Timestamp(b) - pd.Timestamp(a)).total_seconds()


# --- bronze → silver ------------------------------------------------------------------------------------


def _envelope(row: dict) -> dict:
    """A bronze_zk row back into the envelope it was made from."""
    resp = row["response_text"]
    if resp is not None and row["source"] != "zk.4lw":
        resp = json.loads(resp)
    return {"source": row["source"], "request": json.loads(row["request_json"]), "response": resp,
            "error": row["error"], "elapsed_ms": row["elapsed_ms"], "obs_key": row["obs_key"]}


def _scrapes(batches: Iterator[pa.RecordBatch], within: timedelta) -> Iterator[list[dict]]:
    """One server's scrape (srvr, mntr, AdminServer answers) from rows sorted by target and ts: the
    rows of one target `within` the first one's time, each command once — by time, not by equal
    stamps (a poller that sends one command after the other stamps each answer)."""
    current: list[dict] = []
    for batch in batches:
        for row in batch.to_pylist():
            if current and (row["target"] != current[0]["target"] or row["ts"] - current[0]["ts"] > within
                            or row["request_json"] in {r["request_json"] for r in current}):
                yield current
                current = []
            current.append(row)
    if current:
        yield current


def state_rows(rows: list[dict], params: ZkParams) -> dict:
    """The zk_server_state row of one server's scrape (its bronze rows of one ts)."""
    envs = [_envelope(r) for r in rows]
    first = next((e for e in envs if e["request"][0].get("command") in ("srvr", "stat")), envs[0])
    r0 = rows[0]
    base = {"obs_key": first["obs_key"], "ts": r0["ts"], "obs_date": r0["obs_date"],
            "ensemble": params.ensemble(r0["target"], r0["group_name"]), "instance": r0["target"],
            "endpoint": next((e["request"][0].get("endpoint") for e in envs if e["request"][0].get("endpoint")), None)}
    return server_state_row(envs, base)


def server_states(bronze: DataFrame, params: ZkParams) -> DataFrame:
    schema = ZK_SERVER_STATE.spark_schema()

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out: list[dict] = []
        for rows in _scrapes(batches, timedelta(seconds=params.scrape_interval_s / 2)):
            out.append(state_rows(rows, params))
            if len(out) >= 2000:  # stream: a day of mntr answers does not fit in memory at once
                yield pa.RecordBatch.from_pylist(out, schema=ZK_SERVER_STATE.schema)
                out = []
        yield pa.RecordBatch.from_pylist(out, schema=ZK_SERVER_STATE.schema)

    return (bronze.where(F.col("source").isin(*SOURCES_SERVER))
            .repartition("target").sortWithinPartitions("target", "ts", "obs_key")
            .mapInArrow(parse, schema))


def coordination(bronze: DataFrame, params: ZkParams) -> DataFrame:
    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                base = {"obs_key": row["obs_key"], "ts": row["ts"], "obs_date": row["obs_date"],
                        "ensemble": params.ensemble(row["target"], row["group_name"]), "target": row["target"]}
                out.extend(coordination_rows(_envelope(row), base))
            yield pa.RecordBatch.from_pylist(out, schema=ZK_COORDINATION.schema)

    return bronze.where(F.col("source") == "zk.znode").mapInArrow(parse, ZK_COORDINATION.spark_schema())


# --- silver → rounds: one consistent view of an ensemble per scrape round --------------------------------

ROUND_COLUMNS = [
    ("ensemble", T.StringType()), ("ts", T.TimestampType()), ("voters", T.LongType()),
    ("answering", T.LongType()), ("serving", T.LongType()), ("healthy", T.LongType()),
    ("status", T.StringType()), ("leader", T.StringType()), ("epoch", T.LongType()),
    ("leader_uptime_ms", T.LongType()), ("leader_election_ms", T.DoubleType()), ("states_json", T.StringType()),
]
ROUND_SCHEMA = T.StructType([T.StructField(n, t) for n, t in ROUND_COLUMNS])


def last_election_ms(pdf: pd.DataFrame) -> pd.Series:
    """Per row of ONE server: the duration of its latest election as ZooKeeper measured it —
    Δ election_time_sum / Δ elections since its previous row (a fresh JVM: sum / count)."""
    cnt = pd.to_numeric(pdf["elections"], errors="coerce")
    tot = pd.to_numeric(pdf["election_time_sum_ms"], errors="coerce")
    prev_cnt, prev_tot = cnt.ffill().shift(1), tot.ffill().shift(1)
    restarted = prev_cnt.isna() | (cnt < prev_cnt)
    d_cnt = np.where(restarted, cnt, cnt - prev_cnt)
    d_tot = np.where(restarted, tot, tot - prev_tot)
    value = pd.Series(np.where(d_cnt > 0, d_tot / np.where(d_cnt > 0, d_cnt, 1), np.nan), index=pdf.index)
    return value.ffill()


def refused_client_port(error: str | None) -> bool:
    """The server's client port refused the connection: nothing listens there (not the AdminServer's)."""
    return error_kind_of(error) == "refused" and "AdminServer" not in str(error)


def round_facts(rows: list[dict], voters: int) -> dict:
    """One round of an ensemble from each server's latest row: the quorum status — present: a server
    serves; election: nobody serves but a majority answers (they are electing a leader); lost: so
    many servers are seen down that a majority cannot exist even if every other server were up —
    evidence: a refused connection (nothing listens on the client port), never a missing answer or
    a timeout (a loaded or electing server may answer late: measured, a leader kill on a busy host
    read as a 0.5 s quorum loss); unknown: no answer, or too few rows to tell — the leader (of the
    highest epoch), its epoch, and the voters in quorum (the leader's synced followers + itself,
    else the servers serving)."""
    majority = voters // 2 + 1
    answering = [r for r in rows if r["reachable"]]
    down = [r for r in rows if not r["reachable"] and refused_client_port(r.get("error"))]
    serving = [r for r in rows if r["state"] in SERVING_STATES]
    leaders = [r for r in serving if r["state"] == "leader"]
    lead = max(leaders, key=lambda r: (_epoch(r), r["ts"], r["instance"])) if leaders else {}
    if serving:
        status = "present"
    elif len(answering) >= majority:
        status = "election"
    elif rows and voters - len(down) < majority:
        status = "lost"
    else:
        status = "unknown"
    if pd.notna(lead.get("synced_followers")):
        healthy = int(lead["synced_followers"]) + 1
    else:
        healthy = sum(1 for r in serving if r["state"] != "observer")

    def of_leader(col: str, cast):
        v = lead.get(col)
        return None if v is None or pd.isna(v) else cast(v)

    return {
        "answering": len(answering), "serving": len(serving), "healthy": healthy, "status": status,
        "leader": lead.get("instance"), "epoch": of_leader("zxid_epoch", int),
        "leader_uptime_ms": of_leader("leader_uptime_ms", int), "leader_election_ms": of_leader("last_election_ms", float),
        "states_json": json.dumps({r["instance"]: r["state"] if r["reachable"] else "unanswered"
                                   for r in sorted(rows, key=lambda r: r["instance"])}),
    }


def _epoch(r: dict) -> int:
    v = r.get("zxid_epoch")
    return -1 if v is None or pd.isna(v) else int(v)


def round_ids(ts: np.ndarray, instance: np.ndarray | None, cadence: np.timedelta64) -> np.ndarray:
    """Rows sorted by ts grouped into scrape rounds by time, whatever their individual stamps (a
    poller asks the servers one after the other): a round closes when a row comes more than half
    a cadence after the round's first row, or from a server the round already has (`instance`
    None: by time alone, for sources with many rows per answer)."""
    ids = np.zeros(len(ts), dtype=np.int64)
    current, first, seen = 0, None, set()
    for k in range(len(ts)):
        if first is not None and (ts[k] - first > cadence / 2 or (instance is not None and instance[k] in seen)):
            current, first, seen = current + 1, None, set()
        if first is None:
            first = ts[k]
        if instance is not None:
            seen.add(instance[k])
        ids[k] = current
    return ids


def scrape_cadence(pdf: pd.DataFrame, fallback_s: float) -> np.timedelta64:
    """The time between two answers of one server (median over all servers), else the configured interval."""
    steps = pdf.groupby("instance")["ts"].diff().dropna()
    steps = steps[steps > pd.Timedelta(0)]
    return (steps.median() if len(steps) else pd.Timedelta(seconds=fallback_s)).to_timedelta64()


def unknown_round(ensemble: str, ts, voters: int) -> dict:
    """A round inside a hole: nothing was observed, so nothing is known."""
    return {"ensemble": ensemble, "ts": ts, "voters": voters, "answering": 0, "serving": 0, "healthy": 0,
            "status": "unknown", "leader": None, "epoch": None, "leader_uptime_ms": None, "leader_election_ms": None,
            "states_json": "{}"}


def ensemble_rounds(pdf: pd.DataFrame, members: int = 0, scrape_interval_s: float = 5.0,
                    hole_s: float = math.inf) -> pd.DataFrame:
    """Rounds of ONE ensemble from its zk_server_state rows: rows grouped by time on the scrape
    cadence (round_ids), each round read by `round_facts` from every server's latest row (older
    than the hole tolerance counts as no row). A stretch of more than `hole_s` with no row at all
    is a hole: an `unknown` round stands in it. Voters: the largest of the configured servers, the
    servers seen and the reported quorum_size."""
    pdf = pdf.sort_values(["ts", "instance"], kind="stable").reset_index(drop=True)
    pdf["ts"] = pd.to_datetime(pdf["ts"], utc=True).dt.tz_localize(None)
    # one Series per server, concatenated (groupby.apply of a Series-returning function turns into a
    # wide DataFrame when there is a single group: an ensemble watched through one member)
    pdf["last_election_ms"] = pd.concat(
        [last_election_ms(g) for _, g in pdf.groupby("instance", sort=False)[["elections", "election_time_sum_ms"]]]
    ) if len(pdf) else pd.Series(dtype=float)
    ensemble = pdf["ensemble"].iloc[0]
    pdf["_round"] = round_ids(pdf["ts"].to_numpy(), pdf["instance"].to_numpy(), scrape_cadence(pdf, scrape_interval_s))
    hole = np.timedelta64(int(min(hole_s, 1e9) * 1e9), "ns")
    quorum_size = pd.to_numeric(pdf["quorum_size"], errors="coerce").max()
    voters = int(max(members, pdf["instance"].nunique(), 0 if pd.isna(quorum_size) else quorum_size))
    latest: dict[str, dict] = {}
    out = []
    for _, group in pdf.groupby("_round", sort=True):
        at = group["ts"].max()  # the round is complete when its last answer is in
        if out and at - out[-1]["ts"] > hole:
            out.append(unknown_round(ensemble, out[-1]["ts"] + hole, voters))
        for r in group.to_dict("records"):
            latest[r["instance"]] = r
        rows = [r for r in latest.values() if at - r["ts"] <= hole]
        out.append({"ensemble": ensemble, "ts": at, "voters": voters, **round_facts(rows, voters)})
    return pd.DataFrame(out, columns=[n for n, _ in ROUND_COLUMNS])


def rounds_of(states: DataFrame, params: ZkParams) -> DataFrame:
    cols = ["ensemble", "instance", "ts", "reachable", "error", "state", "zxid_epoch", "synced_followers",
            "leader_uptime_ms", "quorum_size", "elections", "election_time_sum_ms"]

    def per_ensemble(pdf: pd.DataFrame) -> pd.DataFrame:
        return ensemble_rounds(pdf, params.members.get(pdf["ensemble"].iloc[0], 0), params.scrape_interval_s,
                               params.hole_s)

    return states.select(*cols).groupBy("ensemble").applyInPandas(per_ensemble, ROUND_SCHEMA)


# --- rounds → gold: quorum intervals, elections ------------------------------------------------------------


def _runs(keys: list) -> list[tuple[int, int]]:
    """[start, end] index ranges of consecutive equal keys."""
    runs, start = [], 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            runs.append((start, i - 1))
            start = i
    return runs


def _nullable(v):
    return None if v is None or pd.isna(v) else v


def quorum_intervals(rounds: pd.DataFrame) -> pd.DataFrame:
    """Intervals of ONE ensemble with one (status, leader, epoch)."""
    r = rounds.sort_values("ts", kind="stable").reset_index(drop=True)
    if r.empty:
        return typed_frame([], ZK_QUORUM)
    majority = int(r["voters"].iloc[0]) // 2 + 1
    keys = list(zip(r["status"], r["leader"].fillna(""), r["epoch"].fillna(-1)))
    out = []
    for a, b in _runs(keys):
        seg = r.iloc[a:b + 1]
        present = seg[seg["status"] == "present"]
        out.append({
            "interval_id": f"{r['ensemble'].iloc[0]}/{r['status'].iloc[a]}/{pd.Timestamp(r['ts'].iloc[a]).isoformat()}",
            "ensemble": r["ensemble"].iloc[0], "status": r["status"].iloc[a],
            "leader": _nullable(r["leader"].iloc[a]), "epoch": _nullable(r["epoch"].iloc[a]),
            "start_ts": r["ts"].iloc[a], "start_lower": r["ts"].iloc[a - 1] if a > 0 else None,
            "end_ts": r["ts"].iloc[b], "end_upper": r["ts"].iloc[b + 1] if b + 1 < len(r) else None,
            "rounds": b - a + 1, "voters": int(r["voters"].max()),
            "answering_min": int(seg["answering"].min()), "healthy_min": int(seg["healthy"].min()),
            "bare_majority": bool((present["healthy"] == majority).any()),
            "is_open": b == len(r) - 1,
        })
    return typed_frame(out, ZK_QUORUM)


ELECTION_CAUSES = {"unanswered": "old leader unanswered", "not-serving": "old leader not serving"}


def election_row(r: pd.DataFrame, prev: int, i: int) -> dict:
    """The election between the last round of one leadership (`prev`) and the first of the next (`i`)."""
    gone = prev + 1
    between = r.iloc[gone:i]
    lost = between[between["status"] == "lost"]
    old_state = json.loads(r.at[gone, "states_json"]).get(r.at[prev, "leader"].split(",")[-1])
    uptime = _nullable(r.at[i, "leader_uptime_ms"])
    elected = r.at[i, "ts"] - pd.Timedelta(milliseconds=uptime) if uptime is not None else None
    end = elected if elected is not None else r.at[i, "ts"]
    lower = _secs(r.at[gone, "ts"], end)
    return {
        "election_id": _id(r.at[i, "ensemble"], _nullable(r.at[i, "epoch"]), pd.Timestamp(r.at[i, "ts"]).isoformat()),
        "ensemble": r.at[i, "ensemble"], "old_leader": r.at[prev, "leader"], "old_epoch": _nullable(r.at[prev, "epoch"]),
        "new_leader": r.at[i, "leader"], "new_epoch": _nullable(r.at[i, "epoch"]),
        "old_last_seen": r.at[prev, "ts"], "old_gone_seen": r.at[gone, "ts"], "old_leader_after": old_state,
        "elected_at": elected, "new_first_seen": r.at[i, "ts"],
        "duration_upper_s": _secs(r.at[prev, "ts"], end),
        "duration_lower_s": lower if lower is not None and lower > 0 else None,
        "zk_election_ms": _nullable(r.at[i, "leader_election_ms"]),
        "quorum_lost_s": _secs(lost["ts"].iloc[0], r.at[i, "ts"]) if not lost.empty else None,
        "cause": "quorum lost" if not lost.empty else ELECTION_CAUSES.get(old_state, "leader stepped down"),
    }


def elections(rounds: pd.DataFrame) -> pd.DataFrame:
    """Leader elections of ONE ensemble: each new (leader, epoch) after an earlier one."""
    r = rounds.sort_values("ts", kind="stable").reset_index(drop=True)

    # a round without the leader's epoch (its srvr answer lost) says nothing about the epoch: compare
    # with the last epoch seen for this leadership; the same leader and epoch again is no election
    out, prev, epoch = [], None, None  # prev: the last round of the current leadership
    for i in r.index[(r["status"] == "present") & r["leader"].notna()]:
        e = _nullable(r.at[i, "epoch"])
        if prev is not None and (r.at[i, "leader"] != r.at[prev, "leader"] or None not in (e, epoch) and e != epoch):
            out.append(election_row(r, prev, i))
            epoch = e
        elif e is not None:
            epoch = e
        prev = i
    return typed_frame(out, ZK_ELECTIONS)


def _per_ensemble(rounds: DataFrame, fn, contract) -> DataFrame:
    return rounds.groupBy("ensemble").applyInPandas(fn, contract.spark_schema())


# --- findings --------------------------------------------------------------------------------------------


def finding(code: str, severity: str, group: str, start, end, n: int, message: str, advice: str | None = None,
            ensemble: str | None = None, instance: str | None = None, node_id: str | None = None,
            value: float | None = None, threshold: float | None = None, unit: str | None = None,
            related: str | None = None) -> dict:
    return {"finding_id": _id(code, ensemble, group, instance, node_id, pd.Timestamp(start).isoformat()),
            "code": code, "severity": severity, "ensemble": ensemble, "group_name": group,
            "instance": instance, "node_id": node_id, "start_ts": start, "end_ts": end,
            "observations": int(n), "value": value, "threshold": threshold, "unit": unit,
            "message": message, "advice": advice, "related": related}


def _hms(ts) -> str:
    return pd.Timestamp(ts).strftime("%H:%M:%S.%f")[:-5]


def ensemble_risks(rounds: pd.DataFrame) -> pd.DataFrame:
    """Quorum lost, bare majority, fewer than 3 voters — for ONE ensemble, from its rounds."""
    r = rounds.sort_values("ts", kind="stable").reset_index(drop=True)
    if r.empty:
        return typed_frame([], ZK_FINDINGS)
    ens, voters = r["ensemble"].iloc[0], int(r["voters"].max())
    majority = voters // 2 + 1
    out = []
    if voters < 3:
        out.append(finding(
            "zk.ensemble-too-small", "warn", ens, r["ts"].iloc[0], r["ts"].iloc[-1], len(r),
            f"ensemble {ens} has {voters} voting server(s): losing any one stops it (a quorum of "
            f"{majority} is needed)", "run at least 3 (better 5) voting servers on separate hosts",
            ensemble=ens, value=voters, threshold=3, unit="count"))
    flags = {
        "lost": r["status"] == "lost",
        "bare": (r["status"] == "present") & (r["healthy"] == majority) & (voters >= 3),
    }
    for kind, mask in flags.items():
        for a, b in _runs(list(mask)):
            if not mask.iloc[a]:
                continue
            seg = r.iloc[a:b + 1]
            start, end = r["ts"].iloc[a], r["ts"].iloc[b]
            upper = _secs(r["ts"].iloc[a - 1] if a > 0 else start, r["ts"].iloc[b + 1] if b + 1 < len(r) else end)
            if kind == "lost":
                states = json.loads(seg["states_json"].iloc[0])
                out.append(finding(
                    "zk.quorum-lost", "error", ens, start, end, len(seg),
                    f"ensemble {ens} lost its quorum: no server serving from {_hms(start)} to {_hms(end)} "
                    f"({_secs(start, end):.1f} s observed, at most {upper:.1f} s); servers: "
                    + ", ".join(f"{k} {v}" for k, v in states.items()),
                    f"bring back servers until {majority} of {voters} run; clients (Artemis lock manager) "
                    "lose their sessions after session-ms and live brokers stop", ensemble=ens,
                    value=_secs(start, end), unit="s"))
            else:
                out.append(finding(
                    "zk.bare-majority", "warn", ens, start, end, len(seg),
                    f"ensemble {ens} ran on a bare majority ({majority} of {voters} voters in quorum) from "
                    f"{_hms(start)} to {_hms(end)}: one more loss loses the quorum",
                    "restore the missing server(s)", ensemble=ens, value=float(seg["healthy"].min()),
                    threshold=float(majority), unit="count"))
    return typed_frame(out, ZK_FINDINGS)


def server_spikes(pdf: pd.DataFrame, latency_ms: float, outstanding: int) -> pd.DataFrame:
    """Latency (mean over each scrape interval, from the cumulative sums; else a new maximum) and
    outstanding-request spikes of ONE server, merged into runs of consecutive rounds."""
    s = pdf[pdf["reachable"]].sort_values("ts", kind="stable").reset_index(drop=True)
    if s.empty:
        return typed_frame([], ZK_FINDINGS)
    ens, inst = s["ensemble"].iloc[0], s["instance"].iloc[0]
    n_req = pd.to_numeric(s["requests_total"], errors="coerce")
    lat_sum = pd.to_numeric(s["request_latency_sum_ms"], errors="coerce")
    d_req, d_sum = n_req.diff(), lat_sum.diff()
    window = pd.Series(np.where(d_req > 0, d_sum / d_req.where(d_req > 0), np.nan), index=s.index)
    max_lat = pd.to_numeric(s["max_latency_ms"], errors="coerce")
    new_max = max_lat.where(max_lat > max_lat.shift(1))  # a slower request than ever happened in this window
    lat = window.fillna(new_max)
    out_req = pd.to_numeric(s["outstanding_requests"], errors="coerce")
    rules = [("zk.latency-spike", lat >= latency_ms, lat, latency_ms, "ms",
              "mean request latency {v:.0f} ms (threshold {t:.0f} ms)",
              "look for disk fsync stalls (dataLogDir on its own disk), GC pauses of the server, "
              "or a client flooding it"),
             ("zk.outstanding-spike", out_req >= outstanding, out_req, outstanding, "count",
              "{v:.0f} outstanding requests (threshold {t:.0f})",
              "the server cannot keep up: check its disk, CPU and GC, and the clients' request rate")]
    out = []
    for code, mask, values, thr, unit, text, advice in rules:
        mask = mask.fillna(False)
        for a, b in _runs(list(mask)):
            if not mask.iloc[a]:
                continue
            peak = float(values.iloc[a:b + 1].max())
            out.append(finding(code, "warn", ens, s["ts"].iloc[a], s["ts"].iloc[b], b - a + 1,
                               f"{inst}: " + text.format(v=peak, t=thr) + f" from {_hms(s['ts'].iloc[a])} to {_hms(s['ts'].iloc[b])}",
                               advice, ensemble=ens, instance=inst, value=peak, threshold=float(thr), unit=unit))
    return typed_frame(out, ZK_FINDINGS)


def spikes(states: DataFrame, params: ZkParams) -> DataFrame:
    cols = ["ensemble", "instance", "ts", "reachable", "requests_total", "request_latency_sum_ms",
            "max_latency_ms", "outstanding_requests"]

    def per_server(pdf: pd.DataFrame) -> pd.DataFrame:
        inst = pdf["instance"].iloc[0]
        return server_spikes(pdf, params.option(inst, "latency_threshold") * 1000.0,
                             params.option(inst, "outstanding_threshold"))

    return states.select(*cols).groupBy("instance").applyInPandas(per_server, ZK_FINDINGS.spark_schema())


def lease_count_findings(c: pd.DataFrame, ens: str, nid: str) -> list[dict]:
    """Runs of snapshots whose lease count is not 1."""
    out = []
    count = pd.to_numeric(c["lease_count"], errors="coerce").fillna(0).astype(int)
    for a, b in _runs(list(count)):
        n = int(count.iloc[a])
        if n == 1:
            continue
        start, end = c["ts"].iloc[a], c["ts"].iloc[b]
        if n == 0:
            sev, what = "warn", "no lease: no broker holds the primary lock"
            advice = "normal only while a failover is under way; otherwise no live broker serves this NodeID"
        else:
            sev = "error" if b > a else "info"  # one snapshot of 2 can be a candidate's brief try
            what = f"{n} leases (sessions {c['lease_sessions'].iloc[a]}): more than one broker may consider itself primary"
            advice = ("check both brokers' Active attribute and logs (AMQ222294/222295); a lease that persists "
                      "belongs to a session ZooKeeper still considers alive")
        out.append(finding("zk.lease-count", sev, nid, start, end, b - a + 1,
                           f"NodeID {nid}: {what} from {_hms(start)} to {_hms(end)}", advice,
                           ensemble=ens, node_id=nid, value=n, threshold=1, unit="count"))
    return out


def claim_findings(c: pd.DataFrame, ens: str, nid: str, claim_grace_s: float) -> list[dict]:
    """A negative (claimed, uncommitted) activation sequence unchanged for at least the grace."""
    out = []
    raw = pd.to_numeric(c["sequence_raw"], errors="coerce")
    claimed = (raw < 0).fillna(False)
    for a, b in _runs(list(zip(claimed, raw.fillna(0)))):
        if not claimed.iloc[a]:
            continue
        since = c["sequence_mtime"].iloc[a] if pd.notna(c["sequence_mtime"].iloc[a]) else c["ts"].iloc[a]
        age = _secs(since, c["ts"].iloc[b])
        if age is None or age < claim_grace_s:
            continue
        out.append(finding(
            "zk.sequence-claim-lingering", "error", nid, c["ts"].iloc[a], c["ts"].iloc[b], b - a + 1,
            f"NodeID {nid}: activation sequence claimed as {int(-raw.iloc[a])} (stored {int(raw.iloc[a])}) but "
            f"not committed for {age:.1f} s: a broker died or stalled between the two CAS steps",
            "no broker can activate until it is repaired: the claiming broker re-commits when it restarts "
            "(SelfRepair); otherwise restore the committed value from the brokers' server.activation.sequence",
            ensemble=ens, node_id=nid, value=age, threshold=claim_grace_s, unit="s"))
    return out


def lease_events(c: pd.DataFrame, ens: str, nid: str) -> list[dict]:
    """The holder's lease vanished, or another session holds the lock now (a handover). A handover
    is told whether or not a snapshot caught the lock free in between (the old holder released
    it, then the new one acquired it: on a loaded host, or with slow scrapes, the free moment
    is often seen) — then it spans from the old holder's last snapshot to the new one's first."""
    out = []
    holders = [_nullable(h) for h in c["holder_session"]]
    ts = c["ts"]
    last, last_at = None, -1  # the last holder seen, and its last snapshot
    for i in range(1, len(c)):
        old, new = holders[i - 1], holders[i]
        if old is not None:
            last, last_at = old, i - 1
        if new is None and old is not None:
            out.append(finding(
                "zk.lease-vanished", "warn", nid, ts.iloc[i - 1], ts.iloc[i], 2,
                f"NodeID {nid}: the lease of session {old} vanished between {_hms(ts.iloc[i - 1])} and "
                f"{_hms(ts.iloc[i])}: its holder released the lock or its ZooKeeper session expired",
                "if the holder did not stop on purpose, look for a pause (GC) or a network cut on its host",
                ensemble=ens, node_id=nid, instance=old))
        elif new is not None and last is not None and new != last:
            free = "" if old is not None else (f"; the lock was seen free from {_hms(ts.iloc[last_at + 1])} to "
                                               f"{_hms(ts.iloc[i - 1])}")
            out.append(finding(
                "zk.lock-handover", "info", nid, ts.iloc[last_at], ts.iloc[i], i - last_at + 1,
                f"NodeID {nid}: primary lock handed over from session {last} to {new} between "
                f"{_hms(ts.iloc[last_at])} and {_hms(ts.iloc[i])}{free}",
                "a handover is a failover (or failback) of the primary role; see the brokers' timeline",
                ensemble=ens, node_id=nid, instance=last))
            last, last_at = new, i
    return out


def lock_findings(pdf: pd.DataFrame, claim_grace_s: float = ZkOptions().claim_grace) -> pd.DataFrame:
    """Coordination findings of ONE NodeID from its zk_coordination rows. Unanswered snapshots are
    skipped (indeterminate): bounds are the neighbouring answered snapshots."""
    c = pdf[pdf["answered"]].sort_values("ts", kind="stable").reset_index(drop=True)
    if c.empty:
        return typed_frame([], ZK_FINDINGS)
    ens, nid = c["ensemble"].iloc[0], c["node_id"].iloc[0]
    return typed_frame(lease_count_findings(c, ens, nid) + claim_findings(c, ens, nid, claim_grace_s)
                       + lease_events(c, ens, nid), ZK_FINDINGS)


def coordination_findings(coord: DataFrame, params: ZkParams) -> DataFrame:
    def per_node(pdf: pd.DataFrame) -> pd.DataFrame:  # the grace of the target that declares the watch
        return lock_findings(pdf, params.option(pdf["target"].iloc[0], "claim_grace"))

    return (coord.where(F.col("node_id") != "*")
            .groupBy("ensemble", "namespace", "node_id").applyInPandas(per_node, ZK_FINDINGS.spark_schema()))


# --- joins with broker facts and GC findings -----------------------------------------------------------


def _finding_cols(code, severity, ensemble, group, instance, node_id, start, end, n, value, threshold, unit,
                  message, advice, related) -> list:
    return [
        F.substring(F.sha2(F.concat_ws("/", F.lit(code), ensemble, group, instance, node_id, start.cast("string"),
                                       value.cast("string"), threshold.cast("string"), related), 256), 1, 32).alias("finding_id"),
        F.lit(code).alias("code"), F.lit(severity).alias("severity"), ensemble.alias("ensemble"),
        group.alias("group_name"), instance.alias("instance"), node_id.alias("node_id"),
        start.alias("start_ts"), end.alias("end_ts"), n.cast("long").alias("observations"),
        value.cast("double").alias("value"), threshold.cast("double").alias("threshold"), F.lit(unit).alias("unit"),
        message.alias("message"), F.lit(advice).alias("advice"), related.alias("related"),
    ]


def sequence_checks(coord: DataFrame, state: DataFrame, max_age_s: float) -> DataFrame:
    """Artemis brokers against the coordinated activation sequence of their NodeID (as of the
    latest snapshot before each broker observation, at most `max_age_s` older): an active broker
    whose ActivationSequence is below it runs on a superseded activation; a backup below it is
    stale and cannot take over (ActivationSequenceStateMachine: local ≠ coordinated → Stale)."""
    z = (coord.where(F.col("answered") & F.col("sequence_exists") & (F.col("node_id") != "*"))
         .select("node_id", "ts", "ensemble", F.col("committed_sequence").alias("committed"),
                 F.lit(None).cast("string").alias("instance"), F.lit(None).cast("string").alias("group_name"),
                 F.lit(None).cast("boolean").alias("active"), F.lit(None).cast("boolean").alias("backup"),
                 F.lit(None).cast("long").alias("local")))
    b = (state.where((F.col("kind") == "artemis") & F.col("node_id").isNotNull() & F.col("activation_sequence").isNotNull())
         .select("node_id", "ts", F.lit(None).cast("string").alias("ensemble"), F.lit(None).cast("long").alias("committed"),
                 "instance", "group_name", "active", "backup", F.col("activation_sequence").alias("local")))
    w = Window.partitionBy("node_id").orderBy("ts", F.col("instance").isNotNull()).rowsBetween(Window.unboundedPreceding, 0)
    zts = F.when(F.col("committed").isNotNull(), F.col("ts"))
    asof = (z.unionByName(b)
            .withColumn("z_committed", F.last("committed", ignorenulls=True).over(w))
            .withColumn("z_ts", F.last(zts, ignorenulls=True).over(w))
            .withColumn("z_ensemble", F.last("ensemble", ignorenulls=True).over(w))
            .where(F.col("instance").isNotNull() & F.col("z_committed").isNotNull()
                   & ((F.unix_micros("ts") - F.unix_micros("z_ts")) <= int(max_age_s * 1e6))
                   & (F.col("local") < F.col("z_committed"))))
    active = asof.where(F.col("active") == True)  # noqa: E712  (null = unknown: no finding)
    backup = asof.where((F.col("active") == False) & (F.coalesce(F.col("backup"), F.lit(True))))  # noqa: E712

    def collapse(df: DataFrame, code: str, severity: str, text: str, advice: str) -> DataFrame:
        g = df.groupBy("node_id", "instance", "group_name", "local", "z_committed").agg(
            F.min("ts").alias("start"), F.max("ts").alias("end"), F.count("*").alias("n"),
            F.first("z_ensemble", ignorenulls=True).alias("ens"))
        msg = F.format_string(text, F.col("instance"), F.col("local"), F.col("node_id"), F.col("z_committed"))
        return g.select(*_finding_cols(code, severity, F.col("ens"), F.col("group_name"), F.col("instance"),
                                       F.col("node_id"), F.col("start"), F.col("end"), F.col("n"),
                                       F.col("local"), F.col("z_committed"), "sequence", msg, advice,
                                       F.lit(None).cast("string")))

    behind = collapse(
        active, "zk.active-sequence-behind", "error",
        "%s is active with ActivationSequence %d below the coordinated value of NodeID %s (%d): another "
        "broker activated since — two primaries (split brain) or a primary that lost its lock",
        "stop the broker with the lower sequence; check the lease holder and AMQ222294/222295 in the logs")
    stale = collapse(
        backup, "zk.backup-stale", "warn",
        "backup %s has ActivationSequence %d, behind the coordinated value of NodeID %s (%d): it is stale "
        "and cannot take over",
        "restart the backup so it resynchronizes from the live broker before it is needed")
    return behind.unionByName(stale)


def backups_not_taking_over(lock: DataFrame, state: DataFrame, params: ZkParams, health: DataFrame) -> DataFrame:
    """zk.backup-not-taking-over: while no broker held a NodeID's primary lock (a `zk.lease-count` 0
    run), a backup of that NodeID's group was seen waiting (answered: backup, not active) and seen
    waiting again more than its lock-manager session plus two scrapes later: it had the free lock
    to take and did not. Why, from what was observed (Artemis 2.40.0, measured):

    * a peer of the group was *silent* (its scrapes timed out, collector_health `error_kind`, and it
      answered none before the last of them): a frozen JVM or a cut network. A replicating backup activates when its
      replication link to the live fails, not when the lock is free, and a frozen live keeps that link
      open (drill artemis-pause-zk): the backup waits until the live wakes, learns its session expired
      and stops;
    * otherwise (the live is gone: refused, or no peer seen) the backup has no synchronized replica:
      a stale backup logs "Not a candidate" and answers Backup true with no NodeID and
      ActivationSequence -1, so `zk.backup-stale` cannot see it (drill artemis-stale-backup-zk)."""
    free = (lock.where((F.col("code") == "zk.lease-count") & (F.col("value") == 0))
            .select("ensemble", "group_name", "node_id", F.col("start_ts").alias("free_start"),
                    F.col("end_ts").alias("free_end")))
    waiting = (state.where((F.col("kind") == "artemis") & F.col("reachable") & (F.col("role") == "backup")
                           & (F.col("active") == False))
               .select("group_name", "instance", "ts"))
    # the configured session of each Artemis target (params), else the settings' default (18 s)
    default = F.lit(GcSettings().zk_session_ms / 1000)
    session = (F.coalesce(F.create_map(*[F.lit(x) for kv in params.session_s.items() for x in kv])[F.col("instance")],
                          default) if params.session_s else default)
    g = (free.join(waiting, "group_name").where(F.col("ts").between(F.col("free_start"), F.col("free_end")))
         .groupBy("ensemble", "group_name", "node_id", "instance", "free_start", "free_end")
         .agg(F.min("ts").alias("start"), F.max("ts").alias("end"), F.count("*").alias("n"))
         .withColumn("bar", session + 2 * params.scrape_interval_s)
         .withColumn("waited", (F.unix_micros("end") - F.unix_micros("start")) / 1e6)
         .where(F.col("waited") > F.col("bar")))
    g = _with_silent_peer(g, state, health)
    waited = F.format_string(
        "backup %s was seen waiting from %s to %s (%d scrapes) while no broker held the primary lock of NodeID %s: "
        "it did not take the free lock within its %.1f-s session", F.col("instance"),
        F.date_format("start", "HH:mm:ss.S"), F.date_format("end", "HH:mm:ss.S"), F.col("n"), F.col("node_id"),
        F.col("bar") - 2 * params.scrape_interval_s)
    msg = F.when(F.col("silent_peer").isNotNull(), F.concat(waited, F.format_string(
        " — %s was silent (its scrapes timed out from %s to %s: a frozen JVM or a cut network), and a replicating "
        "backup activates when its replication link to the live fails, not when the lock is free: a frozen live "
        "keeps that link open", F.col("silent_peer"), F.date_format("silent_from", "HH:mm:ss.S"),
        F.date_format("silent_to", "HH:mm:ss.S")))).otherwise(F.concat(waited, F.lit(
            " — a backup without a synchronized replica (stale: its activation sequence behind the coordinated one) "
            "cannot activate")))
    advice = F.when(F.col("silent_peer").isNotNull(), F.lit(
        "find why the live is silent (a long GC or a frozen VM: its GC log; a cut network: the links between the "
        "pair). A live that wakes learns its session expired and stops, and the backup takes over then; one that "
        "stays frozen keeps the service down — stop it (kill -9) so the backup takes over")).otherwise(F.lit(
            "its log says \"Not a candidate … local activation sequence … does not match\" when it is stale; "
            "start the broker with the latest journal (the last primary): the backup resynchronizes from it; "
            "forcing the stale backup active (`artemis activation set`) loses what it missed"))
    return g.select(*_finding_cols("zk.backup-not-taking-over", "error", F.col("ensemble"), F.col("group_name"),
                                   F.col("instance"), F.col("node_id"), F.col("start"), F.col("end"), F.col("n"),
                                   F.col("waited"), F.col("bar"), "s", msg, advice, F.lit(None).cast("string")))


def _with_silent_peer(waits: DataFrame, state: DataFrame, health: DataFrame) -> DataFrame:
    """`silent_peer` (and `silent_from`, `silent_to`): another instance of the waiting backup's
    group whose scrapes timed out during the wait, with no answer before its last timeout (it may
    answer after: a frozen live that woke); else null. Refused scrapes are a JVM that is gone, not
    silent; no scrape in collector_health is no evidence: null."""
    peers = (state.where(F.col("kind") == "artemis").select("group_name", F.col("instance").alias("peer"))
             .distinct())
    scrapes = health.select(F.col("instance").alias("peer"), F.col("ts").alias("scrape_ts"), "answered", "error_kind")
    timed_out = F.when(F.col("error_kind") == "timeout", F.col("scrape_ts"))
    silent = (waits.join(peers, "group_name").where(F.col("peer") != F.col("instance"))
              .join(scrapes, "peer").where(F.col("scrape_ts").between(F.col("start"), F.col("end")))
              .groupBy("group_name", "instance", "free_start", "peer")
              .agg(F.min(timed_out).alias("silent_from"), F.max(timed_out).alias("silent_to"),
                   F.min(F.when(F.col("answered"), F.col("scrape_ts"))).alias("first_answer"))
              .where(F.col("silent_to").isNotNull()
                     & (F.col("first_answer").isNull() | (F.col("first_answer") > F.col("silent_to"))))
              .groupBy("group_name", "instance", "free_start")
              .agg(F.min_by(F.struct("peer", "silent_from", "silent_to"), "peer").alias("s"))
              .select("group_name", "instance", "free_start", F.col("s.peer").alias("silent_peer"),
                      F.col("s.silent_from").alias("silent_from"), F.col("s.silent_to").alias("silent_to")))
    return waits.join(silent, ["group_name", "instance", "free_start"], "left")


def broker_groups(coord_findings: DataFrame, state: DataFrame) -> DataFrame:
    """Coordination findings carry the NodeID as group; use the brokers' group for it where known."""
    groups = (state.where(F.col("node_id").isNotNull())
              .groupBy("node_id").agg(F.max_by("group_name", "ts").alias("_group")))
    return (coord_findings.join(groups, "node_id", "left")
            .withColumn("group_name", F.coalesce("_group", "group_name")).drop("_group")
            .select(*ZK_FINDINGS.column_names))


def gc_links(gc: DataFrame, findings: DataFrame, elections_df: DataFrame, state: DataFrame,
             servers: DataFrame, slack_s: float) -> DataFrame:
    """A stop-the-world pause long enough to lose a ZooKeeper session (P3's gc findings), linked to
    what it caused: on an Artemis broker, its NodeID's lease vanishing / handed over; on a
    ZooKeeper server, an election in its ensemble. The window runs from the pause's start to its
    end plus the session timeout (3 × the ⅓ threshold P3 compared with) plus `slack_s`."""
    p = gc.where(F.col("code").isin(*GC_SESSION_CODES) & F.col("ts").isNotNull()).select(
        F.col("finding_id").alias("gc_id"), F.col("target").alias("gc_target"), F.col("ts").alias("pause_start"),
        F.col("value").alias("pause_ms"), "code", "threshold")
    session_ms = F.when(F.col("code") == "gc.pause-over-third-session", F.col("threshold") * 3).otherwise(F.lit(0.0))
    p = p.withColumn("window_end", F.timestamp_micros(
        F.unix_micros("pause_start") + ((F.col("pause_ms") + session_ms) * 1000 + slack_s * 1e6).cast("long")))
    node_of = state.where(F.col("node_id").isNotNull()).select(F.col("instance").alias("gc_target"), "node_id").distinct()
    events = findings.where(F.col("code").isin(*LEASE_EVENT_CODES)).alias("e")
    lease = (p.join(node_of, "gc_target").alias("p")
             .join(events, (F.col("e.node_id") == F.col("p.node_id")) & (F.col("e.end_ts") >= F.col("p.pause_start"))
                   & (F.col("e.start_ts") <= F.col("p.window_end"))))
    # one finding per pause and NodeID: the lease first vanishes, then is handed over — two events,
    # one cause (before: two rows, and the incident told the same cause twice)
    vanished = F.when(F.col("e.code") == "zk.lease-vanished", F.col("e.end_ts"))
    handed = F.when(F.col("e.code") == "zk.lock-handover", F.col("e.end_ts"))
    lease = (lease.groupBy(F.col("p.gc_id").alias("gc_id"), F.col("p.gc_target").alias("gc_target"),
                           F.col("p.pause_start").alias("pause_start"), F.col("p.pause_ms").alias("pause_ms"),
                           F.col("p.threshold").alias("threshold"), F.col("e.node_id").alias("node_id"),
                           F.col("e.ensemble").alias("ensemble"), F.col("e.group_name").alias("group_name"))
             .agg(F.min(vanished).alias("vanished"), F.min(handed).alias("handed"), F.max("e.end_ts").alias("end_ts"),
                  F.concat_ws(",", F.array_sort(F.collect_set("e.finding_id"))).alias("event_ids")))
    what = F.concat_ws(" and ", F.when(F.col("vanished").isNotNull(),
                                       F.concat(F.lit("vanished by "), F.date_format("vanished", "HH:mm:ss.S"))),
                       F.when(F.col("handed").isNotNull(),
                              F.concat(F.lit("was handed over by "), F.date_format("handed", "HH:mm:ss.S"))))
    lease_rows = lease.select(*_finding_cols(
        "zk.gc-pause-lost-lease", "error", F.col("ensemble"), F.col("group_name"), F.col("gc_target"),
        F.col("node_id"), F.col("pause_start"), F.col("end_ts"), F.lit(1), F.col("pause_ms"),
        F.col("threshold"), "ms",
        F.format_string("%s paused %.0f ms (GC) from %s; NodeID %s's lease %s — the pause outlasted "
                        "the ZooKeeper session's budget", F.col("gc_target"), F.col("pause_ms"),
                        F.date_format("pause_start", "HH:mm:ss.S"), F.col("node_id"), what),
        "keep every pause under ⅓ of session-ms (heap size, collector, GC tuning) or raise session-ms",
        F.concat_ws(",", F.col("gc_id"), F.col("event_ids"))))
    server_ens = servers.select(F.col("instance").alias("gc_target"), "ensemble").distinct()
    el = elections_df.alias("x")
    elect = (p.join(server_ens, "gc_target").alias("p")
             .join(el, (F.col("x.ensemble") == F.col("p.ensemble")) & (F.col("x.old_gone_seen") >= F.col("p.pause_start"))
                   & (F.col("x.old_last_seen") <= F.col("p.window_end"))))
    elect_rows = elect.select(*_finding_cols(
        "zk.gc-pause-election", "error", F.col("x.ensemble"), F.col("x.ensemble"), F.col("p.gc_target"),
        F.lit(None).cast("string"), F.col("p.pause_start"), F.col("x.new_first_seen"), F.lit(1),
        F.col("p.pause_ms"), F.col("p.threshold"), "ms",
        F.format_string("ZooKeeper server %s paused %.0f ms (GC) from %s; the ensemble elected %s (epoch %s) after it",
                        F.col("p.gc_target"), F.col("p.pause_ms"), F.date_format("p.pause_start", "HH:mm:ss.S"),
                        F.col("x.new_leader"), F.col("x.new_epoch").cast("string")),
        "size the server's heap and collector so pauses stay well under syncLimit × tickTime",
        F.concat_ws(",", F.col("p.gc_id"), F.col("x.election_id"))))
    return lease_rows.unionByName(elect_rows)


# --- the runner -----------------------------------------------------------------------------------------


def run_zookeeper(slh, params: ZkParams, progress=None) -> dict[str, int]:
    """Read bronze_zk (and broker_state, collector_health, gc_findings), write silver and gold (overwrite: idempotent)."""
    say = progress or (lambda msg: None)
    counts: dict[str, int] = {}
    bronze = slh.read("bronze_zk")
    say("bronze_zk → silver zk_server_state, zk_coordination")
    counts["zk_server_state"] = slh.write("zk_server_state", server_states(bronze, params))
    counts["zk_coordination"] = slh.write("zk_coordination", coordination(bronze, params))
    broker_state = slh.read("broker_state")
    health = slh.read("collector_health", columns=["instance", "ts", "answered", "error_kind"])
    say("silver → gold zk_quorum, zk_elections, zk_findings")
    with cached(slh.read("zk_server_state"), slh.read("zk_coordination")) as (states, coord), \
            cached(rounds_of(states, params)) as rounds:
        counts["zk_quorum"] = slh.write("zk_quorum", _per_ensemble(rounds, quorum_intervals, ZK_QUORUM))
        counts["zk_elections"] = slh.write("zk_elections", _per_ensemble(rounds, elections, ZK_ELECTIONS))
        with cached(broker_groups(coordination_findings(coord, params), broker_state)) as lock:
            found = (_per_ensemble(rounds, ensemble_risks, ZK_FINDINGS)
                     .unionByName(spikes(states, params))
                     .unionByName(lock)
                     .unionByName(sequence_checks(coord, broker_state, max_age_s=max(3 * params.scrape_interval_s, 10.0)))
                     .unionByName(backups_not_taking_over(lock, broker_state, params, health))
                     .unionByName(gc_links(slh.read("gc_findings"), lock, slh.read("zk_elections"), broker_state, states,
                                           slack_s=2 * params.scrape_interval_s)))
            counts["zk_findings"] = slh.write("zk_findings", found)
    return counts
