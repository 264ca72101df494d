"""Real-JVM tests of the lab's Jolokia agent (the official 2.6.0 JVM agent, read-only) and the ActiveMQ
Classic master/slave lab (no mocks)."""

from __future__ import annotations

import json
import os
import stat
import time
import urllib.error
import urllib.request
import xml.dom.minidom
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.activemq import ActiveMQPack
from collectors.base import Observation, scrape_requests
from infra.artifacts import jolokia_agent_jar
from infra.jvm_agents import DISABLED_SERVICES, JOLOKIA_ACCESS_FILE, JOLOKIA_PROPERTIES_FILE, jolokia_jvm_args
from infra.lab import TEMPLATE_DIR, ActiveMQPair, LabError, _render, jolokia_request, stomp_send
from tests.lab_fixtures import activemq_pair, agent_jar, agent_jvm, requires_lab  # noqa: F401
from tests.servers import AgentJVM
from tests.servers import agent_jvm as start_agent_jvm

BROKER = "org.apache.activemq:type=Broker,brokerName=*"
QUEUES = "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=*"
LAB_QUEUE = "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=BROKERSCOPE.LAB"
#: a password the properties file must escape (backslash, leading blank, beyond ISO-8859-1, beyond U+FFFF)
AWKWARD_PASSWORD = " pw\\with:=#!ü€😀"


# ------------------------------------------------------------------ no JVM


def test_templates_render_to_wellformed_xml(tmp_path: Path) -> None:
    xml_text = _render(
        "activemq.xml",
        {
            "BROKER_NAME": "amq-a",
            "DATA_DIR": str(tmp_path / "d&x"),
            "KAHADB_DIR": str(tmp_path / "k"),
            "LOCK_ACQUIRE_SLEEP_MS": "500",
            "OPENWIRE_PORT": "1",
            "STOMP_PORT": "2",
        },
    )
    doc = xml.dom.minidom.parseString(xml_text)
    locker = doc.getElementsByTagName("shared-file-locker")[0]
    assert locker.getAttribute("lockAcquireSleepInterval") == "500"
    assert doc.getElementsByTagName("broker")[0].getAttribute("dataDirectory").endswith("d&x")
    log4j = _render("log4j.xml", {"ACTIVEMQ_LOG": "/x/activemq.log", "LOCKER_LOG_LEVEL": "INFO"})
    assert "@@" not in log4j.replace("@@-delimited", "")
    assert (TEMPLATE_DIR / "activemq.xml").exists()


@requires_lab
def test_agent_files_read_only_policy_and_private_password(tmp_path: Path) -> None:
    args = jolokia_jvm_args(tmp_path / "conf", port=0, user="scope", password="pw-1", strict_origin=True)
    props = tmp_path / "conf" / JOLOKIA_PROPERTIES_FILE
    assert args == ["-Dsun.net.httpserver.nodelay=true", f"-javaagent:{jolokia_agent_jar()}=config={props}"]
    assert not any("pw-1" in a for a in args)  # the password is in the file only, never on the command line
    assert stat.S_IMODE(props.stat().st_mode) == 0o600
    text = props.read_text()
    assert "host=127.0.0.1\n" in text and "port=0\n" in text and "discoveryEnabled=false\n" in text
    assert f"disabledServices={','.join(DISABLED_SERVICES)}\n" in text and "password=pw-1\n" in text
    policy = xml.dom.minidom.parse(str(tmp_path / "conf" / JOLOKIA_ACCESS_FILE))
    assert [c.firstChild.data for c in policy.getElementsByTagName("command")] == ["read", "list", "search", "version"]
    assert policy.getElementsByTagName("strict-checking")
    assert [h.firstChild.data for h in policy.getElementsByTagName("host")] == ["127.0.0.1"]
    jolokia_jvm_args(tmp_path / "conf")  # rewritten: no auth, no strict Origin
    assert "password" not in props.read_text()
    assert not xml.dom.minidom.parse(str(tmp_path / "conf" / JOLOKIA_ACCESS_FILE)).getElementsByTagName("cors")
    with pytest.raises(ValueError):
        jolokia_jvm_args(tmp_path / "a,b")  # the agent would split its option at the comma
    with pytest.raises(ValueError):
        jolokia_jvm_args(tmp_path / "conf", user="scope")


# ------------------------------------------------------------------ agent (bare JVM)


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_version_get(agent_jvm: AgentJVM) -> None:
    with urllib.request.urlopen(agent_jvm.url + "/version", timeout=5) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"  # 2.x default (1.x: text/plain)
        body = json.loads(resp.read().decode("utf-8"))
    assert body["status"] == 200
    assert body["value"]["agent"] == "2.6.0"
    assert body["value"]["protocol"] == "8.2"
    config = body["value"]["config"]
    assert config["discoveryEnabled"] == "false" and config["policyLocation"].endswith(JOLOKIA_ACCESS_FILE)
    assert body["value"]["details"]["secured"] is False  # no user on this JVM
    assert isinstance(body["timestamp"], int)
    assert "Using policy access restrictor file:" in agent_jvm.log.read_text()


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_get_read_and_mime_type(agent_jvm: AgentJVM) -> None:
    status, body = agent_jvm.request(get_path="read/java.lang:type=Memory/HeapMemoryUsage/used")
    assert status == 200 and body["status"] == 200
    assert isinstance(body["value"], int) and body["value"] > 0
    with urllib.request.urlopen(agent_jvm.url + "/read/java.lang:type=Runtime/VmName?mimeType=text/plain",
                                timeout=5) as resp:
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert json.loads(resp.read())["value"]


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_bulk_post_mixed_statuses(agent_jvm: AgentJVM) -> None:
    status, body = agent_jvm.request([
        {"type": "read", "mbean": "java.lang:type=Runtime", "attribute": "Uptime"},
        {"type": "read", "mbean": "java.lang:type=DoesNotExist", "attribute": "X"},
        {"type": "search", "mbean": "nothing.here:*"},
        {"type": "read", "mbean": "brokerscope:name=Zürich€", "attribute": "X"},
        {"type": "list", "path": "java.lang/type=Runtime/attr"},
    ])
    assert status == 200  # bulk: HTTP 200, per-item status, request order kept
    assert [item["status"] for item in body] == [200, 404, 200, 404, 200]
    assert isinstance(body[0]["value"], int)
    assert body[1]["error_type"] == body[1]["error_type_jmx"] == "javax.management.InstanceNotFoundException"
    assert body[1][".error"] is True and "stacktrace" not in body[1]  # includeStackTrace=false by default
    assert body[2]["value"] == []  # search without match: empty list, status 200
    assert "Zürich€" in body[3]["error"]  # UTF-8 both ways
    assert "Uptime" in body[4]["value"]


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_refuses_exec_write_and_what_the_policy_does_not_list(agent_jvm: AgentJVM) -> None:
    status, body = agent_jvm.request([
        {"type": "exec", "mbean": "java.lang:type=Memory", "operation": "gc"},
        {"type": "write", "mbean": "java.lang:type=Memory", "attribute": "Verbose", "value": True},
        {"type": "read", "mbean": "java.lang:type=Memory", "attribute": "Verbose"},
        # proxy mode off (disabledServices): the target is ignored, the agent's own JVM answers
        {"type": "read", "mbean": "java.lang:type=Memory", "attribute": "Verbose",
         "target": {"url": "service:jmx:rmi:///jndi/rmi://127.0.0.1:1/jmxrmi"}},
    ])
    assert status == 200
    assert [item["status"] for item in body] == [403, 403, 200, 200]
    assert body[0]["error"] == "Operation gc forbidden for MBean java.lang:type=Memory"
    assert body[1]["error"] == "Writing attribute Verbose forbidden for MBean java.lang:type=Memory"
    assert body[2]["value"] is False and body[3]["value"] is False
    status, single = agent_jvm.request(get_path="exec/java.lang:type=Memory/gc")
    assert status == 200 and single["status"] == 403
    # 2.6.0 lets `notification` through whatever <commands> lists; without backends it subscribes nothing
    _, reg = agent_jvm.request({"type": "notification", "command": "register"})
    assert reg["status"] == 200 and reg["value"]["backend"] == {}
    _, add = agent_jvm.request({"type": "notification", "command": "add", "client": reg["value"]["id"],
                                "mode": "pull", "mbean": "JMImplementation:type=MBeanServerDelegate"})
    assert add["status"] == 500 and "No notification backend of type 'pull'" in add["error"]


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_bad_json_and_method(agent_jvm: AgentJVM) -> None:
    # 2.x answers both with HTTP 400 and a text body (the 1.x agent: HTTP 200 + status 400, and 405)
    for method, data, why in (("POST", b"not json", "Invalid JSON request"),
                              ("DELETE", None, "HTTP Method DELETE is not supported.")):
        req = urllib.request.Request(agent_jvm.url, data=data, method=method)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 400 and why in err.value.read().decode()


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_basic_auth_and_strict_origin(agent_jar: Path, tmp_path: Path) -> None:
    with start_agent_jvm(tmp_path, user="jolokia", password=AWKWARD_PASSWORD, strict_origin=True) as jvm:
        cmdline = Path(f"/proc/{jvm.pid}/cmdline").read_bytes().decode("utf-8", "replace")
        assert "with:=" not in cmdline and f"config={jvm.conf_dir / JOLOKIA_PROPERTIES_FILE}" in cmdline
        origin = {"Origin": "http://localhost"}
        status, _ = jvm.request(get_path="version", headers=origin)
        assert status == 401
        req = urllib.request.Request(jvm.url + "/version")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 401
        assert err.value.headers["WWW-Authenticate"].startswith('Basic realm="jolokia"')
        status, _ = jvm.request(get_path="version", user="jolokia", password="wrong", headers=origin)
        assert status == 401
        status, body = jvm.request(get_path="version", user="jolokia", password=AWKWARD_PASSWORD, headers=origin)
        assert status == 200 and body["status"] == 200 and body["value"]["details"]["secured"] is True
        # strict-checking: authenticated but neither Origin nor Referer -> HTTP 200 with status 403 in the
        # body (the 1.x agent answered HTTP 403)
        status, body = jvm.request(get_path="version", user="jolokia", password=AWKWARD_PASSWORD)
        assert status == 200
        assert body["status"] == 403 and body["error"] == "Origin null is not allowed to call this agent"
        status, body = jvm.request({"type": "version"}, user="jolokia", password=AWKWARD_PASSWORD,
                                   headers={"Referer": "http://localhost/x"})
        assert status == 200 and body["status"] == 200


# ------------------------------------------------------------------ ActiveMQ pair


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_start_failure_reports_log_tail(agent_jar: Path, tmp_path: Path) -> None:
    pair = ActiveMQPair(tmp_path, extra_jvm_args=["-XX:+BrokerscopeNoSuchOption"])
    with pytest.raises(LabError) as err:
        pair.start(timeout=20)
    assert "exited with code" in str(err.value)
    assert "BrokerscopeNoSuchOption" in str(err.value)  # from the JVM's own message in broker.log
    assert pair.brokers == {}


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_pair_one_master_one_slave(activemq_pair: ActiveMQPair) -> None:
    pair = activemq_pair
    assert pair.roles() == {"amq-a": "master", "amq-b": "slave"}
    assert pair.master() == "amq-a"
    recorded = json.loads(pair.pids_file.read_text())["brokers"]
    assert {n: r["pid"] for n, r in recorded.items()} == {n: b.pid for n, b in pair.brokers.items()}
    for b in pair.brokers.values():
        cmdline = Path(f"/proc/{b.pid}/cmdline").read_bytes().split(b"\0")
        assert b"-Dsun.net.httpserver.nodelay=true" in cmdline
        assert b"-Duser.timezone=UTC" in cmdline
        assert os.path.basename(cmdline[0]) == b"java"  # one JVM per broker, no wrapper shell
        assert "Using G1" in b.gc_log.read_text()
        assert "executor=fixed\nthreadNr=4\n" in (b.workdir / "conf" / JOLOKIA_PROPERTIES_FILE).read_text()
    assert "Apache ActiveMQ 5.17.2 (amq-a," in pair.brokers["amq-a"].log.read_text()
    assert "is now in slave mode waiting a lock" in pair.brokers["amq-b"].activemq_log.read_text()


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_slave_and_master_jolokia_answers(activemq_pair: ActiveMQPair) -> None:
    """What the 2.6.0 agent answers for the real broker (the 1.7.1 answers are in
    tests/fixtures/activemq_bulk_master_slave.json and drill_kill_master.jsonl.gz)."""
    master, slave = activemq_pair.brokers["amq-a"], activemq_pair.brokers["amq-b"]
    status, body = jolokia_request(slave.jolokia_url, [
        {"type": "read", "mbean": BROKER, "attribute": "Slave"},
        {"type": "read", "mbean": BROKER, "attribute": "BrokerId"},
        {"type": "read", "mbean": BROKER, "attribute": ["Slave", "BrokerId"]},
        {"type": "read", "mbean": BROKER, "attribute": ["Slave", "BrokerId"], "config": {"ignoreErrors": True}},
        {"type": "read", "mbean": QUEUES},
        {"type": "search", "mbean": "org.apache.activemq:*"},
    ])
    assert status == 200
    assert [i["status"] for i in body] == [200, 500, 500, 200, 404, 200]
    # keys as registered (canonicalNaming=false since 2.5; 1.7.1: brokerName=amq-b,type=Broker) while a
    # pattern's echo is canonical, as in 1.7.1
    assert body[0]["value"] == {"org.apache.activemq:type=Broker,brokerName=amq-b": {"Slave": True}}
    assert body[0]["request"]["mbean"] == "org.apache.activemq:brokerName=*,type=Broker"
    # a waiting slave: Slave answers, BrokerId throws (1.7.1: "java.lang.IllegalStateException : Broker ...")
    assert (body[1]["error_type"], body[1]["error"]) == ("java.lang.IllegalStateException", "Broker is not yet started.")
    tolerant = body[3]["value"]["org.apache.activemq:type=Broker,brokerName=amq-b"]
    assert tolerant["Slave"] is True  # the marker is an object (1.7.1: the string "ERROR: ... (class ...)")
    assert tolerant["BrokerId"] == {".error": True, "error_type": "javax.management.RuntimeMBeanException",
                                    "error_type_jmx": "javax.management.RuntimeMBeanException",
                                    "error": "java.lang.IllegalStateException: Broker is not yet started."}
    assert body[4]["error_type"] == "javax.management.InstanceNotFoundException"
    assert body[4]["error"].endswith("found for READ request")  # 1.7.1: "... found for reading attributes"
    assert body[5]["value"] == ["org.apache.activemq:type=Broker,brokerName=amq-b"]  # nothing else on a slave

    stomp_send(master.stomp_url, "/queue/BROKERSCOPE.LAB", ["one", "twö"])
    status, body = jolokia_request(master.jolokia_url, [
        {"type": "read", "mbean": BROKER, "attribute": ["Slave", "BrokerId"]},
        {"type": "read", "mbean": LAB_QUEUE, "attribute": ["QueueSize", "EnqueueCount"]},
    ])
    assert [i["status"] for i in body] == [200, 200]
    assert body[0]["value"]["org.apache.activemq:type=Broker,brokerName=amq-a"]["Slave"] is False
    queue = body[1]["value"]["org.apache.activemq:type=Broker,brokerName=amq-a,destinationType=Queue,"
                             "destinationName=BROKERSCOPE.LAB"]
    assert queue == {"QueueSize": 2, "EnqueueCount": 2}


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_activemq_pack_on_the_2x_agent_answers(activemq_pair: ActiveMQPair) -> None:
    """The pack's own scrape of the real pair turns into the rows test_activemq_pack gets from 1.7.1."""
    pack = ActiveMQPack()
    requests = scrape_requests(pack)
    rows = {}
    for name, b in activemq_pair.brokers.items():
        status, answer = jolokia_request(b.jolokia_url, requests)
        assert status == 200
        obs = Observation(datetime.now(timezone.utc), name, "activemq", None, requests, answer, None, 1.0)
        rows[name] = pack.normalize(obs, "k")
    (master,) = rows["amq-a"].broker_state
    assert (master["role"], master["broker_name"], master["error"], master["health"]) == ("master", "amq-a", None, "Good")
    assert master["broker_id"].startswith("ID:") and master["store"].startswith("KahaDBPersistenceAdapter[")
    assert master["group_name"] == master["store"]  # no group configured: the store is the HA group
    assert "BROKERSCOPE.LAB" in {d["destination"] for d in rows["amq-a"].destination_stats}
    (slave,) = rows["amq-b"].broker_state
    assert (slave["role"], slave["active"], slave["broker_name"], slave["error"]) == ("slave", False, "amq-b", None)
    assert slave["broker_id"] is None and slave["total_enqueued"] is None  # the object markers are facts
    assert rows["amq-b"].destination_stats == []


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_sigkill_master_slave_takes_over(activemq_pair: ActiveMQPair) -> None:
    pair = activemq_pair
    old_pid = pair.brokers["amq-a"].pid
    t0 = time.time()
    assert pair.kill("amq-a") == old_pid
    seen = pair.wait_for_role("amq-b", "master", timeout=15)
    assert seen - t0 < 5.0, f"takeover took {seen - t0:.2f}s"
    assert not Path(f"/proc/{old_pid}").exists()
    assert not pair.is_running("amq-a") and pair.brokers["amq-a"].pid == old_pid
    assert pair.role("amq-a") == "down"
    # the dead broker's agent refuses connections
    with pytest.raises(OSError):
        jolokia_request(pair.brokers["amq-a"].jolokia_url, get_path="version", timeout=1)
    assert pair.master() == "amq-b"
    # the shared KahaDB store carried the persistent messages over; per-broker counters restart at 0
    _, body = jolokia_request(pair.brokers["amq-b"].jolokia_url,
                              {"type": "read", "mbean": LAB_QUEUE, "attribute": ["QueueSize", "EnqueueCount"]})
    assert list(body["value"].values()) == [{"QueueSize": 2, "EnqueueCount": 0}]


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_restarted_old_master_comes_back_as_slave(activemq_pair: ActiveMQPair) -> None:
    pair = activemq_pair
    old = pair.brokers["amq-a"]
    broker = pair.start_broker("amq-a", timeout=60)
    pair.wait_for_role("amq-a", "slave", timeout=30)
    assert pair.master() == "amq-b"
    assert broker.pid != old.pid and pair.is_running("amq-a")
    assert broker.jolokia_url == old.jolokia_url  # same Jolokia port after restart
    assert broker.openwire_url == old.openwire_url


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_paused_master_keeps_lock(activemq_pair: ActiveMQPair) -> None:
    pair = activemq_pair
    pair.pause("amq-b")
    try:
        assert pair.role("amq-b") == "down"
        time.sleep(4 * pair.lock_acquire_sleep_ms / 1000)
        assert pair.role("amq-a") == "slave"  # SIGSTOP does not release the file lock
    finally:
        pair.resume("amq-b")
    pair.wait_for_role("amq-b", "master", timeout=10)


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_basic_auth_lab_single_broker(agent_jar: Path, tmp_path: Path) -> None:
    pair = ActiveMQPair(tmp_path, jolokia_user="scope", jolokia_password="pw-1")
    try:
        b = pair.start_broker("amq-a", timeout=60)
        assert pair.wait_for_role("amq-a", "master", 30)
        assert jolokia_request(b.jolokia_url, get_path="version")[0] == 401
        assert jolokia_request(b.jolokia_url, get_path="version", **pair.jolokia_auth())[0] == 200
        props = tmp_path / "amq-a" / "conf" / JOLOKIA_PROPERTIES_FILE
        assert stat.S_IMODE(props.stat().st_mode) == 0o600 and "password=pw-1\n" in props.read_text()
        assert b"pw-1" not in Path(f"/proc/{b.pid}/cmdline").read_bytes()
    finally:
        pair.stop()


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_stop_leaves_no_processes(activemq_pair: ActiveMQPair) -> None:
    pair = activemq_pair
    pids = [b.pid for b in pair.brokers.values()]
    assert len(pids) == 2
    pair.pause("amq-a")  # stop() must also end a SIGSTOPped JVM
    t0 = time.monotonic()
    pair.stop()
    assert time.monotonic() - t0 < pair.stop_grace
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"pid {pid} still exists"
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not pair.pids_file.exists()
    assert pair.brokers == {}
    pair.stop()  # idempotent
    assert pair.roles() == {"amq-a": "down", "amq-b": "down"}
