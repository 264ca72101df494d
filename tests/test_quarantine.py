"""One bad value never poisons analysis: a broker value of the wrong type or range becomes null in
silver with a reason in collector_health that names the target, the MBean and the attribute, and
every other row (and target) goes through. Real collector, real hostile server, real Delta tables;
the Spark run over the whole lakehouse is the slow test."""

from __future__ import annotations

import asyncio
import math

import pyarrow as pa
import pytest

from analysis.silver import normalize_batch
from collectors.quarantine import misfit
from collectors.scraper import Collector
from lakehouse.store import Lakehouse
from lakehouse.tables import SILVER_FROM_JOLOKIA
from settings import config_from_dict
from tests.hostile_http import RESPONSE_CLASSES
from tests.jolokia_stub import activemq_items, jolokia_stub
from tests.jolokia_stub import replay as replay_route

POISONED = ["values-infinite", "values-huge-int", "values-wrong-type", "values-bad-unicode", "items-not-objects",
            "status-as-string", "values-control-chars"]


@pytest.mark.parametrize("value,typ,why", [
    (42, pa.string(), "expected text, got int"),
    ("a\ud800", pa.string(), "not valid Unicode"),
    (2**63, pa.int64(), "outside the 64-bit integer range"),
    (-(2**63), pa.int64(), None),
    (2**31, pa.int32(), "outside the 32-bit integer range"),
    (True, pa.int64(), "expected an integer, got bool"),
    ("12", pa.int64(), "expected an integer, got str"),
    (math.inf, pa.float64(), "not a finite number"),
    (math.nan, pa.float64(), "not a finite number"),
    (10**400, pa.float64(), "too large for a double"),
    (3, pa.float64(), None),
    ("maybe", pa.bool_(), "expected true/false, got str"),
    (None, pa.int64(), None),
])
def test_misfit_says_why_a_value_does_not_fit_its_column(value, typ, why):
    got = misfit(value, typ)
    assert (got is None) if why is None else (why in (got or "")), got


@pytest.fixture(scope="module")
def poisoned_lakehouse(tmp_path_factory):
    """A real collection: the healthy ActiveMQ master beside one target per poisoned answer."""
    root = tmp_path_factory.mktemp("poisoned") / "lh"
    routes = {f"/{k}": RESPONSE_CLASSES[k][0] for k in POISONED} | {"/good": replay_route(activemq_items("amq-a"))}
    targets = [{"name": "healthy", "kind": "activemq", "url": "/good", "group": "g-ok"}]
    # no group for the control-characters target: its (hostile) store name becomes the group's name
    targets += [{"name": f"h-{k}", "kind": "activemq", "url": f"/{k}"} | ({} if "control" in k else {"group": f"g-{k}"})
                for k in POISONED]
    with jolokia_stub(routes) as stub:
        for t in targets:
            t["url"] = stub.url(t["url"])
        cfg = config_from_dict({"lakehouse": str(root), "scrape_interval": "500ms", "flush_interval": "400ms",
                                "targets": targets})
        asyncio.run(Collector(cfg).run(duration=1.2))
    return cfg


def _silver(cfg, table: str) -> list[dict]:
    bronze = Lakehouse(cfg.lakehouse_root()).read("bronze_jolokia")
    targets = {t.name: (t.kind, t.group) for t in cfg.targets}
    return [r for b in bronze.to_batches() for r in normalize_batch(b, table, targets).to_pylist()]


def test_poisoned_answers_convert_with_the_bad_values_set_aside_and_named(poisoned_lakehouse):
    rows = {t: _silver(poisoned_lakehouse, t) for t in SILVER_FROM_JOLOKIA}  # none raises
    healthy = [r for r in rows["broker_state"] if r["instance"] == "healthy"]
    assert healthy and all(r["role"] == "master" and r["broker_name"] == "amq-a" for r in healthy)
    health = {r["target"]: r for r in rows["collector_health"]}
    assert health["healthy"]["values_quarantined"] == 0 and health["healthy"]["quarantined"] is None
    wrong = health["h-values-wrong-type"]["quarantined"]
    assert "broker_state.broker_name from org.apache.activemq:" in wrong and "BrokerName: 42 — expected text, got int" in wrong
    huge = health["h-values-huge-int"]["quarantined"]
    assert "outside the 64-bit integer range" in huge and "TotalMessageCount" in huge
    assert "not a finite number" in health["h-values-infinite"]["quarantined"]
    assert "not valid Unicode" in health["h-values-bad-unicode"]["quarantined"]
    for name in ("h-values-huge-int", "h-values-wrong-type", "h-values-bad-unicode", "h-values-infinite"):
        assert health[name]["values_quarantined"] >= 1, name
        # the rest of the answer still lands: the poisoned target is still seen as the master it is
        states = [r for r in rows["broker_state"] if r["instance"] == name]
        assert states and all(r["reachable"] for r in states), name
    assert {r["role"] for r in rows["broker_state"] if r["instance"] == "h-values-huge-int"} == {"master"}
    # answers that are not Jolokia-shaped are not answers, and are never guessed into a role
    for name in ("h-items-not-objects", "h-status-as-string"):
        assert {r["role"] for r in rows["broker_state"] if r["instance"] == name} == {"unknown"}, name
    assert not health["h-items-not-objects"]["answered"] and "not JSON objects" in health["h-items-not-objects"]["error"]
    assert health["h-status-as-string"]["items_ok"] == 0


@pytest.mark.slow
def test_analysis_of_a_poisoned_lakehouse_completes_for_every_target(poisoned_lakehouse, spark, tmp_path, capsys):
    from analysis.runner import analyze

    counts = analyze(poisoned_lakehouse, spark=spark, progress=lambda m: None)
    lh = Lakehouse(poisoned_lakehouse.lakehouse_root())
    instances = set(lh.read("role_intervals", columns=["instance"]).column("instance").to_pylist())
    # (h-values-wrong-type reports Slave "maybe": no role, so no interval — correctly)
    assert {"healthy", "h-values-huge-int", "h-values-infinite", "h-values-bad-unicode", "h-values-control-chars"} <= instances
    health = lh.read("collector_health", columns=["target", "values_quarantined"]).to_pylist()
    assert sum(r["values_quarantined"] or 0 for r in health if r["target"] == "h-values-wrong-type") > 0
    assert counts["broker_state"] > 0
    # the store name with ESC/BEL reaches the terminal only escaped, through the real CLI
    import yaml

    from brokerscope.cli import main

    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump({"lakehouse": poisoned_lakehouse.lakehouse_root(), "targets": [
        {"name": t.name, "kind": t.kind, "url": t.url} | ({"group": t.group} if t.group else {}) for t in poisoned_lakehouse.targets]}))
    assert main(["timeline", "--config", str(cfg_file)]) == 0
    out = capsys.readouterr().out
    assert "group kahadb\\x1b]0;owned\\x07" in out, out
    assert not any(c in out for c in "\x1b\x07\r"), repr(out)
