"""Scoring a reconstruction against a drill's ground truth (shared by the replay and live tests).

The scoring itself lives with the drills (brokerscope.drills.*.score); these helpers turn a
scorecard into test assertions."""

from __future__ import annotations

from brokerscope.drills.common import Scorecard
from brokerscope.drills.kill_master import score_tables


def assert_passed(card: Scorecard) -> Scorecard:
    assert card.passed, card.render()
    return card


def check_kill_master(failovers: list[dict], intervals: list[dict], split_brain: list[dict], truth: dict) -> dict:
    card = assert_passed(score_tables(failovers, intervals, split_brain, truth))
    return {"kill_to_last_active_s": -card.boundaries["old master last active (vs kill)"],
            "takeover_to_first_active_s": card.boundaries["new master first active (vs takeover)"]}
