"""HA groups from data: the group a row derives from its instance's neighbours (fill_derived_groups),
the cross-check of derived against configured groups (gold ha_group_checks), and the kinds whose
members are all active by design."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from collectors.packs import PACKS


def fill_derived_groups(state: DataFrame, configured: set[str], context: DataFrame | None = None) -> DataFrame:
    """Give a row whose group could not be derived the group its instance derived around it.

    Where the group comes from data (an Artemis NodeID, an ActiveMQ master's store), a scrape that
    got no answer, or a waiting ActiveMQ slave, cannot say which group it belongs to and falls
    back to the instance name; without this its instance's intervals would miss those rows.
    The nearest derived group before wins, else the nearest after. Configured groups are kept.
    `context`: earlier stored rows (instance, ts, group_name) that may be the nearest before."""
    if context is not None:
        marked = context.withColumn("_context", F.lit(True))
        filled = fill_derived_groups(state.withColumn("_context", F.lit(False)).unionByName(marked, allowMissingColumns=True), configured)
        return filled.where(~F.col("_context")).drop("_context")
    by_time = Window.partitionBy("instance").orderBy("ts")
    derived_group = F.when(F.col("group_name") != F.col("instance"), F.col("group_name"))
    filled = F.coalesce(
        F.last(derived_group, ignorenulls=True).over(by_time.rowsBetween(Window.unboundedPreceding, -1)),
        F.first(derived_group, ignorenulls=True).over(by_time.rowsBetween(1, Window.unboundedFollowing)),
        F.col("group_name"),
    )
    fallback = (F.col("group_name") == F.col("instance")) & ~F.col("instance").isin(sorted(configured))
    return state.withColumn("group_name", F.when(fallback, filled).otherwise(F.col("group_name")))


def identity_sightings(state: DataFrame) -> DataFrame:
    """HA_IDENTITY_SIGHTINGS of broker_state rows: when each instance's active observations reported
    each store / NodeID first and last."""
    # (not coalesce(...) IS NOT NULL: this form reaches Parquet, which skips all-null row groups)
    ident = state.where(F.col("active") & (F.col("store").isNotNull() | F.col("node_id").isNotNull()))
    return ident.groupBy("group_name", "instance", F.coalesce(F.col("store"), F.col("node_id")).alias("identity"), "kind").agg(
        F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"))


def ha_group_checks(sightings: DataFrame) -> DataFrame:
    """Cross-check HA groups against the identity the brokers report (ActiveMQ store, Artemis
    NodeID) on their active rows (`identity_sightings`): members of one group serving different
    identities (a misconfigured pair: two masters, two stores), or one identity split over several
    groups."""

    def finding(grouped, key: str, check: str, message, advice: str) -> DataFrame:
        """One row per group (or identity) where more than one `key` value was seen; `message`
        may use the aggregated `_groups`, `_instances`, `_identities` columns."""
        return grouped.agg(
            F.min("kind").alias("kind"),
            F.array_sort(F.collect_set("instance")).alias("_instances"),
            F.array_sort(F.collect_set("identity")).alias("_identities"),
            F.array_sort(F.collect_set("group_name")).alias("_groups"),
            F.min("first_seen").alias("first_seen"),
            F.max("last_seen").alias("last_seen"),
        ).where(F.size(f"_{key}") > 1).select(
            F.substring(F.sha2(F.concat_ws("/", F.lit(check), F.concat_ws(",", "_groups"), F.concat_ws(",", "_identities")), 256), 1, 32).alias("check_id"),
            "kind",
            F.lit(check).alias("check"),
            F.concat_ws(", ", "_groups").alias("group_name"),
            F.concat_ws(", ", "_instances").alias("instances"),
            F.concat_ws(", ", "_identities").alias("identities"),
            "first_seen",
            "last_seen",
            message.alias("message"),
            F.lit(advice).alias("advice"),
        )

    split_group = finding(
        sightings.groupBy("group_name"),
        "identities",
        "group-members-disagree",
        F.format_string("members of HA group %s serve different stores/NodeIDs: %s", F.concat_ws(", ", "_groups"), F.concat_ws(" vs ", "_identities")),
        "the members do not share one store/NodeID, so both can be master at once: fix the "
        "store/lock configuration, or declare them as separate groups",
    )
    split_identity = finding(
        sightings.groupBy("identity"),
        "groups",
        "identity-in-several-groups",
        F.format_string("one store/NodeID (%s) is served by instances of different groups: %s", F.concat_ws(", ", "_identities"), F.concat_ws(", ", "_groups")),
        "declare the instances that share a store/NodeID as one `group` in the config",
    )
    return split_group.unionByName(split_identity)


def nonexclusive_kinds() -> list[str]:
    """Kinds whose group members are all active by design (no split brain, per-member outages)."""
    return sorted(k for k, p in PACKS.items() if not p.exclusive_roles)
