"""Collector benchmark (issue P2): brokerscope's `Collector` vs the PyPI `jolokia` client, side by
side in one run, over N = 10, 100, 1000 Jolokia targets on 127.0.0.1.

    python bench/bench_collector.py [--quick] [--jvms 4] [--queues 4] [--json out.json]

Targets. `--jvms` JVMs (default 4) each run the lab's Jolokia agent (the official 2.6.0 JVM agent,
read-only, configured by infra/jvm_agents.py as for tests/servers.py::agent_jvm; 4 HTTP threads) in a
JVM whose main class
registers ActiveMQ-Classic-shaped MBeans per target: the broker MBean
`org.apache.activemq:type=Broker,brokerName=b0042`, its Health and PersistenceAdapter services and
`--queues` queues, with the attributes the ActiveMQ pack reads (no network bridges: that wildcard
matches nothing, as on a standalone broker). Counters change on every read. They are not real
brokers (no messaging behind them): the agent does the JMX lookups and JSON work of a real scrape.
Target i is a distinct config entry (`name: t0042`, `broker_name: b0042`) on JVM i % jvms: targets
share JVMs.

Per N, four phases, each in a fresh child process (so CPU and RSS belong to that phase only):

  bs-paced  the real `Collector` (config_from_dict, bronze writes to a temp lakehouse every 2 s)
            at an interval that suits N (10 → 1 s, 100 → 1 s, 1000 → 10 s, the issue's cadence):
            CPU and RSS at the intended load.
  bs-max    the same `Collector` with scrape_interval=1ms: every target scrapes back to back (the
            loop skips missed ticks) = the collector's read throughput. At N=1000 the interval is
            1.5 x 1000 / (bs-max scrapes/s at N=100) instead (see `max_interval`).
  pypi-ser  PyPI `jolokia==0.4.0` as a typical poller: one `JolokiaClient` per target, targets one
            after another in one thread, as fast as it can.
  pypi-pool the same calls from `--pool` threads (default 64, each looping over its share of the
            targets), as fast as it can.

The Collector's measured window starts when its first scrape is sent and lasts the phase's
seconds, then `Collector.stop()`; its start-up (building one httpx client per target) is reported
separately. Throughput counts scrapes completed inside the window; CPU is this process's
user+system time (all threads, incl. the bronze writer) over the window, from getrusage;
the JVMs' CPU over the same window comes from /proc/<pid>/stat; RSS is the peak (psutil).

The same MBean reads per target in every phase: whatever the Collector sends for an ActiveMQ
target (`scrape_reads()`: collectors.base.scrape_requests(pack, broker), i.e. the pack's
requests plus its destination read; printed in the header, since the pack is still growing):
  brokerscope: one bulk POST with all of them (ignoreErrors where the pack sets it).
  PyPI:        the client's idiom, `get_attribute(mbean=..., attribute=...)` once per read = one
               POST per read; for an attribute list the client itself sends a bulk of one
               sub-request per attribute, and it has no way to pass ignoreErrors.
A "read" is one of those MBean reads, counted when it succeeded: status 200 in every answer item
it comprises, or 404 for a wildcard that matches nothing (same rule for both clients). Latency is
per target scrape (all its reads): brokerscope's from bronze `elapsed_ms`, PyPI's around its calls.

Everything started here (JVMs by PID, child processes) is stopped on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.machine import machine_line  # noqa: E402



def scrape_reads(broker: str) -> list[dict]:
    """The Jolokia reads the Collector sends for one ActiveMQ target (what scraper.py sends; the
    pack is work in progress, so this follows it rather than pinning a list)."""
    from collectors.packs import pack_for

    pack = pack_for("activemq")
    try:
        from collectors.base import scrape_requests
    except ImportError:  # older tree: the pack's requests are the whole scrape
        return pack.requests(broker)
    return scrape_requests(pack, broker)


def item_ok(item: object, request: dict | None = None) -> bool:
    """A read succeeded: status 200, or 404 for a wildcard that matches nothing (what a real
    broker without, e.g., network bridges answers). Same rule for both clients."""
    if not isinstance(item, dict):
        return False
    if item.get("status") == 200:
        return True
    req = request or item.get("request") or {}
    return item.get("status") == 404 and "*" in str(req.get("mbean", ""))


def describe_reads() -> str:
    reads = scrape_reads("bNNNN")
    parts = []
    for r in reads:
        a = r.get("attribute")
        n = len(a) if isinstance(a, list) else 1
        parts.append(f"{r['mbean'].split(':', 1)[1]} ({n} attr)")
    return f"{len(reads)} reads per target scrape: " + "; ".join(parts)

# --------------------------------------------------------------------------------------------------
# The JVM side: ActiveMQ-shaped MBeans behind the real agent
# --------------------------------------------------------------------------------------------------

BENCH_MAIN_JAVA = r"""
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.*;

// Hosts ActiveMQ-Classic-shaped MBeans for brokerscope's collector benchmark: per broker the broker
// MBean, Health and PersistenceAdapter services, and queues. args: <queues per broker> <brokerName>...
public class BenchBrokers {
    public static void main(String[] args) throws Exception {
        MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
        int queues = Integer.parseInt(args[0]);
        String d = "org.apache.activemq:type=Broker,brokerName=";
        for (int i = 1; i < args.length; i++) {
            String b = args[i];
            mbs.registerMBean(new Fake(BROKER, b), new ObjectName(d + b));
            mbs.registerMBean(new Fake(HEALTH, b), new ObjectName(d + b + ",service=Health"));
            mbs.registerMBean(new Fake(STORE, b), new ObjectName(
                d + b + ",service=PersistenceAdapter,instanceName=KahaDBPersistenceAdapter[/data/" + b + "/kahadb]"));
            for (int q = 0; q < queues; q++) {
                String dest = q == 0 ? "ActiveMQ.DLQ" : "orders.q" + q;
                mbs.registerMBean(new Fake(QUEUE, b), new ObjectName(d + b + ",destinationType=Queue,destinationName=" + dest));
            }
        }
        System.err.println("bench-brokers ready: " + (args.length - 1) + " brokers");
        Thread.sleep(Long.MAX_VALUE);
    }

    static final String[] BROKER = {"Slave:java.lang.Boolean", "BrokerId:java.lang.String", "BrokerName:java.lang.String",
        "UptimeMillis:java.lang.Long", "CurrentConnectionsCount:java.lang.Integer", "TotalEnqueueCount:java.lang.Long",
        "TotalDequeueCount:java.lang.Long", "TotalMessageCount:java.lang.Long", "TotalConsumerCount:java.lang.Long",
        "TotalProducerCount:java.lang.Long", "MemoryPercentUsage:java.lang.Integer", "StorePercentUsage:java.lang.Integer",
        "TempPercentUsage:java.lang.Integer"};
    static final String[] HEALTH = {"CurrentStatus:java.lang.String"};
    static final String[] STORE = {"Name:java.lang.String", "Size:java.lang.Long"};
    static final String[] QUEUE = {"QueueSize:java.lang.Long", "ConsumerCount:java.lang.Long", "ProducerCount:java.lang.Long",
        "EnqueueCount:java.lang.Long", "DequeueCount:java.lang.Long", "InFlightCount:java.lang.Long",
        "DispatchCount:java.lang.Long", "ExpiredCount:java.lang.Long", "ForwardCount:java.lang.Long",
        "MemoryPercentUsage:java.lang.Integer", "AverageEnqueueTime:java.lang.Double", "Paused:java.lang.Boolean"};

    static final class Fake implements DynamicMBean {
        final String[] spec; final String name; final long t0 = System.currentTimeMillis();
        final AtomicLong reads = new AtomicLong();
        final MBeanInfo info;
        Fake(String[] spec, String name) {
            this.spec = spec; this.name = name;
            MBeanAttributeInfo[] a = new MBeanAttributeInfo[spec.length];
            for (int i = 0; i < spec.length; i++) {
                String[] p = spec[i].split(":");
                a[i] = new MBeanAttributeInfo(p[0], p[1], p[0], true, false, p[1].equals("java.lang.Boolean"));
            }
            info = new MBeanInfo(Fake.class.getName(), "bench", a, null, null, null);
        }
        public Object getAttribute(String attr) throws AttributeNotFoundException {
            long n = reads.incrementAndGet();
            for (String s : spec) {
                if (!s.startsWith(attr + ":")) continue;
                switch (s.substring(attr.length() + 1)) {
                    case "java.lang.Boolean": return Boolean.FALSE;
                    case "java.lang.Integer": return (int) (n % 7);
                    case "java.lang.Double": return 1.5;
                    case "java.lang.String":
                        switch (attr) {
                            case "BrokerId": return "ID:bench-" + name + "-1700000000000-0:1";
                            case "CurrentStatus": return "Good";
                            case "Name": return "KahaDBPersistenceAdapter[/data/" + name + "/kahadb]";
                            default: return name;
                        }
                    default:
                        if (attr.equals("UptimeMillis")) return System.currentTimeMillis() - t0;
                        return attr.endsWith("Size") ? n % 17 : n * 10;
                }
            }
            throw new AttributeNotFoundException(attr);
        }
        public AttributeList getAttributes(String[] names) {
            AttributeList l = new AttributeList();
            for (String n : names) { try { l.add(new Attribute(n, getAttribute(n))); } catch (Exception e) { } }
            return l;
        }
        public void setAttribute(Attribute a) throws AttributeNotFoundException { throw new AttributeNotFoundException("read-only"); }
        public AttributeList setAttributes(AttributeList l) { return new AttributeList(); }
        public Object invoke(String op, Object[] p, String[] s) throws MBeanException { throw new MBeanException(new UnsupportedOperationException(op)); }
        public MBeanInfo getMBeanInfo() { return info; }
    }
}
"""


class JVMs:
    """`n` agent JVMs hosting the brokers of `n_targets` targets (target i on JVM i % n)."""

    def __init__(self, work: Path, n: int, n_targets: int, queues: int) -> None:
        self.work, self.n, self.n_targets, self.queues = work, n, n_targets, queues
        self.procs: list[subprocess.Popen] = []
        self.urls: list[str] = []

    def start(self) -> "JVMs":
        from infra.jvm_agents import jolokia_jvm_args, wait_for_agent_url

        src = self.work / "BenchBrokers.java"
        src.write_text(BENCH_MAIN_JAVA)
        for j in range(self.n):
            brokers = [broker_name(i) for i in range(j, self.n_targets, self.n)]
            agent_args = jolokia_jvm_args(self.work / f"jvm{j}", threads=4)
            with open(self.work / f"jvm{j}.log", "wb") as log:
                self.procs.append(subprocess.Popen(
                    ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=4",
                     # up to 250 targets share one JVM here; the JDK server keeps only 200 idle
                     # keep-alive connections by default and resets the rest (a real agent has 1 client)
                     "-Dsun.net.httpserver.maxIdleConnections=2000",
                     *agent_args, str(src), str(self.queues), *brokers],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.work,
                ))
        deadline = time.monotonic() + 90
        for j, proc in enumerate(self.procs):
            self.urls.append(wait_for_agent_url(self.work / f"jvm{j}.log", proc.pid, max(1.0, deadline - time.monotonic()),
                                                exited=proc, what=f"bench JVM {j}"))
        # the agent listens on its own thread, maybe before main() registered the MBeans: wait for "ready"
        for j in range(self.n):
            while b"bench-brokers ready" not in (self.work / f"jvm{j}.log").read_bytes():
                if self.procs[j].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JVM {j} did not register its MBeans: {(self.work / f'jvm{j}.log').read_text()[-2000:]}")
                time.sleep(0.05)
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()

    def cpu_seconds(self) -> float:
        return procs_cpu(self.pids)


def procs_cpu(pids: list[int]) -> float:
    """User+system CPU seconds of these processes so far (from /proc)."""
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / tck
        except OSError:
            pass
    return total


def broker_name(i: int) -> str:
    return f"b{i:04d}"


def target_specs(urls: list[str], n: int) -> list[dict]:
    return [{"name": f"t{i:04d}", "url": urls[i % len(urls)], "broker": broker_name(i)} for i in range(n)]


# --------------------------------------------------------------------------------------------------
# Child-process phases
# --------------------------------------------------------------------------------------------------


class Sampler:
    """Peak RSS of this process, sampled every 0.2 s on a daemon thread."""

    def __init__(self) -> None:
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> "Sampler":
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_bytes())


def rss_bytes() -> int:
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)  # all threads of this process
    return r.ru_utime + r.ru_stime


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


class CpuMarks:
    """(epoch seconds, own CPU seconds, JVMs' CPU seconds) every 0.1 s on a daemon thread."""

    def __init__(self, jvm_pids: list[int]) -> None:
        self.pids = jvm_pids
        self.marks: list[tuple[float, float, float]] = [self._mark()]
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.marks.append(self._mark())

    def _mark(self) -> tuple[float, float, float]:
        return time.time(), cpu_self(), procs_cpu(self.pids)

    def stop(self) -> None:
        self._stop.set()
        self._t.join()
        self.marks.append(self._mark())

    def between(self, t_a: float, t_b: float) -> tuple[float, float, float]:
        """(own CPU s, JVMs' CPU s, wall s) from the last mark <= t_a to the first mark >= t_b."""
        a = max((m for m in self.marks if m[0] <= t_a), default=self.marks[0])
        b = min((m for m in self.marks if m[0] >= t_b), default=self.marks[-1])
        return b[1] - a[1], b[2] - a[2], b[0] - a[0]


def phase_collector(spec: dict) -> dict:
    """The real Collector. The measured window starts when the first scrape is sent (after the
    Collector built its clients) and lasts spec["duration"]; then `Collector.stop()`. Start-up
    (Collector.run() until the first scrape) is reported separately."""
    import asyncio

    from collectors.base import parse_ts
    from collectors.scraper import Collector
    from lakehouse.store import Lakehouse
    from settings import config_from_dict

    lh_root = spec["lakehouse"]
    cfg = config_from_dict({
        "lakehouse": lh_root,
        "scrape_interval": spec["interval"],
        "flush_interval": spec.get("flush_interval", 2.0),
        "targets": [
            {"name": t["name"], "kind": "activemq", "url": t["url"], "broker_name": t["broker"], "group": "bench"}
            for t in spec["targets"]
        ],
    })
    lh = Lakehouse(lh_root)
    dur = spec["duration"]
    rss0 = rss_bytes()
    win: dict[str, float] = {}

    with Sampler() as smp:
        col = Collector(cfg, lakehouse=lh)
        marks = CpuMarks(spec["jvm_pids"])

        def first(env: dict) -> None:
            if "start" in win:
                return
            win["start"] = parse_ts(env["ts"]).timestamp()  # the first scrape's send time
            win["rss_start"] = rss_bytes()
            loop = asyncio.get_running_loop()
            loop.call_later(max(0.0, win["start"] + dur - time.time()), stop)

        def stop() -> None:
            win["stop"] = time.time()
            col.stop()

        col.on_observation = first

        async def run() -> None:
            win["run"] = time.time()
            # safety net: a collector that never scrapes still ends
            asyncio.get_running_loop().call_later(dur + 300, col.stop)
            await col.run()

        asyncio.run(run())
        win["end"] = time.time()
        marks.stop()
    if "start" not in win:
        raise RuntimeError("the collector never completed a scrape")
    t_a, t_b = win["start"], win["stop"]
    cpu_win, jvm_win, wall_win = marks.between(t_a, t_b)
    cpu_start, _, _ = marks.between(win["run"], t_a)
    cpu_all, _, wall_all = marks.between(win["run"], win["end"])
    # after the run: what bronze got
    cols = ("ts", "elapsed_ms", "error", "request_json", "response_json")
    tbl = lh.read("bronze_jolokia", columns=list(cols))
    scrapes = reads_ok = errors = subrequests = 0
    elapsed = []
    item_errors: list[str] = []
    reads_sent: list = []
    for ts, ms, err, req, body in zip(*(tbl.column(c).to_pylist() for c in cols)):
        elapsed.append(ms)
        done = ts.timestamp() + (ms or 0) / 1000.0
        if done > t_b:  # in flight when the window closed: latency counted, throughput not
            continue
        scrapes += 1
        reads_sent = json.loads(req)
        subrequests += len(reads_sent)
        errors += 1 if err else 0
        if body:
            for item, sent in zip(json.loads(body), reads_sent):
                if item_ok(item, sent):
                    reads_ok += 1
                else:
                    item_errors.append(str(item)[:300])
    return {
        "scrapes": scrapes,
        "rows_total": tbl.num_rows,
        "errors": errors,
        "error_sample": next((e for e in tbl.column("error").to_pylist() if e), None),
        "read_errors": len(item_errors),
        "read_error_sample": item_errors[0] if item_errors else None,
        "reads_ok": reads_ok,
        "http_posts": scrapes,
        "subrequests": subrequests,
        "reads_per_scrape": len(reads_sent),
        "wall": t_b - t_a,
        "cpu": cpu_win * (t_b - t_a) / wall_win if wall_win else cpu_win,
        "jvm_cpu": jvm_win * (t_b - t_a) / wall_win if wall_win else jvm_win,
        "startup_s": t_a - win["run"],
        "startup_cpu": cpu_start,
        "cpu_all": cpu_all,
        "wall_all": wall_all,
        "rss0": rss0,
        "rss_start": win["rss_start"],
        "rss_peak": smp.peak,
        "p50": pct(elapsed, 50),
        "p99": pct(elapsed, 99),
    }


def pypi_requests(broker: str) -> list[tuple[str, object]]:
    """The same MBean reads as the Collector's scrape, as (mbean, attribute) calls."""
    return [(r["mbean"], r["attribute"]) for r in scrape_reads(broker)]


ERRORS: list[str] = []


def pypi_scrape(client, calls) -> tuple[int, int, int]:
    """One target's reads with the PyPI client; returns (reads ok, POSTs, Jolokia sub-requests)."""
    ok = posts = subs = 0
    for mbean, attribute in calls:
        posts += 1
        subs += len(attribute) if isinstance(attribute, list) else 1
        try:
            resp = client.get_attribute(mbean=mbean, attribute=attribute)
        except Exception as e:  # noqa: BLE001 - refused/reset: the read failed
            ERRORS.append(f"{type(e).__name__}: {e}"[:300])
            continue
        items = resp if isinstance(resp, list) else [resp]
        req = {"mbean": mbean}
        if items and all(item_ok(i, req) for i in items):
            ok += 1
        else:
            ERRORS.append(str(resp)[:300])
    return ok, posts, subs


def phase_pypi(spec: dict) -> dict:
    import jolokia

    targets = spec["targets"]
    clients = [(jolokia.JolokiaClient(t["url"]), pypi_requests(t["broker"])) for t in targets]
    workers = spec.get("workers", 1)
    lat: list[list[float]] = [[] for _ in range(workers)]
    tot = [[0, 0, 0, 0] for _ in range(workers)]  # scrapes, reads ok, posts, subrequests
    rss0 = rss_bytes()

    def loop(w: int, t_end: float) -> None:
        mine = clients[w::workers]
        while True:
            for client, calls in mine:
                if time.perf_counter() >= t_end:
                    return
                t = time.perf_counter()
                ok, posts, subs = pypi_scrape(client, calls)
                lat[w].append((time.perf_counter() - t) * 1000.0)
                acc = tot[w]
                acc[0] += 1
                acc[1] += ok
                acc[2] += posts
                acc[3] += subs

    with Sampler() as smp:
        c0, j0, t0 = cpu_self(), procs_cpu(spec["jvm_pids"]), time.perf_counter()
        t_end = t0 + spec["duration"]
        if workers == 1:
            loop(0, t_end)
        else:
            ths = [threading.Thread(target=loop, args=(w, t_end)) for w in range(workers)]
            for th in ths:
                th.start()
            for th in ths:
                th.join()
        wall, cpu, jvm = time.perf_counter() - t0, cpu_self() - c0, procs_cpu(spec["jvm_pids"]) - j0
    for client, _ in clients:
        client.session.close()
    all_lat = [x for part in lat for x in part]
    scrapes = sum(a[0] for a in tot)
    reads_ok = sum(a[1] for a in tot)
    return {
        "scrapes": scrapes,
        "errors": sum(len(c) for _, c in clients[:1]) * scrapes - reads_ok,
        "reads_per_scrape": len(clients[0][1]) if clients else 0,
        "error_sample": ERRORS[0] if ERRORS else None,
        "reads_ok": reads_ok,
        "http_posts": sum(a[2] for a in tot),
        "subrequests": sum(a[3] for a in tot),
        "wall": wall,
        "cpu": cpu,
        "jvm_cpu": jvm,
        "rss0": rss0,
        "rss_peak": smp.peak,
        "p50": pct(all_lat, 50),
        "p99": pct(all_lat, 99),
    }


def child_main(phase: str, spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    if phase == "collector":
        out = phase_collector(spec)
    else:
        out = phase_pypi(spec)
    print("RESULT " + json.dumps(out), flush=True)


# --------------------------------------------------------------------------------------------------
# Parent: orchestrate, print
# --------------------------------------------------------------------------------------------------

_children: list[subprocess.Popen] = []


def clean_up(children: list[subprocess.Popen], fleet, work: str, keep: bool) -> None:
    """Kill the child processes still running, stop the agent fleet, remove the work directory
    (unless `keep`)."""
    for p in list(children):
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    fleet.stop()
    if keep:
        print(f"work directory kept: {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def run_child(work: Path, phase: str, spec: dict, label: str, timeout: float) -> dict:
    spec_path = work / f"spec-{label}.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--_phase", phase, "--_spec", str(spec_path)],
        stdout=subprocess.PIPE, stderr=open(work / f"child-{label}.log", "wb"), text=True, cwd=ROOT,
    )
    _children.append(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise RuntimeError(f"phase {label} did not finish within {timeout:.0f} s; see {work / f'child-{label}.log'}")
    finally:
        _children.remove(proc)
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (work / f"child-{label}.log").read_text()[-3000:]
        raise RuntimeError(f"phase {label} failed (exit {proc.returncode}):\n{tail}")
    return json.loads(lines[-1][7:])


PACED_INTERVAL = {10: 1.0, 100: 1.0, 1000: 10.0}


def max_interval(n: int, results: dict[int, dict[str, dict]]) -> float:
    """Interval of the bs-max phase. 1 ms (back to back) while N is small. With all N scrapes in
    flight at once, each waits ~N / capacity; the Collector times a scrape out after
    max(interval, 1 s), so for N=1000 back-to-back scraping would measure timeouts, not reads.
    There the interval is 1.5 x N / (the bs-max scrapes/s measured at the previous N): the load
    offered is 2/3 of the capacity just measured, so a round of N fits in one interval (clamped
    to 1..10 s)."""
    prev = [r["bs-max"] for m, r in results.items() if m < n and "bs-max" in r and r["bs-max"]["scrapes"]]
    if n < 1000 or not prev:
        return 0.001
    rate = prev[-1]["scrapes"] / prev[-1]["wall"]
    return round(min(10.0, max(1.0, 1.5 * n / rate)), 1)


def plan(quick: bool) -> list[tuple[int, dict[str, float]]]:
    """(N, {phase: seconds}) in run order."""
    if quick:
        return [(10, dict.fromkeys(("bs-paced", "bs-max", "pypi-ser", "pypi-pool"), 6.0)),
                (100, dict.fromkeys(("bs-paced", "bs-max", "pypi-ser", "pypi-pool"), 6.0))]
    return [
        (10, dict.fromkeys(("bs-paced", "bs-max", "pypi-ser", "pypi-pool"), 8.0)),
        (100, dict.fromkeys(("bs-paced", "bs-max", "pypi-ser", "pypi-pool"), 8.0)),
        (1000, {"bs-paced": 30.0, "bs-max": 12.0, "pypi-ser": 12.0, "pypi-pool": 12.0}),
    ]


def fmt(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def machine() -> str:
    return machine_line().removeprefix("machine: ")


def versions() -> str:
    from importlib.metadata import version

    out = []
    for pkg in ("httpx", "deltalake", "jolokia", "requests"):
        try:
            out.append(f"{pkg}=={version(pkg)}")
        except Exception:  # noqa: BLE001
            out.append(f"{pkg}=?")
    return " ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N=10,100 only (~1 min)")
    ap.add_argument("--jvms", type=int, default=4, help="agent JVMs shared by the targets (default 4)")
    ap.add_argument("--queues", type=int, default=4, help="queue MBeans per broker (default 4)")
    ap.add_argument("--pool", type=int, default=64, help="threads of the PyPI thread-pool variant (default 64)")
    ap.add_argument("--json", help="also write the raw results to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, lakehouses)")
    ap.add_argument("--_phase", help=argparse.SUPPRESS)
    ap.add_argument("--_spec", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._phase:
        child_main(a._phase, a._spec)
        return 0
    try:
        import jolokia  # noqa: F401
    except ImportError:
        print("the PyPI client is missing: pip install jolokia==0.4.0", file=sys.stderr)
        return 2

    steps = plan(a.quick)
    n_max = max(n for n, _ in steps)
    work = Path(tempfile.mkdtemp(prefix="bench-collector-"))
    t_start = time.monotonic()
    header = [
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"machine: {machine()}",
        f"versions: {versions()}",
        f"command: python bench/bench_collector.py{' --quick' if a.quick else ''}"
        + (f" --jvms {a.jvms}" if a.jvms != 4 else "") + (f" --queues {a.queues}" if a.queues != 4 else "")
        + (f" --pool {a.pool}" if a.pool != 64 else ""),
        f"reads: {describe_reads()}",
        f"targets: {a.jvms} agent JVMs (Jolokia 2.6.0 JVM agent, 4 HTTP threads each, -Xmx128m) host {n_max} "
        f"ActiveMQ-shaped brokers ({a.queues} queues each); target i = its own config entry -> JVM i % {a.jvms}",
    ]
    for line in header:
        print(line, flush=True)
    jvms = JVMs(work, a.jvms, n_max, a.queues)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    results: dict[int, dict[str, dict]] = {}
    try:
        print(f"[{time.monotonic() - t_start:5.1f}s] starting {a.jvms} JVMs ...", flush=True)
        jvms.start()
        print(f"[{time.monotonic() - t_start:5.1f}s] JVMs up: pids {jvms.pids}", flush=True)
        # JIT warm-up of the agents with both request shapes (results discarded)
        warm = target_specs(jvms.urls, n_max)
        run_child(work, "collector", {"targets": warm[:20], "interval": 0.001, "duration": 3.0, "jvm_pids": jvms.pids,
                                      "lakehouse": str(work / "lh-warm")}, "warm-bs", 120)
        run_child(work, "pypi", {"targets": warm, "workers": 8, "duration": 3.0, "jvm_pids": jvms.pids},
                  "warm-pypi", 120)
        print(f"[{time.monotonic() - t_start:5.1f}s] warm-up done", flush=True)
        for n, durations in steps:
            targets = target_specs(jvms.urls, n)
            results[n] = {}
            for phase, dur in durations.items():
                label = f"{phase}-{n}"
                if phase.startswith("bs-"):
                    interval = PACED_INTERVAL[n] if phase == "bs-paced" else max_interval(n, results)
                    spec = {"targets": targets, "interval": interval, "duration": dur,
                            "lakehouse": str(work / f"lh-{label}")}
                    kind = "collector"
                else:
                    spec = {"targets": targets, "workers": 1 if phase == "pypi-ser" else min(a.pool, n), "duration": dur}
                    kind = "pypi"
                spec["jvm_pids"] = jvms.pids
                r = run_child(work, kind, spec, label, timeout=dur + 300)
                r["interval"] = spec.get("interval")
                r["workers"] = spec.get("workers")
                results[n][phase] = r
                extra = (f"  (start-up {r['startup_s']:.1f} s, {r['startup_cpu']:.1f} CPU s)"
                         if "startup_s" in r else "")
                print(
                    f"[{time.monotonic() - t_start:5.1f}s] N={n:<5} {phase:<9} interval/threads "
                    f"{spec.get('interval') or spec.get('workers')}: "
                    f"{r['reads_ok'] / r['wall']:7.1f} reads/s  {r['scrapes'] / r['wall']:7.1f} scrapes/s  "
                    f"p50 {fmt(r['p50'])} ms  p99 {fmt(r['p99'])} ms  cpu {r['cpu'] / r['wall']:.2f}  "
                    f"rss {r['rss_peak'] / 2**20:.0f} MiB  errors {r['errors']}{extra}",
                    flush=True,
                )
                for key in ("error_sample", "read_error_sample"):
                    if r.get(key):
                        print(f"         first {key.replace('_sample', '').replace('_', ' ')}: {r[key][:200]}", flush=True)
    except KeyboardInterrupt:
        print("interrupted; stopping what was started", file=sys.stderr)
        return 130
    finally:
        clean_up(_children, jvms, work, a.keep)

    report = render(results, a)
    print()
    print(report)
    print(f"\ntotal wall time {time.monotonic() - t_start:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps({"header": header, "results": results}, indent=2))
    return 0


def render(results: dict[int, dict[str, dict]], a: argparse.Namespace) -> str:
    lines = []
    cols = (f"{'N':>5} {'phase':<9} {'interval':>8} {'window':>6} {'scrapes/s':>9} {'reads/s':>8} {'POSTs/s':>7} "
            f"{'subreq/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} {'CPU s/s':>7} {'reads/CPU-s':>11} "
            f"{'RSS MiB':>7} {'JVMs CPU s/s':>12} {'JVM ms/scrape':>13}")
    lines.append(cols)
    lines.append("-" * len(cols))
    for n, phases in results.items():
        for phase, r in phases.items():
            w = r["wall"]
            iv = f"{r['interval']:g} s" if r.get("interval") else (f"{r['workers']} thr" if r.get("workers") else "")
            lines.append(
                f"{n:>5} {phase:<9} {iv:>8} {w:>6.1f} {r['scrapes'] / w:>9.1f} {r['reads_ok'] / w:>8.1f} "
                f"{r['http_posts'] / w:>7.1f} {r['subrequests'] / w:>8.1f} {fmt(r['p50']):>7} {fmt(r['p99']):>7} "
                f"{r['errors']:>6} {r['cpu'] / w:>7.2f} {r['reads_ok'] / r['cpu'] if r['cpu'] else 0:>11.0f} "
                f"{r['rss_peak'] / 2**20:>7.0f} {r['jvm_cpu'] / w:>12.2f} "
                f"{1000 * r['jvm_cpu'] / r['scrapes'] if r['scrapes'] else 0:>13.2f}"
            )
    lines.append("")
    lines.append("brokerscope Collector start-up (Collector.run() until its first scrape is sent; not in the window above):")
    for n, phases in results.items():
        for phase in ("bs-paced", "bs-max"):
            r = phases.get(phase)
            if r:
                lines.append(
                    f"  N={n:<5} {phase:<9} {r['startup_s']:5.1f} s wall, {r['startup_cpu']:5.1f} CPU s; RSS "
                    f"{r['rss0'] / 2**20:.0f} MiB after imports -> {r['rss_start'] / 2**20:.0f} MiB at first scrape "
                    f"-> {r['rss_peak'] / 2**20:.0f} MiB peak"
                )
    lines.append("")
    lines.append("read throughput ratio, brokerscope bs-max reads/s / PyPI reads/s (issue target >= 20x),")
    lines.append("and client efficiency ratio, reads per client CPU-second:")
    for n, phases in results.items():
        bs = phases.get("bs-max")
        if not bs:
            continue
        parts = []
        for p in ("pypi-ser", "pypi-pool"):
            q = phases.get(p)
            if q and q["reads_ok"]:
                ratio = (bs["reads_ok"] / bs["wall"]) / (q["reads_ok"] / q["wall"])
                eff = (bs["reads_ok"] / bs["cpu"]) / (q["reads_ok"] / q["cpu"]) if bs["cpu"] and q["cpu"] else 0
                parts.append(f"vs {p}: {ratio:4.1f}x reads/s, {eff:4.1f}x reads/CPU-s")
        lines.append(f"  N={n:<5} " + ";  ".join(parts))
        if bs.get("interval", 0.001) > 0.001:
            lines.append(f"           (bs-max at N={n} is paced at {bs['interval']:g} s = {n / bs['interval']:.0f} scrapes/s "
                         "offered: a sustainable cadence, not a ceiling; see max_interval())")
    for n, phases in results.items():
        ser = phases.get("pypi-ser")
        if ser and ser["scrapes"]:
            lines.append(f"  PyPI serial needs {n / (ser['scrapes'] / ser['wall']):.2f} s to read all {n} targets once")
    if 1000 in results and "bs-paced" in results[1000]:
        r = results[1000]["bs-paced"]
        lines.append("")
        lines.append(
            f"issue target '1,000 targets at a 10 s interval within one core': {r['cpu'] / r['wall']:.2f} CPU s per "
            f"wall s in the window ({r['cpu_all'] / r['wall_all']:.2f} including start-up and final flush), "
            f"peak RSS {r['rss_peak'] / 2**20:.0f} MiB, {r['scrapes'] / r['wall']:.1f} scrapes/s "
            f"(cadence asks {1000 / r['interval']:.0f}), {r['errors']} errors"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
