"""Several real Artemis classic-replication pairs in one cluster on 127.0.0.1: what Artemis' classic
quorum vote needs to be a vote. A replicating backup that loses its primary asks the cluster's
other primaries whether they still see it (PrimaryFailoverQuorumVote) and activates on a majority;
with one pair there is nobody to ask ("AMQ221083: ignoring quorum vote as max cluster size is 1",
docs/ARTEMIS_LAB.md fact 22), so only three pairs or more put the vote to work.

    cluster = ArtemisCluster(workdir, pairs=3)     # art-a/art-b, art-c/art-d, art-e/art-f
    cluster.start()                                # pair by pair: primary active, backup in sync
    cluster.pair_of("art-a").kill("art-a")         # every ArtemisPair fault and probe, per pair
    cluster.stop()

Each pair is an infra.artemis_lab.ArtemisPair (topology `replication`, its own folder, passwords
and ports) with `group-name` pair-N on both brokers, so each backup replicates its own primary;
every broker's static cluster connectors name all five others, and the cluster password is shared.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from infra.artemis_lab import ArtemisPair
from infra.processes import LabError

__all__ = ["ArtemisCluster"]


class ArtemisCluster:
    """`pairs` classic-replication pairs in one cluster; see the module doc."""

    def __init__(self, workdir: Path, pairs: int = 3, heap: str = "256m", **pair_options: Any) -> None:
        if pairs < 1:
            raise ValueError("pairs must be at least 1")
        self.workdir = Path(workdir).resolve()
        password = secrets.token_urlsafe(12)
        self.pairs: list[ArtemisPair] = []
        for i in range(pairs):
            names = (f"art-{chr(ord('a') + 2 * i)}", f"art-{chr(ord('b') + 2 * i)}")
            group = {n: {"group_name": f"pair-{i + 1}"} for n in names}
            self.pairs.append(ArtemisPair(self.workdir / f"pair-{i + 1}", "replication", names, heap=heap,
                                          cluster_password=password, ha_overrides=group, **pair_options))
        acceptors = {n: p.acceptor_ports[n] for p in self.pairs for n in p.names}
        for p in self.pairs:
            p.cluster_peers = tuple(port for n, port in acceptors.items() if n not in p.names)

    @property
    def names(self) -> list[str]:
        return [n for p in self.pairs for n in p.names]

    def pair_of(self, name: str) -> ArtemisPair:
        for p in self.pairs:
            if name in p.names:
                return p
        raise LabError(f"no broker {name!r} in this cluster (brokers: {', '.join(self.names)})")

    def group_of(self, name: str) -> str:
        return f"pair-{self.pairs.index(self.pair_of(name)) + 1}"

    def target(self, name: str, **extra: Any) -> dict:
        return self.pair_of(name).target(name, **extra)

    def start(self, timeout: float = 120) -> None:
        """Pair by pair (each: primary active, then backup synchronized); stops all if one fails."""
        try:
            for p in self.pairs:
                p.start(timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for p in reversed(self.pairs):
            p.stop()
