"""The time zone the incident timeline is shown in: UTC (the default) or a named IANA zone (the
browser's own, on request). Plotly has no time zones, so a figure's positions are wall-clock times
in the zone and every label names the zone; everything stored and queried stays UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from dashboards.data import utc


@dataclass(frozen=True)
class Clock:
    zone: tzinfo = timezone.utc
    name: str = "UTC"

    @classmethod
    def named(cls, name: str | None) -> "Clock":
        """The clock of an IANA zone name as browsers report it ('Europe/Berlin'); UTC for None,
        '', 'UTC' or a name this machine's zone database does not know (never a guess)."""
        if not name or name.upper() in ("UTC", "ETC/UTC", "Z"):
            return UTC_CLOCK
        try:
            return cls(ZoneInfo(name), name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            return UTC_CLOCK

    @property
    def is_utc(self) -> bool:
        return self.name == "UTC"

    def wall(self, ts: datetime | None) -> datetime | None:
        """The wall-clock time in this zone, naive (a Plotly position)."""
        return None if ts is None else utc(ts).astimezone(self.zone).replace(tzinfo=None)

    def walls(self, stamps: np.ndarray) -> np.ndarray:
        """datetime64 UTC values → wall-clock datetime64[us] in this zone (vectorized)."""
        if self.is_utc or len(stamps) == 0:
            return stamps
        import pandas as pd  # the dashboard's server already has it loaded

        idx = pd.DatetimeIndex(stamps).tz_localize("UTC").tz_convert(self.zone).tz_localize(None)
        return idx.to_numpy(dtype="datetime64[us]")

    def to_utc(self, wall: datetime) -> datetime:
        """A wall-clock time of this zone (a Plotly axis value, a typed time without offset) → UTC."""
        return wall.replace(tzinfo=self.zone).astimezone(timezone.utc) if wall.tzinfo is None else utc(wall)

    def stamp(self, ts: datetime | None) -> str:
        if ts is None:
            return "?"
        w = self.wall(ts)
        return w.strftime("%Y-%m-%d %H:%M:%S") + f".{w.microsecond // 1000:03d} {self.name}"


UTC_CLOCK = Clock()
