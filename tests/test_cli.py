"""The CLI as a user runs it: replay a real drill, analyse, tell the timeline; errors exit 2 with a message."""

import json
from pathlib import Path

import yaml

from brokerscope.cli import main
from lakehouse.store import Lakehouse

FIX = Path(__file__).parent / "fixtures"


def write_config(tmp_path) -> Path:
    data = yaml.safe_load((FIX / "drill_kill_master.yaml").read_text())
    data["lakehouse"] = "./lh"  # relative to the config file
    p = tmp_path / "brokerscope.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_replay_analyze_timeline(tmp_path, capsys, spark):
    cfg = str(write_config(tmp_path))
    assert main(["timeline", "--config", cfg]) == 1  # nothing analysed yet: says what to run
    assert "brokerscope analyze" in capsys.readouterr().err
    assert main(["replay", "--config", cfg, "--quiet", str(FIX / "drill_kill_master.jsonl.gz"), "--analyze"]) == 0
    out = capsys.readouterr().out
    assert "38 new bronze rows" in out and "failover_events: 1 rows" in out
    assert (tmp_path / "lh" / "gold" / "failover_events" / "_delta_log").is_dir()

    assert main(["timeline", "--config", cfg, "--format", "json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    kinds = [e["what"] for e in entries]
    assert "failover" in kinds and "back-inactive" in kinds
    fo = next(e for e in entries if e["what"] == "failover")
    assert fo["instance"] == "amq-b" and fo["group"] == "store-1" and fo["ts"].endswith("Z")

    assert main(["timeline", "--config", cfg, "--group", "other"]) == 0
    assert "no role changes" in capsys.readouterr().out
    assert main(["timeline", "--config", cfg, "--since", "2999-01-01T00:00:00Z"]) == 0
    assert "no role changes" in capsys.readouterr().out


def test_tables_listing(capsys):
    assert main(["tables"]) == 0
    out = capsys.readouterr().out
    for name in ("bronze_jolokia", "broker_state", "failover_events", "split_brain_windows"):
        assert name in out
    assert main(["tables", "--markdown"]) == 0
    assert "| `obs_key` |" in capsys.readouterr().out


def test_user_errors_exit_2_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets:\n  - name: a\n    kind: rabbit\n    url: http://x\n")
    assert main(["analyze", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "targets[0].kind" in err and "Traceback" not in err
    assert main(["replay", "--config", str(write_config(tmp_path)), str(tmp_path / "missing.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_docs_tables_md_matches_the_contracts():
    """docs/TABLES.md is generated (`brokerscope tables --markdown > docs/TABLES.md`); keep it current."""
    from lakehouse.tables import catalogue_markdown

    doc = Path(__file__).resolve().parents[1] / "docs" / "TABLES.md"
    assert doc.read_text() == catalogue_markdown(), "regenerate: brokerscope tables --markdown > docs/TABLES.md"


def test_timeline_with_a_deleted_gold_table_names_it_and_the_fix(analysed_kill_master, tmp_path, capsys):
    """Not 'no gold tables yet' (it was analysed): the missing table and `analyze --full`."""
    import shutil

    data = analysed_kill_master.copy_to(tmp_path / "lh")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"lakehouse": str(tmp_path / "lh"), "targets": [
        {"name": t.name, "kind": t.kind, "url": t.url} | ({"group": t.group} if t.group else {}) for t in data.targets]}))
    shutil.rmtree(Lakehouse(tmp_path / "lh").uri("failover_events"))
    assert main(["timeline", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "gold table(s) failover_events missing" in err and "deleted or moved?" in err and "analyze --full" in err
