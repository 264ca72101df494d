"""Every command line in README.md is run by a test: the README is the contract (P14).

`readme_examples()` reads every command line of README's fenced code blocks (`brokerscope …`,
`make …`, `python -m …`). Each one is either
- run here, for real, in each concrete form its synopsis stands for (without its `[optional parts]`,
  with each alone and with all; each `A|B` alternative), in a folder laid out as the examples name
  things: `brokerscope.yaml` and `c.yaml` over a copy of the committed kill-master drill, replayed
  and analysed (tests/conftest.py `analysed_kill_master`), its recording as `incident.jsonl.gz`, a
  GC log as `gc.log`. RUN says what each form must exit with and print;
- or, where it runs for minutes or needs the lab (run, dashboard, collect, drills, lab start, make),
  mapped in ELSEWHERE to the tests that run that very command; they must exist.
A new README example in neither fails `test_every_example_is_run_or_mapped`. Every option and
alternative an example shows must be in its subcommand's --help, so a renamed option fails too."""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from brokerscope.cli import build_parser, main
from lakehouse.store import Lakehouse
from tests.alert_servers import RecordingReceiver
from tests.servers import free_port
from tests.test_gc_cli import LONG_SERIAL
from tests.test_gc_parser import CORPUS, NO_CORPUS

ROOT = Path(__file__).resolve().parents[1]
THIS = "tests/test_readme_examples.py"
COMMAND = re.compile(r"(brokerscope|make|bash|pytest|python3? -m [\w.]+) ")
TITLE = "failover amq-a → amq-b in store-1 (outage ≤ 1.5 s)"  # the drill's one incident
# what the README's placeholders stand for in the folder the examples run in ({incident}: its short id)
PLACEHOLDERS = {"INCIDENT_ID": "{incident}", "1a2b3c4d": "{incident}", "TIME": "2026-11-22T00:06:00Z",
                "SCENARIO": "split-brain", "DIR": "./sim/out", "NAME": "oncall"}


def fenced_blocks() -> list[list[str]]:
    """The lines of each fenced code block of README.md."""
    blocks, current = [], None
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            if current is not None:
                blocks.append(current)
            current = None if current is not None else []
        elif current is not None:
            current.append(line)
    return blocks


def readme_examples() -> list[str]:
    """Every command line of README's code blocks, its comment cut and its spaces folded."""
    lines = [line.removeprefix("$ ") for block in fenced_blocks() for line in block]
    return [" ".join(shlex.split(line, comments=True)) for line in lines if COMMAND.match(line)]


def forms(example: str) -> list[str]:
    """The concrete commands a synopsis stands for: without its `[optional parts]`, with each alone
    and with all of them; every `A|B` alternative of each."""
    pieces = re.split(r" \[([^\]]*)\]", example)
    fixed, optional = pieces[0::2], pieces[1::2]
    picks = [set()] + [{i} for i in range(len(optional))] + ([set(range(len(optional)))] if len(optional) > 1 else [])
    found = []
    for on in picks:
        line = fixed[0] + "".join((f" {part}" if i in on else "") + fixed[i + 1] for i, part in enumerate(optional))
        found += [" ".join(words) for words in itertools.product(*(w.split("|") for w in line.split()))]
    return list(dict.fromkeys(found))


class Expect(NamedTuple):
    rc: int
    says: tuple[str, ...]  # each in stdout + stderr (+ the text of `file`, which must be written)
    not_says: tuple[str, ...] = ()
    file: str | None = None


TIMELINE = "brokerscope timeline --config brokerscope.yaml"
SIM = "brokerscope simulate"
GC = "brokerscope gc report gc.log"
RUN = {
    # --- "Using it on your brokers" -------------------------------------------------------------------
    "brokerscope analyze --config brokerscope.yaml": Expect(0, (
        "gold incidents, incident_evidence: inputs unchanged since the last run", "failover_events: 1 rows")),
    TIMELINE: Expect(0, ("amq-b became master — failover amq-a → amq-b", "=== incidents ===", TITLE)),
    f"{TIMELINE} --group store-1": Expect(0, ("group store-1", "amq-a back, as slave")),
    f"{TIMELINE} --since 15m": Expect(0, ("no entries since", "widen --since / --until")),
    f"{TIMELINE} --until TIME": Expect(0, ("amq-a stopped answering",), ("amq-b became master",)),
    f"{TIMELINE} -o text": Expect(0, ("amq-b became master — failover amq-a → amq-b",)),
    f"{TIMELINE} -o json": Expect(0, ('"what": "failover"', '"from_instance": "amq-a"')),
    f"{TIMELINE} --group store-1 --since 15m --until TIME -o text": Expect(0, ("no entries for group store-1 since",)),
    f"{TIMELINE} --group store-1 --since 15m --until TIME -o json": Expect(0, ('"entries": []',)),
    "brokerscope replay --config brokerscope.yaml incident.jsonl.gz": Expect(0, (
        "incident.jsonl.gz: 38 exchanges, 0 new bronze rows",)),  # the drill is in already: nothing twice
    "brokerscope replay --config brokerscope.yaml incident.jsonl.gz --analyze": Expect(0, (
        "0 new bronze rows", "failover_events: 1 rows", "incidents: 1 rows")),
    "brokerscope tables": Expect(0, ("bronze_jolokia", "failover_events")),
    "brokerscope tables --markdown": Expect(0, ("| `obs_key` |",)),
    "brokerscope lab stop": Expect(0, ("nothing running",)),  # ./var/lab here: nothing started
    "brokerscope lab status": Expect(1, ("nothing recorded",)),
    "brokerscope report INCIDENT_ID --config brokerscope.yaml --format html": Expect(0, ("<html", TITLE)),
    "brokerscope report INCIDENT_ID --config brokerscope.yaml --format md": Expect(0, (f"# Post-incident report: {TITLE}",)),
    "brokerscope alerts evaluate --config brokerscope.yaml": Expect(0, (" firing, ",), ("FAILED",)),
    "brokerscope alerts history --config brokerscope.yaml": Expect(0, ("no alert state changes recorded",)),
    "brokerscope alerts test-receiver NAME --config brokerscope.yaml": Expect(0, ("firing: ok (HTTP 200", "resolved: ok")),
    f"{SIM} SCENARIO --out DIR": Expect(0, ("split-brain (activemq, seed 1", "→ ./sim/out/recording.jsonl.gz")),
    # --- GC logs --------------------------------------------------------------------------------------
    "brokerscope gc tail --config c.yaml --once": Expect(0, ("82 GC log lines in 1 commits from 1 file(s) (0 rejected",)),
    GC: Expect(0, ("collector   serial", "pauses      5, total 9,111.882 ms"), ("gc.pause-over-third-session",)),
    f"{GC} --format json": Expect(0, ('"collector": "serial"', '"pause_count": 5')),
    f"{GC} --config c.yaml --target amq-a": Expect(0, ("GC pause 2.7 s (young, Allocation Failure) — over ⅓ of session-ms 6.0 s",)),
    f"{GC} --format json --config c.yaml --target amq-a": Expect(0, ('"pause_count": 5', "gc.pause-over-third-session")),
    # --- simulated incidents --------------------------------------------------------------------------
    f"{SIM} --list": Expect(0, ("split-brain     two actives for --split-length seconds", "clock-skew")),
    f"{SIM} split-brain --kind artemis --out ./sim/sb --split-length 6s": Expect(0, (
        "split-brain (artemis, seed 1, every 1 s for 60 s)",), file="sim/sb/truth.json"),
    # --- running it, and at 3 a.m. --------------------------------------------------------------------
    "brokerscope report INCIDENT_ID -c brokerscope.yaml --format html -o incident.html": Expect(0, ("<html", TITLE),
                                                                                              file="incident.html"),
    "brokerscope check config brokerscope.yaml": Expect(0, ("brokerscope.yaml: valid — 2 target(s) (2 activemq)",)),
    "brokerscope incidents -c brokerscope.yaml --since yesterday": Expect(0, ("no incidents since", "1 in all, 2026-11-22 00:05:59")),
    "brokerscope incidents -c brokerscope.yaml -o json": Expect(0, ('"cluster": "store-1"', '"severity": "error"')),
    "brokerscope report 1a2b3c4d -c brokerscope.yaml --format md": Expect(0, (f"# Post-incident report: {TITLE}",)),
    "brokerscope timeline -c brokerscope.yaml --since 2026-11-22 --until 2026-11-23 -o json": Expect(0, (
        '"what": "failover"', '"to_instance": "amq-b"')),
    "brokerscope --version": Expect(0, ("brokerscope ",)),
}

SERVICE = ["tests/test_service_live.py::test_sigterm_stops_the_cli_with_everything_in_bronze",
           "tests/test_hostile_inputs.py::test_sigterm_stops_brokerscope_run_promptly_beside_a_trickling_target"]
COLLECT = ["tests/test_gc_cli.py::test_collect_analyze_timeline_and_import",  # --duration 1s --record, GC logs tailed
           "tests/test_hostile_inputs.py::test_sigterm_lands_the_unflushed_batch_within_a_bound",  # --record, until SIGTERM
           "tests/test_resilience.py::test_collector_killed_9_at_random_moments_loses_and_duplicates_nothing"]
SCORED = ["tests/test_simulate_scoring.py::test_fast_scenarios_meet_the_bar",  # score_dir, as --score and `score` call it
          "tests/test_simulate_scoring.py::test_every_fault_and_kind_meets_the_bar"]
DRILLS = ["tests/test_drill_live.py::test_kill_master_live_then_replay_gives_same_gold",
          "tests/test_drills.py::test_drill_meets_the_bar",  # run_drill, as `drill NAME` calls it
          "tests/test_kafka_lab.py::test_controller_kill_drill_meets_the_bar"]
# README example (or one concrete form of it) → the tests that run that command; it takes minutes or the lab
ELSEWHERE = {
    "make demo": ["tests/test_demo.py::test_demo_reconstructs_the_failover_and_tails_the_gc_logs",
                  f"{THIS}::test_make_targets_run_what_the_readme_says"],
    "make test": [f"{THIS}::test_make_targets_run_what_the_readme_says"],  # and the suite is its run
    "brokerscope collect --config brokerscope.yaml [--record incident.jsonl.gz] [--duration 10m]": COLLECT,
    "brokerscope analyze --config brokerscope.yaml --full": [  # Spark over the whole drill again (`analyze(full=True)`)
        "tests/test_incremental.py::test_nothing_new_changes_nothing_and_full_recomputes"],
    "brokerscope lab start": [f"{THIS}::test_lab_start_status_stop_by_hand"],
    "brokerscope run --config brokerscope.yaml": SERVICE,
    "brokerscope run -c brokerscope.yaml": SERVICE,
    "brokerscope dashboard --config brokerscope.yaml": [f"{THIS}::test_dashboard_serves_the_analysed_drill_until_ctrl_c"],
    "brokerscope dashboard -c brokerscope.yaml": [f"{THIS}::test_dashboard_serves_the_analysed_drill_until_ctrl_c"],
    "brokerscope simulate SCENARIO --out DIR --score": [f"{THIS}::test_simulate_then_score", *SCORED],
    "brokerscope simulate score ./sim/sb": [f"{THIS}::test_simulate_then_score"],
    "brokerscope simulate all --out ./sim/all --score": SCORED,
    "brokerscope drill NAME|all|artemis-all": [f"{THIS}::test_drill_all_runs_every_drill_in_turn_and_exits_1_below_the_bar", *DRILLS],
    "brokerscope drill artemis-all": [
        f"{THIS}::test_drill_all_runs_every_drill_in_turn_and_exits_1_below_the_bar",
        "tests/test_drills.py::test_drill_families_select_by_name_prefix_and_unknown_names_are_refused",
        "tests/test_artemis_live.py::test_kill9_failover_as_the_pack_reads_it"],
    "brokerscope drill kill-master [--workdir ./var/drills] [--interval 0.5]": DRILLS[:2],
    "brokerscope drill all": [f"{THIS}::test_drill_all_runs_every_drill_in_turn_and_exits_1_below_the_bar", *DRILLS],
    "brokerscope collect --config c.yaml": COLLECT[:1],
    "brokerscope gc tail --config c.yaml": ["tests/test_gc_tailer.py::test_kill_9_at_random_points_loses_and_duplicates_nothing"],
    "brokerscope analyze --config c.yaml": ["tests/test_gc_cli.py::test_analyze_runs_the_gc_jobs_first_when_there_is_gc_data",
                                            "tests/test_demo.py::test_demo_reconstructs_the_failover_and_tails_the_gc_logs"],
    "brokerscope gc import /archive/amq-a --config c.yaml --target amq-a": COLLECT[:1],
}


def where_run(example: str, form: str) -> str | list[str] | None:
    """'here' (RUN), the tests ELSEWHERE, or None: not run by any test."""
    return "here" if form in RUN else ELSEWHERE.get(example) or ELSEWHERE.get(form)


# --- the registry is complete, and points at tests that exist ----------------------------------------


def test_every_example_is_run_or_mapped():
    examples = readme_examples()
    assert len(examples) >= 30 and "brokerscope --version" in examples and "make demo" in examples
    unrun = [f"{form}  (README: {ex})" for ex in examples for form in forms(ex) if not where_run(ex, form)]
    assert not unrun, "README examples no test runs; add each to RUN or ELSEWHERE:\n" + "\n".join(unrun)
    every = {f for ex in examples for f in [ex, *forms(ex)]}
    stale = [k for k in [*RUN, *ELSEWHERE] if k not in every]
    assert not stale, "entries for commands the README no longer shows:\n" + "\n".join(stale)


def test_mapped_tests_exist():
    defined: dict[str, set[str]] = {}
    for ids in ELSEWHERE.values():
        for node in ids:
            path, name = node.split("::")
            if path not in defined:
                tree = ast.parse((ROOT / path).read_text())
                defined[path] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert name in defined[path], f"{node}: no such test"


@pytest.mark.parametrize("example", [e for e in dict.fromkeys(readme_examples()) if e.startswith("brokerscope ")], ids=str)
def test_options_and_choices_an_example_shows_are_in_its_help(example):
    parser, rest = build_parser(), example.split()[1:]
    while rest:  # down the subcommands the example names: `alerts evaluate|history` → alerts evaluate
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        alternatives = rest[0].split("|")
        if not subs or alternatives[0] not in subs[0].choices:
            break
        assert [a for a in alternatives if a not in subs[0].choices] == [], f"{example}: no such subcommand"
        parser = subs[0].choices[alternatives[0]]
        rest.pop(0)
    shown = parser.format_help()  # what `--help` prints
    for word in rest:
        for part in word.strip("[]").split("|"):
            if part.startswith("-") or "|" in word or re.fullmatch(r"[A-Z][A-Z_]+", part):
                assert re.search(rf"(?<![\w-]){re.escape(part)}(?![\w-])", shown), f"{example}: {part} not in\n{shown}"


# --- the examples run here -----------------------------------------------------------------------------


class Site(NamedTuple):
    dir: Path
    incident: str  # the drill's incident, by the 8 characters `incidents` prints


@pytest.fixture(scope="module")
def hook():
    with RecordingReceiver() as rx:
        yield rx


@pytest.fixture
def site(analysed_kill_master, hook, tmp_path, monkeypatch) -> Site:
    """The examples' folder (the cwd): brokerscope.yaml over a copy of the analysed drill (receiver
    `oncall`: the hook; the dashboard on a free port), its recording as incident.jsonl.gz; c.yaml the
    same with amq-a's GC log gc.log (a corpus log with 2.7 s pauses) and session-ms 6 s. `analyze`
    here runs incrementally (nothing new) in the session's warm Spark: about 1.5 s."""
    analysed_kill_master.copy_to(tmp_path / "lh")
    config = {**analysed_kill_master.data, "lakehouse": "./lh", "dashboard": {"port": free_port()},
              "alerts": {"receivers": [{"name": "oncall", "type": "webhook", "url": f"{hook.url}/hook"}]}}
    (tmp_path / "brokerscope.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    config["targets"] = [t | {"gc_logs": ["gc.log*"], "gc": {"zk_session_ms": 6000}} if t["name"] == "amq-a" else t
                         for t in config["targets"]]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    shutil.copy(ROOT / "tests" / "fixtures" / "drill_kill_master.jsonl.gz", tmp_path / "incident.jsonl.gz")
    if CORPUS is not None:
        shutil.copy(CORPUS / LONG_SERIAL, tmp_path / "gc.log")
    monkeypatch.chdir(tmp_path)
    short = Lakehouse(tmp_path / "lh").read("incidents").column("incident_id")[0].as_py()[:8]
    return Site(tmp_path, short)


def brokerscope(form: str, site: Site, capsys) -> tuple[int, str, str]:
    """Run one example line, its placeholders filled in; (exit code, stdout, stderr)."""
    argv = [PLACEHOLDERS.get(w, w).format(incident=site.incident) for w in shlex.split(form)[1:]]
    try:
        rc = main(argv)
    except SystemExit as e:  # --version
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("form", list(RUN), ids=str)
def test_example_runs_and_says_what_it_should(form, site, capsys):
    if CORPUS is None and ("gc.log" in form or "c.yaml" in form):
        pytest.skip(NO_CORPUS)
    expect = RUN[form]
    rc, out, err = brokerscope(form, site, capsys)
    assert rc == expect.rc, f"{form}: exit {rc}\n{err[-3000:]}"
    text = out + err + ((site.dir / expect.file).read_text() if expect.file else "")
    assert [s for s in expect.says if s not in text] == [], f"{form}:\n{text[-3000:]}"
    assert [s for s in expect.not_says if s in text] == [], f"{form}:\n{text[-3000:]}"
    if re.search(r"(-o|--format) json", form):
        json.loads(out)  # stdout is the document, and nothing else


def test_readme_incident_excerpt_is_what_timeline_prints(site, capsys):
    excerpt = next(block for block in fenced_blocks() if block and block[0] == "=== incidents ===")
    assert main(["timeline", "-c", "brokerscope.yaml"]) == 0
    assert "\n".join(excerpt) in capsys.readouterr().out


# --- examples that take longer or need the lab: the tests ELSEWHERE points to here ---------------------


def test_make_targets_run_what_the_readme_says():
    """`make demo` is `python -m brokerscope demo` after setup; `make test` the whole suite in one xdist run, what .ci/run runs."""
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    dry = {}
    for target in sorted({e.split()[1] for e in readme_examples() if e.startswith("make ")}):
        # as a user types it, also when this test runs inside `make test` (a parent make's
        # MAKELEVEL/MAKEFLAGS would add "make[1]: Entering directory" lines and its flags)
        env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
        r = subprocess.run(["make", "-n", target], check=False, cwd=ROOT, capture_output=True, text=True, timeout=60,
                           env=env)
        assert r.returncode == 0, f"make {target}: {r.stderr}"
        dry[target] = r.stdout
    assert dry["demo"].splitlines() == ["bash infra/setup.sh", "python3 -m brokerscope demo"]
    assert "-m pytest -q -n 2 --dist loadgroup" in dry["test"]
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")


def test_dashboard_serves_the_analysed_drill_until_ctrl_c(site):
    """`brokerscope dashboard -c brokerscope.yaml`, a real process on the config's port: the overview
    and the drill's post-incident report; Ctrl-C stops it, exit 0."""
    port = yaml.safe_load((site.dir / "brokerscope.yaml").read_text())["dashboard"]["port"]
    proc = subprocess.Popen([sys.executable, "-m", "brokerscope", "dashboard", "-c", "brokerscope.yaml"], cwd=site.dir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline, page = time.monotonic() + 90, None
        while page is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/report/{site.incident}.html", timeout=10) as r:
                    page = r.read().decode()
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)
                time.sleep(0.2)
        assert TITLE in page
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and f"brokerscope dashboard on http://127.0.0.1:{port} (lakehouse" in err, err


def test_drill_all_runs_every_drill_in_turn_and_exits_1_below_the_bar(tmp_path, monkeypatch, capsys):
    """`brokerscope drill all`'s own part (each drill runs in the tests DRILLS names): every drill in
    order, a PASS/FAIL summary and summary.json, exit 1 when one misses the bar."""
    from brokerscope import drill_cli
    from brokerscope.drills import DRILLS as NAMES

    ran = []
    monkeypatch.setattr(drill_cli, "run_one", lambda name, workdir, interval: ran.append((name, workdir, interval)) or {
        "drill": name, "passed": name != "gc-pause", "boundary_errors_intervals": {"start": -0.25}})
    assert main(["drill", "all", "--workdir", str(tmp_path)]) == 1
    assert ran == [(name, tmp_path / name, 0.5) for name in NAMES]
    out = capsys.readouterr().out
    assert "PASS  kill-master" in out and "FAIL  gc-pause" in out and "worst boundary 0.25 intervals" in out
    assert list(json.loads((tmp_path / "summary.json").read_text())) == list(NAMES)
    ran.clear()  # a family: its drills only, in the same order
    assert main(["drill", "artemis-all", "--workdir", str(tmp_path / "a")]) == 0
    assert ran == [(name, tmp_path / "a" / name, 0.5) for name in NAMES if name.startswith("artemis-")]


@pytest.mark.slow
def test_lab_start_status_stop_by_hand(tmp_path, monkeypatch, capsys):
    """`brokerscope lab start|stop|status` in ./var/lab: a real ActiveMQ pair, one master, stopped by PID."""
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["lab", "start"]) == 0
        assert "failover url: failover:(" in capsys.readouterr().out
        for _ in range(20):  # each role is one Jolokia read (2 s timeout): slow to answer on a loaded machine
            assert main(["lab", "status"]) == 0
            roles = sorted(re.findall(r"role=(\w+)", capsys.readouterr().out))
            if roles == ["master", "slave"]:
                break
            time.sleep(0.5)
        assert roles == ["master", "slave"]
    finally:
        assert main(["lab", "stop"]) == 0
    assert capsys.readouterr().out.startswith("stopped pids [")
    assert main(["lab", "status"]) == 1 and "nothing recorded" in capsys.readouterr().out


@pytest.mark.slow
def test_simulate_then_score(tmp_path, monkeypatch, capsys, spark):
    """The README's two lines in turn: write the split brain, then replay, analyse and score it (Spark)."""
    monkeypatch.chdir(tmp_path)
    lines = ["brokerscope simulate split-brain --kind artemis --out ./sim/sb --split-length 6s",
             "brokerscope simulate score ./sim/sb"]
    assert all(line in readme_examples() for line in lines)
    site = Site(tmp_path, "")
    assert brokerscope(lines[0], site, capsys)[0] == 0
    rc, out, err = brokerscope(lines[1], site, capsys)
    assert rc == 0 and out.startswith("scenario split-brain (artemis)") and "PASS: meets the bar" in out, out + err[-3000:]
    assert re.search(r"split_brain +split_brain_windows +1 +1 +100 %", out), out
