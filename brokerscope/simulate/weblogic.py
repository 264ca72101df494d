"""WebLogic JMS servers as Jolokia sees them (CATALOG §4): one target per managed server.

* JMSRuntime `com.bea:Name=<server>.jms,ServerRuntime=<server>,Type=JMSRuntime` (ConnectionsCurrentCount);
* JMSServerRuntime `com.bea:Name=<jmsServer>,ServerRuntime=<server>,Type=JMSServerRuntime` (§4.3 counts,
  HealthState, pause flags);
* JMSDestinationRuntime `com.bea:JMSServerRuntime=<jmsServer>,Name=<module>!<jmsServer>@<UDD>,
  ServerRuntime=<server>,Type=JMSDestinationRuntime` for a distributed-queue member (§4.1, §4.2:
  Messages*Count long, Consumers*Count long, DestinationType "Queue").
HealthState's JSON form is not in CATALOG (type only): the CompositeData-style `{"State": 0, …}`
the pack accepts (0 = HEALTH_OK) is used. Registration order for Jolokia 2.x keys (not in CATALOG):
Name, Type, ServerRuntime, JMSServerRuntime. A server that is down refuses the connection; its
messages stay on it (§4, DESIGN: unavailable until it returns).
"""

from __future__ import annotations

from datetime import datetime

from brokerscope.simulate.jolokia import MBean
from brokerscope.simulate.model import Member

DOMAIN = "com.bea"
MODULE = "SystemModule"


def ordered(props: dict[str, str]) -> list[tuple[str, str]]:
    return [(k, props[k]) for k in ("Name", "Type", "ServerRuntime", "JMSServerRuntime") if k in props]


def jms_server(member: Member) -> str:
    return member.facts.get("jms_server", f"JMSServer-{member.name}")


def member_name(member: Member, udd: str) -> str:
    return f"{MODULE}!{jms_server(member)}@{udd}"


def registry(member: Member, t: float, ts: datetime) -> list[MBean]:
    server, js = member.name, jms_server(member)
    counters = [(d, member.counters(d, t)) for d in member.destinations]
    out = [MBean(DOMAIN, ordered({"Name": f"{server}.jms", "Type": "JMSRuntime", "ServerRuntime": server}),
                 {"ConnectionsCurrentCount": 2 + sum(c.consumers for _, c in counters)})]
    out.append(MBean(DOMAIN, ordered({"Name": js, "Type": "JMSServerRuntime", "ServerRuntime": server}), {
        "MessagesCurrentCount": sum(c.messages for _, c in counters),
        "MessagesPendingCount": 0,
        "MessagesHighCount": max([c.messages for _, c in counters], default=0),
        "MessagesReceivedCount": sum(c.enqueued for _, c in counters),
        "HealthState": {"State": 0, "SubsystemName": js, "ReasonCode": []},
        "ConsumptionPaused": False, "ProductionPaused": False, "InsertionPaused": False,
    }))
    for d, c in counters:
        name = member_name(member, d.logical or d.name)
        out.append(MBean(DOMAIN, ordered({"Name": name, "Type": "JMSDestinationRuntime", "ServerRuntime": server,
                                          "JMSServerRuntime": js}), {
            "DestinationType": "Queue",
            "MessagesCurrentCount": c.messages,
            "MessagesPendingCount": 0,
            "MessagesHighCount": c.messages,
            "MessagesReceivedCount": c.enqueued,
            "ConsumersCurrentCount": c.consumers,
            "ConsumersHighCount": d.consumers,
            "ConsumptionPaused": False, "ProductionPaused": False, "InsertionPaused": False,
        }))
    return out
