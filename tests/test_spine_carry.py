"""The spine's carry (analysis/spine_carry.py), without Spark: for random observation sequences —
restarts with and without a missed scrape between, unknown uptimes, unanswered and lost
observations (holes) — continuing from the carry of any prefix gives exactly the intervals and
the carry of one scan over everything, at every cut."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.frames import key_starts
from analysis.intervals import interval_bounds
from analysis.spine_onepass import PART_CARRY, PART_INTERVAL, PART_LATE, PART_RESUME, increment_from_sorted
from analysis.spine_carry import CARRY_INPUT, OFFSETS, carry_rows
from lakehouse.tables import ROLE_INTERVALS, SPINE_CARRY

HOLE_US = 2_500_000


def observations(steps: list[tuple[int, int, bool, bool]], instance: str = "a") -> pa.Table:
    """Rows of one instance: per step (state: 1 active, 0 inactive, -1 unanswered; seconds since the
    previous row; restarted: a new JVM from here on; uptime known)."""
    ts, jvm, rows = 0, 0, []
    for state, gap, restarted, known in steps:
        ts += gap * 1_000_000
        jvm += 5_000 if restarted else 0
        rows.append((ts, state, None if state == -1 or not known else ts // 1000 - jvm))
    return pa.table({
        "group_name": ["g"] * len(rows), "instance": [instance] * len(rows), "kind": ["activemq"] * len(rows),
        "ts": pa.array([r[0] for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "active": pa.array([None if r[1] == -1 else r[1] == 1 for r in rows], pa.bool_()),
        "uptime_ms": pa.array([r[2] for r in rows], pa.int64()),
    })


def scan(t: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Intervals and carry of one scan over `t` (one key, sorted)."""
    starts = key_starts(t, ["group_name", "instance"])
    iv, at = interval_bounds(t, starts, HOLE_US)
    return iv, carry_rows(t, starts, iv, at, HOLE_US)


def continued(stored: pa.Table, new: pa.Table) -> tuple[pa.Table, pa.Table]:
    """What an incremental run makes of `new` rows after `stored` ones: the stored intervals before
    the resume point, the intervals recomputed from the carry and the new rows, and the new carry
    (analysis/spine_increment.py does this with Spark)."""
    stored_iv, carry = scan(stored)
    spine = increment(carry, new)
    part = spine.column("_part").to_numpy()
    resume = spine.filter(pa.array(part == PART_RESUME)).column("ts").cast(pa.int64()).to_pylist()
    assert len(resume) == 1
    recomputed = spine.filter(pa.array(part == PART_INTERVAL)).select(ROLE_INTERVALS.column_names).cast(ROLE_INTERVALS.schema)
    kept = stored_iv.filter(pa.array(stored_iv.column("start_ts").cast(pa.int64()).to_numpy() < resume[0]))
    return (pa.concat_tables([kept, recomputed]),
            spine.filter(pa.array(part == PART_CARRY)).select(SPINE_CARRY.column_names).cast(SPINE_CARRY.schema))


def increment(carry: pa.Table, new: pa.Table) -> pa.Table:
    """increment_from_sorted over carried rows and new ones (one key: the carried ones first)."""
    schema = pa.schema([SPINE_CARRY.schema.field(c) for c in CARRY_INPUT])
    for name in OFFSETS:
        new = new.append_column(name, pa.nulls(new.num_rows, pa.int64()))
    rows = pa.concat_tables([carry.select(list(CARRY_INPUT)).cast(schema), new.select(list(CARRY_INPUT)).cast(schema)])
    rows = rows.append_column("_new", pa.array([False] * carry.num_rows + [True] * new.num_rows))
    return increment_from_sorted(rows, key_starts(rows, ["group_name", "instance"]), HOLE_US)


# (state, gap s, restarted, uptime known): mostly active scrapes a second apart, with every kind of event
step = st.tuples(st.sampled_from([1, 1, 1, 0, -1]), st.sampled_from([1, 1, 1, 2, 4, 30]),
                 st.sampled_from([False] * 6 + [True]), st.sampled_from([True] * 5 + [False]))


@settings(max_examples=300, deadline=None)
@given(st.lists(step, min_size=2, max_size=40), st.data())
def test_continuing_from_the_carry_equals_one_scan(steps, data):
    t = observations(steps)
    whole_iv, whole_carry = scan(t)
    cut = data.draw(st.integers(1, t.num_rows - 1))
    iv, carry = continued(t.slice(0, cut), t.slice(cut))
    assert iv.to_pylist() == whole_iv.to_pylist()
    assert carry.to_pylist() == whole_carry.to_pylist()


def test_a_restart_between_two_scrapes_is_seen_again():
    """The live restarts between two answered scrapes (no missed scrape): the carried observation
    before the new interval keeps telling the scan a new JVM began there."""
    steps = [(1, 1, False, True)] * 5 + [(1, 1, True, True)] + [(1, 1, False, True)] * 4
    t = observations(steps)
    whole_iv, whole_carry = scan(t)
    assert [r["end_upper_state"] for r in whole_iv.to_pylist()] == ["restarted", None]
    for cut in range(1, t.num_rows):
        assert continued(t.slice(0, cut), t.slice(cut))[0].to_pylist() == whole_iv.to_pylist(), cut
    carried = whole_carry.to_pylist()
    assert carried[0]["active"] and carried[0]["uptime_ms"] != t.column("uptime_ms")[5 - 1].as_py()  # adjusted


@pytest.mark.parametrize("state", [0, -1])
def test_the_carry_stays_small(state):
    """A long-lived interval is carried by a handful of rows whatever its length; an instance whose
    last observation is not active by its last one."""
    t = observations([(1, 1, False, True)] * 5_000 + [(state, 1, False, True)] * 3)
    _iv, carry = scan(t)
    if state == 0:
        assert carry.num_rows == 1
    else:  # the observation before the interval (none), its first, its last, the unanswered after it
        assert carry.num_rows == 2 + 3
        first = carry.to_pylist()[0]
        assert first["observations_offset"] == 5_000 - 2 and first["unanswered_offset"] == 0
        assert [carry.column(c).null_count for c in OFFSETS] == [carry.num_rows - 1] * 3


def test_a_new_row_not_later_than_a_carried_one_asks_for_a_full_run():
    t = observations([(1, 1, False, True)] * 6)
    _iv, carry = scan(t.slice(0, 4))
    spine = increment(carry, t.slice(3, 1))  # the 4th observation again
    assert spine.column("_part").to_pylist() == [PART_LATE]
    assert spine.column("instance").to_pylist() == ["a"]
