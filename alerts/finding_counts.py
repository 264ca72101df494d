"""Counters of findings that only go up, as Prometheus counters must.

The gold tables are not append-only logs: a re-analysis rewrites rows, findings are merged, old
partitions can be dropped. A count of rows can fall, and Prometheus reads a fall of a counter as a
restart of the process (rate() and increase() then count the whole new value again). So a counter
here counts distinct finding ids seen by this process, per label set: a finding counts once, the
first time it is seen, and never leaves the count until the process restarts (a real restart, at
which the count starts again from the findings present)."""

from __future__ import annotations

from collections.abc import Callable, Iterable


class FindingTally:
    def __init__(self) -> None:
        self._seen: dict[tuple, set[str]] = {}

    def count(self, rows: Iterable[dict], labels: Callable[[dict], tuple], id_column: str) -> list[tuple[tuple, int]]:
        """(label values, findings seen so far) for every label set ever seen, after adding rows."""
        for r in rows:
            self._seen.setdefault(labels(r), set()).add(r[id_column])
        return [(key, len(ids)) for key, ids in self._seen.items()]


class FindingTallies:
    """One FindingTally per counter family (alerts/exporter.py metric_families)."""

    def __init__(self) -> None:
        self._by_family: dict[str, FindingTally] = {}

    def __getitem__(self, family: str) -> FindingTally:
        return self._by_family.setdefault(family, FindingTally())
