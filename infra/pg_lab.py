"""A throw-away PostgreSQL 15 cluster on loopback (Debian ``postgresql-15``), for the JDBC lab.

    from infra.pg_lab import PgCluster
    with PgCluster(Path("/tmp/pg")) as pg:      # initdb (trust auth) + postgres on a free port
        pg.jdbc_url()                           # jdbc:postgresql://127.0.0.1:<port>/postgres?user=postgres

Never touches the system cluster: its own data directory, its own port, its own Unix socket
directory; logs in ``<workdir>/postgres.log``. PostgreSQL refuses to run as root, so when we are
root the server runs as the ``postgres`` user, and its data and socket directories go to a fresh
temporary directory owned by that user (``<workdir>`` may sit below a directory only root may
enter, e.g. pytest's); that directory is removed by ``stop()``. Otherwise they are
``<workdir>/data`` and ``<workdir>/run`` and stay. The postmaster is our direct child (Popen) and is stopped by that PID (SIGINT = fast shutdown,
SIGKILL after a grace period).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from infra.lab_logs import tail
from infra.processes import LabError, free_port

__all__ = ["PG_BIN", "PgCluster"]

PG_BIN = Path(os.environ.get("BROKERSCOPE_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = "postgres"


def _run_as() -> dict:
    """Popen kwargs to run as the ``postgres`` user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return {}
    try:
        pw = pwd.getpwnam(PG_USER)
    except KeyError:
        raise LabError("running as root and there is no 'postgres' user to run PostgreSQL as "
                       "(apt-get install postgresql-15, or run as an ordinary user)") from None
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


def _chown_tree(path: Path, kwargs: dict) -> None:
    if not kwargs:
        return
    for p in [path, *path.rglob("*")]:
        os.chown(p, kwargs["user"], kwargs["group"])


class PgCluster:
    """initdb + postgres in ``workdir`` on ``port`` (a free one unless given)."""

    def __init__(self, workdir: Path, port: int = 0, start_timeout: float = 60) -> None:
        self.workdir = Path(workdir).resolve()
        self.port = port or free_port()
        self.start_timeout = start_timeout
        self.log = self.workdir / "postgres.log"
        self._as_pg = _run_as()
        # a directory the postgres user can reach when we are root; removed again by stop()
        self._scratch = Path(tempfile.mkdtemp(prefix="brokerscope-pg-")) if self._as_pg else None
        base = self._scratch or self.workdir
        self.data_dir = base / "data"
        self.socket_dir = base / "run"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def jdbc_url(self, port: int | None = None) -> str:
        """JDBC URL of the ``postgres`` database; ``port`` to go through a proxy instead."""
        return f"jdbc:postgresql://127.0.0.1:{port or self.port}/postgres?user={PG_USER}"

    def __enter__(self) -> "PgCluster":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> "PgCluster":
        missing = [str(PG_BIN / b) for b in ("initdb", "postgres") if not (PG_BIN / b).exists()]
        if missing:
            raise LabError(f"PostgreSQL binaries missing: {missing} (apt-get install postgresql-15, "
                           "or set BROKERSCOPE_PG_BIN)")
        as_pg = self._as_pg
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(as_pg)
        _chown_tree(self.socket_dir, as_pg)
        atexit.register(self.stop)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [str(PG_BIN / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
                 "-k", str(self.socket_dir), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                 "-c", "max_connections=200"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, **as_pg,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace: float = 15) -> None:
        """Fast shutdown by PID (SIGINT), SIGKILL after ``grace`` s. Idempotent."""
        atexit.unregister(self.stop)
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def _initdb(self, as_pg: dict) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        _chown_tree(self.data_dir.parent, as_pg)
        res = subprocess.run(
            [str(PG_BIN / "initdb"), "-D", str(self.data_dir), "-U", PG_USER, "--auth=trust",
             "--no-sync", "-E", "UTF8", "--locale=C"],
            capture_output=True, text=True, **as_pg,
        )
        if res.returncode != 0:
            raise LabError(f"initdb of {self.data_dir} failed ({res.returncode}):\n{res.stdout}{res.stderr}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise LabError(f"postgres exited with code {self.proc.returncode} on start.\n"
                               f"--- tail of {self.log} ---\n{tail(self.log)}")
            if "ready to accept connections" in tail(self.log, 20) and self._accepts():
                return
            time.sleep(0.1)
        raise LabError(f"postgres did not get ready within {self.start_timeout:.0f}s.\n"
                       f"--- tail of {self.log} ---\n{tail(self.log)}")

    def _accepts(self) -> bool:
        with contextlib.suppress(OSError):
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        return False


def pg_available() -> bool:
    return (PG_BIN / "postgres").exists() and shutil.which("java") is not None
