"""GC jobs: bronze_gc_lines (or log files) → silver gc_events + gc_parse_stats → gold gc_findings.

Parsing. A log file is a stream: its lines must go through ONE parser, in order. Both paths
stream, so a file of any size parses in bounded memory:

* tailed files: bronze rows are hash-partitioned by file and sorted by offset within the
  partition, then `mapInArrow` feeds them to a fresh parser per file as the rows go by;
* `gc import`: one task per file (`mapInArrow` over a frame with one row per partition) reads the
  file itself (plain, .gz or .zip).

Across runs the job keeps no parser state: a file whose bronze lines changed since its last parse
(its line count in the Delta log differs from gc_parse_stats) is parsed again WHOLE and replaces
its own partition of gc_events/gc_parse_stats. So an event cut at the edge of the previous run (its
closing line not read yet) is simply complete in the next one, and reruns are idempotent.

Each file yields its events and, at its end, one stats row (coverage, time span, the JVM start
estimate); both travel in one frame (`record` = event | stats) so every file is parsed once.
Events of logs that only have uptimes get `wall_time = jvm_start + uptime` afterwards (a join with
the stats). Findings are computed per file by collectors.gc.analysis, the same code `gc report`
uses.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis.frames import cached
from collectors.gc import GcLogParser
from collectors.gc.columnar import ColumnarFile
from collectors.gc.analysis import Thresholds, findings
from lakehouse.tables import GC_EVENTS, GC_FINDINGS, GC_PARSE_STATS, Column, TableContract

ROWS_PER_BATCH = 5000
UNKNOWN_SAMPLE = 20
_FILE_COLS = ("target", "file_id", "file", "origin")
_EVENT_FIELDS = [c.name for c in GC_EVENTS.columns if c.name not in (*_FILE_COLS, "event_seq", "wall_time_source")]
_STATS_COLS = [c for c in GC_PARSE_STATS.columns if c.name not in _FILE_COLS]

# One frame for both outputs of a parse: `record` says which; stats columns carry a `stats_` prefix.
PARSED = TableContract(
    name="gc_parsed", layer="internal", doc="events and per-file stats of one parse", keys=(),
    columns=(Column("record", pa.string(), "event | stats"),
             *[Column(c.name, c.type, c.doc) for c in GC_EVENTS.columns],
             *[Column("stats_" + c.name, c.type, c.doc) for c in _STATS_COLS]),
)


# --- parsing one file ---------------------------------------------------------------------------------


class FileParse:
    """One file through one parser: feed its lines in order, then `finish`."""

    def __init__(self, target: str, file_id: str, file: str | None, origin: str):
        self.ids = {"target": target, "file_id": file_id, "file": file, "origin": origin}
        self.parser = GcLogParser()
        self.seq = 0
        self.rejected = 0
        self.collectors: Counter = Counter()
        self.jvm_start: datetime | None = None  # upper bound: min(read time − uptime)
        self.read_ts: datetime | None = None  # when the line being fed was read (tailed files)

    def line(self, line_no: int, text: str, read_ts: datetime | None = None) -> list[dict]:
        if read_ts is not None:
            self.read_ts = read_ts
        return [self._event_row(e) for e in self.parser.feed(text, line_no)]

    def _event_row(self, e) -> dict:
        if self.read_ts is not None and e.uptime_s is not None:
            # its lines were written before they were read: jvm_start ≤ read time − uptime
            bound = self.read_ts - timedelta(seconds=e.uptime_s)
            self.jvm_start = bound if self.jvm_start is None else min(self.jvm_start, bound)
        d = e.to_dict()
        row = {"record": "event", **self.ids, "event_seq": self.seq, **{k: d.get(k) for k in _EVENT_FIELDS}}
        row["flags"] = ",".join(e.flags) or None
        row["wall_time_source"] = "log" if e.wall_time is not None else None
        self.seq += 1
        if e.collector != "unknown":
            self.collectors[e.collector] += 1
        return row

    def finish(self, end_offset: int, jvm_start: datetime | None = None) -> list[dict]:
        """The last events and the file's stats row. `jvm_start` overrides the read-time estimate."""
        rows = [self._event_row(e) for e in self.parser.finish()]
        rows.append(stats_row(self.ids, self.parser.stats, self.seq, self.collectors, self.rejected,
                              end_offset, jvm_start or self.jvm_start))
        return rows


def stats_row(ids: dict, st, events: int, collectors: Counter, rejected: int, end_offset: int,
              jvm_start: datetime | None) -> dict:
    """The `record = stats` row of one parsed file."""
    first_wall, last_wall, source = st.first_wall_time, st.last_wall_time, "log"
    if first_wall is None:
        source = "none"
        if jvm_start is not None and st.first_uptime_s is not None:
            first_wall = jvm_start + timedelta(seconds=st.first_uptime_s)
            last_wall = jvm_start + timedelta(seconds=st.last_uptime_s)
            source = "estimated"
    lines = st.lines_total + rejected
    n_unified, n_legacy = st.formats.get("unified", 0), st.formats.get("legacy", 0)
    stats = {
        "end_offset": end_offset, "lines": lines, "lines_event": st.lines_event,
        "lines_ignored": st.lines_ignored, "lines_unknown": st.lines_unknown,
        "lines_rejected": rejected,
        "coverage": (st.lines_event + st.lines_ignored) / lines if lines else 1.0,
        "events": events, "incomplete_events": st.incomplete_events,
        "collector": collectors.most_common(1)[0][0] if collectors else "unknown",
        "log_format": "empty" if not lines else ("unified" if n_unified >= n_legacy else "legacy"),
        "first_uptime_s": st.first_uptime_s, "last_uptime_s": st.last_uptime_s,
        "first_wall_time": first_wall, "last_wall_time": last_wall,
        "jvm_start": jvm_start if source == "estimated" else None, "wall_time_source": source,
        "unknown_sample": json.dumps(st.unknown_sample[:UNKNOWN_SAMPLE], ensure_ascii=False),
    }
    return {"record": "stats", **ids, **{f"stats_{k}": v for k, v in stats.items()}}


def _batches(rows: Iterable[dict]) -> Iterator[pa.RecordBatch]:
    schema = PARSED.schema
    buf: list[dict] = []
    for r in rows:
        buf.append(r)
        if len(buf) >= ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(buf, schema=schema)
            buf = []
    if buf:
        yield pa.RecordBatch.from_pylist(buf, schema=schema)


def parse_sorted_lines(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """bronze_gc_lines rows sorted by (target, file_id, offset) → parsed rows, one parser per file."""

    def rows() -> Iterator[dict]:
        cur: FileParse | None = None
        key = None
        end = 0
        for b in batches:
            c = b.to_pydict()
            for i in range(b.num_rows):
                k = (c["target"][i], c["file_id"][i])
                if k != key:
                    if cur is not None:
                        yield from cur.finish(end)
                    cur, key = FileParse(k[0], k[1], c["file"][i], "tail"), k
                end = c["offset"][i] + c["length"][i]
                if c["error"][i] is not None:
                    cur.rejected += 1
                else:
                    yield from cur.line(c["line_no"][i], c["line"][i], c["ts"][i])
        if cur is not None:
            yield from cur.finish(end)

    return _batches(rows())


def parse_log_file(target: str, file_id: str, path: str, origin: str = "import") -> Iterator[pa.RecordBatch]:
    """A whole log file (plain, .gz or .zip) → parsed rows, as batches. Its events come as
    columns (collectors.gc.columnar: Arrow buffers from the native core, no Python object per
    event). Logs with uptimes only get jvm_start = modification time − last uptime (the last
    line was written at about mtime)."""
    ids = {"target": target, "file_id": file_id, "file": path, "origin": origin}
    cf = ColumnarFile(path)
    seq, collectors = 0, Counter()
    for b in cf:
        if b.num_rows:
            yield _event_batch(ids, b, seq)
            seq += b.num_rows
            for v in pc.value_counts(b.column("collector")).to_pylist():
                if v["values"] != "unknown":
                    collectors[v["values"]] += v["counts"]
    st = os.stat(path)
    jvm_start = None
    if cf.stats.last_uptime_s is not None:
        jvm_start = datetime.fromtimestamp(st.st_mtime, timezone.utc) - timedelta(seconds=cf.stats.last_uptime_s)
    yield pa.RecordBatch.from_pylist([stats_row(ids, cf.stats, seq, collectors, 0, st.st_size, jvm_start)],
                                     schema=PARSED.schema)


def _event_batch(ids: dict, b: pa.RecordBatch, seq: int) -> pa.RecordBatch:
    """`record = event` rows of a columnar batch (the columns of FileParse._event_row)."""
    n = b.num_rows
    cols = {"record": pa.array(["event"] * n, pa.string()),
            **{k: pa.array([v] * n, pa.string()) for k, v in ids.items()},
            "event_seq": pa.array(range(seq, seq + n), pa.int64()),
            "wall_time_source": pc.if_else(pc.is_valid(b.column("wall_time")), "log", None)}
    arrays = [cols[f.name] if f.name in cols else b.column(f.name) if f.name in b.schema.names
              else pa.nulls(n, f.type) for f in PARSED.schema]
    return pa.RecordBatch.from_arrays([a.cast(f.type) for a, f in zip(arrays, PARSED.schema)], schema=PARSED.schema)


def parse_log_files(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body for `gc import`: rows (target, file_id, path) → parsed rows."""
    for b in batches:
        for r in b.to_pylist():
            yield from parse_log_file(r["target"], r["file_id"], r["path"])


# --- DataFrame transforms -----------------------------------------------------------------------------


def bronze_line_counts(lakehouse) -> dict[str, int]:
    """Lines per file in bronze_gc_lines, from the Delta log's per-data-file row counts (no data
    scan). The table is append-only with one row per key, so a file's count changes exactly when
    lines were added to it."""
    dt = lakehouse._open("bronze_gc_lines")
    if dt is None:
        return {}
    adds = pa.table(dt.get_add_actions(flatten=True)).select(["partition.file_id", "num_records"])
    if adds.column("num_records").null_count:  # a writer without statistics: count the rows
        adds = lakehouse.read("bronze_gc_lines", columns=["file_id"]).group_by("file_id").aggregate(
            [("file_id", "count")]).rename_columns(["partition.file_id", "num_records"])
    counts: dict[str, int] = {}
    for f, n in zip(adds.column("partition.file_id").to_pylist(), adds.column("num_records").to_pylist()):
        counts[f] = counts.get(f, 0) + n
    return counts


def parsed_line_counts(lakehouse) -> dict[str, int]:
    """Lines per file the last parse of bronze covered (gc_parse_stats, origin tail)."""
    counts: dict[str, int] = {}
    for r in lakehouse.read("gc_parse_stats", columns=["file_id", "origin", "lines"]).to_pylist():
        if r["origin"] == "tail":
            counts[r["file_id"]] = counts.get(r["file_id"], 0) + r["lines"]
    return counts


def files_to_parse(bronze_counts: dict[str, int], parsed_counts: dict[str, int]) -> list[str]:
    """Files whose bronze lines differ from what was parsed (new files, files that grew)."""
    return sorted(f for f, n in bronze_counts.items() if parsed_counts.get(f) != n)


def parse_bronze(bronze: DataFrame) -> DataFrame:
    """Parse the bronze lines of each file in order (secondary sort, then stream)."""
    cols = ["target", "file_id", "file", "offset", "length", "line_no", "line", "error", "ts"]
    ordered = (bronze.select(*cols)
               .repartition("target", "file_id")
               .sortWithinPartitions("target", "file_id", "offset"))
    return ordered.mapInArrow(parse_sorted_lines, PARSED.spark_schema())


def parse_files(files: DataFrame) -> DataFrame:
    """`files` (target, file_id, path), one row per partition → parsed rows (one task per file)."""
    return files.mapInArrow(parse_log_files, PARSED.spark_schema())


def events_of(parsed: DataFrame) -> DataFrame:
    """gc_events rows; a log with uptimes only gets wall_time = jvm_start + uptime."""
    ev = parsed.where(F.col("record") == "event").select(*GC_EVENTS.column_names)
    starts = parsed.where(F.col("record") == "stats").select("target", "file_id", F.col("stats_jvm_start").alias("_jvm_start"))
    est = F.timestamp_micros(F.unix_micros("_jvm_start") + F.round(F.col("uptime_s") * 1e6).cast("long"))
    return (ev.join(starts, ["target", "file_id"], "left")
            .withColumn("wall_time_source", F.when(F.col("wall_time").isNotNull(), F.lit("log"))
                        .when(est.isNotNull(), F.lit("estimated")))
            .withColumn("wall_time", F.coalesce("wall_time", est))
            .select(*GC_EVENTS.column_names))


def stats_of(parsed: DataFrame) -> DataFrame:
    return parsed.where(F.col("record") == "stats").select(
        *_FILE_COLS, *[F.col("stats_" + c.name).alias(c.name) for c in _STATS_COLS])


@dataclass(frozen=True)
class TargetRules:
    group: str | None
    thresholds: Thresholds


def finding_rows(table: pa.Table, rules: dict[str, TargetRules]) -> list[dict]:
    """gc_findings rows of ONE file's gc_events rows (any order)."""
    events = sorted(table.to_pylist(), key=lambda e: e["event_seq"])
    if not events:
        return []
    target, file_id = events[0]["target"], events[0]["file_id"]
    r = rules.get(target, TargetRules(None, Thresholds()))
    out = []
    for f in findings(events, r.thresholds):
        fid = hashlib.sha256(f"{f['code']}\0{target}\0{file_id}\0{f.pop('key')}".encode()).hexdigest()[:32]
        out.append({"finding_id": fid, "target": target, "group_name": r.group, "file_id": file_id, **f})
    return out


def gc_findings(events: DataFrame, rules: dict[str, TargetRules]) -> DataFrame:
    def per_file(table: pa.Table) -> pa.Table:
        return pa.Table.from_pylist(finding_rows(table, rules), schema=GC_FINDINGS.schema)

    return events.groupBy("target", "file_id").applyInArrow(per_file, GC_FINDINGS.spark_schema())


# --- runners --------------------------------------------------------------------------------------------



@dataclass(frozen=True)
class GcParams:
    """The GC job's parameters (analysis/params.py builds them): each target's finding rules."""

    rules: dict[str, TargetRules]


def _in_list(ids: list[str]) -> str:
    return "file_id IN (" + ", ".join("'" + i.replace("'", "''") + "'" for i in ids) + ")"


def write_parsed(slh, parsed: DataFrame, file_ids: list[str],
                 progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Parse once (cached), then replace the given files' partitions of gc_events and
    gc_parse_stats. `progress(done, total)` follows the parse tasks."""
    with cached(parsed) as parsed:
        _materialize(parsed, progress)
        where = _in_list(file_ids)
        return {"gc_events": slh.write("gc_events", events_of(parsed), replace_where=where),
                "gc_parse_stats": slh.write("gc_parse_stats", stats_of(parsed), replace_where=where)}


def _materialize(df: DataFrame, progress: Callable[[int, int], None] | None) -> None:
    if progress is None:
        df.count()
        return
    sc = df.sparkSession.sparkContext
    group = f"brokerscope-gc-parse-{threading.get_ident()}"
    sc.setJobGroup(group, "parse GC logs")
    stop = threading.Event()
    tasks = df.rdd.getNumPartitions()  # the parse stage: one task per partition of the input
    watcher = threading.Thread(target=_watch_tasks, args=(sc, group, tasks, stop, progress), daemon=True)
    watcher.start()
    try:
        df.count()
    finally:
        stop.set()
        watcher.join()
        sc.setLocalProperty("spark.jobGroup.id", None)


def _watch_tasks(sc, group: str, tasks: int, stop: threading.Event, progress: Callable[[int, int], None]) -> None:
    """Report (finished, total) tasks of the group's parse stage until stopped, and once at the end."""
    tracker = sc.statusTracker()

    def report() -> None:
        done = 0
        for jid in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(jid)
            for sid in (job.stageIds if job else []):
                info = tracker.getStageInfo(sid)
                if info and info.numTasks == tasks:
                    done = max(done, info.numCompletedTasks)
        progress(done, tasks)

    while not stop.wait(0.25):
        report()
    report()


def write_findings(slh, rules: dict[str, TargetRules]) -> int:
    """Recompute gc_findings from all of gc_events (thresholds may have changed: whole table)."""
    if not slh.lakehouse.exists("gc_events"):
        return 0
    return slh.write("gc_findings", gc_findings(slh.read("gc_events"), rules))


def run_gc(slh, params: GcParams, full: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """bronze_gc_lines → gc_events/gc_parse_stats for the files that changed (all with full=True),
    then gc_findings for everything. Idempotent."""
    say = progress or (lambda m: None)
    counts: dict[str, int] = {}
    in_bronze = bronze_line_counts(slh.lakehouse)
    ids = sorted(in_bronze) if full else files_to_parse(in_bronze, parsed_line_counts(slh.lakehouse))
    say(f"bronze_gc_lines → gc_events, gc_parse_stats ({len(ids)} file(s) to parse)")
    if ids:
        bronze = slh.read("bronze_gc_lines").where(F.col("file_id").isin(ids))
        counts.update(write_parsed(slh, parse_bronze(bronze), ids))
    say("gc_events → gc_findings")
    counts["gc_findings"] = write_findings(slh, params.rules)
    return counts


def import_files(slh, params: GcParams, files: list[tuple[str, str, str]],
                 progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Parse (target, file_id, path) files in parallel, one Spark task per file (largest first),
    into gc_events/gc_parse_stats, then recompute gc_findings. `progress(done, total)` follows the
    parse tasks."""
    spark = slh.spark
    files = sorted(files, key=lambda f: -os.path.getsize(f[2]))
    frame = spark.createDataFrame(spark.sparkContext.parallelize(
        [{"target": t, "file_id": i, "path": p} for t, i, p in files], max(1, len(files))),
        "target string, file_id string, path string")
    counts = write_parsed(slh, parse_files(frame), sorted({i for _t, i, _p in files}), progress)
    counts["gc_findings"] = write_findings(slh, params.rules)
    return counts
