"""deploy/ against the real tools: the real exporter serving the recorded drill, a real Prometheus
scraping it with deploy/prometheus/brokerscope-rules.yml loaded, and every PromQL expression of
the Grafana dashboard evaluated through Prometheus' HTTP API."""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.test_deploy_rules import RULES, concrete, dashboard_exprs, rules
from tests.test_prometheus_live import exporter, prometheus, query, wait_query  # noqa: F401 - exporter is a fixture

pytestmark = [
    pytest.mark.slow,
    pytest.mark.lab,
    pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("promtool")),
                       reason="Debian `prometheus` (with promtool) not installed; see infra/setup.sh"),
]

# Panels the recorded drill (tests.test_exporter.drill_lakehouse: an ActiveMQ pair, one failover,
# an open stuck-messages finding, clock skew on amq-b) must fill. The others (GC, ZooKeeper,
# replication, Kafka, the service's own analysis/alert metrics) have no source in it and may be empty.
KEY_PANELS = {
    "Split brain", "No live broker", "Instances not answering", "Age of the newest observation",
    "Active (live/master) per broker", "Role per broker", "Active instances per group", "Failovers and last outage",
    "Time since the last failover", "Target answering", "Age of each broker's last observation",
    "Scrape errors per minute", "Clock skew (broker − collector)", "Messages held per broker",
    "Enqueue / dequeue rate", "Deepest destinations", "Stuck messages (open findings)", "Version",
}


def api(base: str, path: str, **params) -> dict:
    url = f"{base}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return body["data"]


def test_dashboard_queries_and_rules_on_a_real_prometheus(exporter, tmp_path):  # noqa: F811 - the fixture
    with prometheus(tmp_path, f"127.0.0.1:{exporter.port}", rule_files=[RULES]) as base:
        assert wait_query(base, 'up{job="brokerscope"} == 1'), "Prometheus never scraped /metrics"
        # rate() over 1m needs two samples of each series; the scrape interval is 1 s
        assert wait_query(base, 'count_over_time(brokerscope_build_info[1m]) >= 3')

        exprs = dashboard_exprs()
        assert len(exprs) >= 40
        empty = []
        for where, expr in exprs:
            try:
                result = query(base, concrete(expr))  # asserts status success: the expression parses and evaluates
            except urllib.error.HTTPError as e:  # Prometheus answers 400 with the parse error
                pytest.fail(f"{where}: {concrete(expr)!r}: HTTP {e.code} {e.read().decode()[:500]}")
            if not result:
                empty.append(where)
        titles = {w: m.group(2) for w, _ in exprs if (m := re.fullmatch(r"panel (['\"])(.*)\1 [A-Z]", w))}
        assert len(titles) == sum(w.startswith("panel") for w, _ in exprs)
        panels_with_data = {t for w, t in titles.items() if w not in empty}
        missing = KEY_PANELS - panels_with_data
        assert not missing, f"key panels without data: {sorted(missing)}; all empty targets: {empty}"
        assert not any(w.startswith("variable") for w in empty), empty

        roles = query(base, concrete(next(e for w, e in exprs if titles.get(w) == "Role per broker")))
        assert {(r["metric"]["broker"], r["metric"]["role"]) for r in roles} == {("amq-a", "slave"), ("amq-b", "master")}
        split = query(base, concrete(next(e for w, e in exprs if titles.get(w) == "Split brain")))
        assert [(r["metric"]["group"], r["value"][1]) for r in split] == [("store-1", "0")]

        # every rule loaded and evaluated without error
        deadline = time.monotonic() + 30
        while True:
            loaded = [r for g in api(base, "/api/v1/rules")["groups"] for r in g["rules"]]
            if loaded and all(r["health"] == "ok" for r in loaded) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert sorted(r["name"] for r in loaded) == sorted(r["alert"] for r in rules())
        bad = [(r["name"], r["health"], r.get("lastError")) for r in loaded if r["health"] != "ok"]
        assert not bad, bad

        # the drill's data is days old (the exporter's clock is the drill's, Prometheus' is now):
        # the stale-data rule is pending for both brokers, the clock-skew rule for amq-b (-3.25 s),
        # and nothing says split brain or no live broker
        alerts = api(base, "/api/v1/alerts")["alerts"]
        by_rule = {}
        for a in alerts:
            by_rule.setdefault(a["labels"]["alertname"], set()).add((a["labels"].get("broker"), a["state"]))
        assert by_rule.get("BrokerscopeDataStale") == {("amq-a", "pending"), ("amq-b", "pending")}, alerts
        assert by_rule.get("BrokerscopeClockSkew") == {("amq-b", "pending")}, alerts
        assert not {"BrokerscopeSplitBrain", "BrokerscopeNoLiveBroker", "BrokerscopeExporterDown"} & set(by_rule), alerts
