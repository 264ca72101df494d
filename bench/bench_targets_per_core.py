"""Targets per core over real round trips (issue P16): the largest number of Jolokia targets
brokerscope's collector, pinned to ONE core, scrapes at a 10 s interval with p99 scrape latency
under 100 ms, with 0, 1 and 10 ms added each way by a delaying TCP proxy.

    python bench/bench_targets_per_core.py [--agents canned,jvm] [--proxies asyncio,tcpproxy] [--delays 0,1,10]

Collector. The real `collectors.scraper.Collector` on a config built by `settings.config_from_dict`
(what `brokerscope collect` runs; bronze to a temp lakehouse, the default flush interval), one
ActiveMQ target per simulated broker, `scrape_interval` = `--interval`, in a child process pinned to
`--core` alone (sched_setaffinity before it imports anything or starts a thread). Everything else
(agents, proxies, this orchestrating process) is pinned to the other cores: the rig.

Agents (`--agents`), what answers the collector's bulk POST (the 6 reads of an ActiveMQ scrape):
  jvm     bench_collector.py's fleet: `--jvms` JVMs running the lab's official Jolokia 2.6.0 JVM
          agent, hosting exactly N ActiveMQ-shaped brokers (target i on JVM i % jvms; started anew,
          JIT-warmed, for each N). Every broker of a JVM sits in one JMX domain, so each wildcard
          read scans all of them: the agents' CPU per scrape grows with N (a real broker's JVM hosts
          one broker), and one core of agents saturates long before the collector's core.
  canned  the answer the real agent gave for broker b0000 (captured from a one-JVM fleet at start),
          replayed by one asyncio process with the request's broker name put in: the same bytes
          per scrape at a fraction of the CPU, so the collector's own limit can be reached. It
          runs with Python's garbage collector off, as the asyncio proxy does: rig processes, their
          own full-GC pauses would otherwise be counted against the collector (a step is short).
Proxies (`--proxies`), one per agent port, forwarding every chunk `delay` ms after it was read, in
order, each way (0 = the proxy without delay, the baseline; connections are not delayed, bytes are):
  tcpproxy  infra.tcp_proxy.TcpProxy (delay_s), as the lab's drills use it: two threads per
            connection (four under a delay) that poll select() every 50 ms, so it costs CPU per
            OPEN connection, busy or not, and select() takes no file descriptor above 1023 (runs in
            processes of 400 targets). The collector holds one connection per target.
  asyncio   the same rule on one asyncio event loop (`asyncio_proxies` here), processes of 4000
            targets: its cost follows the bytes forwarded, not the connections held open.

Steps. Per rig and delay, target counts double from `--start` (later delays: from the previous
delay's bracket) until one fails (or `--max-targets`), then `--bisect` bisection steps between the
largest pass and the smallest fail (to multiples of 250; of 50 up to 1000). A step is a fresh
collector process and fresh proxies: start-up, `--warmup` s (default one interval: the targets'
first scrapes are spread over one interval), the measured window of `--steady` s, then 3 s grace
(scrapes sent inside the window land) and stop.

Measures, over the window only. Scrape latency = the `elapsed_ms` the collector records per scrape
in bronze (collectors.jolokia.JolokiaClient.bulk: from before the POST until the answer is parsed,
retries included, as timed inside the collector's event loop, so its own queueing counts), for the
scrapes sent in the window. Asked = targets x window / the collector's scrape period
(collectors.schedule.period: 10 s - 1/29 s); done = scrapes sent in the window that landed. Errors =
failed exchanges plus scrapes with a read not ok (bench_collector.item_ok). CPU s/s = the collector
process's user+system CPU per wall second (getrusage); the agents' and the proxies' from /proc;
per-core busy from /proc/stat ("other" = the CPU of everything else on these cores: other users'
work, the kernel; each step waits for a quiet machine first, and one with `--disturbed` CPU s/s of
it is measured again, up to `--redo` times); loop lag = how late a 50 ms sleep in the
collector's event loop wakes (p99); flush = the bronze commits in the window (timed by wrapping
`Collector.flush`: wall ms, their thread's CPU, the share of the window they ran, and how many of the
slowest 1 % of scrapes overlapped one); gen-2 GC = Python's full garbage collections in the collector
process (gc.callbacks: how many, the longest, and the share of the slowest 1 % of scrapes that ran
from a GC's start to 1 s after its end, against the share of the window such spans cover); RSS = the collector's peak (0.2 s sampling); rig p99 = the
p99 of bare round trips through the rig (`--probe-rate` per second from a thread on the rig's core:
a random target's same bulk POST, on a new connection: the collector's own are kept from one scrape to the next), i.e.
what the proxy, the delay and the agents add to a scrape without the collector's own queueing.

A step passes when done >= 99 % of asked, collector CPU <= `--cpu-limit` s/s and p99 < `--p99-ms`.
A failure is put down to the rig when the rig's core is saturated (busy >= `--rig-busy`) and the
collector's is not, or when no core is saturated but the rig p99 alone reaches the limit or half the
collector's p99; to the collector when its core is saturated, or when no core is and the rig p99
stays under both (the rest of the latency is queueing inside the collector process).
`--render FILE` prints the table of a `--json FILE` again (with these rules), measuring nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_collector import (JVMs, Sampler, broker_name, clean_up, cpu_self, describe_reads, item_ok, machine,  # noqa: E402
                             pct, procs_cpu, rss_bytes, run_child, scrape_reads, target_specs, versions)

GRACE_S = 3.0  # after the window: scrapes sent inside it land before the stop


# --------------------------------------------------------------------------------------------------
# measuring helpers
# --------------------------------------------------------------------------------------------------


def cores_busy() -> dict[int, tuple[float, float]]:
    """Per core: (busy jiffies, total jiffies) from /proc/stat."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            name, *vals = line.split()
            v = [int(x) for x in vals]
            idle = v[3] + (v[4] if len(v) > 4 else 0)
            out[int(name[3:])] = (sum(v[:8]) - idle, sum(v[:8]))
    return out


def busy_between(a: dict[int, tuple[float, float]], b: dict[int, tuple[float, float]], cores: set[int]) -> float:
    """Busy fraction of these cores between two cores_busy() readings (1.0 = all of them busy)."""
    busy = sum(b[c][0] - a[c][0] for c in cores)
    total = sum(b[c][1] - a[c][1] for c in cores)
    return busy / total if total else 0.0


def mark(jvm_pids: list[int], proxy_pids: list[int]) -> dict:
    return {"t": time.time(), "cpu": cpu_self(), "jvm": procs_cpu(jvm_pids), "proxy": procs_cpu(proxy_pids),
            "cores": cores_busy()}


# --------------------------------------------------------------------------------------------------
# child: the proxies of a share of the targets
# --------------------------------------------------------------------------------------------------


def proxy_main(spec_path: str) -> None:
    """One proxy per upstream (agent JVM) of the spec's kind; prints their ports, runs until SIGTERM."""
    spec = json.loads(Path(spec_path).read_text())
    if spec["kind"] == "asyncio":
        import gc

        gc.disable()  # rig, not under test: no full-GC pauses of its own in the round trips (a step is short)
        asyncio.run(asyncio_proxies(spec))
        return
    from infra.tcp_proxy import TcpProxy

    proxies = [TcpProxy((h, p), name=f"bench-{i}", delay_s=spec["delay_s"]).start() for i, (h, p) in enumerate(spec["upstreams"])]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print("PORTS " + json.dumps([p.port for p in proxies]), flush=True)
    while not done.wait(0.5):
        pass
    # no close(): it joins every thread the proxies ever started; the kernel closes the sockets
    os._exit(0)


async def asyncio_proxies(spec: dict) -> None:
    """TcpProxy's delay rule (every chunk read is written `delay_s` later, in order, per direction,
    TCP_NODELAY on both sides; connections are not delayed, bytes are) on one event loop instead of
    threads that poll every 50 ms, so its cost follows the traffic, not the open connections."""
    import socket

    loop = asyncio.get_running_loop()
    delay = spec["delay_s"]

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def write() -> None:
            try:
                while True:
                    due, data = await queue.get()
                    if (wait := due - loop.time()) > 0:
                        await asyncio.sleep(wait)
                    if not data:
                        break
                    writer.write(data)
                    await writer.drain()
            except OSError:
                pass
            finally:
                writer.close()

        w = asyncio.create_task(write())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((loop.time() + delay, data))
        except OSError:
            pass
        queue.put_nowait((loop.time() + delay, b""))
        await w

    def serve(host: str, port: int):
        async def conn(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
            try:
                u_reader, u_writer = await asyncio.open_connection(host, port)
            except OSError:
                c_writer.close()
                return
            for w in (c_writer, u_writer):
                w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await asyncio.gather(pump(c_reader, u_writer), pump(u_reader, c_writer))
        return conn

    servers = [await asyncio.start_server(serve(h, p), "127.0.0.1", 0, backlog=1024) for h, p in spec["upstreams"]]
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    print("PORTS " + json.dumps([s.sockets[0].getsockname()[1] for s in servers]), flush=True)
    await done.wait()
    os._exit(0)


async def canned_agent(spec: dict) -> None:
    """--agents canned: answer every bulk POST with the bytes the real agent answered for broker b0000
    (captured from a one-JVM fleet at start), the request's broker name put in; keep-alive."""
    import re

    template = Path(spec["template"]).read_bytes()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: " + spec["content_type"].encode() + b"\r\nContent-Length: %d\r\n\r\n"
    length = re.compile(rb"(?i)\r\ncontent-length:\s*(\d+)")
    broker = re.compile(rb"brokerName=(b\d+)")

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                m = length.search(request)
                body = await reader.readexactly(int(m.group(1))) if m else b""
                name = broker.search(body)
                out = template.replace(b"b0000", name.group(1)) if name else b"[]"
                writer.write(head % len(out) + out)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(conn, "127.0.0.1", 0, backlog=1024)
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    print("PORTS " + json.dumps([server.sockets[0].getsockname()[1]]), flush=True)
    await done.wait()
    os._exit(0)


def capture_template(work: Path, queues: int) -> tuple[Path, str]:
    """The real agent's answer to one target scrape of broker b0000 (a one-JVM fleet, then stopped)."""
    import httpx

    (work / "capture").mkdir(parents=True, exist_ok=True)
    fleet = JVMs(work / "capture", 1, 1, queues).start()
    try:
        r = httpx.post(fleet.urls[0], content=json.dumps(scrape_reads(broker_name(0))),
                       headers={"Content-Type": "application/json"}, timeout=30)
        r.raise_for_status()
    finally:
        fleet.stop()
    path = work / "canned-b0000.json"
    path.write_bytes(r.content)
    return path, r.headers.get("content-type", "text/plain;charset=utf-8")


def spawn_child(work: Path, flag: str, spec: dict, label: str) -> tuple[subprocess.Popen, list[int]]:
    """A `--_proxy`/`--_agent` child of this script; returns it and the ports it printed."""
    path = work / f"{label}.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), flag, str(path)], stdout=subprocess.PIPE,
                            stderr=open(work / f"{label}.log", "wb"), text=True, cwd=ROOT)
    line = proc.stdout.readline()
    if not line.startswith("PORTS "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"{label} did not start (exit {proc.poll()}); see {work / f'{label}.log'}")
    return proc, json.loads(line[6:])


def stop_procs(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


class Canned:
    """The canned agent process (same interface as bench_collector.JVMs: start, urls, pids, stop)."""

    def __init__(self, work: Path, template: Path, content_type: str) -> None:
        self.work, self.template, self.content_type = work, template, content_type
        self.procs: list[subprocess.Popen] = []
        self.urls: list[str] = []

    def start(self) -> "Canned":
        proc, ports = spawn_child(self.work, "--_agent", {"template": str(self.template), "content_type": self.content_type},
                                  "canned-agent")
        self.procs, self.urls = [proc], [f"http://127.0.0.1:{ports[0]}/jolokia/"]
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        stop_procs(self.procs)


class Proxies:
    """ceil(n / per_proxy) proxy processes; targets [k*per_proxy, (k+1)*per_proxy) go through process k,
    to the TcpProxy in it that forwards to their agent JVM."""

    def __init__(self, work: Path, kind: str, jvm_urls: list[str], n: int, per_proxy: int, delay_s: float) -> None:
        self.work, self.kind, self.jvm_urls, self.n, self.per_proxy, self.delay_s = work, kind, jvm_urls, n, per_proxy, delay_s
        self.procs: list[subprocess.Popen] = []
        self.ports: list[list[int]] = []

    def start(self) -> "Proxies":
        ups = [[urlsplit(u).hostname, urlsplit(u).port] for u in self.jvm_urls]
        for k in range(math.ceil(self.n / self.per_proxy)):
            proc, ports = spawn_child(self.work, "--_proxy", {"kind": self.kind, "upstreams": ups, "delay_s": self.delay_s},
                                      f"proxy-{k}")
            self.procs.append(proc)
            self.ports.append(ports)
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def url(self, i: int, jvm_url: str) -> str:
        port = self.ports[i // self.per_proxy][self.jvm_urls.index(jvm_url)]
        u = urlsplit(jvm_url)
        return urlunsplit((u.scheme, f"127.0.0.1:{port}", u.path, u.query, u.fragment))

    def stop(self) -> None:
        stop_procs(self.procs)


# --------------------------------------------------------------------------------------------------
# child: the collector, pinned
# --------------------------------------------------------------------------------------------------


def phase_step(spec: dict) -> dict:
    from collectors.base import parse_ts
    from collectors.schedule import period
    from collectors.scraper import Collector
    from lakehouse.store import Lakehouse
    from settings import config_from_dict

    interval, warmup, steady = spec["interval"], spec["warmup"], spec["steady"]
    jvm_pids, proxy_pids = spec["jvm_pids"], spec["proxy_pids"]
    cfg = config_from_dict({
        "lakehouse": spec["lakehouse"],
        "scrape_interval": interval,
        "targets": [{"name": t["name"], "kind": "activemq", "url": t["url"], "broker_name": t["broker"], "group": "bench"}
                    for t in spec["targets"]],
    })
    win: dict = {}
    lags: list[float] = []

    with Sampler() as smp:
        col = Collector(cfg)
        # instrumentation only: when each bronze commit ran and its thread's CPU (flush_periodically
        # looks col.flush up when the loop starts, and runs it in a worker thread)
        flushes: list[tuple[float, float, float]] = []
        commit = col.flush

        def timed_flush() -> int:
            t, c = time.time(), time.thread_time()
            try:
                return commit()
            finally:
                flushes.append((t, time.time(), time.thread_time() - c))

        col.flush = timed_flush
        # and every garbage collection of the generation-2 kind (a full pass over all objects, the loop stops)
        import gc

        gcs: list[tuple[float, float]] = []
        gc_start: list[float] = []

        def on_gc(phase: str, info: dict) -> None:
            if info.get("generation") != 2:
                return
            if phase == "start":
                gc_start[:] = [time.time()]
            elif gc_start:
                gcs.append((gc_start[0], time.time()))

        gc.callbacks.append(on_gc)

        def begin() -> None:
            win["a"] = mark(jvm_pids, proxy_pids)

        def end() -> None:
            win["b"] = mark(jvm_pids, proxy_pids)
            win["rss_peak"] = smp.peak
            win["gc_objects"] = len(gc.get_objects())  # after the window: what a full GC walks
            asyncio.get_running_loop().call_later(GRACE_S, col.stop)

        def first(env: dict) -> None:
            if "first" in win:
                return
            win["first"] = t0 = parse_ts(env["ts"]).timestamp()  # the first scrape's send time
            win["rss_first"] = rss_bytes()
            loop = asyncio.get_running_loop()
            loop.call_later(max(0.0, t0 + warmup - time.time()), begin)
            loop.call_later(max(0.0, t0 + warmup + steady - time.time()), end)

        col.on_observation = first

        async def lag_probe() -> None:
            while True:
                t = time.perf_counter()
                await asyncio.sleep(0.05)
                if "a" in win and "b" not in win:
                    lags.append((time.perf_counter() - t - 0.05) * 1000)

        async def run() -> None:
            win["run"] = time.time()
            loop = asyncio.get_running_loop()
            loop.call_later(warmup + steady + 600, col.stop)  # safety net
            probe = asyncio.create_task(lag_probe())
            await col.run()
            probe.cancel()

        asyncio.run(run())
    if "b" not in win:
        raise RuntimeError("the measured window never closed (no scrape landed?)")
    a, b = win["a"], win["b"]
    wall = b["t"] - a["t"]
    cols = ("ts", "elapsed_ms", "error", "request_json", "response_json")
    tbl = Lakehouse(spec["lakehouse"]).read("bronze_jolokia", columns=list(cols))
    done = errors = read_errors = 0
    elapsed: list[float] = []
    spans: list[tuple[float, float]] = []
    error_sample = None
    for ts, ms, err, req, body in zip(*(tbl.column(c).to_pylist() for c in cols)):
        if not a["t"] <= ts.timestamp() < b["t"]:
            continue
        done += 1
        elapsed.append(ms)
        spans.append((ts.timestamp(), ts.timestamp() + ms / 1000))
        if err:
            errors += 1
            error_sample = error_sample or err[:300]
        elif body and not all(item_ok(i, r) for i, r in zip(json.loads(body), json.loads(req))):
            read_errors += 1
            error_sample = error_sample or body[:300]
    n = len(spec["targets"])
    core, rig = {spec["core"]}, set(spec["rig_cores"])
    # the slowest 1 % of scrapes: how many overlapped a bronze commit, against the share of the window commits took
    fl = [f for f in flushes if f[1] > a["t"] and f[0] < b["t"]]
    p99 = pct(elapsed, 99)
    tail = [sp for sp, ms in zip(spans, elapsed) if p99 is not None and ms >= p99]
    in_flush = sum(1 for s0, s1 in tail if any(f0 < s1 and s0 < f1 for f0, f1, _ in fl))
    # a full GC stops the loop, then the loop works off what piled up: count the tail scrapes that ran
    # from a GC's start to 1 s after its end, against the share of the window those spans cover
    g2 = [g for g in gcs if g[1] > a["t"] and g[0] < b["t"]]
    after = [(g0, g1 + 1.0) for g0, g1 in g2]
    in_gc = sum(1 for s0, s1 in tail if any(g0 < s1 and s0 < g1 for g0, g1 in after))
    covered, edge = 0.0, a["t"]
    for g0, g1 in sorted(after):
        g0, g1 = max(g0, edge), min(g1, b["t"])
        if g1 > g0:
            covered, edge = covered + g1 - g0, g1
    return {
        "n": n,
        "t_a": a["t"],
        "t_b": b["t"],
        "wall": wall,
        "asked": n * wall / period(interval),
        "done": done,
        "errors": errors,
        "read_errors": read_errors,
        "error_sample": error_sample,
        "p50": pct(elapsed, 50),
        "p95": pct(elapsed, 95),
        "p99": pct(elapsed, 99),
        "max": max(elapsed) if elapsed else None,
        "cpu": (b["cpu"] - a["cpu"]) / wall,
        "jvm_cpu": (b["jvm"] - a["jvm"]) / wall,
        "proxy_cpu": (b["proxy"] - a["proxy"]) / wall,
        "core_busy": busy_between(a["cores"], b["cores"], core),
        "rig_busy": busy_between(a["cores"], b["cores"], rig),
        # CPU of everything else on the machine (other users' work, the kernel's softirqs, this bench's parent)
        "foreign": max(0.0, busy_between(a["cores"], b["cores"], core | rig) * len(core | rig)
                       - (b["cpu"] - a["cpu"] + b["jvm"] - a["jvm"] + b["proxy"] - a["proxy"]) / wall),
        "lag_p99": pct(lags, 99),
        "flushes": len(fl),
        "flush_ms_p50": pct([1000 * (f1 - f0) for f0, f1, _ in fl], 50),
        "flush_ms_max": max((1000 * (f1 - f0) for f0, f1, _ in fl), default=None),
        "flush_cpu": sum(c for _, _, c in fl) / wall,
        "flush_share": sum(min(f1, b["t"]) - max(f0, a["t"]) for f0, f1, _ in fl) / wall,
        "tail_in_flush": in_flush / len(tail) if tail else None,
        "gc2": len(g2),
        "gc2_ms_max": max((1000 * (g1 - g0) for g0, g1 in g2), default=None),
        "gc2_share": sum(g1 - g0 for g0, g1 in g2) / wall,
        "gc2_after_share": covered / wall,
        "gc_objects": win["gc_objects"],
        "tail_in_gc2": in_gc / len(tail) if tail else None,
        "startup_s": win["first"] - win["run"],
        "rss_first": win["rss_first"],
        "rss_peak": win["rss_peak"],
        "affinity": sorted(os.sched_getaffinity(0)),
        "loadavg": os.getloadavg(),
    }


# --------------------------------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------------------------------

_children: list[subprocess.Popen] = []


def say(t0: float, msg: str) -> None:
    print(f"[{time.monotonic() - t0:6.1f}s {datetime.now(timezone.utc).strftime('%H:%M:%S')}] {msg}", flush=True)


PER_PROXY = {"tcpproxy": 400, "asyncio": 4000}  # targets per proxy process (TcpProxy: select() takes fds < 1024)


class Fleets:
    """The agents of a step: `jvm` = a fresh bench_collector fleet hosting exactly N brokers on
    `--jvms` JVMs, JIT-warmed (kept while N stays the same), or `canned` = the canned agent."""

    def __init__(self, work: Path, a: argparse.Namespace, t0: float) -> None:
        self.work, self.a, self.t0 = work, a, t0
        self.current: tuple[str, int] | None = None
        self.agents: JVMs | Canned | None = None
        self.template: tuple[Path, str] | None = None
        self.started = 0

    def get(self, kind: str, n: int) -> JVMs | Canned:
        if self.current == (kind, n) or (kind == "canned" and self.current and self.current[0] == "canned"):
            return self.agents
        self.stop()
        if kind == "canned":
            if self.template is None:
                say(self.t0, "capturing the real agent's answer for the canned agent (a one-JVM fleet) ...")
                self.template = capture_template(self.work, self.a.queues)
            self.agents = Canned(self.work, *self.template).start()
        else:
            self.started += 1
            d = self.work / f"fleet-{self.started}-{n}"
            d.mkdir()
            say(self.t0, f"starting {self.a.jvms} agent JVMs hosting {n:,} brokers, JIT warm-up ...")
            self.agents = JVMs(d, self.a.jvms, n, self.a.queues).start()
            run_child(d, "collector", {"targets": target_specs(self.agents.urls, 20), "interval": 0.001, "duration": 5.0,
                                       "jvm_pids": self.agents.pids, "lakehouse": str(d / "lh-warm")}, "warm", 180)
        self.current = (kind, n)
        return self.agents

    def stop(self) -> None:
        if self.agents:
            self.agents.stop()
        self.agents = self.current = None


class Probe:
    """Bare round trips through the rig, from a thread of this process (on the rig's core): every
    1/rate s a random target's scrape (the same bulk POST) on a new connection (until P16's fix the
    collector made one per scrape at a 10 s interval; it now keeps its connection, so the probe also
    counts a connect through the proxy, which is not delayed). Its p99 is what the rig itself (proxy,
    delay, agent, the rig core's scheduling) adds to a scrape."""

    def __init__(self, targets: list[dict], rate: float) -> None:
        self.targets, self.rate = targets, rate
        self.samples: list[tuple[float, float]] = []
        self.errors = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Probe":
        if self.rate > 0:
            self._t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._t.is_alive():
            self._t.join()

    def _run(self) -> None:
        import http.client
        import random

        bodies: dict[str, bytes] = {}
        while not self._stop.wait(1 / self.rate):
            t = random.choice(self.targets)
            body = bodies.get(t["broker"]) or bodies.setdefault(t["broker"], json.dumps(scrape_reads(t["broker"])).encode())
            u = urlsplit(t["url"])
            sent, c0 = time.time(), time.perf_counter()
            try:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
                conn.request("POST", u.path, body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                conn.close()
                if resp.status != 200:
                    raise OSError(f"HTTP {resp.status}")
            except OSError:
                self.errors += 1
                continue
            self.samples.append((sent, (time.perf_counter() - c0) * 1000))


def run_step(work: Path, agents: JVMs | Canned, kind: str, n: int, delay_ms: float, a: argparse.Namespace,
             rig: set[int]) -> dict:
    label = f"{kind}-{delay_ms:g}ms-{n}"
    proxies = Proxies(work, kind, agents.urls, n, a.per_proxy or PER_PROXY[kind], delay_ms / 1000).start()
    try:
        targets = target_specs(agents.urls, n)
        for i, t in enumerate(targets):
            t["url"] = proxies.url(i, t["url"])
        spec = {"targets": targets, "interval": a.interval, "warmup": a.warmup, "steady": a.steady,
                "jvm_pids": agents.pids, "proxy_pids": proxies.pids, "core": a.core, "rig_cores": sorted(rig),
                "lakehouse": str(work / f"lh-{label}")}
        spec_path = work / f"spec-{label}.json"
        spec_path.write_text(json.dumps(spec))
        probe = Probe(targets, a.probe_rate).start()
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--_phase", "step", "--_spec", str(spec_path)],
                                stdout=subprocess.PIPE, stderr=open(work / f"child-{label}.log", "wb"), text=True, cwd=ROOT)
        _children.append(proc)
        try:
            out, _ = proc.communicate(timeout=a.warmup + a.steady + 900)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"step {label} did not finish; see {work / f'child-{label}.log'}")
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
            _children.remove(proc)
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"step {label} failed (exit {proc.returncode}):\n{(work / f'child-{label}.log').read_text()[-3000:]}")
        r = json.loads(lines[-1][7:])
        probe.stop()
        lat = [ms for ts, ms in probe.samples if r["t_a"] <= ts < r["t_b"]]
        r |= {"probe_n": len(lat), "probe_p50": pct(lat, 50), "probe_p99": pct(lat, 99), "probe_errors": probe.errors}
    finally:
        probe.stop()
        proxies.stop()
    r["delay_ms"] = delay_ms
    r["proxy"] = kind
    r["proxy_procs"] = len(proxies.procs)
    r["verdict"], r["why"] = verdict(r, a)
    import shutil

    shutil.rmtree(work / f"lh-{label}", ignore_errors=True)
    return r


def verdict(r: dict, a: argparse.Namespace) -> tuple[str, str]:
    """("pass" | "FAIL", why), and when it failed, whose limit it was."""
    fails = []
    if r["done"] < 0.99 * r["asked"]:
        fails.append(f"cadence {100 * r['done'] / r['asked']:.1f}%")
    if r["cpu"] > a.cpu_limit:
        fails.append(f"CPU {r['cpu']:.2f}")
    if r["p99"] is None or r["p99"] >= a.p99_ms:
        fails.append(f"p99 {r['p99'] or 0:.0f} ms")
    if not fails:
        return "pass", ""
    probe = r.get("probe_p99")
    if r["rig_busy"] >= a.rig_busy and r["core_busy"] < a.rig_busy:
        who = "rig: its core saturated, the collector's not"
    elif r["core_busy"] >= a.rig_busy and r["rig_busy"] < a.rig_busy:
        who = "collector: its core saturated"
    elif r["core_busy"] >= a.rig_busy:
        who = "both cores saturated"
    elif probe is None or probe >= a.p99_ms or probe >= r["p99"] / 2:
        who = f"rig: no core saturated, but a bare round trip through it takes p99 {fmt(probe, 0)} ms"
    else:
        who = (f"collector: no core saturated and a bare round trip through the rig takes p99 {probe:.0f} ms; "
               f"the rest is queueing inside the collector process (its loop lag p99 {fmt(r['lag_p99'], 0)} ms)")
    tail, near = r.get("tail_in_gc2"), r.get("gc2_after_share") or 0.0
    if who.startswith("collector") and tail is not None and tail >= 0.5 and tail >= 2 * near:
        who += (f"; {100 * tail:.0f}% of the slowest 1% of scrapes ran within 1 s of a full GC pause (max "
                f"{fmt(r['gc2_ms_max'], 0)} ms), where {100 * near:.0f}% of the window is")
    if r["foreign"] >= a.disturbed:
        who += f"; disturbed: {r['foreign']:.2f} CPU s/s of other work"
    return "FAIL", ", ".join(fails) + f" ({who})"


def search(test, a: argparse.Namespace, hint: tuple[int, int | None] | None) -> tuple[int, int | None]:
    """The largest passing count, to multiples of 250 (50 up to 1000): from `hint` (the previous delay's bracket) or
    --start, doubling until a fail (at most --max-targets), then --bisect bisection steps. Returns the
    bracket (largest pass or 0, smallest fail or None)."""
    lo, hi = 0, None
    n = (hint[0] or hint[1] or a.start) if hint else a.start
    if test(n):
        lo = n
        nxt = hint[1] if hint and hint[1] and hint[1] > n else n * 2
        while nxt <= a.max_targets:
            if not test(nxt):
                hi = nxt
                break
            lo, nxt = nxt, nxt * 2
    else:
        hi = n
    for _ in range(a.bisect):
        if hi is None:
            break
        grain = 250 if hi > 1000 else 50
        mid = int(round((lo + hi) / 2 / grain)) * grain
        if mid <= lo or mid >= hi:
            break
        if test(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def fmt(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def row_line(r: dict) -> str:
    return (f"{r['agents']}/{r['proxy']} {r['delay_ms']:g} ms  N={r['n']:<6,} {r['done'] / r['wall']:7.1f}/{r['asked'] / r['wall']:7.1f} "
            f"scrapes/s ({100 * r['done'] / r['asked']:5.1f}%)  p50/95/99 {fmt(r['p50'])}/{fmt(r['p95'])}/{fmt(r['p99'])} ms  "
            f"errors {r['errors'] + r['read_errors']}  rig p99 {fmt(r.get('probe_p99'))} ms  CPU {r['cpu']:.2f}  lag99 {fmt(r['lag_p99'])} ms  "
            f"flush {fmt(r['flush_ms_p50'], 0)}/{fmt(r['flush_ms_max'], 0)} ms {r['flush_cpu']:.2f} CPU, in {100 * r['flush_share']:.0f}% of the "
            f"window and {fmt(100 * r['tail_in_flush'] if r['tail_in_flush'] is not None else None, 0)}% of the p99 tail  "
            f"gen-2 GC {r['gc2']}x max {fmt(r['gc2_ms_max'], 0)} ms ({100 * r['gc2_share']:.0f}% of the window); "
            f"{fmt(100 * r['tail_in_gc2'] if r['tail_in_gc2'] is not None else None, 0)}% of the p99 tail ran within 1 s "
            f"of one ({100 * r['gc2_after_share']:.0f}% of the window is), {r['gc_objects'] / 1e6:.1f} M objects tracked  "
            f"RSS {r['rss_peak'] / 2**20:.0f} MiB  agents {r['jvm_cpu']:.2f} proxies {r['proxy_cpu']:.2f}  "
            f"busy core/rig {r['core_busy']:.2f}/{r['rig_busy']:.2f}  other {r['foreign']:.2f}  load {r['loadavg'][0]:.1f}  "
            f"-> {r['verdict']}{' ' + r['why'] if r['why'] else ''}")


def gc_cell(r: dict) -> str:
    """'tail share near a gen-2 GC / window share near one', in %."""
    if r["tail_in_gc2"] is None:
        return "-"
    return f"{100 * r['tail_in_gc2']:.0f}/{100 * r['gc2_after_share']:.0f}"


def render(results: dict[tuple[str, str, float], dict[int, dict]], a: argparse.Namespace) -> str:
    cols = (f"{'agents/proxy':<16} {'delay':>5} {'N':>6} {'asked/s':>7} {'done/s':>7} {'done%':>6} {'p50 ms':>7} {'p95 ms':>7} "
            f"{'p99 ms':>7} {'max ms':>7} {'errors':>6} {'rig p99':>7} {'CPU s/s':>7} {'lag99':>6} {'gc2 max':>7} {'tail@gc':>7} {'RSS MiB':>7} {'agents':>6} {'proxy':>6} "
            f"{'core':>5} {'rig':>5} {'other':>5}  verdict")
    lines = [cols, "-" * len(cols)]
    for (agents, kind, delay), steps in results.items():
        for n in sorted(steps):
            r = steps[n]
            lines.append(
                f"{agents + '/' + kind:<16} {delay:>3g}ms {n:>6,} {r['asked'] / r['wall']:>7.1f} {r['done'] / r['wall']:>7.1f} "
                f"{100 * r['done'] / r['asked']:>6.1f} {fmt(r['p50']):>7} {fmt(r['p95']):>7} {fmt(r['p99']):>7} "
                f"{fmt(r['max'], 0):>7} {r['errors'] + r['read_errors']:>6} {fmt(r.get('probe_p99')):>7} {r['cpu']:>7.2f} {fmt(r['lag_p99']):>6} "
                f"{fmt(r['gc2_ms_max'], 0):>7} {gc_cell(r):>7} "
                f"{r['rss_peak'] / 2**20:>7.0f} {r['jvm_cpu']:>6.2f} {r['proxy_cpu']:>6.2f} {r['core_busy']:>5.2f} "
                f"{r['rig_busy']:>5.2f} {r['foreign']:>5.2f}  {r['verdict']}{' ' + r['why'] if r['why'] else ''}")
    lines.append("")
    for (agents, kind, delay), steps in results.items():
        passed = [n for n, r in steps.items() if r["verdict"] == "pass"]
        best = max(passed, default=None)
        above = sorted(n for n, r in steps.items() if r["verdict"] != "pass" and (best is None or n > best))
        lines.append(
            f"{agents}/{kind}, {delay:g} ms each way: largest passing N = {best if best is not None else 'none'}"
            + (f"; smallest failing N = {above[0]}: {steps[above[0]]['why']}" if above
               else f" (no failure up to --max-targets {a.max_targets})"))
        if best is not None and steps[best]["done"]:
            r = steps[best]
            ms = 1000 * r["cpu"] * r["wall"] / r["done"]
            lines.append(f"  at N={best}: collector {ms:.2f} CPU ms per scrape; its whole core at this cost would be "
                         f"~{period_of(a.interval) / (ms / 1000):,.0f} targets (CPU extrapolation only, not a measurement)")
    return "\n".join(lines)


def period_of(interval: float) -> float:
    from collectors.schedule import period

    return period(interval)


def wait_for_quiet(t0: float, a: argparse.Namespace, ours: list[int]) -> None:
    """Before a step: wait (up to --quiet-wait s) until the machine's CPU, less our agents' own, stays
    under --disturbed s/s over 3 s (other users' work on this shared machine would be measured too)."""
    deadline, said = time.monotonic() + a.quiet_wait, False
    while True:
        c0, p0, t = cores_busy(), procs_cpu(ours), time.monotonic()
        time.sleep(3)
        c1, p1 = cores_busy(), procs_cpu(ours)
        cores = set(c0)
        busy = busy_between(c0, c1, cores) * len(cores) - (p1 - p0) / (time.monotonic() - t)
        if busy < a.disturbed or time.monotonic() > deadline:
            if said:
                say(t0, f"  quiet enough ({busy:.2f} CPU s/s of other work)" if busy < a.disturbed
                    else f"  still {busy:.2f} CPU s/s of other work after {a.quiet_wait:g} s: measuring anyway")
            return
        if not said:
            say(t0, f"  waiting for the machine to quieten ({busy:.2f} CPU s/s of other work; load "
                    f"{os.getloadavg()[0]:.1f}) ...")
            said = True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default="canned,jvm",
                    help="agent rigs, comma-separated: canned (the real agent's answer replayed by one asyncio process), "
                         "jvm (bench_collector's JVM fleet) (default canned,jvm)")
    ap.add_argument("--proxies", default="asyncio",
                    help="delaying proxies, comma-separated: asyncio (this file's, one event loop), tcpproxy "
                         "(infra.tcp_proxy.TcpProxy) (default asyncio)")
    ap.add_argument("--delays", default="0,1,10", help="one-way delays added by the proxy, ms, comma-separated (default 0,1,10)")
    ap.add_argument("--interval", type=float, default=10.0, help="scrape interval, s (default 10)")
    ap.add_argument("--start", type=int, default=1000, help="first target count of a search (default 1000)")
    ap.add_argument("--max-targets", type=int, default=16000, help="largest count tried (default 16000)")
    ap.add_argument("--bisect", type=int, default=2, help="bisection steps after the first failing count (default 2)")
    ap.add_argument("--counts", help="explicit counts, comma-separated, instead of the search")
    ap.add_argument("--warmup", type=float, help="seconds after the first scrape before the window (default: one interval)")
    ap.add_argument("--steady", type=float, default=30.0, help="measured window, s (default 30)")
    ap.add_argument("--core", type=int, default=0, help="the collector's core; agents and proxies get the others (default 0)")
    ap.add_argument("--jvms", type=int, default=4, help="agent JVMs of the jvm rig (default 4)")
    ap.add_argument("--queues", type=int, default=4, help="queue MBeans per simulated broker (default 4)")
    ap.add_argument("--per-proxy", type=int, help="targets per proxy process (default: tcpproxy 400, asyncio 4000)")
    ap.add_argument("--probe-rate", type=float, default=10.0,
                    help="bare round trips per second through the rig, from the rig's core (default 10; 0 = none)")
    ap.add_argument("--p99-ms", type=float, default=100.0, help="p99 scrape latency limit, ms (default 100)")
    ap.add_argument("--cpu-limit", type=float, default=1.0, help="collector CPU limit, s/s (default 1.0)")
    ap.add_argument("--rig-busy", type=float, default=0.9,
                    help="busy fraction of a core from which it counts as saturated (default 0.9 = 90%%)")
    ap.add_argument("--disturbed", type=float, default=0.2,
                    help="CPU s/s of other work from which a step is disturbed: waited out before, measured again after (default 0.2)")
    ap.add_argument("--redo", type=int, default=2, help="how many times a disturbed step is measured again (default 2)")
    ap.add_argument("--quiet-wait", type=float, default=600, help="longest wait for quiet before a step, s (default 600)")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    ap.add_argument("--render", type=Path, metavar="JSON", help="print the table of an earlier --json file again; measure nothing")
    ap.add_argument("--_phase", help=argparse.SUPPRESS)
    ap.add_argument("--_spec", help=argparse.SUPPRESS)
    ap.add_argument("--_proxy", help=argparse.SUPPRESS)
    ap.add_argument("--_agent", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._phase:
        spec = json.loads(Path(a._spec).read_text())
        os.sched_setaffinity(0, {spec["core"]})  # before any import that starts threads
        print("RESULT " + json.dumps(phase_step(spec)), flush=True)
        return 0
    if a._proxy:
        proxy_main(a._proxy)
        return 0
    if a._agent:
        import gc

        gc.disable()  # as the asyncio proxy's: the rig's own GC pauses would be counted against the collector
        asyncio.run(canned_agent(json.loads(Path(a._agent).read_text())))
        return 0
    if a.warmup is None:
        a.warmup = a.interval
    if a.render:
        saved = json.loads(a.render.read_text())
        print("\n".join(saved["header"]))
        results = {}
        for key, steps in saved["results"].items():
            rig_name, delay = key.rsplit(" ", 1)
            agents, kind = rig_name.split("/")
            results[(agents, kind, float(delay))] = {int(n): r for n, r in steps.items()}
            for r in results[(agents, kind, float(delay))].values():
                r["verdict"], r["why"] = verdict(r, a)
        print()
        print(render(results, a))
        return 0
    rig = set(os.sched_getaffinity(0)) - {a.core}
    if not rig or a.core not in os.sched_getaffinity(0):
        print(f"need core {a.core} and at least one other core (have {sorted(os.sched_getaffinity(0))})", file=sys.stderr)
        return 2
    os.sched_setaffinity(0, rig)  # this process, the agents and the proxies it starts: off the collector's core
    delays = [float(x) for x in a.delays.split(",")]
    counts = [int(x) for x in a.counts.split(",")] if a.counts else None
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="bench-tpc-"))
    header = [
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"machine: {machine()}",
        f"versions: {versions()}",
        f"command: python bench/bench_targets_per_core.py {' '.join(sys.argv[1:])}".strip(),
        f"reads: {describe_reads()}",
        f"rig on cores {sorted(rig)}, collector on core {a.core}: agents {a.agents} (jvm: {a.jvms} JVMs, Jolokia 2.6.0 JVM "
        f"agent, hosting exactly N ActiveMQ-shaped brokers with {a.queues} queues each), proxies {a.proxies}",
        f"steps: interval {a.interval:g} s, warm-up {a.warmup:g} s, window {a.steady:g} s; pass = done >= 99% of asked, "
        f"CPU <= {a.cpu_limit:g} s/s, p99 < {a.p99_ms:g} ms",
    ]
    for line in header:
        print(line, flush=True)
    fleets = Fleets(work, a, t0)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    results: dict[tuple[str, str, float], dict[int, dict]] = {}
    failed = False
    try:
        for agents in a.agents.split(","):
            for kind in a.proxies.split(","):
                hint = None
                for delay in delays:
                    steps: dict[int, dict] = {}
                    results[(agents, kind, delay)] = steps

                    def test(n: int, agents=agents, kind=kind, delay=delay, steps=steps) -> bool:
                        if n in steps:
                            return steps[n]["verdict"] == "pass"
                        fleet = fleets.get(agents, n)
                        for attempt in range(1 + a.redo):
                            wait_for_quiet(t0, a, fleet.pids)
                            say(t0, f"{agents}/{kind} {delay:g} ms, N={n:,}: collector on core {a.core} "
                                    f"({a.warmup:g} s warm-up + {a.steady:g} s window) ...")
                            r = run_step(work, fleet, kind, n, delay, a, rig)
                            r["agents"], r["attempt"] = agents, attempt + 1
                            say(t0, row_line(r))
                            if r.get("error_sample"):
                                say(t0, f"  first error: {r['error_sample'][:200]}")
                            if r["foreign"] < a.disturbed:
                                break
                            say(t0, f"  disturbed ({r['foreign']:.2f} CPU s/s of other work in the window): measuring again")
                        steps[n] = r
                        return r["verdict"] == "pass"

                    if counts:
                        for n in counts:
                            test(n)
                    else:
                        hint = search(test, a, hint)
    except KeyboardInterrupt:
        print("interrupted; stopping what was started", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - print what was measured before the failure
        import traceback

        traceback.print_exc()
        failed = True
    finally:
        clean_up(_children, fleets, work, a.keep)
    print()
    print(render(results, a))
    print(f"\ntotal wall time {time.monotonic() - t0:.0f} s; load average at the end "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if a.json:
        a.json.write_text(json.dumps({"header": header, "results": {f"{g}/{k} {d:g}": s for (g, k, d), s in results.items()}},
                                     indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
