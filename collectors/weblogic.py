"""WebLogic JMS pack (CATALOG §4): JMS servers and (distributed) destination members.

One target = one managed server's Jolokia (the WAR agent merges the server's runtime MBean server,
CATALOG §4.1 `WeblogicDetector`), so `instance` is the target (the managed server, one JVM) and
`group_name` is the configured group — the WebLogic cluster. A cluster is not a live/backup pair:
every member serves at once, so "failover" for this kind means a server's outage and return, not a
role move (see the caveat on split_brain_windows in tests/test_pack_weblogic.py).

Reads (one bulk POST, patterns, `ignoreErrors` so one bad attribute never fails an item):
  * `com.bea:Type=JMSRuntime,*`            ConnectionsCurrentCount                         (§4.3)
  * `com.bea:Type=JMSServerRuntime,*`      Messages{Current,Pending,High,Received}Count,
                                           HealthState, {Consumption,Production,Insertion}Paused (§4.3)
  * `com.bea:Type=JMSDestinationRuntime,*` DestinationType, the same Messages* counts,
                                           Consumers{Current,High}Count, the three pause flags (§4.2)
The high-water counts and production/insertion pauses stay in bronze for later jobs; no silver
column takes them yet.

Decisions
  * destination = the `Name` key as reported (`<module>!<JMSServer>@<UDD>` for a distributed
    destination member, `<module>!<destination>` otherwise). logical_destination =
    `<module>!<UDD>`: module-qualified ALWAYS (two modules may each hold a UDD of the same name;
    qualifying only "when needed" would change a name when another module appears), and equal to
    the destination for a non-distributed destination — WebLogic's own `<module>!<name>` form.
  * instance = the target. The member name carries the JMS server, so (instance, destination) is
    unique even with several JMS servers on one managed server.
  * messages = MessagesCurrentCount + MessagesPendingCount. WebLogic's current count EXCLUDES
    pending (§4.2); ActiveMQ QueueSize and Artemis MessageCount include delivered-unacknowledged
    messages, so the sum is the comparable "held by this member" figure. in_flight =
    MessagesPendingCount. When pending is unknown (error marker), messages = current (a lower
    bound). enqueued = MessagesReceivedCount ("since last reset": it restarts with the server).
    No dequeue counter exists in §4, so dequeued stays null.
  * paused = the member's ConsumptionPaused, or its JMS server's (a paused JMS server pauses all
    its destinations): messages held with consumers attached are stranded just the same.
  * broker_state: one row per managed server. JMSServerRuntime MBeans present → role `running`,
    active=true (unless every JMS server reports a FAILED HealthState → `failed`, active=false).
    The JMSServerRuntime pattern answered 404 InstanceNotFound → `no-jms-server`, active=false
    (the JVM answers but hosts no JMS server: booting, or its JMS server migrated away). Any other
    failure of that read → `unknown`, active=null. No answer → reachable=false, active=null.
    broker_name = the JMS server name(s), broker_id = the WebLogic server name(s) from the
    `ServerRuntime` key. Totals sum the JMS servers; consumers sums the destinations.

UNVERIFIED in CATALOG, both forms accepted
  * Member of a DD on a cluster-targeted JMS server (12.2.1+): `<module>!<JMSServer>@<server>@<UDD>`
    besides `<module>!<JMSServer>@<UDD>`. The destination's `JMSServerRuntime` key, when it prefixes
    the member part, decides the split, so an `@` inside either name is harmless; without it the
    LAST `@` splits (the JMS server part is the one that may carry `@server`).
  * Domain Runtime MBean server's extra `Location=<server>` key: used as the server name when present.
  * HealthState: CATALOG gives only its type (`weblogic.health.HealthState`), not its JSON form or
    values. Accepted: an object with a `state`/`State` member, or a bare value; the value an int
    (Oracle WLAPI HealthState constants, 3 = HEALTH_FAILED) or a symbol (`HEALTH_FAILED`, REST-style
    `failed`). Only FAILED changes the role; anything unrecognised counts as "not failed".
  * `!` inside a module name (app-scoped modules) is not shown by CATALOG; the LAST `!` before the
    member part splits, so it would stay in the module.
"""

from __future__ import annotations

from typing import Any, Iterable

from collectors.base import (MBeanRead, Observation, Rows, as_bool, as_int, base_row, iter_mbean_reads,
                             unanswered_state_row)

DOMAIN = "com.bea"
JMS_RUNTIME = "JMSRuntime"
JMS_SERVER = "JMSServerRuntime"
JMS_DESTINATION = "JMSDestinationRuntime"

MESSAGE_COUNTS = ["MessagesCurrentCount", "MessagesPendingCount", "MessagesHighCount", "MessagesReceivedCount"]
PAUSE_FLAGS = ["ConsumptionPaused", "ProductionPaused", "InsertionPaused"]
RUNTIME_ATTRIBUTES = ["ConnectionsCurrentCount"]
SERVER_ATTRIBUTES = [*MESSAGE_COUNTS, "HealthState", *PAUSE_FLAGS]
DESTINATION_ATTRIBUTES = ["DestinationType", *MESSAGE_COUNTS, "ConsumersCurrentCount", "ConsumersHighCount", *PAUSE_FLAGS]

_DEST_TYPES = {"Queue": "queue", "Topic": "topic"}
# weblogic.health.HealthState int constants (Oracle WLAPI; not in CATALOG, see module doc).
_HEALTH_BY_CODE = {0: "ok", 1: "warn", 2: "critical", 3: "failed", 4: "overloaded"}
_ERRORS_MAX = 2000


# --- names -------------------------------------------------------------------------------------


def parse_member_name(name: str, jms_server: str | None = None) -> tuple[str | None, str | None, str | None]:
    """`<module>!<JMSServer>@<UDD>` → (module, JMS server, UDD); a non-distributed destination
    `<module>!<dest>` → (module, None, None); a bare name → (None, None, None).

    `jms_server` (the MBean's `JMSServerRuntime` key) pins the split when the name contains it."""
    if jms_server:
        marker = f"!{jms_server}@"
        at = name.rfind(marker)
        if at > 0:
            return name[:at], jms_server, name[at + len(marker):]
    module, bang, member = name.rpartition("!")
    if not bang:
        return None, None, None
    server, at_sign, udd = member.rpartition("@")
    if not at_sign or not server or not udd:
        return module or None, None, None
    return module or None, server, udd


def logical_destination(name: str, jms_server: str | None = None) -> str:
    """The distributed destination a member belongs to, module-qualified; else the name itself."""
    module, _, udd = parse_member_name(name, jms_server)
    if udd is None:
        return name
    return f"{module}!{udd}" if module else udd


def server_of(read: MBeanRead) -> str | None:
    """The WebLogic server an MBean lives on (Domain Runtime adds `Location`)."""
    return read.mbean.get("Location") or read.mbean.get("ServerRuntime")


# --- values ------------------------------------------------------------------------------------


def health_state(value: Any) -> str | None:
    """ok | warn | critical | failed | overloaded from either plausible HealthState form; None if
    unrecognised."""
    if isinstance(value, dict):
        value = next((v for k, v in value.items() if k.lower() == "state"), None)
    code = as_int(value)
    if code is not None:
        return _HEALTH_BY_CODE.get(code)
    if isinstance(value, str):
        token = value.strip().lower().removeprefix("health_")
        return token if token in _HEALTH_BY_CODE.values() or token == "unknown" else None
    return None


def held_messages(attrs: dict) -> int | None:
    """Current (which excludes pending) plus pending; current alone when pending is unknown."""
    current = as_int(attrs.get("MessagesCurrentCount"))
    if current is None:
        return None
    return current + (as_int(attrs.get("MessagesPendingCount")) or 0)


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def answered_mbeans(reads: Iterable[MBeanRead]) -> list[MBeanRead]:
    """The MBeans a read returned (not the pattern of a failed item, not a failed single read)."""
    return [r for r in reads if not r.mbean.pattern and r.item_error is None]


def _is_absent(read: MBeanRead) -> bool:
    """A pattern read that matched no MBean: a fact (nothing registered), not a failure."""
    return read.status == 404 and "InstanceNotFoundException" in (read.item_error or "")


def _errors(reads: Iterable[MBeanRead]) -> str | None:
    """Why an observation is incomplete: failed items (except 'nothing registered') and
    per-attribute error markers."""
    out: list[str] = []
    for r in reads:
        if r.item_error and not _is_absent(r):
            out.append(f"{r.mbean.get('Type')}: {r.item_error}")
        out.extend(f"{r.mbean.get('Name')} {attr}: {err}" for attr, err in sorted(r.errors.items()))
    return "; ".join(out)[:_ERRORS_MAX] or None


# --- the pack ----------------------------------------------------------------------------------


def _scope(broker_name: str) -> str:
    return "" if broker_name in ("", "*") else f"ServerRuntime={broker_name},"


def _read(scope: str, type_: str, attributes: list[str]) -> dict:
    return {"type": "read", "mbean": f"{DOMAIN}:{scope}Type={type_},*", "attribute": list(attributes), "config": {"ignoreErrors": True}}


class WebLogicPack:
    kind = "weblogic"
    tables = ("broker_state", "destination_stats")
    exclusive_roles = False
    backlog_attribute = "MessagesCurrentCount"

    def requests(self, broker_name: str = "*") -> list[dict]:
        """`broker_name` = a WebLogic server name restricts the reads to it ('*' = any)."""
        scope = _scope(broker_name)

        return [_read(scope, JMS_RUNTIME, RUNTIME_ATTRIBUTES), _read(scope, JMS_SERVER, SERVER_ATTRIBUTES)]

    def destination_request(self, broker_name: str = "*") -> dict:
        """Every JMS destination (the collector may sample instead, see scraper)."""
        return _read(_scope(broker_name), JMS_DESTINATION, DESTINATION_ATTRIBUTES)

    def normalize(self, obs: Observation, obs_key: str) -> Rows:
        rows = Rows()
        if not obs.answered:
            rows.broker_state.append(unanswered_state_row(obs, obs_key))
            return rows
        reads = [r for r in iter_mbean_reads(obs.requests, obs.response) if r.mbean.domain == DOMAIN]
        by_type: dict[str, list[MBeanRead]] = {}
        for r in reads:
            by_type.setdefault(r.mbean.get("Type") or "", []).append(r)
        servers = answered_mbeans(by_type.get(JMS_SERVER, []))
        destinations = answered_mbeans(by_type.get(JMS_DESTINATION, []))
        server_paused = {
            (server_of(r), r.mbean.get("Name")): as_bool(r.attributes.get("ConsumptionPaused")) for r in servers
        }
        rows.destination_stats.extend(destination_row(obs, obs_key, r, server_paused) for r in destinations)
        rows.broker_state.append(state_row(obs, obs_key, by_type, rows.destination_stats))
        return rows


def role_of(jms_servers: list[MBeanRead], server_reads: list[MBeanRead]) -> tuple[str, bool | None]:
    """(role, active) from the JMSServerRuntime read; see the module doc."""
    if jms_servers:
        if all(health_state(r.attributes.get("HealthState")) == "failed" for r in jms_servers):
            return "failed", False
        return "running", True
    failed = [r for r in server_reads if r.item_error]
    if failed and all(_is_absent(r) for r in failed):
        return "no-jms-server", False
    return "unknown", None


def state_row(obs: Observation, obs_key: str, by_type: dict[str, list[MBeanRead]], dest_rows: list[dict]) -> dict:
    server_reads = by_type.get(JMS_SERVER, [])
    jms_servers = sorted(answered_mbeans(server_reads), key=lambda r: r.mbean.get("Name") or "")
    runtimes = answered_mbeans(by_type.get(JMS_RUNTIME, []))
    role, active = role_of(jms_servers, server_reads)
    names = {server_of(r) for r in [*runtimes, *jms_servers]} - {None}
    return base_row(obs, obs_key) | {
        "broker_name": ",".join(r.mbean.get("Name") or "" for r in jms_servers) or None,
        "broker_id": ",".join(sorted(names)) or None,
        "reachable": True,
        "active": active,
        "role": role,
        "connections": _sum(as_int(r.attributes.get("ConnectionsCurrentCount")) for r in runtimes),
        "total_enqueued": _sum(as_int(r.attributes.get("MessagesReceivedCount")) for r in jms_servers),
        "total_messages": _sum(held_messages(r.attributes) for r in jms_servers),
        "consumers": _sum(d["consumers"] for d in dest_rows),
        "error": _errors(r for rs in by_type.values() for r in rs),
        "scrape_ms": obs.elapsed_ms,
    }


def destination_row(obs: Observation, obs_key: str, read: MBeanRead, server_paused: dict) -> dict:
    m, a = read.mbean, read.attributes
    name = m.get("Name") or m.canonical
    jms_server = m.get(JMS_SERVER)
    paused = as_bool(a.get("ConsumptionPaused"))
    if server_paused.get((server_of(read), jms_server)):
        paused = True
    return base_row(obs, obs_key) | {
        "destination": name,
        "logical_destination": logical_destination(name, jms_server),
        "destination_type": _DEST_TYPES.get(a.get("DestinationType"), "unknown"),
        "messages": held_messages(a),
        "consumers": as_int(a.get("ConsumersCurrentCount")),
        "enqueued": as_int(a.get("MessagesReceivedCount")),
        "in_flight": as_int(a.get("MessagesPendingCount")),
        "paused": paused,
    }
