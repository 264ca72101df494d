"""HA groups from data: the group a row derives from its instance's neighbours (fill_derived_groups),
the cross-check of derived against configured groups (gold ha_group_checks), and the kinds whose
members are all active by design."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from collectors.packs import PACKS
from lakehouse.tables import HA_GROUP_CHECKS, HA_IDENTITY_SIGHTINGS, TS


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


def identity() -> Column:
    """The store / NodeID an observation reports while active (null otherwise): what an identity
    sighting is made of."""
    return F.when(F.col("active"), F.coalesce(F.col("store"), F.col("node_id")))


def identity_sightings(state: DataFrame) -> DataFrame:
    """HA_IDENTITY_SIGHTINGS of broker_state rows: when each instance's active observations reported
    each store / NodeID first and last (a full run: a Spark scan of broker_state; an incremental
    run's new rows take sightings_of_rows in its one pass — same rows, tests/test_groups.py)."""
    # (not coalesce(...) IS NOT NULL: this form reaches Parquet, which skips all-null row groups)
    ident = state.where(F.col("active") & (F.col("store").isNotNull() | F.col("node_id").isNotNull()))
    return ident.groupBy("group_name", "instance", identity().alias("identity"), "kind").agg(
        F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"))


SIGHTING_KEY = ["group_name", "instance", "identity", "kind"]


def sightings_of_rows(rows: pa.Table) -> pa.Table:
    """identity_sightings in Arrow, of rows (group_name, instance, kind, ts and `identity`, the
    identity() column) held in memory: an incremental pass's new rows."""
    rows = rows.filter(pc.is_valid(rows.column("identity")))
    return merged_sightings(pa.table({**{k: pc.cast(rows.column(k), pa.string()) for k in SIGHTING_KEY},
                                      "first_seen": rows.column("ts"), "last_seen": rows.column("ts")}))


def merged_sightings(*tables: pa.Table) -> pa.Table:
    """Identity sightings (HA_IDENTITY_SIGHTINGS columns) of several tables merged: per key the
    earliest first_seen and the latest last_seen."""
    both = pa.concat_tables([t.select([*SIGHTING_KEY, "first_seen", "last_seen"]).cast(HA_IDENTITY_SIGHTINGS.schema)
                             for t in tables])
    out = both.group_by(SIGHTING_KEY).aggregate([("first_seen", "min"), ("last_seen", "max")])
    return pa.table({**{k: out.column(k) for k in SIGHTING_KEY}, "first_seen": out.column("first_seen_min"),
                     "last_seen": out.column("last_seen_max")}).cast(HA_IDENTITY_SIGHTINGS.schema)


# per check: the column it groups by, the column whose values must not differ, its message, its advice
CHECKS = {
    "group-members-disagree": (
        "group_name", "identity",
        lambda groups, identities: f"members of HA group {', '.join(groups)} serve different stores/NodeIDs: {' vs '.join(identities)}",
        "the members do not share one store/NodeID, so both can be master at once: fix the "
        "store/lock configuration, or declare them as separate groups"),
    "identity-in-several-groups": (
        "identity", "group_name",
        lambda groups, identities: f"one store/NodeID ({', '.join(identities)}) is served by instances of different groups: {', '.join(groups)}",
        "declare the instances that share a store/NodeID as one `group` in the config"),
}


def ha_group_checks(sightings: pa.Table) -> pa.Table:
    """Cross-check HA groups against the identity the brokers report (ActiveMQ store, Artemis
    NodeID) on their active rows (HA_IDENTITY_SIGHTINGS, a few rows per instance, in Arrow):
    members of one group serving different identities (a misconfigured pair: two masters, two
    stores), or one identity split over several groups. HA_GROUP_CHECKS rows; names sorted as
    Spark sorts strings (by code point)."""
    rows = zip(*(sightings.column(c).to_pylist() for c in SIGHTING_KEY),
               pc.cast(sightings.column("first_seen"), pa.int64()).to_pylist(),
               pc.cast(sightings.column("last_seen"), pa.int64()).to_pylist())
    rows = [dict(zip([*SIGHTING_KEY, "first_seen", "last_seen"], r)) for r in rows]
    out = []
    for check, (by, differing, message, advice) in CHECKS.items():
        found: dict[str, list[dict]] = {}
        for r in rows:
            found.setdefault(r[by], []).append(r)
        for members in found.values():
            if len({r[differing] for r in members}) < 2:
                continue
            groups, identities = sorted({r["group_name"] for r in members}), sorted({r["identity"] for r in members})
            out.append({
                "check_id": hashlib.sha256(f"{check}/{','.join(groups)}/{','.join(identities)}".encode()).hexdigest()[:32],
                "kind": min(r["kind"] for r in members), "check": check, "group_name": ", ".join(groups),
                "instances": ", ".join(sorted({r["instance"] for r in members})), "identities": ", ".join(identities),
                "first_seen": min(r["first_seen"] for r in members), "last_seen": max(r["last_seen"] for r in members),
                "message": message(groups, identities), "advice": advice,
            })
    columns = {f.name: [r[f.name] for r in out] for f in HA_GROUP_CHECKS.schema}
    return pa.table({name: (pa.array(values, pa.int64()).cast(TS) if name in ("first_seen", "last_seen") else pa.array(values, pa.string()))
                     for name, values in columns.items()}).cast(HA_GROUP_CHECKS.schema)


def nonexclusive_kinds() -> list[str]:
    """Kinds whose group members are all active by design (no split brain, per-member outages)."""
    return sorted(k for k, p in PACKS.items() if not p.exclusive_roles)
