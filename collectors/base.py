"""What every broker pack shares: the observation envelope, the walk over Jolokia answers, the
pack interface and registry.

A pack says which requests to send for a target and turns one observation (requests + raw
response) into silver rows. Packs interpret each response item by the request it *echoes*
(`item["request"]`), falling back to the request at the same position, so recordings made by other
pollers replay too.
"""

from __future__ import annotations

import hashlib
import json
import math
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator, Protocol

from collectors.jolokia import error_marker, item_error
from collectors.objectname import ObjectName, ObjectNameError, parse_object_name


@dataclass(frozen=True)
class Observation:
    """One exchange with one target, as stored in bronze (and in a recording)."""

    ts: datetime  # UTC, ms precision
    target: str
    kind: str
    group: str | None
    requests: list[dict]
    response: Any  # parsed JSON body or None
    error: str | None
    elapsed_ms: float | None = None

    @property
    def answered(self) -> bool:
        return self.error is None and isinstance(self.response, list) and self.malformed is None

    @property
    def malformed(self) -> str | None:
        """Why a JSON array is no Jolokia answer (an item that is not an object), else None."""
        if isinstance(self.response, list):
            bad = [type(i).__name__ for i in self.response if not isinstance(i, dict)]
            if bad:
                return (f"{self.target}: {len(bad)} of {len(self.response)} answer items are not JSON objects "
                        f"(a {bad[0]}); a Jolokia agent answers each request with an object — check the URL")
        return None


@dataclass
class MBeanRead:
    """Attributes of one MBean from one response item (or the item's error)."""

    mbean: ObjectName
    attributes: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # attribute → error (ignoreErrors markers)
    item_error: str | None = None  # the whole item failed (404 / 500 …)
    status: int = 200
    requested: tuple[str, ...] | None = None  # attributes the request asked for (None: all)


def _attr_list(attr: Any) -> list[str] | None:
    if attr is None:
        return None
    if isinstance(attr, str):
        return [attr]
    if not isinstance(attr, (list, tuple)):  # an echo of another shape: which attributes is unknown
        return None
    return [a for a in attr if isinstance(a, str)]


def iter_mbean_reads(requests: list[dict], response: list) -> Iterator[MBeanRead]:
    """Flatten read answers into one MBeanRead per MBean. Non-read items are skipped."""
    for i, item in enumerate(response):
        if not isinstance(item, dict):
            continue
        req = item.get("request") if isinstance(item.get("request"), dict) else None
        if req is None and i < len(requests):
            req = requests[i]
        if not req or req.get("type") != "read" or not isinstance(req.get("mbean"), str):
            continue
        try:
            name = parse_object_name(req["mbean"])
        except ObjectNameError:
            continue
        attrs = _attr_list(req.get("attribute"))
        asked = tuple(attrs) if attrs is not None else None
        err = item_error(item)
        if err is not None:
            yield MBeanRead(name, item_error=err, status=as_int(item.get("status")) or 0, requested=asked)
            continue
        value = item.get("value")
        if name.pattern:
            if not isinstance(value, dict):
                continue
            for mbean_name, mbean_value in value.items():
                try:
                    mbean = parse_object_name(mbean_name)
                except ObjectNameError:
                    continue
                yield _split_values(mbean, mbean_value if isinstance(mbean_value, dict) else {}, asked)
        elif attrs is not None and len(attrs) == 1 and isinstance(req.get("attribute"), str):
            yield _split_values(name, {attrs[0]: value}, asked)
        elif isinstance(value, dict):
            yield _split_values(name, value, asked)


def _split_values(mbean: ObjectName, values: dict, requested: tuple[str, ...] | None) -> MBeanRead:
    read = MBeanRead(mbean, requested=requested)
    for k, v in values.items():
        marker = error_marker(v)
        if marker is not None:
            read.errors[k] = marker
        else:
            read.attributes[k] = v
    return read


# What as_int/as_float/as_bool refused in the current normalize (collectors.quarantine turns them
# into reasons); None outside one: nobody is listening.
REFUSED: ContextVar[list[tuple[Any, str]] | None] = ContextVar("refused", default=None)


def _refuse(v: Any, why: str) -> None:
    heard = REFUSED.get()
    if heard is not None:
        heard.append((v, why))


def as_int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: ±inf
        _refuse(v, "not a finite number" if isinstance(v, float) else f"not an integer ({type(v).__name__})")
        return None


def as_float(v: Any) -> float | None:
    """A finite number, or None (empty metric windows report NaN; Jolokia may send longs as strings)."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond any double
        _refuse(v, f"not a number ({type(v).__name__})")
        return None
    if math.isinf(f):  # NaN is routine (an empty window), ±inf is not
        _refuse(v, "not a finite number")
    return f if math.isfinite(f) else None


def as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    if v is not None:
        _refuse(v, f"expected true/false, got {type(v).__name__}")
    return None


@dataclass
class Rows:
    """Silver rows produced from one observation, by table name (see lakehouse/tables.py)."""

    broker_state: list[dict] = field(default_factory=list)
    destination_stats: list[dict] = field(default_factory=list)
    replication_stats: list[dict] = field(default_factory=list)

    def get(self, table: str) -> list[dict]:
        return getattr(self, table)


class BrokerPack(Protocol):
    """One broker kind: which Jolokia requests to send, and how to read one observation.

    `tables` names the silver tables `normalize` can fill (the job skips the rest).
    The scraper sends `requests()` plus `destination_request()` (or, for brokers with very many
    destinations, bounded batches of explicit reads of the same attributes).
    `exclusive_roles`: at most one instance of a group should be active (live/backup pairs, a
    Kafka controller). False for kinds whose members are all active by design (a WebLogic
    cluster): then two active members are no split brain, and an outage is per member."""

    kind: str
    tables: tuple[str, ...]
    exclusive_roles: bool
    backlog_attribute: str | None  # per-destination backlog, to sample the busiest first

    def requests(self, broker_name: str = "*") -> list[dict]:
        """Broker-level reads, sent every scrape."""
        ...

    def destination_request(self, broker_name: str = "*") -> dict | None:
        """The wildcard read of all destinations (None: the kind has none)."""
        ...

    def normalize(self, obs: Observation, obs_key: str) -> Rows: ...


def scrape_requests(pack: BrokerPack, broker_name: str = "*") -> list[dict]:
    """What one full scrape of a target sends: the broker-level reads, then the destination read."""
    dest = pack.destination_request(broker_name)
    return pack.requests(broker_name) + ([dest] if dest else [])


def base_row(obs: Observation, obs_key: str, instance: str | None = None) -> dict:
    """The columns every silver row of one observation shares."""
    return {
        "obs_key": obs_key,
        "ts": obs.ts,
        "obs_date": obs.ts.strftime("%Y-%m-%d"),
        "kind": obs.kind,
        "group_name": obs.group or obs.target,
        "instance": instance or obs.target,
    }


def collector_health_row(obs: Observation, obs_key: str, error_kind: str | None) -> dict:
    """How the scrape itself went: answered, items ok/failed, the first item errors."""
    items = obs.response if isinstance(obs.response, list) else []
    # an item that is not an object, or whose status is not the number 200, did not answer
    failed = [i for i in items if not isinstance(i, dict) or i.get("status") != 200]
    row = base_row(obs, obs_key)
    row.pop("group_name")
    row.update(
        {
            "target": obs.target,
            "group_name": obs.group,
            "answered": obs.answered,
            "error_kind": (error_kind or ("http" if obs.malformed else None)) if not obs.answered else None,
            "error": obs.error or obs.malformed,
            "elapsed_ms": obs.elapsed_ms,
            "items": len(items),
            "items_ok": len(items) - len(failed),
            "items_failed": len(failed),
            "item_errors": "; ".join(sorted({item_error(i) or "" if isinstance(i, dict) else f"an item that is not an object "
                                             f"({type(i).__name__})" for i in failed}))[:2000] or None,
        }
    )
    return row


def broker_clock_skew_s(obs: Observation) -> float | None:
    """The broker's clock minus ours, in seconds: the median Jolokia item `timestamp` (the agent's
    clock, whole epoch seconds) against the observation time (ours, when the request was sent).
    The answer comes within `elapsed_ms`, and seconds are truncated, so agreement reads as a value
    in [-1, elapsed]. None without usable timestamps. The spine turns these samples into a running
    estimate (collector_health.clock_skew_s) and moves observations by it only when
    `analysis.clock_skew.correct` is set (several collectors with differing clocks)."""
    stamps = sorted(
        float(i["timestamp"]) for i in (obs.response if isinstance(obs.response, list) else [])
        if isinstance(i, dict) and isinstance(i.get("timestamp"), (int, float)) and not isinstance(i["timestamp"], bool)
        and math.isfinite(i["timestamp"])
    )
    if not stamps:
        return None
    return stamps[len(stamps) // 2] - obs.ts.timestamp()


def unanswered_state_row(obs: Observation, obs_key: str) -> dict:
    """A scrape without usable answer: indeterminate, never 'down'."""
    row = base_row(obs, obs_key)
    row.update(
        {
            "reachable": False,
            "active": None,
            "role": "unknown",
            "error": obs.error or obs.malformed or "no JSON array in response",
            "scrape_ms": obs.elapsed_ms,
        }
    )
    return row


# --- the observation envelope (recordings and bronze share it) -----------------------------------


def format_ts(ts: datetime) -> str:
    """RFC 3339, UTC, millisecond precision: 2026-11-21T22:32:33.012Z."""
    ts = ts.astimezone(timezone.utc)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def parse_ts(text: str) -> datetime:
    t = text.strip()
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    ts = datetime.fromisoformat(t)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    ts = ts.astimezone(timezone.utc)
    return ts.replace(microsecond=(ts.microsecond // 1000) * 1000)


def ms_floor(epoch_s: float) -> datetime:
    """Epoch seconds → UTC datetime truncated to ms (what a recording can represent)."""
    ms = int(epoch_s * 1000)
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def obs_key(source: str, target: str, ts: datetime, requests: list[dict]) -> str:
    h = hashlib.sha256()
    h.update(f"{source}\x00{target}\x00{format_ts(ts)}\x00".encode())
    h.update(json.dumps(requests, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()[:32]
