"""ZooKeeper collection without a cluster: config, the 4lw/AdminServer client against tiny fake
servers, parsing of the real answers recorded in tests/fixtures/zookeeper, znode snapshots."""

import asyncio
import base64
import struct
from pathlib import Path

import httpx
import pytest

from collectors.jolokia import error_kind_of
from collectors.recording import read_envelopes
from collectors.zookeeper import bronze_zk_row, validate_zk_envelope
from collectors.zookeeper.parse import (coordination_rows, decode_sequence, parse_mntr, parse_srvr, server_state_row,
                                        split_zxid)
from collectors.zookeeper.wire import NOT_SERVING, admin_command, four_letter_word, not_serving, whitelist_refusal
from infra.lab import free_port
from settings import ConfigError, config_from_dict

FIX = Path(__file__).parent / "fixtures" / "zookeeper"
ENVS = list(read_envelopes(FIX / "drill.jsonl.gz"))
BASE = {"obs_key": "k", "ts": None, "obs_date": "2026-11-22", "ensemble": "zk-lab", "instance": "zkX", "endpoint": None}


def scrape(target: str, pred) -> list[dict]:
    """The envelopes of the first recorded scrape of `target` whose srvr answer satisfies pred."""
    by_ts: dict[str, list[dict]] = {}
    for e in ENVS:
        if e["target"] == target and e["source"] in ("zk.4lw", "zk.admin"):
            by_ts.setdefault(e["ts"], []).append(e)
    for ts in sorted(by_ts):
        srvr = [e for e in by_ts[ts] if e["request"][0]["command"] == "srvr"]
        if srvr and pred(srvr[0]):
            return by_ts[ts]
    raise AssertionError(f"no such scrape of {target}")


def answered(mode: str):
    return lambda e: isinstance(e["response"], str) and f"Mode: {mode}" in e["response"]


# --- config ------------------------------------------------------------------------------------------


def zk_target(**over) -> dict:
    return {"name": "zk1", "kind": "zookeeper", "url": "10.0.0.7:2181", **over}


def test_zookeeper_urls_are_normalized_and_checked():
    cfg = config_from_dict({"targets": [zk_target(), zk_target(name="zk2", url="zk://zk-2.example")]})
    assert [t.url for t in cfg.targets] == ["zk://10.0.0.7:2181", "zk://zk-2.example:2181"]
    with pytest.raises(ConfigError, match=r"targets\[0\].url: a ZooKeeper server is host:port"):
        config_from_dict({"targets": [zk_target(url="http://10.0.0.7:8080/commands")]})


def test_zookeeper_options_are_validated():
    watch = {"preset": "artemis-lock-manager", "namespace": "artemis"}
    t = config_from_dict({"targets": [zk_target(zookeeper={"watch": [watch], "claim_grace": "2s",
                                                           "latency_threshold": "250ms"})]}).targets[0]
    assert t.zookeeper.claim_grace == 2.0 and t.zookeeper.latency_threshold == 0.25
    with pytest.raises(ConfigError, match="set either `preset`"):
        config_from_dict({"targets": [zk_target(zookeeper={"watch": [{"namespace": "x"}]})]})
    with pytest.raises(ConfigError, match="belong to targets of kind zookeeper"):
        config_from_dict({"targets": [{"name": "a", "kind": "artemis", "url": "http://a:8161/jolokia", "zookeeper": {}}]})


# --- the wire: tiny fake servers ------------------------------------------------------------------------


async def with_server(reply: bytes | None, fn):
    """Run fn(url) against a TCP server that answers every connection with `reply` (None: never)."""
    async def handle(reader, writer):
        await reader.read(4)
        if reply is None:
            await asyncio.sleep(5)
        else:
            writer.write(reply)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        return await fn(f"zk://127.0.0.1:{port}")


def test_a_refused_connection_is_an_error_observation_not_a_crash():
    ex = asyncio.run(four_letter_word("zk9", f"zk://127.0.0.1:{free_port()}", "srvr", 1.0))
    assert ex.response is None and "connection refused" in ex.error and error_kind_of(ex.error) == "refused"


def test_a_silent_server_times_out_with_state_unknown():
    ex = asyncio.run(with_server(None, lambda url: four_letter_word("zk9", url, "mntr", 0.3)))
    assert "no answer within the timeout" in ex.error and error_kind_of(ex.error) == "timeout"
    assert ex.elapsed_ms < 1000


def test_the_whitelist_refusal_is_recognized():
    reply = b"mntr is not executed because it is not in the whitelist.\n"
    ex = asyncio.run(with_server(reply, lambda url: four_letter_word("zk9", url, "mntr", 1.0)))
    assert ex.ok and whitelist_refusal(ex.response)


def test_only_read_commands_are_sent():
    with pytest.raises(ValueError, match="only sends"):
        asyncio.run(four_letter_word("zk9", "zk://127.0.0.1:1", "srst", 1.0))  # would reset the counters


def test_admin_server_answers():
    npe = ('<html><title>Error 500 java.lang.NullPointerException: Cannot invoke "org.apache.zookeeper.server.'
           'ZooKeeperServer.dumpMonitorValues(java.util.function.BiConsumer)" because "zkServer" is null</title></html>')

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "serving":
            return httpx.Response(200, json={"server_state": "follower", "command": "monitor", "error": None})
        if request.url.host == "looking":
            return httpx.Response(500, text=npe)  # measured on 3.8.0 without quorum
        return httpx.Response(404, text="<html>not found</html>")

    async def run(host):
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await admin_command(client, "zk9", f"http://{host}:8080/commands", "monitor", 1.0)

    assert asyncio.run(run("serving")).response["server_state"] == "follower"
    assert NOT_SERVING in asyncio.run(run("looking")).error
    assert "check `zookeeper.admin_url`" in asyncio.run(run("elsewhere")).error


# --- parsing real answers -----------------------------------------------------------------------------


def test_mntr_and_srvr_of_the_recorded_leader():
    envs = scrape("zk1", answered("leader"))  # zk1 leads after the quorum came back: 2 of 3 running
    mntr = parse_mntr(next(e["response"] for e in envs if e["request"][0]["command"] == "mntr"))
    assert mntr["server_state"] == "leader" and isinstance(mntr["avg_latency"], float) and mntr["learners"] == 1
    srvr = parse_srvr(next(e["response"] for e in envs if e["request"][0]["command"] == "srvr"))
    assert srvr["mode"] == "leader" and split_zxid(srvr["zxid"])[0] >= 1
    assert split_zxid(0x3_0000_0007) == (3, 7)


def test_server_state_of_a_leader():
    row = server_state_row(scrape("zk1", answered("leader")), BASE)
    assert (row["state"], row["serving"], row["reachable"], row["metrics_source"]) == ("leader", True, True, "4lw")
    assert row["synced_followers"] == 1 and row["quorum_size"] == 3 and row["leader_uptime_ms"] > 0
    assert row["zxid_epoch"] >= 1 and row["elections"] >= 1 and row["election_time_sum_ms"] > 0


def test_server_state_through_the_admin_server_when_mntr_is_not_whitelisted():
    first = scrape("zk3", lambda e: not e.get("error"))  # zk3 led the full ensemble first
    assert any(whitelist_refusal(e["response"]) for e in first)
    row = server_state_row(first, BASE)
    assert row["metrics_source"] == "admin" and row["mntr_whitelisted"] is False and row["state"] == "leader"
    assert row["synced_followers"] == 2 and row["uptime_ms"] > 0 and row["znode_count"] > 0 and row["zxid"] is not None
    later = server_state_row(scrape("zk3", lambda e: not e.get("error") and e["ts"] > first[0]["ts"]), BASE)
    assert later["metrics_source"] == "admin" and later["mntr_whitelisted"] is None  # refused once, not asked again


def test_a_dead_server_and_one_without_quorum():
    dead = server_state_row(scrape("zk2", lambda e: bool(e.get("error"))), BASE)
    assert (dead["reachable"], dead["serving"], dead["state"]) == (False, None, "unknown")
    assert "connection refused" in dead["error"]
    looking = server_state_row(scrape("zk1", lambda e: not_serving(e["response"])), BASE)
    assert (looking["reachable"], looking["serving"], looking["state"]) == (True, False, "not-serving")


def test_a_foreign_mntr_alone_is_read():
    mntr = next(e for e in scrape("zk1", answered("leader")) if e["request"][0]["command"] == "mntr")
    row = server_state_row([mntr], BASE)
    assert row["state"] == "leader" and row["zxid"] is None and row["synced_followers"] == 1


# --- znode snapshots -----------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def snapshot(nodes: list[dict], node_ids=("N1",)) -> dict:
    return {"source": "zk.znode", "request": [{"watch": "artemis-lock-manager", "namespace": "artemis",
                                              "node_ids": list(node_ids)}], "response": {"nodes": nodes}, "error": None}


def test_activation_sequence_encoding():
    assert decode_sequence(struct.pack(">q", -3)) == -3 and decode_sequence(b"") == 0 and decode_sequence(b"\x01") is None


def test_coordination_row_reads_leases_and_the_claimed_sequence():
    stat = {"ephemeralOwner": 0x100003D55180002, "ctime": 1795308735385, "mzxid": 77, "mtime": 1795308736407, "version": 5}
    nodes = [
        {"path": "/artemis/N1/activation-sequence", "exists": True, "data_b64": b64(struct.pack(">q", -3)), "stat": stat},
        {"path": "/artemis/N1/locks/leases", "exists": True, "stat": {},
         "children": ["_c_b-lease-0000000004", "_c_a-lease-0000000003", "_c_c-lease-0000000005"]},
        {"path": "/artemis/N1/locks/leases/_c_a-lease-0000000003", "exists": True, "data_b64": b64(b"uuid-a"), "stat": stat},
        {"path": "/artemis/N1/locks/leases/_c_b-lease-0000000004", "exists": True, "data_b64": b64(b"uuid-b"),
         "stat": dict(stat, ephemeralOwner=0x2)},
        {"path": "/artemis/N1/locks/leases/_c_c-lease-0000000005", "exists": False},  # gone since the listing
        {"path": "/artemis/N1/locks/locks", "exists": False},
    ]
    (row,) = coordination_rows(snapshot(nodes), dict(BASE))
    assert row["lease_count"] == 2 and row["holder_lease"] == "_c_a-lease-0000000003"
    assert row["holder_session"] == "0x100003d55180002" and row["holder_uuid"] == "uuid-a"
    assert row["lease_sessions"] == "0x100003d55180002,0x2"
    assert (row["sequence_raw"], row["sequence_claimed"], row["committed_sequence"], row["claimed_sequence"]) == (-3, True, 2, 3)


def test_coordination_rows_of_a_failed_read_and_of_discovery():
    failed = dict(snapshot([]), response=None, error="zk1: no answer within the timeout …")
    assert [(r["node_id"], r["answered"]) for r in coordination_rows(failed, dict(BASE))] == [("N1", False)]
    discover = snapshot([{"path": "/artemis", "exists": True, "stat": {}, "children": ["N2", "N1"]}], node_ids=())
    rows = coordination_rows(discover, dict(BASE))
    assert [(r["node_id"], r["lease_count"], r["sequence_exists"]) for r in rows] == [("N1", 0, False), ("N2", 0, False)]


def test_bronze_rows_are_the_same_live_and_replayed():
    env = next(e for e in ENVS if e["source"] == "zk.znode" and not e["error"])
    assert validate_zk_envelope(env) is None
    live, again = bronze_zk_row(env, "zookeeper", "zk-lab", "collect"), bronze_zk_row(env, "zookeeper", "zk-lab", "replay:x")
    assert live["obs_key"] == again["obs_key"] and live["command"] == "artemis-lock-manager"
    assert validate_zk_envelope(dict(env, response=None, error=None)) == "zk.znode envelope with neither response nor error"


class FakeZk:
    """Just the reads ReadOnlyZk offers, over a dict path → (data, children)."""

    def __init__(self, tree: dict[str, tuple[bytes, list[str]]]):
        self.tree = tree

    def _node(self, path):
        from kazoo.exceptions import NoNodeError

        if path not in self.tree:
            raise NoNodeError(path)
        return self.tree[path]

    def get(self, path):
        from kazoo.protocol.states import ZnodeStat

        data, _ = self._node(path)
        owner = 0x42 if "/leases/" in path else 0
        return data, ZnodeStat(1, 2, 1795308735000, 1795308736000, 3, 0, 0, owner, len(data), 0, 2)

    def get_children(self, path):
        return list(self._node(path)[1])

    def exists(self, path):
        return self.get(path)[1] if path in self.tree else None


def test_snapshots_walk_the_lock_manager_layout_and_plain_paths():
    from collectors.zookeeper.coordination import artemis_snapshot, paths_snapshot

    lease = "_c_1e0f-lease-0000000007"
    zk = FakeZk({
        "/artemis": (b"", ["N1"]),
        "/artemis/N1/activation-sequence": (struct.pack(">q", 5), []),
        "/artemis/N1/locks/leases": (b"", [lease]),
        f"/artemis/N1/locks/leases/{lease}": (b"5c1d-uuid", []),
        "/controller": (b'{"brokerid":1}', []),
    })
    nodes = artemis_snapshot(zk, "artemis", [])
    assert [n["path"] for n in nodes] == ["/artemis", "/artemis/N1/activation-sequence", "/artemis/N1/locks/leases",
                                          f"/artemis/N1/locks/leases/{lease}", "/artemis/N1/locks/locks"]
    assert nodes[-1] == {"path": "/artemis/N1/locks/locks", "exists": False}
    env = dict(snapshot(nodes, node_ids=()))
    (row,) = coordination_rows(env, dict(BASE))
    assert (row["node_id"], row["lease_count"], row["holder_session"], row["holder_uuid"], row["committed_sequence"]) == \
        ("N1", 1, "0x42", "5c1d-uuid", 5)
    plain = paths_snapshot(zk, ["/controller", "/brokers/ids"])
    assert base64.b64decode(plain[0]["data_b64"]) == b'{"brokerid":1}' and plain[1] == {"path": "/brokers/ids", "exists": False}


def test_a_paused_server_does_not_hold_up_the_others(tmp_path):
    """One ensemble: a server answering srvr at once, one that never answers (SIGSTOPped JVM)."""
    from collectors.scraper import Collector
    from lakehouse.store import Lakehouse

    srvr = b"Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nZxid: 0x100000003\nMode: follower\nNode count: 5\n"

    async def run():
        async def answer(reader, writer):
            cmd = await reader.read(4)
            writer.write(srvr if cmd == b"srvr" else b"zk_server_state\tfollower\n")
            await writer.drain()
            writer.close()

        async def silent(reader, writer):
            await asyncio.sleep(30)

        up = await asyncio.start_server(answer, "127.0.0.1", 0)
        stuck = await asyncio.start_server(silent, "127.0.0.1", 0)
        ports = [srv.sockets[0].getsockname()[1] for srv in (up, stuck)]
        cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "200ms", "targets": [
            {"name": n, "kind": "zookeeper", "url": f"127.0.0.1:{p}", "group": "ens", "timeout": "1s"}
            for n, p in zip(("up", "stuck"), ports)]})
        col = Collector(cfg)
        async with up, stuck:
            await col.run(duration=1.5)
        return col.stats

    stats = asyncio.run(run())
    assert stats.targets["up"].scrapes >= 6 and stats.targets["up"].errors == 0
    assert 1 <= stats.targets["stuck"].scrapes <= 3 and stats.targets["stuck"].errors == stats.targets["stuck"].scrapes
    rows = Lakehouse(str(tmp_path / "lh")).read("bronze_zk").to_pylist()
    assert {r["error_kind"] for r in rows if r["target"] == "stuck"} == {"timeout"}
