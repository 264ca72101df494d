"""The overview's data: every HA group, cluster and ensemble now — its members' newest rows, open
role intervals, incidents, risks, quorum, alerts and collector health — and its state
(dashboards/health.py), worst first."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

from collectors.kafka_offsets.parse import exchange_health
from dashboards.data import SEVERITY_RANK, Gold, incident_list, rows, rows_of, utc
from dashboards.health import STATE_RANK, GroupHealth, group_health
from lakehouse.store import sql_literal


def latest_per(table: pa.Table | None, key: str, ts: str = "ts") -> dict[str, dict]:
    """The newest row (by `ts`) per value of `key`."""
    out: dict[str, dict] = {}
    if table is None or table.num_rows == 0:
        return out
    for r in table.sort_by([(ts, "ascending")]).to_pylist():
        out[r[key]] = r
    return out


def partition_days(gold: Gold, name: str, max_days: int = 31) -> list[str]:
    """The newest obs_date partition values of a table, newest first (none when it is absent)."""
    if not gold.has(name):
        return []
    dt = DeltaTable(gold.lh.uri(name), storage_options=gold.lh.storage_options)
    return sorted({p["obs_date"] for p in dt.partitions() if p.get("obs_date")}, reverse=True)[:max_days]


def recent_rows(gold: Gold, name: str, columns: list[str], key: str, wanted: set[str], max_days: int = 31,
                where: str | None = None) -> pa.Table | None:
    """Rows (matching `where`) of the newest obs_date partitions, going back day by day until every
    `wanted` value of `key` was seen (or max_days): "now" for each instance without scanning all of history."""

    if not gold.has(name):
        return None
    parts, seen = [], set()
    for day in partition_days(gold, name, max_days):
        t = gold.read(name, columns=columns, filter=" AND ".join(filter(None, [f"obs_date = {sql_literal(day)}", where])))
        parts.append(t)
        seen |= set(t.column(key).to_pylist())
        if wanted <= seen:
            break
    return pa.concat_tables(parts) if parts else None


def state_members(groups: dict[str, dict]) -> list[str]:
    return [i for grp in groups.values() for i in grp["members"]]


def group_statuses(gold: Gold) -> list[dict]:
    """Every HA group, cluster and ensemble now, worst first: live instance(s), backups and their
    sync state, open incidents and risks, ZooKeeper quorum, alerts, collector health."""
    groups: dict[str, dict] = {}

    def g(name: str, kind: str) -> dict:
        return groups.setdefault(name, {"group": name, "kind": kind, "live": [], "members": {}, "incidents": [],
                                        "risks": [], "quorum": None, "alerts": 0, "collector_errors": [],
                                        "last_seen": None})

    for r in rows(gold.optional("role_intervals", filter="is_open = true")):
        g(r["group_name"], r["kind"])["live"].append(r["instance"])
    known = set(rows_of(gold.optional("role_intervals", columns=["instance"]), "instance"))
    state = recent_rows(gold, "broker_state", ["ts", "kind", "group_name", "instance", "role", "active", "reachable",
                                                "replica_sync", "error"], "instance", known)
    for inst, r in latest_per(state, "instance").items():
        grp = g(r["group_name"], r["kind"])
        grp["members"][inst] = r
        grp["last_seen"] = max(filter(None, [grp["last_seen"], utc(r["ts"])]))
    health = recent_rows(gold, "collector_health", ["ts", "kind", "target", "group_name", "answered", "error_kind",
                                                     "error"], "target", set(state_members(groups)))
    group_of = {i: name for name, grp in groups.items() for i in grp["members"]}
    for target, r in latest_per(health, "target").items():
        if not r["answered"]:
            name = group_of.get(target) or r["group_name"] or target
            g(name, r["kind"])["collector_errors"].append(r)
    # the Kafka-protocol collector's clusters (failover readiness): `<replication>/<cluster>`
    answers = recent_rows(gold, "kafka_offsets", ["ts", "replication", "group_name", "cluster", "fact", "consumer_group",
                                                  "topic", "answered", "error", "error_kind"], "fact", {"answer"},
                          max_days=1, where="fact = 'answer'")
    latest: dict[str, dict] = {}
    for r in exchange_health(rows(answers)):
        latest[r["target"]] = r  # time order: the last wins
    for r in latest.values():
        if not r["answered"]:
            g(r["group_name"], "kafka")["collector_errors"].append(r)
    if gold.has("incidents"):
        for r in incident_list(gold):
            if r["status"] == "open":
                g(r["cluster"], r["kind"])["incidents"].append(r)
    for r in rows(gold.optional("risk_findings", filter="is_open = true")):
        g(r["group_name"], r["kind"])["risks"].append(r)
    for r in rows(gold.optional("zk_quorum", filter="is_open = true")):
        grp = g(r["ensemble"], "zookeeper")
        grp["quorum"] = r
        grp["last_seen"] = max(filter(None, [grp["last_seen"], utc(r["end_ts"])]))
    for cluster, n in open_alerts(gold).items():
        g(cluster, groups.get(cluster, {}).get("kind", "?"))["alerts"] += n
    now = gold.clock()
    for grp in groups.values():
        grp["health"] = group_health(grp, now, gold.stale_after_s)
    return sorted(groups.values(), key=status_rank)


def status_rank(grp: dict) -> tuple:
    """Worst first: failing, unknown, degraded, ok (dashboards/health.py); within a state open
    incidents by severity, then a group without a live instance (or more than one), lost quorum,
    open risks, open alerts, collector errors; then by name."""
    health: GroupHealth = grp["health"]
    worst = min((SEVERITY_RANK.get(i["severity"], 9) for i in grp["incidents"]), default=9)
    risk = min((SEVERITY_RANK.get(r["severity"], 9) for r in grp["risks"]), default=9)
    q = grp["quorum"]
    live_problem = grp["kind"] not in ("zookeeper", "weblogic") and len(grp["live"]) != 1
    return (STATE_RANK[health.state], worst, not (q and q["status"] != "present"), not live_problem, risk, -grp["alerts"],
            -len(grp["collector_errors"]), grp["group"])


def open_alerts(gold: Gold) -> dict[str, int]:
    """Firing alerts per cluster: the latest alert_history row of each fingerprint says firing."""
    latest = latest_per(gold.optional("alert_history", columns=["fingerprint", "cluster", "status", "changed_at"]),
                        "fingerprint", ts="changed_at")
    counts: dict[str, int] = {}
    for r in latest.values():
        if r["status"] == "firing" and r["cluster"]:
            counts[r["cluster"]] = counts.get(r["cluster"], 0) + 1
    return counts
