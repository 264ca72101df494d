"""The Kafka lab's start-up time and memory, and the collector's cost per Kafka target (issue P13).

    python bench/bench_kafka_lab.py [--reads 50] [--json FILE]

Starts infra.kafka_lab (3 combined KRaft nodes, a DR node, MirrorMaker 2), produces 3000 messages
and consumes 1000 in a group, then per JVM: its resident memory (VmRSS), the MBeans it registers
(Jolokia ``search *:*``), and ``--reads`` times each of (a) the Kafka pack's bulk read (what the
collector sends every scrape) and (b) one wildcard read of every ``kafka.*`` MBean (what a
read-everything exporter fetches): wall time per request (median, p95), response bytes, and the
pack's normalisation time in this process. Everything is stopped by PID at the end.
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
from infra.kafka_lab import PRIMARY, KafkaLab  # noqa: E402
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
        finally:
            lab.stop()
    result["total_rss_mb"] = round(sum(j["rss_mb"] for j in result["jvms"].values()), 1)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
