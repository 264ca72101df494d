"""The Kafka lab's start-up time and memory, and the collector's cost per Kafka target (issue P13).

    python bench/bench_kafka_lab.py [--reads 50] [--json FILE]

Starts infra.kafka_lab (3 combined KRaft nodes, a DR node, MirrorMaker 2), produces 3000 messages
and consumes 1000 in a group, then per JVM: its resident memory (VmRSS), the MBeans it registers
(Jolokia ``search *:*``), and ``--reads`` times each of (a) the Kafka pack's bulk read (what the
collector sends every scrape) and (b) one wildcard read of every ``kafka.*`` MBean (what a
read-everything exporter fetches): wall time per request (median, p95), response bytes, and the
pack's normalisation time in this process. Then the Kafka-protocol collector's round of a
replication (collectors.kafka_offsets: groups, synced and committed offsets, checkpoints, both
clusters' log offsets of the group's partitions and of a watched topic), ``--reads`` times: wall and
CPU time of this process per round (median, p95). Everything is stopped by PID at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.base import Observation  # noqa: E402
from collectors.kafka import KafkaPack  # noqa: E402
from infra.kafka_clients import consume, produce  # noqa: E402
from infra.kafka_lab import DR, PRIMARY, KafkaLab  # noqa: E402
from infra.processes import rss_mib  # noqa: E402


def post(url: str, body) -> tuple[float, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
    return time.perf_counter() - t, raw


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]


def measure(lab: KafkaLab, name: str, reads: int) -> dict:
    url, pack = lab.nodes[name].jolokia_url, KafkaPack()
    reqs = pack.requests()
    _, raw = post(url, {"type": "search", "mbean": "*:*"})
    rss = rss_mib(lab.nodes[name].pid)
    out: dict = {"rss_mb": round(rss, 1) if rss is not None else float("nan"), "mbeans": len(json.loads(raw)["value"])}
    for label, body in (("pack", reqs), ("all_kafka", {"type": "read", "mbean": "kafka.*:*"})):
        times, size, norm = [], 0, []
        for _ in range(reads):
            dt, raw = post(url, body)
            times.append(dt * 1000)
            size = len(raw)
            if label == "pack":
                obs = Observation(datetime.now(timezone.utc), name, "kafka", "g", reqs, json.loads(raw), None, dt * 1000)
                t = time.perf_counter()
                pack.normalize(obs, "k")
                norm.append((time.perf_counter() - t) * 1000)
        out[label] = {"median_ms": round(statistics.median(times), 2), "p95_ms": round(p95(times), 2), "bytes": size}
        if norm:
            out[label]["normalize_median_ms"] = round(statistics.median(norm), 3)
    return out


def measure_round(lab: KafkaLab, reads: int, here: Path) -> dict:
    """Wall and CPU time of one Kafka-protocol round of the lab's replication."""
    from collectors.kafka_offsets.collector import ReplicationClients, one_round
    from settings import config_from_dict

    cfg = config_from_dict({"failover_readiness": {"replications": [{
        "name": "bench", "source_alias": PRIMARY, "target_alias": DR, "primary": {"bootstrap": lab.bootstrap(PRIMARY)},
        "dr": {"bootstrap": lab.bootstrap(DR)}, "groups": ["bench-group"], "topics": [lab.topic]}]}})
    clients = ReplicationClients.open(cfg.failover_readiness.replications[0], here)
    walls, cpus, errors = [], [], 0
    try:
        one_round(clients, 5.0)  # the first round reads the checkpoints topic from its start
        for _ in range(reads):
            w, c = time.perf_counter(), time.process_time()
            exchanges = one_round(clients, 5.0)
            walls.append((time.perf_counter() - w) * 1000)
            cpus.append((time.process_time() - c) * 1000)
            errors += sum(1 for x in exchanges if not x.ok)
    finally:
        clients.close()
    return {"exchanges": len(exchanges), "wall_median_ms": round(statistics.median(walls), 2),
            "wall_p95_ms": round(p95(walls), 2), "cpu_median_ms": round(statistics.median(cpus), 2),
            "cpu_p95_ms": round(p95(cpus), 2), "errors": errors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reads", type=int, default=50)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
        lab = KafkaLab(Path(tmp) / "lab")
        try:
            result: dict = {"startup_s": lab.start()}
            produce(lab.bootstrap(PRIMARY), lab.topic, 3000)
            consume(lab.bootstrap(PRIMARY), lab.topic, "bench-group", 1000)
            time.sleep(5)  # MM2 mirrors, checkpoints the group
            result["jvms"] = {n: measure(lab, n, args.reads) for n in lab.names}
            result["kafka_protocol_round"] = measure_round(lab, args.reads, Path(tmp))
        finally:
            lab.stop()
    result["total_rss_mb"] = round(sum(j["rss_mb"] for j in result["jvms"].values()), 1)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
