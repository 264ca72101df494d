"""Adaptive destination sampling: broker-level facts every scrape, destinations in bounded batches.

A broker with thousands of queues turns one wildcard read into a multi-megabyte answer that takes
seconds to build and parse. Per target, `DestinationSampler` decides what the destination part of
each scrape is:

- while the broker has at most `limit` destinations: the pack's wildcard read (one request);
- above it: explicit reads of at most `limit` destinations per scrape — the busiest half by last
  known backlog (a growing backlog is what an SRE needs every scrape) plus a round-robin slice of
  the rest, so every destination is read at least every ⌈n / (limit/2)⌉ scrapes;
- every `rediscover_every` scrapes, a `search` of the pattern (names only, cheap) to learn new and
  removed destinations and to switch back to the wildcard when the broker shrank.

The sampler only chooses requests; the answers are normalized like any other, by the request each
item echoes, so recordings of sampled scrapes replay unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.base import as_float, iter_mbean_reads
from collectors.objectname import ObjectName, ObjectNameError, parse_object_name


def matches_pattern(pattern: ObjectName, name: ObjectName) -> bool:
    """JMX pattern semantics for the patterns packs use: same domain; every pattern property
    present with an equal value (or `*`); no other properties unless the pattern ends in `,*`."""
    if name.domain != pattern.domain:
        return False
    mine = name.as_dict()
    wanted = pattern.as_dict()
    if not pattern.list_pattern and set(mine) != set(wanted):
        return False
    return all(k in mine and (v == "*" or mine[k] == v) for k, v in wanted.items())


@dataclass
class DestinationSampler:
    wildcard: dict  # the pack's destination read (a pattern read)
    backlog_attribute: str | None
    limit: int = 500
    rediscover_every: int = 12
    names: list[str] = field(default_factory=list)  # known destination MBeans (canonical names)
    backlog: dict[str, float] = field(default_factory=dict)
    sampled: bool = False
    _cursor: int = 0
    _scrapes: int = 0

    def __post_init__(self) -> None:
        self.pattern = parse_object_name(self.wildcard["mbean"])

    def requests(self) -> list[dict]:
        """The destination part of the next scrape."""
        self._scrapes += 1
        if not self.sampled:
            return [self.wildcard]
        out: list[dict] = []
        if self._scrapes % self.rediscover_every == 0 or not self.names:
            out.append({"type": "search", "mbean": self.wildcard["mbean"]})
        return out + [self._read(n) for n in self._batch()]

    def _read(self, name: str) -> dict:
        req = {"type": "read", "mbean": name, "attribute": self.wildcard.get("attribute")}
        if "config" in self.wildcard:
            req["config"] = dict(self.wildcard["config"])
        return req

    def _batch(self) -> list[str]:
        hot_n = max(1, self.limit // 2)
        by_backlog = sorted(self.names, key=lambda n: (-self.backlog.get(n, 0.0), n))
        hot = by_backlog[:hot_n]
        rest = [n for n in self.names if n not in set(hot)]
        take = self.limit - len(hot)
        if not rest or take <= 0:
            return hot
        start = self._cursor % len(rest)
        cold = (rest[start:] + rest[:start])[:take]
        self._cursor = start + len(cold)
        return hot + cold

    def observe(self, requests: list[dict], response: list | None) -> None:
        """Learn destination names and backlogs from an answered scrape."""
        if not isinstance(response, list):
            return
        seen: dict[str, float] = {}
        searched: list[str] | None = None
        for i, item in enumerate(response):
            req = item.get("request") if isinstance(item, dict) and isinstance(item.get("request"), dict) else (
                requests[i] if i < len(requests) else {}
            )
            if isinstance(item, dict) and req.get("type") == "search" and item.get("status") == 200 and isinstance(item.get("value"), list):
                searched = [self._canonical(v) for v in item["value"]]
        for r in iter_mbean_reads(requests, response):
            if r.mbean.pattern or r.item_error or not matches_pattern(self.pattern, r.mbean):
                continue
            seen[r.mbean.canonical] = as_float(r.attributes.get(self.backlog_attribute or "")) or 0.0
        self.backlog.update(seen)
        if searched is not None:
            self.names = sorted(n for n in searched if n)
            self.backlog = {n: b for n, b in self.backlog.items() if n in set(self.names)}
        elif not self.sampled:
            self.names = sorted(seen)  # the wildcard answer lists them all
        if not self.sampled and len(self.names) > self.limit:
            self.sampled, self._scrapes = True, 0
        elif self.sampled and searched is not None and len(self.names) <= self.limit // 2:
            self.sampled = False  # the broker shrank: one wildcard read is cheap again

    @staticmethod
    def _canonical(name: object) -> str | None:
        try:
            return parse_object_name(str(name)).canonical
        except ObjectNameError:
            return None
