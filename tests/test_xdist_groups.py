"""make test schedules every lab test on one worker and hands groups out longest first
(tests/xdist_groups.py): checked with a real `pytest -n 2 --dist loadgroup` over three files, each
with a lab test and plain tests, and on the ordering and the durations file alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.xdist_groups import known_durations, longest_first, store_durations

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = '''
import pytest
from tests import xdist_groups

def pytest_addoption(parser):
    xdist_groups.add_options(parser)

def pytest_configure(config):
    config.addinivalue_line("markers", "lab: lab test")
    xdist_groups.start(config)

def pytest_unconfigure(config):
    xdist_groups.finish(config)

@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session):
    xdist_groups.write_groups(session)

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return xdist_groups.GroupScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None
'''

MODULE = '''
import time
import pytest

@pytest.mark.lab
def test_lab():
    time.sleep(0.3)

@pytest.mark.parametrize("i", range(6))
def test_plain(i):
    time.sleep(0.05)
'''


def test_lab_tests_of_every_file_run_on_one_worker_and_files_stay_whole(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("test_one.py", "test_two.py", "test_three.py"):
        (tmp_path / name).write_text(MODULE)
    durations = tmp_path / "durations.json"
    durations.write_text('{"test_three.py": 100, "lab": 50}')  # test_three first, then the lab group
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "BROKERSCOPE_GROUP_DURATIONS": str(durations)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                          "-v", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path), "--store-group-durations"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    ran = re.findall(r"\[(gw\d)\] .*?PASSED (\S+?)::(test_\w+)", out.stdout)
    assert len(ran) == 21, out.stdout
    lab_workers = {w for w, _f, t in ran if t == "test_lab"}
    assert len(lab_workers) == 1, ran  # the three lab tests: one worker, one at a time
    for f in {f for _w, f, _t in ran}:
        assert len({w for w, ff, t in ran if ff == f and t != "test_lab"}) == 1, (f, ran)  # a file stays whole
    first = {w: (f, t) for w, f, t in reversed(ran)}  # each worker's first test: the two longest groups
    assert set(first.values()) == {("test_three.py", "test_plain"), ("test_one.py", "test_lab")}, ran
    stored = known_durations(durations)  # the run's own figures replace the ones it was given
    assert set(stored) == {"lab", "test_one.py", "test_two.py", "test_three.py"} and 0.9 <= stored["lab"] < 50, stored


def test_groups_go_out_longest_first_and_unknown_groups_count_a_second_per_test():
    # lab 500 s, b.py unknown (3 tests: 3 s), a.py 2.5 s, c.py and d.py unknown (1 test: 1 s, in their order)
    groups = {"a.py": 2, "lab": 1, "c.py": 1, "b.py": 3, "d.py": 1}
    assert longest_first(groups, {"lab": 500.0, "a.py": 2.5}) == ["lab", "b.py", "a.py", "c.py", "d.py"]


def test_stored_durations_add_up_a_groups_tests_and_replace_the_old_figures(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text('{"gone.py": 7.0, "lab": 1.0}')
    store_durations({"lab::a": 2.04, "lab::b": 3.0, "x.py::t": 0.5}, {"lab::a": "lab", "lab::b": "lab"}, path)
    assert known_durations(path) == {"lab": 5.0, "x.py": 0.5}  # a group that is gone keeps no place
    path.write_text("not json")
    assert known_durations(path) == {}  # unreadable: every group unknown, the run still schedules
