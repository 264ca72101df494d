"""Collector over real round trips (issue P16): brokerscope's `Collector` against the PyPI `jolokia`
client on real brokers with many MBeans, behind a delaying TCP proxy — side by side in one run.

    python bench/bench_collector_rtt.py [--queues 200] [--seconds 15] [--delays 0,1,10] [--pool 16]

Brokers (started here, stopped by PID on exit): a real Apache Artemis 2.40.0 broker (the lab's
shared-store primary, alone; its console's Jolokia with login and Origin) and a real ActiveMQ
Classic 5.17 master (the lab's pair; the official Jolokia 2.6.0 JVM agent), each given `--queues`
queues (one persistent message sent to each over STOMP). Between every client and each broker's
Jolokia: infra.tcp_proxy.TcpProxy with `delay_s` = 0, 1 ms and 10 ms each way (`--delays`, in ms;
0 is the proxy without delay), so a round trip costs 2 × delay more, as across a network.

Phases per delay, one after another in this process, each `--seconds` long, the same two targets:

  brokerscope   the real Collector (config_from_dict, bronze to a temp lakehouse), scrape_interval
                1 ms: each target scraped back to back = its read throughput. One bulk POST per
                target scrape with every read of its pack (the destination read is a wildcard: all
                queues in one answer).
  pypi-same     PyPI `jolokia==0.4.0` sending the same reads the Collector sent (taken from its
                bronze rows), the client's idiom: `get_attribute(mbean=…, attribute=…)`, one POST per
                read (a wildcard read still returns every queue), targets one after another.
  pypi-mbean    the PyPI client one POST per MBean: each wildcard read expanded into the MBeans it
                matched (what a poller that lists queues and reads each one does), serially.
  pypi-pool     pypi-mbean's POSTs from a pool of `--pool` threads (one session per thread).

"MBeans read" counts MBeans whose attributes came back (a wildcard answer counts each MBean in it;
an ok read is status 200, or 404 for a wildcard matching nothing — bench_collector.item_ok). CPU
is this process's user+system time over the phase (getrusage; the Collector's includes its bronze
writes); latency is per target scrape (all its reads).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_collector import cpu_self, item_ok, pct  # noqa: E402  (same CPU reading, counting rule and percentile)

QUEUE_PREFIX = "bench.q"


def mbeans_in(item: object, request: dict) -> int:
    """How many MBeans an ok answer item read (0 when the read failed)."""
    if not item_ok(item, request):
        return 0
    value = item.get("value") if isinstance(item, dict) else None
    if "*" in str(request.get("mbean", "")):
        return len(value) if isinstance(value, dict) else 0
    return 1


# --------------------------------------------------------------------------------------------------
# brokers
# --------------------------------------------------------------------------------------------------


class Brokers:
    """The real Artemis broker and ActiveMQ master with `queues` queues each; targets by proxy port."""

    def __init__(self, work: Path, queues: int) -> None:
        from infra.artemis_lab import ArtemisPair
        from infra.lab import ActiveMQPair

        self.work, self.queues = work, queues
        self.artemis = ArtemisPair(work / "artemis", "shared-store")
        self.activemq = ActiveMQPair(work / "activemq")

    def start(self) -> None:
        from infra.artemis_lab import stomp_send as artemis_send
        from infra.lab_clients import stomp_send

        t = time.time()
        self.artemis.start_broker("art-a", "active", timeout=120)
        self.activemq.start(timeout=120)
        say(f"brokers up in {time.time() - t:.1f} s; creating {self.queues} queues on each")
        url = self.artemis.brokers["art-a"].stomp_url
        for i in range(self.queues):
            artemis_send(url, f"{QUEUE_PREFIX}{i}", ["x"], login="admin", passcode=self.artemis.admin_password)
        master = self.activemq.brokers["amq-a"].stomp_url
        for i in range(self.queues):
            stomp_send(master, f"/queue/{QUEUE_PREFIX}{i}", ["x"])

    def stop(self) -> None:
        self.activemq.stop()
        self.artemis.stop()

    def upstreams(self) -> dict[str, tuple[str, int]]:
        from urllib.parse import urlsplit

        out = {}
        for name, url in (("artemis", self.artemis.jolokia_url("art-a")), ("activemq", self.activemq.jolokia_url("amq-a"))):
            u = urlsplit(url)
            out[name] = (u.hostname, u.port)
        return out

    def targets(self, ports: dict[str, int]) -> list[dict]:
        from urllib.parse import urlsplit

        art = self.artemis.target("art-a")
        art_path = urlsplit(art["url"]).path
        amq_path = urlsplit(self.activemq.jolokia_url("amq-a")).path
        return [{**art, "name": "artemis", "url": f"http://127.0.0.1:{ports['artemis']}{art_path}", "timeout": "30s",
                 "group": "bench-artemis"},
                {"name": "activemq", "kind": "activemq", "url": f"http://127.0.0.1:{ports['activemq']}{amq_path}",
                 "timeout": "30s", "group": "bench-activemq"}]


# --------------------------------------------------------------------------------------------------
# phases
# --------------------------------------------------------------------------------------------------


def phase_brokerscope(targets: list[dict], seconds: float, lakehouse: Path) -> tuple[dict, dict[str, list]]:
    """The Collector back to back for `seconds`; the result and, per target, the reads it sent with
    the MBeans each wildcard matched (for the PyPI phases)."""
    from collectors.scraper import Collector
    from lakehouse.store import Lakehouse
    from settings import config_from_dict

    cfg = config_from_dict({"lakehouse": str(lakehouse), "scrape_interval": 0.001, "flush_interval": 2.0,
                            "targets": targets})
    col = Collector(cfg, lakehouse=Lakehouse(str(lakehouse)))
    win: dict[str, float] = {}

    def first(_env: dict) -> None:
        if "start" not in win:
            win["start"], win["cpu0"] = time.time(), cpu_self()
            asyncio.get_running_loop().call_later(seconds, stop)

    def stop() -> None:
        win["stop"], win["cpu1"] = time.time(), cpu_self()
        col.stop()

    col.on_observation = first

    async def run() -> None:
        asyncio.get_running_loop().call_later(seconds + 300, col.stop)
        await col.run()

    asyncio.run(run())
    cols = ["target", "ts", "elapsed_ms", "request_json", "response_json"]
    tbl = Lakehouse(str(lakehouse)).read("bronze_jolokia", columns=cols)
    scrapes = mbeans = posts = 0
    lat: list[float] = []
    reads: dict[str, list] = {}
    for target, ts, ms, req, body in zip(*(tbl.column(c).to_pylist() for c in cols)):
        if ts.timestamp() + (ms or 0) / 1000 > win["stop"] or ts.timestamp() < win["start"]:
            continue
        sent, got = json.loads(req), json.loads(body) if body else []
        scrapes, posts = scrapes + 1, posts + 1
        lat.append(ms)
        mbeans += sum(mbeans_in(i, r) for i, r in zip(got, sent))
        if target not in reads and got:
            reads[target] = [(r, sorted(i["value"]) if "*" in r["mbean"] and isinstance(i.get("value"), dict) else None)
                             for r, i in zip(sent, got)]
    wall = win["stop"] - win["start"]
    return result(scrapes, mbeans, posts, wall, win["cpu1"] - win["cpu0"], lat), reads


def pypi_clients(targets: list[dict], passwords: dict[str, str]):
    import jolokia

    def make(t: dict):
        c = jolokia.JolokiaClient(t["url"], t.get("username"), passwords.get(t["name"]))
        if t.get("origin"):
            c.session.headers["Origin"] = t["origin"]
        return c

    return make


def calls_of(reads: list, per_mbean: bool) -> list[tuple[str, object, bool]]:
    """(mbean, attribute, wildcard) POSTs: the reads as sent, or each wildcard expanded per MBean."""
    out = []
    for request, matched in reads:
        if per_mbean and matched is not None:
            out += [(m, request.get("attribute"), False) for m in matched]
        else:
            out.append((request["mbean"], request.get("attribute"), "*" in request["mbean"]))
    return out


def pypi_read(client, mbean: str, attribute, wildcard: bool) -> int:
    try:
        resp = client.get_attribute(mbean=mbean, attribute=attribute)
    except Exception:  # noqa: BLE001 - refused/reset: the read failed
        return 0
    # an attribute list comes back as one item per attribute (the client's own bulk): an MBean counts once
    items = resp if isinstance(resp, list) else [resp]
    if not items or not all(item_ok(i, {"mbean": mbean}) for i in items):
        return 0
    if not wildcard:
        return 1
    return len(set().union(*(i["value"] for i in items if isinstance(i.get("value"), dict))))


def phase_pypi(targets: list[dict], reads: dict[str, list], seconds: float, make, per_mbean: bool,
               pool: int = 0) -> dict:
    plan = [(t, calls_of(reads[t["name"]], per_mbean)) for t in targets]
    local = threading.local()
    clients = {t["name"]: make(t) for t in targets}

    def pooled(t: dict, call) -> int:
        cs = getattr(local, "clients", None) or {}
        local.clients = cs
        c = cs.get(t["name"]) or cs.setdefault(t["name"], make(t))
        return pypi_read(c, *call)

    executor = ThreadPoolExecutor(pool) if pool else None
    scrapes = mbeans = posts = 0
    lat: list[float] = []
    c0, t0 = cpu_self(), time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        for t, calls in plan:
            s = time.perf_counter()
            if executor:
                got = list(executor.map(lambda call, t=t: pooled(t, call), calls))
            else:
                got = [pypi_read(clients[t["name"]], *call) for call in calls]
            lat.append((time.perf_counter() - s) * 1000)
            scrapes, mbeans, posts = scrapes + 1, mbeans + sum(got), posts + len(calls)
            if time.perf_counter() >= end:
                break
    wall, cpu = time.perf_counter() - t0, cpu_self() - c0
    if executor:
        executor.shutdown()
    return result(scrapes, mbeans, posts, wall, cpu, lat)


def result(scrapes: int, mbeans: int, posts: int, wall: float, cpu: float, lat: list[float]) -> dict:
    return {"scrapes": scrapes, "mbeans": mbeans, "posts": posts, "wall": wall, "cpu": cpu,
            "mbeans_per_s": mbeans / wall if wall else 0.0, "cpu_ms_per_1000_mbeans": 1e6 * cpu / mbeans if mbeans else None,
            "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99)}


# --------------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------------


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queues", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    ap.add_argument("--delays", default="0,1,10", help="one-way delays in ms, comma-separated")
    ap.add_argument("--pool", type=int, default=16, help="threads of the pypi-pool phase")
    ap.add_argument("--json", type=Path, help="write the results here too")
    a = ap.parse_args()
    from infra.tcp_proxy import TcpProxy

    work = Path(tempfile.mkdtemp(prefix="bench-rtt-"))
    brokers = Brokers(work / "lab", a.queues)
    results: dict[str, dict[str, dict]] = {}
    try:
        brokers.start()
        passwords = {"artemis": brokers.artemis.monitor_password}
        upstreams = brokers.upstreams()
        for delay_ms in (float(x) for x in a.delays.split(",")):
            proxies = {n: TcpProxy(up, name=f"delay-{n}", delay_s=delay_ms / 1000).start() for n, up in upstreams.items()}
            try:
                targets = brokers.targets({n: p.port for n, p in proxies.items()})
                make = pypi_clients(targets, passwords)
                key = f"{delay_ms:g} ms"
                say(f"delay {key} each way: brokerscope")
                bs, reads = phase_brokerscope(targets, a.seconds, work / f"lh-{delay_ms:g}")
                row = {"brokerscope": bs}
                for label, per_mbean, pool in (("pypi-same", False, 0), ("pypi-mbean", True, 0),
                                               ("pypi-pool", True, a.pool)):
                    say(f"delay {key}: {label}")
                    row[label] = phase_pypi(targets, reads, a.seconds, make, per_mbean, pool)
                results[key] = row
                say(render_row(key, row))
            finally:
                for p in proxies.values():
                    p.close()
    finally:
        brokers.stop()
    print(render(results, a))
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def render_row(key: str, row: dict[str, dict]) -> str:
    bs = row["brokerscope"]["mbeans_per_s"]
    return " | ".join(f"{k} {v['mbeans_per_s']:,.0f} MBeans/s" + (f" ({bs / v['mbeans_per_s']:.1f}× fewer)" if k != "brokerscope" and v["mbeans_per_s"] else "")
                      for k, v in row.items())


def render(results: dict[str, dict[str, dict]], a: argparse.Namespace) -> str:
    lines = [f"bench_collector_rtt — {platform.node()} {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{a.queues} queues per broker (Artemis 2.40.0 console Jolokia, ActiveMQ 5.17 + Jolokia 2.6.0 agent), "
             f"{a.seconds:g} s per phase",
             f"{'delay':>7} {'client':<12} {'scrapes':>8} {'POSTs':>8} {'MBeans/s':>10} {'bs/x':>6} "
             f"{'CPU ms/1k MBeans':>17} {'p50 ms':>8} {'p99 ms':>8}"]
    for key, row in results.items():
        bs = row["brokerscope"]["mbeans_per_s"]
        for label, r in row.items():
            ratio = bs / r["mbeans_per_s"] if r["mbeans_per_s"] else float("inf")
            cpu = r["cpu_ms_per_1000_mbeans"]
            lines.append(f"{key:>7} {label:<12} {r['scrapes']:>8,} {r['posts']:>8,} {r['mbeans_per_s']:>10,.0f} "
                         f"{ratio:>6.1f} {cpu if cpu is None else round(cpu, 1)!s:>17} {r['p50_ms'] or 0:>8.1f} "
                         f"{r['p99_ms'] or 0:>8.1f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
