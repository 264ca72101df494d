"""When a target is scraped: a regular grid a little shorter than the interval, so its phase
sweeps through the second.

Jolokia stamps every answer with the broker JVM's clock in whole seconds. On a grid of exactly
`interval` (1 s, 5 s, …) a collector would always read that clock at the same sub-second phase,
so the clock-skew estimate (analysis/clock_skew.py) would carry a constant error of up to
±0.5 s. Here scrape k of a target is due at ``start + k * period(interval)`` with the period
shorter than the interval by 1/PHASE_STEPS of min(1 s, interval): the phase walks backwards
through the broker's second, in steps of at most 1/PHASE_STEPS s within 2 × PHASE_STEPS scrapes
(within PHASE_STEPS for whole-second intervals). No gap between two
scrapes exceeds the configured interval (a jittered or swept offset around an exact grid would
stretch some gaps beyond it, and with them the role-interval boundaries); the price is
1/PHASE_STEPS more scrapes (3.4 % at 1 s). The simulator (brokerscope/simulate) schedules its
collector with the same function.
"""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator

PHASE_STEPS = 29  # two sweeps fit the skew estimate's 60-sample window


def period(interval: float) -> float:
    """Seconds between two scrapes of a target configured to be scraped every `interval`."""
    return interval - min(1.0, interval) / PHASE_STEPS


def scrape_due(start: float, k: int, interval: float) -> float:
    """Due time of scrape k (seconds, same clock as `start`)."""
    return start + k * period(interval)


async def ticks(interval: float, stop: asyncio.Event, t_end: float | None) -> AsyncIterator[float]:
    """Tick times (epoch s) every `interval` from now until `stop` is set or `t_end`; a late tick
    skips ahead instead of bursting. The rounds of the non-Jolokia collectors (ZooKeeper, Kafka
    protocol) run on it: every member of a round is stamped with its tick."""
    next_at = time.time()
    while not stop.is_set():
        if t_end is not None and next_at >= t_end:
            return
        delay = next_at - time.time()
        if delay > 0:
            try:
                await asyncio.wait_for(stop.wait(), timeout=delay)
                return
            except asyncio.TimeoutError:
                pass
        yield next_at
        next_at += interval
        if next_at < time.time():
            next_at = time.time()
