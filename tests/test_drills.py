"""The fault drills (brokerscope.drills): each runs a real fault in the lab, writes its ground
truth beside a recording, is analysed with Spark and scored against that truth. kill-master runs in
tests/test_drill_live.py (with its replay). Plus fast tests of the pieces: the scorecard, the TCP
proxy that cuts a database path, the unanswered-run detection."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from brokerscope.drills import DRILLS, drill_module, run_drill
from brokerscope.drills.common import Scorecard
from brokerscope.drills.pause_master import unanswered_runs
from infra.tcp_proxy import TcpProxy
from tests.drill_checks import assert_passed

LIVE = ["pause-master", "lease-split-brain", "misconfigured-pair", "zk-leader-loss", "zk-quorum-loss", "gc-pause"]


def our_processes(workdir: Path) -> list[str]:
    """PIDs whose command line names this drill's lab (JVMs carry -Dbrokerscope.lab=<dir>, postgres -D <dir>)."""
    marker = str(workdir).encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmd and int(pid) != os.getpid():
            found.append(pid)
    return found


@pytest.mark.slow
@pytest.mark.lab
@pytest.mark.drill
@pytest.mark.parametrize("name", LIVE)
def test_drill_meets_the_bar(name, tmp_path, spark):
    workdir = tmp_path / name
    card = run_drill(name, workdir, 0.5, spark=spark)
    print("\n" + card.render())
    truth = json.loads((workdir / "ground_truth.json").read_text())
    report = json.loads((workdir / "report.json").read_text())
    assert truth["drill"] == name and report["drill"] == name
    assert (workdir / "recording.jsonl.gz").stat().st_size > 0
    assert our_processes(workdir / "lab") == []  # every process the drill started is gone
    if "pg_pid" in truth:  # PostgreSQL runs from a scratch directory: check its pid
        assert not Path(f"/proc/{truth['pg_pid']}").exists()
    assert_passed(card)


def test_every_drill_has_a_run_and_a_score():
    for name in DRILLS:
        mod = drill_module(name)
        assert callable(mod.run) and callable(mod.score) and mod.SUMMARY
    with pytest.raises(KeyError, match="unknown drill 'nope'; drills are: kill-master"):
        drill_module("nope")


def test_drill_families_select_by_name_prefix_and_unknown_names_are_refused():
    from brokerscope.drill_cli import FAMILIES, selected

    artemis = selected("artemis-all")
    assert artemis and all(n.startswith("artemis-") for n in artemis)
    assert set(artemis) == {n for n in DRILLS if n.startswith("artemis-")}
    assert selected("all") == list(DRILLS) and selected("kill-master") == ["kill-master"]
    assert all(selected(f"{g}-all") for g in FAMILIES)  # no family without a drill
    with pytest.raises(SystemExit):  # argparse refuses a family that does not exist
        from brokerscope.cli import main
        main(["drill", "nosuch-all"])


def test_scorecard_bounds_are_one_scrape_interval_either_way():
    card = Scorecard("t", 0.5)
    card.boundary("in", 10.55, 10.0)
    assert card.passed and card.boundaries == {"in": 0.55}
    card.boundary("late", 10.7, 10.0)
    card.boundary("early", 9.3, 10.0)
    card.boundary("missing", None, 10.0)
    assert [f.split(":")[0] for f in card.failures] == ["late", "early", "missing"]
    assert card.to_json()["boundary_errors_intervals"]["late"] == 1.4


def test_scorecard_counts_a_miss_and_a_false_finding_as_failures():
    card = Scorecard("t", 0.5)
    card.detect("split brain", False, "no row")
    card.expect_none("failover", [{"x": 1}])
    assert not card.passed
    assert card.failures == ["split brain not detected: no row", "false failover: {'x': 1}"]
    assert "✗ split brain" in card.render()


def _state(t0: datetime, s: float, reachable: bool) -> dict:
    return {"ts": t0 + timedelta(seconds=s), "reachable": reachable, "scrape_ms": 5.0}


def test_unanswered_runs_are_bracketed_by_answered_scrapes():
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    states = [_state(t0, s, r) for s, r in [(0, True), (0.5, False), (1.5, False), (2.0, True), (2.5, False)]]
    runs = unanswered_runs(states)
    assert [(a["ts"], b and b["ts"], c and c["ts"]) for a, b, c in runs] == [
        (states[1]["ts"], states[0]["ts"], states[3]["ts"]), (states[4]["ts"], states[3]["ts"], None)]


class EchoServer:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)


def test_tcp_proxy_holds_bytes_while_cut_and_delivers_them_after_the_heal():
    echo = EchoServer()
    with TcpProxy(("127.0.0.1", echo.port)) as proxy, socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as c:
        c.sendall(b"before")
        assert c.recv(100) == b"before"
        proxy.cut()
        c.sendall(b"during")
        c.settimeout(0.5)
        with pytest.raises(socket.timeout):
            c.recv(100)  # nothing comes back while the path is cut (no reset either)
        late = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)  # accepted, not yet connected upstream
        late.sendall(b"new")
        time.sleep(0.2)
        proxy.heal()
        c.settimeout(5)
        assert c.recv(100) == b"during"
        late.settimeout(5)
        assert late.recv(100) == b"new"
        late.close()
        assert proxy.cuts and proxy.cuts[0][1] is not None
    echo.sock.close()


@pytest.mark.parametrize("delay_s", [0.0, 0.02])
def test_tcp_proxy_delays_every_byte_each_way_and_keeps_order_and_closing(delay_s):
    """A delay is latency, not a cut: each round trip costs at least 2 × delay_s more, every byte
    arrives in order, and a close reaches the other side after the bytes before it."""
    echo = EchoServer()
    with TcpProxy(("127.0.0.1", echo.port), delay_s=delay_s) as proxy:
        c = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        got, rtts = b"", []
        for i in range(5):
            t = time.perf_counter()
            c.sendall(b"%d;" % i)
            got += c.recv(100)
            rtts.append(time.perf_counter() - t)
        assert got == b"0;1;2;3;4;" and min(rtts) >= 2 * delay_s
        c.sendall(b"x" * 100_000)
        back = b""
        while len(back) < 100_000:
            back += c.recv(65536)
        assert back == b"x" * 100_000
        c.shutdown(socket.SHUT_WR)  # the echo server sees the end, closes; so does the proxy
        assert c.recv(100) == b""
        c.close()
    echo.sock.close()
    with pytest.raises(ValueError, match="delay_s"):
        TcpProxy(("127.0.0.1", 1), delay_s=-1)


def test_tcp_proxy_delay_set_while_a_connection_is_open_applies_to_it():
    """A link slowed down mid-connection (drill kafka-mm2-slow-link): the open connection's next
    bytes are delayed, and fast again once the delay is 0, in order throughout."""
    echo = EchoServer()
    with TcpProxy(("127.0.0.1", echo.port)) as proxy, socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as c:
        def rtt(msg: bytes) -> float:
            t = time.perf_counter()
            c.sendall(msg)
            assert c.recv(100) == msg
            return time.perf_counter() - t

        rtt(b"a")
        proxy.delay_s = 0.5
        assert rtt(b"b") >= 1.0
        proxy.delay_s = 0.0
        assert rtt(b"c") < 1.0  # a delay still applied would take ≥ 1 s
    echo.sock.close()


def test_jdbc_lease_broker_config_renders_the_lease_locker_and_data_source(tmp_path):
    import xml.dom.minidom

    from infra.lab import ActiveMQPair, _render

    pair = ActiveMQPair(tmp_path, store="jdbc-lease", lock_acquire_sleep_ms=2000, lock_keep_alive_ms=500,
                        jdbc_urls={"amq-a": "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres&x=1", "amq-b": "u"})
    doc = xml.dom.minidom.parseString(_render(
        "activemq.xml", {"BROKER_NAME": "amq-a", "DATA_DIR": "/d", "OPENWIRE_PORT": "1", "STOMP_PORT": "2"},
        raw=pair._store_fragments("amq-a")))
    adapter = doc.getElementsByTagName("jdbcPersistenceAdapter")[0]
    assert adapter.getAttribute("lockKeepAlivePeriod") == "500" and adapter.getAttribute("dataSource") == "#brokerscope-pg"
    locker = doc.getElementsByTagName("lease-database-locker")[0]
    assert (locker.getAttribute("lockAcquireSleepInterval"), locker.getAttribute("leaseHolderId")) == ("2000", "amq-a")
    assert doc.getElementsByTagName("property")[0].getAttribute("value").endswith("user=postgres&x=1")
    assert (tmp_path / "amq-a" / "lib" / "postgresql.jar").is_symlink()  # on the broker's class path
    with pytest.raises(ValueError, match="needs jdbc_urls"):
        ActiveMQPair(tmp_path, store="jdbc-lease")


@pytest.mark.slow
@pytest.mark.lab
def test_postgres_cluster_starts_below_a_directory_only_root_may_enter(tmp_path):
    from infra.pg_lab import PG_BIN, PgCluster

    if not (PG_BIN / "postgres").exists():
        pytest.skip(f"no PostgreSQL at {PG_BIN}")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    pg = PgCluster(locked / "pg")
    try:
        pg.start()
        with socket.create_connection(("127.0.0.1", pg.port), timeout=5):
            pass
        pid = pg.pid
    finally:
        pg.stop()
    assert not Path(f"/proc/{pid}").exists()


def test_a_drill_that_fails_half_way_leaves_no_thread_running():
    from brokerscope.drills.common import Producer, stop_leftovers
    from infra.lab import free_port

    producer = Producer(f"stomp://127.0.0.1:{free_port()}", "orphan", period=0.05).start()
    time.sleep(0.2)
    stop_leftovers()  # what run_drill does whatever happened
    assert not producer._thread.is_alive() and producer.refused  # it ran, refused by a closed port, and stopped
