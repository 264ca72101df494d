"""The GC pause and Destinations views' pure parts on tiny silver tables written per contract:
selection by group and time, bucketing (the longest pause and the deepest moment are never lost,
points are capped), the figures (every name escaped) and the pages and their callbacks. The same
views in Chromium are in tests/test_dashboard_browser.py."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import numpy as np
import pytest

from dashboards import data as D
from dashboards import series as S
from dashboards.app import route
from dashboards.figures import destination_figure, esc, gc_pause_figure
from lakehouse.store import Lakehouse
from tests.test_dashboard import XSS, _strings, at, client, find, texts, tiny_lakehouse

WORST = 9876.5  # the one long pause among thousands of short ones


def gc_event(target: str, seq: int, ts, pause_ms, **more) -> dict:
    return dict(target=target, file_id=f"f-{target}", origin="import", event_seq=seq, wall_time=ts, collector="g1",
                event_type=more.pop("event_type", "young"), pause_ms=pause_ms, heap_after_kb=more.pop("heap", 204800),
                cause=more.pop("cause", "G1 Evacuation Pause"), phase=more.pop("phase", "Pause Young (Normal)"), **more)


def with_gc_events(lh: Lakehouse, n: int = 3000) -> Lakehouse:
    """art-a: n pauses 0.1 s apart (one of them WORST); art-b: 3; zk-1 (in gc_findings only): 2;
    rows without a pause or a wall time, which are never drawn."""
    rnd = random.Random(7)
    rows = [gc_event("art-a", i, at(0.1 * i), WORST if i == 1234 else rnd.uniform(1, 50)) for i in range(n)]
    rows += [gc_event("art-b", i, at(4 * i), 10.0 * (i + 1)) for i in range(3)]
    rows += [gc_event("zk-1", i, at(3 * i), 5.0) for i in range(2)]
    rows += [gc_event("art-b", 10, at(1), None, event_type="concurrent-mark"), gc_event("art-b", 11, None, 99.0)]
    lh.overwrite("gc_events", rows)
    found = lh.read("gc_findings").to_pylist()
    lh.overwrite("gc_findings", found + [dict(found[0], finding_id="gc-zk", target="zk-1", group_name="zk")])
    return lh


@pytest.fixture
def gold(tmp_path):
    return D.Gold(with_gc_events(tiny_lakehouse(tmp_path / "lh")), fresh_s=0)


# --- GC pauses ---------------------------------------------------------------------------------------


def test_thinning_keeps_the_longest_pause_of_each_bucket_and_caps_the_points(gold):
    p = S.gc_pauses(gold, None, None, None, max_points=100)
    a = p.series["art-a"]
    assert len(a["ts"]) <= 100 and p.bucket_s == pytest.approx(3.0, rel=0.01) and p.pauses == 3000 + 3 + 2
    assert WORST in a["pause_ms"].tolist()  # the worst pause survives 30:1 downsampling
    every = D.rows(gold.read("gc_events", filter="target = 'art-a'"))
    width_us = int(p.bucket_s * 1e6)
    lo = min(r["wall_time"] for r in every)
    longest: dict[int, float] = {}
    for r in every:
        b = (r["wall_time"] - lo) // timedelta(microseconds=width_us)
        longest[b] = max(longest.get(b, 0.0), r["pause_ms"])
    assert sorted(a["pause_ms"].tolist()) == sorted(longest.values())  # exactly the longest of each bucket
    assert list(a["ts"]) == sorted(a["ts"])  # in time order
    assert a["heap_mib"][0] == 200.0 and a["event_type"][0] == "young"
    b = p.series["art-b"]
    assert b["pause_ms"].tolist() == [10.0, 20.0, 30.0]  # no null pause, no pause without a wall time
    everything = S.gc_pauses(gold, None, None, None, max_points=5000)
    assert everything.bucket_s == 0 and len(everything.series["art-a"]["ts"]) == 3000


def test_the_group_and_time_filters_pick_the_groups_jvms(gold):
    # art-a/art-b are in group pair by broker_state (instance = target); zk-1 only by gc_findings;
    # a broker without GC events gives its group no JVM
    state = gold.lh.read("broker_state").to_pylist()
    gold.lh.overwrite("broker_state", state + [dict(state[0], obs_key="q-0", instance="quiet", group_name="silent")])
    assert S.gc_groups(gold) == ["pair", "zk"]
    assert "No JVM of group silent is known" in S.gc_pauses(gold, "silent", None, None, 100).note
    assert set(S.gc_pauses(gold, "pair", None, None, 100).series) == {"art-a", "art-b"}
    assert set(S.gc_pauses(gold, "zk", None, None, 100).series) == {"zk-1"}
    assert "No JVM of group nope" in S.gc_pauses(gold, "nope", None, None, 100).note
    p = S.gc_pauses(gold, "pair", at(3), at(4.05), 100)
    assert p.bucket_s == 0 and p.series["art-b"]["pause_ms"].tolist() == [20.0]
    assert len(p.series["art-a"]["ts"]) == 11  # 3.0 … 4.0 s
    assert "No stop-the-world pause" in S.gc_pauses(gold, None, at(999), None, 100).note


def test_gc_figure_marks_pauses_per_jvm_and_escapes_names(gold):
    rows = gold.lh.read("gc_events").to_pylist()
    for r in rows[:5]:
        r.update(target=XSS, cause=XSS, phase=f"<b>{XSS}</b>")
    gold.lh.overwrite("gc_events", rows)
    p = S.gc_pauses(gold, None, None, None, 100)
    fig = gc_pause_figure(p)
    names = [t.name for t in fig.data]
    assert {"art-a pause", "art-a heap after GC", esc(XSS) + " pause"} <= set(names)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.title.text == "heap after GC (MiB)"
    a = next(t for t in fig.data if t.name == "art-a pause")
    assert max(a.y) == WORST and max(a.marker.size) > min(a.marker.size)  # the long pause is the big marker
    assert "young" in a.hovertext[0] and "G1 Evacuation Pause" in a.hovertext[0]
    assert "the longest of each 3 s per JVM is drawn" in fig.layout.annotations[0].text
    strings = list(_strings(json.loads(fig.to_json())))
    assert not [s for s in strings if "<img" in s or "<b>" in s]
    assert any(esc(XSS) in s for s in strings)
    assert not gc_pause_figure(S.gc_pauses(gold, None, None, None, 5000)).layout.annotations


def test_the_gc_page_draws_the_figure_above_the_findings_and_filters_it(gold):
    page = route(gold, "/gc")
    fig = find(page, "gc-figure").figure
    assert {t.name for t in fig.data} >= {"art-a pause", "art-b pause", "zk-1 pause"}
    assert "art-a paused 7.0 s" in texts(find(page, "findings"))
    assert [o["value"] for o in find(page, "f-group").options] == ["pair", "zk"]
    c = client(gold)
    body = {"output": "findings-content.children", "outputs": {"id": "findings-content", "property": "children"},
            "inputs": [{"id": "f-group", "property": "value", "value": "zk"},
                       {"id": "f-since", "property": "value", "value": ""},
                       {"id": "f-until", "property": "value", "value": ""}],
            "state": [{"id": "url", "property": "pathname", "value": "/gc"}], "changedPropIds": ["f-group.value"]}
    got = json.dumps(c.post("/_dash-update-component", json=body).get_json())
    assert '"zk-1 pause"' in got and '"art-a pause"' not in got


def test_without_gc_events_the_gc_page_says_why_there_is_no_figure(tmp_path):
    page = route(D.Gold(tiny_lakehouse(tmp_path / "lh")), "/gc")
    assert find(page, "gc-figure") is None
    assert "gc_events is not in the lakehouse" in texts(find(page, "gc-figure-note"))
    assert "art-a paused 7.0 s" in texts(find(page, "findings"))  # the findings still show


# --- destinations ------------------------------------------------------------------------------------


def destination_row(group: str, instance: str, name: str, ts, messages, consumers, kind: str = "queue") -> dict:
    return dict(obs_key=f"{instance}-{ts.isoformat()}", ts=ts, obs_date=ts.date().isoformat(), kind="artemis",
                group_name=group, instance=instance, destination=name, logical_destination=name,
                destination_type=kind, messages=messages, consumers=consumers)


def with_destinations(lh: Lakehouse, n: int = 600) -> Lakehouse:
    """Group pair: 10 queues on art-a, queue qK holding up to 10·K messages, one observation a
    second; the XSS queue (deepest) loses its consumer for one second at 300 s. Group other: one
    queue two hours earlier."""
    rows = []
    for i in range(n):
        for k in range(10):
            rows.append(destination_row("pair", "art-a", f"q{k}", at(i), k * (i % 11), 1))
        rows.append(destination_row("pair", "art-a", XSS, at(i), 1000 + (5000 if i == 123 else i), 0 if i == 300 else 2))
    rows.append(destination_row("other", "x-1", "old", at(-7200), 5, 1))
    lh.overwrite("destination_stats", rows)
    return lh


@pytest.fixture
def dgold(tmp_path):
    return D.Gold(with_destinations(tiny_lakehouse(tmp_path / "lh")), fresh_s=0)


def key(name: str, instance: str = "art-a") -> str:
    return S.SEP.join([instance, "queue", name])


def test_the_deepest_destinations_of_the_last_hour_by_default(dgold):
    assert S.destination_groups(dgold) == ["other", "pair"]
    d = S.destination_series(dgold, "pair", None, None, max_points=1000)
    assert (d.start, d.end) == (at(0), at(599))  # the hour up to the newest observation, from the first in it
    assert d.chosen == [key(XSS)] + [key(f"q{k}") for k in range(9, 2, -1)]  # the top 8 by largest depth
    assert [r[0] for r in d.ranked][-3:] == [key("q2"), key("q1"), key("q0")] and d.ranked[0][2] == 6000
    s = d.series[key(XSS)]
    assert d.bucket_s == 0 and len(s["ts"]) == 600 and s["label"] == f"{XSS} (queue) on art-a"
    picked = S.destination_series(dgold, "pair", None, None, 1000, chosen=[key("q0"), "gone"])
    assert picked.chosen == [key("q0")] and list(picked.series) == [key("q0")]
    assert list(S.destination_series(dgold, "other", None, None, 1000).series) == [key("old", "x-1")]
    assert key("old", "x-1") not in [r[0] for r in S.destination_series(dgold, None, None, None, 1000).ranked]
    assert S.destination_series(dgold, "pair", at(700), at(800), 1000).note.endswith("in this time range.")


def test_bucketing_keeps_the_deepest_moment_and_the_lost_consumer(dgold):
    d = S.destination_series(dgold, "pair", at(0), at(599), max_points=50)
    s = d.series[key(XSS)]
    assert len(s["ts"]) <= 50 and d.bucket_s == pytest.approx(12.0) and d.rows == 8 * 600
    assert s["messages"].max() == 6000 and 0 in s["consumers"].tolist()  # neither is averaged away
    assert np.all(np.diff(s["ts"].astype("int64")) > 0)


def test_destination_figure_stacks_depth_over_consumers_and_escapes_names(dgold):
    fig = destination_figure(S.destination_series(dgold, "pair", at(0), at(599), 50))
    assert [a.text for a in fig.layout.annotations][:2] == ["messages on the destination", "consumers"]
    assert fig.layout.xaxis2.matches == "x" or fig.layout.xaxis.matches == "x2"  # one time axis
    top = [t for t in fig.data if t.yaxis == "y"]
    assert len(top) == 8 and top[0].name == esc(f"{XSS} (queue) on art-a")
    assert "the most messages and the fewest consumers" in fig.layout.annotations[-1].text
    strings = list(_strings(json.loads(fig.to_json())))
    assert not [s for s in strings if "<img" in s] and any(esc(XSS) in s for s in strings)


def callback3(c, inputs: dict, changed: str) -> dict:
    """POST the Destinations callback (three outputs) as the browser does."""
    outs = [("destinations-content", "children"), ("d-destinations", "options"), ("d-destinations", "value")]
    body = {"output": "..destinations-content.children...d-destinations.options...d-destinations.value..",
            "outputs": [{"id": i, "property": p} for i, p in outs],
            "inputs": [{"id": k.split(".")[0], "property": k.split(".")[1], "value": v} for k, v in inputs.items()],
            "changedPropIds": [changed]}
    r = c.post("/_dash-update-component", json=body)
    assert r.status_code == 200, r.get_data(as_text=True)[:500]
    return r.get_json()["response"]


def test_the_destinations_page_picks_and_says_what_is_missing(dgold, tmp_path):
    page = route(dgold, "/destinations")
    fig = find(page, "destinations-figure").figure
    assert len([t for t in fig.data if t.yaxis == "y"]) == 8  # all groups, the hour up to the newest observation
    assert find(page, "d-destinations").options[0]["label"] == f"{XSS} (queue) on art-a (max 6000)"  # text
    c = client(dgold)
    inputs = {"d-group.value": "pair", "d-since.value": "2026-11-23T11:00:00Z", "d-until.value": "",
              "d-destinations.value": [key("q0")]}
    got = callback3(c, inputs, "d-group.value")  # a new group: the deepest again
    assert got["d-destinations"]["value"][0] == key(XSS) and len(got["d-destinations"]["value"]) == 8
    got = callback3(c, inputs, "d-destinations.value")  # the picker: what was picked
    assert got["d-destinations"]["value"] == [key("q0")]
    assert [t["name"] for t in got["destinations-content"]["children"]["props"]["children"]["props"]["figure"]["data"]
            if t.get("showlegend") is not False] == ["q0 (queue) on art-a"]
    got = callback3(c, {**inputs, "d-since.value": "soonish"}, "d-since.value")
    assert "time filter:" in json.dumps(got["destinations-content"])
    missing = route(D.Gold(tiny_lakehouse(tmp_path / "bare")), "/destinations")
    assert texts(find(missing, "missing-command")) == "brokerscope analyze -c CFG" and "destination_stats" in texts(missing)
