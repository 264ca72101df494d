"""Turn a built scenario into what a collector would have written: the recording (P1 envelopes,
sorted by time), the config to replay it, and the ground truth beside it."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import yaml

from brokerscope.simulate import activemq, artemis, kafka, weblogic, zookeeper
from brokerscope.simulate.gclog import log_lines, poll_envelopes
from brokerscope.simulate.jolokia import dialect, exchange, refused_error, timeout_error, write_recording
from brokerscope.simulate.model import Member, Scenario, within
from brokerscope.simulate.scenarios import T0
from collectors.base import scrape_requests
from collectors.packs import pack_for
from collectors.schedule import scrape_due

RECORDING, TRUTH, CONFIG = "recording.jsonl.gz", "truth.json", "brokerscope.yaml"
GC_LOG_DIR = "/var/log/brokers"


def scrape_time(sc: Scenario, m: Member, tick: int) -> float:
    """As the real collector schedules it (collectors/schedule.py): the grid plus a sweeping phase."""
    return round(scrape_due(m.offset_ms / 1000.0, tick, sc.interval), 3)


def registry_of(sc: Scenario, m: Member, t: float):
    ts = T0 + timedelta(seconds=t)
    if m.kind == "activemq":
        return activemq.registry(m, t, ts)
    if m.kind == "artemis":
        return artemis.registry(m, [p for p in sc.members if p is not m], t, ts, T0)
    if m.kind == "kafka":
        return kafka.registry(m, t)
    if m.kind == "weblogic":
        return weblogic.registry(m, t, ts)
    raise ValueError(f"no renderer for kind {m.kind!r}")


def jolokia_envelopes(sc: Scenario) -> list[dict]:
    """Every scrape of every member: the pack's own bulk request, and the agent's answer, a refused
    connection (process down), a timeout (frozen JVM), or nothing (a scrape the collector lost)."""
    jol = dialect(sc.jolokia_generation)
    out = []
    for m in sc.members:
        requests = scrape_requests(pack_for(m.kind))
        for tick in range(sc.ticks()):
            t = scrape_time(sc, m, tick)
            if within(m.dropped, t):
                continue
            ts = T0 + timedelta(seconds=t)
            seen = ts + timedelta(seconds=m.skew_s)
            if within(m.down, t):
                out.append(exchange(jol, m.name, ts, requests, refused_error(m.name, m.url), 1.2, seen))
            elif within(m.frozen, t):
                out.append(exchange(jol, m.name, ts, requests, timeout_error(m.name), 1000.0 * min(sc.interval, 5.0), seen))
            else:
                out.append(exchange(jol, m.name, ts, requests, registry_of(sc, m, t), 6.0 + m.offset_ms % 5, seen))
    return out


def zookeeper_envelopes(sc: Scenario) -> list[dict]:
    """Each round: `srvr` + `mntr` of every server, and the lock manager's znodes read through zk1."""
    if not sc.zookeeper:
        return []
    out = []
    hosts = ",".join(zookeeper.endpoint(z) for z in sc.zookeeper)
    brokers = [m for m in sc.members if m.kind == "artemis"]
    for tick in range(sc.ticks()):
        for z in sc.zookeeper:
            t = scrape_time(sc, z, tick)
            out += zookeeper.server_envelopes(z, t, T0 + timedelta(seconds=t), tick, len(sc.zookeeper))
        t = round(scrape_time(sc, sc.zookeeper[0], tick) + 0.004, 3)
        holder = next((m for m in brokers if m.is_active(t)), None)
        if holder is not None:  # the committed sequence is the active broker's (it committed it)
            nodes = zookeeper.lock_snapshot(holder.facts["node_id"], artemis.sequence_at(holder, t), 0x10000A1B2C3D4,
                                            int(T0.timestamp() * 1000) - 600_000, sc.seed)
            out.append(zookeeper.snapshot_envelope(sc.zookeeper[0], hosts, T0 + timedelta(seconds=t), nodes))
    return out


def gc_envelopes(sc: Scenario) -> list[dict]:
    """The GC log tailer's batches: polled at every scrape tick, 200 ms after it."""
    out = []
    polls = [round(tick * sc.interval + 0.2, 3) for tick in range(int(sc.duration // sc.interval))]
    for target, pauses in sc.gc_logs.items():
        m = next(x for x in sc.members if x.name == target)
        lines = log_lines(T0, m.jvm_starts[0], pauses)
        out += poll_envelopes(target, f"{GC_LOG_DIR}/{target}/gc.log", T0, lines, polls)
    return out


def envelopes(sc: Scenario) -> list[dict]:
    return sorted(jolokia_envelopes(sc) + zookeeper_envelopes(sc) + gc_envelopes(sc),
                  key=lambda e: (e["ts"], e["source"], e["target"]))


def config(sc: Scenario) -> dict:
    targets = [{"name": m.name, "kind": m.kind, "url": m.url, "group": m.group} | m.facts.get("target_config", {})
               for m in sc.members]
    for z in sc.zookeeper:
        t = {"name": z.name, "kind": "zookeeper", "url": z.url, "group": z.group}
        if z is sc.zookeeper[0]:
            t["zookeeper"] = {"watch": [{"preset": "artemis-lock-manager", "namespace": zookeeper.NAMESPACE}]}
        targets.append(t)
    return {"lakehouse": "./lakehouse", "scrape_interval": sc.interval, "targets": targets} | sc.config_extra


def merged_config(scenarios: list[Scenario]) -> dict:
    """One config for scenarios sharing a recording: all targets; the analysis sections must agree."""
    out = config(scenarios[0])
    for sc in scenarios[1:]:
        c = config(sc)
        if c["scrape_interval"] != out["scrape_interval"]:
            raise ValueError("scenarios in one recording need the same scrape interval")
        out["targets"] += c["targets"]
        for section, values in c.items():
            if section in ("lakehouse", "scrape_interval", "targets"):
                continue
            for key, v in values.items():
                have = out.setdefault(section, {})
                if have.get(key, v) != v:
                    raise ValueError(f"scenarios in one recording disagree on {section}.{key}")
                have[key] = v
    return out


def write_scenario(sc: Scenario, out: Path) -> dict:
    """Write recording, truth and config of one scenario into `out`; returns counts for the CLI."""
    return write_suite([sc], out)


def write_suite(scenarios: list[Scenario], out: Path) -> dict:
    """Write several scenarios into one recording (names must not clash: build them with a prefix),
    one config, and truth.json: the scenario's truth, or {"suite": [truths]}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    envs = sorted((e for sc in scenarios for e in envelopes(sc)), key=lambda e: (e["ts"], e["source"], e["target"]))
    n = write_recording(out / RECORDING, envs)
    truths = [sc.truth for sc in scenarios]
    (out / TRUTH).write_text(json.dumps(truths[0] if len(truths) == 1 else {"suite": truths}, indent=1) + "\n")
    (out / CONFIG).write_text(yaml.safe_dump(merged_config(scenarios), sort_keys=False))
    sources: dict[str, int] = {}
    for e in envs:
        sources[e["source"]] = sources.get(e["source"], 0) + 1
    return {"envelopes": n, "sources": sources}
