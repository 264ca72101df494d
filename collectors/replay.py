"""`brokerscope replay`: ingest a recording exactly as if it had been scraped live."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from brokerscope.config import Config, ConfigError
from collectors.recording import ReadReport, bronze_row, read_envelopes
from lakehouse.store import Lakehouse

BATCH = 5000


@dataclass
class ReplayResult:
    envelopes: int = 0
    new_rows: int = 0
    unknown_targets: dict[str, int] = field(default_factory=dict)
    report: ReadReport = field(default_factory=ReadReport)


def replay(config: Config, path: str | os.PathLike, lakehouse: Lakehouse | None = None, progress: bool = False) -> ReplayResult:
    lh = lakehouse or Lakehouse(config.lakehouse_root())
    targets = {t.name: t for t in config.targets}
    res = ReplayResult()
    batch: list[dict] = []
    collector = f"replay:{Path(path).name}"
    for env in read_envelopes(path, res.report):
        if env["source"] != "jolokia":
            res.report.skipped_sources += 1  # later sources (gc.log, zk.*) have their own ingesters
            continue
        t = targets.get(env["target"])
        if t is None:
            res.unknown_targets[env["target"]] = res.unknown_targets.get(env["target"], 0) + 1
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
    if progress:
        sys.stderr.write(f"\rreplayed {res.envelopes} exchanges, {res.new_rows} new bronze rows\n")
    if res.unknown_targets and not res.envelopes:
        raise ConfigError(
            f"none of the recording's targets ({', '.join(sorted(res.unknown_targets))}) is in the config; "
            "add them under `targets:` with their kind and group so replay knows how to read them"
        )
    return res
