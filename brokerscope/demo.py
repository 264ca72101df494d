"""`brokerscope demo`: a real local drill, end to end.

Starts a real ActiveMQ Classic master/slave pair (shared KahaDB, shared-file lock), collects both
over Jolokia every 0.5 s, SIGKILLs the master, waits for the slave to take over, restarts the old
master (it must come back as slave), stops, runs the Spark jobs and prints the reconstructed
timeline next to the drill's own ground truth.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

from brokerscope.config import load_config

_STARTED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \| INFO\s*\| Apache ActiveMQ \S+ \((?P<name>[^,]+), .*\) started")


def say(msg: str) -> None:
    print(f"[{datetime.now(timezone.utc):%H:%M:%S.%f}"[:-3] + f"] {msg}", flush=True)


def log_started_times(log: Path) -> list[float]:
    """Epoch times of 'Apache ActiveMQ … started' lines (the lab logs in UTC, ISO8601 with ms)."""
    out = []
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        m = _STARTED.match(line)
        if m:
            ts = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
            out.append(ts.timestamp())
    return out


class BackgroundCollector:
    """The real collector on its own event loop thread, stoppable from the drill."""

    def __init__(self, config, record: Path) -> None:
        from collectors.scraper import Collector

        self.collector = Collector(config, record=str(record))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="collector", daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.loop.run_until_complete(self.collector.run())
        except BaseException as e:  # surfaced by stop()
            self.error = e

    def start(self) -> "BackgroundCollector":
        self.thread.start()
        return self

    def stop(self):
        self.loop.call_soon_threadsafe(self.collector.stop)
        self.thread.join(timeout=30)
        if self.error:
            raise self.error
        return self.collector.stats


def run_drill(workdir: Path, scrape_interval: float = 0.5, keep: bool = False) -> tuple[Path, dict]:
    """Run the kill-master drill; returns (config path, ground truth)."""
    from infra.lab import ActiveMQPair, build_agent, stomp_send

    if not keep:
        for sub in ("lab", "lakehouse", "recording.jsonl.gz", "ground_truth.json", "brokerscope.yaml"):
            p = workdir / sub
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    workdir.mkdir(parents=True, exist_ok=True)
    say("building the Jolokia agent (once)")
    build_agent()
    pair = ActiveMQPair(workdir / "lab")
    truth: dict = {"drill": "kill-master", "scrape_interval_s": scrape_interval}
    new_master_log: Path | None = None
    try:
        say("starting ActiveMQ master/slave pair (shared KahaDB, shared-file lock)")
        pair.start()
        a, b = pair.names
        cfg_path = workdir / "brokerscope.yaml"
        cfg_path.write_text(
            yaml.safe_dump(
                {
                    "lakehouse": "./lakehouse",
                    "scrape_interval": f"{int(scrape_interval * 1000)}ms",
                    "flush_interval": "2s",
                    "targets": [
                        {"name": n, "kind": "activemq", "url": pair.jolokia_url(n), "group": "store-1", "timeout": "2s"}
                        for n in (a, b)
                    ],
                },
                sort_keys=False,
            )
        )
        cfg = load_config(cfg_path)
        say(f"{a} is master, {b} is slave; collecting every {scrape_interval:g}s → {cfg.lakehouse_root()}")
        col = BackgroundCollector(cfg, workdir / "recording.jsonl.gz").start()
        time.sleep(max(1.5, 3 * scrape_interval))
        truth["sent_before_kill"] = stomp_send(pair.brokers[a].stomp_url, "/queue/BROKERSCOPE.LAB", (f"m{i}" for i in range(20)))
        say(f"sent {truth['sent_before_kill']} persistent messages to {a}")
        time.sleep(max(1.5, 3 * scrape_interval))

        master = pair.master()
        if master is None:
            raise RuntimeError(f"no single master before the kill: roles {pair.roles()}")
        standby = b if master == a else a
        truth["master_before"] = master
        truth["kill_ts"] = time.time()
        truth["killed_pid"] = pair.kill(master)
        say(f"SIGKILL {master} (pid {truth['killed_pid']})")
        truth["takeover_seen_ts"] = pair.wait_for_role(standby, "master", timeout=60)
        truth["new_master"] = standby
        say(f"{standby} is master (seen by the drill's 20 Hz probe)")
        new_master_log = pair.brokers[standby].activemq_log
        truth["sent_after_failover"] = stomp_send(pair.brokers[standby].stomp_url, "/queue/BROKERSCOPE.LAB", (f"n{i}" for i in range(10)))
        say(f"sent {truth['sent_after_failover']} more to {standby}")
        time.sleep(max(2.0, 4 * scrape_interval))

        say(f"restarting {master}")
        truth["restart_ts"] = time.time()
        pair.start_broker(master)
        truth["back_as_slave_ts"] = pair.wait_for_role(master, "slave", timeout=60)
        say(f"{master} is back, as slave")
        time.sleep(max(2.0, 4 * scrape_interval))
        stats = col.stop()
        say(f"collector stopped: {stats.summary()}")
        truth["collector"] = stats.summary()
    finally:
        pair.stop()
    # The broker logs "… started" only after it holds the lock; read it once the drill is over
    # (the probe can see Slave=false a few ms before the line is written).
    started = [t for t in log_started_times(new_master_log) if t >= truth["kill_ts"]] if new_master_log else []
    truth["takeover_log_ts"] = started[0] if started else None
    (workdir / "ground_truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return cfg_path, truth


def compare(truth: dict, failovers: list[dict], interval: float) -> list[str]:
    """How close the reconstruction came to the drill's ground truth, in words."""
    ev = [e for e in failovers if e["from_instance"] == truth["master_before"] and e["to_instance"] == truth["new_master"]]
    if not ev:
        return [f"✗ no failover {truth['master_before']} → {truth['new_master']} was reconstructed"]
    e = ev[0]
    kill = truth["kill_ts"]
    last_active = e["old_last_active"].timestamp()
    first_active = e["new_first_active"].timestamp()
    takeover = truth.get("takeover_log_ts") or truth["takeover_seen_ts"]
    src = "broker log" if truth.get("takeover_log_ts") else "drill probe"
    lines = []
    d_kill = kill - last_active
    ok = 0 <= d_kill <= interval + 0.05
    lines.append(f"{'✓' if ok else '✗'} old master last seen active {d_kill:.3f} s before the SIGKILL (bound: one scrape, {interval:g} s)")
    d_take = first_active - takeover
    ok2 = -0.05 <= d_take <= interval + 0.05
    lines.append(f"{'✓' if ok2 else '✗'} new master first seen active {d_take:.3f} s after it took over ({src}) (bound: one scrape)")
    true_outage = takeover - kill
    lines.append(f"  true outage {true_outage:.3f} s (kill → takeover); reconstructed ≤ {e['outage_upper_s']:.3f} s")
    return lines


def run_demo(workdir: Path, scrape_interval: float = 0.5, keep: bool = False) -> int:
    from brokerscope.analyze import analyze
    from brokerscope.timeline import build_timeline, render_text
    from lakehouse.store import Lakehouse

    workdir = workdir.resolve()
    cfg_path, truth = run_drill(workdir, scrape_interval, keep)
    cfg = load_config(cfg_path)
    say("analysing: Spark jobs bronze → silver → gold")
    counts = analyze(cfg, progress=lambda m: say(f"  {m}"))
    lh = Lakehouse(cfg.lakehouse_root())
    failovers = lh.read("failover_events").to_pylist()
    entries = build_timeline(
        lh.read("role_intervals"),
        lh.read("failover_events"),
        lh.read("split_brain_windows"),
        lh.read("broker_state", columns=["instance", "ts", "error", "role", "active"]),
    )
    print("\n=== timeline (reconstructed from Jolokia scrapes) ===")
    sys.stdout.write(render_text(entries))
    print("\n=== against the drill's ground truth ===")
    for line in compare(truth, failovers, scrape_interval):
        print(line)
    back = [e for e in entries if e.what == "back-inactive" and e.instance == truth["master_before"]]
    print(f"{'✓' if back else '✗'} {truth['master_before']} came back as slave" + (f" (seen {back[0].ts:%H:%M:%S.%f})"[:-4] + ")" if back else ""))
    print("\n=== where things are ===")
    print(f"config       {cfg_path}")
    print(f"recording    {workdir / 'recording.jsonl.gz'}")
    print(f"ground truth {workdir / 'ground_truth.json'}")
    for name, n in counts.items():
        print(f"table        {lh.uri(name)}  ({n} rows)")
    print(f"\nnext: brokerscope timeline --config {cfg_path} --format json")
    return 0
