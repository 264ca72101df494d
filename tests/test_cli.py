"""The CLI as a user runs it: replay a real drill, analyse, tell the timeline; errors exit 2 with a message."""

import json
from pathlib import Path

import pytest
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
    assert main(["timeline", "--config", cfg]) == 1  # nothing collected yet: the missing step is collect/replay
    err = capsys.readouterr().err
    assert f"the lakehouse folder {tmp_path / 'lh'} does not exist" in err and "brokerscope collect" in err
    assert not (tmp_path / "lh").exists()  # asking did not create it
    assert main(["analyze", "--config", cfg]) == 2  # refused before Spark starts: there is nothing to analyse
    assert "brokerscope replay" in capsys.readouterr().err
    assert main(["replay", "--config", cfg, "--quiet", str(FIX / "drill_kill_master.jsonl.gz")]) == 0
    assert main(["timeline", "--config", cfg]) == 1  # replayed, not analysed: now the missing step is analyze
    assert f"run `brokerscope analyze --config {cfg}`" in capsys.readouterr().err
    assert main(["replay", "--config", cfg, "--quiet", str(FIX / "drill_kill_master.jsonl.gz"), "--analyze"]) == 0
    out = capsys.readouterr().out
    assert "0 new bronze rows" in out and "failover_events: 1 rows" in out  # the second replay adds nothing
    assert (tmp_path / "lh" / "gold" / "failover_events" / "_delta_log").is_dir()

    assert main(["timeline", "--config", cfg, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    kinds = [e["what"] for e in doc["entries"]]
    assert "failover" in kinds and "back-inactive" in kinds
    fo = next(e for e in doc["entries"] if e["what"] == "failover")
    assert fo["instance"] == "amq-b" and fo["instances"] == ["amq-b"] and fo["group"] == "store-1" and fo["ts"].endswith("Z")
    # the numbers of the sentence, as fields: who handed over to whom, the outage's bounds
    assert (fo["from_instance"], fo["to_instance"]) == ("amq-a", "amq-b")
    assert 0 < fo["outage_upper_s"] and f"outage ≤ {fo['outage_upper_s']:.1f} s" in fo["text"]
    assert fo["new_first_active"] == fo["ts"] and fo["old_last_active"] < fo["ts"]
    assert [i["cluster"] for i in doc["incidents"]] and all(len(i["short_id"]) == 8 for i in doc["incidents"])

    assert main(["timeline", "--config", cfg, "--group", "other"]) == 2  # a typo is said as such
    err = capsys.readouterr().err
    assert "no group 'other'" in err and err.rstrip().endswith("groups: store-1")
    assert main(["timeline", "--config", cfg, "--since", "2999-01-01T00:00:00Z"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no entries since 2999-01-01 00:00:00 UTC; the timeline covers ") and "widen --since" in out
    assert main(["timeline", "--config", cfg, "--until", "2000-01-01"]) == 0
    assert capsys.readouterr().out.startswith("no entries until 2000-01-01 00:00:00 UTC")


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


def test_incidents_list_short_ids_and_report_by_prefix(analysed_kill_master, tmp_path, capsys):
    """`incidents` lists what `timeline` calls incidents; the 8-character id it prints opens the report."""
    data = analysed_kill_master.copy_to(tmp_path / "lh")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"lakehouse": str(tmp_path / "lh"), "targets": [
        {"name": t.name, "kind": t.kind, "url": t.url} | ({"group": t.group} if t.group else {}) for t in data.targets]}))
    rows = Lakehouse(tmp_path / "lh").read("incidents").to_pylist()
    assert rows, "the kill-master drill makes at least one incident"
    assert main(["incidents", "-c", str(cfg)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["ID", "SEVERITY", "STATUS", "CLUSTER"] and len(lines) == len(rows) + 1
    short = lines[1].split()[0]
    first = min(rows, key=lambda r: (r["start_ts"], r["incident_id"]))
    assert short == first["incident_id"][:8] and first["title"] in lines[1]

    assert main(["incidents", "-c", str(cfg), "-o", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [i["incident_id"] for i in got] == [r["incident_id"] for r in sorted(rows, key=lambda r: (r["start_ts"], r["incident_id"]))]
    assert got[0]["short_id"] == short and got[0]["start_ts"].endswith("Z") and isinstance(got[0]["instances"], list)

    out = tmp_path / "r.md"
    assert main(["report", short, "-c", str(cfg), "--format", "md", "-o", str(out)]) == 0
    assert first["title"] in out.read_text()
    assert main(["report", short[:3], "-c", str(cfg)]) == 2  # too short to be sure tomorrow
    assert "at least its first 4 characters" in capsys.readouterr().err

    assert main(["incidents", "-c", str(cfg), "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out.startswith(f"no incidents since 2999-01-01 00:00:00 UTC; {len(rows)} in all")
    assert main(["incidents", "-c", str(cfg), "--group", "nope"]) == 2
    assert "no incidents of group 'nope'; groups with incidents: store-1" in capsys.readouterr().err


def test_incidents_on_a_fresh_simulation_folder_names_replay(tmp_path, capsys):
    """`brokerscope simulate` writes a recording and a config; the step missing is replay, not analyze."""
    out = tmp_path / "sim"
    assert main(["simulate", "split-brain", "--kind", "artemis", "--out", str(out)]) == 0
    capsys.readouterr()
    cfg = out / "brokerscope.yaml"
    assert main(["incidents", "-c", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert f"run `brokerscope replay --config {cfg} {out / 'recording.jsonl.gz'}`" in err and "analyze" not in err


def test_since_forms_and_a_clear_error(capsys):
    from datetime import datetime, timezone

    from settings import parse_since

    now = datetime(2026, 11, 26, 3, 4, 5, tzinfo=timezone.utc)
    assert parse_since("yesterday", now) == datetime(2026, 11, 25, tzinfo=timezone.utc)
    assert parse_since("today", now) == datetime(2026, 11, 26, tzinfo=timezone.utc)
    assert parse_since("15m", now) == parse_since("15m ago", now) == datetime(2026, 11, 26, 2, 49, 5, tzinfo=timezone.utc)
    assert parse_since("2d", now) == datetime(2026, 11, 24, 3, 4, 5, tzinfo=timezone.utc)
    assert parse_since("2026-11-21", now) == datetime(2026, 11, 21, tzinfo=timezone.utc)
    assert parse_since("2026-11-21T22:30:00+01:00", now) == datetime(2026, 11, 21, 21, 30, tzinfo=timezone.utc)
    with pytest.raises(SystemExit) as exit_:
        main(["timeline", "-c", "x.yaml", "--since", "last tuesday"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --since: 'last tuesday' is not a time" in err and "yesterday" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:  # the same forms, the same error, on every --since
        main(["alerts", "history", "-c", "x.yaml", "--since", "last tuesday"])
    assert exit_.value.code == 2 and "argument --since: 'last tuesday' is not a time" in capsys.readouterr().err


def test_version_and_verbose_after_the_subcommand(capsys):
    from importlib.metadata import version

    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    assert capsys.readouterr().out.strip() == f"brokerscope {version('brokerscope')}"
    assert main(["tables", "-v"]) == 0 and "broker_state" in capsys.readouterr().out


def test_check_config_validates_without_running(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("lakehouse: ./lh\ntargets:\n  - {name: a, kind: activemq, url: 'http://a:8161/api/jolokia'}\n")
    assert main(["check", "config", str(good)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"{good}: valid — 1 target(s) (1 activemq)") and not (tmp_path / "lh").exists()
    assert "alerts.receivers is empty" in err and "nobody is notified" in err  # the built-in rules would fire unheard
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets:\n  - {name: a, kind: rabbit, url: 'http://a'}\n")
    assert main(["check", "config", str(bad)]) == 2
    assert "targets[0].kind" in capsys.readouterr().err


def test_help_and_errors_cite_only_readme_sections_that_exist():
    import re

    root = Path(__file__).resolve().parents[1]
    headings = [line.lstrip("#").strip() for line in (root / "README.md").read_text().splitlines() if line.startswith("#")]
    cited = []
    for folder in ("brokerscope", "settings", "collectors", "lakehouse", "analysis", "alerts", "dashboards", "infra"):
        for py in (root / folder).rglob("*.py"):
            cited += [(py.name, c) for c in re.findall(r"README(?:\.md)?,\s*'([^']+)'", py.read_text())]
    assert cited, "the pattern finds the citations"
    assert [c for c in cited if c[1] not in headings] == []


def test_spark_log_level_is_error_unless_verbose():
    """`analyze` (as `run` does) starts Spark with brokerscope's log4j2 file at ERROR; `-v` sets
    Spark's level to WARN for that command only (a later command in the same process is quiet
    again). That a real `brokerscope analyze` prints no banner, no "Setting default log level" and
    no WARN line is asserted on the cold re-run in tests/test_resilience.py (assert_spark_was_quiet)."""
    import os

    from brokerscope.cli import spark_warnings
    from lakehouse.spark import log4j2_config_file

    assert "BROKERSCOPE_SPARK_LOG_LEVEL" not in os.environ
    with spark_warnings(True):
        assert os.environ["BROKERSCOPE_SPARK_LOG_LEVEL"] == "WARN"
    assert "BROKERSCOPE_SPARK_LOG_LEVEL" not in os.environ

    quiet = Path(log4j2_config_file("ERROR")).read_text()
    assert "logger.nativecode.level = error" in quiet and "rootLogger.level = warn" in quiet
    assert "rootLogger.level = debug" in Path(log4j2_config_file("DEBUG")).read_text()
