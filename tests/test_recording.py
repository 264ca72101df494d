import gzip
import json
from datetime import datetime, timezone

import pytest

from collectors.recording import (ReadReport, RecordingError, RecordingWriter, bronze_row, envelope,
                                  observation_from_envelope, read_envelopes)

TS = datetime(2026, 11, 21, 22, 32, 33, 12345, tzinfo=timezone.utc)
REQ = [{"type": "read", "mbean": "org.apache.activemq:type=Broker,brokerName=*", "attribute": "Slave"}]


def env(i=0, **kw):
    e = envelope(TS.replace(second=i), "amq-a", REQ, [{"status": 200, "value": {}}], None, 3.25)
    e.update(kw)
    return e


@pytest.mark.parametrize("name", ["rec.jsonl", "rec.jsonl.gz"])
def test_round_trip_and_append(tmp_path, name):
    p = tmp_path / name
    with RecordingWriter(p) as w:
        w.write(env(1))
    with RecordingWriter(p) as w:  # a second session appends (gzip: a second member)
        w.write(env(2))
    got = list(read_envelopes(p))
    assert [g["ts"] for g in got] == ["2026-11-21T22:32:01.012Z", "2026-11-21T22:32:02.012Z"]
    assert got[0]["request"] == REQ and got[0]["elapsed_ms"] == 3.25


def test_envelope_format_is_the_public_one():
    e = env()
    assert set(e) == {"v", "ts", "source", "target", "request", "response", "error", "elapsed_ms"}
    assert e["v"] == 1 and e["source"] == "jolokia" and e["ts"].endswith("Z")


def test_half_written_tail_and_bad_lines(tmp_path):
    p = tmp_path / "r.jsonl"
    good = json.dumps(env(1))
    p.write_text(good + "\n" + "not json\n" + json.dumps({"v": 2}) + "\n" + good[: len(good) // 2])
    rep = ReadReport()
    got = list(read_envelopes(p, rep))
    assert len(got) == 1
    assert rep.truncated_tail
    assert [n for n, _ in rep.bad_lines] == [2, 3]
    assert "version" in rep.bad_lines[1][1]
    with pytest.raises(RecordingError, match=r"r.jsonl:2"):
        list(read_envelopes(p, strict=True))


def test_gzip_cut_mid_stream_keeps_what_came_before(tmp_path):
    p = tmp_path / "r.jsonl.gz"
    data = gzip.compress(("\n".join(json.dumps(env(i)) for i in range(50)) + "\n").encode())
    p.write_bytes(data[: len(data) - 40])
    rep = ReadReport()
    got = list(read_envelopes(p, rep))
    assert 0 < len(got) < 50 and rep.truncated_tail


def test_bronze_key_is_stable_and_ms_precise():
    a = bronze_row(env(1), "activemq", "store-1", "http://x", "collect", http_status=200)
    b = bronze_row(json.loads(json.dumps(env(1))), "activemq", None, None, "replay:f")
    assert a["obs_key"] == b["obs_key"]
    assert a["ts"].microsecond == 12000 and a["obs_date"] == "2026-11-21"
    obs = observation_from_envelope(env(1), "activemq", "store-1")
    assert obs.ts == a["ts"] and obs.answered


def test_missing_recording(tmp_path):
    with pytest.raises(RecordingError, match="does not exist"):
        list(read_envelopes(tmp_path / "nope.jsonl"))
