"""Test groups for `pytest -n 2 --dist loadgroup` (make test): every lab test (marker `lab`: real
brokers, ZooKeeper, Kafka, PostgreSQL, Prometheus, where timing matters) in one group, so labs run
one at a time on one worker while the other worker runs the rest; every other test with its file
(module fixtures built once), unless it names an `xdist_group` itself.

Groups are handed out longest first (by tests/group_durations.json, seconds per group from an
earlier whole run), so the two workers finish together instead of one idling behind the other's
long tail (greedy longest-first list scheduling). A group the file does not know counts one second
per test. Refresh the file after adding or moving slow tests:
`python -m pytest -n 2 --dist loadgroup --store-group-durations` (a whole run: the file then holds
that run's groups only, passed or not, what they cost).

Our own side channel, not pytest-xdist's: xdist 3.8 tags groups by rewriting node ids, which
pytest 9.2 ignores (pytest-dev/pytest-xdist#1386: tests silently spread as if ungrouped). Each
worker writes {node id: group} of what it collected into a folder the controller created; the
controller's scheduler reads it."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

ENV = "BROKERSCOPE_XDIST_GROUPS"  # the folder; set by the controller, inherited by its workers
DURATIONS = Path(os.environ.get("BROKERSCOPE_GROUP_DURATIONS") or Path(__file__).with_name("group_durations.json"))
UNKNOWN_TEST_S = 1.0  # a group missing from DURATIONS: this much per test


def group_of(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    return "lab" if item.get_closest_marker("lab") else file_of(item.nodeid)


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def start(config: pytest.Config) -> None:
    """On the controller of a loadgroup run: the folder the workers write their groups into."""
    if not is_worker(config) and config.getvalue("dist") == "loadgroup" and config.getvalue("numprocesses"):
        config.stash[FOLDER] = os.environ[ENV] = tempfile.mkdtemp(prefix="brokerscope-xdist-groups-")
        if config.getoption("store_group_durations", False):
            config.pluginmanager.register(DurationRecorder(config), "brokerscope-group-durations")


def finish(config: pytest.Config) -> None:
    folder = config.stash.get(FOLDER, None)
    if folder:
        if config.getoption("store_group_durations", False):
            store_durations(config.stash.get(SPENT, {}), read_groups(Path(folder)))
        shutil.rmtree(folder, ignore_errors=True)


def write_groups(session: pytest.Session) -> None:
    """On a worker: {node id: group} of its collection (atomically: the controller may read it next)."""
    folder = os.environ.get(ENV)
    if not folder or not is_worker(session.config):
        return
    path = Path(folder) / f"{session.config.workerinput['workerid']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({item.nodeid: group_of(item) for item in session.items}))
    tmp.replace(path)


def add_options(parser: pytest.Parser) -> None:
    parser.addoption("--store-group-durations", action="store_true",
                     help=f"after a loadgroup run, write each group's seconds to {DURATIONS.name} (scheduling order)")


class DurationRecorder:
    """On the controller (every worker's reports reach it): the seconds each test took, setup,
    call and teardown together."""

    def __init__(self, config: pytest.Config):
        self.spent = config.stash[SPENT] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.spent[report.nodeid] = self.spent.get(report.nodeid, 0.0) + report.duration


def store_durations(spent: dict[str, float], groups: dict[str, str], path: Path = DURATIONS) -> None:
    if not spent:
        return
    totals: dict[str, float] = {}
    for nodeid, seconds in spent.items():
        group = groups.get(nodeid) or file_of(nodeid)
        totals[group] = totals.get(group, 0.0) + seconds
    # the run's own figures only: a group that no longer exists must not keep its old place
    path.write_text(json.dumps({g: round(s, 1) for g, s in sorted(totals.items())}, indent=1) + "\n")


def read_groups(folder: Path) -> dict[str, str]:
    groups: dict[str, str] = {}
    for path in sorted(folder.glob("*.json")):
        groups.update(json.loads(path.read_text()))
    return groups


def known_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        return {str(g): float(s) for g, s in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError):  # missing or unreadable: every group unknown
        return {}


def longest_first(groups: dict[str, int], durations: dict[str, float]) -> list[str]:
    """The groups ({group: number of tests}) in order of their expected seconds, longest first;
    ties keep their order."""
    expected = {g: durations.get(g, UNKNOWN_TEST_S * n) for g, n in groups.items()}
    return sorted(groups, key=lambda g: -expected[g])


class GroupScheduling(LoadScopeScheduling):
    """LoadScopeScheduling whose scopes are the groups the workers wrote, longest expected first."""

    _groups: dict[str, str] | None = None
    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            self._groups = read_groups(Path(os.environ.get(ENV, "/nonexistent")))
        return self._groups.get(nodeid) or file_of(nodeid)

    def _assign_work_unit(self, node) -> None:
        # the first assignment: order the work queue (built in collection order) longest first —
        # the queue, not the collection, since workers run tests by index into their own collection
        if not self._ordered:
            self._ordered = True
            order = longest_first({scope: len(tests) for scope, tests in self.workqueue.items()}, known_durations())
            for scope in order:
                self.workqueue.move_to_end(scope)
        super()._assign_work_unit(node)


FOLDER = pytest.StashKey[str]()
SPENT = pytest.StashKey[dict]()
