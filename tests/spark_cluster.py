"""A real Spark standalone cluster on loopback for tests: a master and workers started from
pyspark's own `bin/spark-class`, small memory, stopped by PID."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

from infra.processes import free_port

WORKER_MEMORY = "768m"
EXECUTOR_MEMORY = "512m"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def cluster_env(conf_dir: Path) -> dict[str, str]:
    """What every process of the cluster, and a driver submitting to it, runs with."""
    repo = str(Path(__file__).resolve().parent.parent)
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),  # spark-defaults.conf: executor memory and cores
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",  # master and worker JVMs
        "PYSPARK_PYTHON": sys.executable,  # executors run this checkout's Python and code
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
    }


@contextmanager
def daemon(cls: str, args: list[str], env: dict[str, str], log: Path, ready: str, timeout: float = 60) -> Iterator[int]:
    """Run `spark-class <cls> <args>` until the log says `ready` (a regex); yield its PID; stop it."""
    out = open(log, "wb")
    proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), cls, *args], env=env,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not re.search(ready, log.read_text(errors="replace")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{cls} did not start: {log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield proc.pid
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)  # spark-class execs java: this PID is the JVM
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        out.close()


@contextmanager
def standalone_cluster(workdir: Path, workers: int = 2) -> Iterator[tuple[str, dict[str, str]]]:
    """Master + `workers` workers (1 core each) on 127.0.0.1; yields the master URL and the
    environment a driver needs to use it (e.g. `brokerscope analyze` with
    BROKERSCOPE_SPARK_MASTER set to the URL)."""
    conf = workdir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.executor.memory {EXECUTOR_MEMORY}\nspark.executor.cores 1\nspark.cores.max {workers}\n")
    env = cluster_env(conf)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    with ExitStack() as stack:
        stack.enter_context(daemon(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())],
            env, workdir / "master.log", r"I have been elected leader|ALIVE"))
        for i in range(workers):
            work = workdir / f"worker{i}"
            work.mkdir(exist_ok=True)
            stack.enter_context(daemon(
                "org.apache.spark.deploy.worker.Worker",
                [url, "--host", "127.0.0.1", "--cores", "1", "--memory", WORKER_MEMORY,
                 "--webui-port", str(free_port()), "--work-dir", str(work)],
                env, workdir / f"worker{i}.log", r"Successfully registered with master"))
        yield url, {**env, "BROKERSCOPE_SPARK_MASTER": url}
