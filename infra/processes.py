"""The JVM processes of a lab: found, signalled and recorded by pid, never by name.

Every lab JVM carries two marker properties (``marker_args``: its lab's workdir and its own name), so
``is_our_java`` can tell from ``/proc/<pid>/cmdline`` that a pid is still that JVM before any signal
(a recycled pid belongs to someone else). ``LabProcesses`` is the bookkeeping the labs share (the
children they started, ``<workdir>/pids.json``, the ``atexit`` stop, stop/kill/wait); a lab adds how
to start its JVMs and what their roles are. ``stop_recorded`` stops what another process recorded.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

from infra.lab_logs import tail

__all__ = ["LabError", "LabProcesses", "cmdline", "free_port", "is_our_java", "java_tool", "marker_args",
           "only_one", "proc_state", "signal_pid", "stop_recorded"]


class LabError(RuntimeError):
    """Lab could not reach the requested state (message includes the broker log tail when useful)."""


_HANDED_OUT: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, never the same twice in this process: the kernel may give a
    just-released port to the next bind(0), and a lab hands out several before any is bound (a
    waiting ActiveMQ slave binds its connectors only when it becomes master: one got its own
    Jolokia port as its STOMP port and exited with "Address already in use")."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).exists():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise LabError(f"'{name}' not found (install openjdk-17-jdk-headless; see infra/setup.sh)")
    return found


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [p.decode("utf-8", "replace") for p in raw.split(b"\0") if p]


def proc_state(pid: int) -> str | None:
    """Single-letter state from /proc/<pid>/stat (R, S, T, Z, ...) or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def rss_mib(pid: int) -> float | None:
    """Resident memory of a process in MiB, from /proc/<pid>/status (VmRSS); None if gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    return next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmRSS:")), None)


def marker_args(workdir: Path, name: str) -> tuple[str, str]:
    return f"-Dbrokerscope.lab={workdir}", f"-Dbrokerscope.broker={name}"


def is_our_java(pid: int, workdir: Path, name: str) -> bool:
    """True if pid is alive (not a zombie) and is the java process of ``name`` in ``workdir``."""
    if proc_state(pid) in (None, "Z", "X"):
        return False
    args = cmdline(pid)
    if not args or not os.path.basename(args[0]).startswith("java"):
        return False
    return all(m in args for m in marker_args(workdir, name))


def signal_pid(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def only_one(names: Iterable[str], state: Callable[[str], str], wanted: str) -> str | None:
    """The single name whose ``state`` is ``wanted``; None when none is, or several (split brain) are."""
    found = [n for n in names if state(n) == wanted]
    return found[0] if len(found) == 1 else None


def stop_recorded(workdir: Path, grace: float = 15.0, key: str = "brokers") -> list[int]:
    """Stop the processes a lab recorded under `key` in ``<workdir>/pids.json`` (each verified via
    /proc/<pid>/cmdline): SIGTERM (after SIGCONT: a stopped JVM must run to handle it), SIGKILL
    after `grace`. For a lab started by another process (CLI). Returns the pids that were signalled.
    """
    workdir = Path(workdir).resolve()
    pids_file = workdir / "pids.json"
    try:
        recs = json.loads(pids_file.read_text()).get(key, {})
    except (OSError, ValueError):
        recs = {}
    targets = {name: int(rec["pid"]) for name, rec in recs.items() if is_our_java(int(rec["pid"]), workdir, name)}
    for pid in targets.values():
        signal_pid(pid, signal.SIGTERM)
        signal_pid(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(is_our_java(p, workdir, n) for n, p in targets.items()):
        time.sleep(0.05)
    for name, pid in targets.items():
        if is_our_java(pid, workdir, name):
            signal_pid(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        pids_file.unlink()
    return list(targets.values())


S = TypeVar("S")


class Recorded(Protocol):
    """What a lab keeps per process: its pid (0 before the first start) and its pids.json entry."""

    pid: int

    def to_json(self) -> dict[str, Any]: ...


class LabProcesses:
    """Named JVM processes of one lab, recorded in ``<workdir>/pids.json`` under ``recorded`` and
    verified against ``/proc/<pid>/cmdline`` before any signal.

    A subclass sets ``workdir`` and ``stop_grace``, hands its records to ``_init_processes``, starts
    its JVMs with ``_launch`` and says in ``start`` when they are ready.
    """

    kind = "broker"  # the word for one process in messages
    recorded = "brokers"  # the key of pids.json
    cli = "infra.lab"  # the module whose CLI stops a lab another process started
    workdir: Path
    stop_grace: float

    def _init_processes(self, records: MutableMapping[str, Recorded], *, forget_on_stop: bool) -> None:
        """``records``: the lab's own dict of its processes by name (the last start of each; a pid of 0:
        never started), emptied by ``stop()`` when ``forget_on_stop``."""
        self._records = records
        self._forget_on_stop = forget_on_stop
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._atexit_registered = False

    def start(self) -> Any:
        raise NotImplementedError

    def _pids_extra(self) -> dict[str, Any]:
        """More top-level keys for pids.json."""
        return {}

    # ---------------------------------------------------------------- public

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pids_file(self) -> Path:
        return self.workdir / "pids.json"

    def is_running(self, name: str) -> bool:
        """True while the JVM this object started as ``name`` exists and is not a zombie."""
        return self._alive(name)

    def stop(self) -> None:
        """SIGTERM (after SIGCONT: a paused JVM must run to handle it) every process this object
        started, by verified pid; SIGKILL what is left after ``stop_grace`` s; reap. Idempotent.
        Processes recorded by another object are left alone (see :func:`stop_recorded`)."""
        started = {n: r.pid for n, r in self._records.items() if r.pid}
        pending = {n: p for n, p in started.items() if self._verify(n, p)}
        for pid in pending.values():
            signal_pid(pid, signal.SIGCONT)
            signal_pid(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_grace
        while pending and time.monotonic() < deadline:
            pending = {n: p for n, p in pending.items() if self._exists(n, p)}
            time.sleep(0.05)
        for name, pid in pending.items():
            if self._verify(name, pid):
                signal_pid(pid, signal.SIGKILL)
        for name, pid in pending.items():
            self._wait_gone(name, pid, 10)
        for proc in self._procs.values():
            proc.poll()  # reap children that had already exited (no zombies left behind)
        self._procs.clear()
        if self._forget_on_stop:
            self._records.clear()
        if started:  # a lab that never started leaves another object's pids.json alone
            with contextlib.suppress(OSError):
                self.pids_file.unlink()
        self._unregister_atexit()

    def detach(self) -> None:
        """Forget the running processes without stopping them (CLI ``start``); ``pids.json`` stays."""
        self._unregister_atexit()
        self._procs.clear()

    # ---------------------------------------------------------------- for the lab

    def _refuse_foreign(self, name: str) -> None:
        """Before a start: a JVM of this name that another process started must be stopped first."""
        rec = self._read_pids().get(name)
        if rec and is_our_java(int(rec["pid"]), self.workdir, name):
            raise LabError(f"{self.kind} {name} of {self.workdir} already runs as pid {rec['pid']} (started by "
                           f"another process); stop it first: python -m {self.cli} stop --workdir {self.workdir}")

    def _launch(self, name: str, cmd: list[str], log: Path, cwd: Path, env: Mapping[str, str] | None = None,
                banner: str = "") -> tuple[subprocess.Popen[bytes], float]:
        """Exec ``cmd`` in its own session (a Ctrl-C of ours does not reach it), stdout+stderr appended
        to ``log`` after a banner line; registers the atexit stop. Returns the child and its start time."""
        self._register_atexit()
        with open(log, "ab") as out:
            out.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} lab start {name}{banner}\n".encode())
            out.flush()
            started = time.time()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=cwd, start_new_session=True, close_fds=True)
        self._procs[name] = proc
        return proc, started

    def _wait_state(self, name: str, state: Callable[[float], S], pred: Callable[[S], bool], timeout: float,
                    what: str, *, log: Path, every: float, down: Any = "down", timeout_log: Path | None = None,
                    stamp: str = "seen") -> float:
        """Poll ``state(seconds left)`` every ``every`` s until ``pred`` holds; time.time() when first seen
        (``stamp="seen"``: the answer was in) or when the poll that saw it was asked (``"asked"``: the
        time a scrape is stamped with — a JVM still starting can take a second to answer a request
        its socket already accepted). Fails at once when the JVM exits (unless ``down`` is what is
        awaited, ``log``'s tail tells why), else after ``timeout`` (with the tail of ``timeout_log``,
        default ``log``)."""
        deadline = time.monotonic() + timeout
        while True:
            asked = time.time()
            last = state(deadline - time.monotonic())
            if pred(last):
                return asked if stamp == "asked" else time.time()
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None and not pred(down):
                raise LabError(f"{self.kind} {name} exited with code {proc.returncode} while waiting {what}.\n"
                               f"--- tail of {log} ---\n{tail(log)}")
            if time.monotonic() >= deadline:
                log = timeout_log or log
                raise LabError(f"timeout after {timeout:.1f}s waiting for {name} {what} (last: {last}).\n"
                               f"--- tail of {log} ---\n{tail(log)}")
            time.sleep(every)

    def _send(self, name: str, sig: int, wait: bool) -> tuple[int, float]:
        """``sig`` to the verified pid of ``name`` (SIGCONT first for SIGTERM); with ``wait``, until it
        is gone. Returns (pid, time.time() of the send)."""
        pid = self._require_pid(name)
        if sig == signal.SIGTERM:
            signal_pid(pid, signal.SIGCONT)
        sent = time.time()
        os.kill(pid, sig)
        if wait:
            self._wait_gone(name, pid, 30)
            self._write_pids()
        return pid, sent

    def _terminate(self, name: str, sig: int, grace: float) -> None:
        """``sig``, then SIGKILL after ``grace`` (a start that failed half way)."""
        pid = self._pid_of(name)
        if not pid or not self._verify(name, pid):
            return
        signal_pid(pid, sig)
        with contextlib.suppress(LabError):
            self._wait_gone(name, pid, grace)
        if self._verify(name, pid):
            signal_pid(pid, signal.SIGKILL)
            self._wait_gone(name, pid, 10)

    def _pid_of(self, name: str) -> int:
        rec = self._records.get(name)
        return rec.pid if rec is not None else 0

    def _verify(self, name: str, pid: int) -> bool:
        return is_our_java(pid, self.workdir, name)

    def _exists(self, name: str, pid: int) -> bool:
        """Reap if it is our child; True while the process exists (and is ours)."""
        proc = self._procs.get(name)
        if proc is not None and proc.pid == pid:
            return proc.poll() is None
        return self._verify(name, pid)

    def _alive(self, name: str) -> bool:
        pid = self._pid_of(name)
        return bool(pid) and self._exists(name, pid)

    def _require_pid(self, name: str) -> int:
        pid = self._pid_of(name)
        if not pid or not self._verify(name, pid):
            raise LabError(f"{self.kind} {name} is not running")
        return pid

    def _wait_gone(self, name: str, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._exists(name, pid):
            if time.monotonic() >= deadline:
                raise LabError(f"{self.kind} {name} (pid {pid}) did not exit within {timeout:g}s")
            time.sleep(0.02)

    def _register_atexit(self) -> None:
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True

    def _unregister_atexit(self) -> None:
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def _read_pids(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.pids_file.read_text())
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in data.get(self.recorded, {}).items() if isinstance(v, dict)}

    def _write_pids(self) -> None:
        """Atomically (a reader never sees half a file): the live processes and the lab's extras."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        live = {n: r.to_json() for n, r in self._records.items() if r.pid and self._exists(n, r.pid)}
        tmp = self.pids_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"workdir": str(self.workdir), self.recorded: live, **self._pids_extra()}, indent=2))
        os.replace(tmp, self.pids_file)
