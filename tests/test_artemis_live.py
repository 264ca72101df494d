"""Real Apache Artemis 2.40.0 brokers (infra.artemis_lab) read by our collector: collectors.jolokia
against the console's own Jolokia (login, strict Origin) and the Artemis pack's rows. Each test
starts its brokers, waits for them, stops them by pid and checks nothing of its lab is left.

What these pin down (the catalog was written from source; these are the broker's answers):
shared-store primary/passive backup/takeover/SIGSTOP, the console's Origin and login rules, a
replication pair under the ZooKeeper lock manager (sync, activation sequence, takeover)."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.artemis import ArtemisPack
from collectors.base import Observation, scrape_requests
from collectors.jolokia import JolokiaClient
from infra.artifacts import ArtifactError, artemis_home

try:
    artemis_home()
    _missing = None
except ArtifactError as e:
    _missing = str(e)

pytestmark = [pytest.mark.slow, pytest.mark.lab, pytest.mark.skipif(_missing is not None, reason=f"{_missing}")]

PACK = ArtemisPack()
QUEUE = "brokerscope.live"


def lab_processes(workdir: Path) -> list[str]:
    """PIDs whose command line names this lab (the brokers carry -Dbrokerscope.lab=<dir>)."""
    marker = str(workdir.resolve()).encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes() and int(pid) != os.getpid():
                found.append(pid)
        except OSError:
            continue
    return found


def exchange(pair, name: str, *, origin: str | None = "default", password: str | None = None, timeout: float = 2.0):
    """One full scrape of ``name`` by our client (the pack's requests); the Exchange."""
    async def go():
        async with JolokiaClient(pair.jolokia_url(name), name=name, username=pair.monitor_user,
                                 password=password or pair.monitor_password, retries=0, timeout=timeout,
                                 origin=pair.origin if origin == "default" else origin) as c:
            return await c.bulk(scrape_requests(PACK))
    return asyncio.run(go())


def scrape(pair, name: str, **kw):
    """(rows, exchange) of one scrape of ``name`` through the pack."""
    ex = exchange(pair, name, **kw)
    obs = Observation(datetime.now(timezone.utc), name, "artemis", None, ex.requests, ex.body, ex.error, ex.elapsed_ms)
    return PACK.normalize(obs, "k"), ex


def state(pair, name: str) -> dict:
    rows, _ = scrape(pair, name)
    (row,) = rows.broker_state
    return row


@pytest.fixture
def shared_pair(tmp_path):
    from infra.artemis_lab import ArtemisPair

    pair = ArtemisPair(tmp_path / "lab")
    try:
        pair.start(timeout=90)
        yield pair
    finally:
        pair.stop()
        assert lab_processes(tmp_path / "lab") == []


def send(pair, name: str, n: int) -> int:
    from infra.artemis_lab import stomp_send

    return stomp_send(pair.brokers[name].stomp_url, QUEUE, (f"m{i}" for i in range(n)),
                      login="admin", passcode=pair.admin_password)


def test_shared_store_primary_and_passive_backup_as_the_pack_reads_them(shared_pair):
    a, b = shared_pair.names
    assert send(shared_pair, a, 7) == 7
    rows, ex = scrape(shared_pair, a)
    assert ex.ok and ex.http_status == 200
    (p,) = rows.broker_state
    assert (p["broker_name"], p["role"], p["active"], p["backup"], p["reachable"]) == (a, "live", True, False, True)
    assert p["ha_policy"] == "Shared Store Primary" and p["error"] is None
    assert p["activation_sequence"] is None  # the broker says -1: a shared store keeps no sequence
    assert p["total_messages"] == 7 and p["total_enqueued"] >= 7
    queues = {d["destination"]: d for d in rows.destination_stats}
    assert {"DLQ", "ExpiryQueue", QUEUE} <= set(queues)
    q = queues[QUEUE]
    assert (q["logical_destination"], q["destination_type"], q["messages"], q["consumers"]) == (QUEUE, "queue", 7, 0)
    assert q["oldest_message_age_ms"] is not None and q["oldest_message_age_ms"] >= 0
    assert rows.replication_stats == []  # shared store: nothing replicated, ReplicaSync always false

    rows, ex = scrape(shared_pair, b)
    (s,) = rows.broker_state
    assert (s["broker_name"], s["role"], s["active"], s["backup"]) == (b, "backup", False, True)
    assert s["ha_policy"] == "Shared Store Backup" and s["error"] is None
    assert s["node_id"] == p["node_id"] and s["group_name"] == p["node_id"]  # the backup carries its primary's NodeID
    assert rows.destination_stats == [] and rows.replication_stats == []
    assert ex.body[-1]["status"] == 404  # no queue MBeans on a passive backup


def test_console_rejects_what_the_pack_must_not_send(shared_pair):
    a = shared_pair.names[0]
    no_origin = exchange(shared_pair, a, origin=None)
    assert (no_origin.http_status, no_origin.error_kind) == (200, "forbidden")  # 403 inside an HTTP 200 body
    assert "Origin null is not allowed" in no_origin.error and "origin:" in no_origin.error
    other = exchange(shared_pair, a, origin="http://localhost")  # allow-origin is *://127.0.0.1*
    assert other.error_kind == "forbidden"
    wrong = exchange(shared_pair, a, password="not-the-password")
    assert (wrong.http_status, wrong.error_kind) == (403, "forbidden")  # not 401

    from infra.lab import jolokia_request  # the monitoring user reads attributes, never invokes or writes
    broker = f'org.apache.activemq.artemis:broker="{a}"'
    status, body = jolokia_request(
        shared_pair.jolokia_url(a),
        [{"type": "exec", "mbean": broker, "operation": "listNetworkTopology()"},
         {"type": "write", "mbean": broker, "attribute": "MessageCounterSamplePeriod", "value": 20000},
         {"type": "read", "mbean": broker, "attribute": "NodeID"}],
        user=shared_pair.monitor_user, password=shared_pair.monitor_password, headers={"Origin": shared_pair.origin})
    assert status == 200 and [i["status"] for i in body] == [403, 403, 200], body
    assert "User not authorized to access operation: listNetworkTopology" in body[0]["error"]


def test_sigstop_of_the_primary_is_unknown_and_the_shared_store_backup_stays_passive(shared_pair):
    a, b = shared_pair.names
    shared_pair.pause(a)
    try:
        rows, ex = scrape(shared_pair, a, timeout=1.0)
        (row,) = rows.broker_state
        assert ex.error_kind == "timeout" and (row["reachable"], row["active"], row["role"]) == (False, None, "unknown")
        time.sleep(3)  # the stopped JVM keeps its file lock: the backup must not activate
        assert state(shared_pair, b)["role"] == "backup"
    finally:
        shared_pair.resume(a)
    assert state(shared_pair, a)["role"] == "live"


def test_kill9_failover_as_the_pack_reads_it(shared_pair):
    a, b = shared_pair.names
    node = state(shared_pair, a)["node_id"]
    send(shared_pair, a, 5)
    killed = time.time()
    shared_pair.kill(a)
    rows, ex = scrape(shared_pair, a)
    assert ex.error_kind == "refused" and rows.broker_state[0]["reachable"] is False
    seen = shared_pair.wait_for_role(b, "active", 30)
    assert seen - killed < 15
    rows, _ = scrape(shared_pair, b)
    (row,) = rows.broker_state
    assert (row["role"], row["active"], row["backup"], row["node_id"]) == ("live", True, False, node)
    assert row["ha_policy"] == "Shared Store Backup"  # the configured policy, not the role
    assert {d["destination"]: d["messages"] for d in rows.destination_stats}[QUEUE] == 5  # from the shared journal
    assert rows.replication_stats == []


def lock_manager(zk, pair, node_id: str) -> dict:
    """Lease and activation-sequence facts of ``node_id`` as our ZooKeeper collector reads them."""
    from collectors.zookeeper.coordination import ReadOnlyZk, artemis_snapshot
    from collectors.zookeeper.parse import artemis_root, lease_facts, sequence_facts

    namespace = pair.ha[pair.names[0]].zk_namespace
    client = ReadOnlyZk(zk.connect_string, timeout=5.0)
    try:
        client.ensure_started()
        nodes = {n["path"]: n for n in artemis_snapshot(client, namespace, [node_id])}
    finally:
        client.close()
    root = artemis_root(namespace, node_id)
    return lease_facts(nodes, root) | sequence_facts(nodes, root)


def test_replication_pair_under_the_zookeeper_lock_manager(tmp_path):
    from infra.artemis_lab import ArtemisPair
    from infra.zk_lab import ZkEnsemble

    zk = ZkEnsemble(tmp_path / "zk")
    pair = None
    try:
        zk.start()
        pair = ArtemisPair(tmp_path / "lab", "replication-zk", zk_connect=zk.connect_string)
        pair.start(timeout=90)
        a, b = pair.names
        rows, _ = scrape(pair, a)
        (p,) = rows.broker_state
        assert (p["role"], p["ha_policy"], p["activation_sequence"]) == ("live", "Replication Primary w/lock manager", 1)
        (r,) = rows.replication_stats
        assert (r["flow"], r["in_sync"], r["backup_announced"]) == ("artemis-replica", True, True)
        s = state(pair, b)
        assert (s["role"], s["ha_policy"], s["replica_sync"]) == ("backup", "Replication Backup w/lock manager", True)
        assert (s["node_id"], s["activation_sequence"]) == (p["node_id"], 1)
        before = lock_manager(zk, pair, p["node_id"])
        assert (before["lease_count"], before["committed_sequence"], before["sequence_claimed"]) == (1, 1, False)

        pair.kill(a)
        pair.wait_for_role(b, "active", 45)  # after the dead primary's ZooKeeper session expires
        s = state(pair, b)
        assert (s["role"], s["backup"], s["activation_sequence"], s["node_id"]) == ("live", False, 2, p["node_id"])
        after = lock_manager(zk, pair, p["node_id"])
        assert (after["lease_count"], after["committed_sequence"]) == (1, 2)  # ZooKeeper agrees with the broker
        assert after["holder_session"] != before["holder_session"] and after["holder_uuid"] != before["holder_uuid"]
    finally:
        if pair is not None:
            pair.stop()
        zk.stop()
    assert lab_processes(tmp_path) == []
