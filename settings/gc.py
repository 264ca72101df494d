"""The top-level `gc:` section and its per-target overrides: GC finding thresholds and tailing."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from settings.base import Duration, Strict


class GcThresholds(Strict):
    """Per-target overrides of the GC finding thresholds (unset: the top-level `gc:` value)."""

    zk_session_ms: int | None = Field(default=None, gt=0)
    connection_ttl_ms: int | None = Field(default=None, gt=0)


class GcSettings(Strict):
    """Top-level `gc:` section: thresholds of the GC findings and how GC logs are tailed."""

    zk_session_ms: int = Field(default=18000, gt=0)  # ZooKeeper session-ms: pauses ≥ ⅓ of it lose sessions
    connection_ttl_ms: int = Field(default=60000, gt=0)  # Artemis connection-ttl
    time_share_window: Duration = 60.0  # GC time share is measured over windows this long
    time_share_pct: float = Field(default=10.0, gt=0, le=100)  # … and reported above this share
    poll_interval: Duration = 1.0  # how often the tailer looks for new lines
    max_line_bytes: int = Field(default=65536, ge=1024)  # longer lines are rejected (overlong)
    state_file: Path | None = None  # tail offsets; default <lakehouse>/_state/gc_tail.json
