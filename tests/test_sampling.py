"""Adaptive destination sampling: the pure decision logic, then a real broker with many queues."""

import asyncio

import pytest

from collectors.activemq import ActiveMQPack
from collectors.objectname import parse_object_name
from collectors.sampling import DestinationSampler, matches_pattern

PACK = ActiveMQPack()


def qname(i: int) -> str:
    return f"org.apache.activemq:brokerName=amq-a,destinationName=Q{i:03d},destinationType=Queue,type=Broker"


def wildcard_answer(sizes: dict[int, int]) -> list[dict]:
    req = PACK.destination_request()
    return [{"request": req, "status": 200, "value": {qname(i): {"QueueSize": n} for i, n in sizes.items()}}]


def explicit_answer(requests: list[dict], sizes: dict[int, int], names: list[str]) -> list[dict]:
    out = []
    for r in requests:
        if r["type"] == "search":
            out.append({"request": r, "status": 200, "value": names})
        else:
            i = int(parse_object_name(r["mbean"])["destinationName"][1:])
            if i in sizes:
                out.append({"request": r, "status": 200, "value": {"QueueSize": sizes[i]}})
            else:  # removed since the last search: Jolokia answers 404 for that one read
                out.append({"request": r, "status": 404, "error_type": "javax.management.InstanceNotFoundException",
                            "error": f"javax.management.InstanceNotFoundException : {r['mbean']}"})
    return out


def test_pattern_matching_follows_jmx_rules():
    p = parse_object_name(PACK.destination_request()["mbean"])
    assert matches_pattern(p, parse_object_name(qname(1)))
    consumer = qname(1) + ",endpoint=Consumer,clientId=c,consumerId=1"
    assert not matches_pattern(p, parse_object_name(consumer))  # extra keys: not a destination MBean
    wl = parse_object_name("com.bea:Type=JMSDestinationRuntime,*")
    assert matches_pattern(wl, parse_object_name("com.bea:Name=M!S@Q,Type=JMSDestinationRuntime,ServerRuntime=ms1"))


def test_small_broker_keeps_the_single_wildcard_read():
    s = DestinationSampler(PACK.destination_request(), "QueueSize", limit=10)
    for _ in range(3):
        reqs = s.requests()
        assert reqs == [PACK.destination_request()]
        s.observe(reqs, wildcard_answer({i: 0 for i in range(8)}))
    assert not s.sampled and len(s.names) == 8


def test_large_broker_is_read_in_bounded_batches_busiest_first_and_all_in_turn():
    sizes = {i: 0 for i in range(30)}
    sizes[7], sizes[21] = 5000, 900  # two backlogged queues
    names = [qname(i) for i in sizes]
    s = DestinationSampler(PACK.destination_request(), "QueueSize", limit=10, rediscover_every=5)
    first = s.requests()
    s.observe(first, wildcard_answer(sizes))
    assert s.sampled  # 30 > 10: switch to batches
    read_counts = {n: 0 for n in names}
    for _ in range(10):
        reqs = s.requests()
        reads = [r for r in reqs if r["type"] == "read"]
        assert len(reads) <= 10
        got = {r["mbean"] for r in reads}
        assert qname(7) in got and qname(21) in got  # the backlogged ones, every scrape
        for n in got:
            read_counts[n] += 1
        s.observe(reqs, explicit_answer(reqs, sizes, names))
    assert min(read_counts.values()) >= 2  # every destination read, round robin
    # a new queue appears: the periodic search finds it, and a vanished one is forgotten
    sizes[99] = 1
    del sizes[3]
    names = [qname(i) for i in sizes]
    for _ in range(5):
        reqs = s.requests()
        s.observe(reqs, explicit_answer(reqs, sizes, names))
    assert qname(99) in s.names and qname(3) not in s.names


def test_broker_that_shrank_goes_back_to_the_wildcard():
    s = DestinationSampler(PACK.destination_request(), "QueueSize", limit=10, rediscover_every=2)
    s.observe(s.requests(), wildcard_answer({i: 0 for i in range(30)}))
    assert s.sampled
    small = [qname(i) for i in range(3)]
    for _ in range(2):
        reqs = s.requests()
        s.observe(reqs, explicit_answer(reqs, {i: 0 for i in range(30)}, small))
    assert not s.sampled and s.requests() == [PACK.destination_request()]


@pytest.mark.slow
@pytest.mark.lab
def test_real_broker_with_many_queues(tmp_path):
    """30 real queues on a real ActiveMQ master, at most 10 destinations per scrape: every scrape
    stays bounded, the backlogged queue is in every scrape, every queue lands in silver."""
    from collectors.recording import observation_from_envelope, read_envelopes
    from collectors.scraper import Collector
    from infra.lab import ActiveMQPair, stomp_send
    from settings import config_from_dict

    with ActiveMQPair(tmp_path / "lab") as pair:
        url = pair.brokers["amq-a"].stomp_url
        for i in range(30):
            stomp_send(url, f"/queue/MANY.{i:02d}", ["m"] * (50 if i == 13 else 1))
        cfg = config_from_dict({
            "lakehouse": str(tmp_path / "lh"), "scrape_interval": "300ms",
            "targets": [{"name": "amq-a", "kind": "activemq", "url": pair.jolokia_url("amq-a"),
                         "group": "g", "max_destinations_per_scrape": 10}],
        })
        asyncio.run(Collector(cfg, record=str(tmp_path / "rec.jsonl")).run(duration=4.0))
    seen: dict[str, int] = {}
    envs = list(read_envelopes(tmp_path / "rec.jsonl"))
    assert len(envs) >= 8
    for env in envs[1:]:  # the first scrape is the discovering wildcard read
        rows = PACK.normalize(observation_from_envelope(env, "activemq", "g"), "k").destination_stats
        assert len(rows) <= 10
        assert "MANY.13" in {r["destination"] for r in rows}
        for r in rows:
            seen[r["destination"]] = r["messages"]
    assert {f"MANY.{i:02d}" for i in range(30)} <= set(seen)
    assert seen["MANY.13"] == 50
