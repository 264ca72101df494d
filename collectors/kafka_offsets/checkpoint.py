"""MirrorMaker 2's Checkpoint records, decoded the way connect-mirror-client writes them (pure).

A checkpoint says: consumer group G had committed `upstream_offset` on partition P of the source
topic, and MirrorMaker 2 translated it to `downstream_offset` on the replicated topic (named as on
the target cluster, e.g. `primary.orders`). MM2 writes them to `<source>.checkpoints.internal` on
the target cluster, only when one changes (a group that commits nothing new gets none).

Wire format (Kafka's own protocol types, big-endian; Checkpoint.java, connect-mirror-client):
- key: STRING group, STRING topic, INT32 partition — no version;
- value: INT16 version (0), then for version 0: INT64 upstreamOffset, INT64 offset (downstream),
  STRING metadata.
A STRING is an INT16 length followed by that many bytes of UTF-8.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SUPPORTED_VERSIONS = (0,)


class CheckpointError(ValueError):
    """Bytes that are not a Checkpoint record of a known version; says what was found."""


@dataclass(frozen=True)
class CheckpointKey:
    group: str
    topic: str  # the replicated topic's name on the target cluster
    partition: int


@dataclass(frozen=True)
class CheckpointValue:
    version: int
    upstream_offset: int  # the group's committed offset on the source cluster
    downstream_offset: int  # what MM2 translated it to on the target cluster
    metadata: str


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = bytes(data), 0, what

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CheckpointError(f"{self.what}: {len(self.data)} bytes end at byte {self.pos}, "
                                  f"{size} more expected — not a MirrorMaker 2 checkpoint")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.take(">h")
        if n < 0:
            raise CheckpointError(f"{self.what}: a string of length {n} (null) where MM2 writes text")
        if self.pos + n > len(self.data):
            raise CheckpointError(f"{self.what}: a string of {n} bytes but only {len(self.data) - self.pos} left")
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CheckpointError(f"{self.what}: a string that is not UTF-8 ({e.reason})") from None

    def end(self) -> None:
        if self.pos != len(self.data):
            raise CheckpointError(f"{self.what}: {len(self.data) - self.pos} bytes left over after the record")


def decode_key(data: bytes) -> CheckpointKey:
    r = _Reader(data, "checkpoint key")
    key = CheckpointKey(r.string(), r.string(), r.take(">i"))
    r.end()
    return key


def decode_value(data: bytes) -> CheckpointValue:
    r = _Reader(data, "checkpoint value")
    version = r.take(">h")
    if version not in SUPPORTED_VERSIONS:
        raise CheckpointError(f"checkpoint value of version {version}; this brokerscope reads version(s) "
                              f"{', '.join(map(str, SUPPORTED_VERSIONS))} (a newer MirrorMaker 2?)")
    value = CheckpointValue(version, r.take(">q"), r.take(">q"), r.string())
    r.end()
    return value
