"""GC events as Arrow columns: ``parse_file_columnar(path) -> (pyarrow.RecordBatch, ParseStats)``.

Bulk consumers (the Spark ``gc import`` job, benchmarks) need columns, not one Python object
per event.  With the native core installed, the core's Arrow buffers become arrays through
``pa.Array.from_buffers`` over the core's memory (``pa.foreign_buffer``: no copy, no Python
object per event); without it the Python parser's GcEvents are turned into the same batch.  Either way the values are those of the GcEvent
path (tests/test_gc_native.py checks it on the whole corpus), with two changes of shape:
``flags`` is the comma-joined string (null when none), as in gc_events, and ``raw`` is absent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterator, Optional

import pyarrow as pa

from . import native
from .model import GcEvent, ParseStats
from .parser import GcLogParser, PathLike, iter_events, open_log, open_log_chunks, parser_impl

TS = pa.timestamp("us", tz="UTC")
_STR = ("event_type", "collector", "cause", "phase", "flags")
_F64 = ("uptime_s", "pause_ms", "concurrent_ms", "duration_ms", "user_s", "sys_s", "real_s", "ttsp_ms")
_I64 = tuple(f"{p}_{w}_kb" for p in ("heap", "young", "old", "metaspace")
             for w in ("before", "after", "committed")) + ("gc_id", "source_line")
_SKIP = ("raw", "flags")

#: column order: GcEvent's fields without ``raw``
SCHEMA = pa.schema([
    (name, pa.string() if name in _STR else pa.float64() if name in _F64 else TS if name == "wall_time"
     else pa.int64())
    for name in GcEvent.__dataclass_fields__ if name != "raw"
])
#: input bytes per RecordBatch of ColumnarFile (bounded memory)
BLOCK = 1 << 24
#: bytes per read: a fresh 16 MB bytes object cost ~10 ms of page faults per read, 1 MB ~0.05
READ = 1 << 20


def _array(field: pa.Field, n: int, bufs: tuple, owner: object) -> pa.Array:
    """An array over the core's buffers, (address, size) each, kept alive by ``owner``."""
    *spans, nulls = bufs
    buffers = [None if s is None else pa.foreign_buffer(s[0], s[1], base=owner) for s in spans]
    return pa.Array.from_buffers(field.type, n, buffers, null_count=nulls)


def _patched(arr: pa.Array, fixes: list, convert) -> pa.Array:
    """The rare values the core leaves to Python (see native/gcparse/src/columns.rs)."""
    values = arr.to_pylist()
    for row, value in fixes:
        values[row] = convert(value)
    return pa.array(values, type=arr.type)


def _batch(raw: tuple, jvm_start: Optional[datetime]) -> pa.RecordBatch:
    n, cols, patches, owner = raw
    arrays = {f.name: _array(f, n, cols[f.name], owner) for f in SCHEMA}
    by_col: dict[str, list] = {}
    for row, kind, value in patches:
        by_col.setdefault(kind, []).append((row, value))
    for name, fixes in by_col.items():
        convert = (lambda v: native._wall(v[0], v[1], v[2], jvm_start)) if name == "wall_time" else (lambda v: v)
        arrays[name] = _patched(arrays[name], fixes, convert)
    return pa.RecordBatch.from_arrays([arrays[f.name] for f in SCHEMA], schema=SCHEMA)


def events_to_batch(events: list[GcEvent]) -> pa.RecordBatch:
    """The same batch from GcEvent objects (the Python parser's path, and the reference)."""
    cols = {f.name: [getattr(e, f.name) for e in events] for f in SCHEMA if f.name not in _SKIP}
    cols["flags"] = [",".join(e.flags) or None for e in events]
    return pa.RecordBatch.from_pydict(cols, schema=SCHEMA)


class ColumnarFile:
    """A GC log file as RecordBatches of its events, one per block read (bounded memory):
    ``for batch in ColumnarFile(path): ...``, then ``.stats`` (ParseStats)."""

    def __init__(self, path: PathLike, **kwargs) -> None:
        self.path = path
        self.kwargs = kwargs
        self.stats: Optional[ParseStats] = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if parser_impl() != "native":
            yield from self._python()
            return
        yield from self._native(BLOCK)

    def _native(self, per_batch: Optional[int]) -> Iterator[pa.RecordBatch]:
        """The core collects the columns of READ-sized reads; a batch per `per_batch` input
        bytes (None: one batch for the file, no concatenation)."""
        p = native.NativeGcLogParser(**self.kwargs)
        core, pending = p._core, 0
        with open_log_chunks(self.path, core) as fh:
            while True:
                block = fh.read(READ)
                core.collect_bytes(block, not block)
                pending += len(block)
                if not block:
                    break
                if per_batch is not None and pending >= per_batch:
                    yield _batch(core.take_columns(False), p.jvm_start)
                    pending = 0
        yield _batch(core.take_columns(True), p.jvm_start)
        p.finish_stats()
        self.stats = p.stats

    def _python(self) -> Iterator[pa.RecordBatch]:
        p = GcLogParser(**self.kwargs)
        with open_log(self.path) as fh:
            events = list(iter_events(fh, parser=p))
        yield events_to_batch(events)
        self.stats = p.stats


def parse_file_columnar(path: PathLike, **kwargs) -> tuple[pa.RecordBatch, ParseStats]:
    """A GC log file (plain, .gz, .zip) -> (one RecordBatch of its events, stats)."""
    cf = ColumnarFile(path, **kwargs)
    if parser_impl() == "native":
        (batch,) = cf._native(None)  # one set of columns grown over the reads: no concat
        return batch, cf.stats
    table = pa.Table.from_batches(list(cf), schema=SCHEMA).combine_chunks()
    one = table.to_batches()
    return (one[0] if one else pa.RecordBatch.from_pylist([], schema=SCHEMA)), cf.stats
