"""The Jolokia client against the real agent (the lab's Jolokia 2.6.0 JVM agent, read-only, in a real
JVM), and against endpoints that fail the ways real ones do."""

import asyncio
import os
import signal
import time

import pytest

from collectors.jolokia import JolokiaClient, UnsafeRequestError, classify_body
from tests.servers import agent_jvm, bad_http, free_port


def run(coro):
    return asyncio.run(coro)


async def bulk(url, reqs, **kw):
    async with JolokiaClient(url, name="t", **kw) as c:
        return await c.bulk(reqs)


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    with agent_jvm(tmp_path_factory.mktemp("agent")) as jvm:
        yield jvm.url


def test_bulk_with_per_item_statuses(agent):
    ex = run(bulk(agent, [
        {"type": "version"},
        {"type": "read", "mbean": "java.lang:type=Memory", "attribute": "HeapMemoryUsage"},
        {"type": "read", "mbean": "java.lang:type=NoSuchThing"},
        {"type": "read", "mbean": "java.lang:type=GarbageCollector,name=*", "attribute": "CollectionCount"},
        {"type": "search", "mbean": "org.apache.activemq:*"},
    ]))
    assert ex.ok, ex.error
    items = ex.items()
    assert [i["status"] for i in items] == [200, 200, 404, 200, 200]
    assert items[0]["value"]["protocol"].startswith("8.")
    assert items[1]["value"]["used"] > 0
    assert "InstanceNotFoundException" in items[2]["error_type"]
    assert all(k.startswith("java.lang:") for k in items[3]["value"])
    assert items[4]["value"] == []  # search with no match: empty list, status 200
    assert ex.http_status == 200 and ex.elapsed_ms > 0


def test_one_malformed_request_fails_the_bulk(agent):
    """The 2.x agent refuses the whole bulk with HTTP 400 and a text body (1.x: one JSON object)."""
    ex = run(bulk(agent, [{"type": "version"},
                          {"type": "read", "mbean": "org.apache.activemq:type=Broker,brokerName=a,b", "attribute": "Slave"}]))
    assert ex.http_status == 400 and ex.error_kind == "http" and ex.items() == []
    assert "refused the whole bulk request as malformed (Unterminated key property part)" in ex.error


def test_write_and_exec_are_never_sent(agent):
    with pytest.raises(UnsafeRequestError, match="exec"):
        run(bulk(agent, [{"type": "exec", "mbean": "java.lang:type=Memory", "operation": "gc"}]))
    with pytest.raises(UnsafeRequestError, match="write"):
        run(bulk(agent, [{"type": "write", "mbean": "java.lang:type=Memory", "attribute": "Verbose", "value": True}]))


def test_basic_auth(tmp_path):
    with agent_jvm(tmp_path, user="monitor", password="pw-123") as jvm:
        url = jvm.url
        ex = run(bulk(url, [{"type": "version"}]))
        assert not ex.ok and ex.error_kind == "auth" and "401" in ex.error and "password" in ex.error
        ex = run(bulk(url, [{"type": "version"}], username="monitor", password="wrong"))
        assert ex.error_kind == "auth"
        ex = run(bulk(url, [{"type": "version"}], username="monitor", password="pw-123"))
        assert ex.ok and ex.items()[0]["status"] == 200


def test_strict_origin_needs_origin_header(tmp_path):
    with agent_jvm(tmp_path, strict_origin=True) as jvm:
        url = jvm.url
        ex = run(bulk(url, [{"type": "version"}]))
        # the 2.x agent refuses with HTTP 200 and a single status-403 object (1.x: HTTP 403)
        assert ex.http_status == 200 and ex.error_kind == "forbidden" and "origin" in ex.error.lower()
        ex = run(bulk(url, [{"type": "version"}], origin="http://127.0.0.1"))
        assert ex.ok


def test_timeout_on_a_paused_jvm_is_unknown_not_down(tmp_path):
    with agent_jvm(tmp_path) as jvm:
        url, pid = jvm.url, jvm.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            ex = run(bulk(url, [{"type": "version"}], timeout=0.5, retries=1, backoff=0.05))
            took = time.monotonic() - t0
        finally:
            os.kill(pid, signal.SIGCONT)
        assert ex.error_kind == "timeout" and "unknown" in ex.error
        assert ex.attempts == 2 and took < 3
        assert run(bulk(url, [{"type": "version"}])).ok


def test_connection_refused():
    ex = run(bulk(f"http://127.0.0.1:{free_port()}/jolokia", [{"type": "version"}], retries=2, backoff=0.01))
    assert ex.error_kind == "refused" and "is the broker running" in ex.error
    assert ex.attempts == 3 and ex.body is None


def test_html_page_instead_of_json():
    with bad_http("html") as url:
        ex = run(bulk(url, [{"type": "version"}]))
    assert ex.error_kind == "not_json"
    assert "HTML page" in ex.error and "/api/jolokia" in ex.error and "Please sign in" in ex.error


def test_truncated_json():
    with bad_http("truncated") as url:
        ex = run(bulk(url, [{"type": "version"}], retries=0))
    assert ex.error_kind == "truncated" and "truncated" in ex.error


def test_connection_reset_mid_request():
    with bad_http("reset") as url:
        ex = run(bulk(url, [{"type": "version"}], retries=1, backoff=0.01))
    assert ex.error_kind == "reset" and "died or closed the socket" in ex.error and ex.attempts == 2


def test_classify_truncated_body_with_complete_http():
    body, err, kind = classify_body("t", 200, '[{"status":200,"value":{"a":', "application/json")
    assert kind == "truncated" and body is None
