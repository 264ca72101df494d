"""The failover-readiness view (/readiness) on a tiny failover_readiness table written per contract:
per consumer group the latest round — re-read / skip if it failed over now, checkpoint age, the
partitions — worst first, filtered by group and "as of", escaped, and the page that says how to
fill the table. No browser."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from dashboards import data as D
from dashboards.app import route
from dashboards.readiness import latest_readiness
from lakehouse.store import Lakehouse
from tests.test_dashboard import XSS, callback, client, find, texts, tiny_lakehouse

T0 = datetime(2026, 11, 23, 11, 0, tzinfo=timezone.utc)


def row(s: float, group: str, partition: int, status: str, committed, translated, re_read, skipped, age=None,
        cluster="kafka-primary") -> dict:
    ts = T0 + timedelta(seconds=s)
    return dict(ts=ts, obs_date=ts.date().isoformat(), replication="orders-dr", group_name=cluster, source_cluster="primary",
                target_cluster="dr", consumer_group=group, topic="orders", remote_topic="primary.orders",
                partition=partition, committed=committed, translated=translated,
                translated_from=None if translated is None else "synced-offset", checkpoint_age_s=age,
                re_read=re_read, skipped=skipped, status=status, detail=f"{status} detail")


def readiness_lakehouse(root) -> Lakehouse:
    lh = tiny_lakehouse(root)
    lh.overwrite("failover_readiness", [
        row(0, "g-ok", 0, "ready", 10, 10, 0, 0, 0.5), row(0, XSS, 0, "ready", 10, 10, 0, 0, 0.5),
        row(1, "g-ok", 0, "ready", 98, 1, 97, 0, 1.5), row(1, "g-ok", 1, "stale", 40, 30, 10, 0, 75.0),
        row(1, XSS, 0, "lossy", 10, 40, 0, 30, 2.0),
        row(2, "g-ok", 0, "unknown", None, 1, None, None), row(2, "g-ok", 1, "unknown", None, 30, None, None),
        row(2, XSS, 0, "unknown", None, None, None, None),
    ])
    return lh


def test_latest_round_per_group_worst_first_and_as_of_an_earlier_time(tmp_path):
    gold = D.Gold(readiness_lakehouse(tmp_path / "lh"), fresh_s=0)
    now = latest_readiness(gold)
    assert sorted((g.consumer_group, g.status, g.re_read, g.skipped) for g in now) == [
        (XSS, "unknown", None, None), ("g-ok", "unknown", None, None)]
    then = latest_readiness(gold, as_of=T0 + timedelta(seconds=1.5))
    assert [(g.consumer_group, g.status, g.re_read, g.skipped, g.oldest_checkpoint_s) for g in then] == [
        (XSS, "lossy", 0, 30, 2.0), ("g-ok", "stale", 107, 0, 75.0)]
    assert [p["partition"] for p in then[1].partitions] == [0, 1] and then[1].flow == "primary → dr"
    assert latest_readiness(gold, group="elsewhere") == []


def test_the_page_tells_per_group_what_a_failover_now_would_do(tmp_path):
    gold = D.Gold(readiness_lakehouse(tmp_path / "lh"), fresh_s=0)
    page = route(gold, "/readiness")
    shown = texts(find(page, "readiness-groups"))
    assert "unknown (a cluster did not answer)" in shown and XSS in shown  # as text: React escapes it
    answer = callback(client(gold), "readiness-content.children", {"r-group.value": "kafka-primary",
                                                                  "r-until.value": "2026-11-23T11:00:01.5Z"}, {},
                      "r-until.value")
    body = json.dumps(answer)
    assert "re-read 107, skip 0; oldest checkpoint 75 s" in body and "re-read 0, skip 30" in body
    assert "stale detail" in body and "lossy detail" in body
    bad = json.dumps(callback(client(gold), "readiness-content.children", {"r-group.value": None, "r-until.value": "soon"},
                              {}, "r-until.value"))
    assert "time filter" in bad and "is not a time" in bad
    none = json.dumps(callback(client(gold), "readiness-content.children", {"r-group.value": "elsewhere",
                                                                          "r-until.value": ""}, {}, "r-group.value"))
    assert "No failover_readiness rounds yet for this group." in none


def test_without_the_table_the_page_says_how_to_fill_it(tmp_path):
    gold = D.Gold(tiny_lakehouse(tmp_path / "lh"), fresh_s=0)
    assert texts(find(route(gold, "/readiness"), "missing-command")) == "brokerscope analyze -c CFG"
