"""The bad-input catalogue: every input boundary driven with the bad cases users meet.

Each case asserts a clear error that names the input (target, file, line, key) and the fix, and
that nothing around it is lost (good rows in the same scrape, file or recording still land).
Boundaries: Jolokia HTTP answers (real servers on 127.0.0.1), Jolokia items (1.x and 2.x error
shapes, wrong attribute types), ObjectNames, GC log files (real files, real tailer), ZooKeeper
(real sockets), the YAML config, recordings (real files, replayed into real Delta tables).
Parsers are fuzzed with hypothesis.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import random
import socket
import threading
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.activemq import ActiveMQPack
from collectors.base import Observation, iter_mbean_reads
from collectors.gc.tailer import GcTailer
from collectors.jolokia import JolokiaClient, error_kind_of
from collectors.objectname import ObjectNameError, parse_object_name, quote_if_needed
from collectors.packs import PACKS, pack_for
from collectors.recording import ReadReport, RecordingError, RecordingWriter, envelope, read_envelopes
from collectors.replay import replay
from collectors.scraper import Collector
from collectors.zookeeper.wire import admin_command, four_letter_word
from lakehouse.store import Lakehouse
from settings import ConfigError, config_from_dict, load_config
from tests.jolokia_stub import activemq_items, fixed, huge, jolokia_stub
from tests.jolokia_stub import replay as replay_route
from tests.servers import bad_http, free_port

HTML_LOGIN = "<html><head><title>Hawtio login</title></head><body><form>user/password</form></body></html>"
JSON_CT = "application/json"


def run(coro):
    return asyncio.run(coro)


async def bulk(url: str, requests: list[dict], **kw):
    async with JolokiaClient(url, name="amq-x", retries=0, **kw) as c:
        return await c.bulk(requests)


TWO_READS = [{"type": "read", "mbean": "java.lang:type=Memory", "attribute": "HeapMemoryUsage"},
             {"type": "read", "mbean": "java.lang:type=Runtime", "attribute": "Uptime"}]

# --- 1. Jolokia HTTP answers ---------------------------------------------------------------------

# id → (route, expected error_kind, phrases the error must contain besides the target name)
HTTP_CASES = {
    "html-login-page-200": (fixed(200, HTML_LOGIN, "text/html"), "not_json", ["HTML page", "/api/jolokia"]),
    "http-401": (fixed(401, "", "text/plain"), "auth", ["401", "password_env"]),
    "http-403-cors": (fixed(403, "Origin http://x is not allowed", "text/plain"), "forbidden", ["403", "origin"]),
    "http-404-html": (fixed(404, "<html><body>Not Found</body></html>", "text/html"), "not_json", ["404", "/api/jolokia"]),
    "http-500-jolokia-error": (fixed(500, '{"status":500,"error_type":"java.lang.NullPointerException","error":"java.lang.NullPointerException"}'),
                               "http", ["HTTP 500", "NullPointerException"]),
    "http-500-html": (fixed(500, "<html><body>Internal Server Error</body></html>", "text/html"), "not_json", ["500"]),
    "single-error-object-200": (fixed(200, '{"status":400,"error_type":"java.lang.IllegalArgumentException","error":"Invalid JSON request"}'),
                                "http", ["refused the whole bulk request", "Invalid JSON request"]),
    "single-non-error-object-200": (fixed(200, '{"status":200,"value":1,"timestamp":1}'),
                                    "http", ["expected a JSON array", "Jolokia endpoint"]),
    # the real 2.6.0 agent's answer to a bulk holding one unparsable ObjectName (tests/test_jolokia_client.py)
    "http-400-jolokia2-malformed": (fixed(400, "400 (Bad Request)\n\nUnterminated key property part\n", "text/plain"),
                                    "http", ["HTTP 400", "refused the whole bulk request", "Unterminated key property part",
                                             "broker_name"]),
    "truncated-json": (fixed(200, '[{"request":{"type":"read"},"value":{"HeapMemoryUsage":{"used":12'), "truncated", ["truncated"]),
    "deeply-nested-json": (fixed(200, "[" * 200_000 + "]" * 200_000), "not_json", ["nested too deeply", "Jolokia endpoint"]),
    "binary-garbage": (fixed(200, random.Random(7).randbytes(4096), "application/octet-stream"), "not_json", ["non-JSON body"]),
    "empty-body": (fixed(200, b""), "not_json", ["non-JSON body"]),
    "fewer-answers-than-requests": (fixed(200, '[{"status":200,"value":1,"timestamp":1}]'), "http", ["1 items for 2 requests"]),
    "enormous-50MB": (huge(50 << 20), "http", ["larger than 32 MiB", "max_destinations_per_scrape"]),
    "enormous-50MB-no-length": (huge(50 << 20, declare_length=False), "http", ["larger than 32 MiB"]),
}


@pytest.fixture(scope="module")
def stub():
    routes = {f"/{k}": v[0] for k, v in HTTP_CASES.items()} | {"/good": replay_route(activemq_items("amq-a"))}
    with jolokia_stub(routes) as s:
        yield s


@pytest.mark.parametrize("case", list(HTTP_CASES), ids=list(HTTP_CASES))
def test_jolokia_http_answer(stub, case):
    _route, kind, phrases = HTTP_CASES[case]
    ex = run(bulk(stub.url(f"/{case}"), TWO_READS))
    assert not ex.ok and ex.items() == []
    assert ex.error_kind == kind, ex.error
    assert ex.error.startswith("amq-x: "), ex.error  # names the target
    for p in phrases:
        assert p.lower() in ex.error.lower(), (p, ex.error)
    # a recording keeps only the text: replay must classify it the same way as the live scrape
    assert error_kind_of(ex.error) == kind
    assert len(ex.error) < 600  # one readable line, not a 50 MB dump


@pytest.mark.parametrize("mode,kind", [("truncated", "truncated"), ("reset", "reset")])
def test_jolokia_connection_cut(mode, kind):
    with bad_http(mode) as url:
        ex = run(bulk(url, TWO_READS))
    assert ex.error_kind == kind and ex.error.startswith("amq-x: ") and error_kind_of(ex.error) == kind


def test_jolokia_refused_names_target_and_fix():
    ex = run(bulk(f"http://127.0.0.1:{free_port()}/api/jolokia", TWO_READS))
    assert ex.error_kind == "refused" and "amq-x" in ex.error and "is the broker running" in ex.error


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "chunked-until-close"])
def test_enormous_answer_is_refused_with_bounded_memory(declare_length):
    """50 MB from the endpoint: the client stops at its cap and never holds the body whole."""
    with jolokia_stub({"/big": huge(50 << 20, declare_length)}) as s:
        tracemalloc.start()
        try:
            ex = run(bulk(s.url("/big"), TWO_READS, max_response_bytes=1 << 20))
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert ex.error_kind == "http" and "larger than 1 MiB" in ex.error
    assert peak < 8 << 20, f"peak {peak / 1e6:.1f} MB while refusing a 50 MB answer"


def test_bad_targets_do_not_disturb_good_ones_and_every_scrape_lands(stub, tmp_path):
    """One collector, a good target among one target per bad answer: every scrape of every target
    lands in bronze (good ones answered, bad ones as error rows with their kind)."""
    bad = ["html-login-page-200", "http-401", "http-500-jolokia-error", "truncated-json", "deeply-nested-json",
           "binary-garbage", "enormous-50MB"]
    targets = [{"name": "good-a", "kind": "activemq", "url": stub.url("/good"), "group": "g"}]
    targets += [{"name": f"bad-{i}", "kind": "activemq", "url": stub.url(f"/{c}"), "group": "g"} for i, c in enumerate(bad)]
    targets.append({"name": "good-b", "kind": "activemq", "url": stub.url("/good"), "group": "g"})
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "400ms", "flush_interval": "300ms",
                            "targets": targets})
    col = Collector(cfg, record=str(tmp_path / "rec.jsonl"))
    stats = run(col.run(duration=1.5))
    rows = Lakehouse(tmp_path / "lh").read("bronze_jolokia").to_pylist()
    assert len(rows) == sum(s.scrapes for s in stats.targets.values()) == len(list(read_envelopes(tmp_path / "rec.jsonl")))
    by_target: dict[str, list[dict]] = {}
    for r in rows:
        by_target.setdefault(r["target"], []).append(r)
    # (on a loaded machine a scrape may also time out: that is a correct observation, never "down")
    for name in ("good-a", "good-b"):
        answered = [r for r in by_target[name] if r["error"] is None and r["response_json"]]
        assert len(answered) >= 2 and all(r["error_kind"] in (None, "timeout") for r in by_target[name])
    for i, case in enumerate(bad):
        got = by_target[f"bad-{i}"]
        assert all(r["error_kind"] in (HTTP_CASES[case][1], "timeout") and r["error"].startswith(f"bad-{i}: ") for r in got), case
        assert any(r["error_kind"] == HTTP_CASES[case][1] for r in got), case
        assert all(r["response_json"] is None for r in got)


# --- 2. Jolokia items: error shapes of 1.x and 2.x, wrong attribute types --------------------------

BROKER = "org.apache.activemq:type=Broker,brokerName=*"
BROKER_A = "org.apache.activemq:brokerName=amq-a,type=Broker"
SLAVE_REQ = {"type": "read", "mbean": BROKER, "attribute": "Slave"}
TOTALS_REQ = {"type": "read", "mbean": BROKER, "attribute": ["BrokerId", "TotalMessageCount"], "config": {"ignoreErrors": True}}

ITEM_CASES = {
    # a whole item failed: Jolokia 1.x shape (no `.error`), 2.x adds error_type_jmx
    "404-instance-not-found-1x": ({"status": 404, "error_type": "javax.management.InstanceNotFoundException",
                                   "error": "javax.management.InstanceNotFoundException : org.apache.activemq:type=Broker,brokerName=*"},
                                  "404: javax.management.InstanceNotFoundException"),
    "500-not-started-2x": ({"status": 500, "error_type": "java.lang.IllegalStateException", "error_type_jmx": "javax.management.RuntimeMBeanException",
                            "error": "java.lang.IllegalStateException : Broker is not yet started."}, "Broker is not yet started"),
    "403-policy-denied": ({"status": 403, "error_type": "java.lang.SecurityException", "error": "Reading attribute Slave is forbidden"},
                          "403: java.lang.SecurityException"),
    "status-missing": ({"error": "no status at all"}, "None: no status at all"),
    "status-as-string": ({"status": "500", "error": "stringly typed"}, "500: stringly typed"),
}


@pytest.mark.parametrize("case", list(ITEM_CASES), ids=list(ITEM_CASES))
def test_failed_item_is_a_fact_and_its_neighbours_still_read(case):
    bad, phrase = ITEM_CASES[case]
    requests = [TOTALS_REQ, SLAVE_REQ]
    response = [{**bad, "request": TOTALS_REQ},
                {"request": SLAVE_REQ, "status": 200, "timestamp": 1, "value": {BROKER_A: {"Slave": False}}}]
    reads = list(iter_mbean_reads(requests, response))
    assert phrase in (reads[0].item_error or ""), reads[0]
    assert reads[1].attributes == {"Slave": False}  # the good item after the bad one is not lost
    obs = Observation(datetime(2026, 11, 22, tzinfo=timezone.utc), "amq-a", "activemq", "g", requests, response, None)
    state = ActiveMQPack().normalize(obs, "k").broker_state
    assert [(r["instance"], r["active"], r["role"]) for r in state] == [("amq-a", True, "master")]


@pytest.mark.parametrize("marker,expected", [
    ("ERROR: Broker is not yet started. (java.lang.IllegalStateException)", "Broker is not yet started."),  # ≤2.4: string
    ({".error": True, "error_type": "java.lang.IllegalStateException", "error": "Broker is not yet started."},  # ≥2.5: object
     "java.lang.IllegalStateException: Broker is not yet started."),
], ids=["ignoreErrors-marker-1x-string", "ignoreErrors-marker-2x-object"])
def test_ignore_errors_markers_both_generations(marker, expected):
    response = [{"request": TOTALS_REQ, "status": 200, "timestamp": 1,
                 "value": {BROKER_A: {"BrokerId": marker, "TotalMessageCount": 7}}}]
    (read,) = iter_mbean_reads([TOTALS_REQ], response)
    assert read.errors == {"BrokerId": expected.replace(" (java.lang.IllegalStateException)", "")} or read.errors["BrokerId"].startswith(expected[:20])
    assert read.attributes == {"TotalMessageCount": 7}


WRONG_TYPES = {  # Slave as the broker might (mis)report it → the role we may conclude
    "bool-false": (False, True), "string-false": ("false", True), "string-TRUE": ("TRUE", False),
    "string-yes": ("yes", None), "int-0": (0, None), "null": (None, None), "list": ([True], None),
    "object": ({"value": False}, None), "float-nan": (float("nan"), None), "huge-int": (10 ** 40, None),
}


@pytest.mark.parametrize("case", list(WRONG_TYPES), ids=list(WRONG_TYPES))
def test_wrong_attribute_types_never_guess_a_role(case):
    slave, active = WRONG_TYPES[case]
    totals = {"BrokerId": ["not", "a", "string"], "TotalMessageCount": "12x"}
    requests = [SLAVE_REQ, TOTALS_REQ]
    response = [{"request": SLAVE_REQ, "status": 200, "value": {BROKER_A: {"Slave": slave}}},
                {"request": TOTALS_REQ, "status": 200, "value": {BROKER_A: totals}}]
    obs = Observation(datetime(2026, 11, 22, tzinfo=timezone.utc), "amq-a", "activemq", "g", requests, response, None)
    (row,) = ActiveMQPack().normalize(obs, "k").broker_state
    assert row["active"] is active and row["total_messages"] is None
    if active is None:
        assert row["role"] == "unknown"


# --- 3. ObjectNames ------------------------------------------------------------------------------

GOOD_NAMES = {
    "artemis-quoted": ('org.apache.activemq.artemis:broker="0.0.0.0",component=addresses,address="orders",subcomponent=queues,routing-type="anycast",queue="orders"',
                       {"broker": "0.0.0.0", "queue": "orders", "routing-type": "anycast"}),
    "quoted-comma-equals-colon": ('d:name="a,b=c:d",type=Queue', {"name": "a,b=c:d", "type": "Queue"}),
    "escaped-quote-and-backslash": ('d:name="say \\"hi\\" \\\\ bye",type=Q', {"name": 'say "hi" \\ bye'}),
    "escaped-newline-star-question": ('d:name="a\\nb\\*c\\?",type=Q', {"name": "a\nb*c?"}),
    "unicode": ("org.apache.activemq:type=Broker,brokerName=zürich-東京-🚀,destinationName=ordres_été",
                {"brokerName": "zürich-東京-🚀", "destinationName": "ordres_été"}),
    "activemq-encoded": ("org.apache.activemq:type=Broker,brokerName=b,destinationName=a_b&qe;c&ast;&amp;", {"destinationName": "a_b&qe;c&ast;&amp;"}),
    "empty-value": ("d:type=,name=x", {"type": "", "name": "x"}),
    "list-pattern": ("java.lang:type=GarbageCollector,*", {"type": "GarbageCollector"}),
}

BAD_NAMES = {
    "no-colon": ("java.lang.type=Memory", "no ':'"),
    "no-properties": ("java.lang:", "no properties"),
    "property-without-equals": ("d:type=Q,name", "without '='"),
    "unterminated-quote": ('d:name="abc,type=Q', "unterminated quoted value"),
    "garbage-after-quote": ('d:name="abc"x,type=Q', "garbage after quoted value"),
    "not-a-string": (None, "not an ObjectName"),
}


@pytest.mark.parametrize("case", list(GOOD_NAMES), ids=list(GOOD_NAMES))
def test_object_names_with_quotes_commas_unicode(case):
    text, props = GOOD_NAMES[case]
    name = parse_object_name(text)
    assert {k: name.get(k) for k in props} == props
    again = parse_object_name(name.canonical)  # canonical form re-quotes what needs it
    assert again.as_dict() == name.as_dict() and again.domain == name.domain


@pytest.mark.parametrize("case", list(BAD_NAMES), ids=list(BAD_NAMES))
def test_bad_object_names_say_what_is_wrong(case):
    text, phrase = BAD_NAMES[case]
    with pytest.raises(ObjectNameError, match=phrase) as e:
        parse_object_name(text)
    assert repr(text) in str(e.value) or text is None


def test_unparsable_mbean_key_in_wildcard_answer_skips_only_that_mbean():
    req = {"type": "read", "mbean": "org.apache.activemq:type=Broker,brokerName=*,destinationType=*,destinationName=*",
           "attribute": ["QueueSize"]}
    value = {'org.apache.activemq:type=Broker,brokerName=b,destinationType=Queue,destinationName="broken': {"QueueSize": 1},
             "org.apache.activemq:type=Broker,brokerName=b,destinationType=Queue,destinationName=ok": {"QueueSize": 2}}
    reads = list(iter_mbean_reads([req], [{"request": req, "status": 200, "value": value}]))
    assert [(r.mbean.get("destinationName"), r.attributes) for r in reads] == [("ok", {"QueueSize": 2})]


_key = st.text(st.characters(blacklist_characters=',=:*?"\n\\', blacklist_categories=("Cs",)), min_size=1, max_size=12)
_value = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=300, deadline=None)
@given(domain=st.text(st.characters(blacklist_characters=':*?', blacklist_categories=("Cs",)), max_size=15),
       props=st.dictionaries(_key, _value, min_size=1, max_size=5))
def test_fuzz_object_name_round_trip(domain, props):
    text = f"{domain}:" + ",".join(f"{k}={quote_if_needed(v)}" for k, v in props.items())
    name = parse_object_name(text)
    assert name.domain == domain and name.as_dict() == props and not name.pattern
    assert parse_object_name(name.canonical).as_dict() == props


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=80), st.text(alphabet=':,="\\*?ab\n', max_size=40)))
def test_fuzz_object_name_parser_raises_only_object_name_error(text):
    try:
        parse_object_name(text)
    except ObjectNameError:
        pass


# --- 4. Jolokia responses and the packs under fuzz -------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats() | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=25,
)
_mbean = st.sampled_from([BROKER, BROKER_A, "java.lang:type=Memory", 'a:b="c', "nocolon", "",
                          "org.apache.activemq.artemis:broker=*", 'org.apache.activemq.artemis:broker="b1"',
                          "kafka.controller:type=KafkaController,name=ActiveControllerCount", "com.bea:Type=JMSServerRuntime,*"])


@st.composite
def _item(draw, request):
    item = draw(st.fixed_dictionaries({}, optional={"status": st.sampled_from([200, 404, 500, "200", None]),
                                                    "value": _json, "error": _json, "error_type": _json,
                                                    "timestamp": _json}))
    if draw(st.booleans()):
        item["request"] = request if draw(st.booleans()) else draw(_json)
    if draw(st.booleans()) and isinstance(request.get("mbean"), str):
        item["value"] = {draw(_mbean): draw(st.dictionaries(st.text(max_size=8), _json, max_size=3))}
    return item


@st.composite
def _exchange(draw, kind):
    pack = pack_for(kind)
    requests = pack.requests() + ([pack.destination_request()] if pack.destination_request() else [])
    requests = requests + draw(st.lists(st.fixed_dictionaries({"type": st.sampled_from(["read", "search", "exec", 3]),
                                                               "mbean": _mbean | _json, "attribute": _json}), max_size=2))
    response = [draw(_item(r)) for r in requests] + draw(st.lists(_json, max_size=2))
    return requests, response


@pytest.mark.parametrize("kind", sorted(PACKS))
def test_fuzz_every_pack_normalizes_any_answer_without_crashing(kind):
    """iter_mbean_reads and each pack's normalize on arbitrary item shapes and value types: rows
    or nothing, never an exception (one odd item must not cost the whole observation)."""
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_exchange(kind))
    def check(ex):
        requests, response = ex
        list(iter_mbean_reads(requests, response))
        obs = Observation(datetime(2026, 11, 22, tzinfo=timezone.utc), "t1", kind, None, requests, response, None)
        rows = pack_for(kind).normalize(obs, "k")
        for r in rows.broker_state:
            assert r["active"] in (True, False, None)

    check()


# --- 5. GC log files ------------------------------------------------------------------------------

GOOD = "[2026-11-22T00:00:00.000+0000][1.000s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.123ms"

GC_CASES = {  # id → (bytes appended to the log, expected per-row error kinds in order)
    "overlong-line": ((GOOD + "\n" + "x" * 5000 + "\n" + GOOD + "\n").encode(), [None, "overlong", None]),
    "binary-garbage": ((GOOD + "\n").encode() + b"\x00\xff\xfe\x01garbage\x9c\n" + (GOOD + "\n").encode(), [None, "binary", None]),
    "invalid-utf8": ((GOOD + "\n").encode() + b"caf\xe9 \xc3\x28\n" + (GOOD + "\n").encode(), [None, "binary", None]),
    "nul-hole-after-copytruncate": ((GOOD + "\n").encode() + b"\x00" * 3000 + (GOOD + "\n").encode(), [None, "binary", None]),
    "short-nul-run-then-junk": ((GOOD + "\n").encode() + b"\x00\x00\xff junk\n" + (GOOD + "\n").encode(), [None, "binary", None]),
    "partial-last-line": ((GOOD + "\n" + GOOD[:40]).encode(), [None]),
    "crlf-and-blank-lines": ((GOOD + "\r\n\n\n" + GOOD + "\n").encode(), [None, None, None, None]),
}


def _gc_config(tmp_path: Path) -> dict:
    return {"lakehouse": str(tmp_path / "lh"), "gc": {"poll_interval": "50ms", "max_line_bytes": 1024},
            "targets": [{"name": "jvm", "kind": "activemq", "url": "http://127.0.0.1:1/jolokia",
                         "gc_logs": [str(tmp_path / "logs" / "gc.log*")]}]}


def _tail_once(tmp_path: Path):
    stop = threading.Event()
    stop.set()
    with GcTailer(config_from_dict(_gc_config(tmp_path))) as t:
        return t.run(stop)


def _gc_rows(tmp_path: Path) -> list[dict]:
    return sorted(Lakehouse(tmp_path / "lh").read("bronze_gc_lines").to_pylist(), key=lambda r: (r["file_id"], r["offset"]))


@pytest.mark.parametrize("case", list(GC_CASES), ids=list(GC_CASES))
def test_gc_log_bad_lines_are_kept_as_errors_and_good_ones_land(tmp_path, case):
    data, kinds = GC_CASES[case]
    (tmp_path / "logs").mkdir()
    log_file = tmp_path / "logs" / "gc.log"
    log_file.write_bytes(data)
    stats = _tail_once(tmp_path)
    rows = _gc_rows(tmp_path)
    assert [r["error_kind"] for r in rows] == kinds, [(r["error_kind"], r["line"]) for r in rows]
    for r in rows:
        if r["error"]:
            assert "skipped" in r["error"] and any(p in r["error"] for p in ("max_line_bytes", "not text", "copytruncate"))
    assert sum(r["length"] for r in rows) == len(data) - (len(data) - data.rfind(b"\n") - 1)  # every byte accounted for
    assert stats.errors == 0
    if case == "partial-last-line":  # the rest of the line arrives: it lands whole, once
        with open(log_file, "ab") as fh:
            fh.write((GOOD[40:] + "\n").encode())
        _tail_once(tmp_path)
        assert [r["line"] for r in _gc_rows(tmp_path)] == [GOOD, GOOD]


def test_gc_log_rotated_and_truncated_lose_nothing(tmp_path):
    (tmp_path / "logs").mkdir()
    log_file = tmp_path / "logs" / "gc.log"
    lines = [GOOD.replace("GC(1)", f"GC({i})") for i in range(9)]
    log_file.write_text("\n".join(lines[:3]) + "\n")
    _tail_once(tmp_path)
    with open(log_file, "a") as fh:  # written after the last poll, then rotated: read under its new name
        fh.write(lines[3] + "\n")
    log_file.rename(tmp_path / "logs" / "gc.log.1")
    log_file.write_text(lines[4] + "\n" + lines[5] + "\n")
    _tail_once(tmp_path)
    log_file.write_text(lines[6] + "\n")  # copytruncate: rewritten in place, shorter
    with open(log_file, "a") as fh:
        fh.write(lines[7] + "\n" + lines[8] + "\n")
    stats = _tail_once(tmp_path)
    got = [r["line"] for r in _gc_rows(tmp_path)]
    assert sorted(got) == sorted(lines) and len(got) == len(set(got)), got
    assert stats.errors == 0


def test_gc_log_unreadable_file_is_named_and_others_go_on(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "gc.log").write_text(GOOD + "\n")
    locked = tmp_path / "logs" / "gc.log.2"
    locked.write_text(GOOD.replace("GC(1)", "GC(2)") + "\n")
    locked.chmod(0)
    os.environ.setdefault("P8", "1")
    if os.geteuid() == 0:  # root reads anything: make it a directory-like failure instead
        locked.chmod(0o644)
        locked.unlink()
        locked.mkdir()
        (locked / "x").write_text("not a log")
    stats = _tail_once(tmp_path)
    assert [r["line"] for r in _gc_rows(tmp_path)][:1] == [GOOD]
    if os.geteuid() != 0:
        assert stats.errors == 1 and "gc.log.2" in stats.last_error


# --- 6. ZooKeeper ---------------------------------------------------------------------------------


def _closing_server(answer: bytes | None):
    """A TCP server that closes at once (answer None) or sends `answer` forever."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(16)
                    while answer:
                        conn.sendall(answer)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return srv


@pytest.mark.parametrize("case", ["refused", "closes-without-answer", "endless-answer", "unresolvable-host"])
def test_zookeeper_unreachable_or_misbehaving(case):
    srv = None
    if case == "refused":
        url = f"zk://127.0.0.1:{free_port()}"
    elif case == "unresolvable-host":
        url = "zk://no-such-host.invalid:2181"
    else:
        srv = _closing_server(None if case == "closes-without-answer" else b"x" * 65536)
        url = f"zk://127.0.0.1:{srv.getsockname()[1]}"
    try:
        ex = run(four_letter_word("zk9", url, "srvr", timeout=2.0))
    finally:
        if srv:
            srv.close()
    assert not ex.ok and ex.error.startswith("zk9: ")
    expect = {"refused": ("connection refused", "is the server running"),
              "closes-without-answer": ("without answering", "ZooKeeper client port"),
              "endless-answer": ("longer than", "srvr"),
              "unresolvable-host": ("cannot reach", "check the host and port")}[case]
    for p in expect:
        assert p in ex.error, ex.error


def test_zookeeper_admin_server_html_and_refused():
    import httpx

    async def go(url):
        async with httpx.AsyncClient() as c:
            return await admin_command(c, "zk9", url, "monitor", 2.0)

    with jolokia_stub({"/commands/monitor": fixed(404, "<html>nope</html>", "text/html")}) as s:
        ex = run(go(s.url("/commands")))
    assert "zk9: HTTP 404" in ex.error and "zookeeper.admin_url" in ex.error
    ex = run(go(f"http://127.0.0.1:{free_port()}/commands"))
    assert "connection refused" in ex.error and "admin_url" in ex.error


def test_unreachable_zookeeper_in_a_collection_lands_error_rows_beside_good_jolokia(stub, tmp_path):
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "scrape_interval": "400ms", "flush_interval": "300ms",
                            "targets": [{"name": "zk1", "kind": "zookeeper", "url": f"127.0.0.1:{free_port()}", "group": "zk",
                                         "timeout": "1s"},
                                        {"name": "amq-a", "kind": "activemq", "url": stub.url("/good"), "group": "g"}]})
    run(Collector(cfg).run(duration=1.3))
    lh = Lakehouse(tmp_path / "lh")
    zk = lh.read("bronze_zk").to_pylist()
    assert zk and all(r["error_kind"] == "refused" and r["error"].startswith("zk1: ") for r in zk)
    assert all(r["error"] is None for r in lh.read("bronze_jolokia").to_pylist())


# --- 7. the YAML config ---------------------------------------------------------------------------

T = {"name": "amq-a", "kind": "activemq", "url": "http://127.0.0.1:8161/api/jolokia"}

CONFIG_CASES = {  # id → (YAML text, phrases the error must contain)
    "invalid-yaml-unclosed": ("targets: [\n  {name: a\n", ["not valid YAML", "line"]),
    "invalid-yaml-tab": ("targets:\n\t- name: a\n", ["not valid YAML", "line 2"]),
    "not-a-mapping": ("- a\n- b\n", ["must be a YAML mapping"]),
    "empty-file": ("", ["must be a YAML mapping"]),
    "binary-garbage": ("\x00\x01\x02garbage", ["not valid YAML"]),
    "unknown-top-level-key": ("scrape_intervall: 5s\n", ["scrape_intervall", "unknown key"]),
    "unknown-target-key-typo": (json.dumps({"targets": [T | {"pasword_env": "X"}]}), ["targets[0].pasword_env", "unknown key"]),
    "unknown-broker-kind": (json.dumps({"targets": [T | {"kind": "rabbitmq"}]}), ["targets[0].kind", "activemq, artemis"]),
    "missing-url": (json.dumps({"targets": [{"name": "a", "kind": "kafka"}]}), ["targets[0].url", "missing"]),
    "url-not-http": (json.dumps({"targets": [T | {"url": "ftp://x/jolokia"}]}), ["targets[0].url", "http://"]),
    "password-in-url": (json.dumps({"targets": [T | {"url": "http://monitor:s3cret@10.0.0.5:8161/api/jolokia"}]}),
                        ["targets[0].url", "password_env"]),
    "bad-duration": ("scrape_interval: soon\n", ["scrape_interval", "'5s'"]),
    "negative-duration": ("scrape_interval: -5\n", ["scrape_interval", "greater than zero"]),
    "duplicate-target-name": (json.dumps({"targets": [T, T]}), ["used twice"]),
    "name-with-slash": (json.dumps({"targets": [T | {"name": "a/b"}]}), ["targets[0].name", "letters, digits"]),
    "both-password-sources": (json.dumps({"targets": [T | {"username": "u", "password_env": "A", "password_file": "/x"}]}),
                              ["only one of password_env and password_file"]),
    "zookeeper-options-on-broker": (json.dumps({"targets": [T | {"zookeeper": {}}]}), ["belong to targets of kind zookeeper"]),
    "wrong-type-for-list": (json.dumps({"targets": "amq-a"}), ["targets"]),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES), ids=list(CONFIG_CASES))
def test_bad_config_names_the_file_the_key_and_the_fix(tmp_path, case):
    text, phrases = CONFIG_CASES[case]
    p = tmp_path / "brokerscope.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    msg = str(e.value)
    assert str(p) in msg, msg
    for ph in phrases:
        assert ph in msg, (ph, msg)
    assert "s3cret" not in msg  # a secret in a bad value is never echoed


def test_config_missing_and_unreadable_file(tmp_path):
    with pytest.raises(ConfigError, match="not found; pass --config"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path)  # a directory


def test_missing_password_env_and_unreadable_ca_file_name_the_target(tmp_path):
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "targets": [T | {"username": "u", "password_env": "P8_NOT_SET_XYZ"}]})
    with pytest.raises(ConfigError, match="amq-a: environment variable P8_NOT_SET_XYZ"):
        run(Collector(cfg).run(duration=0.1))
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"),
                            "targets": [T | {"url": "https://127.0.0.1:1/j", "ca_file": str(tmp_path / "no-ca.pem")}]})
    with pytest.raises(ConfigError, match="amq-a: ca_file .*no-ca.pem cannot be used"):
        run(Collector(cfg).run(duration=0.1))


_yamlish = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["lakehouse", "scrape_interval", "targets", "name", "kind", "url", "gc", "zookeeper", "watch",
                         "timeout", "analysis", "stuck", "group", "x"]), kids, max_size=4),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(_yamlish)
def test_fuzz_config_loader_raises_only_config_error(data):
    try:
        config_from_dict(data, "fuzz.yaml")
    except ConfigError as e:
        assert str(e).startswith("fuzz.yaml: ")


# --- 8. recordings --------------------------------------------------------------------------------


def _env(i: int, target: str = "amq-a") -> dict:
    ts = datetime(2026, 11, 22, 1, 0, i % 60, tzinfo=timezone.utc)
    return envelope(ts, target, [SLAVE_REQ], [{"request": SLAVE_REQ, "status": 200, "value": {BROKER_A: {"Slave": False}}}],
                    None, 1.0)


RECORDING_BAD_LINES = {  # id → (line, phrase of the reported reason)
    "not-json": ("this is not json", "not JSON"),
    "binary-garbage": ("\x00\x01\ufffd\x7f", "not JSON"),
    "json-array": ("[1, 2]", "not a JSON object"),
    "newer-version": (json.dumps(_env(0) | {"v": 2}), "unsupported envelope version 2"),
    "missing-ts": (json.dumps({k: v for k, v in _env(0).items() if k != "ts"}), "'ts'"),
    "bad-ts": (json.dumps(_env(0) | {"ts": "yesterday"}), "not RFC 3339"),
    "request-not-list": (json.dumps(_env(0) | {"request": "read"}), "'request' array"),
    "no-response-no-error": (json.dumps(_env(0) | {"response": None}), "neither response nor error"),
    "deeply-nested": ('{"v":1,"x":' + "[" * 100_000 + "]" * 100_000 + "}", "not JSON (RecursionError"),
    "gc-envelope-without-file-id": (json.dumps({"v": 1, "ts": "2026-11-22T01:00:00.000Z", "source": "gc.log", "target": "amq-a",
                                                "file": "/x", "offset": 0, "line_no": 1, "lines": ["a"]}), "'file_id'"),
}


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
def test_recording_bad_lines_are_listed_and_good_ones_around_them_land(tmp_path, gz):
    lines, expected_bad = [], []
    good = 0
    for i, (_case, (line, phrase)) in enumerate(RECORDING_BAD_LINES.items()):
        lines.append(json.dumps(_env(i)))
        good += 1
        lines.append(line)
        expected_bad.append((len(lines), phrase))
    lines.append(json.dumps(_env(59)))
    good += 1
    text = "\n".join(lines) + "\n" + json.dumps(_env(58))[:50]  # and a half-written last line
    p = tmp_path / ("rec.jsonl.gz" if gz else "rec.jsonl")
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "targets": [T | {"group": "g"}]})
    res = replay(cfg, p)
    assert res.envelopes == good and res.new_rows == good
    assert Lakehouse(tmp_path / "lh").count("bronze_jolokia") == good
    assert [n for n, _ in res.report.bad_lines] == [n for n, _ in expected_bad]
    for (n, why), (_n, phrase) in zip(res.report.bad_lines, expected_bad):
        assert phrase in why, (n, why, phrase)
    assert res.report.truncated_tail
    with pytest.raises(RecordingError, match=rf"{p.name}:2: not JSON.*fix or remove the line"):
        list(read_envelopes(p, strict=True))


def test_recording_of_a_killed_and_restarted_gzip_recorder_keeps_both_segments(tmp_path):
    """kill -9 leaves a gzip member without its end; the restarted recorder appends a new member.
    Every line of both segments must still be read (a plain gzip reader stops at the damage)."""
    p = tmp_path / "rec.jsonl.gz"
    first = RecordingWriter(p)
    for i in range(20):
        first.write(_env(i))
    data = p.read_bytes()  # what a SIGKILL leaves: flushed lines, no gzip trailer
    first.close()
    p.write_bytes(data)
    with RecordingWriter(p) as second:
        for i in range(20, 30):
            second.write(_env(i, "amq-b"))
    rep = ReadReport()
    got = list(read_envelopes(p, rep))
    assert [e["target"] for e in got] == ["amq-a"] * 20 + ["amq-b"] * 10
    assert rep.damaged_segments == 1 and rep.bad_lines == []


def test_recording_with_only_unknown_targets_says_how_to_fix(tmp_path):
    p = tmp_path / "rec.jsonl"
    p.write_text(json.dumps(_env(1, "who-is-this")) + "\n")
    cfg = config_from_dict({"lakehouse": str(tmp_path / "lh"), "targets": [T]})
    with pytest.raises(ConfigError, match="who-is-this.*add them under `targets:`"):
        replay(cfg, p)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(st.just(json.dumps(_env(3))), st.text(max_size=60), _json.map(json.dumps)), max_size=12),
       tail=st.binary(max_size=40), gz=st.booleans(), cut=st.integers(0, 64))
def test_fuzz_recording_reader_never_crashes_and_counts_every_line(tmp_path, lines, tail, gz, cut):
    raw = ("\n".join(lines) + "\n").encode() + tail
    if gz:
        z = gzip.compress(raw)
        raw = z[: max(0, len(z) - cut)] + z  # a cut member, then a whole one
    p = tmp_path / f"fuzz-{random.random()}.jsonl"
    p.write_bytes(raw)
    rep = ReadReport()
    try:
        got = list(read_envelopes(p, rep))
    except RecordingError:
        return
    finally:
        p.unlink()
    assert len(got) == rep.envelopes
    assert rep.envelopes + len(rep.bad_lines) <= rep.lines
    valid = sum(1 for ln in lines if ln == json.dumps(_env(3)))
    if not gz:
        assert rep.envelopes >= valid  # every valid line is read (a valid-looking tail may add one)
    else:
        assert rep.envelopes >= valid  # the whole second member holds them all
