"""The robustness property, on every real recording in the repository: replayed with per-answer
time jitter (up to a third of the interval) and a hole longer than the hole tolerance in one target
(in a stretch where nothing happened), and replayed with 5 % of rows dropped, the findings — failovers,
split-brain windows, ZooKeeper elections and quorum losses, replication findings — stay within one
scrape interval of the undisturbed result, and certainty only goes down (certain → possible), never
up; with duplicated rows, bronze is row for row the same.

The disturbed recordings are analysed up to the detections (`analyze(gold_on_gold=False)`): risk
states, causes and incidents only read them, and are tested on the undisturbed recordings
elsewhere. The undisturbed findings come from the full analysis that the recording's replay tests
read too (tests/recordings.py `Analyses`): the same detections, as those jobs write none of them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from analysis.runner import analyze
from collectors.replay import replay
from lakehouse.store import Lakehouse
from lakehouse.tables import TABLES
from settings import Config, LagSettings, config_from_dict
from tests import perturb, recordings

pytestmark = pytest.mark.slow
FIX = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Recording:
    name: str
    stem: Path  # tests/fixtures/…/<stem>.jsonl.gz, .yaml
    hole_target: str  # the target a hole takes
    hole_from_s: float = 1.0  # where to look for a quiet stretch for it, in seconds after the start
    # default: longer than the config's hole tolerance by two intervals, in the first quiet stretch
    # (quiet_stretch); given: that long, exactly at hole_from_s
    hole_length_s: float | None = None

    @property
    def path(self) -> Path:
        return self.stem.with_name(self.stem.name + ".jsonl.gz")

    def config(self, where: Path) -> Config:
        data = yaml.safe_load(self.stem.with_name(self.stem.name + ".yaml").read_text())
        data["lakehouse"] = str(where / "lh")
        return config_from_dict(data)

    @property
    def interval(self) -> float:
        return self.config(Path("/nonexistent")).scrape_interval

    @property
    def hole_s(self) -> float:
        """Longer than the config's hole tolerance by two intervals: a hole, not a late answer."""
        cfg = self.config(Path("/nonexistent"))
        return self.hole_length_s or cfg.hole_tolerance() + 2 * cfg.scrape_interval


# Every real recording in the repository (the drills' own: tests/fixtures/**/drill*.jsonl.gz; a
# test below checks none is missing). The hole goes into a target that is live for most of the
# recording, where a hole could fake a failover or a certain split brain.
A, K = FIX / "artemis", FIX / "kafka"
RECORDINGS = [
    # 9 s long with the failover at 2.5-4.0 s and amq-a back at 6 s: no quiet stretch; 3 s (under its
    # 3.5-s tolerance: missed scrapes) over the slave until just before it takes over
    Recording("activemq-kill-master", FIX / "drill_kill_master", "amq-b", 1.0, hole_length_s=3.0),
    Recording("zookeeper-drill", FIX / "zookeeper/drill", "zk1", 2.0),
    Recording("artemis-shared-store-kill", A / "drill_shared_store_kill", "art-b"),
    Recording("artemis-replication-zk-kill", A / "drill_replication_zk_kill", "art-b", 10.5),
    Recording("artemis-replication-zk-pause", A / "drill_replication_zk_pause", "art-b"),
    Recording("artemis-replication-zk-pause-core-clients", A / "drill_replication_zk_pause_core_clients", "art-b"),
    Recording("artemis-replication-zk-quorum-loss", A / "drill_replication_zk_quorum_loss", "art-a"),
    Recording("artemis-replication-zk-restart", A / "drill_replication_zk_restart", "art-b"),
    Recording("artemis-replication-zk-link-cut", A / "drill_replication_zk_link_cut", "art-a"),
    Recording("artemis-replication-link-cut", A / "drill_replication_link_cut", "art-a"),
    Recording("artemis-replication-restart-split-brain", A / "drill_replication_restart_split_brain", "art-b"),
    # 13 s long, the failover at 3.2 s and the failback at 11.1 s: no quiet stretch; a hole longer than
    # the 3.5-s tolerance in the backup while it serves, ending 2 s before the failback
    Recording("artemis-replication-classic-failback", A / "drill_replication_classic_failback", "art-b", 4.5,
              hole_length_s=4.5),
    # six brokers, 11 s with the kill at 3.4 s and the takeover at 9.1 s: no quiet stretch; a hole longer
    # than the 3.5-s tolerance in a primary of another pair, live all along, across the kill
    Recording("artemis-replication-classic-3pairs-kill", A / "drill_replication_classic_3pairs_kill", "art-c", 1.0,
              hole_length_s=4.5),
    Recording("artemis-shared-store-clients", A / "drill_shared_store_clients", "art-a"),
    Recording("artemis-shared-store-core-clients", A / "drill_shared_store_core_clients", "art-a"),
    Recording("artemis-replication-zk-stale-backup", A / "drill_replication_zk_stale_backup", "art-a"),
    Recording("artemis-replication-zk-gc-pause", A / "drill_replication_zk_gc_pause", "art-a"),
    Recording("kafka-broker-kill", K / "drill_broker_kill", "p1"),
    Recording("kafka-controller-kill", K / "drill_controller_kill", "p2"),
    Recording("kafka-mm2-restart", K / "drill_mm2_restart", "d1"),
    Recording("kafka-mm2-slow-link", K / "drill_mm2_slow_link", "d1"),
    Recording("kafka-consumer-failover", K / "drill_consumer_failover", "orders-dr"),
    Recording("kafka-consumer-rewind", K / "drill_consumer_rewind", "orders-dr"),
]


def findings(lh: Lakehouse) -> dict[str, list[dict]]:
    def rows(table: str) -> list[dict]:
        return lh.read(table).to_pylist() if lh.exists(table) else []

    return {
        "failovers": sorted(rows("failover_events"), key=lambda r: r["new_first_active"]),
        "windows": sorted(rows("split_brain_windows"), key=lambda r: r["certain_start"]),
        "elections": sorted(rows("zk_elections"), key=lambda r: r["new_first_seen"]),
        "lost": sorted((r for r in rows("zk_quorum") if r["status"] == "lost"), key=lambda r: r["start_ts"]),
        "replication": sorted(rows("replication_findings"), key=lambda r: (*_what(r), r["start_ts"])),
    }


def _what(finding: dict) -> tuple:
    """What a replication finding is about, whatever its times."""
    return tuple(str(finding[c]) for c in ("group_name", "code", "instance", "flow", "topic", "partition", "client"))


def analysed(rec: Recording, envelopes: list[dict], where: Path, spark) -> dict[str, list[dict]]:
    """The recording replayed and analysed up to the detections (the gold-on-gold jobs only read them)."""
    cfg = rec.config(where)
    replay(cfg, perturb.write(envelopes, where / "rec.jsonl.gz"))
    analyze(cfg, spark=spark, gold_on_gold=False)
    return findings(Lakehouse(cfg.lakehouse_root()))


def bronze(envelopes: list[dict], rec: Recording, where: Path) -> dict[str, list[dict]]:
    """Every bronze table after replaying `envelopes`, rows in the order of the table's keys."""
    where.mkdir(parents=True)
    cfg = rec.config(where)
    replay(cfg, perturb.write(envelopes, where / "rec.jsonl.gz"))
    lh = Lakehouse(cfg.lakehouse_root())
    return {name: sorted(lh.read(name).to_pylist(), key=lambda r, keys=c.keys: tuple(str(r.get(k)) for k in keys))
            for name, c in TABLES.items() if c.layer == "bronze" and lh.exists(name)}


class Undisturbed(dict):
    """Each recording's undisturbed findings, from its shared analysis (analysed the first time a
    test of the worker asks for it: see `by_recording`)."""

    def __init__(self, analyses: recordings.Analyses):
        super().__init__()
        self._analyses = analyses

    def __missing__(self, name: str) -> dict[str, list[dict]]:
        rec = next(r for r in RECORDINGS if r.name == name)
        self[name] = findings(self._analyses(rec.path).lh)
        return self[name]


@pytest.fixture(scope="module")
def undisturbed(analysed_recordings):
    return Undisturbed(analysed_recordings)


def by_recording(rec: Recording) -> str:
    """The xdist group of a recording's tests: they share its undisturbed analysis with each other
    and with the recording's replay tests."""
    return recordings.group(rec.path)


def close(a: datetime, b: datetime, tolerance: float) -> bool:
    return abs((a - b).total_seconds()) <= tolerance


def assert_within_one_interval(base: dict, got: dict, interval: float, what: str,
                               spacing: "RowSpacing | None" = None, lost: "LostRows | None" = None) -> None:
    """Every finding where it was, within one scrape period; with `spacing` (dropped rows), a
    failover's boundary within the gap to its row's neighbour when that is longer: a scrape that
    waited out its timeout delays the target's next one (measured: 0.78 s after a frozen broker
    woke, at a 0.5 s interval), and a dropped row moves the boundary to that neighbour. With `lost`
    (the dropped rows), a Burrow status finding (`consumer-*`: a window of N observations) may start
    one scrape later per observation of its instance lost inside its window, and end one later per
    one lost just after it (the window fills, or shows the change, that many observations later)."""
    tol = interval + 0.05  # one scrape period, and the phase sweep's few ms

    def tol_at(instance: str, ts: datetime) -> float:
        return max(tol, spacing.gap(instance, ts) + 0.05) if spacing else tol

    assert [(f["group_name"], f["from_instance"], f["to_instance"], f["event_type"]) for f in got["failovers"]] == \
        [(f["group_name"], f["from_instance"], f["to_instance"], f["event_type"]) for f in base["failovers"]], what
    for b, g in zip(base["failovers"], got["failovers"]):
        assert close(b["old_last_active"], g["old_last_active"], tol_at(b["from_instance"], b["old_last_active"])), what
        assert close(b["new_first_active"], g["new_first_active"], tol_at(b["to_instance"], b["new_first_active"])), what
    assert [(e["old_leader"], e["new_leader"], e["new_epoch"]) for e in got["elections"]] == \
        [(e["old_leader"], e["new_leader"], e["new_epoch"]) for e in base["elections"]], what
    for b, g in zip(base["elections"], got["elections"]):
        assert close(b["new_first_seen"], g["new_first_seen"], tol), what
    assert len(got["lost"]) == len(base["lost"]), what
    for b, g in zip(base["lost"], got["lost"]):
        assert close(b["start_ts"], g["start_ts"], tol) and close(b["end_ts"], g["end_ts"], tol), what
    assert [_what(f) for f in got["replication"]] == [_what(f) for f in base["replication"]], what
    for b, g in zip(base["replication"], got["replication"]):
        late_start = late_end = 0.0
        if lost is not None and b["code"].startswith("consumer-"):
            window = LagSettings().window * interval
            late_start = interval * lost.between(b["instance"], b["start_ts"] - timedelta(seconds=window + tol), b["start_ts"])
            late_end = interval * lost.between(b["instance"], b["end_ts"], b["end_ts"] + timedelta(seconds=3 * interval))
        assert close(b["start_ts"], g["start_ts"], tol + late_start) and close(b["end_ts"], g["end_ts"], tol + late_end), \
            f"{what}: {g} (undisturbed {b['start_ts']} … {b['end_ts']})"
        assert g["certainty"] == "possible" or b["certainty"] == "certain", f"{what}: certainty invented: {g}"
    assert_certainty_only_goes_down(base, got, tol, what)


class RowSpacing:
    """Each target's observation times in a recording: how far apart a row and its neighbours are."""

    def __init__(self, envelopes: list[dict]) -> None:
        self.times: dict[str, list[datetime]] = {}
        for e in envelopes:
            self.times.setdefault(e["target"], []).append(perturb.ts(e))
        for times in self.times.values():
            times.sort()

    def gap(self, target: str, ts: datetime) -> float:
        """The longer gap from the target's row nearest `ts` to the rows before and after it (0: unknown)."""
        times = self.times.get(target) or []
        if not times:
            return 0.0
        ts = _utc(ts)
        i = min(range(len(times)), key=lambda k: abs((times[k] - ts).total_seconds()))
        around = [times[k] for k in (i - 1, i + 1) if 0 <= k < len(times)]
        return max((abs((t - times[i]).total_seconds()) for t in around), default=0.0)


class LostRows:
    """The times of the lag flows' observations a perturbation removed, per target: Jolokia scrapes
    and the Kafka-protocol log offsets (flow mirror-offsets; one per round: a round is several rows
    of one stamp)."""

    OBSERVATIONS = ("jolokia", "kafka.log_offsets")

    def __init__(self, envelopes: list[dict], kept: list[dict]) -> None:
        def key(e: dict) -> tuple:
            return e["target"], perturb.ts(e), json.dumps(e.get("request"), sort_keys=True)

        left = {key(e) for e in kept}
        self.times: dict[str, set[datetime]] = {}
        for e in envelopes:
            if e.get("source", "jolokia") in self.OBSERVATIONS and key(e) not in left:
                self.times.setdefault(e["target"], set()).add(perturb.ts(e))

    def between(self, target: str, start: datetime, end: datetime) -> int:
        return sum(1 for t in self.times.get(target, ()) if _utc(start) <= t <= _utc(end))


def assert_certainty_only_goes_down(base: dict, got: dict, tol: float, what: str) -> None:
    """Every window found is one of the undisturbed windows (within one interval), and a certain one
    only where the undisturbed result was certain too."""
    for g in got["windows"]:
        match = [b for b in base["windows"] if (b["instance_a"], b["instance_b"]) == (g["instance_a"], g["instance_b"])
                 and close(b["certain_start"], g["certain_start"], tol)]
        assert match, f"{what}: a split-brain window the undisturbed recording does not have: {g}"
        assert g["certainty"] == "possible" or match[0]["certainty"] == "certain", what


def start_of(rec: Recording) -> datetime:
    return min(perturb.ts(e) for e in perturb.read(rec.path))


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def quiet_stretch(rec: Recording, envelopes: list[dict], base: dict[str, list[dict]]) -> datetime:
    """Where the hole goes: the first stretch of `hole_s`, from `hole_from_s` on, with no time of any
    undisturbed finding within two intervals of it, and rows of the target after it."""
    times = [_utc(v) for rows in base.values() for row in rows for v in row.values() if isinstance(v, datetime)]
    last = max(perturb.ts(e) for e in envelopes if e["target"] == rec.hole_target)
    margin, length = timedelta(seconds=2 * rec.interval), timedelta(seconds=rec.hole_s)
    t0 = start_of(rec) + timedelta(seconds=rec.hole_from_s)
    while t0 + length + margin < last:
        if not any(t0 - margin <= t <= t0 + length + margin for t in times):
            return t0
        t0 += timedelta(seconds=rec.interval)
    pytest.fail(f"{rec.name}: no quiet stretch of {rec.hole_s:.1f} s in {rec.hole_target}")


def hole_start(rec: Recording, envelopes: list[dict], base: dict[str, list[dict]]) -> datetime:
    if rec.hole_length_s is not None:
        return start_of(rec) + timedelta(seconds=rec.hole_from_s)
    return quiet_stretch(rec, envelopes, base)


@pytest.mark.parametrize("rec", [pytest.param(r, id=r.name, marks=pytest.mark.xdist_group(by_recording(r)))
                                 for r in RECORDINGS])
@pytest.mark.parametrize("how", ["jitter-and-hole", "drop"])
def test_findings_survive_a_disturbed_recording(rec, how, undisturbed, tmp_path, spark):
    """Two analyses per recording. The jitter (≤ interval/3) and the hole (two intervals away from any
    undisturbed finding) go into one: neither can move a finding further than its own bound, and
    they never meet at one. Drops go alone: a dropped answer at a boundary already moves it by the
    whole tolerance (one interval), so jitter on top could exceed it."""
    envelopes = perturb.read(rec.path)
    base = undisturbed[rec.name]
    if how == "drop":
        disturbed = perturb.drop(envelopes, 0.05, seed=7)
    else:
        jittered = perturb.jitter(envelopes, rec.interval, seed=7)
        disturbed = perturb.hole(jittered, rec.hole_target, hole_start(rec, envelopes, base), rec.hole_s)
        assert len(disturbed) < len(jittered), f"{rec.name}: the hole took no row"
    assert disturbed != envelopes
    dropped = how == "drop"
    assert_within_one_interval(base, analysed(rec, disturbed, tmp_path, spark), rec.interval, f"{rec.name}/{how}",
                               spacing=RowSpacing(envelopes) if dropped else None,
                               lost=LostRows(envelopes, disturbed) if dropped else None)


@pytest.mark.parametrize("rec", [pytest.param(r, id=r.name) for r in RECORDINGS])
def test_duplicated_rows_change_nothing(rec, tmp_path):
    """Replay is idempotent: with a fifth of the rows twice, bronze is row for row the same, so
    everything computed from it is too."""
    envelopes = perturb.read(rec.path)
    twice = perturb.duplicate(envelopes, 0.2, seed=7)
    assert len(twice) > len(envelopes)
    assert bronze(twice, rec, tmp_path / "twice") == bronze(envelopes, rec, tmp_path / "once")


def test_every_real_recording_is_disturbed():
    drills = {p for p in FIX.rglob("drill*.jsonl.gz")}
    assert drills == {r.path for r in RECORDINGS}


@pytest.mark.xdist_group(by_recording(RECORDINGS[0]))
def test_a_hole_over_the_failover_is_said_and_its_bounds_hold_the_truth(undisturbed, tmp_path, spark):
    """The hole right over the hand-over: the failover is still found, flagged `unobserved`, and its
    bounds still contain the undisturbed one."""
    rec = RECORDINGS[0]
    (base,) = undisturbed[rec.name]["failovers"]
    start = base["old_last_active"].replace(tzinfo=timezone.utc) - timedelta(seconds=1.2)
    envelopes = perturb.hole(perturb.hole(perturb.read(rec.path), "amq-a", start, 4.0), "amq-b", start, 4.0)
    (got,) = analysed(rec, envelopes, tmp_path, spark)["failovers"]
    assert got["unobserved"] and not base["unobserved"]
    assert got["old_last_active"] <= base["old_last_active"] and got["new_first_active"] >= base["new_first_active"]
