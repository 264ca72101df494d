"""A ZooKeeper ensemble as the zookeeper collector records it (collectors/zookeeper): per server and
round `srvr` and `mntr` over the client port (sources `zk.4lw`), and snapshots of the Artemis lock
manager's znodes read through the ensemble (`zk.znode`).

Facts (CATALOG §5.1, §5.2, §1.6): `mntr` is one `zk_<key>\\t<value>` line per key, longs printed as
integers, `zk_avg_latency` a double; leader-only keys `zk_learners`, `zk_synced_followers`,
`zk_synced_non_voting_followers`, `zk_synced_observers`, `zk_pending_syncs`, `zk_leader_uptime`
(no `zk_followers` in 3.6+). `srvr`: `Zookeeper version`, `Latency min/avg/max`, `Received`, `Sent`,
`Connections`, `Outstanding`, `Zxid: 0x<hex>`, `Mode`, `Node count`, leader-only `Proposal sizes`.
Lock manager: `/<ns>/<NodeID>/activation-sequence` = 8-byte big-endian signed long;
`/<ns>/<NodeID>/locks/leases/_c_<uuid>-lease-<10-digit seq>` EPHEMERAL_SEQUENTIAL, data a random UUID;
`/<ns>/<NodeID>/locks/locks` the mutex parent. The znode snapshot layout is the collector's
(collectors/zookeeper/coordination.py `artemis_snapshot`).
"""

from __future__ import annotations

import base64
import struct
import uuid
from datetime import datetime
from random import Random

from brokerscope.simulate.model import Member
from collectors.recording import envelope
from collectors.zookeeper.wire import SOURCE_4LW, SOURCE_ZNODE

VERSION = "3.8.4-9316c2a7a97e1666d8f4593f34dd6fc36ecc436c, built on 2024-02-12 22:16 UTC"
NAMESPACE = "artemis"
ZXID_EPOCH = 3


def endpoint(member: Member) -> str:
    return member.url.removeprefix("zk://")


def mode(member: Member, t: float) -> str:
    return "leader" if member.is_active(t) else "follower"


def srvr_text(member: Member, t: float, round_no: int) -> str:
    m = mode(member, t)
    zxid = (ZXID_EPOCH << 32) | (40 + round_no)
    lines = [f"Zookeeper version: {VERSION}", "Latency min/avg/max: 0/0.4/7", f"Received: {120 + 3 * round_no}",
             f"Sent: {119 + 3 * round_no}", "Connections: 2", "Outstanding: 0", f"Zxid: 0x{zxid:x}", f"Mode: {m}",
             "Node count: 12"]
    if m == "leader":
        lines.append("Proposal sizes last/min/max: 48/36/310")
    return "\n".join(lines) + "\n"


def mntr_text(member: Member, t: float, round_no: int, ensemble_size: int) -> str:
    m = mode(member, t)
    keys = [("version", VERSION), ("avg_latency", "0.4"), ("max_latency", 7), ("min_latency", 0),
            ("packets_received", 120 + 3 * round_no), ("packets_sent", 119 + 3 * round_no),
            ("num_alive_connections", 2), ("outstanding_requests", 0), ("server_state", m),
            ("znode_count", 12), ("watch_count", 1), ("ephemerals_count", 2), ("approximate_data_size", 402),
            ("open_file_descriptor_count", 61), ("max_file_descriptor_count", 1048576),
            ("uptime", member.uptime_ms(t)), ("quorum_size", ensemble_size)]
    if m == "leader":
        keys += [("learners", ensemble_size - 1), ("synced_followers", ensemble_size - 1),
                 ("synced_non_voting_followers", 0), ("synced_observers", 0), ("pending_syncs", 0),
                 ("leader_uptime", member.uptime_ms(t)), ("last_proposal_size", 48), ("max_proposal_size", 310),
                 ("min_proposal_size", 36)]
    return "".join(f"zk_{k}\t{v}\n" for k, v in keys)


def server_envelopes(member: Member, t: float, ts: datetime, round_no: int, ensemble_size: int) -> list[dict]:
    """One round of one server: `srvr` then `mntr`, both stamped with the round's time."""
    ep = endpoint(member)
    return [
        envelope(ts, member.name, [{"command": "srvr", "endpoint": ep}], srvr_text(member, t, round_no), None, 2.1,
                 source=SOURCE_4LW),
        envelope(ts, member.name, [{"command": "mntr", "endpoint": ep}], mntr_text(member, t, round_no, ensemble_size),
                 None, 3.4, source=SOURCE_4LW),
    ]


# --- the lock manager's znodes ----------------------------------------------------------------------


def sequence_bytes(value: int) -> str:
    return base64.b64encode(struct.pack(">q", value)).decode()


def stat(ctime_ms: int, version: int = 0, data_length: int = 0, children: int = 0, owner: int = 0) -> dict:
    zxid = (ZXID_EPOCH << 32) | 7
    return {"czxid": zxid, "mzxid": zxid + version, "ctime": ctime_ms, "mtime": ctime_ms, "version": version,
            "cversion": children, "aversion": 0, "ephemeralOwner": owner, "dataLength": data_length,
            "numChildren": children, "pzxid": zxid + children}


def lock_snapshot(node_id: str, committed: int, holder_session: int, t0_ms: int, seed: int) -> list[dict]:
    """`artemis_snapshot` of one NodeID: the listing, the committed sequence, one lease, the mutex parent."""
    rnd = Random(seed)
    protection = uuid.UUID(int=rnd.getrandbits(128), version=4)
    lease_data = str(uuid.UUID(int=rnd.getrandbits(128), version=4)).encode()
    root = f"/{NAMESPACE}/{node_id}"
    lease = f"_c_{protection}-lease-0000000000"
    return [
        {"path": f"/{NAMESPACE}", "exists": True, "stat": stat(t0_ms, children=1), "children": [node_id]},
        {"path": f"{root}/activation-sequence", "exists": True, "data_b64": sequence_bytes(committed),
         "stat": stat(t0_ms, version=2 * committed, data_length=8)},
        {"path": f"{root}/locks/leases", "exists": True, "stat": stat(t0_ms, children=1), "children": [lease]},
        {"path": f"{root}/locks/leases/{lease}", "exists": True,
         "data_b64": base64.b64encode(lease_data).decode(),
         "stat": stat(t0_ms, data_length=len(lease_data), owner=holder_session)},
        {"path": f"{root}/locks/locks", "exists": True, "stat": stat(t0_ms), "children": []},
    ]


def snapshot_envelope(watcher: Member, hosts: str, ts: datetime, nodes: list[dict]) -> dict:
    request = {"watch": "artemis-lock-manager", "namespace": NAMESPACE, "node_ids": [], "hosts": hosts}
    return envelope(ts, watcher.name, [request], {"nodes": nodes}, None, 4.2, source=SOURCE_ZNODE)
