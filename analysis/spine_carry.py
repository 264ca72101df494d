"""What the spine's interval scan carries from one run to the next (state table spine_carry).

An instance's role intervals depend on all its observations since its last inactive one: for a
healthy live broker, since the beginning of time. To continue over new observations exactly as a
full run would, without reading that history again, a run keeps per (group, instance) the few
stored rows that decide everything after them:

* its last observation (where the next rows continue: the bound of an interval they start, the
  hole before them);
* while its last run of active observations is still open (no inactive observation since), that
  run's last interval L — every earlier interval is final: it ended on an inactive observation or
  a restart — represented by the observation before L, L's first active observation, the one that
  fixes its JVM start (the reference a restart is measured from), L's last active observation and
  every (unanswered) observation after it.

The rows left out between L's first and last observation change nothing but L's counts
(observations, unanswered scrapes, µs of holes): those are kept as offsets on the row that starts
L — its true counts minus what the carried rows alone give — and added back when a later run
finds L again (analysis/intervals.py carried_counts). Integers, so equal to a full run's to the
bit. One adjustment: an active observation right before L (L began with a restart) gets an uptime
that places its JVM start far before L's, so the scan sees that restart again."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analysis.frames import contract_table, key_starts, last_position, micros, next_position, state_codes
from analysis.intervals import RESTART_TOLERANCE_MS, ROLE_INPUT, interval_bounds
from lakehouse.tables import SPINE_CARRY

OFFSETS = ("observations_offset", "unanswered_offset", "unobserved_offset_us")
CARRY_INPUT = (*ROLE_INPUT, *OFFSETS)


def carry_rows(t: pa.Table, starts_key: np.ndarray, iv: pa.Table, at: dict, hole_us: float = math.inf) -> pa.Table:
    """SPINE_CARRY rows of the keys in `t` (ROLE_INPUT columns, whole keys sorted by group_name,
    instance, ts; `starts_key`: where keys start), from its intervals `iv` and bounds `at`
    (interval_bounds over `t`, counts already true)."""
    n = t.num_rows
    if not n:
        return SPINE_CARRY.schema.empty_table()
    key_first = np.flatnonzero(starts_key)
    key_last = np.append(key_first[1:], n) - 1
    row_key = np.cumsum(starts_key) - 1
    state = state_codes(t.column("active"))
    last_inactive = last_position(state == 0)[key_last]  # below the key's first row: none

    open_iv = p0 = p1 = ref = np.zeros(0, dtype=np.int64)  # the intervals carried: each key's last, if its run is open
    if iv.num_rows:
        k = at["key"]
        last_iv = np.flatnonzero(np.append(k[1:] != k[:-1], True))
        open_iv = last_iv[at["p0"][last_iv] > last_inactive[k[last_iv]]]
        p0, p1 = at["p0"][open_iv], at["p1"][open_iv]
        ref = next_position((state == 1) & ~np.isnan(at["jvm_start"]))[p0]  # the first known JVM start in L
    has_prev = p0 > key_first[row_key[p0]]

    keep = np.zeros(n, dtype=bool)
    keep[key_last] = True
    keep[p0], keep[p1] = True, True
    keep[(p0 - 1)[has_prev]] = True
    keep[ref[ref <= p1]] = True
    after = np.zeros(n + 1, dtype=np.int64)  # the observations after L: a difference array over rows
    np.add.at(after, p1 + 1, 1)
    np.add.at(after, key_last[row_key[p1]] + 1, -1)
    keep |= np.cumsum(after[:n]) > 0
    rows = np.flatnonzero(keep)

    ts, _ = micros(t.column("ts"))
    uptime = pc.cast(t.column("uptime_ms"), pa.int64())
    prev = (p0 - 1)[has_prev & (state[np.maximum(p0 - 1, 0)] == 1)]  # L began with a restart
    if len(prev):
        at_p0 = p0[has_prev & (state[np.maximum(p0 - 1, 0)] == 1)]
        values = uptime.fill_null(0).to_numpy(zero_copy_only=False).copy()
        values[prev] = ts[prev] // 1000 - (ts[at_p0] // 1000 - values[at_p0] - 10 * RESTART_TOLERANCE_MS)
        null = uptime.is_null().to_numpy(zero_copy_only=False).copy()
        null[prev] = False
        uptime = pa.array(values, pa.int64(), mask=null)
    columns = {
        "group_name": pc.cast(t.column("group_name").take(rows), pa.string()),
        "instance": pc.cast(t.column("instance").take(rows), pa.string()),
        "kind": pc.cast(t.column("kind").take(key_first[row_key[rows]]), pa.string()),
        "ts": t.column("ts").take(rows),
        "active": t.column("active").take(rows),
        "uptime_ms": uptime.take(rows),
    }
    carried = {name: pa.nulls(len(rows), pa.int64()) for name in OFFSETS}
    if len(open_iv):
        carried = offsets(columns, rows, p0, iv.take(open_iv), at["unobserved_us"][open_iv], hole_us)
    return contract_table({**columns, **carried}, SPINE_CARRY)


def offsets(columns: dict, rows: np.ndarray, p0: np.ndarray, true: pa.Table, true_unobserved_us: np.ndarray,
            hole_us: float) -> dict[str, pa.Array]:
    """The offset columns: on the row starting each carried interval, its `true` counts minus those
    the carried rows alone give; null elsewhere."""
    seed = pa.table({name: columns[name] for name in ROLE_INPUT})
    seed_iv, seed_at = interval_bounds(seed, key_starts(seed, ["group_name", "instance"]), hole_us)
    at_row = np.searchsorted(rows, p0)  # where each carried interval starts among the carried rows
    which = np.searchsorted(seed_at["p0"], at_row)
    assert np.array_equal(seed_at["p0"][which], at_row), "the carried rows lost an interval's start"

    def difference(name: str) -> np.ndarray:
        return true.column(name).to_numpy() - seed_iv.column(name).to_numpy()[which]

    out = {}
    for name, value in (("observations_offset", difference("observations")),
                        ("unanswered_offset", difference("unanswered_inside")),
                        ("unobserved_offset_us", true_unobserved_us - seed_at["unobserved_us"][which])):
        column = np.zeros(len(rows), dtype=np.int64)
        column[at_row] = value
        mask = np.ones(len(rows), dtype=bool)
        mask[at_row] = False
        out[name] = pa.array(column, pa.int64(), mask=mask)
    return out
