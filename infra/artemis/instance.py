"""One Artemis broker instance on disk: ``artemis create`` from the distribution, then the few edits
the lab needs. Everything else is what ``artemis create`` ships (jolokia-access.xml with
strict Origin checking, JAAS login, management.xml RBAC), so the lab scrapes what a site runs.

Edits, each for a reason:
 * heap: ``--java-memory 256M`` writes ``-Xms512M -Xmx256M`` (Xms above Xmx: the JVM refuses to
   start), so the profile's -Xms/-Xmx pair is rewritten.
 * a read-only monitoring user (``brokerscope``, role ``view``): added to the JAAS properties, to
   the console's allowed roles (HAWTIO_ROLES) and to management.xml's ``get*``/``is*`` entries
   only — it can read every MBean attribute and invoke or write nothing.
 * ``<ha-policy>``: rendered here (shared store, replication with the ZooKeeper lock manager, or
   classic replication with Artemis' default quorum vote), with the failback switches as flags.
 * only with ``announce_port``: the connector the broker announces in the cluster topology (the one
   a replicating backup dials) points there instead of at its own acceptor — the lab's TCP proxy.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

ADMIN_USER = "admin"  # role amq: what `artemis create --user` makes (the lab's own sends)
MONITOR_USER = "brokerscope"
MONITOR_ROLE = "view"
LOCK_MANAGER = "org.apache.activemq.artemis.lockmanager.zookeeper.CuratorDistributedLockManager"


class InstanceError(RuntimeError):
    """`artemis create` failed or a file it writes was not as expected (names the file)."""


@dataclass(frozen=True)
class HaSpec:
    """What goes into ``<ha-policy>`` of one broker."""

    topology: str  # shared-store | replication-zk | replication (classic: quorum vote, no lock manager)
    backup: bool
    failover_on_shutdown: bool = False
    allow_failback: bool = True  # backup: step aside when the primary comes back
    check_for_active: bool = False  # replication primary: look for an active broker before activating
    zk_connect: str | None = None
    zk_namespace: str = "brokerscope-lab"
    zk_session_ms: int = 18000
    coordination_id: str | None = None
    group_name: str | None = None  # classic replication: which backup replicates which primary, among several pairs


@dataclass(frozen=True)
class InstanceSpec:
    name: str
    acceptor_port: int
    http_port: int
    peer_port: int  # the other broker's acceptor (static cluster connector)
    data_dir: Path  # the shared journal (shared store) or the broker's own
    heap: str
    admin_password: str
    monitor_password: str
    cluster_password: str
    ha: HaSpec
    announce_port: int | None = None  # the announced connector's port when not the acceptor's (a proxy)
    serial_gc: bool = False  # the serial collector instead of the profile's G1 (single-threaded full GCs: long pauses)
    cluster_ports: tuple[int, ...] = ()  # more static cluster connectors: the other pairs' brokers (a quorum to vote)


def create(home: Path, instance: Path, spec: InstanceSpec) -> None:
    """``artemis create`` into ``instance`` (once; a restart reuses it), then the lab's edits."""
    if (instance / "etc" / "broker.xml").exists():
        return
    cmd = [
        str(home / "bin" / "artemis"), "create", str(instance), "--silent", "--force",
        "--name", spec.name, "--host", "127.0.0.1", "--http-host", "127.0.0.1",
        "--http-port", str(spec.http_port), "--default-port", str(spec.acceptor_port),
        "--user", ADMIN_USER, "--password", spec.admin_password, "--role", "amq", "--require-login",
        "--clustered", "--static-cluster", ",".join(f"tcp://127.0.0.1:{p}" for p in (spec.peer_port, *spec.cluster_ports)),
        "--cluster-user", "cluster", "--cluster-password", spec.cluster_password,
        "--data", str(spec.data_dir), "--java-memory", spec.heap, "--nio", "--no-autotune",
        "--no-amqp-acceptor", "--no-hornetq-acceptor", "--no-mqtt-acceptor", "--no-stomp-acceptor",
        "--shared-store" if spec.ha.topology == "shared-store" else "--replicated",
    ] + (["--backup"] if spec.ha.backup else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise InstanceError(f"artemis create {instance} failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    etc = instance / "etc"
    _edit(etc / "artemis.profile", _heap_edit(spec.heap))
    if spec.serial_gc:  # one collector per JVM: the JVM refuses two
        _edit(etc / "artemis.profile", lambda t: t.replace("-XX:+UseG1GC -XX:+UseStringDeduplication", "-XX:+UseSerialGC", 1))
    _add_monitor_user(etc, spec.monitor_password)
    _edit(etc / "broker.xml", lambda text: _replace_ha_policy(text, ha_policy_xml(spec.ha)))
    if spec.announce_port not in (None, spec.acceptor_port):
        _edit(etc / "broker.xml", announce_edit(spec.acceptor_port, spec.announce_port))


def _edit(path: Path, change) -> None:
    text = path.read_text()
    new = change(text)
    if new == text:
        raise InstanceError(f"{path}: the lab's edit found nothing to change; did `artemis create` change its output?")
    path.write_text(new)


def _heap_edit(heap: str):
    def change(text: str) -> str:
        return re.sub(r"-Xms\S+ -Xmx\S+", f"-Xms64M -Xmx{heap}", text, count=1)
    return change


def _add_monitor_user(etc: Path, password: str) -> None:
    with open(etc / "artemis-users.properties", "a") as fh:
        fh.write(f"\n{MONITOR_USER} = {password}\n")
    with open(etc / "artemis-roles.properties", "a") as fh:
        fh.write(f"\n{MONITOR_ROLE} = {MONITOR_USER}\n")
    _edit(etc / "artemis.profile", lambda t: t.replace("HAWTIO_ROLES='amq'", f"HAWTIO_ROLES='amq,{MONITOR_ROLE}'"))
    # attribute getters only: the role reads every MBean attribute and invokes nothing — not even
    # list* operations, which Artemis's own RBAC counts as reads (listMessages returns message bodies)
    _edit(etc / "management.xml", lambda t: re.sub(r'(<access method="(?:get|is)\*" roles=")amq("/>)',
                                                   rf"\1amq,{MONITOR_ROLE}\2", t))


def announce_edit(acceptor_port: int, announce_port: int):
    def change(text: str) -> str:  # the cluster connection's <connector-ref>artemis</connector-ref>
        return text.replace(f'<connector name="artemis">tcp://127.0.0.1:{acceptor_port}</connector>',
                            f'<connector name="artemis">tcp://127.0.0.1:{announce_port}</connector>', 1)
    return change


def _replace_ha_policy(text: str, policy: str) -> str:
    new, n = re.subn(r"<ha-policy>.*?</ha-policy>", policy, text, count=1, flags=re.S)
    if n != 1:
        raise InstanceError("broker.xml has no <ha-policy> block to replace")
    return new


def ha_policy_xml(ha: HaSpec) -> str:
    role = "backup" if ha.backup else "primary"
    if ha.topology == "shared-store":
        inner = [f"<failover-on-shutdown>{_b(ha.failover_on_shutdown)}</failover-on-shutdown>"]
        if ha.backup:
            inner.append(f"<allow-failback>{_b(ha.allow_failback)}</allow-failback>")
        return _policy("shared-store", role, inner)
    if ha.topology == "replication":  # Artemis' defaults otherwise: the quorum vote decides
        inner = [f"<group-name>{escape(ha.group_name)}</group-name>"] if ha.group_name else []
        inner += [f"<allow-failback>{_b(ha.allow_failback)}</allow-failback>"] if ha.backup else [
            f"<check-for-active-server>{_b(ha.check_for_active)}</check-for-active-server>"]
        return _policy("replication", role, inner)
    if ha.topology != "replication-zk":
        raise ValueError(f"unknown topology {ha.topology!r}")
    if not ha.zk_connect:
        raise ValueError("replication-zk needs zk_connect (the ZooKeeper ensemble's connect string)")
    inner = [_manager_xml(ha)]
    if ha.backup:
        inner.append(f"<allow-failback>{_b(ha.allow_failback)}</allow-failback>")
    else:
        inner.append(f"<check-for-active-server>{_b(ha.check_for_active)}</check-for-active-server>")
        if ha.coordination_id:
            inner.append(f"<coordination-id>{escape(ha.coordination_id)}</coordination-id>")
    return _policy("replication", role, inner)


def _manager_xml(ha: HaSpec) -> str:
    props = {"connect-string": ha.zk_connect, "namespace": ha.zk_namespace, "session-ms": str(ha.zk_session_ms)}
    lines = "".join(f"<property key={quoteattr(k)} value={quoteattr(v)}/>" for k, v in props.items())
    return f"<manager><class-name>{LOCK_MANAGER}</class-name><properties>{lines}</properties></manager>"


def _policy(kind: str, role: str, inner: list[str]) -> str:
    return f"<ha-policy><{kind}><{role}>{''.join(inner)}</{role}></{kind}></ha-policy>"


def _b(v: bool) -> str:
    return "true" if v else "false"
