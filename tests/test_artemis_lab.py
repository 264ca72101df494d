"""The Artemis lab's pieces that need no JVM: the artifact cache's checksum rule, the rendered
<ha-policy>, the role read from a console answer, the broker-log time parser (real lines)."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET

import pytest

from infra import artifacts
from infra.artemis.instance import LOCK_MANAGER, HaSpec, announce_edit, ha_policy_xml
from infra.artemis_lab import ArtemisPair, log_times, role_of


def test_a_cached_artifact_counts_only_when_it_matches_its_published_sha1(tmp_path, monkeypatch):
    monkeypatch.setenv("BROKERSCOPE_CACHE", str(tmp_path))
    monkeypatch.delenv("BROKERSCOPE_ARTEMIS_HOME", raising=False)
    art = artifacts.JOLOKIA_AGENT
    f = tmp_path / "maven" / art.file_name
    f.parent.mkdir()
    f.write_bytes(b"agent bytes")
    assert artifacts.verified(art) is None  # no .sha1 beside it
    (f.parent / (f.name + ".sha1")).write_text(hashlib.sha1(b"agent bytes").hexdigest() + "  " + f.name + "\n")
    assert artifacts.verified(art) == f
    f.write_bytes(b"tampered")
    assert artifacts.verified(art) is None
    with pytest.raises(artifacts.ArtifactError, match="python -m infra.artifacts"):
        artifacts.artemis_home()
    assert art.coordinates == "org.jolokia:jolokia-agent-jvm:2.6.0:jar:javaagent"
    assert artifacts.ARTEMIS.coordinates == "org.apache.activemq:apache-artemis:2.40.0:tar.gz:bin"


def test_shared_store_policy_and_the_failback_switch():
    primary = ET.fromstring(ha_policy_xml(HaSpec("shared-store", backup=False, failover_on_shutdown=True)))
    assert primary.find("shared-store/primary/failover-on-shutdown").text == "true"
    assert primary.find("shared-store/primary/allow-failback") is None
    backup = ET.fromstring(ha_policy_xml(HaSpec("shared-store", backup=True, allow_failback=False)))
    assert backup.find("shared-store/backup/allow-failback").text == "false"


def test_replication_policy_uses_the_zookeeper_lock_manager():
    ha = HaSpec("replication-zk", backup=False, zk_connect="127.0.0.1:2181,127.0.0.1:2182", zk_session_ms=6000,
                check_for_active=True, coordination_id="pair-1")
    policy = ET.fromstring(ha_policy_xml(ha))
    manager = policy.find("replication/primary/manager")
    assert manager.find("class-name").text == LOCK_MANAGER
    props = {p.get("key"): p.get("value") for p in manager.iter("property")}
    assert props == {"connect-string": "127.0.0.1:2181,127.0.0.1:2182", "namespace": "brokerscope-lab", "session-ms": "6000"}
    assert policy.find("replication/primary/check-for-active-server").text == "true"
    assert policy.find("replication/primary/coordination-id").text == "pair-1"
    with pytest.raises(ValueError, match="zk_connect"):
        ha_policy_xml(HaSpec("replication-zk", backup=True))


def test_classic_replication_policy_has_no_lock_manager_and_one_pair_half_can_differ(tmp_path):
    primary = ET.fromstring(ha_policy_xml(HaSpec("replication", backup=False, coordination_id="ignored")))
    assert primary.find("replication/primary/manager") is None
    assert primary.find("replication/primary/check-for-active-server").text == "false"  # Artemis's default
    assert primary.find("replication/primary/coordination-id") is None  # a lock-manager setting
    backup = ET.fromstring(ha_policy_xml(HaSpec("replication", backup=True, allow_failback=False)))
    assert backup.find("replication/backup/allow-failback").text == "false"
    pair = ArtemisPair(tmp_path, "replication-zk", zk_connect="127.0.0.1:2181",
                       ha_overrides={"art-b": {"allow_failback": False, "zk_namespace": "other"}})
    assert pair.ha["art-b"].allow_failback is False and pair.ha["art-b"].zk_namespace == "other"
    assert pair.ha["art-a"].allow_failback is True and pair.ha["art-a"].zk_namespace == "brokerscope-lab"


def test_role_from_console_answers_as_artemis_gives_them():
    def item(**attrs):
        return {"status": 200, "value": {'org.apache.activemq.artemis:broker="art-b"': attrs}}

    assert role_of(item(Active=True, Backup=False)) == "active"
    assert role_of(item(Active=False, Backup=True)) == "backup"
    assert role_of(item(Active=False, Backup=False)) == "starting"  # activating after a takeover
    assert role_of({"status": 500, "error": "java.lang.IllegalStateException : Broker is not started."}) == "starting"
    assert role_of({"status": 404, "error": "javax.management.InstanceNotFoundException"}) == "starting"


def test_broker_log_times_are_utc_and_match_on_the_message(tmp_path):
    log = tmp_path / "artemis.log"
    log.write_text(
        "2026-11-25 22:08:55,283 INFO  [org.apache.activemq.artemis.core.server] AMQ221010: Backup Server is now active\n"
        "\tat some.stack.Frame(Frame.java:1)\n"
        "2026-11-25 22:09:03,284 INFO  [org.apache.activemq.artemis.core.server] AMQ221008: primary server wants to "
        "restart, restarting server in backup\n")
    (t, msg), = log_times(log, "AMQ221010")
    assert msg == "AMQ221010: Backup Server is now active" and t == 1795644535.283
    assert log_times(log, "AMQ2210(08|10)", since=1795644536.0)[0][1].startswith("AMQ221008")
    assert log_times(tmp_path / "missing.log", "AMQ") == []


def test_classic_replication_policy_has_no_lock_manager():
    """Artemis' defaults otherwise: the quorum vote decides (the artemis-link-cut drill)."""
    primary = ET.fromstring(ha_policy_xml(HaSpec("replication", backup=False)))
    assert primary.find("replication/primary/manager") is None
    assert primary.find("replication/primary/check-for-active-server").text == "false"
    backup = ET.fromstring(ha_policy_xml(HaSpec("replication", backup=True, allow_failback=False)))
    assert [e.tag for e in backup.find("replication/backup")] == ["allow-failback"]


def test_the_announced_connector_can_point_at_the_replication_proxy():
    """The connector a broker announces in the topology is the one its backup dials for replication
    (seen with ss -tnp on 2.40.0): with a proxy port it points there, the acceptor stays."""
    xml = ('<connector name="artemis">tcp://127.0.0.1:61616</connector>\n'
           '<acceptor name="artemis">tcp://127.0.0.1:61616?protocols=CORE</acceptor>')
    edited = announce_edit(61616, 40001)(xml)
    assert '<connector name="artemis">tcp://127.0.0.1:40001</connector>' in edited
    assert '<acceptor name="artemis">tcp://127.0.0.1:61616?protocols=CORE</acceptor>' in edited
