"""WebLogic JMS pack: member-name parsing, normalize on the CATALOG-built captures (Jolokia 1.x and
2.x shapes, tests/fixtures/weblogic/make_captures.py explains every value), and replay → analyze.

Scenario of both captures: cluster-1 = ms1 + ms2, a member of UDD SystemModule!OrdersQueue on each;
ms1's member strands messages (no consumers, received flat at 40 over ticks 3–7) while ms2's
consumes; ms2 refuses connections at ticks 8–10 with 18 messages on it, answers without a JMS
server at tick 11 (404 items) and is back with them at ticks 12–13. Ticks are 10 s apart from
2026-11-23 09:00:00Z; ms2 is scraped 150 ms after ms1.
"""

import copy
import importlib.util
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from collectors.base import Observation, format_ts, scrape_requests
from collectors.jolokia import check_read_only
from collectors.packs import pack_for
from collectors.recording import observation_from_envelope, read_envelopes
from collectors.weblogic import WebLogicPack, health_state, logical_destination, parse_member_name
from tests.recordings import replayed

FIX = Path(__file__).parent / "fixtures" / "weblogic"
CAPTURES = {1: FIX / "weblogic_jolokia1.jsonl", 2: FIX / "weblogic_jolokia2.jsonl"}
T0 = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)
PACK = WebLogicPack()
ORDERS = "SystemModule!OrdersQueue"


def at(tick: int, server: str) -> datetime:
    return T0 + timedelta(seconds=10 * tick + (0.15 if server == "ms2" else 0.0))


def member(gen: int, server: str) -> str:
    jms_server = f"JMSServer@{server}" if gen == 2 else f"JMSServer-{server[-1]}"
    return f"SystemModule!{jms_server}@OrdersQueue"


def envelope_at(gen: int, server: str, tick: int) -> dict:
    ts = format_ts(at(tick, server))
    (env,) = [e for e in read_envelopes(CAPTURES[gen]) if e["target"] == server and e["ts"] == ts]
    return env


def normalize(gen: int, server: str, tick: int, edit=None):
    env = copy.deepcopy(envelope_at(gen, server, tick))
    if edit:
        edit(env["response"])
    return PACK.normalize(observation_from_envelope(env, "weblogic", "cluster-1"), "k")


def dest(rows, name: str) -> dict:
    (row,) = [d for d in rows.destination_stats if d["destination"] == name]
    return row


# --- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, jms_server, expected",
    [
        # CATALOG §4.1 DD member (domainhealth RegExpTest)
        ("MainJMSRsc2!WLS103MultiSvrServer2_MainJMSRsc2JMSServer@jms.QA", None,
         ("MainJMSRsc2", "WLS103MultiSvrServer2_MainJMSRsc2JMSServer", "jms.QA")),
        ("MainJMSRsc2!WLS103MultiSvrServer2_MainJMSRsc2JMSServer@jms.QA", "WLS103MultiSvrServer2_MainJMSRsc2JMSServer",
         ("MainJMSRsc2", "WLS103MultiSvrServer2_MainJMSRsc2JMSServer", "jms.QA")),
        # CATALOG §4.2 captured read: a non-distributed destination has no '@'
        ("jms-module!yellowfire.jms.queue.in.accounting", "jms-server", ("jms-module", None, None)),
        # CATALOG §4.1 UNVERIFIED 12.2.1+ member on a cluster-targeted JMS server
        ("SystemModule!JMSServer@ms1@OrdersQueue", None, ("SystemModule", "JMSServer@ms1", "OrdersQueue")),
        ("SystemModule!JMSServer@ms1@OrdersQueue", "JMSServer@ms1", ("SystemModule", "JMSServer@ms1", "OrdersQueue")),
        # the JMSServerRuntime key pins the split when the UDD name itself has an '@'
        ("M!JS1@orders@eu", "JS1", ("M", "JS1", "orders@eu")),
        # not in CATALOG, tolerated: '!' inside the module part stays in the module
        ("app!mod!JS1@Q", None, ("app!mod", "JS1", "Q")),
        ("app!mod!JS1@Q", "JS1", ("app!mod", "JS1", "Q")),
        ("Q", None, (None, None, None)),
    ],
)
def test_parse_member_name(name, jms_server, expected):
    assert parse_member_name(name, jms_server) == expected


def test_logical_destination_is_module_qualified_udd_or_the_name():
    assert logical_destination("SystemModule!JMSServer-1@OrdersQueue", "JMSServer-1") == ORDERS
    assert logical_destination("SystemModule!JMSServer@ms2@OrdersQueue", "JMSServer@ms2") == ORDERS
    assert logical_destination("OtherModule!JMSServer-1@OrdersQueue") == "OtherModule!OrdersQueue"
    plain = "jms-module!yellowfire.jms.queue.in.accounting"
    assert logical_destination(plain) == plain


@pytest.mark.parametrize(
    "value, expected",
    [({"state": 0, "subsystemName": "JMSServer-1", "reasonCode": []}, "ok"), ({"State": 3}, "failed"),
     ({"state": "failed"}, "failed"), ("HEALTH_FAILED", "failed"), ("warn", "warn"), (1, "warn"),
     ({"subsystemName": "x"}, None), (True, None), (None, None), (17, None)],
)
def test_health_state_accepts_both_plausible_forms(value, expected):
    assert health_state(value) == expected


# --- requests ----------------------------------------------------------------------------------


def test_requests_are_bulk_pattern_reads_of_catalog_names():
    reqs = scrape_requests(PACK)
    check_read_only(reqs)
    assert [r["mbean"] for r in reqs] == [
        "com.bea:Type=JMSRuntime,*", "com.bea:Type=JMSServerRuntime,*", "com.bea:Type=JMSDestinationRuntime,*"]
    assert all(r["config"] == {"ignoreErrors": True} for r in reqs)
    assert set(reqs[2]["attribute"]) == {
        "DestinationType", "MessagesCurrentCount", "MessagesPendingCount", "MessagesHighCount", "MessagesReceivedCount",
        "ConsumersCurrentCount", "ConsumersHighCount", "ConsumptionPaused", "ProductionPaused", "InsertionPaused"}
    assert "HealthState" in reqs[1]["attribute"]
    assert PACK.requests("ms1")[1]["mbean"] == "com.bea:ServerRuntime=ms1,Type=JMSServerRuntime,*"
    assert pack_for("weblogic") is not None


# --- normalize ----------------------------------------------------------------------------------


def test_the_catalog_cited_destination_read():
    """The real Jolokia read of a WebLogic destination CATALOG §4.2 cites (dispatcher-jolokia)."""
    mbean = ("com.bea:JMSServerRuntime=jms-server,Name=jms-module!yellowfire.jms.queue.in.accounting,"
             "ServerRuntime=testserver,Type=JMSDestinationRuntime")
    value = {
        "BytesHighCount": 5943, "Name": "jms-module!yellowfire.jms.queue.in.accounting", "MessagesHighCount": 7,
        "ConsumptionPaused": False,
        "Parent": {"objectName": "com.bea:Name=jms-server,ServerRuntime=testserver,Type=JMSServerRuntime"},
        "MessagesReceivedCount": 74, "ConsumptionPausedState": "Consumption-Enabled", "ConsumersHighCount": 2,
        "ConsumersCurrentCount": 0, "Paused": False, "DestinationType": "Queue", "InsertionPaused": False,
        "ProductionPaused": False, "MessagesCurrentCount": 1, "MessagesPendingCount": 1,
        "State": "advertised_in_cluster_jndi",
    }
    req = {"type": "read", "mbean": mbean}
    answer = [{"request": req, "value": value, "status": 200}]
    obs = Observation(T0, "testserver", "weblogic", None, [req], answer, None, 5.0)
    rows = PACK.normalize(obs, "k")
    (d,) = rows.destination_stats
    assert (d["destination"], d["logical_destination"], d["destination_type"]) == (
        "jms-module!yellowfire.jms.queue.in.accounting", "jms-module!yellowfire.jms.queue.in.accounting", "queue")
    assert (d["messages"], d["in_flight"], d["enqueued"], d["consumers"], d["paused"]) == (2, 1, 74, 0, False)
    (b,) = rows.broker_state
    # no JMSServerRuntime read in this exchange: the role is not known
    assert (b["reachable"], b["active"], b["role"], b["broker_id"], b["consumers"]) == (True, None, "unknown", None, 0)


@pytest.mark.parametrize("gen", [1, 2])
def test_stranded_member_beside_a_consuming_sibling(gen):
    ms1, ms2 = normalize(gen, "ms1", 5), normalize(gen, "ms2", 5)
    a, b = dest(ms1, member(gen, "ms1")), dest(ms2, member(gen, "ms2"))
    assert a["logical_destination"] == b["logical_destination"] == ORDERS
    assert (a["instance"], a["group_name"], a["destination_type"]) == ("ms1", "cluster-1", "queue")
    assert (a["messages"], a["consumers"], a["enqueued"], a["in_flight"], a["paused"]) == (40, 0, 40, 0, False)
    assert (b["messages"], b["consumers"], b["enqueued"], b["in_flight"]) == (3, 2, 150, 1)  # 2 current + 1 pending
    (s1,) = ms1.broker_state
    assert (s1["instance"], s1["role"], s1["active"], s1["broker_id"]) == ("ms1", "running", True, "ms1")
    assert s1["broker_name"] == ("JMSServer@ms1" if gen == 2 else "JMSServer-1")
    assert (s1["total_messages"], s1["total_enqueued"], s1["consumers"]) == (40, 51, 0)  # topic's 11 received stay counted
    assert s1["connections"] == (None if gen == 2 else 3)


def test_non_distributed_topic_then_vanished():
    rows = normalize(1, "ms1", 4)
    t = dest(rows, "SystemModule!AuditTopic")
    assert (t["logical_destination"], t["destination_type"], t["messages"], t["consumers"], t["enqueued"]) == (
        "SystemModule!AuditTopic", "topic", 2, 1, 11)
    assert [d["destination"] for d in normalize(1, "ms1", 5).destination_stats] == [member(1, "ms1")]


def test_jolokia1_string_marker_is_an_error_not_a_failed_server():
    (s,) = normalize(1, "ms1", 1).broker_state
    assert (s["role"], s["active"]) == ("running", True)
    assert s["error"].startswith("JMSServer-1 HealthState: java.lang.IllegalStateException")


def test_jolokia2_object_marker_leaves_a_lower_bound():
    rows = normalize(2, "ms1", 2)
    d = dest(rows, member(2, "ms1"))
    assert (d["messages"], d["in_flight"], d["enqueued"]) == (30, None, 30)
    expected = "SystemModule!JMSServer@ms1@OrdersQueue MessagesPendingCount: javax.management.RuntimeMBeanException"
    assert expected in rows.broker_state[0]["error"]


def test_jolokia2_policy_deny_loses_only_what_it_denies():
    (s,) = normalize(2, "ms1", 0).broker_state
    assert (s["role"], s["active"], s["connections"], s["total_messages"]) == ("running", True, None, 12)
    assert s["error"].startswith("JMSRuntime: 403: java.lang.SecurityException")


@pytest.mark.parametrize("gen", [1, 2])
def test_refused_scrape_is_indeterminate(gen):
    rows = normalize(gen, "ms2", 9)
    (s,) = rows.broker_state
    assert (s["instance"], s["reachable"], s["active"], s["role"]) == ("ms2", False, None, "unknown")
    assert "connection refused" in s["error"] and rows.destination_stats == []


@pytest.mark.parametrize("gen", [1, 2])
def test_server_answering_without_jms_server_is_not_active(gen):
    rows = normalize(gen, "ms2", 11)
    (s,) = rows.broker_state
    assert role_facts(s) == (True, False, "no-jms-server")
    assert (s["connections"], s["broker_id"]) == (0, "ms2")
    assert s["error"] is None  # 404 "No MBean with pattern" is a fact, not a failure
    assert rows.destination_stats == []


@pytest.mark.parametrize("gen", [1, 2])
def test_pinned_messages_back_with_their_member(gen):
    d = dest(normalize(gen, "ms2", 12), member(gen, "ms2"))
    assert (d["messages"], d["in_flight"], d["consumers"], d["enqueued"]) == (18, 2, 2, 0)


def test_paused_jms_server_pauses_its_members():
    assert dest(normalize(2, "ms1", 11), member(2, "ms1"))["paused"] is False
    assert dest(normalize(2, "ms1", 12), member(2, "ms1"))["paused"] is True


def test_paused_member_and_failed_jms_server():
    def edit(response):
        (server_attrs,) = response[1]["value"].values()
        server_attrs["HealthState"] = {"state": 3, "subsystemName": "JMSServer-1", "reasonCode": []}
        for attrs in response[2]["value"].values():
            attrs["ConsumptionPaused"] = True

    rows = normalize(1, "ms1", 0, edit)
    assert (rows.broker_state[0]["role"], rows.broker_state[0]["active"]) == ("failed", False)
    assert {d["paused"] for d in rows.destination_stats} == {True}


def test_items_without_echo_are_read_by_position():
    def strip(response):
        for item in response:
            item.pop("request")

    assert normalize(2, "ms2", 5, strip) == normalize(2, "ms2", 5)


def test_captures_are_what_make_captures_writes():
    spec = importlib.util.spec_from_file_location("make_captures", FIX / "make_captures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for gen, path in CAPTURES.items():
        assert mod.render(gen) == path.read_text(), f"rerun {FIX / 'make_captures.py'}"


# ms2 per tick: (reachable, active, role)
MS2_STATES = (
    [(True, True, "running")] * 8 + [(False, None, "unknown")] * 3
    + [(True, False, "no-jms-server")] + [(True, True, "running")] * 2
)


def role_facts(row: dict) -> tuple:
    return row["reachable"], row["active"], row["role"]


@pytest.mark.parametrize("gen", [1, 2])
def test_every_exchange_of_both_captures(gen):
    rows: dict[str, list] = {"ms1": [], "ms2": []}
    for env in read_envelopes(CAPTURES[gen]):
        rows[env["target"]].append(PACK.normalize(observation_from_envelope(env, "weblogic", "cluster-1"), "k"))
    assert [role_facts(r.broker_state[0]) for r in rows["ms2"]] == MS2_STATES
    assert {r.broker_state[0]["role"] for r in rows["ms1"]} == {"running"}
    ms1_member = [dest(r, member(gen, "ms1")) for r in rows["ms1"]]
    assert [d["enqueued"] for d in ms1_member] == [10, 20, 30, 40, 40, 40, 40, 40, 50, 60, 70, 80, 80, 80]
    assert {d["consumers"] for d in ms1_member} == {0}
    logical = {d["logical_destination"] for r in rows["ms1"] + rows["ms2"] for d in r.destination_stats}
    assert logical == {ORDERS, "SystemModule!AuditTopic"}


# --- replay → analyze ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory, spark):
    """The 2.x capture through the real pipeline (the richer shapes: as-registered keys, 403,
    object markers, cluster-targeted names). The 1.x capture goes through the same `normalize`,
    checked envelope by envelope above and in test_every_exchange_of_both_captures."""
    drill = replayed(FIX / "weblogic.yaml", CAPTURES[2], tmp_path_factory.mktemp("wl") / "lh", spark)
    assert drill.result.envelopes == drill.result.new_rows == 28
    return 2, drill.lh


def by_instance_tick(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
    out: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        tick = int((r["ts"] - T0).total_seconds() // 10)
        out.setdefault((r["instance"], tick), []).append(r)
    return out


def test_replay_groups_members_under_their_logical_destination(analyzed):
    gen, lh = analyzed
    rows = [r for r in lh.read("destination_stats").to_pylist() if r["logical_destination"] == ORDERS]
    assert {(r["instance"], r["destination"]) for r in rows} == {("ms1", member(gen, "ms1")), ("ms2", member(gen, "ms2"))}
    assert {r["group_name"] for r in rows} == {"cluster-1"} and {r["kind"] for r in rows} == {"weblogic"}
    at_tick = {k: v[0] for k, v in by_instance_tick(rows).items()}
    # tick 5: ms1 strands 40 with no consumers; ms2 consumes
    assert [at_tick[("ms1", 5)][c] for c in ("ts", "messages", "consumers", "enqueued")] == [at(5, "ms1"), 40, 0, 40]
    assert [at_tick[("ms2", 5)][c] for c in ("ts", "messages", "consumers", "enqueued")] == [at(5, "ms2"), 3, 2, 150]
    # ms1's received count is flat over ticks 3–7 while ms2's grows by 25 per tick
    assert [at_tick[("ms1", t)]["enqueued"] for t in range(3, 8)] == [40] * 5
    assert [at_tick[("ms2", t)]["enqueued"] for t in range(3, 7)] == [100, 125, 150, 175]
    # ms2's 18 messages: last seen at tick 7, absent while it is away, back at tick 12
    assert at_tick[("ms2", 7)]["messages"] == 18 and at_tick[("ms2", 7)]["consumers"] == 0
    assert not any(("ms2", t) in at_tick for t in (8, 9, 10, 11))
    assert (at_tick[("ms2", 12)]["messages"], at_tick[("ms2", 13)]["messages"]) == (18, 0)


def test_replay_shows_ms2_unreachable_during_the_outage(analyzed):
    _, lh = analyzed
    state = by_instance_tick(lh.read("broker_state").to_pylist())
    assert all(state[("ms1", t)][0]["active"] is True for t in range(14))
    assert [role_facts(state[("ms2", t)][0]) for t in range(14)] == MS2_STATES  # ticks 8–10 indeterminate
    health = by_instance_tick(lh.read("collector_health").to_pylist())
    assert {health[("ms2", t)][0]["error_kind"] for t in (8, 9, 10)} == {"refused"}
    assert health[("ms2", 11)][0]["items_failed"] == 2 and "404" in health[("ms2", 11)][0]["item_errors"]
    assert health[("ms1", 0)][0]["items_failed"] == 1 and "403" in health[("ms1", 0)][0]["item_errors"]
    # the outage is no role move: no failover between cluster members, but ms2's own return
    events = lh.read("failover_events").to_pylist()
    assert [e for e in events if e["event_type"] != "restart"] == []
    (back,) = [e for e in events if e["to_instance"] == "ms2"]
    assert (back["from_instance"], back["old_last_active"], back["new_first_active"]) == ("ms2", at(7, "ms2"), at(12, "ms2"))
    assert back["old_first_unanswered"] == at(8, "ms2") and back["outage_upper_s"] == pytest.approx(50.0, abs=0.1)
    intervals = lh.read("role_intervals").to_pylist()
    (ms2_before,) = [i for i in intervals if i["instance"] == "ms2" and i["start_ts"] == at(0, "ms2")]
    assert (ms2_before["end_ts"], ms2_before["end_upper_state"], ms2_before["first_inactive_after"]) == (
        at(7, "ms2"), "unanswered", at(11, "ms2"))


def test_cluster_members_serving_together_are_no_split_brain(analyzed):
    _, lh = analyzed
    assert lh.read("split_brain_windows").to_pylist() == []
