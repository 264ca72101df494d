"""`timeline -o json` for machines: the numbers behind each sentence are fields, a split brain names
its two instances as a list (tiny gold tables written per contract; no JVM)."""

from __future__ import annotations

import json

from brokerscope.timeline import build_timeline, render_json
from tests.test_dashboard import tiny_lakehouse


def test_split_brain_entry_has_instances_bounds_and_messages_per_side(tmp_path):
    lh = tiny_lakehouse(tmp_path / "lh")
    entries = build_timeline(lh.read("role_intervals"), lh.read("failover_events"), lh.read("split_brain_windows"),
                             lh.read("broker_state"))
    doc = json.loads(render_json(entries, lh.read("incidents").to_pylist()))
    (sb,) = [e for e in doc["entries"] if e["what"] == "split-brain"]
    assert sb["instance"] is None and sb["instances"] == ["art-a", "art-b"]
    assert sb["messages_accepted"] == {"art-a": 100, "art-b": 60}
    assert (sb["certain_start"], sb["certain_end"]) == ("2026-11-23T11:00:06.009Z", "2026-11-23T11:00:11.004Z")
    assert sb["duration_s"] == 4.995 and sb["certainty"] == "certain" and sb["possible_end"] is None
    assert "messages accepted: art-a 100, art-b 60" in sb["text"]  # the same numbers as the sentence
    (inc,) = doc["incidents"]
    assert inc["incident_id"] == "inc-split-1" and inc["short_id"] == "inc-spli"
    assert inc["instances"] == ["art-a", "art-b"] and inc["start_ts"] == "2026-11-23T11:00:04.000Z"
    single = next(e for e in doc["entries"] if e["what"] == "active")
    assert single["instances"] == [single["instance"]]
