"""gold client_shifts (analysis/client_shifts.py) on small frames: the clients' move in a failover,
its bounds and quality — never more than the observations show. The real broker's counts are in
the replays of the artemis-clients drills (tests/test_artemis_drill_replays.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from analysis.client_shifts import HORIZON_S, STATE_COLUMNS, ShiftParams, client_shifts, window_rows
from tests.spark_fixtures import spark  # noqa: F401

T0 = datetime(2026, 11, 26, 6, 0, 0, tzinfo=timezone.utc)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def naive(t: datetime) -> pd.Timestamp:
    """How the contract frame carries a time: naive UTC."""
    return pd.Timestamp(t).tz_convert(None)


def obs(instance: str, s: float, active: bool | None, connections: int | None, reachable: bool = True) -> dict:
    return {"ts": at(s), "group_name": "g", "instance": instance, "reachable": reachable,
            "active": active if reachable else None, "connections": connections if reachable else None}


def event(old_last: float, new_first: float, kind: str = "artemis", event_type: str = "failover", frm: str = "a",
          to: str = "b", unobserved: bool = False, event_id: str = "e1") -> dict:
    return {"event_id": event_id, "kind": kind, "group_name": "g", "event_type": event_type, "from_instance": frm,
            "to_instance": to, "old_last_active": at(old_last), "new_first_active": at(new_first),
            "unobserved": unobserved}


def shifts(events: list[dict], state: list[dict], hole_s: float = 2.0) -> list[dict]:
    return client_shifts(pd.DataFrame(events), pd.DataFrame(state), ShiftParams(hole_s=hole_s)).to_dict("records")


def killed_primary(arrive_at: float, clients: int = 2, peers: int = 2) -> list[dict]:
    """a: live with clients + peers until the kill at 2.2 s, then refused; b: passive, active at
    3.0 s with no connection, the clients from `arrive_at` (scrapes every 0.5 s)."""
    rows = [obs("a", s, True, clients + peers) for s in (0.0, 0.5, 1.0, 1.5, 2.0)]
    rows += [obs("a", s, None, None, reachable=False) for s in (2.5, 3.0, 3.5, 4.0, 4.5, 5.0)]
    rows += [obs("b", s, False, 0) for s in (0.25, 0.75, 1.25, 1.75, 2.25, 2.75)]
    rows += [obs("b", s, True, clients if s >= arrive_at else 0) for s in (3.25, 3.75, 4.25, 4.75, 5.25)]
    return rows


def test_the_clients_arrive_on_the_backup_between_two_scrapes_and_the_share_is_stated():
    """Artemis counts the backup's own connections on the live (4 = 2 clients + 2), which vanish
    with it: the target is what came (2), stated as 50 %, bounded by the scrapes around it; a
    dead primary never showed it lost them, so there is no lower bound."""
    (s,) = shifts([event(2.0, 3.25)], killed_primary(arrive_at=3.75))
    assert (s["state"], s["quality"]) == ("arrived", "bounded")
    assert (s["connections_before"], s["connections_after"], s["target_connections"]) == (4, 2, 2)
    assert s["moved_fraction"] == pytest.approx(0.5)
    assert s["arrived_ts"] == naive(at(3.75)) and s["arrived_after"] == naive(at(3.25))
    assert s["shift_upper_s"] == pytest.approx(1.75) and pd.isna(s["shift_lower_s"])
    assert "50% of 4" in s["message"] and "waiting backup" in s["message"]


def test_an_old_live_seen_without_its_clients_gives_a_lower_bound():
    state = killed_primary(arrive_at=4.25)
    state = [r for r in state if not (r["instance"] == "a" and r["ts"] == at(2.5))] + [obs("a", 2.5, False, 0)]
    (s,) = shifts([event(2.0, 3.25)], state)
    assert s["old_without_ts"] == naive(at(2.5))
    assert s["shift_lower_s"] == pytest.approx(3.75 - 2.5) and s["shift_upper_s"] == pytest.approx(2.25)


def test_a_hole_around_the_arrival_is_said():
    state = [r for r in killed_primary(arrive_at=4.75) if not (r["instance"] == "b" and r["ts"] == at(4.25))]
    state = [r for r in state if not (r["instance"] == "b" and r["ts"] == at(3.75))]
    (s,) = shifts([event(2.0, 3.25)], state, hole_s=1.0)
    assert (s["state"], s["quality"]) == ("arrived", "across-hole")
    assert s["arrived_after"] == naive(at(3.25)) and s["arrived_ts"] == naive(at(4.75))


def test_none_arrived_and_nothing_to_move_are_told_apart():
    (none,) = shifts([event(2.0, 3.25)], killed_primary(arrive_at=99))
    assert (none["state"], none["connections_after"]) == ("none-arrived", 0) and pd.isna(none["arrived_ts"])
    (idle,) = shifts([event(2.0, 3.25)], killed_primary(arrive_at=99, clients=0, peers=0))
    assert idle["state"] == "no-clients"


def test_counts_never_reported_are_unknown_not_zero():
    state = [{**r, "connections": None} for r in killed_primary(arrive_at=3.75)]
    (s,) = shifts([event(2.0, 3.25)], state)
    assert (s["state"], s["quality"]) == ("unknown", "unknown") and pd.isna(s["connections_before"])


def test_the_old_instance_running_again_makes_the_count_ambiguous():
    """A restarted broker waiting as backup holds connections to the live: from when it answers
    again (here before the new live became active; an answer after it ends the look), the new live's
    count cannot be told from clients' — the numbers stay, the quality is unknown."""
    state = [r for r in killed_primary(arrive_at=3.75) if not (r["instance"] == "a" and r["ts"] == at(3.0))]
    (s,) = shifts([event(2.0, 3.25)], state + [obs("a", 3.0, False, 0)])
    assert (s["state"], s["quality"]) == ("arrived", "unknown") and "running again" in s["message"]


def test_the_look_ends_with_the_new_lives_role_and_after_the_horizon():
    state = killed_primary(arrive_at=3.75) + [obs("b", 5.75, True, 9), obs("a", 5.6, True, 9)]
    back = event(5.25, 5.6, event_type="failback", frm="b", to="a", event_id="e2")
    first = next(s for s in shifts([event(2.0, 3.25), back], state) if s["event_id"] == "e1")
    assert first["window_end"] == naive(at(5.25)) and first["connections_after"] == 2
    late = killed_primary(arrive_at=99) + [obs("b", 3.25 + HORIZON_S + 1, True, 2)]
    (s,) = shifts([event(2.0, 3.25)], late)
    assert s["state"] == "none-arrived"


def test_only_failovers_and_failbacks_of_broker_kinds_are_measured():
    state = killed_primary(arrive_at=3.75)
    assert shifts([event(2.0, 3.25, kind="kafka"), event(2.0, 3.25, event_type="restart", event_id="e3")], state) == []


def test_the_windows_rows_are_each_groups_own_however_many_events(spark, tmp_path):  # noqa: F811
    """The driver gets a group's rows inside that group's own windows only: not another group's
    rows that fall in them, and not the hull of all windows when there are more than 256 of them
    (the whole history of a fleet, collected to the driver, on every run)."""
    from lakehouse.spark import SparkLakehouse
    from lakehouse.store import Lakehouse
    from tests.test_lakehouse import make_rows

    rows = make_rows("broker_state", 2000, step_s=1)
    for i, r in enumerate(rows):
        r.update(group_name="g" if i % 2 else "h", ts=at(i), obs_date=at(i).strftime("%Y-%m-%d"))  # the partition of ts
    lh = Lakehouse(tmp_path / "lake")
    lh.append("broker_state", rows)
    spans = [("g", pd.Timestamp(at(s)), pd.Timestamp(at(s + 2))) for s in range(0, 1800, 6)]  # 300 windows
    spans.append(("g", pd.Timestamp(at(1)), pd.Timestamp(at(4))))  # overlaps the first: merged, no duplicate
    got = window_rows(SparkLakehouse(spark, lh), iter(spans))
    want = [(r["group_name"], r["ts"]) for r in rows
            if r["group_name"] == "g" and any(lo <= pd.Timestamp(r["ts"]) <= hi for _, lo, hi in spans)]
    assert sorted(zip(got["group_name"], pd.to_datetime(got["ts"], utc=True))) == sorted((g, pd.Timestamp(t)) for g, t in want)
    assert list(got.columns) == STATE_COLUMNS
    assert window_rows(SparkLakehouse(spark, lh), iter([])).empty


# --- incremental runs (run_client_shifts) ------------------------------------------------------------

MIDNIGHT = datetime(2026, 11, 26, 23, 58, 0, tzinfo=timezone.utc)  # the rows cross into the next obs_date


def state_rows(group: str, seconds: range, arrive: dict[str, float]) -> list[dict]:
    """broker_state rows of `group` (every second, a and b): a live until it is killed at 100 s (500 s
    for g2), b live from 3 s later, with 1 connection until 3 clients arrive at `arrive[group]` s."""
    from tests.test_lakehouse import make_rows

    kill = 100 if group == "g1" else 500
    rows = []
    for s in seconds:
        for inst in ("a", "b"):
            active = (s <= kill) if inst == "a" else (s >= kill + 3)
            n = 3 if active else 0
            if inst == "b" and active:
                n = 3 if s >= arrive[group] else 1
            (r,) = make_rows("broker_state", 1, start=s * 2 + (inst == "b"))
            ts = MIDNIGHT + timedelta(seconds=s)
            dead = inst == "a" and s > kill  # killed: no answer again (an answer would end the look)
            rows.append({**r, "obs_key": f"{group}/{inst}/{s}", "ts": ts, "obs_date": ts.strftime("%Y-%m-%d"),
                         "kind": "artemis", "group_name": group, "instance": inst, "reachable": not dead,
                         "active": None if dead else active, "connections": None if dead else n})
    return rows


def failover_rows(groups: list[str]) -> list[dict]:
    from tests.test_lakehouse import make_rows

    out = []
    for g in groups:
        kill = 100 if g == "g1" else 500
        (r,) = make_rows("failover_events", 1)
        out.append({**r, "event_id": f"{g}/e", "kind": "artemis", "group_name": g, "event_type": "failover",
                    "from_instance": "a", "to_instance": "b", "old_last_active": MIDNIGHT + timedelta(seconds=kill),
                    "new_first_active": MIDNIGHT + timedelta(seconds=kill + 3), "unobserved": False})
    return out


def test_incremental_runs_equal_a_full_run_after_every_append(spark, tmp_path):  # noqa: F811
    """Appends into a window (g1's spans the first append boundary: its clients arrive after it),
    appends after every window (nothing recomputed), a new failover (its group only), and a
    rewritten broker_state (a full run): after each, the table equals a full run's on the same inputs."""
    from analysis.client_shifts import run_client_shifts
    from lakehouse.spark import SparkLakehouse
    from lakehouse.store import Lakehouse
    from tests.test_incremental import snapshot

    inc, full = Lakehouse(tmp_path / "inc"), Lakehouse(tmp_path / "full")
    arrive = {"g1": 180, "g2": 510}
    said: list[str] = []

    def step(events: list[str] | None, seconds: range | None, rewrite: bool = False) -> list[str]:
        for lh in (inc, full):
            if events is not None:
                lh.overwrite("failover_events", failover_rows(events))
            if rewrite:
                lh.overwrite("broker_state", [r for g in ("g1", "g2") for r in state_rows(g, range(0, 520), arrive)])
            if seconds is not None:
                lh.append("broker_state", [r for g in ("g1", "g2") for r in state_rows(g, seconds, arrive)])
        said.clear()
        run_client_shifts(SparkLakehouse(spark, inc), ShiftParams(hole_s=2.0), said.append)
        run_client_shifts(SparkLakehouse(spark, full), ShiftParams(hole_s=2.0), full=True)
        assert snapshot(inc, ("client_shifts",)) == snapshot(full, ("client_shifts",))
        return said[1:]

    assert step(["g1"], range(0, 150)) == ["gold client_shifts (full)"]  # nothing stored yet
    (first,) = inc.read("client_shifts").to_pylist()
    assert first["connections_after"] == 1  # the clients come after the rows so far
    assert step(None, range(150, 300)) == ["gold client_shifts (incremental: 1 group(s) recomputed)"]
    (moved,) = inc.read("client_shifts").to_pylist()
    assert moved["state"] == "arrived" and moved["connections_after"] == 3
    assert step(None, range(300, 400)) == ["gold client_shifts (incremental: no window has new rows)"]
    assert step(["g1", "g2"], range(400, 520)) == ["gold client_shifts (incremental: 1 group(s) recomputed)"]
    assert {r["group_name"]: r["state"] for r in inc.read("client_shifts").to_pylist()} == {"g1": "arrived", "g2": "arrived"}
    arrive["g1"] = 200  # broker_state rewritten (a --full silver with better parsing): what it saw is gone
    assert step(None, None, rewrite=True) == ["gold client_shifts: broker_state was rewritten, recomputing",
                                              "gold client_shifts (full)"]
    assert step(None, range(700, 720)) == ["gold client_shifts (incremental: no window has new rows)"]  # what it saw: recorded
