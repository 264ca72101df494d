"""Fault → webhook latency of `brokerscope run` in the real lab (issue P6).

    python bench/bench_alert_latency.py                 # 5 drills, 1 s scrapes, analysis every 30 s
    python bench/bench_alert_latency.py --drills 10 --json /tmp/latency.json
    python bench/bench_alert_latency.py --no-analysis   # the fast path alone (no Spark in the background)

What it does:
1. Starts the real ActiveMQ master/slave pair of the lab (infra/lab.py: two JVMs, shared KahaDB,
   shared-file lock, Jolokia agent) and a webhook receiver on 127.0.0.1 that stamps each POST on
   arrival (this process' clock, the same one that stamps the kill).
2. Starts `brokerscope run` as its own process: scrape interval 1 s, the alert config's defaults
   (group_wait 0 s, group_interval 10 s) and one webhook receiver; /metrics on a free loopback port;
   Spark analysis in the background every `--analysis-interval` unless `--no-analysis`.
3. Per drill: waits until the pair has one master, NoActiveInstance is not firing at the receiver
   and nothing was delivered for group_interval + 1 s (each drill is a
   fault of its own; one inside the previous notification's group_interval is held back by that
   timer, as in Alertmanager); stamps the time and SIGKILLs the master; the latency is the arrival
   of the first webhook payload carrying one of those alerts firing for the group, minus the
   kill time (FailoverHappened counts when its startsAt is after the kill: an earlier one stays
   firing for failover_hold). Then restarts the old master (it comes back as slave).
   Drills alternate direction (a → b, then b → a …).
4. Prints one line per drill (latency, which alert, the broker's own takeover time from the
   drill's probe), then the median and the max, against the bound: 2 scrape intervals + 2 s.

Everything it starts (two JVMs, the service) is stopped by PID on exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infra.lab import ActiveMQPair, free_port  # noqa: E402

RELEVANT = ("NoActiveInstance", "FailoverHappened")
GROUP = "store-1"
GROUP_INTERVAL = 10.0  # alerts.group_interval default, which the bench keeps


def stamp() -> str:
    return time.strftime("%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}"


def say(msg: str) -> None:
    print(f"[{stamp()}] {msg}", flush=True)


# --- the webhook receiver --------------------------------------------------------------------------


@dataclass
class Delivery:
    arrived: float  # time.time() when the POST body had been read
    payload: dict


class WebhookReceiver:
    """An HTTP server on 127.0.0.1 that keeps every JSON POST with its arrival time."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self._cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                arrived = time.time()
                try:
                    payload = json.loads(body)
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                self.send_response(200)
                self.end_headers()
                with receiver._cond:
                    receiver.deliveries.append(Delivery(arrived, payload))
                    receiver._cond.notify_all()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="webhook", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, pred: Callable[[Delivery], bool], after: float, timeout: float) -> Delivery | None:
        """The first delivery arriving after `after` for which `pred` holds, waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for d in self.deliveries:
                    if d.arrived >= after and pred(d):
                        return d
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def firing(self, alertnames: tuple[str, ...], group: str) -> set[str]:
        """Fingerprints of those alerts whose last delivered status is firing."""
        status: dict[str, str] = {}
        with self._cond:
            for d in self.deliveries:
                for a in d.payload.get("alerts", []):
                    if a["labels"].get("alertname") in alertnames and a["labels"].get("group") == group:
                        status[a["fingerprint"]] = a["status"]
        return {fp for fp, s in status.items() if s == "firing"}

    def last_arrival(self) -> float:
        with self._cond:
            return self.deliveries[-1].arrived if self.deliveries else 0.0

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def relevant_firing(d: Delivery, group: str = GROUP, since: float = 0.0) -> list[str]:
    """Alertnames of the RELEVANT alerts firing for `group` in one delivery; FailoverHappened only
    for a failover that began at or after `since` (an earlier one stays firing for failover_hold)."""
    def about_this_fault(a: dict) -> bool:
        return a["labels"]["alertname"] != "FailoverHappened" or parse_rfc3339(a["startsAt"]) >= since

    return sorted({a["labels"]["alertname"] for a in d.payload.get("alerts", [])
                   if a["status"] == "firing" and a["labels"].get("alertname") in RELEVANT
                   and a["labels"].get("group") == group and about_this_fault(a)})


def parse_rfc3339(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --- the service under test ------------------------------------------------------------------------


def write_config(workdir: Path, pair: ActiveMQPair, hook_url: str, interval: float, metrics_port: int,
                 analysis: bool, analysis_interval: float) -> Path:
    cfg = {
        "lakehouse": "./lakehouse",
        "scrape_interval": f"{int(interval * 1000)}ms",
        "targets": [{"name": n, "kind": "activemq", "url": pair.jolokia_url(n), "group": GROUP, "timeout": "2s"}
                    for n in pair.names],
        "alerts": {"receivers": [{"name": "bench", "type": "webhook", "url": hook_url}]},
        "service": {"metrics_listen": f"127.0.0.1:{metrics_port}", "analysis": analysis,
                    "analysis_interval": f"{analysis_interval:g}s"},
    }
    path = workdir / "brokerscope.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


class ServiceProcess:
    """`brokerscope run -c CFG` in its own process group; its output goes to a log file."""

    def __init__(self, config: Path, log: Path) -> None:
        self.log_path = log
        self._log = open(log, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "brokerscope", "run", "-c", str(config)], cwd=ROOT,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"brokerscope run exited ({self.proc.returncode}):\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"brokerscope run: no line matching {pattern!r} within {timeout:g}s:\n{self.text()[-3000:]}")
            time.sleep(0.1)

    def stop(self, grace: float = 60) -> int:
        """SIGTERM (graceful: bronze flushed), SIGKILL after `grace`."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


# --- one drill -------------------------------------------------------------------------------------


def drill(pair: ActiveMQPair, hook: WebhookReceiver, timeout: float = 30) -> dict:
    """Kill the master, measure kill → first relevant webhook; bring the old master back as slave
    and wait until the alerts are resolved again."""
    master = pair.master()
    if master is None:
        raise RuntimeError(f"no single master before the kill: roles {pair.roles()}")
    standby = next(n for n in pair.names if n != master)
    kill_ts = time.time()
    pair.kill(master)
    takeover_ts = pair.wait_for_role(standby, "master", timeout=60)
    got = hook.wait_for(lambda d: bool(relevant_firing(d, since=kill_ts)), after=kill_ts, timeout=timeout)
    result = {"killed": master, "new_master": standby, "kill_ts": kill_ts, "takeover_s": takeover_ts - kill_ts,
              "latency_s": None if got is None else got.arrived - kill_ts,
              "alerts": None if got is None else relevant_firing(got, since=kill_ts)}
    pair.start_broker(master)
    pair.wait_for_role(master, "slave", timeout=60)
    return result


def settle(pair: ActiveMQPair, hook: WebhookReceiver, quiet: float = GROUP_INTERVAL + 1, timeout: float = 120) -> None:
    """Until one master, NoActiveInstance not firing (the previous drill's resolve delivered) and
    nothing delivered for `quiet` seconds: each drill is a fault of its own, not one inside the
    previous notification's group_interval (which holds a new alert back by design)."""
    deadline = time.monotonic() + timeout
    while hook.firing(("NoActiveInstance",), GROUP) or pair.master() is None or time.time() - hook.last_arrival() < quiet:
        if time.monotonic() > deadline:
            raise TimeoutError(f"still firing after {timeout:g}s: {hook.firing(RELEVANT, GROUP)}; roles {pair.roles()}")
        time.sleep(0.2)


def summarize(results: list[dict], interval: float) -> list[str]:
    bound = 2 * interval + 2
    got = [r["latency_s"] for r in results if r["latency_s"] is not None]
    lines = []
    for i, r in enumerate(results, 1):
        lat = "no alert" if r["latency_s"] is None else f"{r['latency_s']:.3f} s"
        lines.append(f"drill {i}: kill -9 {r['killed']} → webhook {lat} ({', '.join(r['alerts'] or []) or '-'}); "
                     f"{r['new_master']} took over {r['takeover_s']:.3f} s after the kill")
    if got:
        lines.append(f"fault → webhook over {len(got)}/{len(results)} drills: median {statistics.median(got):.3f} s, "
                     f"max {max(got):.3f} s, min {min(got):.3f} s (bound: 2 × {interval:g} s + 2 s = {bound:g} s; "
                     f"{sum(1 for x in got if x <= bound)}/{len(results)} within)")
    else:
        lines.append("no drill produced an alert")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drills", type=int, default=5)
    ap.add_argument("--interval", type=float, default=1.0, help="scrape interval (s)")
    ap.add_argument("--analysis-interval", type=float, default=30.0, help="background Spark analysis every (s)")
    ap.add_argument("--no-analysis", action="store_true", help="no Spark in the service (the fast path alone)")
    ap.add_argument("--json", metavar="FILE", help="write the per-drill results here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (lab logs, service log, lakehouse)")
    args = ap.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="bench-alert-latency-"))
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    say(f"work directory {workdir}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    pair = ActiveMQPair(workdir / "lab")
    hook = WebhookReceiver()
    service = None
    results: list[dict] = []
    try:
        say("starting the ActiveMQ pair")
        pair.start(timeout=90)
        cfg = write_config(workdir, pair, hook.url, args.interval, free_port(), not args.no_analysis, args.analysis_interval)
        service = ServiceProcess(cfg, workdir / "service.log")
        say(f"brokerscope run (scrape every {args.interval:g}s, analysis {'off' if args.no_analysis else f'every {args.analysis_interval:g}s'}); webhook {hook.url}")
        service.wait_log(r"serving http://", 60)
        for n in pair.names:
            service.wait_log(rf"{re.escape(n)} is (master|slave)", 60)
        time.sleep(2 * args.interval)
        for i in range(args.drills):
            settle(pair, hook)
            r = drill(pair, hook)
            results.append(r)
            say(summarize([r], args.interval)[0].replace("drill 1", f"drill {i + 1}"))
        code = service.stop()
        service = None
        say(f"brokerscope run stopped (exit {code})")
    except KeyboardInterrupt:
        say("interrupted")
    finally:
        if service is not None:
            service.stop()
        pair.stop()
        hook.stop()
    print()
    for line in summarize(results, args.interval):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"interval_s": args.interval, "analysis": not args.no_analysis,
                                               "drills": results}, indent=2) + "\n")
    if args.keep:
        print(f"kept {workdir}")
    else:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if results and all(r["latency_s"] is not None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
