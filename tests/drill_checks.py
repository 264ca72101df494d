"""Scoring a reconstruction against a drill's ground truth (shared by the replay and live tests)."""

from __future__ import annotations


def check_kill_master(failovers: list[dict], intervals: list[dict], split_brain: list[dict], truth: dict) -> dict:
    interval = truth["scrape_interval_s"]
    slack = 0.1  # scheduling jitter of the scrape loop
    ev = [e for e in failovers if e["event_type"] == "failover"]
    assert len(ev) == 1, failovers
    e = ev[0]
    assert (e["from_instance"], e["to_instance"]) == (truth["master_before"], truth["new_master"])
    last_active = e["old_last_active"].timestamp()
    first_active = e["new_first_active"].timestamp()
    takeover = truth.get("takeover_log_ts") or truth["takeover_seen_ts"]
    # the reconstruction brackets the truth within one scrape on each side
    assert 0 <= truth["kill_ts"] - last_active <= interval + slack
    assert e["old_first_unanswered"].timestamp() >= truth["kill_ts"]
    assert -slack <= first_active - takeover <= interval + slack
    assert e["outage_upper_s"] >= takeover - truth["kill_ts"]
    assert e["outage_upper_s"] <= (takeover - truth["kill_ts"]) + 2 * interval + 2 * slack
    assert not e["overlap"]
    assert split_brain == []  # a clean failover never produces a split-brain finding
    # the old master came back, not as master
    old = [i for i in intervals if i["instance"] == truth["master_before"]]
    assert len(old) == 1 and not old[0]["is_open"]
    assert old[0]["first_inactive_after"].timestamp() >= truth["restart_ts"]
    new = [i for i in intervals if i["instance"] == truth["new_master"]]
    assert len(new) == 1 and new[0]["is_open"]
    return {"kill_to_last_active_s": truth["kill_ts"] - last_active, "takeover_to_first_active_s": first_active - takeover}
