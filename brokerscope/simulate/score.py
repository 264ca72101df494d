"""Score the findings of an analysis against a simulated scenario's ground truth.

For each finding type, gold rows are matched to truth items (same group and instances / target /
destination / code, and times that overlap); then

    recall     matched truth items / truth items
    precision  matched gold rows / gold rows of that type
    boundary   the worst distance between a matched row's observed boundaries and the true ones,
               in seconds and in scrape intervals

The bar (issue P5, "done when"): recall 100 % for failovers and split-brain windows with boundaries
within one scrape interval, no split brain that did not happen (none on a clean failover), and
stuck, lag, stale-backup and GC findings matching the truth both ways. `risk_findings` and
`finding_causes` are scored when those tables exist.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

import yaml

from brokerscope.simulate.render import CONFIG, RECORDING, TRUTH
from collectors.base import parse_ts
from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict

SLACK_S = 0.002  # recorded times have ms resolution: rounding on both sides
GC_SESSION_CODES = ("gc.pause-over-third-session", "gc.pause-over-connection-ttl")


@dataclass
class TypeScore:
    finding: str  # failovers | split_brain | stuck | lag | gc | causes | stale_backup …
    table: str
    truth: int
    found: int
    matched_truth: int
    matched_found: int
    boundary_s: float | None
    interval: float
    bar_recall: bool = True
    bar_precision: bool = True
    bar_boundary: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float | None:
        return self.matched_truth / self.truth if self.truth else None

    @property
    def precision(self) -> float | None:
        return self.matched_found / self.found if self.found else None

    @property
    def boundary_intervals(self) -> float | None:
        return None if self.boundary_s is None else self.boundary_s / self.interval

    @property
    def passed(self) -> bool:
        ok = True
        if self.bar_recall and self.truth:
            ok &= self.matched_truth == self.truth
        if self.bar_precision:
            ok &= self.matched_found == self.found
        if self.bar_boundary and self.boundary_s is not None:
            ok &= self.boundary_s <= self.interval + SLACK_S
        return ok

    def as_dict(self) -> dict:
        return {"finding": self.finding, "table": self.table, "truth": self.truth, "found": self.found,
                "recall": self.recall, "precision": self.precision, "boundary_error_s": self.boundary_s,
                "boundary_error_intervals": self.boundary_intervals, "passed": self.passed, "notes": self.notes}


@dataclass
class Report:
    scenario: str
    kind: str
    interval: float
    scores: list[TypeScore]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.scores)

    def text(self) -> str:
        out = [f"scenario {self.scenario} ({self.kind}), scrape interval {self.interval:g} s"]
        out.append(f"  {'finding':<14} {'table':<22} {'truth':>5} {'found':>5} {'recall':>7} {'precision':>9} "
                   f"{'boundary':>14}  verdict")
        for s in self.scores:
            b = "—" if s.boundary_s is None else f"{s.boundary_s:.3f}s {s.boundary_intervals:.2f}×"
            out.append(f"  {s.finding:<14} {s.table:<22} {s.truth:>5} {s.found:>5} {_pct(s.recall):>7} "
                       f"{_pct(s.precision):>9} {b:>14}  {'ok' if s.passed else 'BELOW BAR'}")
            out += [f"      {n}" for n in s.notes]
        out.append("PASS: meets the bar" if self.passed else "FAIL: below the bar (see BELOW BAR lines)")
        return "\n".join(out)

    def as_dict(self) -> dict:
        return {"scenario": self.scenario, "kind": self.kind, "interval_s": self.interval, "passed": self.passed,
                "scores": [s.as_dict() for s in self.scores]}


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.0f} %"


def _t(v) -> datetime | None:
    if v is None:
        return None
    if isinstance(v, datetime):
        return v
    return parse_ts(v)


def _dt(a, b) -> float:
    return abs((_t(a) - _t(b)).total_seconds())


def _overlaps(a0, a1, b0, b1, slack: float) -> bool:
    """[a0, a1] and [b0, b1] overlap, ends None = open, widened by `slack` seconds."""
    far = datetime.max.replace(tzinfo=_t(a0).tzinfo)
    a1, b1 = _t(a1) or far, _t(b1) or far
    return (_t(a0) - b1).total_seconds() <= slack and (_t(b0) - a1).total_seconds() <= slack


def match(truth: list[dict], found: list[dict], same: Callable[[dict, dict], bool],
          error: Callable[[dict, dict], float]) -> tuple[list[tuple[dict, dict, float]], list[dict], list[dict]]:
    """Greedy one-to-one matching, closest first: (pairs with their boundary error, missed truth, extra rows)."""
    candidates = sorted(((error(t, f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found) if same(t, f)),
                        key=lambda x: x[0])
    used_t, used_f, pairs = set(), set(), []
    for err, i, j in candidates:
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
            pairs.append((truth[i], found[j], err))
    return (pairs, [t for i, t in enumerate(truth) if i not in used_t],
            [f for j, f in enumerate(found) if j not in used_f])


def _type_score(name: str, table: str, truth: list[dict], found: list[dict], same, error, interval: float,
                describe_truth, describe_found, **bar) -> tuple[TypeScore, list[tuple[dict, dict, float]]]:
    pairs, missed, extra = match(truth, found, same, error)
    worst = max((e for _, _, e in pairs), default=None)
    s = TypeScore(name, table, len(truth), len(found), len(pairs), len(pairs), worst, interval, **bar)
    s.notes += [f"missed: {describe_truth(t)}" for t in missed]
    s.notes += [f"not in the truth: {describe_found(f)}" for f in extra]
    over = "" if s.bar_boundary else " (reported, not part of the bar)"
    s.notes += [f"boundary {e:.3f} s > one interval{over}: {describe_found(f)}" for _, f, e in pairs
                if e > interval + SLACK_S]
    return s, pairs


# --- per finding type ---------------------------------------------------------------------------------


def score_failovers(truth: dict, rows: list[dict], interval: float):
    window = 3 * interval

    def same(t, f):
        return (f["group_name"] == t["group"] and (f["from_instance"], f["to_instance"]) == (t["from"], t["to"])
                and f["event_type"] == t["event_type"] and _dt(f["new_first_active"], t["new_live_active"]) <= window)

    def error(t, f):
        return max(_dt(f["new_first_active"], t["new_live_active"]), _dt(f["old_last_active"], t["old_live_lost"]))

    return _type_score(
        "failovers", "failover_events", truth["failovers"], rows, same, error, interval,
        lambda t: f"{t['event_type']} {t['from']} → {t['to']} at {t['new_live_active']}",
        lambda f: (f"{f['event_type']} {f['from_instance']} → {f['to_instance']}, old last active "
                   f"{_t(f['old_last_active']).isoformat()}, new first active {_t(f['new_first_active']).isoformat()}"
                   f"{' (overlap)' if f.get('overlap') else ''}"),
        bar_precision=not truth["split_brain"])  # a split brain's second live may also show as a hand-over


def score_split_brain(truth: dict, rows: list[dict], interval: float):
    def same(t, f):
        return (f["group_name"] == t["group"] and sorted([f["instance_a"], f["instance_b"]]) == t["instances"]
                and _overlaps(f["certain_start"], f["certain_end"], t["start"], t["end"], interval))

    def error(t, f):
        return max(_dt(f["certain_start"], t["start"]), _dt(f["certain_end"], t["end"]))

    return _type_score(
        "split_brain", "split_brain_windows", truth["split_brain"], rows, same, error, interval,
        lambda t: f"{'/'.join(t['instances'])} from {t['start']} to {t['end']}",
        lambda f: (f"{f['instance_a']}/{f['instance_b']} {f['certainty']} {_t(f['certain_start']).isoformat()} → "
                   f"{_t(f['certain_end']).isoformat()} ({f['duration_s']:.3f} s)"))


def _bounds_error(t: dict, f: dict) -> float:
    start = _dt(f["start_ts"], t["start"])
    if t.get("end") is None:
        return start
    return max(start, _dt(f["end_ts"], t["end"])) if not f.get("is_open") else float("inf")


def score_stuck(truth: dict, rows: list[dict], interval: float):
    """Recall and precision are the bar ("stuck findings match truth"); the boundary is reported: a
    run is idle from the first scrape whose whole preceding interval saw no delivery, so its start
    may lie up to two intervals after the consumers left."""

    def same(t, f):
        return ((f["instance"], f["destination"], f["code"]) == (t["instance"], t["destination"], t["code"])
                and _overlaps(f["start_ts"], f["end_ts"], t["start"], t["end"], interval))

    return _type_score(
        "stuck", "stuck_messages", truth["stuck"], rows, same, _bounds_error, interval,
        lambda t: f"{t['code']} {t['instance']} {t['destination']} {t['start']} → {t['end']}",
        lambda f: f"{f['code']} {f['instance']} {f['destination']} {_t(f['start_ts']).isoformat()} → {_t(f['end_ts']).isoformat()}",
        bar_boundary=False)


def in_scrape_gap(truth: dict, row: dict, interval: float) -> bool:
    """A `possible` finding inside a scrape gap of the truth: the analysis could not see, and said so."""
    return row.get("certainty") == "possible" and any(
        _t(g["start"]).timestamp() - interval <= _t(row["start_ts"]).timestamp()
        and _t(row["end_ts"]).timestamp() <= _t(g["end"]).timestamp() + interval
        for g in truth["scrape_gaps"])


LAG_IN_TIME_CODES = ("replication-lag",)


def score_lag(truth: dict, rows: list[dict], interval: float, in_time: bool = False):
    """Replication findings of the codes counted from broker metrics (`in_time` False: controllers,
    ISR, follower MaxLag; boundaries are part of the bar) or the lag-in-time ones (`in_time` True:
    `replication-lag`, an estimate derived from sampled throughput and lag; the boundary is reported,
    recall and precision are the bar). Rows marked `possible` that lie inside a scrape gap of the
    truth are hedges, not errors: they are listed in the notes and left out of precision."""
    rows = [r for r in rows if (r["code"] in LAG_IN_TIME_CODES) == in_time]
    expected = [t for t in truth["lag"] if (t["code"] in LAG_IN_TIME_CODES) == in_time]
    hedged = [r for r in rows if in_scrape_gap(truth, r, interval)]
    rows = [r for r in rows if r not in hedged]

    def same(t, f):
        return (f["code"] == t["code"] and f["group_name"] == t["group"]
                and (t.get("instance") is None or f["instance"] == t["instance"])
                and all(t.get(k) is None or f.get(k) == t[k] for k in ("topic", "partition"))
                and _overlaps(f["start_ts"], f["end_ts"], t["start"], t["end"], interval))

    describe = lambda f: (f"{f['code']} {f['group_name']} {f['instance'] or ''} {f.get('topic') or ''}"  # noqa: E731
                          f"{'' if f.get('partition') is None else '-' + str(f['partition'])} {f['certainty']} "
                          f"{_t(f['start_ts']).isoformat()} → {_t(f['end_ts']).isoformat()}{' (open)' if f['is_open'] else ''}")
    s, pairs = _type_score("lag_in_time" if in_time else "lag", "replication_findings", expected, rows, same,
                           _bounds_error, interval, lambda t: f"{t['code']} {t['group']} {t['start']} → {t['end']}",
                           describe, bar_boundary=not in_time)
    s.notes += [f"possible, inside a scrape gap (not counted): {describe(f)}" for f in hedged]
    return s, pairs


def score_gc(truth: dict, rows: list[dict], interval: float):
    expected = [p for p in truth["gc_pauses"] if p["over_threshold"]]
    rows = [r for r in rows if r["code"] in GC_SESSION_CODES]

    def same(t, f):
        return f["target"] == t["target"] and f["ts"] is not None and _dt(f["ts"], t["start"]) <= interval

    return _type_score(
        "gc", "gc_findings", expected, rows, same, lambda t, f: _dt(f["ts"], t["start"]), interval,
        lambda t: f"{t['target']} paused {t['ms']:.0f} ms at {t['start']}",
        lambda f: f"{f['code']} {f['target']} {f['value']:.0f} ms at {_t(f['ts']).isoformat() if f['ts'] else '?'}")


def score_causes(truth: dict, rows: list[dict], failover_pairs: list, interval: float):
    """Each GC pause that caused a failover must be joined onto that failover's event."""
    expected = []
    for p in truth["gc_pauses"]:
        if p.get("caused_failover") is None:
            continue
        fo = truth["failovers"][p["caused_failover"]]
        event = next((f for t, f, _ in failover_pairs if t is fo), None)
        expected.append({"pause": p, "event_id": event["event_id"] if event else None})

    def same(t, f):
        return (f["effect_table"] == "failover_events" and f["effect_id"] == t["event_id"]
                and f["cause_table"] == "gc_findings" and f["instance"] == t["pause"]["target"])

    ours = [r for r in rows if r["effect_table"] == "failover_events" and r["cause_table"] == "gc_findings"]
    return _type_score(
        "causes", "finding_causes", expected, ours, same, lambda t, f: _dt(f["cause_ts"], t["pause"]["start"]), interval,
        lambda t: f"GC pause of {t['pause']['target']} at {t['pause']['start']} → failover {t['event_id']}",
        lambda f: f"{f['cause_code']} on {f['instance']} → {f['effect_table']} {f['effect_id']} ({f['confidence']})")


def score_stale(truth: dict, rows: list[dict], interval: float, table: str, code: str):
    rows = [r for r in rows if r["code"] == code]

    def same(t, f):
        return f["instance"] == t["instance"] and _overlaps(f["start_ts"], f["end_ts"], t["start"], t["end"], interval)

    def error(t, f):
        return _dt(f["start_ts"], t["start"])

    return _type_score(
        "stale_backup", table, truth["stale_backups"], rows, same, error, interval,
        lambda t: f"{t['instance']} stale from {t['start']}",
        lambda f: f"{f['code']} {f['instance']} {_t(f['start_ts']).isoformat()} → {_t(f['end_ts']).isoformat()}")


# --- the whole scenario --------------------------------------------------------------------------------


def _ours(truth: dict, rows: list[dict]) -> list[dict]:
    """The rows about this scenario's groups or targets (several scenarios may share a lakehouse)."""
    groups, targets = set(truth["groups"]), set(truth["targets"])
    return [r for r in rows if r.get("group_name") in groups or r.get("target") in targets
            or r.get("instance") in targets]


def score(lh, truth: dict) -> Report:
    """Score the gold tables of lakehouse `lh` against `truth` (a scenario's truth.json)."""
    iv = float(truth["interval_s"])

    def _rows(lh, table: str) -> list[dict] | None:
        return _ours(truth, lh.read(table).to_pylist()) if lh.exists(table) else None

    scores: list[TypeScore] = []
    fo, pairs = score_failovers(truth, _rows(lh, "failover_events") or [], iv)
    sb, _ = score_split_brain(truth, _rows(lh, "split_brain_windows") or [], iv)
    scores += [fo, sb]
    if truth["stuck"] or _rows(lh, "stuck_messages"):
        scores.append(score_stuck(truth, _rows(lh, "stuck_messages") or [], iv)[0])
    findings = _rows(lh, "replication_findings") or []
    for in_time in (False, True):
        if any((t["code"] in LAG_IN_TIME_CODES) == in_time for t in truth["lag"]) or \
                any((r["code"] in LAG_IN_TIME_CODES) == in_time for r in findings):
            scores.append(score_lag(truth, findings, iv, in_time)[0])
    if truth["gc_pauses"]:
        scores.append(score_gc(truth, _rows(lh, "gc_findings") or [], iv)[0])
        causes = _rows(lh, "finding_causes")
        if causes is not None:
            scores.append(score_causes(truth, causes, pairs, iv)[0])
        else:
            fo.notes.append("finding_causes does not exist yet: GC → failover causes not scored")
    if truth["stale_backups"]:
        scores.append(score_stale(truth, _rows(lh, "zk_findings") or [], iv, "zk_findings", "zk.backup-stale")[0])
        risk = _rows(lh, "risk_findings")
        if risk is not None:
            scores.append(score_stale(truth, risk, iv, "risk_findings", "stale-backup")[0])
    return Report(truth["scenario"], truth["kind"], iv, scores)


def score_dir(directory: str | Path, spark=None, lakehouse: str | Path | None = None, progress=None) -> list[Report]:
    """Replay DIR/recording.jsonl.gz into a fresh lakehouse, analyze once, and score every scenario
    of DIR/truth.json (one, or a suite) against it."""
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    d = Path(directory)
    for name in (RECORDING, TRUTH, CONFIG):
        if not (d / name).exists():
            raise FileNotFoundError(f"{d / name} is missing: score a folder written by `brokerscope simulate SCENARIO --out {d}`")
    truth = json.loads((d / TRUTH).read_text())
    data = yaml.safe_load((d / CONFIG).read_text())
    tmp = None
    if lakehouse is None:
        tmp = tempfile.TemporaryDirectory(prefix="brokerscope-score-")
        lakehouse = Path(tmp.name) / "lakehouse"
    if Lakehouse(str(lakehouse)).exists("bronze_jolokia"):
        raise FileExistsError(f"{lakehouse} already holds a lakehouse; scoring needs a fresh one (give another --lakehouse)")
    data["lakehouse"] = str(lakehouse)
    cfg = config_from_dict(data, source=str(d / CONFIG))
    try:
        replay(cfg, d / RECORDING)
        counts = analyze(cfg, spark=spark, progress=progress)
        lh = Lakehouse(cfg.lakehouse_root())
        reports = [score(lh, t) for t in truth.get("suite", [truth])]
        for r in reports:
            r.counts = counts
        return reports
    finally:
        if tmp is not None:
            tmp.cleanup()
