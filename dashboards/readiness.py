"""The failover-readiness view's data: per replication and consumer group, the latest round of gold
failover_readiness at or before a time — what the group would re-read or skip if it failed over to
DR then, per partition, with the age of MirrorMaker 2's last checkpoint. Read as stored; nothing
is computed here but sums for the headline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pyarrow.compute as pc

from dashboards.data import Gold, MissingTable, rows, ts_literal, utc
from dashboards.overview import partition_days
from lakehouse.store import sql_literal

TABLE = "failover_readiness"
COLUMNS = ["ts", "replication", "group_name", "source_cluster", "target_cluster", "consumer_group", "topic", "partition",
           "status", "committed", "translated", "translated_from", "re_read", "skipped", "checkpoint_age_s",
           "checkpoint_upstream", "dr_log_end", "detail"]
STATUS_RANK = {"unknown": 0, "lossy": 1, "no-translation": 2, "stale": 3, "not-committed": 4, "ready": 5}
MAX_DAYS = 7  # how far back "the latest round" is looked for


@dataclass
class GroupReadiness:
    """One consumer group of one replication in its latest round."""

    replication: str
    consumer_group: str
    flow: str  # "primary → dr"
    ts: datetime
    status: str  # the worst partition's
    re_read: int | None  # summed over partitions; None when one is unknown
    skipped: int | None
    oldest_checkpoint_s: float | None
    partitions: list[dict] = field(default_factory=list)


def readiness_groups(gold: Gold) -> list[str]:
    """Cluster groups with readiness rows in the newest partitions."""
    days = partition_days(gold, TABLE, MAX_DAYS)
    if not days:
        return []
    t = gold.read(TABLE, columns=["group_name"], filter=f"obs_date = {sql_literal(days[0])}")
    return sorted(x for x in pc.unique(t.column("group_name")).to_pylist() if x)


def latest_readiness(gold: Gold, group: str | None = None, as_of: datetime | None = None) -> list[GroupReadiness]:
    """The latest round of each replication at or before `as_of` (default: the newest), per consumer
    group, worst first. MissingTable when the table is not there."""
    if not gold.has(TABLE):
        raise MissingTable(TABLE, gold.root)
    where = [f"group_name = {sql_literal(group)}"] if group else []
    if as_of is not None:
        where.append(f"ts <= {ts_literal(as_of)}")
    found: list[dict] = []
    for day in partition_days(gold, TABLE, 31):
        if as_of is not None and day > as_of.strftime("%Y-%m-%d"):
            continue
        found = rows(gold.read(TABLE, columns=COLUMNS, filter=" AND ".join([f"obs_date = {sql_literal(day)}", *where])))
        if found:
            break
    newest: dict[str, datetime] = {}
    for r in found:
        newest[r["replication"]] = max(newest.get(r["replication"], r["ts"]), r["ts"])
    by_group: dict[tuple[str, str], list[dict]] = {}
    for r in found:
        if r["ts"] == newest[r["replication"]]:
            by_group.setdefault((r["replication"], r["consumer_group"]), []).append(r)
    out = [summary(parts) for parts in by_group.values()]
    return sorted(out, key=lambda g: (STATUS_RANK.get(g.status, 9), -(g.skipped or 0), -(g.re_read or 0), g.replication,
                                      g.consumer_group))


def summary(parts: list[dict]) -> GroupReadiness:
    parts = sorted(parts, key=lambda r: (r["topic"], r["partition"]))
    first = parts[0]

    def total(col: str) -> int | None:
        values = [r[col] for r in parts]
        return None if any(v is None for v in values) else sum(values)

    ages = [r["checkpoint_age_s"] for r in parts if r["checkpoint_age_s"] is not None]
    return GroupReadiness(first["replication"], first["consumer_group"],
                          f"{first['source_cluster']} → {first['target_cluster'] or 'DR'}", utc(first["ts"]),
                          min((r["status"] for r in parts), key=lambda s: STATUS_RANK.get(s, 9)),
                          total("re_read"), total("skipped"), max(ages) if ages else None, parts)
