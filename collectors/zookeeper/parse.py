"""Pure parsing: raw ZooKeeper answers (bronze_zk rows) → silver rows.

`server_state_row` reads one scrape of one server — the `srvr` answer and the `mntr` (4lw) or
`monitor` (AdminServer) answer taken at the same observation time — into a `zk_server_state` row.
`coordination_rows` reads one `zk.znode` snapshot of the Artemis lock manager's znodes into one
`zk_coordination` row per NodeID. Both accept what other pollers recorded as long as the answers
are the server's own text / JSON (a curl loop of `mntr` alone, for instance).
"""

from __future__ import annotations

import base64
import json
import re
import struct
from datetime import datetime, timezone
from typing import Any, Iterable

from collectors.zookeeper.wire import NOT_SERVING, not_serving, whitelist_refusal

ARTEMIS_PRESET = "artemis-lock-manager"
SERVING_STATES = ("leader", "follower", "observer", "standalone", "read-only")
_MNTR_LINE = re.compile(r"^zk_(\w[\w.\-]*)\s+(.*?)\s*$")  # the regex Telegraf uses, value kept whole
_SEQ_SUFFIX = re.compile(r"(\d{10})$")


# --- values ----------------------------------------------------------------------------------------


def _number(text: str) -> int | float | str:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_mntr(text: str) -> dict[str, Any]:
    """`mntr` text → {key without `zk_`: int | float | str}."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        m = _MNTR_LINE.match(line)
        if m:
            out[m.group(1)] = _number(m.group(2))
    return out


def parse_srvr(text: str) -> dict[str, Any]:
    """`srvr` (or `stat`) text → version, latency min/avg/max, counters, zxid, mode (CATALOG §5.2)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if line.startswith("READ-ONLY mode"):
                out["read_only"] = True
            continue
        value = value.strip()
        if key == "Latency min/avg/max":
            parts = value.split("/")
            if len(parts) == 3:
                out["min_latency"], out["avg_latency"], out["max_latency"] = (_number(p) for p in parts)
        elif key == "Zookeeper version":
            out["version"] = value
        elif key == "Zxid":
            try:
                out["zxid"] = int(value, 16)
            except ValueError:
                pass
        elif key == "Mode":
            out["mode"] = value
        elif key in ("Received", "Sent", "Connections", "Outstanding", "Node count"):
            out[key.lower().replace(" ", "_")] = _number(value)
    return out


def split_zxid(zxid: int | None) -> tuple[int | None, int | None]:
    """A zxid is (epoch << 32) | counter; the epoch grows by one with every elected leader."""
    if zxid is None:
        return None, None
    return zxid >> 32, zxid & 0xFFFFFFFF


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    return None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _sum(*values: Any) -> int | None:
    ints = [_int(v) for v in values]
    return None if all(v is None for v in ints) else sum(v or 0 for v in ints)


def decode_sequence(data: bytes | None) -> int | None:
    """Curator DistributedAtomicLong: 8-byte big-endian signed long; empty data reads as 0."""
    if data is None:
        return None
    if len(data) == 0:
        return 0
    if len(data) != 8:
        return None
    return struct.unpack(">q", data)[0]


def ms_to_ts(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)


# --- zk_server_state -------------------------------------------------------------------------------


def _answer(env: dict | None) -> Any:
    return env.get("response") if env and not env.get("error") else None


def _by_command(envs: list[dict]) -> dict[str, dict]:
    """srvr / mntr / admin envelopes of one scrape by role (`stat` answers like `srvr`)."""
    by = {(e["source"], e["request"][0].get("command")): e for e in envs if e.get("request")}
    return {"srvr": by.get(("zk.4lw", "srvr")) or by.get(("zk.4lw", "stat")),
            "mntr": by.get(("zk.4lw", "mntr")),
            "admin": by.get(("zk.admin", "monitor")) or by.get(("zk.admin", "mntr"))}


def server_metrics(mntr_env: dict | None, admin_env: dict | None) -> tuple[dict[str, Any], str | None]:
    """The `mntr` keys from the 4lw answer, else from the AdminServer's JSON; and which it was."""
    text = _answer(mntr_env)
    if isinstance(text, str) and not whitelist_refusal(text) and not not_serving(text):
        return parse_mntr(text), "4lw"
    body = _answer(admin_env)
    if isinstance(body, dict) and not body.get("error"):
        return dict(body), "admin"
    return {}, None


def metric_columns(m: dict[str, Any], srvr: dict[str, Any]) -> dict[str, Any]:
    """Silver columns from the mntr keys (CATALOG §5.1), falling back to srvr's (§5.2)."""
    epoch, counter = split_zxid(srvr.get("zxid"))
    return {
        "peer_state": m.get("peer_state"),
        "version": m.get("version") or srvr.get("version"),
        "zxid": None if srvr.get("zxid") is None else f"0x{srvr['zxid']:x}",
        "zxid_epoch": epoch,
        "zxid_counter": counter,
        "avg_latency_ms": _float(m.get("avg_latency", srvr.get("avg_latency"))),
        "min_latency_ms": _int(m.get("min_latency", srvr.get("min_latency"))),
        "max_latency_ms": _int(m.get("max_latency", srvr.get("max_latency"))),
        "requests_total": _sum(m.get("cnt_readlatency"), m.get("cnt_updatelatency")),
        "request_latency_sum_ms": _sum(m.get("sum_readlatency"), m.get("sum_updatelatency")),
        "outstanding_requests": _int(m.get("outstanding_requests", srvr.get("outstanding"))),
        "connections": _int(m.get("num_alive_connections", srvr.get("connections"))),
        "packets_received": _int(m.get("packets_received", srvr.get("received"))),
        "packets_sent": _int(m.get("packets_sent", srvr.get("sent"))),
        "znode_count": _int(m.get("znode_count", srvr.get("node_count"))),
        "ephemerals_count": _int(m.get("ephemerals_count")),
        "watch_count": _int(m.get("watch_count")),
        "approximate_data_size": _int(m.get("approximate_data_size")),
        "global_sessions": _int(m.get("global_sessions")),
        "quorum_size": _int(m.get("quorum_size")),
        "learners": _int(m.get("learners")),
        "synced_followers": _int(m.get("synced_followers")),
        "synced_non_voting_followers": _int(m.get("synced_non_voting_followers")),
        "synced_observers": _int(m.get("synced_observers")),
        "pending_syncs": _int(m.get("pending_syncs")),
        "leader_uptime_ms": _int(m.get("leader_uptime")),
        "uptime_ms": _int(m.get("uptime")),
        "elections": _int(m.get("cnt_election_time")),
        "election_time_sum_ms": _int(m.get("sum_election_time")),
        "looking_count": _int(m.get("looking_count")),
    }


def server_state_row(envs: list[dict], base: dict) -> dict:
    """One silver `zk_server_state` row from the envelopes of one scrape of one server.

    `envs` are the bronze envelopes (`zk.4lw` srvr / mntr, `zk.admin` monitor) sharing one `ts`;
    `base` carries obs_key, ts, obs_date, ensemble, instance, endpoint. A transport error is an
    unreachable observation with state `unknown` — indeterminate, never 'down'."""
    env = _by_command(envs)
    errors = [e["error"] for e in envs if e.get("error")]
    answered = any(_answer(e) is not None for e in envs)
    row = dict(base, reachable=answered, serving=None, state="unknown", metrics_source=None,
               elapsed_ms=max((e.get("elapsed_ms") or 0.0) for e in envs) if envs else None)
    if (env["srvr"] and env["srvr"].get("error")) or not answered:
        # srvr is always enabled: if it failed at transport level, the server's state is unknown
        return dict(row, error=errors[0] if errors else "no answer")
    if any(not_serving(_answer(e)) for e in envs) or (env["admin"] and NOT_SERVING in str(env["admin"].get("error") or "")):
        return dict(row, serving=False, state="not-serving", error=None)
    metrics, source = server_metrics(env["mntr"], env["admin"])
    srvr = parse_srvr(_answer(env["srvr"])) if isinstance(_answer(env["srvr"]), str) else {}
    state = "read-only" if srvr.get("read_only") else (metrics.get("server_state") or srvr.get("mode"))
    refused = whitelist_refusal(_answer(env["mntr"]))
    row.update(metric_columns(metrics, srvr))
    row.update(serving=state in SERVING_STATES if state else None, state=state or "unknown", metrics_source=source,
               mntr_whitelisted=False if refused else (True if source == "4lw" else None),
               error=None if source or not errors else errors[0])
    return row


# --- zk_coordination -------------------------------------------------------------------------------


def _node_index(nodes: Iterable[dict]) -> dict[str, dict]:
    return {n["path"]: n for n in nodes if isinstance(n, dict) and isinstance(n.get("path"), str)}


def _data(node: dict | None) -> bytes | None:
    if not node or not node.get("exists") or node.get("data_b64") is None:
        return None
    return base64.b64decode(node["data_b64"])


def _seq_no(name: str) -> int:
    m = _SEQ_SUFFIX.search(name)
    return int(m.group(1)) if m else 1 << 40


def artemis_root(namespace: str, node_id: str) -> str:
    ns = namespace.strip("/")
    return f"/{ns}/{node_id}" if ns else f"/{node_id}"


def _acquiring_sessions(nodes: dict[str, dict], root: str) -> set[str]:
    """Sessions owning a child of the internal mutex <root>/locks/locks: Curator's semaphore holds
    it only while acquiring (create the lease, count, delete it again when over the limit)."""
    mutex = nodes.get(f"{root}/locks/locks") or {}
    owners = set()
    for name in mutex.get("children") or []:
        owner = int(((nodes.get(f"{root}/locks/locks/{name}") or {}).get("stat") or {}).get("ephemeralOwner") or 0)
        if owner:
            owners.add(f"0x{owner:x}")
    return owners


def lease_facts(nodes: dict[str, dict], root: str) -> dict[str, Any]:
    """Lease znodes under <root>/locks/leases: count, the holder (lowest sequence) and its stat.

    A lease whose session is inside the acquisition mutex while another lease exists is a
    candidate's try, not a second holder (seen on Artemis 2.40.0: a backup waiting for a dead
    primary's session to expire adds and removes such a lease about once a second); it is kept in
    `leases_json` as `contending` and not counted."""
    parent = nodes.get(f"{root}/locks/leases")
    names = sorted((parent or {}).get("children") or [], key=_seq_no)
    leases = []
    for name in names:
        n = nodes.get(f"{root}/locks/leases/{name}")
        if n is None or not n.get("exists"):
            continue  # vanished between the listing and the read: not held any more
        stat = n.get("stat") or {}
        data = _data(n)
        leases.append({"name": name, "session": f"0x{int(stat.get('ephemeralOwner') or 0):x}",
                       "uuid": data.decode("utf-8", "replace") if data is not None else None,
                       "ctime": stat.get("ctime"), "mzxid": stat.get("mzxid")})
    trying = _acquiring_sessions(nodes, root)
    held = [lease for lease in leases if lease["session"] not in trying] or leases
    for lease in leases:
        if lease not in held:
            lease["contending"] = True
    leases = held + [lease for lease in leases if lease not in held]
    holder = held[0] if held else {}
    mutex = nodes.get(f"{root}/locks/locks")
    return {
        "lease_count": len(held),
        "leases_json": json.dumps(leases, separators=(",", ":")) if leases else None,
        "holder_session": holder.get("session"),
        "holder_lease": holder.get("name"),
        "holder_uuid": holder.get("uuid"),
        "holder_ctime": ms_to_ts(holder.get("ctime")),
        "holder_mzxid": holder.get("mzxid"),
        "lease_sessions": ",".join(lease["session"] for lease in held) or None,
        "mutex_count": len((mutex or {}).get("children") or []) if mutex and mutex.get("exists") else 0,
    }


def sequence_facts(nodes: dict[str, dict], root: str) -> dict[str, Any]:
    """The activation-sequence counter: raw value, claimed flag, committed and claimed values."""
    node = nodes.get(f"{root}/activation-sequence")
    raw = decode_sequence(_data(node)) if node and node.get("exists") else None
    stat = (node or {}).get("stat") or {}
    claimed = raw is not None and raw < 0
    return {
        "sequence_exists": bool(node and node.get("exists")),
        "sequence_raw": raw,
        "sequence_claimed": None if raw is None else claimed,
        # CATALOG §1.6: −(N+1) = claim of N+1 in progress, so N is still the committed value
        "committed_sequence": None if raw is None else (-raw - 1 if claimed else raw),
        "claimed_sequence": -raw if claimed else None,
        "sequence_mzxid": stat.get("mzxid") if node and node.get("exists") else None,
        "sequence_mtime": ms_to_ts(stat.get("mtime")) if node and node.get("exists") else None,
        "sequence_version": stat.get("version") if node and node.get("exists") else None,
    }


def artemis_node_ids(request: dict, nodes: dict[str, dict]) -> list[str]:
    """NodeIDs of a snapshot: the configured ones, else the children listed under /<namespace>."""
    if request.get("node_ids"):
        return list(request["node_ids"])
    ns = request.get("namespace") or ""
    listing = nodes.get(f"/{ns.strip('/')}" if ns.strip("/") else "/")
    children = (listing or {}).get("children") or []
    return sorted(c for c in children if not (not ns.strip("/") and c == "zookeeper"))


def coordination_rows(env: dict, base: dict) -> list[dict]:
    """`zk_coordination` rows (one per NodeID) from one artemis-lock-manager `zk.znode` envelope.
    A failed read gives one unanswered row per configured NodeID (or `*` when none is configured)."""
    req = env["request"][0] if env.get("request") else {}
    if req.get("watch") != ARTEMIS_PRESET:
        return []
    common = dict(base, watch=ARTEMIS_PRESET, namespace=req.get("namespace") or "")
    resp = env.get("response")
    if env.get("error") or not isinstance(resp, dict):
        return [dict(common, node_id=nid, answered=False, error=env.get("error") or "no snapshot")
                for nid in (req.get("node_ids") or ["*"])]
    nodes = _node_index(resp.get("nodes") or [])
    rows = []
    for nid in artemis_node_ids(req, nodes):
        root = artemis_root(common["namespace"], nid)
        rows.append(dict(common, node_id=nid, answered=True, error=None,
                         **lease_facts(nodes, root), **sequence_facts(nodes, root)))
    return rows
