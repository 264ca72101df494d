"""Registry of broker packs by kind."""

from __future__ import annotations

from collectors.activemq import ActiveMQPack
from collectors.artemis import ArtemisPack
from collectors.base import BrokerPack
from collectors.kafka import KafkaPack
from collectors.weblogic import WebLogicPack

PACKS: dict[str, BrokerPack] = {p.kind: p for p in (ActiveMQPack(), WebLogicPack(), KafkaPack(), ArtemisPack())}


def pack_for(kind: str) -> BrokerPack:
    try:
        return PACKS[kind]
    except KeyError:
        raise NotImplementedError(
            f"no collector pack for kind {kind!r} yet (available: {', '.join(sorted(PACKS))})"
        ) from None
