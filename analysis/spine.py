"""The spine job: bronze_jolokia → silver broker_state/destination_stats → gold role_intervals,
failover_events, split_brain_windows, ha_group_checks.

`run_spine` only reads, calls and writes: silver (analysis/silver.py), then gold — in one pass over
broker_state (analysis/spine_onepass.py), or incrementally from the job's watermark and its carried
state (analysis/spine_increment.py). Both give the same rows; reruns over the same data change
nothing."""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.failovers import failover_events
from analysis.frames import cached
from analysis.groups import ha_group_checks, identity_sightings, nonexclusive_kinds
from analysis.intervals import ROLE_INPUT
from analysis.silver import code_sources, run_silver
from analysis.spine_increment import gold_increment
from analysis.spine_onepass import gold_spine, spine_carry, spine_intervals, spine_windows
from analysis.watermark import Watermark, appended_since, fingerprint, pinned_read
from lakehouse.tables import SILVER_FROM_JOLOKIA

# Two jobs, each with its own watermark (analysis/watermark.py): silver reads bronze_jolokia, gold reads
# broker_state. An incremental run needs only appends to its input since the watermark; whatever it
# could not do exactly (rows older than stored ones, a group derived for rows already stored, anything
# but appends) falls back to the full recompute, which is always right.

GOLD_JOB = "spine-gold"
GOLD_TABLES = ("role_intervals", "failover_events", "split_brain_windows", "ha_group_checks")
# the gold job's outputs: its gold tables and the state it carries to its next run
GOLD_OUTPUTS = (*GOLD_TABLES, "spine_carry", "ha_identity_sightings")
# what the gold steps read of broker_state (no partition column: the bridge need not attach it)
GOLD_INPUT = [*ROLE_INPUT, "reachable", "total_enqueued", "store", "node_id"]


def run_gold(slh, say, full: bool = False, hole_us: float = math.inf) -> None:
    """broker_state → role_intervals, failover_events, split_brain_windows, ha_group_checks.
    `hole_us`: the hole tolerance (frames.hole_before)."""
    fp = fingerprint(GOLD_JOB, nonexclusive_kinds(), repr(hole_us), sources=code_sources())
    appended = None if full else appended_since(slh, GOLD_JOB, GOLD_OUTPUTS, "broker_state", fp, GOLD_INPUT)
    if appended is not None and gold_increment(slh, appended, Watermark(GOLD_JOB, appended.version, fp), say, hole_us):
        return
    state, version = pinned_read(slh, "broker_state", GOLD_INPUT)
    mark = Watermark(GOLD_JOB, version, fp).commit_info()
    say("silver → gold role_intervals (full)")
    with cached(gold_spine(state, hole_us=hole_us)) as spine:  # one pass, while role_intervals is written; the next steps reuse it
        intervals = spine_intervals(spine)
        slh.write("role_intervals", intervals, commit_info=mark)
        say("gold failover_events, split_brain_windows, ha_group_checks")
        slh.write("failover_events", failover_events(intervals), commit_info=mark)
        slh.write("split_brain_windows", spine_windows(spine), commit_info=mark)
        slh.write("spine_carry", spine_carry(spine), commit_info=mark)
    sightings = identity_sightings(state).toArrow()  # a few rows per instance
    slh.write_arrow("ha_identity_sightings", sightings, commit_info=mark)
    slh.write_arrow("ha_group_checks", ha_group_checks(sightings), commit_info=mark)


@dataclass(frozen=True)
class SpineParams:
    """The spine's parameters (analysis/params.py): each target's (kind, configured group), the
    clock skew at which observations move onto the broker's clock (math.inf: never; see
    analysis/silver.py run_silver), and the hole tolerance in µs (frames.hole_before)."""

    targets: dict[str, tuple[str, str | None]]
    skew_threshold: float = math.inf
    hole_us: float = math.inf


def run_spine(slh, params: SpineParams, progress=None, full: bool = False) -> dict[str, int]:
    """bronze → silver → gold; incremental from the jobs' watermarks unless `full`. Returns the
    rows each output table holds afterwards (what a rerun over the same data gives again)."""
    say = progress or (lambda msg: None)
    run_silver(slh, params.targets, say, full=full, skew_threshold=params.skew_threshold)
    run_gold(slh, say, full=full, hole_us=params.hole_us)
    return {t: slh.lakehouse.count(t) for t in (*SILVER_FROM_JOLOKIA, *GOLD_TABLES)}
