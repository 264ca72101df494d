"""The lab's Core JMS failover client (infra/core_clients.py) without a broker: its URL, its build
against the Artemis distribution's client jars, and its ledger read back into the Jepsen counts.
It runs against real brokers in the artemis-clients-core drill (recorded, replayed in
tests/test_artemis_drill_replays.py)."""

from __future__ import annotations

import zipfile

from infra.core_clients import MAIN_CLASS, ClientLedger, FailoverSettings, build_core_clients, client_classpath
from infra.failover_clients import Ledger


def test_the_failover_url_carries_every_setting_and_the_budget_follows_from_them():
    s = FailoverSettings(reconnect_attempts=5, retry_interval_ms=200, retry_interval_multiplier=2.0,
                         client_failure_check_period_ms=1000, connection_ttl_ms=5000, call_timeout_ms=4000)
    assert s.url([1, 2]) == ("(tcp://127.0.0.1:1,tcp://127.0.0.1:2)?ha=true&reconnectAttempts=5&retryInterval=200"
                             "&retryIntervalMultiplier=2.0&clientFailureCheckPeriod=1000&connectionTTL=5000"
                             "&callTimeout=4000")
    assert s.reconnect_budget_s == 0.2 + 0.4 + 0.8 + 1.6 + 3.2
    assert FailoverSettings(reconnect_attempts=-1).reconnect_budget_s is None


def test_the_client_compiles_against_the_distributions_jars_once():
    jar = build_core_clients()
    built = jar.stat().st_mtime
    assert build_core_clients() == jar and jar.stat().st_mtime == built  # up to date: not rebuilt
    with zipfile.ZipFile(jar) as zf:
        assert MAIN_CLASS.replace(".", "/") + ".class" in zf.namelist()
        assert not [n for n in zf.namelist() if n.startswith("org/apache/activemq")]  # the jars stay on the classpath
    cp = client_classpath().split(":")
    assert cp[0] == str(jar) and any("artemis-jms-client-2.40.0" in p for p in cp)


def test_ledgers_read_back_into_the_jepsen_counts(tmp_path):
    """What CoreFailoverClient writes: an indeterminate send sent again (received twice), a commit
    that failed and came again (counted once), a last line cut by a SIGKILL (skipped)."""
    (tmp_path / "p.jsonl").write_text("\n".join([
        '{"t":1.000,"ev":"connected","remote":"127.0.0.1/127.0.0.1:1"}',
        '{"t":1.100,"ev":"send","id":0}', '{"t":1.101,"ev":"acked","id":0}',
        '{"t":1.200,"ev":"send","id":1}',
        '{"t":1.250,"ev":"failover","type":"FAILURE_DETECTED","remote":null}',
        '{"t":2.500,"ev":"failover","type":"FAILOVER_COMPLETED","remote":"127.0.0.1/127.0.0.1:2"}',
        '{"t":2.510,"ev":"send-failed","id":1,"error":"JMSException: AMQ219016"}',
        '{"t":2.510,"ev":"send","id":1}', '{"t":2.600,"ev":"acked","id":1}',
        '{"t":2.700,"ev":"send","id":2}', '{"t":2.7']) + "\n")
    (tmp_path / "c.jsonl").write_text("\n".join([
        '{"t":1.150,"ev":"received","id":0,"redelivered":false}', '{"t":1.151,"ev":"committed","id":0}',
        '{"t":1.210,"ev":"received","id":1,"redelivered":false}', '{"t":1.211,"ev":"committed","id":1}',
        '{"t":2.650,"ev":"received","id":1,"redelivered":false}',
        '{"t":2.660,"ev":"rolled-back","id":1,"error":"TransactionRolledBackException"}',
        '{"t":2.700,"ev":"received","id":1,"redelivered":true}', '{"t":2.710,"ev":"committed","id":1}']) + "\n")
    producer, consumer = ClientLedger.read("p", tmp_path / "p.jsonl"), ClientLedger.read("c", tmp_path / "c.jsonl")
    ledger = Ledger.of(producer, consumer)
    assert (ledger.attempted, ledger.acked, ledger.received, ledger.distinct_received) == (3, 2, 3, 2)
    assert ledger.lost == [] and ledger.duplicated == {1: 2} and ledger.unacked_delivered == 0
    assert producer.times("failover", type="FAILOVER_COMPLETED") == [2.5]
    assert consumer.summary()["rolled_back"] == 1 and producer.summary()["send_failed"] == 1


def test_a_commit_the_failover_left_undecided_is_not_counted_lost(tmp_path):
    """Measured (drill artemis-clients-core, 2026-11-26): message 149 delivered, its commit failed
    over with AMQ219031 ("rolled back on failover however commit may have been successful") and it
    never came again — the broker had consumed it. So did message 144 of drill
    artemis-clients-core-pause-zk (2026-11-27), whose commit timed out (AMQ219014) on the frozen live
    that committed it on SIGCONT. Not lost; a commit the client was told was rolled back
    (TransactionRolledBackException) that never came again is."""
    (tmp_path / "p.jsonl").write_text("\n".join(f'{{"t":1.{i},"ev":"{ev}","id":{i}}}' for i in (0, 1, 2) for ev in ("send", "acked")) + "\n")
    (tmp_path / "c.jsonl").write_text("\n".join([
        '{"t":2.0,"ev":"received","id":0,"redelivered":false}',
        '{"t":2.1,"ev":"rolled-back","id":0,"error":"JMSException: AMQ219031: The transaction was rolled back on failover however commit may have been successful"}',
        '{"t":2.2,"ev":"received","id":1,"redelivered":false}',
        '{"t":2.3,"ev":"rolled-back","id":1,"error":"TransactionRolledBackException: AMQ219030: The transaction was rolled back on failover to a backup server"}',
        '{"t":2.4,"ev":"received","id":2,"redelivered":false}',
        '{"t":7.4,"ev":"rolled-back","id":2,"error":"JMSException: AMQ219014: Timed out after waiting 5000 ms for response when sending packet 68"}']) + "\n")
    ledger = Ledger.of(ClientLedger.read("p", tmp_path / "p.jsonl"), ClientLedger.read("c", tmp_path / "c.jsonl"))
    assert ledger.commit_indeterminate == [0, 2] and ledger.lost == [1]
