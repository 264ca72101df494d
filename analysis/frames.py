"""Vectorized helpers every gold job shares: contract-typed pandas/Arrow frames, positions over
sorted key columns, and running whole keys of a Spark partition through one NumPy call."""

from __future__ import annotations

import operator
from contextlib import contextmanager
from functools import reduce
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from collectors.packs import PACKS
from lakehouse.tables import TS


@contextmanager
def cached(*frames: DataFrame):
    """The frames cached for the block (`with cached(a) as a:` / `with cached(a, b) as (a, b):`),
    unpersisted when it ends, also on an error: a cached plan pins its data and the hash tables of
    its broadcast joins in the driver until it is unpersisted, so every failed run of the service
    would otherwise keep them for the life of the session."""
    kept = [df.cache() for df in frames]
    try:
        yield kept[0] if len(kept) == 1 else kept
    finally:
        for df in kept:
            df.unpersist()


def typed_frame(rows: list[dict], c) -> pd.DataFrame:
    """A pandas frame with the contract's columns; timestamp columns as naive-UTC datetime64 so
    Arrow hands them to Spark unambiguously (the session time zone is UTC); string columns as
    objects with None for null (pandas makes a column nobody set float NaN, which Arrow cannot
    turn into a string)."""
    df = pd.DataFrame(rows, columns=c.column_names)
    for col in c.columns:
        if pa.types.is_timestamp(col.type):
            df[col.name] = pd.to_datetime(df[col.name], utc=True).dt.tz_localize(None)
        elif pa.types.is_string(col.type):
            df[col.name] = df[col.name].astype(object).where(df[col.name].notna(), None)
    return df


# --- vectorized sequence helpers ----------------------------------------------------------------------
#
# The gold steps work on whole columns of rows sorted by key and time (NumPy over Arrow), never row
# by row in Python: run boundaries are cumulative sums, bounds are shifted indexes, "the next/last
# row with X" is a running minimum/maximum of positions. Spark only partitions by group and sorts
# within partitions; `per_key` streams whole keys of a partition into one vectorized call.

STATE_LABELS = np.array(["unanswered", "inactive", "active"], dtype=object)  # index: state code + 1


def key_starts(t: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """True where a row starts a new key (rows sorted by `keys`; no keys: one key)."""
    starts = np.zeros(t.num_rows, dtype=bool)
    if t.num_rows:
        starts[0] = True
        for k in keys:
            col = t.column(k)
            starts[1:] |= pc.not_equal(col[1:], col[:-1]).fill_null(True).to_numpy(zero_copy_only=False)
    return starts


def micros(col) -> tuple[np.ndarray, np.ndarray]:
    """A timestamp column (any unit, naive = UTC) as int64 µs since the epoch, and its null mask."""
    us = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC"), safe=False), pa.int64())
    return us.fill_null(0).to_numpy(zero_copy_only=False), us.is_null().to_numpy(zero_copy_only=False)


def timestamps(us: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    return pa.array(us, pa.int64(), mask=null).cast(TS)


def texts(values: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    return pa.array(np.where(null, None, values) if null is not None else values, pa.string())


def seconds(us: np.ndarray) -> np.ndarray:
    """µs differences as float seconds, rounded as pandas' Timedelta.total_seconds() does (whole
    seconds + µs / 1e6), so reruns of older gold compare equal to the last bit."""
    whole, micro = np.divmod(us, 1_000_000)
    return whole + micro / 1e6


def state_codes(active) -> np.ndarray:
    """1 = observed active, 0 = observed not active, -1 = no usable answer."""
    known = ~active.is_null().to_numpy(zero_copy_only=False)
    return np.where(known, active.fill_null(False).to_numpy(zero_copy_only=False), -1).astype(np.int8)


def iso_times(us: np.ndarray) -> np.ndarray:
    """pandas' Timestamp.isoformat() of naive-UTC µs times: seconds, `.ffffff` only when not whole."""
    whole = np.datetime_as_string(us.astype("datetime64[us]").astype("datetime64[s]"), unit="s")
    frac = us % 1_000_000
    return np.where(frac == 0, whole, np.char.add(np.char.add(whole, "."), np.char.zfill(frac.astype(str), 6)))


def spark_times(us: np.ndarray) -> list[str]:
    """Spark's `CAST(ts AS STRING)` of UTC µs times (session time zone UTC): `yyyy-MM-dd HH:mm:ss`,
    then the fraction without its trailing zeros when not whole (what stable ids hash)."""
    us = np.asarray(us, dtype=np.int64)
    whole = np.datetime_as_string(us.astype("datetime64[us]").astype("datetime64[s]"), unit="s").tolist()
    return [(w if not f else f"{w}.{f:06d}".rstrip("0")).replace("T", " ") for w, f in zip(whole, (us % 1_000_000).tolist())]


def hole_before(ts: np.ndarray, key_start: np.ndarray, tolerance: float) -> np.ndarray:
    """True where an observation follows the previous one of its key by more than `tolerance`
    (same unit as `ts`): nothing was observed in between, so the state there is unknown — a hole,
    whatever the rows on either side say. The one rule for holes, wherever intervals are built
    (role intervals and split brain, ZooKeeper rounds, stuck messages, lag, risks)."""
    hole = np.zeros(len(ts), dtype=bool)
    if len(ts) > 1:
        hole[1:] = np.diff(ts) > tolerance
    hole[np.asarray(key_start, dtype=bool)] = False
    return hole


def next_position(flags: np.ndarray) -> np.ndarray:
    """For every row, the position of the first row at or after it where `flags` holds (len: none)."""
    pos = np.where(flags, np.arange(len(flags)), len(flags))
    return np.minimum.accumulate(pos[::-1])[::-1]


def last_position(flags: np.ndarray) -> np.ndarray:
    """For every row, the position of the last row at or before it where `flags` holds (-1: none)."""
    return np.maximum.accumulate(np.where(flags, np.arange(len(flags)), -1))


def complete_keys(batches: Iterator[pa.RecordBatch], keys: Sequence[str]) -> Iterator[pa.Table]:
    """Regroup the sorted batches of one partition so that no key straddles two tables: the rows of
    a batch's last key wait for the next batch."""
    carry: pa.Table | None = None
    for batch in batches:
        t = pa.Table.from_batches([batch])
        if t.num_rows == 0:
            continue
        if carry is not None:
            t = pa.concat_tables([carry, t])
            # only the new rows (and the seam) can start keys: O(batch), not O(carry)
            seam = carry.num_rows - 1
            starts = seam + np.flatnonzero(key_starts(t.slice(seam), keys)[1:]) + 1
        else:
            starts = np.flatnonzero(key_starts(t, keys)[1:]) + 1
        if starts.size:
            cut = int(starts[-1])
            yield t.slice(0, cut)
            carry = t.slice(cut)
        else:
            carry = t
    if carry is not None and carry.num_rows:
        yield carry


def per_key(df: DataFrame, keys: Sequence[str], order: Sequence[str], fn, c) -> DataFrame:
    """Apply the vectorized `fn` (Arrow table of whole keys, sorted by keys + order → rows of
    contract `c`) to every key of `df`: partitioned by its first key, sorted within partitions."""
    keys, order = list(keys), list(order)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for t in complete_keys(batches, keys):
            yield from fn(t).to_batches()

    return df.repartition(keys[0]).sortWithinPartitions(*keys, *order).mapInArrow(run, c.spark_schema())


def contract_table(columns: dict, c) -> pa.Table:
    return pa.table([pc.cast(columns[f.name], f.type) for f in c.schema], schema=c.schema)


def arrow_frame(pdf: pd.DataFrame, c, columns: Sequence[str] | None = None) -> pa.Table:
    """pandas rows as Arrow with contract `c`'s types (naive timestamps are UTC)."""
    t = pa.Table.from_pandas(pdf[list(columns or c.column_names)], preserve_index=False)
    return pa.table([pc.cast(t.column(f), c.schema.field(f).type, safe=False) for f in t.column_names], names=t.column_names)


def pandas_frame(t: pa.Table) -> pd.DataFrame:
    """Arrow rows as pandas with naive-UTC timestamps (as Spark's applyInPandas hands them)."""
    df = t.to_pandas()
    for f in t.schema:
        if pa.types.is_timestamp(f.type):
            df[f.name] = pd.to_datetime(df[f.name], utc=True).dt.tz_localize(None)
    return df


def sort_by_key(t: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """`t` sorted by group_name, instance, ts (names in byte order, as Spark sorts them; rows of
    one key and time keep their order), its name columns dictionary-encoded; and where keys start.

    Names are sorted once per distinct value, rows by integer codes: far cheaper than sorting
    the rows by their strings (in Spark or in Arrow)."""
    t = t.combine_chunks()
    codes = []
    for name in ("group_name", "instance"):
        enc = pc.dictionary_encode(t.column(name).combine_chunks())
        t = t.set_column(t.schema.get_field_index(name), name, enc)
        rank = np.empty(len(enc.dictionary), dtype=np.int64)
        rank[pc.sort_indices(enc.dictionary).to_numpy()] = np.arange(len(enc.dictionary))
        codes.append(np.where(enc.is_null().to_numpy(zero_copy_only=False), -1,
                              rank[enc.indices.fill_null(0).to_numpy(zero_copy_only=False)]))
    ts, _ = micros(t.column("ts"))
    order = np.lexsort((ts, codes[1], codes[0]))
    group, instance = codes[0][order], codes[1][order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (group[1:] != group[:-1]) | (instance[1:] != instance[:-1])
    return t.take(order), starts


def kind_codes(kinds: Sequence[str]) -> list[Column]:
    """`kind` as `_kind`, its position in `kinds` (1-based; 0: another kind, then in `_other_kind`):
    an integer instead of a string on every row that Spark shuffles and hands to Python."""
    code = F.array_position(F.array(*(F.lit(k) for k in kinds)), F.col("kind")).cast("byte")
    return [code.alias("_kind"), F.when(code == 0, F.col("kind")).alias("_other_kind")]


def decode_kinds(t: pa.Table, kinds: Sequence[str]) -> pa.Table:
    """kind_codes undone: `kind` as a dictionary-encoded column, in place of `_kind`, `_other_kind`."""
    code = pc.cast(t.column("_kind"), pa.int32()).to_numpy(zero_copy_only=False)
    other = t.column("_other_kind").combine_chunks()
    names = pa.concat_arrays([pa.array(["", *kinds], pa.string()), pc.unique(other.drop_null())])
    index = np.where(code > 0, code, len(kinds) + 1 + pc.index_in(other, names.slice(len(kinds) + 1)).fill_null(-len(kinds) - 1)
                     .to_numpy(zero_copy_only=False))
    kind = pa.DictionaryArray.from_arrays(pa.array(index, pa.int32(), mask=(index == 0)), names)
    return t.drop_columns(["_kind", "_other_kind"]).append_column("kind", kind)


def by_group(df: DataFrame, columns: Sequence[str], fn, schema, partitions: int | None = None) -> DataFrame:
    """Apply the vectorized `fn` (Arrow table of whole groups sorted by group_name, instance, ts;
    where its keys start → Arrow rows of `schema`) to every group of `df`. Spark only partitions
    by group; each partition is sorted in Python (sort_by_key), so it is held in memory whole:
    `partitions` bounds its size (default: spark.sql.shuffle.partitions). `kind` travels as a
    small integer (kind_codes)."""
    kinds = sorted(PACKS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = list(batches)
        if batches and sum(b.num_rows for b in batches):
            t, starts = sort_by_key(decode_kinds(pa.Table.from_batches(batches), kinds))
            del batches
            yield from fn(t, starts).to_batches()

    encoded = [*(c for c in columns if c != "kind"), *kind_codes(kinds)]
    shuffled = df.select(*encoded).repartition(*([partitions] if partitions else []), "group_name")
    return shuffled.mapInArrow(run, schema)


def merged_spans(spans) -> list[list]:
    """(lo, hi) spans merged where they overlap or touch, sorted."""
    merged: list[list] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


def ts_within(spans: list[tuple], most: int = 256) -> Column:
    """`ts` inside one of `spans` (merged; beyond `most`, their hull): Parquet skips the row
    groups outside, so a few short windows read a few row groups."""
    merged = merged_spans(spans)
    if len(merged) > most:
        merged = [[merged[0][0], max(hi for _, hi in merged)]]
    return reduce(operator.or_, (F.col("ts").between(F.lit(lo), F.lit(hi)) for lo, hi in merged), F.lit(False))


def utc_day(us: int) -> str:
    """The obs_date (UTC date, YYYY-MM-DD) of a time in µs since the epoch."""
    return (np.datetime64(int(us), "us").astype("datetime64[D]")).astype(str)


def partition_days(slh, name: str) -> list[str]:
    """The obs_date partitions the current snapshot of table `name` has files in, oldest first
    (the Delta log's add actions: no data read)."""
    dt = slh.lakehouse._open(name)
    if dt is None:
        return []
    adds = pa.table(dt.get_add_actions(flatten=True))
    return sorted({d for d in adds.column("partition.obs_date").to_pylist() if d is not None}) if adds.num_rows else []


def days_spanned(spans) -> list[str]:
    """Every obs_date (UTC date) a (lo, hi) span in µs touches, sorted: the partitions whose rows
    can lie inside the spans."""
    days = set()
    for lo, hi in spans:
        d, last = np.datetime64(int(lo), "us").astype("datetime64[D]"), np.datetime64(int(hi), "us").astype("datetime64[D]")
        while d <= last:
            days.add(str(d))
            d += np.timedelta64(1, "D")
    return sorted(days)
