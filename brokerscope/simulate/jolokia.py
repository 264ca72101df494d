"""A simulated Jolokia agent: answers the bulk reads a pack sends from a registry of MBeans,
following the protocol facts of shared/reference/CATALOG.md §6 only.

* bulk answer in request order; item `value`, `status`, `timestamp` (epoch seconds), `request` echo;
* pattern read → value keyed by MBean name → attribute → value; requested attributes an MBean lacks
  are silently skipped; no matching MBean → 404 `InstanceNotFoundException`; matched but no
  attribute → 404 `AttributeNotFoundException` (§6.3, §6.4);
* a getter that throws (`Throws`, e.g. Artemis checkStarted, ActiveMQ safeGetBroker) fails the item
  with 500, or with `ignoreErrors` becomes a marker: string ≤2.4, object ≥2.5 (§6.4);
* Jolokia 1.x: keys canonical (properties sorted), request echoed with the canonical MBean name and
  without `config`, 404 text "… found for reading attributes" and `error` = "<class> : <message>"
  (the real jolokia-core 1.7.1 answers in tests/fixtures/activemq_bulk_master_slave.json);
* Jolokia 2.x ≥2.5: keys as registered (canonicalNaming false), a pattern echoed canonical and a name
  as sent, error items with `error_type_jmx` and `.error: true` (§6.2), 404 text "… found for READ
  request" (the real 2.6.0 JVM agent's answers for ActiveMQ 5.17: tests/test_lab.py).

The kind renderers (brokerscope.simulate.kinds) fill the registry; the envelope is the P1 recording
envelope (collectors.recording.envelope), so a simulated exchange replays through the same code.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from collectors.objectname import parse_object_name
from collectors.recording import envelope

NOT_FOUND = "javax.management.InstanceNotFoundException"
ATTR_NOT_FOUND = "javax.management.AttributeNotFoundException"
RUNTIME_MBEAN_EXCEPTION = "javax.management.RuntimeMBeanException"


class Throws:
    """A getter that throws (e.g. a broker that is not started yet)."""

    def __init__(self, message: str, cls: str = "java.lang.IllegalStateException"):
        self.message, self.cls = message, cls


@dataclass
class MBean:
    """One registered MBean: properties as written (quoted where the broker quotes) in registration order."""

    domain: str
    props: list[tuple[str, str]]
    attributes: dict[str, Any]

    def name(self, canonical: bool = False) -> str:
        items = sorted(self.props) if canonical else self.props
        return f"{self.domain}:" + ",".join(f"{k}={v}" for k, v in items)

    def unquoted(self) -> dict[str, str]:
        return parse_object_name(self.name()).as_dict()


def quoted(value: str) -> str:
    """ObjectName.quote(): what Artemis does to every value (CATALOG §1.1)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Jolokia1:
    """jolokia-core 1.x (ActiveMQ ≤5.19, Artemis console ≤2.39)."""

    generation = 1
    canonical = True

    def error(self, status: int, cls: str, message: str, jmx: str | None = None) -> dict:
        return {"error_type": cls, "error": f"{cls} : {message}", "status": status}

    def marker(self, t: Throws) -> Any:
        return f"ERROR: {t.cls}: {t.message} (class {RUNTIME_MBEAN_EXCEPTION})"

    def no_pattern_match(self, pattern: str) -> str:
        return f"No MBean with pattern {pattern} found for reading attributes"

    def echo(self, request: dict) -> dict:
        return {"mbean": canonical_request_name(request["mbean"]), "attribute": request["attribute"], "type": "read"}


class Jolokia2:
    """Jolokia 2.x ≥2.5 defaults (ActiveMQ 6.2+, Artemis console ≥2.40)."""

    generation = 2
    canonical = False

    def error(self, status: int, cls: str, message: str, jmx: str | None = None) -> dict:
        item = {"error_type": cls, "error": message, "status": status, ".error": True}
        if jmx:
            item["error_type_jmx"] = jmx
        return item

    def marker(self, t: Throws) -> Any:
        return {".error": True, "error_type": RUNTIME_MBEAN_EXCEPTION, "error_type_jmx": RUNTIME_MBEAN_EXCEPTION,
                "error": f"{t.cls}: {t.message}"}

    def no_pattern_match(self, pattern: str) -> str:
        return f"No MBean with pattern {pattern} found for READ request"

    def echo(self, request: dict) -> dict:
        # a pattern is echoed canonical, a name as sent (the 2.6.0 JVM agent and Artemis' 2.1.1 console alike)
        name = request["mbean"]
        return {"mbean": canonical_request_name(name) if parse_object_name(name).pattern else name,
                "attribute": request["attribute"], "type": "read"}


DIALECTS = {1: Jolokia1, 2: Jolokia2}


def dialect(generation: int):
    try:
        return DIALECTS[generation]()
    except KeyError:
        raise ValueError(f"Jolokia generation {generation!r} is not simulated (use 1 or 2)") from None


def canonical_request_name(mbean: str) -> str:
    """``mbean`` with its properties sorted, quotes kept (how Jolokia echoes a request's name)."""
    name = parse_object_name(mbean)
    props = ",".join(f"{k}={v}" for k, v in sorted(written_props(mbean)))
    return f"{name.domain}:{props}" + (",*" if name.list_pattern else "")


def written_props(name: str) -> list[tuple[str, str]]:
    """Properties exactly as written (quotes kept), without a trailing `*`."""
    rest = name.split(":", 1)[1]
    out, depth, cur = [], False, ""
    for ch in rest + ",":
        if ch == '"':
            depth = not depth
        if ch == "," and not depth:
            if cur and cur != "*":
                k, v = cur.split("=", 1)
                out.append((k, v))
            cur = ""
        else:
            cur += ch
    return out


def _matches(pattern, mbean: dict[str, str], domain: str) -> bool:
    if pattern.domain != domain:
        return False
    want = pattern.as_dict()
    if pattern.list_pattern:
        keys_ok = want.keys() <= mbean.keys()
    else:
        keys_ok = want.keys() == mbean.keys()
    return keys_ok and all(v == "*" or mbean.get(k) == v for k, v in want.items())


def answer(jolokia, request: dict, registry: Iterable[MBean], ts: datetime) -> dict:
    """One bulk item for a `read` request, following Jolokia's read rules (CATALOG §6.3, §6.4)."""
    if request.get("type") != "read":
        raise ValueError(f"the simulated agent answers only read requests, not {request.get('type')!r}")
    name = parse_object_name(request["mbean"])
    asked = [request["attribute"]] if isinstance(request["attribute"], str) else list(request["attribute"])
    ignore = bool((request.get("config") or {}).get("ignoreErrors"))
    found = [m for m in registry if _matches(name, m.unquoted(), m.domain)]
    head = {"request": jolokia.echo(request)}
    if not found:
        msg = jolokia.no_pattern_match(request["mbean"]) if name.pattern else request["mbean"]
        return head | jolokia.error(404, NOT_FOUND, msg, NOT_FOUND)
    values: dict[str, dict] = {}
    for m in found:
        got: dict[str, Any] = {}
        for a in asked:
            if a not in m.attributes:
                continue  # silently skipped in wildcard reads (a named read fails below)
            v = m.attributes[a]
            if isinstance(v, Throws):
                if not ignore:
                    return head | jolokia.error(500, v.cls, v.message)
                v = jolokia.marker(v)
            got[a] = v
        if got:
            values[m.name(jolokia.canonical)] = got
    if not values:
        text = f"No attribute found for any MBean matching {request['mbean']} pattern"
        return head | jolokia.error(404, ATTR_NOT_FOUND, text, ATTR_NOT_FOUND)
    stamp = {"timestamp": int(ts.timestamp()), "status": 200}
    if name.pattern:
        return head | {"value": values} | stamp
    (got,) = values.values()
    return head | {"value": got[asked[0]] if isinstance(request["attribute"], str) else got} | stamp


def bulk_answer(jolokia, requests: list[dict], registry: list[MBean], ts: datetime) -> list[dict]:
    """The agent's answer to one bulk POST: items in request order."""
    return [answer(jolokia, r, registry, ts) for r in requests]


# --- transport failures, as brokerscope's client words them (collectors/jolokia.py) ---------------


def refused_error(target: str, url: str) -> str:
    return (f"{target}: connection refused at {url} (All connection attempts failed); the JVM or its Jolokia "
            "agent is not listening — is the broker running?")


def timeout_error(target: str) -> str:
    return (f"{target}: no answer within the timeout (ReadTimeout); the JVM may be paused (GC, SIGSTOP) or "
            "overloaded — state unknown")


def exchange(jolokia, target: str, ts: datetime, requests: list[dict], registry: list[MBean] | str,
             elapsed_ms: float, observed_ts: datetime | None = None) -> dict:
    """A P1 envelope: the bulk request and the agent's answer, or (registry is an error text) the
    client's transport error. `observed_ts` is the collector's clock when it differs from the agent's
    (clock skew): the envelope carries the collector's time, the items the agent's."""
    when = observed_ts or ts
    if isinstance(registry, str):
        return envelope(when, target, requests, None, registry, elapsed_ms)
    return envelope(when, target, requests, bulk_answer(jolokia, requests, registry, ts), None, elapsed_ms)


def jsonl(envelopes: Iterable[dict]) -> list[str]:
    """Envelopes as recording lines (compact JSON, one per line), as RecordingWriter writes them."""
    return [json.dumps(env, separators=(",", ":")) + "\n" for env in envelopes]


def write_recording(path: Path, envelopes: Iterable[dict]) -> int:
    """Write envelopes as JSON lines; gzip (mtime 0: the same facts give byte-identical files) when
    the name ends in .gz. Returns the number of lines."""
    lines = jsonl(envelopes)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            for line in lines:
                gz.write(line.encode())
    else:
        path.write_text("".join(lines))
    return len(lines)
