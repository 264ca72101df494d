"""Follow the GC logs of every target (`gc_logs` globs) into bronze_gc_lines, safely.

What "safely" means, and how:

* **Identity, not names.** A file is known by device + inode plus a fingerprint of its first line
  (so a recycled inode is noticed). JDK rotation renames (``gc.log`` → ``gc.log.3``; JDK 8
  ``gc.log.2.current`` → ``gc.log.2``) keep the identity, so a renamed file is read on from where
  it was left, whatever it is called now.
* **Truncation / rewrite in place.** A file shorter than the offset read so far, or whose bytes
  just before that offset changed, was truncated or rewritten (copytruncate, a JVM restarted
  without rotation): it is read again from 0 under a new generation (part of its ``file_id``), and
  counted.
* **Whole lines only.** A line is consumed once its newline has arrived; a partial last line waits.
  A line that is not text (NUL bytes, invalid UTF-8) or longer than ``gc.max_line_bytes`` becomes a
  row with ``error`` set (kept, counted, skipped by the parser) and reading goes on after it.
* **Offsets are committed after the rows.** One poll reads every file, writes the recording (if
  any), appends the rows to bronze_gc_lines, and only then commits the offsets. A kill -9 before
  the offset commit makes the next run read the same lines again; their rows have the same key
  (target, file_id, offset) and ``Lakehouse.append_new`` drops them. Nothing is lost (the offset
  never passes uncommitted rows) and nothing is duplicated (the key dedups).

Where the offsets live: a small JSON state file, replaced atomically (write a temporary file,
fsync, rename, fsync the folder). Not a Delta table, because the offsets are this process's
private bookkeeping, not a fact any other part reads (DESIGN: tables are the *shared* state); a
Delta commit every poll (about every second) would grow a transaction log that needs
checkpointing and vacuuming for nothing, while one atomic rename is cheap and inspectable. Losing
the file is harmless: everything is read again and deduplicated by the bronze key.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Callable

from collectors.base import ms_floor
from collectors.gc.ingest import Line, bronze_rows, envelope
from lakehouse.store import Lakehouse
from settings import ConfigError

log = logging.getLogger("brokerscope.gc.tail")

HEAD_BYTES = 4096  # the identity fingerprint covers the first line, at most this many bytes
TAIL_BYTES = 64  # bytes before the offset that must be unchanged for the offset to stay valid
READ_BUDGET = 8 << 20  # bytes read per file per poll (a backlog is committed in slices)
STUCK_LINE_BYTES = 16 << 20  # a "line" this long without a newline is consumed anyway
COMPRESSED = (".gz", ".zip", ".bz2", ".xz", ".zst", ".lz4")  # archives: `gc import`, not tailing
STATE_VERSION = 1
FORGET_AFTER_HOURS = 24  # offsets of files not found for this long are dropped from the state


# --- reading lines -------------------------------------------------------------------------------


def classify(raw: bytes, offset: int, length: int, max_line: int) -> Line:
    """One line (`raw` without its newline, possibly cut at max_line + 1 bytes) → text or rejected."""
    if length - 1 > max_line:
        hint = (" (it starts with NUL bytes: the file was probably truncated under a writer that "
                "kept its offset, e.g. logrotate copytruncate)") if raw[:1] == b"\0" else ""
        return Line(offset, length, _preview(raw), f"overlong: a line of {length - 1} bytes, over the "
                    f"limit of {max_line} (gc.max_line_bytes); skipped{hint}", "overlong")
    try:
        if b"\0" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "NUL byte")
        return Line(offset, length, raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return Line(offset, length, _preview(raw), f"binary: a line of {length - 1} bytes that is not "
                    f"text ({e.reason} at byte {e.start}); skipped", "binary")


def _preview(raw: bytes) -> str:
    return raw[:120].decode("utf-8", "backslashreplace").replace("\0", "\\x00")


def read_lines(fh: IO[bytes], offset: int, max_line: int, budget: int = READ_BUDGET) -> list[Line]:
    """Complete lines from `offset` on (about `budget` bytes at most). A partial last line is not
    returned (it is read again, whole, once its newline is there); an overlong line costs at most
    max_line + 1 bytes of memory."""
    fh.seek(offset)
    out: list[Line] = []
    pos = offset
    while pos - offset < budget:
        head = fh.readline(max_line + 1)
        if not head:
            break
        if head[:1] == b"\0":
            hole = _hole_before_text(fh, pos, max_line)
            if hole:  # the text after a copytruncate hole is a line of its own: keep it
                out.append(hole)
                pos += hole.length
                fh.seek(pos)
                continue
            fh.seek(pos + len(head))
        length = len(head)
        ended = head.endswith(b"\n")
        while not ended and length > max_line:  # overlong: skip to its newline without keeping it
            more = fh.readline(1 << 20)
            if not more:
                break
            length += len(more)
            ended = more.endswith(b"\n")
        if not ended and length < STUCK_LINE_BYTES:
            break  # partial last line: wait for its newline
        out.append(classify(head[:-1] if head.endswith(b"\n") else head, pos, length, max_line))
        pos += length
    return out


def _hole_before_text(fh: IO[bytes], pos: int, max_line: int) -> Line | None:
    """A run of NUL bytes at `pos` followed by a complete text line: the hole a writer leaves when
    the file is truncated under it (logrotate copytruncate) and it writes on at its old offset.
    Returns the hole as a rejected Line, or None when what follows is not a complete text line."""
    fh.seek(pos)
    n = 0
    while True:
        chunk = fh.read(1 << 16)
        run = len(chunk) - len(chunk.lstrip(b"\0"))
        n += run
        if run < len(chunk) or not chunk:
            break
    fh.seek(pos + n)
    rest = fh.readline(max_line + 1)
    if not rest.endswith(b"\n") or classify(rest[:-1], pos + n, len(rest), max_line).error:
        return None
    return Line(pos, n, _preview(b"\0" * min(n, 120)),
                f"binary: a hole of {n} NUL bytes (the file was truncated under a writer that kept its "
                "offset, e.g. logrotate copytruncate); skipped, the line after it is read", "binary")


def head_fingerprint(fh: IO[bytes]) -> str | None:
    """Hash of the first line (newline included, at most HEAD_BYTES); None while it is incomplete."""
    fh.seek(0)
    head = fh.readline(HEAD_BYTES)
    if not head.endswith(b"\n") and len(head) < HEAD_BYTES:
        return None
    return hashlib.sha1(head).hexdigest()[:12]


def tail_fingerprint(fh: IO[bytes], offset: int) -> str:
    """Hash of the TAIL_BYTES bytes before `offset` (what must not change under a valid offset)."""
    start = max(0, offset - TAIL_BYTES)
    fh.seek(start)
    return hashlib.sha1(fh.read(offset - start)).hexdigest()[:12]


def make_file_id(dev: int, ino: int, head: str, gen: int) -> str:
    return f"{dev:x}-{ino:x}-{head}-{gen}"


def file_identity(path: str | os.PathLike) -> str:
    """The file_id a file has when first seen (generation 0) — what `gc import` uses, so an imported
    file and the same file tailed get the same id."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        head = head_fingerprint(fh)
        if head is None:  # no complete first line: fingerprint what there is
            fh.seek(0)
            head = hashlib.sha1(fh.read(HEAD_BYTES)).hexdigest()[:12]
    return make_file_id(st.st_dev, st.st_ino, head, 0)


def discover(patterns: list[str]) -> list[str]:
    """Regular, uncompressed files matching the globs, oldest modification first (so rotated
    files are read before the current one)."""
    found: dict[tuple[int, int], tuple[float, str]] = {}
    for pattern in patterns:
        for path in glob.glob(pattern, recursive=True):
            if path.endswith(COMPRESSED):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue  # rotated away between glob and stat
            if os.path.isfile(path):
                found.setdefault((st.st_dev, st.st_ino), (st.st_mtime, path))
    return [p for _m, p in sorted(found.values())]


# --- offsets -------------------------------------------------------------------------------------


@dataclass
class FileState:
    """How far one file (of one target) has been read and committed."""

    path: str
    dev: int
    ino: int
    head: str
    gen: int = 0
    offset: int = 0
    line_no: int = 0  # lines consumed so far
    tail: str = ""  # tail_fingerprint at offset
    truncations: int = 0
    seen_hour: int = 0  # hours since the epoch when last found (coarse: the state changes rarely)

    @property
    def file_id(self) -> str:
        return make_file_id(self.dev, self.ino, self.head, self.gen)


def _state_key(target: str, dev: int, ino: int) -> str:
    return f"{target}|{dev}|{ino}"


class StateFileBusy(ConfigError):
    """Another tailer holds the state file (a user error: the CLI says so without a traceback)."""


class OffsetStore:
    """The committed offsets: a JSON file replaced atomically, locked against a second tailer."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fh = open(self.path.with_name(self.path.name + ".lock"), "a+")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_fh.close()
            raise StateFileBusy(
                f"another brokerscope process is tailing GC logs with the state file {self.path}; "
                "stop it first (one tailer per state file), or give this one its own gc.state_file"
            ) from None
        self.files: dict[str, FileState] = self._load()

    def _load(self) -> dict[str, FileState]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            # everything is read again; the bronze key keeps it from being duplicated
            log.warning("GC tail state %s unreadable (%s): reading all files from the start", self.path, e)
            return {}
        if data.get("version") != STATE_VERSION:
            log.warning("GC tail state %s has version %r: reading all files from the start",
                        self.path, data.get("version"))
            return {}
        return {k: FileState(**v) for k, v in data.get("files", {}).items()}

    def commit(self, files: dict[str, FileState]) -> None:
        """Replace the offsets atomically: the old or the new state survives a crash, never a mix."""
        if files == self.files:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as fh:
            json.dump({"version": STATE_VERSION, "files": {k: asdict(v) for k, v in sorted(files.items())}},
                      fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self.files = dict(files)

    def close(self) -> None:
        self._lock_fh.close()


# --- the tailer ----------------------------------------------------------------------------------


@dataclass
class TailStats:
    polls: int = 0
    lines: int = 0  # lines read (rejected ones included; lines read again after a crash count again)
    rejected: int = 0
    truncations: int = 0
    commits: int = 0
    errors: int = 0
    last_error: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # file_id -> current path

    def summary(self) -> str:
        return (f"{self.lines} GC log lines in {self.commits} commits from {len(self.files)} file(s)"
                f" ({self.rejected} rejected, {self.truncations} truncations, {self.errors} errors)")


@dataclass
class _Read:
    state: FileState  # after the read (offset = end of the last line read)
    first_line_no: int
    lines: list[Line]
    more: bool  # the read budget ran out before the end of the file


class GcTailer:
    """Tails the `gc_logs` of every configured target into bronze_gc_lines.

    `recorder`: anything with ``write(envelope)`` (a RecordingWriter), written before bronze.
    """

    def __init__(self, config, lakehouse=None, recorder=None, state_path: str | os.PathLike | None = None,
                 clock: Callable[[], float] = time.time):
        self.config = config
        self.lakehouse = lakehouse or Lakehouse(config.lakehouse_root())
        self.recorder = recorder
        self.clock = clock
        self.max_line = config.gc.max_line_bytes
        self.targets = [(t.name, config.gc_log_patterns(t)) for t in config.targets if t.gc_logs]
        self.store = OffsetStore(state_path or config.gc_state_file())
        self.stats = TailStats()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "GcTailer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one poll ------------------------------------------------------------------------------

    def poll(self) -> bool:
        """Read what is new in every file, land it, then commit the offsets. Returns True when a
        file has more to read than one poll takes (call again at once)."""
        self.stats.polls += 1
        hour = int(self.clock() // 3600)
        staged = self._still_known(hour)
        seen: list[FileState] = []
        reads: list[tuple[str, _Read]] = []
        for target, patterns in self.targets:
            for path in discover(patterns):
                try:
                    r = self._read_file(target, path, hour)
                except FileNotFoundError:
                    continue  # rotated away since the glob; its new name is found next poll
                except OSError as e:  # e.g. permissions: its offset stays, say so, go on
                    self._error(f"{target}: cannot read GC log {path}: {e.strerror or e}")
                    continue
                if r is None:
                    continue
                staged[_state_key(target, r.state.dev, r.state.ino)] = r.state
                seen.append(r.state)
                if r.lines:
                    reads.append((target, r))
        ts = ms_floor(self.clock())
        envelopes = [envelope(ts, target, r.state.path, r.state.file_id, r.first_line_no, r.lines)
                     for target, r in reads]
        if self.recorder is not None:
            for env in envelopes:
                self.recorder.write(env)  # before bronze: a crash may repeat an envelope, never lose one
        rows = [row for env in envelopes for row in bronze_rows(env, "collect")]
        if rows:
            self.lakehouse.append_new("bronze_gc_lines", rows)
            self.stats.commits += 1
        self.store.commit(staged)  # after bronze: see the module docstring
        for target, r in reads:
            self.stats.lines += len(r.lines)
            self.stats.rejected += sum(1 for ln in r.lines if ln.error)
        self.stats.files = {st.file_id: st.path for st in seen}
        return any(r.more for _t, r in reads)

    def _still_known(self, hour: int) -> dict[str, FileState]:
        """Offsets to keep even if their file was not found this poll: a glob can miss a file being
        renamed, and re-reading a file from 0 costs a dedup of all its lines. Forgotten after a
        day unseen (rotated away and deleted), or when the target left the config."""
        targets = {t for t, _p in self.targets}
        return {k: v for k, v in self.store.files.items()
                if k.split("|", 1)[0] in targets and hour - v.seen_hour <= FORGET_AFTER_HOURS}

    def _read_file(self, target: str, path: str, hour: int) -> _Read | None:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())  # the file we opened, even if `path` was renamed since
            head = head_fingerprint(fh)
            if head is None:
                return None  # not even one complete line yet
            prev = self.store.files.get(_state_key(target, st.st_dev, st.st_ino))
            state = self._resume(prev, fh, path, st, head)
            lines = read_lines(fh, state.offset, self.max_line)
            end = lines[-1].offset + lines[-1].length if lines else state.offset
            new = replace(state, offset=end, line_no=state.line_no + len(lines),
                          tail=tail_fingerprint(fh, end) if lines else state.tail, seen_hour=hour)
            more = bool(lines) and st.st_size > end and end - state.offset >= READ_BUDGET
            return _Read(state=new, first_line_no=state.line_no + 1, lines=lines, more=more)

    def _resume(self, prev: FileState | None, fh: IO[bytes], path: str, st: os.stat_result, head: str) -> FileState:
        """Where to go on reading: the committed offset, or 0 for a new, recycled or rewritten file."""
        if prev is None or prev.head != head:  # new file, or its inode was recycled for another
            return FileState(path=path, dev=st.st_dev, ino=st.st_ino, head=head,
                             tail=tail_fingerprint(fh, 0))
        if st.st_size < prev.offset or tail_fingerprint(fh, prev.offset) != prev.tail:
            self.stats.truncations += 1
            log.warning("GC log %s was truncated or rewritten in place: reading it again from the start", path)
            return replace(prev, path=path, gen=prev.gen + 1, offset=0, line_no=0,
                           tail=tail_fingerprint(fh, 0), truncations=prev.truncations + 1)
        return replace(prev, path=path)

    def _error(self, msg: str) -> None:
        self.stats.errors += 1
        self.stats.last_error = msg
        log.warning("%s", msg)

    # -- loop ----------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None, duration: float | None = None,
            on_poll: Callable[["TailStats"], None] | None = None) -> TailStats:
        """Poll every `gc.poll_interval` until `stop` is set or `duration` passes, then read what is
        left (until caught up) and return.
        A failing commit (storage down) is logged and retried at the next poll: the offsets did not
        move, so nothing is lost."""
        stop = stop or threading.Event()
        t_end = None if duration is None else time.monotonic() + duration
        interval = self.config.gc.poll_interval
        while True:
            last = stop.is_set() or (t_end is not None and time.monotonic() >= t_end)
            try:
                more = self.poll()
            except Exception as e:  # noqa: BLE001 - keep tailing; the offsets were not committed
                self._error(f"GC tail commit failed, retrying: {e}")
                more = False
            if on_poll:
                on_poll(self.stats)
            if last and not more:
                return self.stats
            if not more:
                wait = interval if t_end is None else max(0.0, min(interval, t_end - time.monotonic()))
                stop.wait(wait)
