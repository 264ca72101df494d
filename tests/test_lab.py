"""Real-JVM tests of the read-only Jolokia agent and the ActiveMQ Classic master/slave lab (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
import xml.dom.minidom
from pathlib import Path

import pytest

from infra.lab import (TEMPLATE_DIR, ActiveMQPair, LabError, _render, agent_jvm_arg, build_agent, jolokia_request,
                       stomp_send)

try:
    from lab_fixtures import AgentJVM, activemq_pair, agent_jar, agent_jvm, requires_lab  # noqa: F401
except ImportError:  # tests/ imported as a package
    from tests.lab_fixtures import AgentJVM, activemq_pair, agent_jar, agent_jvm, requires_lab  # noqa: F401

BROKER = "org.apache.activemq:type=Broker,brokerName=*"
QUEUES = "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=*"
LAB_QUEUE = "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=BROKERSCOPE.LAB"


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


def test_agent_jvm_arg_rejects_commas(tmp_path: Path) -> None:
    arg = agent_jvm_arg(tmp_path / "a.jar", port=0, strict_origin=True)
    assert arg.endswith("host=127.0.0.1,port=0,path=/jolokia,strictOrigin=true")
    with pytest.raises(ValueError):
        agent_jvm_arg(tmp_path / "a.jar", port_file=tmp_path / "x,y")


# ------------------------------------------------------------------ agent (bare JVM)


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_build_agent_is_cached(agent_jar: Path) -> None:
    mtime = agent_jar.stat().st_mtime_ns
    assert build_agent() == agent_jar
    assert agent_jar.stat().st_mtime_ns == mtime


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_version_get(agent_jvm: AgentJVM) -> None:
    with urllib.request.urlopen(agent_jvm.url + "/version", timeout=5) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"  # Jolokia default mimeType
        body = json.loads(resp.read().decode("utf-8"))
    assert body["status"] == 200
    assert body["value"]["agent"] == "1.7.1"
    assert body["value"]["protocol"] == "7.2"
    assert body["value"]["config"]["agentType"] == "jvm"
    assert isinstance(body["timestamp"], int)


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_get_read_and_mime_type(agent_jvm: AgentJVM) -> None:
    status, body = agent_jvm.request(get_path="read/java.lang:type=Memory/HeapMemoryUsage/used")
    assert status == 200 and body["status"] == 200
    assert isinstance(body["value"], int) and body["value"] > 0
    with urllib.request.urlopen(agent_jvm.url + "/read/java.lang:type=Runtime/VmName?mimeType=application/json",
                                timeout=5) as resp:
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
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
    ])
    assert status == 200  # bulk: HTTP 200, per-item status, request order kept
    assert [item["status"] for item in body] == [200, 404, 200, 404]
    assert isinstance(body[0]["value"], int)
    assert body[1]["error_type"] == "javax.management.InstanceNotFoundException"
    assert "stacktrace" not in body[1]  # includeStackTrace=false by default in our agent
    assert body[2]["value"] == []  # search without match: empty list, status 200
    assert "Zürich€" in body[3]["error"]  # UTF-8 both ways


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_refuses_exec_and_write(agent_jvm: AgentJVM) -> None:
    status, body = agent_jvm.request([
        {"type": "exec", "mbean": "java.lang:type=Memory", "operation": "gc"},
        {"type": "write", "mbean": "java.lang:type=Memory", "attribute": "Verbose", "value": True},
        {"type": "read", "mbean": "java.lang:type=Memory", "attribute": "Verbose"},
    ])
    assert status == 200
    assert [item["status"] for item in body] == [403, 403, 200]
    assert body[0]["error"] == "java.lang.Exception : Operation gc forbidden for MBean java.lang:type=Memory"
    assert "Writing attribute Verbose forbidden" in body[1]["error"]
    assert body[2]["value"] is False
    status, single = agent_jvm.request(get_path="exec/java.lang:type=Memory/gc")
    assert status == 200 and single["status"] == 403


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_bad_json_and_method(agent_jvm: AgentJVM) -> None:
    req = urllib.request.Request(agent_jvm.url, data=b"not json", method="POST")
    with urllib.request.urlopen(req, timeout=5) as resp:
        body = json.loads(resp.read())
    assert resp.status == 200 and body["status"] == 400  # like Jolokia 1.x JVM agent
    req = urllib.request.Request(agent_jvm.url, method="DELETE")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 405


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_basic_auth_and_strict_origin(agent_jar: Path, tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("s3cret\n")
    with AgentJVM(agent_jar, tmp_path, user="jolokia", password_file=pw, strict_origin=True) as jvm:
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
        status, body = jvm.request(get_path="version", user="jolokia", password="s3cret", headers=origin)
        assert status == 200 and body["status"] == 200
        # strictOrigin: authenticated but neither Origin nor Referer -> HTTP 403 (Jolokia error JSON body)
        status, body = jvm.request(get_path="version", user="jolokia", password="s3cret")
        assert status == 403
        assert body["status"] == 403 and "not allowed" in body["error"]
        status, body = jvm.request({"type": "version"}, user="jolokia", password="s3cret",
                                   headers={"Referer": "http://localhost/x"})
        assert status == 200 and body["status"] == 200


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_agent_threads_do_not_keep_jvm_alive(agent_jar: Path, tmp_path: Path) -> None:
    # main() returns at once (stdin is /dev/null): the JVM must exit although the agent listens
    res = subprocess.run(
        ["java", "-Xmx64m", agent_jvm_arg(agent_jar, port=0, port_file=tmp_path / "p"), "-jar", str(agent_jar)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
    )
    assert res.returncode == 0
    assert (tmp_path / "p").read_text().strip().isdigit()


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
    assert "Apache ActiveMQ 5.17.2 (amq-a," in pair.brokers["amq-a"].log.read_text()
    assert "is now in slave mode waiting a lock" in pair.brokers["amq-b"].activemq_log.read_text()


@requires_lab
@pytest.mark.slow
@pytest.mark.lab
def test_slave_and_master_jolokia_answers(activemq_pair: ActiveMQPair) -> None:
    master, slave = activemq_pair.brokers["amq-a"], activemq_pair.brokers["amq-b"]
    status, body = jolokia_request(slave.jolokia_url, [
        {"type": "read", "mbean": BROKER, "attribute": "Slave"},
        {"type": "read", "mbean": BROKER, "attribute": "BrokerId"},
        {"type": "read", "mbean": BROKER, "attribute": ["Slave", "BrokerId"]},
        {"type": "read", "mbean": BROKER, "attribute": ["Slave", "BrokerId"], "config": {"ignoreErrors": True}},
        {"type": "read", "mbean": QUEUES},
    ])
    assert status == 200
    assert [i["status"] for i in body] == [200, 500, 500, 200, 404]
    assert body[0]["value"] == {"org.apache.activemq:brokerName=amq-b,type=Broker": {"Slave": True}}
    assert body[1]["error"] == "java.lang.IllegalStateException : Broker is not yet started."
    tolerant = body[3]["value"]["org.apache.activemq:brokerName=amq-b,type=Broker"]
    assert tolerant["Slave"] is True and tolerant["BrokerId"].startswith("ERROR: java.lang.IllegalStateException")
    assert body[4]["error_type"] == "javax.management.InstanceNotFoundException"

    stomp_send(master.stomp_url, "/queue/BROKERSCOPE.LAB", ["one", "twö"])
    status, body = jolokia_request(master.jolokia_url, [
        {"type": "read", "mbean": BROKER, "attribute": ["Slave", "BrokerId"]},
        {"type": "read", "mbean": LAB_QUEUE, "attribute": ["QueueSize", "EnqueueCount"]},
    ])
    assert [i["status"] for i in body] == [200, 200]
    assert body[0]["value"]["org.apache.activemq:brokerName=amq-a,type=Broker"]["Slave"] is False
    queue = body[1]["value"]["org.apache.activemq:brokerName=amq-a,destinationName=BROKERSCOPE.LAB,"
                             "destinationType=Queue,type=Broker"]
    assert queue == {"QueueSize": 2, "EnqueueCount": 2}


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
        assert oct((tmp_path / "jolokia.password").stat().st_mode & 0o777) == "0o600"
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
