"""Pytest fixtures/helpers for the real ActiveMQ lab and the lab's Jolokia agent (no mocks).

Plain module (not a conftest): import the fixtures you use into the test module, e.g.::

    from lab_fixtures import activemq_pair, agent_jar, requires_lab  # noqa: F401

Fixtures:
    agent_jar       (session) the official Jolokia JVM agent jar (fetched by infra/setup.sh)
    agent_jvm       (module)  a bare JVM running the agent (no broker), see tests/servers.py AgentJVM
    activemq_pair   (module)  a started ActiveMQPair (amq-a master, amq-b slave), stopped afterwards
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from infra.artifacts import JOLOKIA_AGENT, verified
from infra.lab import ACTIVEMQ_HOME, ActiveMQPair
from tests.servers import AgentJVM
from tests.servers import agent_jvm as start_agent_jvm

_missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
if not (ACTIVEMQ_HOME / "bin" / "activemq.jar").exists():
    _missing.append(str(ACTIVEMQ_HOME / "bin" / "activemq.jar"))
if verified(JOLOKIA_AGENT) is None:
    _missing.append(f"{JOLOKIA_AGENT.coordinates} (python -m infra.artifacts)")

#: skip marker for tests that need the Debian packages, the JDK and the fetched agent (see infra/setup.sh)
requires_lab = pytest.mark.skipif(bool(_missing), reason=f"lab prerequisites missing: {_missing}")


@pytest.fixture(scope="session")
def agent_jar() -> Path:
    if _missing:
        pytest.skip(f"lab prerequisites missing: {_missing}")
    found = verified(JOLOKIA_AGENT)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def agent_jvm(agent_jar: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentJVM]:
    with start_agent_jvm(tmp_path_factory.mktemp("agent-jvm")) as jvm:
        yield jvm


@pytest.fixture(scope="module")
def activemq_pair(agent_jar: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ActiveMQPair]:
    """A started pair under a pytest temp dir (``BROKERSCOPE_LAB_WORKDIR`` overrides the location)."""
    base = os.environ.get("BROKERSCOPE_LAB_WORKDIR")
    workdir = Path(base) / f"pair-{os.getpid()}" if base else tmp_path_factory.mktemp("activemq-pair")
    pair = ActiveMQPair(workdir)
    try:
        pair.start(timeout=90)
        yield pair
    finally:
        pair.stop()
