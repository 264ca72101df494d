"""Pure parsing: one bronze_kafka row → its silver kafka_offsets facts (lakehouse/tables.py).

Every exchange gives one `answer` fact (did the call answer, and if not why); an answered one also
gives its content: `group` facts (the primary's consumer groups), `committed` facts (one per group
and partition), `checkpoint` facts (MirrorMaker 2's latest checkpoint per group and partition,
decoded from the raw record bytes), `log` facts (earliest and latest offset per partition). A group
or partition the call could not answer for is an `answer` fact of its own, answered false.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from typing import Any

from collectors.kafka_offsets.checkpoint import CheckpointError, decode_key, decode_value
from collectors.kafka_offsets.client import NOT_ASKED, error_kind_of

FACT_COLUMNS = ("consumer_group", "topic", "partition", "offset", "log_start", "upstream_offset", "checkpoint_ts",
                "group_state", "answered", "error", "error_kind")


def _fact(base: dict, fact: str, **values: Any) -> dict:
    return {**base, "fact": fact, **{c: values.get(c) for c in FACT_COLUMNS}}


def _answer(base: dict, error: str | None, **where: Any) -> dict:
    return _fact(base, "answer", answered=error is None, error=error, error_kind=error_kind_of(error), **where)


def offset_facts(row: dict, replication: str, group: str) -> list[dict]:
    """The facts of one bronze_kafka row (`replication`, `group`: from the current config, which wins
    over what was stored at collection time)."""
    base = {"obs_key": row["obs_key"], "ts": row["ts"], "obs_date": row["obs_date"], "replication": replication,
            "group_name": group, "cluster": row["cluster"] or "", "call": row["call"] or ""}
    if row["error"] is not None or row["response_json"] is None:
        return [_answer(base, row["error"] or "no answer recorded")]
    try:
        resp = json.loads(row["response_json"])
        return _content(base, resp)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return [_answer(base, f"{replication}: an answer of {base['call']} on {base['cluster']} brokerscope cannot read "
                              f"({type(e).__name__}: {e}); was it recorded by another tool?")]


def exchange_health(facts) -> list[dict]:
    """collector_health-like rows of the Kafka-protocol exchanges from kafka_offsets facts: one per
    replication, cluster and round (`target` `<replication>/<cluster>`), answered when every call
    to that cluster answered; else the first call's error (a cluster not asked again after a
    failed call says so: the failed call's error is kept). For the overview and CollectorCannotReachTarget, which read the Jolokia
    targets' collector_health."""
    rounds: dict[tuple, dict] = {}
    for f in facts:
        if f["fact"] != "answer" or f.get("consumer_group") is not None or f.get("topic") is not None:
            continue  # a group's or partition's own error is no failed exchange
        key = (f["replication"], f["cluster"], f["ts"])
        r = rounds.setdefault(key, {"ts": f["ts"], "target": f"{f['replication']}/{f['cluster']}", "kind": "kafka",
                                    "group_name": f["group_name"], "answered": True, "error": None, "error_kind": None})
        skipped = (f["error"] or "").startswith(NOT_ASKED)
        if not f["answered"] and (r["answered"] or (r["error"] or "").startswith(NOT_ASKED) and not skipped):
            r.update(answered=False, error=f["error"], error_kind=f["error_kind"])  # the failed call over "not asked"
    return sorted(rounds.values(), key=lambda r: (r["target"], r["ts"]))


def _content(base: dict, resp: dict) -> list[dict]:
    call = base["call"]
    if call == "groups":
        return [_answer(base, None)] + [_fact(base, "group", consumer_group=g["group"], group_state=g.get("state"))
                                        for g in resp["groups"]]
    if call == "committed":
        out = [_answer(base, None)]
        for group, r in resp["groups"].items():
            if r.get("error"):
                out.append(_answer(base, r["error"], consumer_group=group))
            out += [_fact(base, "committed", consumer_group=group, topic=t, partition=int(p), offset=int(o))
                    for t, p, o in r.get("offsets") or []]
        return out
    if call == "log_offsets":
        out = [_answer(base, None)]
        out += [_fact(base, "log", topic=t, partition=int(p), log_start=s, offset=e) for t, p, s, e in resp["partitions"]]
        for where, error in (resp.get("errors") or {}).items():
            topic, sep, partition = where.rpartition("-")  # `<topic>-<partition>`, or a whole topic
            if not (sep and partition.isdigit()):
                topic, partition = where, None
            out.append(_answer(base, error, topic=topic, partition=int(partition) if partition is not None else None))
        return out
    if call == "checkpoints":
        return checkpoint_facts(base, resp)
    return [_answer(base, f"unknown call {call!r} (a recording of a newer brokerscope?)")]


def checkpoint_facts(base: dict, resp: dict) -> list[dict]:
    """The latest checkpoint per group and partition, decoded; records that do not decode are
    counted in the exchange's `answer` fact (answered, with what was wrong)."""
    facts, bad = [], []
    for r in resp["records"]:
        try:
            key = decode_key(base64.b64decode(r["key_b64"]))
            value = decode_value(base64.b64decode(r["value_b64"]))
        except (CheckpointError, ValueError) as e:
            bad.append(str(e))
            continue
        ts = r.get("timestamp_ms")
        facts.append(_fact(base, "checkpoint", consumer_group=key.group, topic=key.topic, partition=key.partition,
                           offset=value.downstream_offset, upstream_offset=value.upstream_offset,
                           checkpoint_ts=None if ts is None else datetime.fromtimestamp(ts / 1000, timezone.utc)))
    notes = []
    if bad:
        notes.append(f"{len(bad)} checkpoint record(s) could not be decoded, e.g. {bad[0]}")
    if resp.get("undecodable"):
        notes.append(f"{resp['undecodable']} record key(s) of {resp.get('topic')} are no checkpoint keys")
    answer = _answer(base, None)
    if not resp.get("caught_up", True):
        behind = {p: v for p, v in (resp.get("partitions") or {}).items() if v["position"] < v["end"]}
        answer = _answer(base, f"{base['replication']}: {resp.get('topic')} on dr was read only up to "
                               + ", ".join(f"offset {v['position']} of {v['end']} (partition {p})" for p, v in behind.items())
                               + " within the timeout; the latest checkpoints may be missing — no answer within the timeout")
    elif notes:
        answer["error"] = "; ".join(notes)
    return [answer] + facts
