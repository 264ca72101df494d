"""Property tests at the input boundaries (P11), bounded for CI: the "ci" hypothesis profile
(tests/conftest.py) is derandomized, and each test caps its examples, so the suite takes seconds.

- HTTP answers: any status, charset, encoding, length and body a server may send, through the real
  client on a real socket: an Exchange always comes back, never an exception; an answered body
  goes through every pack into rows that fit their contracts.
- A running collector fed drawn answers beside a healthy target: the healthy rows land.
- Recordings: any envelope → bronze row → every silver table, never an Arrow error.
- GC logs: open_log's bounded reader gives the lines the text reader gave; damage never raises.
- Config: any `*_env` value is taken or refused without being echoed.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.silver import normalize_batch
from collectors.base import collector_health_row, scrape_requests
from collectors.gc import open_log
from collectors.gc.limits import GcInputError
from collectors.jolokia import JolokiaClient
from collectors.packs import PACKS
from collectors.quarantine import normalize_checked
from collectors.recording import bronze_row, envelope, observation_from_envelope
from collectors.scraper import Collector
from lakehouse.store import Lakehouse
from lakehouse.tables import SILVER_FROM_JOLOKIA, contract
from settings import ConfigError, config_from_dict
from tests.jolokia_stub import activemq_items, jolokia_stub
from tests.jolokia_stub import replay as replay_route

KINDS = ("refused", "reset", "timeout", "auth", "forbidden", "http", "not_json", "truncated", "tls", "other")
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# --- what a hostile endpoint may send ----------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=12)
items = st.one_of(
    values,
    st.fixed_dictionaries({"status": st.sampled_from([200, 404, 500, "200", None]), "value": values},
                          optional={"request": st.dictionaries(st.sampled_from(["type", "mbean", "attribute"]), values, max_size=3),
                                    "timestamp": values, "error": values, "error_type": values}),
)


@st.composite
def answers(draw) -> dict:
    """One HTTP answer: status, headers, body bytes, and how the length is declared."""
    if draw(st.booleans()):
        doc = draw(st.lists(items, max_size=6))
        body = json.dumps(doc, allow_nan=True).encode()
    else:
        body = draw(st.binary(max_size=300))
    charset = draw(st.sampled_from(["", "; charset=utf-8", "; charset=latin-1", "; charset=utf-16", "; charset=x-bogus",
                                    "; charset=", '; charset="utf-8"']))
    return {
        "status": draw(st.sampled_from([200, 200, 200, 204, 301, 302, 304, 400, 401, 403, 404, 500, 503, 599])),
        "ctype": draw(st.sampled_from(["application/json", "text/html", "text/plain", "application/octet-stream", ""])) + charset,
        "encoding": draw(st.sampled_from([None, None, "gzip", "deflate", "br", "x-bogus"])),
        "length": draw(st.sampled_from(["exact", "exact", "none", "short", "long"])),
        "body": body,
    }


def serve(answer_of) -> callable:
    """A route answering with `answer_of()`'s answer, exactly as drawn (the connection closed after)."""
    def route(h: BaseHTTPRequestHandler, _body: bytes) -> None:
        a = answer_of()
        body = gzip.compress(a["body"]) if a["encoding"] == "gzip" else a["body"]
        h.close_connection = True
        h.send_response(a["status"])
        if a["ctype"]:
            h.send_header("Content-Type", a["ctype"])
        if a["encoding"]:
            h.send_header("Content-Encoding", a["encoding"])
        n = {"exact": len(body), "short": max(0, len(body) - 3), "long": len(body) + 50, "none": None}[a["length"]]
        if n is not None:
            h.send_header("Content-Length", str(n))
        h.end_headers()
        try:
            h.wfile.write(body)
        except OSError:
            pass

    return route


@pytest.fixture(scope="module")
def endpoint():
    slot: dict = {}
    with jolokia_stub({"/fuzz": serve(lambda: slot["answer"])}) as stub:
        yield stub.url("/fuzz"), slot


def _fits(rows: list[dict], table: str) -> None:
    pa.RecordBatch.from_pylist(rows, schema=contract(table).schema)  # raises when a value does not fit


@FAST
@given(a=answers(), kind=st.sampled_from(sorted(PACKS)))
def test_any_http_answer_is_an_exchange_and_its_rows_fit_their_tables(endpoint, a, kind):
    url, slot = endpoint
    slot["answer"] = a
    pack = PACKS[kind]
    requests = scrape_requests(pack, "*")

    async def once():
        async with JolokiaClient(url, name="fz", retries=0, timeout=2.0) as c:
            return await c.bulk(requests)

    ex = asyncio.run(once())
    if not ex.ok:
        assert ex.error.startswith("fz: ") and ex.error_kind in KINDS, (ex.error_kind, ex.error)
        return
    assert isinstance(ex.body, list) and len(ex.body) == len(requests)
    env = envelope(datetime.now(timezone.utc), "fz", requests, ex.body, None, ex.elapsed_ms)
    obs = observation_from_envelope(env, kind, None)
    rows, _aside = normalize_checked(pack, obs, "k", pack.tables)
    for table in pack.tables:
        _fits(rows.get(table), table)
    _fits([collector_health_row(obs, "k", None) | {"collector_ts": obs.ts}], "collector_health")


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(drawn=st.lists(answers(), min_size=12, max_size=12))
def test_a_running_collector_fed_drawn_answers_lands_the_healthy_target(drawn, tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-collect") / "lh"
    lock, k = threading.Lock(), {"i": 0}

    def next_answer() -> dict:
        with lock:
            k["i"] += 1
            return drawn[k["i"] % len(drawn)]

    with jolokia_stub({"/fuzz": serve(next_answer), "/good": replay_route(activemq_items("amq-a"))}) as stub:
        targets = [{"name": "healthy", "kind": "activemq", "url": stub.url("/good"), "group": "g"}]
        targets += [{"name": f"fz{i}", "kind": kind, "url": stub.url("/fuzz")} for i, kind in enumerate(sorted(PACKS) * 3)]
        cfg = config_from_dict({"lakehouse": str(root), "scrape_interval": "500ms", "flush_interval": "400ms", "targets": targets})
        stats = asyncio.run(Collector(cfg).run(duration=1.6))
    bronze = Lakehouse(root).read("bronze_jolokia")
    healthy = [r for r in bronze.to_pylist() if r["target"] == "healthy"]
    assert len(healthy) >= 2 and sum(r["error"] is None for r in healthy) >= 2
    assert bronze.num_rows == sum(s.scrapes for s in stats.targets.values())
    known = {t.name: (t.kind, t.group) for t in cfg.targets}
    for table in SILVER_FROM_JOLOKIA:  # the whole lakehouse converts, whatever the fuzz targets sent
        for b in bronze.to_batches():
            normalize_batch(b, table, known)


# --- recordings → bronze → silver ------------------------------------------------------------------


@FAST
@given(kind=st.sampled_from(sorted(PACKS)), response=st.one_of(st.none(), st.lists(items, max_size=8), values),
       error=st.one_of(st.none(), st.text(max_size=40)), elapsed=st.one_of(st.none(), st.floats(0, 1e6)))
def test_any_envelope_converts_to_every_silver_table(kind, response, error, elapsed):
    pack = PACKS[kind]
    env = envelope(datetime(2026, 11, 22, tzinfo=timezone.utc), "t", scrape_requests(pack, "*"), response,
                   error if response is None and error is None else error, elapsed)
    if env["response"] is None and not env["error"]:
        env["error"] = "no answer"
    row = bronze_row(env, kind, None, "http://x", "replay")
    batch = pa.RecordBatch.from_pylist([row], schema=contract("bronze_jolokia").schema)
    for table in SILVER_FROM_JOLOKIA:
        normalize_batch(batch, table, {"t": (kind, None)})


# --- GC logs ---------------------------------------------------------------------------------------


@FAST
@given(data=st.binary(max_size=2000).map(lambda b: b.replace(b"\r", b"")), gz=st.booleans(), cut=st.integers(0, 100))
def test_gc_open_log_reads_what_text_mode_read_and_damage_never_raises(tmp_path_factory, data, gz, cut):
    p = tmp_path_factory.mktemp("gcf") / ("gc.log.gz" if gz else "gc.log")
    raw = gzip.compress(data) if gz else data
    p.write_bytes(raw[: max(1, len(raw) * cut // 100)] if gz and cut < 100 else raw)
    try:
        with open_log(p) as fh:
            lines = list(fh)
    except GcInputError:
        return  # a bound said no, with its message
    sniffed_as_archive = data[:2] == b"\x1f\x8b" or data[:4] == b"PK\x03\x04"  # open_log goes by the magic bytes
    if (not gz and not sniffed_as_archive) or (gz and cut == 100):
        assert "".join(lines) == data.decode("utf-8", errors="replace")


# --- config ----------------------------------------------------------------------------------------


@FAST
@given(secret=st.text(min_size=1, max_size=30))
def test_any_password_env_value_is_taken_as_a_name_or_refused_unechoed(secret):
    data = {"lakehouse": "/tmp/x", "targets": [{"name": "a", "kind": "activemq", "url": "http://127.0.0.1:1/j",
                                                 "username": "u", "password_env": secret}]}
    try:
        cfg = config_from_dict(data)
    except ConfigError as e:
        assert len(secret) < 4 or secret not in str(e).split("password_env: ", 1)[-1]
        return
    assert cfg.targets[0].password_env == secret and secret.isidentifier()
