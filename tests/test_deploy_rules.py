"""deploy/: the Prometheus alerting rules and the Grafana dashboard shipped for brokerscope's
/metrics, checked without a running Prometheus: `promtool check rules`, `promtool test rules`
(input series → expected alerts), and every metric they name is one the exporter serves.
tests/test_deploy_live.py runs both against a real Prometheus scraping the real exporter."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from alerts.exporter import METRICS

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
RULES = DEPLOY / "prometheus" / "brokerscope-rules.yml"
RULES_TEST = DEPLOY / "prometheus" / "brokerscope-rules.test.yml"
DASHBOARD = DEPLOY / "grafana" / "brokerscope-dashboard.json"
SEVERITIES = {"critical", "warning", "info"}

needs_promtool = pytest.mark.skipif(not shutil.which("promtool"),
                                    reason="Debian `prometheus` (with promtool) not installed; see infra/setup.sh")


def dashboard_exprs(dashboard: dict | None = None) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target, template variable query and annotation of the
    dashboard, rows' nested panels included."""

    d = dashboard if dashboard is not None else json.loads(DASHBOARD.read_text())
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((f"panel {p['title']!r} {t['refId']}", t["expr"]))
            walk(p.get("panels", []))

    walk(d["panels"])
    for v in d.get("templating", {}).get("list", []):
        if v["type"] == "query":
            out.append((f"variable ${v['name']}", v["definition"]))
    for a in d.get("annotations", {}).get("list", []):
        if "expr" in a:
            out.append((f"annotation {a['name']!r}", a["expr"]))
    return out


def concrete(expr: str) -> str:
    """A dashboard expression as Grafana sends it with every variable at All (allValue .*) and
    $__rate_interval at its floor for a 1 s scrape (4 × scrape interval; 1m covers any)."""

    m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", expr)
    if m:  # Grafana asks the series API; the selector itself must be valid PromQL
        expr = m.group(1)
    expr = expr.replace("$__rate_interval", "1m")
    return re.sub(r"\$\{?(group|broker)\}?", ".*", expr)


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\bbrokerscope_[a-z_]+", expr))


def exported(name: str) -> bool:
    base = re.sub(r"_(sum|count)$", "", name)
    return name in METRICS or (base in METRICS and METRICS[base][0] == "summary")


@needs_promtool
def test_promtool_check_rules_accepts_the_file():
    res = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules())} rules found" in res.stdout


@needs_promtool
def test_promtool_unit_tests_of_the_rules_pass():
    res = subprocess.run(["promtool", "test", "rules", str(RULES_TEST)], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and "SUCCESS" in res.stdout, res.stdout + res.stderr
    tested = set(re.findall(r"alertname: (\w+)", RULES_TEST.read_text()))
    assert {"BrokerscopeSplitBrain", "BrokerscopeDataStale"} <= tested


@needs_promtool
@pytest.mark.parametrize("rule, broken", [
    ("BrokerscopeSplitBrain", "brokerscope_group_split_brain == 1"),
    ("BrokerscopeDataStale", "time() - brokerscope_instance_last_observation_timestamp_seconds > 300"),
])
def test_the_unit_tests_catch_a_broken_rule(tmp_path, rule, broken):
    """The unit tests can fail: the same file with one rule's condition turned off fails them."""

    text = RULES.read_text()
    assert f"expr: {broken}\n" in text
    (tmp_path / RULES.name).write_text(text.replace(f"expr: {broken}\n", f"expr: ({broken}) and vector(0) > 1\n"))
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    res = subprocess.run(["promtool", "test", "rules", str(tmp_path / RULES_TEST.name)], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode != 0 and f"alertname: {rule}," in res.stdout + res.stderr, res.stdout + res.stderr


def test_every_rule_has_for_severity_and_annotations():
    names = [r["alert"] for r in rules()]
    assert len(names) == len(set(names)), names
    for r in rules():
        assert "for" in r, r["alert"]
        assert r["labels"]["severity"] in SEVERITIES, r["alert"]
        assert {"summary", "description", "runbook"} <= set(r["annotations"]), r["alert"]
        assert "docs/ALERTS.md" in r["annotations"]["runbook"], r["alert"]
    expected = {"BrokerscopeSplitBrain", "BrokerscopeNoLiveBroker", "BrokerscopeFailoverHappened",
                "BrokerscopeLiveUnprotected", "BrokerscopeZooKeeperQuorumLost", "BrokerscopeExporterDown",
                "BrokerscopeTargetNotAnswering", "BrokerscopeDataStale", "BrokerscopeGcPauseOverHaThreshold"}
    assert expected <= set(names), expected - set(names)


def test_rules_and_dashboard_name_only_metrics_the_exporter_serves():
    used = {(f"rule {r['alert']}", n) for r in rules() for n in metric_names(r["expr"])}
    used |= {(where, n) for where, e in dashboard_exprs() for n in metric_names(e)}
    unknown = sorted((w, n) for w, n in used if not exported(n))
    assert not unknown, f"names alerts.exporter.METRICS does not serve: {unknown}"
    assert {n for _, n in used} >= {"brokerscope_group_split_brain", "brokerscope_build_info",
                                     "brokerscope_instance_last_observation_timestamp_seconds"}


def test_the_metric_check_sees_a_misspelled_name():
    assert not exported("brokerscope_group_splitbrain") and not exported("brokerscope_instance_active_sum")
    assert exported("brokerscope_gc_pause_seconds_count") and exported("brokerscope_instance_active")


def test_dashboard_is_importable_json_with_a_query_per_panel():
    d = json.loads(DASHBOARD.read_text())
    assert d["uid"] and d["title"] and d["schemaVersion"] >= 36
    ids = []

    def walk(panels):
        for p in panels:
            ids.append(p["id"])
            if p["type"] != "row":
                assert p["targets"] and all(t["expr"].strip() and t["refId"] for t in p["targets"]), p["title"]
                assert p["datasource"]["uid"] == "${datasource}", p["title"]
            walk(p.get("panels", []))

    walk(d["panels"])
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    variables = {v["name"] for v in d["templating"]["list"]}
    assert {"datasource", "group", "broker"} <= variables
    used = set(re.findall(r"\$\{?(\w+)", " ".join(e for _, e in dashboard_exprs(d))))
    assert used <= variables | {"__rate_interval"}, used - variables
    # the label every broker panel filters on is the exporter's broker label, never target/instance
    assert not any(re.search(r"\b(target|instance)=~?\"", e) for _, e in dashboard_exprs(d))
