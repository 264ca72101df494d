"""Incremental runs of the risk job (analysis/risk.py, comment "incremental runs"): broker_state
appended part by part, the spine's gold and risk_findings brought up to date after each part, give
the same risk_findings (and risk_carry) row for row as one full run over all the rows — an
unprotected live open across appends, a stale backup, a failover in new rows, a group without new
rows, a group that gains an instance, the vote-quorum rules over all groups; late rows fall back to
a full run."""

from __future__ import annotations

from datetime import timezone

from analysis.risk import RiskParams, risk_mark, run_risk
from analysis.spine import run_gold
from analysis.watermark import read_watermark
from lakehouse.spark import SparkLakehouse
from lakehouse.store import Lakehouse
from tests.test_incremental import snapshot
from tests.test_risk import at, obs

PARAMS = RiskParams(unprotected_grace_s=60, stale_backup_grace_s=60, scrape_interval_s=5,
                    ha={"q-a": {"shutdown_on_master_failure": False, "shutdown_on_slave_failure": False}})
TABLES = ("risk_findings", "risk_carry")
END = 700


def scenario() -> list[dict]:
    """Rows of every group over [0, END) s, one scrape per instance every 5 s."""
    rows = []
    for s in range(0, END, 5):
        # g-amq: amq-b stops answering 100-395 (amq-a unprotected, open across the cuts at 200 and 300);
        # amq-a dies at 500, amq-b takes over at 515, amq-a back as slave at 560; amq-a gone again from 620
        a_up = not (500 <= s < 560 or s >= 620)
        rows.append(obs("amq-a", s, s < 500, "master" if s < 500 else "slave", a_up, group="g-amq",
                        error=None if a_up else "connection refused"))
        b_up = not 100 <= s < 400
        rows.append(obs("amq-b", s + 1, s >= 515, "master" if s >= 515 else "slave", b_up, group="g-amq",
                        error=None if b_up else "connection refused"))
        # g-left: left-b master until it leaves (no rows from 100 on), left-a slave, master from 560 on: unprotected,
        # with left-b not seen (read with no row of left-b: the group's instances come from risk_carry)
        if s < 100:
            rows.append(obs("left-b", s + 4, True, "master", group="g-left"))
        rows.append(obs("left-a", s + 3, s >= 560, "master" if s >= 560 else "slave", group="g-left"))
        if s < 150:  # g-quiet: a lone master, no rows after the first part
            rows.append(obs("q-a", s + 2, True, "master", group="g-quiet"))
        # g-grow: a lone master, its slave appears at 400 (a new instance in a known group)
        rows.append(obs("grow-a", s + 3, True, "master", group="g-grow"))
        if s >= 400:
            rows.append(obs("grow-b", s + 4, False, "slave", group="g-grow"))
        # art1/art2: two vote-quorum pairs (too few); art1's backup behind its live's sequence 150-345;
        # art2 without a live 250-395 (its live passive) while only art1 had one: a lost pair
        rows.append(obs("art1-a", s, True, "live", kind="artemis", group="art1", seq=2) | {"ha_policy": "Replicated"})
        rows.append(obs("art1-b", s + 1, False, "backup", kind="artemis", group="art1", seq=1 if 150 <= s < 350 else 2)
                    | {"ha_policy": "Replica"})
        a2_live = not 250 <= s < 400
        rows.append(obs("art2-a", s + 2, a2_live, "live" if a2_live else "backup", kind="artemis", group="art2", seq=3)
                    | {"ha_policy": "Replicated"})
        rows.append(obs("art2-b", s + 3, False, "backup", kind="artemis", group="art2", seq=3) | {"ha_policy": "Replica"})
    return rows


def silver(rows: list[dict]) -> list[dict]:
    return [r | {"ts": r["ts"].tz_localize(timezone.utc), "obs_date": r["ts"].strftime("%Y-%m-%d"),
                 "obs_key": f"{r['instance']}@{r['ts'].isoformat()}"} for r in rows]


def analyse(slh: SparkLakehouse, said: list[str], full: bool = False) -> None:
    run_gold(slh, said.append, full=full)
    run_risk(slh, PARAMS, said.append, full=full)


def full_run(rows: list[dict], root, spark) -> Lakehouse:
    lh = Lakehouse(root)
    lh.append("broker_state", silver(rows))
    analyse(SparkLakehouse(spark, lh), [], full=True)
    return lh


def test_risk_part_by_part_equals_one_full_run(tmp_path, spark):
    rows = scenario()
    lh = Lakehouse(tmp_path / "inc")
    slh = SparkLakehouse(spark, lh)
    said: list[str] = []
    for lo, hi in ((0, 200), (200, 300), (300, 520), (520, END)):
        lh.append("broker_state", silver([r for r in rows if at(lo) <= r["ts"] < at(hi)]))
        analyse(slh, said)
    assert sum("gold risk_findings (incremental" in m for m in said) == 3, " | ".join(m for m in said if "risk" in m)
    got = snapshot(lh, TABLES)
    want = snapshot(full_run(rows, tmp_path / "full", spark), TABLES)
    assert got == want
    codes = {(r["group_name"], r["code"]) for r in got["risk_findings"]}
    assert {("g-amq", "unprotected-live"), ("g-quiet", "unprotected-live"), ("g-quiet", "shutdown-on-failure-off"),
            ("g-grow", "unprotected-live"), ("g-left", "unprotected-live"), ("art1", "stale-backup"), ("art1", "quorum-too-small"),
            ("art2", "quorum-lost-pair"), ("g-amq", "failover-duration")} <= codes, codes
    # the open unprotected live crossing two appends is one finding, with its bounds
    (amq,) = [r for r in got["risk_findings"] if r["code"] == "unprotected-live" and r["instance"] == "amq-a"]
    assert amq["start_ts"].replace(tzinfo=None) == at(105) and amq["end_ts"].replace(tzinfo=None) == at(400)
    (left,) = [r for r in got["risk_findings"] if r["group_name"] == "g-left" and r["code"] == "unprotected-live"]
    assert left["certainty"] == "possible" and left["detail"] == "left-b was not seen"

    # nothing new: the runner's mark equals the stored one (analysis/runner.py skips the job)
    assert read_watermark(lh, "risk", TABLES) == risk_mark(slh, PARAMS)


def test_rows_older_than_stored_ones_fall_back_to_a_full_run(tmp_path, spark):
    rows = [r for r in scenario() if r["ts"] < at(300)]
    late = [r for r in rows if r["instance"] == "art2-b" and at(200) <= r["ts"] < at(240)]
    lh = Lakehouse(tmp_path / "inc")
    slh = SparkLakehouse(spark, lh)
    said: list[str] = []
    lh.append("broker_state", silver([r for r in rows if r not in late]))
    analyse(slh, said)
    lh.append("broker_state", silver(late))
    said.clear()
    analyse(slh, said)
    assert any("rows not later than stored ones (art2" in m for m in said) and "gold risk_findings (full)" in said, said
    assert snapshot(lh, ("risk_findings",)) == snapshot(full_run(rows, tmp_path / "full", spark), ("risk_findings",))
