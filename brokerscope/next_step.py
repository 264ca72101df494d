"""Which step is really missing before a command can answer: the lakehouse folder, the bronze rows
(collect or replay), or the analysis. Read-only: it looks at folders and table logs, runs nothing."""

from __future__ import annotations

from pathlib import Path

from lakehouse.store import Lakehouse
from lakehouse.tables import TABLES
from settings.config import Config

RECORDING_GLOBS = ("*.jsonl", "*.jsonl.gz")


class MissingStep(Exception):
    """A command cannot answer yet: the message names the step to run first (or the name to fix)."""


def recordings_near(cfg: Config) -> list[Path]:
    """Recordings in the config file's folder (a `brokerscope simulate` folder holds one)."""
    if cfg.source_path is None:
        return []
    folder = cfg.source_path.parent
    return sorted(p for g in RECORDING_GLOBS for p in folder.glob(g))


def collect_or_replay_hint(cfg: Config, config_arg: str) -> str:
    near = recordings_near(cfg)
    if near:
        return f"run `brokerscope replay --config {config_arg} {near[0]}` (the recording next to the config)"
    return (f"run `brokerscope collect --config {config_arg}` (live) or "
            f"`brokerscope replay --config {config_arg} FILE` (a recording)")


def bronze_tables(lh: Lakehouse) -> list[str]:
    return [t.name for t in TABLES.values() if t.layer == "bronze" and lh.exists(t.name)]


def missing_before_analysis(cfg: Config, config_arg: str) -> str | None:
    """Why `analyze` has nothing to work on (no lakehouse folder, no bronze rows), or None."""
    root = cfg.lakehouse_root()
    if "://" not in root and not Path(root).is_dir():
        return (f"the lakehouse folder {root} does not exist (key `lakehouse` in {config_arg}): nothing was "
                f"collected or replayed into it yet; {collect_or_replay_hint(cfg, config_arg)}")
    if not bronze_tables(Lakehouse(root)):
        return (f"the lakehouse {root} has no bronze tables: nothing was collected or replayed into it yet; "
                f"{collect_or_replay_hint(cfg, config_arg)}")
    return None


def missing_gold(cfg: Config, config_arg: str, table: str) -> str | None:
    """Why the gold `table` is not there: the first missing step, or None when it exists."""
    before = missing_before_analysis(cfg, config_arg)
    if before:
        return before
    lh = Lakehouse(cfg.lakehouse_root())
    if lh.exists(table):
        return None
    return (f"no gold table {table} under {cfg.lakehouse_root()} yet (bronze rows are there); "
            f"run `brokerscope analyze --config {config_arg}`")
