"""The live collector: every target scraped on its own cadence; bad targets become error
observations in bronze while the others keep going; recording = what bronze got."""

import asyncio
import gc
import json
import re
import time

import pytest

from collectors.recording import read_envelopes
from collectors.scraper import Collector
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.servers import agent_jvm, bad_http, free_port


def test_bad_targets_do_not_stop_the_good_one(tmp_path):
    with agent_jvm(tmp_path) as good, agent_jvm(tmp_path, user="u", password="p") as authed, \
            bad_http("html") as html, bad_http("truncated") as trunc:
        cfg = config_from_dict({
            "lakehouse": str(tmp_path / "lh"),
            "scrape_interval": "1s",
            "flush_interval": "500ms",
            "targets": [
                {"name": "good", "kind": "activemq", "url": good.url, "group": "g"},
                {"name": "no-creds", "kind": "activemq", "url": authed.url},
                {"name": "html", "kind": "activemq", "url": html},
                {"name": "truncated", "kind": "activemq", "url": trunc},
                {"name": "refused", "kind": "activemq", "url": f"http://127.0.0.1:{free_port()}/jolokia"},
            ],
        })
        rec = tmp_path / "rec.jsonl.gz"
        col = Collector(cfg, record=str(rec))
        stats = asyncio.run(col.run(duration=5.0))

    lh = Lakehouse(tmp_path / "lh")
    rows = lh.read("bronze_jolokia").to_pylist()
    by = {}
    for r in rows:
        by.setdefault(r["target"], []).append(r)
    assert set(by) == {"good", "no-creds", "html", "truncated", "refused"}
    # the good target kept its cadence despite four failing neighbours: 5 s / 1 s = 5 scrapes
    # (a collector stalled by its neighbours would manage one or two)
    assert len(by["good"]) >= 4
    answered = [r for r in by["good"] if r["error"] is None]
    assert all(json.loads(r["response_json"])[0]["status"] == 404 for r in answered)
    # on a loaded 2-core machine a scrape may time out (an honest "unknown"); nothing else may fail
    assert {r["error_kind"] for r in by["good"] if r["error"]} <= {"timeout"}
    assert len(answered) >= 0.6 * len(by["good"])
    expect = {"no-creds": "auth", "html": "not_json", "truncated": "truncated", "refused": "refused"}
    for name, kind in expect.items():
        assert by[name], name
        assert {r["error_kind"] for r in by[name]} == {kind}, name
        assert all(r["response_json"] is None and name in r["error"] for r in by[name])
    assert stats.targets["refused"].errors == stats.targets["refused"].scrapes
    # the recording holds exactly what bronze holds
    envs = list(read_envelopes(rec))
    assert len(envs) == len(rows)
    # bronze rows are unique per key
    assert len({r["obs_key"] for r in rows}) == len(rows)


def test_schedule_sweeps_the_phase_and_never_stretches_a_gap():
    from collectors.schedule import PHASE_STEPS, period, scrape_due

    for interval in (0.25, 0.5, 1.0, 2.5, 5.0, 30.0):
        due = [scrape_due(100.0, k, interval) for k in range(4 * PHASE_STEPS)]
        gaps = [b - a for a, b in zip(due, due[1:])]
        assert max(gaps) <= interval and min(gaps) >= interval - 0.035 - 1e-9, interval
        # two sweeps visit the whole second, in steps of at most 1/PHASE_STEPS s, whatever the interval
        phases = sorted((t % 1.0) for t in due[:2 * PHASE_STEPS])
        assert max(b - a for a, b in zip(phases, phases[1:] + [phases[0] + 1])) <= 1.0 / PHASE_STEPS + 1e-9, interval
    assert period(1.0) == 1.0 - 1 / PHASE_STEPS


def test_real_collector_scrapes_on_the_swept_schedule(tmp_path):
    cfg = config_from_dict({
        "lakehouse": str(tmp_path / "lh"), "scrape_interval": "1s", "flush_interval": "500ms",
        "targets": [{"name": "refused", "kind": "activemq", "url": f"http://127.0.0.1:{free_port()}/jolokia"}],
    })
    asyncio.run(Collector(cfg).run(duration=6.0))
    ts = sorted(r["ts"].timestamp() for r in Lakehouse(tmp_path / "lh").read("bronze_jolokia").to_pylist())
    gaps = sorted(b - a for a, b in zip(ts, ts[1:]))
    assert len(ts) >= 5
    # a 1 s interval is scraped every 1 - 1/29 s (due times are absolute: a late scrape does not shift the rest)
    assert 0.94 <= gaps[len(gaps) // 2] <= 0.99, gaps


def test_a_frozen_target_is_scraped_again_at_once_not_a_period_later(tmp_path):
    with bad_http("hang") as url:
        cfg = config_from_dict({
            "lakehouse": str(tmp_path / "lh"), "scrape_interval": "1s", "flush_interval": "500ms",
            "targets": [{"name": "frozen", "kind": "activemq", "url": url}],
        })
        asyncio.run(Collector(cfg).run(duration=6.0))
    rows = sorted(Lakehouse(tmp_path / "lh").read("bronze_jolokia").to_pylist(), key=lambda r: r["ts"])
    assert {r["error_kind"] for r in rows} == {"timeout"}
    gaps = [(b["ts"] - a["ts"]).total_seconds() for a, b in zip(rows, rows[1:])]
    # each scrape times out after ~1 s; the next starts right away (waiting for the next grid point
    # would leave ~2 s between the scrapes of a frozen broker)
    assert len(rows) >= 5 and max(gaps) < 1.6, gaps


def keepalive_agent(connections: list[int]):
    """An HTTP/1.1 keep-alive Jolokia stand-in on the test's event loop: every read answered 404 (an
    answered exchange); `connections` gets one entry per TCP connection accepted."""
    length = re.compile(rb"(?i)\r\ncontent-length:\s*(\d+)")

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                reqs = json.loads(await reader.readexactly(int(length.search(head).group(1))))
                out = json.dumps([{"request": r, "status": 404, "error_type": "javax.management.InstanceNotFoundException",
                                   "error": f"javax.management.InstanceNotFoundException : {r.get('mbean')}"} for r in reqs]).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out) + out)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return conn


def run_against_keepalive_agent(tmp_path, interval: str, duration: float | None, col_hook=None) -> tuple[Collector, list[int]]:
    connections: list[int] = []

    async def main() -> Collector:
        server = await asyncio.start_server(keepalive_agent(connections), "127.0.0.1", 0)
        cfg = config_from_dict({
            "lakehouse": str(tmp_path / "lh"), "scrape_interval": interval, "flush_interval": "500ms",
            "targets": [{"name": "amq", "kind": "activemq", "url": f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/jolokia"}],
        })
        col = Collector(cfg)
        if col_hook:
            col_hook(col)
        async with server:
            await col.run(duration)
        return col

    return asyncio.run(main()), connections


@pytest.mark.slow
def test_a_target_keeps_its_connection_from_one_scrape_to_the_next(tmp_path):
    """At a 6 s interval (longer than httpx's 5 s keep-alive) both scrapes use one connection: a new one
    per scrape was ~30 objects that outlived the interval and drove Python's full GCs (P16)."""
    col, connections = run_against_keepalive_agent(tmp_path, "6s", 6.5)
    st = col.stats.targets["amq"]
    assert (st.scrapes, st.errors) == (2, 0)
    assert len(connections) == 1


def test_the_run_freezes_its_long_lived_state_and_unfreezes_it_at_the_end(tmp_path):
    """gc.freeze() once set up, again after the first round (the connections), gc.unfreeze() at the end."""
    counts: list[tuple[float, int]] = []

    def hook(col: Collector) -> None:
        col.on_observation = lambda env: counts.append((time.monotonic(), gc.get_freeze_count()))

    t0 = time.monotonic()
    col, _ = run_against_keepalive_agent(tmp_path, "500ms", 2.5, hook)
    assert col.stats.targets["amq"].scrapes >= 4
    first_round = [n for t, n in counts if t - t0 < 1.3]  # the second freeze comes at interval + 1 s = 1.5 s
    later = [n for t, n in counts if t - t0 > 1.7]
    assert first_round and later, counts
    assert min(first_round) > 0 and min(later) > max(first_round), counts
    assert gc.get_freeze_count() == 0


def test_stop_ends_the_loops_waiting_for_their_next_scrape_at_once(tmp_path, monkeypatch):
    """A stop wakes a target's loop that waits for its next scrape (30 s away here); the stop grace is
    made longer than that, so a loop left sleeping would hold the run for the whole interval."""
    import collectors.scraper as scraper

    monkeypatch.setattr(scraper, "STOP_GRACE_S", 60.0)

    def hook(col: Collector) -> None:
        col.on_observation = lambda env: asyncio.get_running_loop().call_later(0.2, col.stop)

    t0 = time.monotonic()
    col, _ = run_against_keepalive_agent(tmp_path, "30s", None, hook)
    assert col.stats.targets["amq"].scrapes == 1
    assert time.monotonic() - t0 < 10


def test_keepalive_covers_the_interval_but_stays_under_the_servers_idle_timeouts():
    from collectors.scraper import KEEPALIVE_MAX_S, keepalive

    for interval in (0.5, 1.0, 5.0, 10.0, 15.0):
        assert interval < keepalive(interval) <= KEEPALIVE_MAX_S < 20.0, interval  # Tomcat closes idle ones at 20 s
    for interval in (15.5, 20.0, 30.0, 60.0, 300.0):  # a connection per scrape, as httpx's default
        assert keepalive(interval) == 5.0, interval
