"""Delta log entries for Parquet files that Spark wrote (the bridge's commit path,
lakehouse/spark.py): partition values from a file's Hive-style path, and Delta statistics
(row count, min/max, null counts) from its Parquet footer."""

from __future__ import annotations

import datetime as _dt
import json
import math
import urllib.parse
from collections.abc import Sequence
from typing import Any

import pyarrow.parquet as pq

def partition_string(v: Any) -> str:
    """A partition value as Delta stores it (string form)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    return str(v)


def partition_values_from_path(rel: str, part: Sequence[str]) -> dict[str, str | None]:
    """`obs_date=2024-05-01/part-0000.parquet` → {"obs_date": "2024-05-01"} (Hive escaping
    undone; __HIVE_DEFAULT_PARTITION__ is null)."""
    dirs = rel.split("/")[:-1]
    if len(dirs) != len(part):
        raise RuntimeError(f"unexpected layout of a file Spark wrote: {rel!r} (partitions {list(part)})")
    out: dict[str, str | None] = {}
    for d, p in zip(dirs, part):
        k, sep, v = d.partition("=")
        if not sep or urllib.parse.unquote(k) != p:
            raise RuntimeError(f"unexpected partition folder {d!r} in {rel!r}, expected {p}=...")
        out[p] = None if v == "__HIVE_DEFAULT_PARTITION__" else urllib.parse.unquote(v)
    return out


_STR_PREFIX = 32  # Delta's stats string prefix length


def _stat_value(stat, lt: str, physical: str, is_max: bool):
    raw = stat.max_raw if is_max else stat.min_raw
    if raw is None:
        return None
    if lt == "TIMESTAMP":
        unit = stat.logical_type.to_json()
        per_s = 1_000 if "milli" in unit else 1_000_000 if "micro" in unit else 1_000_000_000
        ms = raw * 1000 / per_s
        ms = math.ceil(ms) if is_max else math.floor(ms)  # Delta keeps ms: widen, never narrow
        t = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=ms)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    if lt == "DATE":
        return (_dt.date(1970, 1, 1) + _dt.timedelta(days=raw)).isoformat()
    if lt == "STRING":
        s = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)
        if len(s) <= _STR_PREFIX:
            return s
        if not is_max:
            return s[:_STR_PREFIX]  # a prefix is a valid lower bound
        if s[_STR_PREFIX] == "\U0010ffff":
            return None
        return s[:_STR_PREFIX] + "\U0010ffff"  # above every string with that prefix
    if lt in ("NONE", "INT") and physical in ("INT32", "INT64", "BOOLEAN", "FLOAT", "DOUBLE"):
        if isinstance(raw, float) and (math.isnan(raw) or math.isinf(raw)):
            return None
        return raw
    return None


def delta_stats(md: pq.FileMetaData, columns: Sequence[str]) -> str:
    """Delta `stats` JSON (numRecords, minValues, maxValues, nullCount) from a Parquet footer."""
    wanted = set(columns)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    ok_minmax: dict[str, bool] = {}
    ok_nulls: dict[str, bool] = {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        if rg.num_rows == 0:
            continue
        for j in range(rg.num_columns):
            col = rg.column(j)
            name = col.path_in_schema
            if name not in wanted:
                continue
            st = col.statistics
            if st is None:
                ok_minmax[name] = ok_nulls[name] = False
                continue
            if st.has_null_count and ok_nulls.get(name, True):
                nulls[name] = nulls.get(name, 0) + st.null_count
                ok_nulls[name] = True
            else:
                ok_nulls[name] = False
            if st.null_count == rg.num_rows and st.has_null_count:
                ok_minmax.setdefault(name, True)
                continue  # all null: no min/max in this group, fine
            if not st.has_min_max or not ok_minmax.get(name, True):
                ok_minmax[name] = False
                continue
            lt = str(st.logical_type.type).upper() if st.logical_type is not None else "NONE"
            lo = _stat_value(st, lt, st.physical_type, False)
            hi = _stat_value(st, lt, st.physical_type, True)
            if lo is None or hi is None:
                ok_minmax[name] = False
                continue
            ok_minmax[name] = True
            mins[name] = lo if name not in mins else min(mins[name], lo)
            maxs[name] = hi if name not in maxs else max(maxs[name], hi)
    stats: dict[str, Any] = {"numRecords": md.num_rows}
    stats["minValues"] = {k: v for k, v in mins.items() if ok_minmax.get(k)}
    stats["maxValues"] = {k: v for k, v in maxs.items() if ok_minmax.get(k)}
    stats["nullCount"] = {k: v for k, v in nulls.items() if ok_nulls.get(k)}
    return json.dumps(stats, separators=(",", ":"), ensure_ascii=False)
