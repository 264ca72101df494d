"""Pytest fixtures/helpers for the real ActiveMQ lab and the Jolokia agent (no mocks).

Plain module (not a conftest): import the fixtures you use into the test module, e.g.::

    from lab_fixtures import activemq_pair, agent_jar, requires_lab  # noqa: F401

Fixtures:
    agent_jar       (session) path of the built read-only Jolokia agent jar
    agent_jvm       (module)  a bare JVM running the agent (no broker), see AgentJVM
    activemq_pair   (module)  a started ActiveMQPair (amq-a master, amq-b slave), stopped afterwards
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from infra.lab import (ACTIVEMQ_HOME, JOLOKIA_CORE_JAR, JSON_SIMPLE_JAR, ActiveMQPair, agent_jvm_arg, build_agent,
                       jolokia_request)

_missing = [
    str(p)
    for p in (ACTIVEMQ_HOME / "bin" / "activemq.jar", JOLOKIA_CORE_JAR, JSON_SIMPLE_JAR)
    if not p.exists()
] + [tool for tool in ("java", "javac", "jar") if shutil.which(tool) is None]

#: skip marker for tests that need the Debian packages / JDK (see infra/setup.sh)
requires_lab = pytest.mark.skipif(bool(_missing), reason=f"lab prerequisites missing: {_missing}")


class AgentJVM:
    """A bare JVM (``java -javaagent:agent.jar=... -jar agent.jar``) that serves Jolokia until stopped.

    The agent's ``main`` blocks until stdin reaches EOF, so closing stdin ends the JVM.
    """

    def __init__(self, jar: Path, workdir: Path, **agent_opts: Any) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port_file = workdir / "jolokia.port"
        self.port_file.unlink(missing_ok=True)
        self.log = workdir / "agent-jvm.log"
        cmd = [
            shutil.which("java") or "java",
            "-Xmx64m",
            "-Dsun.net.httpserver.nodelay=true",
            agent_jvm_arg(jar, port=0, port_file=self.port_file, **agent_opts),
            "-jar",
            str(jar),
        ]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while not self.port_file.exists() or not self.port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"agent JVM did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text().strip())
        self.url = f"http://127.0.0.1:{self.port}/jolokia"

    def request(self, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return jolokia_request(self.url, body, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        elif self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def __enter__(self) -> "AgentJVM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def agent_jar() -> Path:
    if _missing:
        pytest.skip(f"lab prerequisites missing: {_missing}")
    return build_agent()


@pytest.fixture(scope="module")
def agent_jvm(agent_jar: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentJVM]:
    with AgentJVM(agent_jar, tmp_path_factory.mktemp("agent-jvm")) as jvm:
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
