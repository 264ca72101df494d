"""`brokerscope replay`: ingest a recording exactly as if it had been scraped live."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from collectors.gc.ingest import SOURCE as GC_SOURCE
from collectors.gc.ingest import bronze_rows as gc_bronze_rows
from collectors.gc.ingest import validate as gc_validate
from collectors.kafka_offsets import SOURCES as KAFKA_SOURCES
from collectors.kafka_offsets import bronze_kafka_row, validate_kafka_envelope
from collectors.recording import ReadReport, bronze_row, read_envelopes
from collectors.zookeeper import SOURCES as ZK_SOURCES
from collectors.zookeeper import bronze_zk_row, validate_zk_envelope
from lakehouse.store import Lakehouse
from settings import Config, ConfigError

BATCH = 5000


@dataclass
class ReplayResult:
    envelopes: int = 0
    new_rows: int = 0
    unknown_targets: dict[str, int] = field(default_factory=dict)
    report: ReadReport = field(default_factory=ReadReport)
    gc_envelopes: int = 0  # source "gc.log": batches of GC log lines → bronze_gc_lines
    gc_new_rows: int = 0
    zk_envelopes: int = 0  # sources zk.4lw, zk.admin, zk.znode → bronze_zk
    zk_new_rows: int = 0
    kafka_envelopes: int = 0  # sources kafka.* (failover readiness) → bronze_kafka
    kafka_new_rows: int = 0


def replay(config: Config, path: str | os.PathLike, lakehouse: Lakehouse | None = None, progress: bool = False) -> ReplayResult:
    lh = lakehouse or Lakehouse(config.lakehouse_root())
    targets = {t.name: t for t in config.targets}
    res = ReplayResult()
    batch: list[dict] = []
    collector = f"replay:{Path(path).name}"
    gc_batch: list[dict] = []
    zk_batch: list[dict] = []
    kafka_batch: list[dict] = []
    for env in read_envelopes(path, res.report):
        if env["source"] not in ("jolokia", GC_SOURCE, *ZK_SOURCES, *KAFKA_SOURCES):
            res.report.skipped_sources += 1  # sources of a newer brokerscope
            continue
        if env["source"] in KAFKA_SOURCES:  # their target is a replication (failover_readiness), not a target
            rep = config.replication(env["target"])
            if rep is None:
                res.unknown_targets[env["target"]] = res.unknown_targets.get(env["target"], 0) + 1
                continue
            problem = validate_kafka_envelope(env)
            if problem:
                res.report.bad_lines.append((res.report.lines, problem))
                continue
            res.kafka_envelopes += 1
            kafka_batch.append(bronze_kafka_row(env, rep.cluster_group, collector))
            if len(kafka_batch) >= BATCH:
                res.kafka_new_rows += lh.append_new("bronze_kafka", kafka_batch)
                kafka_batch = []
            continue
        t = targets.get(env["target"])
        if t is None:
            res.unknown_targets[env["target"]] = res.unknown_targets.get(env["target"], 0) + 1
            continue
        if env["source"] == GC_SOURCE:
            problem = gc_validate(env)
            if problem:  # read_envelopes counts lines as it yields: report.lines is this one's
                res.report.bad_lines.append((res.report.lines, problem))
                continue
            res.gc_envelopes += 1
            gc_batch.extend(gc_bronze_rows(env, collector))
            if len(gc_batch) >= BATCH:
                res.gc_new_rows += lh.append_new("bronze_gc_lines", gc_batch)
                gc_batch = []
            continue
        if env["source"] in ZK_SOURCES:
            problem = validate_zk_envelope(env)
            if problem:
                res.report.bad_lines.append((res.report.lines, problem))
                continue
            res.zk_envelopes += 1
            zk_batch.append(bronze_zk_row(env, t.kind, t.group, collector))
            if len(zk_batch) >= BATCH:
                res.zk_new_rows += lh.append_new("bronze_zk", zk_batch)
                zk_batch = []
            continue
        res.envelopes += 1
        batch.append(bronze_row(env, t.kind, t.group, t.url, collector))
        if len(batch) >= BATCH:
            res.new_rows += lh.append_new("bronze_jolokia", batch)
            batch = []
            if progress:
                sys.stderr.write(f"\rreplayed {res.envelopes} exchanges")
    if batch:
        res.new_rows += lh.append_new("bronze_jolokia", batch)
    if gc_batch:
        res.gc_new_rows += lh.append_new("bronze_gc_lines", gc_batch)
    if zk_batch:
        res.zk_new_rows += lh.append_new("bronze_zk", zk_batch)
    if kafka_batch:
        res.kafka_new_rows += lh.append_new("bronze_kafka", kafka_batch)
    if progress:
        sys.stderr.write(f"\rreplayed {res.envelopes} exchanges, {res.new_rows} new bronze rows\n")
    if res.unknown_targets and not res.envelopes and not res.gc_envelopes and not res.zk_envelopes and not res.kafka_envelopes:
        raise ConfigError(
            f"none of the recording's targets ({', '.join(sorted(res.unknown_targets))}) is in the config; "
            "add them under `targets:` with their kind and group (or, for kafka.* exchanges, under "
            "`failover_readiness.replications:`) so replay knows how to read them"
        )
    return res
