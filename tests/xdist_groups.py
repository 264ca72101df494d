"""Test groups for `pytest -n 2 --dist loadgroup` (make test's slow tier): every lab test (marker
`lab`: real brokers, ZooKeeper, Kafka, PostgreSQL, Prometheus, where timing matters) in one group,
so labs run one at a time on one worker while the other worker runs the rest; every other test
with its file (module fixtures built once), unless it names an `xdist_group` itself.

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


def finish(config: pytest.Config) -> None:
    folder = config.stash.get(FOLDER, None)
    if folder:
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


class GroupScheduling(LoadScopeScheduling):
    """LoadScopeScheduling whose scopes are the groups the workers wrote (largest group first)."""

    _groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            self._groups = {}
            for path in sorted(Path(os.environ.get(ENV, "/nonexistent")).glob("*.json")):
                self._groups.update(json.loads(path.read_text()))
        return self._groups.get(nodeid) or file_of(nodeid)


FOLDER = pytest.StashKey[str]()
