"""Clock skew between collectors and brokers, estimated per target from the Jolokia agents' stamps."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import watermark
from analysis.frames import cached, micros
from collectors.base import Observation, broker_clock_skew_s

# --- clock skew between collectors ------------------------------------------------------------------
#
# Observations carry the collector's clock; the Jolokia agent stamps every item with the broker
# JVM's clock (`timestamp`, whole epoch seconds). Per target, each answered scrape gives one sample
# of broker clock − collector clock: median item timestamp + 0.5 − observation ts (+0.5: the agent
# truncates to whole seconds, so the stamp is on average half a second behind). The estimate for a
# row is the median of the last SKEW_WINDOW samples of its target at or before it (causal: rows
# appended later never change it, so incremental runs equal full ones); rows before the target's
# SKEW_MIN_SAMPLES-th sample take the estimate at that sample, rows without an answer the last
# estimate before them. Silver rows of the target are placed on the brokers' clock, shifted by the
# estimate (whole ms), when |estimate| >= CLOCK_SKEW_THRESHOLD_S; below it (NTP noise, truncation,
# the scrape phase) nothing moves. collector_health keeps the estimate and the collector's time.
# Caveat: one target cannot tell a wrong collector clock from a wrong broker clock; both are
# aligned to the broker's.

CLOCK_SKEW_THRESHOLD_S = 1.0
SKEW_WINDOW = 60  # answered scrapes the running median covers
SKEW_MIN_SAMPLES = 5  # fewer: no estimate, no shift
STAMP_BIAS_S = 0.5  # the agent truncates to whole seconds: on average its stamp is half a second behind
ROLLING_CHUNK_ROWS = 32_768  # rows whose windows are sorted at once (x SKEW_WINDOW doubles: 16 MB)
SKEW_SAMPLES_SCHEMA = "obs_key string, target string, us long, sample double"
SKEW_SCHEMA = "obs_key string, clock_skew_s double, shift_us long"


def skew_sample_batch(batch: pa.RecordBatch, bias: float | None = None) -> pa.RecordBatch:
    """bronze rows → (obs_key, target, µs, sample): one skew sample per answered scrape (else null)."""
    bias = STAMP_BIAS_S if bias is None else bias
    us, _ = micros(batch.column("ts"))
    cols = batch.select(["obs_key", "target", "response_json", "error"]).to_pydict()
    samples = []
    for i, resp in enumerate(cols["response_json"]):
        sample = None
        if resp is not None and cols["error"][i] is None:
            try:
                items = json.loads(resp)
            except ValueError:
                items = None
            obs = Observation(datetime.fromtimestamp(int(us[i]) / 1e6, tz=timezone.utc), cols["target"][i], "", None, [], items, None)
            skew = broker_clock_skew_s(obs) if obs.answered else None
            sample = None if skew is None else skew + bias
        samples.append(sample)
    return pa.RecordBatch.from_arrays(
        [pa.array(cols["obs_key"], pa.string()), pa.array(cols["target"], pa.string()), pa.array(us, pa.int64()),
         pa.array(samples, pa.float64())], names=["obs_key", "target", "us", "sample"])


def skew_samples(bronze: DataFrame) -> DataFrame:
    bias = STAMP_BIAS_S  # read here: the Python workers import the module afresh

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield skew_sample_batch(b, bias)

    return bronze.select("obs_key", "target", "ts", "response_json", "error").mapInArrow(run, SKEW_SAMPLES_SCHEMA)


def estimate_skews(pdf: pd.DataFrame, threshold: float | None = None, window: int | None = None,
                   min_samples: int | None = None) -> pd.DataFrame:
    """One target's rows (obs_key, us, sample) → (obs_key, clock_skew_s, shift_us); see above."""
    return estimate_skews_by_target(pdf.assign(target=""), threshold, window, min_samples).drop(columns="target")


def estimate_skews_by_target(pdf: pd.DataFrame, threshold: float | None = None, window: int | None = None,
                             min_samples: int | None = None) -> pd.DataFrame:
    """Rows of any number of targets (target, obs_key, us, sample) → (target, obs_key, clock_skew_s,
    shift_us), sorted by target, µs, obs_key: every target's estimates in one pass of NumPy (the
    service's tick has a few new rows for each of a thousand targets)."""
    threshold = CLOCK_SKEW_THRESHOLD_S if threshold is None else threshold
    window = SKEW_WINDOW if window is None else window
    min_samples = SKEW_MIN_SAMPLES if min_samples is None else min_samples
    pdf = pdf.sort_values(["target", "us", "obs_key"], kind="stable").reset_index(drop=True)
    sample = pdf["sample"].astype("float64").to_numpy()
    known = ~np.isnan(sample)
    est = np.full(len(pdf), np.nan)
    est[known] = rolling_medians(pdf["target"].to_numpy()[known], sample[known], window, min_samples)
    targets = pdf["target"].to_numpy()
    est = pd.Series(est).groupby(targets, sort=False).ffill().groupby(targets, sort=False).bfill()
    values = est.to_numpy()
    shift = np.where(np.abs(values) >= threshold, np.round(np.nan_to_num(values) * 1000) * 1000, 0).astype(np.int64)
    return pd.DataFrame({"target": pdf["target"], "obs_key": pdf["obs_key"],
                         "clock_skew_s": est.astype(object).where(est.notna(), None), "shift_us": shift})


def rolling_medians(keys: np.ndarray, values: np.ndarray, window: int, min_periods: int) -> np.ndarray:
    """The median of each value with the up to window-1 values before it of the same key (`keys`
    sorted: equal keys adjacent), NaN below min_periods values — pandas' rolling median, exactly
    (the middle value, or the mean of the two middle ones), for every key at once."""
    n = len(values)
    out = np.empty(n)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if n else np.empty(0, np.int64)
    first = np.repeat(starts, np.diff(np.r_[starts, n]))  # each row's key's first row
    back = np.arange(window - 1, -1, -1)
    for lo_row in range(0, n, ROLLING_CHUNK_ROWS):  # bounded memory: a chunk's windows at a time
        pos = np.arange(lo_row, min(n, lo_row + ROLLING_CHUNK_ROWS))
        idx = pos[:, None] - back[None, :]
        windows = np.where(idx >= first[pos, None], values[np.maximum(idx, 0)], np.nan)
        windows.sort(axis=1)  # the values first, NaN (before the key's first row) last
        count = np.minimum(pos - first[pos] + 1, window)
        lo = np.take_along_axis(windows, ((count - 1) // 2)[:, None], axis=1)[:, 0]
        hi = np.take_along_axis(windows, (count // 2)[:, None], axis=1)[:, 0]
        out[pos] = np.where(count >= min_periods, (lo + hi) / 2, np.nan)
    return out


def skews_of(samples: DataFrame, threshold: float = CLOCK_SKEW_THRESHOLD_S) -> DataFrame:
    params = (threshold, SKEW_WINDOW, SKEW_MIN_SAMPLES)  # read here: the workers import the module afresh

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        return estimate_skews(pdf, *params)

    return samples.groupBy("target").applyInPandas(run, SKEW_SCHEMA)


def clock_skews(bronze: DataFrame, threshold: float = CLOCK_SKEW_THRESHOLD_S) -> DataFrame:
    """Per bronze row: its target's clock skew estimate and the shift its silver rows get (none
    below `threshold`; math.inf: estimate only)."""
    return skews_of(skew_samples(bronze), threshold)


def skews_increment(old: DataFrame, new: DataFrame, threshold: float = CLOCK_SKEW_THRESHOLD_S) -> DataFrame | None:
    """The skews of the `new` bronze rows, equal to what a full run gives them: the running median
    needs the last SKEW_WINDOW stored samples of their targets (a recent tail of stored rows, all
    stored rows of the targets it holds too few of). None when that would not be exact: new rows
    not later than stored ones of their target, or stored rows that wait for an estimate the new
    rows would give them. The skews come cached (computed while the samples were): the caller
    unpersists them."""
    with cached(skew_samples(new)) as fresh:
        firsts = {r.target: r for r in fresh.groupBy("target").agg(
            F.min("us").alias("first"), F.count("sample").alias("n")).collect()}
        if not firsts:
            return skews_of(fresh, threshold)
        names = F.broadcast(old.sparkSession.createDataFrame([(t,) for t in sorted(firsts)], "target string"))
        since = min(r.first for r in firsts.values()) - watermark.RESUME_TAIL_US
        with cached(skew_samples(old.join(names, "target", "left_semi").where(F.col("ts") >= F.timestamp_micros(F.lit(since))))) as tail:
            found = {r.target: r for r in tail.groupBy("target").agg(F.max("us").alias("last"), F.count("sample").alias("n")).collect()}
            if any(t in found and found[t].last >= r.first for t, r in firsts.items()):
                return None
            short = sorted(t for t in firsts if found.get(t) is None or found[t].n < SKEW_WINDOW)
            context = tail
            if short:
                few = F.broadcast(old.sparkSession.createDataFrame([(t,) for t in short], "target string"))
                every = skew_samples(old.join(few, "target", "left_semi"))
                stored = {r.target: r for r in every.groupBy("target").agg(F.count("*").alias("rows"), F.count("sample").alias("n")).collect()}
                if any(t in stored and stored[t].n < SKEW_MIN_SAMPLES and firsts[t].n > 0 for t in short):
                    return None  # its stored rows have no estimate yet; the new samples would give them one
                context = tail.join(few, "target", "left_anti").unionByName(every)
            keys = fresh.select("obs_key")
            skews = skews_of(context.unionByName(fresh), threshold).join(keys, "obs_key", "left_semi").cache()
            skews.count()  # computed from the cached samples, which are unpersisted on the way out
            return skews
