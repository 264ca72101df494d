"""What the silver job carries from one run to the next (state table silver_carry), so that an
incremental run appends the silver rows of the new bronze_jolokia rows exactly as a full run writes
them without reading stored rows back.

Two things of the stored rows decide a new row's silver rows (analysis/silver.py):
- its clock skew estimate: the running median of its target's last SKEW_WINDOW samples, forward
  filled (analysis/clock_skew.py). Carried per target: its last bronze row's µs (a new row not
  later than it is late: the full run would sort it among the stored ones), its sample count (a
  target whose stored rows wait for their SKEW_MIN_SAMPLES-th sample would have them changed by new
  samples) and its last SKEW_WINDOW samples (µs, sample), the median's context;
- the group of a row whose group falls back to its instance (analysis/groups.py
  fill_derived_groups): the nearest derived group before it, else after it. Carried per instance
  (not configured): its last broker_state row's µs and its last row with a derived group.

Both are merged from summaries of new rows, the same functions whether the rows were parsed on the
driver or in Spark, so every kind of run leaves the same carry. Silver_carry is written last in
every silver run and anchors the watermark (analysis/watermark.py anchored_watermark): a run
commits only the silver tables it has rows for."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import clock_skew
from lakehouse.tables import SILVER_CARRY

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
ONE_US = timedelta(microseconds=1)
SUMMARY_SCHEMA = "target string, last_us long, samples long, window string"


@dataclass
class Carry:
    """targets: name → {last_us, samples, window: [(µs, sample)…]}; instances: name → {last_us, derived: (µs, group) | None}."""

    targets: dict[str, dict] = field(default_factory=dict)
    instances: dict[str, dict] = field(default_factory=dict)


def micros_of(ts: datetime) -> int:
    return (ts - EPOCH) // ONE_US


# --- summaries of rows ---------------------------------------------------------------------------------


def target_summaries(samples: pd.DataFrame, window: int) -> dict[str, dict]:
    """Skew samples (target, us, obs_key, sample; sample null: unanswered) → each target's carry: its
    last µs, its answered count, its last `window` samples; all targets at once (a tick has a few rows
    for each of many targets)."""
    if samples.empty:
        return {}
    rows = samples.sort_values(["target", "us", "obs_key"], kind="stable")
    by_target = rows.groupby("target", sort=False)
    last_us, answered = by_target["us"].max(), by_target["sample"].count()
    known = rows[rows["sample"].notna()]
    kept = known.groupby("target", sort=False).tail(window) if window else known.iloc[:0]
    windows: dict[str, list] = {}
    for t, u, v in zip(kept["target"], kept["us"], kept["sample"]):
        windows.setdefault(t, []).append((int(u), float(v)))
    return {t: {"last_us": int(last_us[t]), "samples": int(answered[t]), "window": windows.get(t, [])} for t in last_us.index}


def spark_target_summaries(samples: DataFrame) -> dict[str, dict]:
    """target_summaries of a Spark frame of skew samples (clock_skew.skew_samples), a target at a time."""
    window = clock_skew.SKEW_WINDOW  # read here: the workers import the module afresh

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        s = target_summaries(pdf, window)[pdf["target"].iloc[0]]
        return pd.DataFrame({"target": [pdf["target"].iloc[0]], "last_us": [s["last_us"]], "samples": [s["samples"]],
                             "window": [json.dumps(s["window"])]})

    return {r.target: {"last_us": r.last_us, "samples": r.samples, "window": [tuple(x) for x in json.loads(r.window)]}
            for r in samples.groupBy("target").applyInPandas(run, SUMMARY_SCHEMA).collect()}


def instance_summaries(rows: list[dict], configured: set[str]) -> dict[str, dict]:
    """broker_state rows (as written: groups filled) → per instance not configured its last row's µs
    and its last row with a derived group (µs, group), the later group first on a tie as Spark's max."""
    out: dict[str, dict] = {}
    for r in rows:
        instance, group = r["instance"], r["group_name"]
        if instance in configured:
            continue
        us = micros_of(r["ts"])
        s = out.setdefault(instance, {"last_us": us, "derived": None})
        s["last_us"] = max(s["last_us"], us)
        if group is not None and group != instance and (s["derived"] is None or (us, group) > s["derived"]):
            s["derived"] = (us, group)
    return out


def spark_instance_summaries(state: DataFrame, configured: set[str]) -> dict[str, dict]:
    """instance_summaries of a Spark frame of broker_state rows."""
    derived = F.col("group_name") != F.col("instance")
    rows = state.where(~F.col("instance").isin(sorted(configured))).groupBy("instance").agg(
        F.max(F.unix_micros("ts")).alias("last_us"),
        F.max(F.when(derived, F.struct(F.unix_micros("ts").alias("us"), "group_name"))).alias("derived")).collect()
    return {r.instance: {"last_us": r.last_us, "derived": None if r.derived is None else (r.derived.us, r.derived.group_name)}
            for r in rows}


def merged(old: Carry, targets: dict[str, dict], instances: dict[str, dict], window: int) -> Carry:
    """The carry after a run whose new rows (all later than the stored ones of their target and
    instance) summarise to `targets` and `instances`."""
    out = Carry(dict(old.targets), dict(old.instances))
    for t, s in targets.items():
        o = old.targets.get(t)
        out.targets[t] = s if o is None else {"last_us": max(o["last_us"], s["last_us"]), "samples": o["samples"] + s["samples"],
                                              "window": [*o["window"], *s["window"]][-window:] if window else []}
    for i, s in instances.items():
        o = old.instances.get(i)
        out.instances[i] = s if o is None else {"last_us": max(o["last_us"], s["last_us"]), "derived": s["derived"] or o["derived"]}
    return out


# --- the new rows, from the carry ------------------------------------------------------------------------


def skews_from_carry(samples: pd.DataFrame, carry: Carry, threshold: float) -> pd.DataFrame | None:
    """The skews (obs_key, clock_skew_s, shift_us) of new rows' samples (obs_key, target, us, sample),
    equal to a full run's: each target's carried samples go before its new ones as the running
    median's context. None when that is not exact: a new row not later than a stored one of its
    target, or stored rows that wait for the estimate new samples would give them."""
    window, min_samples = clock_skew.SKEW_WINDOW, clock_skew.SKEW_MIN_SAMPLES
    if samples.empty:
        return pd.DataFrame({"obs_key": [], "clock_skew_s": [], "shift_us": []})
    firsts = samples.groupby("target", sort=False).agg(first=("us", "min"), answered=("sample", "count"))
    context = []
    for target, first, answered in zip(firsts.index, firsts["first"], firsts["answered"]):
        old = carry.targets.get(target)
        if old is None:
            continue
        if old["last_us"] >= first or (old["samples"] < min_samples and answered):
            return None
        # keys that keep the carried samples in their order (they are all earlier than the new rows)
        context.extend((target, f"{k:09d}", u, v) for k, (u, v) in enumerate(old["window"]))
    ctx = pd.DataFrame(context, columns=["target", "obs_key", "us", "sample"]).astype({"us": "int64", "sample": "float64"})
    both = pd.concat([ctx.assign(new=False), samples[["target", "obs_key", "us", "sample"]].assign(new=True)], ignore_index=True)
    est = clock_skew.estimate_skews_by_target(both.drop(columns="new"), threshold, window, min_samples)
    fresh = both.sort_values(["target", "us", "obs_key"], kind="stable")["new"].to_numpy()
    return est[fresh].drop(columns="target").reset_index(drop=True)


def fill_from_carry(rows: list[dict], configured: set[str], carry: Carry) -> bool:
    """fill_derived_groups over new broker_state rows (in place), with each instance's carried last
    derived group as the nearest before. False (rows untouched) when that is not exact: a new row not
    later than a stored one of its instance, or the first derived group of an instance whose stored
    rows all wait for one."""
    by_instance: dict[str, list[dict]] = {}
    for r in rows:
        if r["instance"] not in configured:
            by_instance.setdefault(r["instance"], []).append(r)
    for instance, rs in by_instance.items():
        old = carry.instances.get(instance)
        if old is None:
            continue
        if old["last_us"] >= min(micros_of(r["ts"]) for r in rs):
            return False
        if old["derived"] is None and any(_derived(r, instance) for r in rs):
            return False
    for instance, rs in by_instance.items():
        rs.sort(key=lambda r: r["ts"])
        old = carry.instances.get(instance)
        before = [None] * len(rs)
        last = old["derived"][1] if old is not None and old["derived"] is not None else None
        for k, r in enumerate(rs):
            before[k] = last
            last = _derived(r, instance) or last
        after = None
        for k in range(len(rs) - 1, -1, -1):
            r = rs[k]
            own = _derived(r, instance)
            if r["group_name"] == instance:
                r["group_name"] = before[k] or after or r["group_name"]
            after = own or after
    return True


def _derived(row: dict, instance: str) -> str | None:
    """The row's group when it was derived from data (not the instance's own name)."""
    group = row["group_name"]
    return group if group is not None and group != instance else None


# --- the table -----------------------------------------------------------------------------------------


def carry_table(carry: Carry) -> pa.Table:
    rows = [{"scope": "target", "name": t, "last_us": s["last_us"], "samples": s["samples"],
             "window": json.dumps([[u, v] for u, v in s["window"]])} for t, s in sorted(carry.targets.items())]
    rows += [{"scope": "instance", "name": i, "last_us": s["last_us"],
              "derived_us": None if s["derived"] is None else s["derived"][0],
              "derived_group": None if s["derived"] is None else s["derived"][1]} for i, s in sorted(carry.instances.items())]
    return pa.Table.from_pylist(rows, schema=SILVER_CARRY.schema)


def carry_of(table: pa.Table) -> Carry:
    carry = Carry()
    for r in table.to_pylist():
        if r["scope"] == "target":
            carry.targets[r["name"]] = {"last_us": r["last_us"], "samples": r["samples"],
                                        "window": [(int(u), float(v)) for u, v in json.loads(r["window"])]}
        elif r["scope"] == "instance":
            derived = None if r["derived_us"] is None else (r["derived_us"], r["derived_group"])
            carry.instances[r["name"]] = {"last_us": r["last_us"], "derived": derived}
    return carry


def shifted_columns(bronze: pa.Table, skews: pd.DataFrame) -> pa.Table:
    """The bronze rows with their skew (clock_skew_s) and shift (shift_us), as the full run joins them."""
    by_key = dict(zip(skews["obs_key"], zip(skews["clock_skew_s"], skews["shift_us"])))
    got = [by_key.get(k, (None, None)) for k in bronze.column("obs_key").to_pylist()]
    skew = [None if s is None or (isinstance(s, float) and np.isnan(s)) else float(s) for s, _ in got]
    shift = [None if u is None else int(u) for _, u in got]
    return bronze.append_column("clock_skew_s", pa.array(skew, pa.float64())).append_column("shift_us", pa.array(shift, pa.int64()))
