"""Each broker's observed state over time, as runs for the incident timeline: active, standby,
starting, unreachable — and unknown where no observation came for longer than the hole tolerance.

A run spans its first to its last observation in that state: the moment a state changed lies
somewhere between two observations and is left blank, never guessed. Pure (pyarrow/numpy in,
dicts out), vectorized: a million observations stay cheap. `minute_runs` draws the same runs from
gold broker_minutes for long views; a minute in which the state changed is one MIXED run there.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakehouse.tables import OBSERVED_STATES, STANDBY_ROLES, STARTING_ROLES

STATES = OBSERVED_STATES  # codes 0..4, drawn in this order


def observation_states(state: pa.Table) -> np.ndarray:
    """The STATES code of each broker_state row (columns reachable, active, role)."""
    reachable = pc.fill_null(state.column("reachable"), False).to_numpy(zero_copy_only=False)
    active = pc.fill_null(state.column("active"), False).to_numpy(zero_copy_only=False)
    role = pc.utf8_lower(pc.fill_null(state.column("role"), ""))
    standby = pc.is_in(role, pa.array(STANDBY_ROLES)).to_numpy(zero_copy_only=False)
    starting = pc.is_in(role, pa.array(STARTING_ROLES)).to_numpy(zero_copy_only=False)
    code = np.full(state.num_rows, STATES.index("unknown"), dtype=np.int8)
    code[reachable & starting] = STATES.index("starting")
    code[reachable & standby] = STATES.index("standby")
    code[reachable & active] = STATES.index("active")
    code[~reachable] = STATES.index("unreachable")
    return code


def state_runs(state: pa.Table, hole_s: float) -> list[dict]:
    """Runs {instance, state, start, end, observations} from broker_state rows (ts, instance,
    reachable, active, role), per instance in time order. A gap of more than `hole_s` between two
    observations is an `unknown` run of its own (nothing was observed there)."""
    if state.num_rows == 0:
        return []
    state = state.sort_by([("instance", "ascending"), ("ts", "ascending")])
    ts = state.column("ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    inst = pc.dictionary_encode(state.column("instance").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    names = state.column("instance").to_pylist()
    code = observation_states(state)
    runs = []
    for s, e, gap in run_ranges(inst, ts, ts, code, hole_s):
        if gap:
            runs.append(_run(names[s], "unknown", ts[s - 1], ts[s], 0))
        runs.append(_run(names[s], STATES[code[s]], ts[s], ts[e], e - s + 1))
    return runs


def run_ranges(inst: np.ndarray, first_us: np.ndarray, last_us: np.ndarray, code: np.ndarray,
               hole_s: float) -> list[tuple[int, int, bool]]:
    """(first row, last row, a hole before it) of each run over rows sorted by instance and time:
    a new instance, another code, or more than hole_s from the previous row's last time to the
    row's first time starts one."""
    new_instance = np.r_[True, inst[1:] != inst[:-1]]
    gap = np.r_[False, (first_us[1:] - last_us[:-1]) > int(hole_s * 1e6)] & ~new_instance
    starts = np.flatnonzero(new_instance | gap | np.r_[True, code[1:] != code[:-1]])
    ends = np.r_[starts[1:] - 1, len(code) - 1]
    return [(s, e, bool(gap[s])) for s, e in zip(starts.tolist(), ends.tolist())]


def _run(instance: str, state: str, start_us: int, end_us: int, observations: int) -> dict:
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return {"instance": instance, "state": state, "start": epoch + timedelta(microseconds=int(start_us)),
            "end": epoch + timedelta(microseconds=int(end_us)), "observations": observations}


MIXED = "mixed"  # runs from broker_minutes: minutes in which the state changed (or a hole opened)


def minute_runs(minutes: pa.Table, hole_s: float) -> list[dict]:
    """Runs as `state_runs` draws them, from broker_minutes rows (instance, minute, first_ts,
    last_ts, max_gap_s, first_state, state_changes, observations, <state>_obs): consecutive minutes
    of one state make one run from its first to its last observation, a gap of more than `hole_s`
    between two minutes is an `unknown` run. A minute in which the state changed, or with a gap of
    more than `hole_s` inside, cannot say when: it is a MIXED run over its observations (with
    consecutive ones), its observations per state in `states`, never split at a guessed moment."""
    if minutes.num_rows == 0:
        return []
    m = minutes.sort_by([("instance", "ascending"), ("minute", "ascending")])
    first = m.column("first_ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    last = m.column("last_ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    inst = pc.dictionary_encode(m.column("instance").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    names = m.column("instance").to_pylist()
    plain = (pc.equal(m.column("state_changes"), 0).to_numpy(zero_copy_only=False)
             & (pc.less_equal(m.column("max_gap_s"), hole_s).to_numpy(zero_copy_only=False)))
    state = np.array([STATES.index(s) if s in STATES else STATES.index("unknown") for s in m.column("first_state").to_pylist()],
                     dtype=np.int8)
    code = np.where(plain, state, len(STATES))  # len(STATES): MIXED
    obs = m.column("observations").to_numpy()
    per_state = {s: m.column(f"{s}_obs").to_numpy() for s in STATES}
    runs = []
    for s, e, gap in run_ranges(inst, first, last, code, hole_s):
        if gap:
            runs.append(_run(names[s], "unknown", last[s - 1], first[s], 0))
        mixed = code[s] == len(STATES)
        run = _run(names[s], MIXED if mixed else STATES[code[s]], first[s], last[e], int(obs[s:e + 1].sum()))
        if mixed:
            run["states"] = {k: int(v[s:e + 1].sum()) for k, v in per_state.items() if v[s:e + 1].sum()}
        runs.append(run)
    return runs
