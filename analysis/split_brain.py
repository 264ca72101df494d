"""Split-brain windows: two instances of one group active at once, certain and possible, with the
traffic each side took."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis.groups import nonexclusive_kinds

# --- gold: split brain ------------------------------------------------------------------------------


def overlapping_pairs(intervals: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Pairs of active intervals of two instances of one group that overlap, with their windows."""
    nonexclusive = nonexclusive_kinds() if nonexclusive is None else nonexclusive
    intervals = intervals.where(~F.col("kind").isin(nonexclusive))
    a, b = intervals.alias("a"), intervals.alias("b")
    pairs = a.join(
        b,
        (F.col("a.group_name") == F.col("b.group_name"))
        & (F.col("a.instance") < F.col("b.instance"))
        & (F.col("a.start_ts") <= F.col("b.end_ts"))
        & (F.col("b.start_ts") <= F.col("a.end_ts")),
    ).select(
        F.col("a.kind").alias("kind"),
        F.col("a.group_name").alias("group_name"),
        F.col("a.instance").alias("instance_a"),
        F.col("b.instance").alias("instance_b"),
        F.greatest("a.start_ts", "b.start_ts").alias("certain_start"),
        F.least("a.end_ts", "b.end_ts").alias("certain_end"),
        F.greatest(F.coalesce("a.start_lower", "a.start_ts"), F.coalesce("b.start_lower", "b.start_ts")).alias("possible_start"),
        F.least(F.coalesce("a.end_upper", "a.end_ts"), F.coalesce("b.end_upper", "b.end_ts")).alias("possible_end"),
        F.col("a.interval_id").alias("_a_id"),
        F.col("b.interval_id").alias("_b_id"),
    )
    return pairs.withColumn("window_id", window_id())


def window_id() -> Column:
    return F.substring(
        F.sha2(F.concat_ws("/", "group_name", "instance_a", "instance_b", F.col("certain_start").cast("string")), 256), 1, 32)


def window_traffic(pairs: DataFrame, broker_state: DataFrame) -> DataFrame:
    """Per window: unanswered scrapes of either side inside the certain window, and the counter
    growth on each side's *active* observations inside the possible window.

    Each window is split into its two sides so the join with broker_state is an equi-join on
    (group, instance): a broadcast hash join of the windows against one pass over the
    observations; only the time range is checked per row."""
    window = ["window_id", "group_name", "certain_start", "certain_end", "possible_start", "possible_end"]
    sides = pairs.select(*window, F.col("instance_a").alias("instance"), F.lit(True).alias("side_a")).unionByName(
        pairs.select(*window, F.col("instance_b").alias("instance"), F.lit(False).alias("side_a")))
    rows = broker_state.select("group_name", "instance", "ts", "reachable", "active", "total_enqueued")
    joined = rows.join(F.broadcast(sides), ["group_name", "instance"]).where(
        F.col("ts").between(F.col("possible_start"), F.col("possible_end")))
    in_certain = F.col("ts").between(F.col("certain_start"), F.col("certain_end"))
    active = F.coalesce(F.col("active"), F.lit(False))

    def growth(side):
        counter = F.when(side & active, F.col("total_enqueued"))
        return (F.max(counter) - F.min(counter)).cast("long")

    return joined.groupBy("window_id").agg(
        F.sum(F.when(in_certain & ~F.col("reachable"), 1).otherwise(0)).alias("unanswered"),
        growth(F.col("side_a")).alias("enqueued_a"),
        growth(~F.col("side_a")).alias("enqueued_b"),
    )


def split_brain_windows(intervals: DataFrame, broker_state: DataFrame, nonexclusive: list[str] | None = None) -> DataFrame:
    """Overlapping active intervals of two instances of one group, with certainty and traffic.

    Traffic = counter growth on each side's *active* observations inside the possible window
    (not what a passive instance loaded from the journal before it took over)."""
    return windows_with_traffic(overlapping_pairs(intervals, nonexclusive), broker_state)


def windows_with_traffic(pairs: DataFrame, broker_state: DataFrame) -> DataFrame:
    """split_brain_windows rows for `pairs` (overlapping_pairs), traffic from `broker_state`."""
    return window_rows(pairs.join(window_traffic(pairs, broker_state), "window_id", "left"))


def window_rows(windows: DataFrame) -> DataFrame:
    """split_brain_windows rows from windows with their traffic (`unanswered`, `enqueued_a/b`)."""
    return windows.select(
        "window_id",
        "kind",
        "group_name",
        "instance_a",
        "instance_b",
        "certain_start",
        "certain_end",
        "possible_start",
        "possible_end",
        F.when(F.coalesce(F.col("unanswered"), F.lit(0)) > 0, "possible").otherwise("certain").alias("certainty"),
        ((F.unix_micros("certain_end") - F.unix_micros("certain_start")) / 1e6).alias("duration_s"),
        "enqueued_a",
        "enqueued_b",
    )
