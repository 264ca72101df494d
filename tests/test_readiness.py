"""Failover readiness on tiny inputs (no JVM, no Spark): MirrorMaker 2 checkpoint records decoded
from bytes laid out as connect-mirror-client's Checkpoint writes them, kafka.* envelopes parsed into
silver facts, the gold rule per round and partition, its findings, and the config section."""

from __future__ import annotations

import base64
import struct
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from analysis.lag import readiness_findings_of
from analysis.readiness import ReadinessParams, replication_readiness
from collectors.kafka_offsets.checkpoint import CheckpointError, decode_key, decode_value
from collectors.kafka_offsets.client import error_kind_of
from collectors.kafka_offsets.collector import bronze_kafka_row, validate_kafka_envelope
from collectors.kafka_offsets.parse import offset_facts
from collectors.recording import envelope
from settings import ConfigError, config_from_dict

T0 = datetime(2026, 11, 26, 8, 0, 0, tzinfo=timezone.utc)


def kstring(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def checkpoint_bytes(group: str, topic: str, partition: int, upstream: int, downstream: int, metadata: str = "",
                     version: int = 0) -> tuple[bytes, bytes]:
    """Key and value as Checkpoint.recordKey()/recordValue() lay them out (Kafka protocol types)."""
    key = kstring(group) + kstring(topic) + struct.pack(">i", partition)
    value = struct.pack(">h", version) + struct.pack(">qq", upstream, downstream) + kstring(metadata)
    return key, value


# --- decoding -------------------------------------------------------------------------------------------


def test_checkpoint_key_and_value_decode():
    key, value = checkpoint_bytes("g-lab", "primary.lab.orders", 2, 98, 1, "meta ✓")
    k, v = decode_key(key), decode_value(value)
    assert (k.group, k.topic, k.partition) == ("g-lab", "primary.lab.orders", 2)
    assert (v.version, v.upstream_offset, v.downstream_offset, v.metadata) == (0, 98, 1, "meta ✓")


@pytest.mark.parametrize("mangle,match", [
    (lambda k, v: (k[:-2], v), "more expected"),  # key cut inside the partition
    (lambda k, v: (k + b"x", v), "left over"),
    (lambda k, v: (k, struct.pack(">h", 1) + v[2:]), "version 1"),
    (lambda k, v: (k, v[:10]), "more expected"),
    (lambda k, v: (struct.pack(">h", -1) + k[2:], v), "null"),
    (lambda k, v: (struct.pack(">h", 2) + b"\xff\xfe" + k[8:], v), "not UTF-8"),
])
def test_bytes_that_are_no_checkpoint_are_refused_saying_why(mangle, match):
    key, value = mangle(*checkpoint_bytes("g", "primary.t", 0, 5, 5))
    with pytest.raises(CheckpointError, match=match):
        decode_key(key)
        decode_value(value)


# --- envelopes → facts → gold ----------------------------------------------------------------------------


def replication(**over) -> dict:
    return {"name": "orders-dr", "group": "kafka-primary", "source_alias": "primary", "target_alias": "dr",
            "primary": {"bootstrap": "127.0.0.1:9092"}, "dr": {"bootstrap": "127.0.0.1:9093"}, "groups": ["g"], **over}


def params(stale_after: str = "10s", **over) -> ReadinessParams:
    cfg = config_from_dict({"failover_readiness": {"stale_after": stale_after, "replications": [replication(**over)]}})
    return ReadinessParams({r.name: r for r in cfg.failover_readiness.replications}, cfg.failover_readiness.stale_after)


def exchange(ts: datetime, source: str, cluster: str, call: str, response=None, error=None) -> dict:
    env = envelope(ts, "orders-dr", [{"call": call, "cluster": cluster, "bootstrap": "127.0.0.1:9092"}], response, error, 3.0,
                   source=source)
    assert validate_kafka_envelope(env) is None
    return env


def round_envelopes(ts: datetime, committed: dict[int, int] | None, synced: dict[int, int] | None,
                    checkpoints: dict[int, tuple[int, int, float]] | None, dr_logs=(0, 500), primary_error=None,
                    dr_error=None) -> list[dict]:
    """One round: offsets per partition of `orders` (checkpoints: partition → (upstream, downstream, age s))."""
    envs = [exchange(ts, "kafka.groups", "primary", "groups", None if primary_error else {"groups": [
        {"group": "g", "state": "stable", "simple": False}], "errors": []}, primary_error)]
    envs.append(exchange(ts, "kafka.committed", "dr", "committed", None if dr_error else {"groups": {"g": {
        "offsets": [["primary.orders", p, o] for p, o in (synced or {}).items()], "error": None}}}, dr_error))
    records = []
    for p, (up, down, age) in (checkpoints or {}).items():
        key, value = checkpoint_bytes("g", "primary.orders", p, up, down)
        records.append({"partition": 0, "offset": p, "timestamp_ms": int((ts - timedelta(seconds=age)).timestamp() * 1000),
                        "key_b64": base64.b64encode(key).decode(), "value_b64": base64.b64encode(value).decode()})
    envs.append(exchange(ts, "kafka.checkpoints", "dr", "checkpoints", None if dr_error else {
        "topic": "primary.checkpoints.internal", "read": len(records), "caught_up": True, "undecodable": 0,
        "partitions": {"0": {"start": 0, "end": 9, "position": 9}}, "records": records}, dr_error))
    envs.append(exchange(ts, "kafka.committed", "primary", "committed", None if primary_error else {"groups": {"g": {
        "offsets": [["orders", p, o] for p, o in (committed or {}).items()], "error": None}}}, primary_error))
    envs.append(exchange(ts, "kafka.log_offsets", "primary", "log_offsets", None if primary_error else {
        "partitions": [["orders", p, 0, 600] for p in (committed or {})], "errors": {}}, primary_error))
    envs.append(exchange(ts, "kafka.log_offsets", "dr", "log_offsets", None if dr_error else {
        "partitions": [["primary.orders", p, *dr_logs] for p in range(3)], "errors": {}}, dr_error))
    return envs


def gold(rounds: list[list[dict]], p: ReadinessParams | None = None) -> pd.DataFrame:
    facts = [f for envs in rounds for env in envs
             for f in offset_facts(bronze_kafka_row(env, "kafka-primary", "test"), "orders-dr", "kafka-primary")]
    return replication_readiness(pd.DataFrame(facts), params=p or params())


def test_re_read_is_committed_minus_the_synced_offset_and_the_checkpoint_gives_the_age():
    out = gold([round_envelopes(T0, committed={0: 98, 1: 40}, synced={0: 1, 1: 40}, checkpoints={0: (98, 1, 2.5)})])
    r0, r1 = out.sort_values("partition").to_dict("records")
    assert (r0["committed"], r0["translated"], r0["translated_from"], r0["re_read"], r0["skipped"]) == (98, 1, "synced-offset", 97, 0)
    assert (r0["checkpoint_upstream"], r0["checkpoint_offset"], r0["checkpoint_age_s"], r0["status"]) == (98, 1, 2.5, "ready")
    assert r0["topic"] == "orders" and r0["remote_topic"] == "primary.orders" and r0["dr_log_end"] == 500
    assert (r1["re_read"], r1["status"]) == (0, "ready") and pd.isna(r1["checkpoint_age_s"])  # no checkpoint: age unknown


def test_commits_dr_does_not_hold_yet_are_not_counted_as_re_read():
    (r,) = gold([round_envelopes(T0, committed={0: 400}, synced={0: 250}, checkpoints={0: (260, 250, 1.0)},
                                 dr_logs=(0, 307))]).to_dict("records")
    assert (r["re_read"], r["skipped"], r["status"]) == (57, 0, "ready")  # 307 − 250: DR holds no more of what it read
    assert "93 message(s) it committed are not on DR yet" in r["detail"]


def test_a_translation_above_the_commit_is_lossy():
    (r,) = gold([round_envelopes(T0, committed={0: 50}, synced={0: 80}, checkpoints=None)]).to_dict("records")
    assert (r["re_read"], r["skipped"], r["status"]) == (0, 30, "lossy")


def test_a_rewind_the_synced_offset_does_not_follow_names_the_checkpoint_as_the_way_back():
    """As the real MM2 4.3.1 did (drill kafka-consumer-rewind): the group rewound 195 → 95 on the primary,
    its synced offset on DR stayed at 195, the checkpoint for the new commit said 95 → 23."""
    (r,) = gold([round_envelopes(T0, committed={0: 95}, synced={0: 195}, checkpoints={0: (95, 23, 0.5)})]).to_dict("records")
    assert (r["re_read"], r["skipped"], r["status"], r["translated_from"]) == (0, 100, "lossy", "synced-offset")
    assert r["detail"].endswith("100 message(s) would be skipped; MM2's latest checkpoint translates this commit to 23: "
                                "setting the group's offset on DR to it re-reads 72 instead")
    (r,) = gold([round_envelopes(T0, committed={0: 95}, synced={0: 195}, checkpoints={0: (195, 195, 0.5)})]).to_dict("records")
    assert r["detail"].endswith("100 message(s) would be skipped")  # a checkpoint of the old commit shows no way back


def test_auto_never_falls_back_to_the_checkpoint_when_dr_did_not_say_whether_it_holds_a_synced_offset():
    # the rewound group of kafka-consumer-rewind: synced 195 stays above the commit, the checkpoint says 23
    envs = round_envelopes(T0, committed={0: 95}, synced={0: 195}, checkpoints={0: (95, 23, 0.5)})
    without = [e for e in envs if not (e["source"] == "kafka.committed" and e["request"][0]["cluster"] == "dr")]
    (r,) = gold([without]).to_dict("records")
    assert r["status"] == "unknown" and r["translated"] is None and r["re_read"] is None and r["skipped"] is None
    assert "no committed answer from dr" in r["detail"]
    (r,) = gold([without], params(translation="checkpoint")).to_dict("records")
    assert (r["status"], r["translated"], r["re_read"]) == ("ready", 23, 72)  # asked for the checkpoint: it stands


def test_without_translation_auto_offset_reset_decides():
    envs = round_envelopes(T0, committed={0: 120}, synced={}, checkpoints={}, dr_logs=(20, 300))
    unknown, earliest, latest = (gold([envs], params(auto_offset_reset=a)).iloc[0] for a in ("unknown", "earliest", "latest"))
    assert unknown["status"] == "no-translation" and pd.isna(unknown["re_read"]) and "not configured" in unknown["detail"]
    assert (earliest["re_read"], earliest["skipped"], earliest["status"]) == (100, 0, "no-translation")
    assert (latest["re_read"], latest["skipped"], latest["status"]) == (0, 180, "lossy")


def test_stale_only_when_the_old_checkpoint_is_for_an_older_commit():
    old_same = gold([round_envelopes(T0, {0: 70}, {0: 70}, {0: (70, 70, 300.0)})]).iloc[0]
    old_behind = gold([round_envelopes(T0, {0: 90}, {0: 70}, {0: (70, 70, 300.0)})]).iloc[0]
    fresh_behind = gold([round_envelopes(T0, {0: 90}, {0: 70}, {0: (70, 70, 3.0)})]).iloc[0]
    assert old_same["status"] == "ready"  # an idle group gets no new checkpoint: old is fine
    assert (old_behind["status"], old_behind["re_read"]) == ("stale", 20)
    assert fresh_behind["status"] == "ready"


def test_a_round_without_an_answer_is_unknown_not_zero_and_keeps_every_partition():
    rounds = [round_envelopes(T0, {0: 10, 1: 20}, {0: 10, 1: 20}, None),
              round_envelopes(T0 + timedelta(seconds=1), None, None, None, primary_error=(
                  "orders-dr: listing the consumer groups on primary (127.0.0.1:9092): connection refused or lost")),
              round_envelopes(T0 + timedelta(seconds=2), {0: 12, 1: 20}, None, None, dr_error=(
                  "orders-dr: listing committed offsets on dr (127.0.0.1:9093): no answer within the timeout (5s)"))]
    out = gold(rounds).sort_values(["ts", "partition"])
    assert list(out["status"]) == ["ready", "ready", "unknown", "unknown", "unknown", "unknown"]
    unknown = out[out["status"] == "unknown"]
    assert unknown["re_read"].isna().all() and unknown["skipped"].isna().all()
    assert unknown.iloc[0]["detail"].startswith("primary did not answer") and "DR did not answer" in unknown.iloc[2]["detail"]
    assert unknown.iloc[2]["committed"] == 12 and pd.isna(unknown.iloc[2]["translated"])


def test_translation_mode_checkpoint_ignores_the_synced_offsets():
    (r,) = gold([round_envelopes(T0, {0: 60}, {0: 55}, {0: (60, 50, 1.0)})], params(translation="checkpoint")).to_dict("records")
    assert (r["translated"], r["translated_from"], r["re_read"], r["synced_offset"]) == (50, "checkpoint", 10, 55)


def test_findings_are_runs_of_rounds_with_that_status():
    rounds = [round_envelopes(T0 + timedelta(seconds=i), {0: c}, {0: t}, {0: (t, t, age)})
              for i, (c, t, age) in enumerate([(10, 10, 1), (20, 10, 12), (30, 10, 13), (30, 40, 14), (40, 40, 1)])]
    found = readiness_findings_of(gold(rounds), stale_after_s=10.0)
    by_code = {r["code"]: r for r in found.to_dict("records")}
    assert set(by_code) == {"failover-readiness-stale", "failover-readiness-lossy"}
    stale, lossy = by_code["failover-readiness-stale"], by_code["failover-readiness-lossy"]
    assert [pd.Timestamp(stale[k], tz="UTC") for k in ("start_ts", "end_ts")] == [T0 + timedelta(seconds=s) for s in (1, 2)]
    assert (stale["value_max"], stale["threshold"]) == (13.0, 10.0)
    assert (lossy["value_last"], lossy["severity"], lossy["client"], lossy["flow"]) == (10.0, "error", "g", "failover-readiness")
    assert "10 message(s) would be skipped" in lossy["message"] and lossy["instance"] == "orders-dr"


def test_a_round_is_the_answers_of_one_tick_whatever_their_stamps():
    """Another poller (or a loaded collector) stamps each answer as it comes: up to a third of the
    interval apart, they still make one round, not six partial (unknown) ones."""
    envs = [{**e, "ts": (T0 + timedelta(milliseconds=60 * i)).isoformat().replace("+00:00", "Z")}
            for i, e in enumerate(round_envelopes(T0, {0: 30}, {0: 10}, None))]
    (r,) = gold([envs], replace(params(), scrape_interval_s=1.0)).to_dict("records")
    assert (r["status"], r["re_read"]) == ("ready", 20) and pd.Timestamp(r["ts"], tz="UTC") == T0
    assert set(gold([envs])["status"]) == {"unknown"}  # by equal stamps alone: every round lacks an answer


def test_an_unknown_round_does_not_end_a_run_but_a_hole_makes_it_possible():
    at = lambda i: T0 + timedelta(seconds=i)  # noqa: E731
    rounds = [round_envelopes(at(i), {0: 50}, {0: 80}, None) for i in (0, 1, 3)]
    rounds.insert(2, round_envelopes(at(2), None, None, None, primary_error=(
        "orders-dr: listing the consumer groups on primary (127.0.0.1:9092): no answer within the timeout (5s)")))
    (lossy,) = readiness_findings_of(gold(rounds), stale_after_s=10.0).to_dict("records")
    assert [pd.Timestamp(lossy[k], tz="UTC") for k in ("start_ts", "end_ts")] == [at(0), at(3)]
    assert (lossy["certainty"], lossy["unobserved_s"]) == ("certain", 0.0)
    (lossy,) = readiness_findings_of(gold(rounds), stale_after_s=10.0, hole_s=1.5).to_dict("records")
    assert (lossy["certainty"], lossy["unobserved_s"]) == ("possible", 2.0)


def test_undecodable_checkpoints_and_a_partial_read_are_said_in_the_answer():
    envs = round_envelopes(T0, {0: 5}, {}, {0: (5, 5, 1.0)})
    cp = envs[2]["response"]
    cp["records"][0]["value_b64"] = base64.b64encode(struct.pack(">h", 3) + b"\0" * 20).decode()
    facts = offset_facts(bronze_kafka_row(envs[2], "kafka-primary", "t"), "orders-dr", "kafka-primary")
    assert [f["fact"] for f in facts] == ["answer"] and "version 3" in facts[0]["error"] and facts[0]["answered"]
    cp["caught_up"], cp["partitions"]["0"]["position"] = False, 4
    (answer,) = offset_facts(bronze_kafka_row(envs[2], "kafka-primary", "t"), "orders-dr", "kafka-primary")
    assert answer["answered"] is False and "offset 4 of 9" in answer["error"] and answer["error_kind"] == "timeout"


def test_error_classes_of_the_collector_texts():
    assert error_kind_of("r: listing x on primary (h:1): connection refused or lost (_TRANSPORT: …)") == "refused"
    assert error_kind_of("r: … no answer within the timeout (5s) (_TIMED_OUT: …)") == "timeout"
    assert error_kind_of("r: … authentication failed (SASL_AUTHENTICATION_FAILED: …)") == "auth"
    assert error_kind_of("r: … not authorized (GROUP_AUTHORIZATION_FAILED: …)") == "forbidden"
    assert error_kind_of("r: group x is not a consumer group on primary (h:1): …") == "unknown-group"
    assert error_kind_of("r: reading checkpoints on dr (h:2): the DR cluster has no topic p.checkpoints.internal") == "unknown-topic"
    assert error_kind_of(None) is None


# --- config ----------------------------------------------------------------------------------------------


def test_config_section_defaults_and_names(monkeypatch, tmp_path):
    cfg = config_from_dict({"failover_readiness": {"replications": [replication(
        groups="all", dr={"bootstrap": "10.1.0.1:9093", "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                          "sasl_username": "monitor", "sasl_password_env": "DR_PW", "ssl_ca_file": "ca.pem"})]}})
    r = cfg.replication("orders-dr")
    assert (cfg.failover_readiness.stale_after, r.groups, r.translation, r.auto_offset_reset) == (60.0, "all", "auto", "unknown")
    assert r.checkpoints == "primary.checkpoints.internal" and r.source_topic("primary.a.b") == "a.b"
    assert r.source_topic("other.a") is None and r.watches("anything")
    with pytest.raises(ConfigError, match="DR_PW"):
        r.dr.client_settings("x")
    monkeypatch.setenv("DR_PW", "s3cret")
    dr = r.dr.client_settings("x", lambda p: tmp_path / p)
    assert dr["sasl.password"] == "s3cret" and dr["ssl.ca.location"] == str(tmp_path / "ca.pem")
    assert dr["ssl.endpoint.identification.algorithm"] == "https" and "s3cret" not in repr(r)


@pytest.mark.parametrize("over,where,says", [
    ({"primary": {"bootstrap": "kafka1"}}, "replications[0].primary.bootstrap", "host:port"),
    ({"dr": {"bootstrap": "h:1", "client_config": {"sasl.password": "x"}}}, "replications[0].dr.client_config", "never go into the file"),
    ({"dr": {"bootstrap": "h:1", "security_protocol": "SASL_SSL"}}, "replications[0].dr", "sasl_username"),
    ({"groups": []}, "replications[0].groups", "consumer group names"),
    ({"auto_offset_reset": "smallest"}, "replications[0].auto_offset_reset", "earliest, latest, unknown"),
    ({"source_alias": "a b"}, "replications[0].source_alias", "letters, digits"),
])
def test_config_errors_name_the_key_and_the_fix(over, where, says):
    with pytest.raises(ConfigError) as e:
        config_from_dict({"failover_readiness": {"replications": [replication(**over)]}})
    assert f"failover_readiness.{where}" in str(e.value) and says in str(e.value)


def test_a_replication_may_not_share_a_targets_name():
    with pytest.raises(ConfigError, match="also a target's name"):
        config_from_dict({"targets": [{"name": "orders-dr", "kind": "kafka", "url": "http://127.0.0.1:8778/jolokia"}],
                          "failover_readiness": {"replications": [replication()]}})


# --- the collector against clusters that are not there (real librdkafka, closed ports) --------------------


def test_clusters_that_do_not_answer_are_error_rows_naming_the_replication_never_a_crash(tmp_path):
    import asyncio

    from collectors.scraper import Collector
    from lakehouse.store import Lakehouse
    from tests.servers import free_port

    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "1s", "flush_interval": "1s",
                            "failover_readiness": {"replications": [replication(
                                primary={"bootstrap": f"127.0.0.1:{free_port()}"}, dr={"bootstrap": f"127.0.0.1:{free_port()}"},
                                timeout="1s")]}})
    col = Collector(cfg, record=str(tmp_path / "rec.jsonl"))
    stats = asyncio.run(col.run(duration=1.5))
    rows = Lakehouse(cfg.lakehouse_root()).read("bronze_kafka").to_pylist()
    assert stats.targets["orders-dr"].errors >= 1 and stats.bronze_rows == len(rows) > 0
    first = [r for r in rows if r["ts"] == min(x["ts"] for x in rows)]
    assert {r["source"] for r in first} == {"kafka.groups", "kafka.committed", "kafka.checkpoints", "kafka.log_offsets"}
    assert all(r["error"] and r["response_json"] is None for r in first)
    groups = next(r for r in first if r["source"] == "kafka.groups")
    assert groups["error"].startswith("orders-dr: listing the consumer groups on primary (127.0.0.1:")
    assert groups["error_kind"] in ("refused", "timeout") and "state unknown" in groups["error"]
    skipped = next(r for r in first if r["source"] == "kafka.committed" and r["cluster"] == "primary")
    assert skipped["error"].startswith("not asked in this round: orders-dr: listing the consumer groups")
    facts = [f for r in first for f in offset_facts(r, "orders-dr", "kafka-primary")]
    assert {f["fact"] for f in facts} == {"answer"} and not any(f["answered"] for f in facts)


def test_the_readme_example_of_the_section_is_a_valid_config(monkeypatch):
    import re
    from pathlib import Path

    import yaml

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"```yaml\n(failover_readiness:\n.*?)```", readme, re.S).group(1)
    cfg = config_from_dict(yaml.safe_load(block))
    (r,) = cfg.failover_readiness.replications
    assert (r.name, r.cluster_group, r.groups, r.auto_offset_reset, r.dr.security_protocol) == (
        "orders-dr", "kafka-primary", ["orders-app"], "earliest", "SASL_SSL")
    monkeypatch.setenv("DR_KAFKA_PASSWORD", "pw")
    assert r.dr.client_settings("x")["sasl.mechanism"] == "SCRAM-SHA-512"
