"""Reading the coordination state brokers keep in ZooKeeper, through kazoo, strictly read-only.

`ReadOnlyZk` exposes only get / get_children / exists — the collector cannot create, change or
delete a znode. A snapshot is a list of znode records {path, exists, data_b64, stat, children};
it lands raw in bronze (`zk.znode`), and `collectors.zookeeper.parse` reads it into silver.

Artemis lock manager (CATALOG §1.6): per NodeID `/<ns>/<id>/activation-sequence` and the lease
znodes under `/<ns>/<id>/locks/leases`, plus the internal mutex `/<ns>/<id>/locks/locks`.
"""

from __future__ import annotations

import base64
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from collectors.zookeeper.parse import ARTEMIS_PRESET, artemis_root


class ReadOnlyZk:
    """A kazoo session used only for reads, each bounded by `timeout` seconds."""

    def __init__(self, hosts: str, timeout: float, session_s: float = 10.0) -> None:

        self.hosts, self.timeout = hosts, timeout
        # read_only: also read from a server in read-only mode (readonlymode.enabled) during a partition
        self._client = KazooClient(hosts=hosts, timeout=session_s, read_only=True)
        self._started = False

    def ensure_started(self) -> None:
        if not self._started:
            try:
                self._client.start(timeout=self.timeout)
            except Exception:  # kazoo stops the client itself when start() times out
                raise ConnectionError(f"cannot open a ZooKeeper session with {self.hosts} within {self.timeout:g}s "
                                      "(no server answers, or the ensemble has no quorum)") from None
            self._started = True

    def get(self, path: str):
        return self._client.get_async(path).get(timeout=self.timeout)

    def get_children(self, path: str) -> list[str]:
        return self._client.get_children_async(path).get(timeout=self.timeout)

    def exists(self, path: str):
        return self._client.exists_async(path).get(timeout=self.timeout)

    def close(self) -> None:
        if self._started:
            try:
                self._client.stop()
                self._client.close()
            except Exception:  # noqa: BLE001  (closing a broken session must not hide the real error)
                pass
            self._started = False


def stat_dict(stat: Any) -> dict[str, int]:
    return {f: int(getattr(stat, f)) for f in stat._fields}


def read_znode(zk: ReadOnlyZk, path: str, data: bool = True, children: bool = False) -> dict:
    """One znode record; a missing znode is `exists: false` (a fact, not an error)."""

    rec: dict[str, Any] = {"path": path, "exists": True}
    try:
        if data:
            value, stat = zk.get(path)
            rec["data_b64"] = base64.b64encode(value or b"").decode()
            rec["stat"] = stat_dict(stat)
        else:
            stat = zk.exists(path)
            if stat is None:
                return {"path": path, "exists": False}
            rec["stat"] = stat_dict(stat)
        if children:
            rec["children"] = sorted(zk.get_children(path))
    except NoNodeError:
        return {"path": path, "exists": False}
    return rec


def artemis_snapshot(zk: ReadOnlyZk, namespace: str, node_ids: list[str]) -> list[dict]:
    """The lock manager's znodes for the given NodeIDs (all children of /<namespace> when none)."""
    ns = namespace.strip("/")
    nodes = []
    if not node_ids:
        listing = read_znode(zk, f"/{ns}" if ns else "/", data=False, children=True)
        nodes.append(listing)
        node_ids = [c for c in listing.get("children") or [] if ns or c != "zookeeper"]
    for nid in node_ids:
        root = artemis_root(ns, nid)
        nodes.append(read_znode(zk, f"{root}/activation-sequence"))
        leases = read_znode(zk, f"{root}/locks/leases", data=False, children=True)
        nodes.append(leases)
        for name in leases.get("children") or []:
            nodes.append(read_znode(zk, f"{root}/locks/leases/{name}"))
        nodes.append(read_znode(zk, f"{root}/locks/locks", data=False, children=True))
    return nodes


def paths_snapshot(zk: ReadOnlyZk, paths: list[str]) -> list[dict]:
    return [read_znode(zk, p, children=True) for p in paths]


def watch_request(watch) -> dict:
    """What a snapshot asked for (the envelope's request; replay reads the snapshot by it)."""
    if watch.preset == ARTEMIS_PRESET:
        return {"watch": ARTEMIS_PRESET, "namespace": watch.namespace, "node_ids": list(watch.node_ids)}
    return {"watch": "paths", "paths": list(watch.paths)}


def take_snapshot(zk: ReadOnlyZk, request: dict) -> dict:
    zk.ensure_started()
    if request["watch"] == ARTEMIS_PRESET:
        return {"nodes": artemis_snapshot(zk, request["namespace"], request["node_ids"])}
    return {"nodes": paths_snapshot(zk, request["paths"])}
