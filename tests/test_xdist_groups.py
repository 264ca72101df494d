"""make test's slow tier schedules every lab test on one worker (tests/xdist_groups.py): checked
with a real `pytest -n 2 --dist loadgroup` over two files, each with a lab test and plain tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = '''
import pytest
from tests import xdist_groups

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
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                          "-v", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    ran = re.findall(r"\[(gw\d)\] .*?PASSED (\S+?)::(test_\w+)", out.stdout)
    assert len(ran) == 21, out.stdout
    lab_workers = {w for w, _f, t in ran if t == "test_lab"}
    assert len(lab_workers) == 1, ran  # the three lab tests: one worker, one at a time
    for f in {f for _w, f, _t in ran}:
        assert len({w for w, ff, t in ran if ff == f and t != "test_lab"}) == 1, (f, ran)  # a file stays whole
