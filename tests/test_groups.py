"""The Arrow steps of the spine job that a Spark formulation states more plainly: identity sightings
and ha_group_checks (analysis/groups.py), split-brain window rows and their ids
(analysis/spine_onepass.py), each equal to its Spark reference on random input."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis.frames import spark_times
from analysis.groups import ha_group_checks, identity, identity_sightings, merged_sightings, sightings_of_rows
from analysis.spine_onepass import windows_on_rows
from analysis.split_brain import window_id, windows_with_traffic
from lakehouse.tables import HA_GROUP_CHECKS, HA_IDENTITY_SIGHTINGS, TS

T0 = datetime(2026, 11, 27, tzinfo=timezone.utc)
NAMES = ["a", "b", "B", "é", "ö-1", "z"]


def spark_group_checks(sightings: DataFrame) -> DataFrame:
    """ha_group_checks as the spine computed it in Spark before it moved to Arrow (the reference)."""

    def finding(grouped, key: str, check: str, message, advice: str) -> DataFrame:
        return grouped.agg(
            F.min("kind").alias("kind"),
            F.array_sort(F.collect_set("instance")).alias("_instances"),
            F.array_sort(F.collect_set("identity")).alias("_identities"),
            F.array_sort(F.collect_set("group_name")).alias("_groups"),
            F.min("first_seen").alias("first_seen"),
            F.max("last_seen").alias("last_seen"),
        ).where(F.size(f"_{key}") > 1).select(
            F.substring(F.sha2(F.concat_ws("/", F.lit(check), F.concat_ws(",", "_groups"), F.concat_ws(",", "_identities")), 256), 1, 32).alias("check_id"),
            "kind", F.lit(check).alias("check"), F.concat_ws(", ", "_groups").alias("group_name"),
            F.concat_ws(", ", "_instances").alias("instances"), F.concat_ws(", ", "_identities").alias("identities"),
            "first_seen", "last_seen", message.alias("message"), F.lit(advice).alias("advice"))

    split_group = finding(
        sightings.groupBy("group_name"), "identities", "group-members-disagree",
        F.format_string("members of HA group %s serve different stores/NodeIDs: %s", F.concat_ws(", ", "_groups"), F.concat_ws(" vs ", "_identities")),
        "the members do not share one store/NodeID, so both can be master at once: fix the "
        "store/lock configuration, or declare them as separate groups")
    split_identity = finding(
        sightings.groupBy("identity"), "groups", "identity-in-several-groups",
        F.format_string("one store/NodeID (%s) is served by instances of different groups: %s", F.concat_ws(", ", "_identities"), F.concat_ws(", ", "_groups")),
        "declare the instances that share a store/NodeID as one `group` in the config")
    return split_group.unionByName(split_identity)


def rows_of(table: pa.Table) -> list:
    return sorted(map(repr, table.to_pylist()))


observation = st.tuples(st.sampled_from(NAMES[:3]), st.sampled_from(NAMES), st.sampled_from(["activemq", "artemis"]),
                        st.integers(0, 10_000_000), st.sampled_from([True, False, None]),
                        st.sampled_from([None, "KahaDB[/a]", "KahaDB[/b]", "é"]), st.sampled_from([None, "n1", "n2"]))


@settings(max_examples=15, deadline=None)
@given(st.lists(observation, max_size=40), st.integers(0, 40))
def test_sightings_and_group_checks_equal_the_spark_steps(spark, rows, cut):
    table = pa.table({
        "group_name": [r[0] for r in rows], "instance": [r[1] for r in rows], "kind": [r[2] for r in rows],
        "ts": pa.array([r[3] for r in rows], pa.int64()).cast(TS), "active": pa.array([r[4] for r in rows], pa.bool_()),
        "store": pa.array([r[5] for r in rows], pa.string()), "node_id": pa.array([r[6] for r in rows], pa.string()),
    })
    df = spark.createDataFrame(table)
    reference = identity_sightings(df).toArrow().cast(HA_IDENTITY_SIGHTINGS.schema)
    with_identity = df.withColumn("identity", identity()).toArrow()
    assert rows_of(sightings_of_rows(with_identity)) == rows_of(reference)
    # in two parts (an incremental run: stored sightings merged with the new rows')
    parts = [sightings_of_rows(with_identity.slice(0, cut)), sightings_of_rows(with_identity.slice(cut))]
    assert rows_of(merged_sightings(*parts)) == rows_of(reference)

    checks = ha_group_checks(reference)
    spark_checks = spark_group_checks(spark.createDataFrame(reference, HA_IDENTITY_SIGHTINGS.spark_schema())).toArrow()
    assert rows_of(checks) == rows_of(spark_checks.cast(HA_GROUP_CHECKS.schema))
    assert checks.schema == HA_GROUP_CHECKS.schema


def test_group_checks_find_a_misconfigured_pair():
    at = pa.array([0, 1_000_000], pa.int64()).cast(TS)
    sightings = pa.table({"group_name": ["g", "g"], "instance": ["a", "b"], "identity": ["s1", "s2"],
                          "kind": ["activemq", "activemq"], "first_seen": at, "last_seen": at})
    (row,) = ha_group_checks(sightings).to_pylist()
    assert (row["check"], row["instances"], row["identities"]) == ("group-members-disagree", "a, b", "s1, s2")
    assert ha_group_checks(sightings.slice(0, 1)).num_rows == 0


def test_spark_times_are_sparks_timestamp_strings(spark):
    us = np.array([0, 1, 120_000, 999_999, 1_000_000, 1_796_000_000_123_450, 1_796_000_000_000_000], dtype=np.int64)
    df = spark.createDataFrame(pa.table({"ts": pa.array(us).cast(TS)}))
    assert spark_times(us) == [r[0] for r in df.select(F.col("ts").cast("string")).collect()]


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 60), st.sampled_from([True, False, None]),
                          st.integers(0, 5)), min_size=1, max_size=60),
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20), st.integers(0, 10)), min_size=1, max_size=4),
       st.sampled_from([float("inf"), 2.5e6]))
def test_windows_on_rows_equal_the_spark_steps(spark, observations, spans, hole_us):
    """Windows with given bounds measured on rows in Arrow (an incremental run's re-measured windows)
    equal split_brain.windows_with_traffic on the same rows — including sides without a row inside."""
    seen = {}
    for inst, sec, active, grown in observations:  # one row per instance and second
        seen[(inst, sec)] = (active, grown)
    keys = sorted(seen)
    at = [T0 + timedelta(seconds=s) for _, s in keys]
    rows = pa.table({
        "group_name": ["g"] * len(keys), "instance": [i for i, _ in keys], "ts": pa.array(at, TS),
        "reachable": [seen[k][0] is not None for k in keys], "active": pa.array([seen[k][0] for k in keys], pa.bool_()),
        "total_enqueued": pa.array([sum(seen[j][1] for j in keys[:n + 1] if j[0] == k[0]) for n, k in enumerate(keys)], pa.int64()),
    })
    bounds = {}
    for start, length, wider in spans:  # one window per pair and start (window_id)
        a, b = ("a", "b") if start % 2 else ("a", "c")
        lo, hi = T0 + timedelta(seconds=start), T0 + timedelta(seconds=start + length)
        bounds[(a, b, start)] = ({"kind": "activemq", "group_name": "g", "instance_a": a, "instance_b": b, "certain_start": lo,
                       "certain_end": hi, "possible_start": lo - timedelta(seconds=wider), "possible_end": hi + timedelta(seconds=wider)})
    bounds = pa.Table.from_pylist(list(bounds.values()), pa.schema([("kind", pa.string()), ("group_name", pa.string()), ("instance_a", pa.string()),
                                                     ("instance_b", pa.string()), *((n, TS) for n in ("certain_start", "certain_end",
                                                                                                       "possible_start", "possible_end"))]))
    got = windows_on_rows(bounds, rows, hole_us)
    pairs = spark.createDataFrame(bounds).withColumn("window_id", window_id())
    ref = windows_with_traffic(pairs, spark.createDataFrame(rows), hole_us).toArrow().cast(got.schema)
    assert rows_of(got) == rows_of(ref)
