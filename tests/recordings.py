"""A committed recording (fixture config + captured exchanges) replayed into a fresh lakehouse and,
when a Spark session is given, analysed as `brokerscope analyze` does — the step most analysis tests
start from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from collectors.replay import replay
from lakehouse.store import Lakehouse
from settings import config_from_dict


def fixture_config(config_yaml: Path, lakehouse: Path | str):
    """The fixture's brokerscope.yaml with its lakehouse pointed at `lakehouse`."""
    data = yaml.safe_load(Path(config_yaml).read_text())
    data["lakehouse"] = str(lakehouse)
    return config_from_dict(data)


@dataclass
class Replayed:
    cfg: Any
    lh: Lakehouse
    result: Any  # collectors.replay's result: envelopes, new_rows
    counts: dict | None  # analyze()'s table counts, None when not analysed


def replayed(config_yaml: Path, recording: Path, lakehouse: Path, spark=None,
             before_analysis: Callable[[Lakehouse], None] | None = None) -> Replayed:
    """`recording` replayed with `config_yaml` into `lakehouse`, then (with `spark`) analysed;
    `before_analysis` seeds tables a test needs that no recording carries (e.g. GC findings)."""
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    cfg = fixture_config(config_yaml, lakehouse)
    result = replay(cfg, recording)
    lh = Lakehouse(cfg.lakehouse_root())
    if before_analysis is not None:
        before_analysis(lh)
    counts = analyze(cfg, spark=spark) if spark is not None else None
    return Replayed(cfg, lh, result, counts)
