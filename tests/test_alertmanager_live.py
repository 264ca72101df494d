"""A real Alertmanager (Debian `prometheus-alertmanager`) receiving the alerts we push to
/api/v2/alerts and delivering them to a local webhook receiver; its own webhook payload checked
with our v4 schema; firing alerts kept alive by re-pushing before endsAt lapses; and a silence in
Alertmanager not leaving an orphaned firing alert on our side (our resolve still reaches
Alertmanager, and alert_history closes it)."""

import json
import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import jsonschema
import pytest
import yaml

from alerts.pipeline import AlertPipeline
from lakehouse.store import Lakehouse
from settings import config_from_dict
from tests.alert_servers import RecordingReceiver, wait_for
from tests.servers import free_port, stop_process

pytestmark = [pytest.mark.slow, pytest.mark.lab]

AM = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "alerts" / "alertmanager_webhook_v4.schema.json").read_text())


@contextmanager
def alertmanager(tmp: Path, webhook_url: str):
    """Alertmanager on 127.0.0.1 with a temp config and storage, routing everything to the webhook."""
    if not os.path.exists(AM):
        pytest.fail("prometheus-alertmanager is not installed: apt-get install prometheus-alertmanager")
    port = free_port()
    cfg = tmp / "alertmanager.yml"
    cfg.write_text(yaml.safe_dump({
        "route": {"receiver": "hook", "group_by": ["alertname", "cluster"], "group_wait": "100ms",
                  "group_interval": "1s", "repeat_interval": "1h"},
        "receivers": [{"name": "hook", "webhook_configs": [{"url": webhook_url, "send_resolved": True}]}],
    }))
    (tmp / "am-data").mkdir()
    log = open(tmp / "alertmanager.log", "wb")
    proc = subprocess.Popen([AM, f"--config.file={cfg}", f"--storage.path={tmp / 'am-data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
                             f"--web.external-url=http://127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        def ready():
            if proc.poll() is not None:
                raise AssertionError(f"alertmanager exited: {(tmp / 'alertmanager.log').read_text()[-2000:]}")
            try:
                return httpx.get(url + "/-/ready", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(ready, timeout=30, what="alertmanager /-/ready")
        yield url
    finally:
        stop_process(proc, 10)
        log.close()


def setup(tmp: Path, am_url: str, **receiver) -> tuple:
    """A pipeline config pushing to Alertmanager; a split brain that ended resolves 0.5 s later."""
    root = tmp / "lh"
    cfg = config_from_dict({"lakehouse": str(root), "alerts": {
        "external_url": "http://bs.example", "rules": {"event_hold": "500ms"},
        "receivers": [{"name": "am", "type": "alertmanager", "url": am_url, **receiver}]}})
    return cfg, Lakehouse(root)


def split_brain(open_: bool) -> dict:
    now = datetime.now(timezone.utc)
    return {"window_id": "w1", "kind": "activemq", "group_name": "store-1", "instance_a": "amq-a", "instance_b": "amq-b",
            "certain_start": now - timedelta(seconds=20), "certain_end": now - timedelta(seconds=1),
            "possible_end": None if open_ else now, "certainty": "certain", "duration_s": 19.0}


def am_alerts(am_url: str) -> list[dict]:
    return httpx.get(am_url + "/api/v2/alerts", timeout=5).json()


def test_pushed_alerts_are_routed_and_delivered_by_alertmanager(tmp_path):
    with RecordingReceiver() as hook, alertmanager(tmp_path, hook.url + "/am") as am_url:
        cfg, lh = setup(tmp_path, am_url, push_ttl="3s", repush_interval="1s")
        lh.overwrite("split_brain_windows", [split_brain(True)])
        p = AlertPipeline(cfg, lh)
        r = p.tick(datetime.now(timezone.utc))
        assert [n.outcome for n in r.notifications] == ["sent"], r.lines()
        body = wait_for(lambda: hook.bodies() and hook.bodies()[0], what="Alertmanager's webhook")
        # Alertmanager 0.25 predates notification_reason (0.32): the rest is our schema, exactly
        schema = json.loads(json.dumps(SCHEMA))
        schema["required"].remove("notification_reason")
        jsonschema.validate(body, schema)
        assert body["status"] == "firing" and body["groupLabels"] == {"alertname": "SplitBrain", "cluster": "store-1"}
        [a] = body["alerts"]
        assert a["labels"]["severity"] == "critical" and "amq-a and amq-b" in a["annotations"]["summary"]
        assert a["endsAt"] == "0001-01-01T00:00:00Z"  # Alertmanager, like our webhook, zeroes a firing alert's end
        # re-pushed before the 3 s TTL lapses: still active in Alertmanager after 5 s
        t_end = time.monotonic() + 5
        while time.monotonic() < t_end:
            p.tick(datetime.now(timezone.utc))
            time.sleep(0.3)
        [live] = am_alerts(am_url)
        assert live["status"]["state"] == "active"
        assert len(hook.bodies()) == 1  # Alertmanager's own dedup: the re-pushes are not new notifications
        lh.overwrite("split_brain_windows", [split_brain(False)])
        time.sleep(0.6)
        r = p.tick(datetime.now(timezone.utc))
        assert [a.alertname for a in r.resolved] == ["SplitBrain"] and [n.outcome for n in r.sent] == ["sent"]
        resolved = wait_for(lambda: [b for b in hook.bodies() if b["status"] == "resolved"], what="the resolved notification")
        assert resolved[0]["alerts"][0]["fingerprint"] == a["fingerprint"]
        assert am_alerts(am_url) == []


def test_a_silence_in_alertmanager_leaves_nothing_open_on_our_side(tmp_path):
    with RecordingReceiver() as hook, alertmanager(tmp_path, hook.url + "/am") as am_url:
        now = datetime.now(timezone.utc)
        silence = httpx.post(am_url + "/api/v2/silences", json={
            "matchers": [{"name": "alertname", "value": "SplitBrain", "isRegex": False, "isEqual": True}],
            "startsAt": (now - timedelta(seconds=1)).isoformat(), "endsAt": (now + timedelta(hours=1)).isoformat(),
            "createdBy": "test", "comment": "maintenance"}, timeout=5)
        assert silence.status_code == 200, silence.text
        cfg, lh = setup(tmp_path, am_url)
        lh.overwrite("split_brain_windows", [split_brain(True)])
        p = AlertPipeline(cfg, lh)
        assert [n.outcome for n in p.tick(datetime.now(timezone.utc)).sent] == ["sent"]
        [held] = wait_for(lambda: am_alerts(am_url), what="the alert in Alertmanager")
        assert held["status"]["state"] == "suppressed" and held["status"]["silencedBy"] == [silence.json()["silenceID"]]
        lh.overwrite("split_brain_windows", [split_brain(False)])
        time.sleep(0.6)
        r = p.tick(datetime.now(timezone.utc))
        assert [a.alertname for a in r.resolved] == ["SplitBrain"]
        assert [(n.outcome, n.decision.reason) for n in r.notifications] == [("sent", "all alerts resolved")]
        # Alertmanager got our endsAt: the alert is resolved there too, not left firing under the silence
        wait_for(lambda: am_alerts(am_url) == [], what="Alertmanager to drop the resolved alert")
        assert hook.bodies() == []  # silenced: Alertmanager itself notified nobody, neither firing nor resolved
        hist = lh.read("alert_history").to_pylist()
        assert sorted(h["status"] for h in hist) == ["firing", "resolved"]
        sent = [(r["status"], r["outcome"]) for r in lh.read("alert_notifications").to_pylist() if r["outcome"] != "sending"]
        assert sorted(sent) == [("firing", "sent"), ("resolved", "sent")]
        assert AlertPipeline(cfg, lh).state.firing() == {}  # and after a restart nothing is open
