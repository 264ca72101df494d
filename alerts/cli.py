"""`brokerscope alerts …` (registered by brokerscope.cli).

    alerts evaluate -c CFG [--dry-run] [--format text|json]   one tick: evaluate, dedup, send, record
    alerts history -c CFG [--since 1h] [--format text|json]   alert state changes (alert_history)
    alerts test-receiver NAME -c CFG                          send a test alert firing, then resolved
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from alerts.pipeline import AlertPipeline, group_key_of, history, notification_id
from alerts.receivers import Notification, make_receiver
from alerts.rules import Alert
from lakehouse.store import Lakehouse
from settings import SINCE_HELP, load_config, since_option


def _pipeline(args):

    cfg = load_config(args.config)
    return cfg, Lakehouse(cfg.lakehouse_root())


def cmd_evaluate(args) -> int:

    cfg, lh = _pipeline(args)
    result = AlertPipeline(cfg, lh).tick(datetime.now(timezone.utc), dry_run=args.dry_run)
    if args.format == "json":
        out = {
            "now": result.now.isoformat(), "firing": [dict(a.labels, fingerprint=a.fingerprint) for a in result.firing],
            "started": [a.fingerprint for a in result.started], "resolved": [a.fingerprint for a in result.resolved],
            "notifications": [{"receiver": n.receiver, "group_key": n.group_key, "notify": n.decision.notify,
                               "reason": n.decision.reason, "outcome": n.outcome, "firing": n.firing,
                               "resolved": n.resolved, "attempts": n.attempts, "error": n.error}
                              for n in result.notifications],
            "rule_errors": result.rule_errors,
        }
        print(json.dumps(out, indent=2))
    else:
        print("\n".join(result.lines()))
        if not cfg.alerts.receivers:
            print("  (no receivers configured under alerts.receivers: nothing is sent)")
    return 1 if result.failed else 0


def cmd_history(args) -> int:

    _cfg, lh = _pipeline(args)
    t = history(lh, args.since)
    rows = t.to_pylist()
    if args.format == "json":
        for r in rows:
            for k in ("starts_at", "ends_at", "changed_at"):
                r[k] = r[k].isoformat() if r[k] else None
            r["labels"] = json.loads(r.pop("labels_json"))
            r["annotations"] = json.loads(r.pop("annotations_json"))
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no alert state changes recorded (alert_history is empty)")
    for r in rows:
        labels = json.loads(r["labels_json"])
        ann = json.loads(r["annotations_json"])
        where = " ".join(f"{k}={v}" for k, v in labels.items() if k not in ("alertname", "severity"))
        print(f"{r['changed_at']:%Y-%m-%d %H:%M:%S} {r['status']:8} {r['alertname']:26} {r['severity'] or '':8} "
              f"{where}  — {ann.get('summary', '')}")
    return 0


def cmd_test_receiver(args) -> int:

    cfg, _lh = _pipeline(args)
    rcfg = cfg.alerts.receiver(args.name)
    rec = make_receiver(rcfg)
    now = datetime.now(timezone.utc)
    labels = {"alertname": "BrokerscopeTestAlert", "severity": "info", "cluster": "brokerscope-test"}
    ann = {"summary": f"test notification from brokerscope to receiver {rcfg.name}; it resolves at once"}
    gl = {k: labels[k] for k in cfg.alerts.group_by if k in labels}
    status = 0
    for step, alert in (("firing", Alert(labels, ann, now)), ("resolved", Alert(labels, ann, now, now))):
        nid = notification_id(rcfg.name, group_key_of(gl), 0 if step == "firing" else -1, [step], [])
        res = rec.send(Notification(nid, rcfg.name, group_key_of(gl), gl, (alert,),
                                    "first notification" if step == "firing" else "all alerts resolved",
                                    cfg.alerts.external_url, now))
        print(f"{step}: " + ("ok" if res.ok else f"FAILED: {res.error}")
              + (f" (HTTP {res.http_status}, {res.elapsed_ms:.0f} ms)" if res.http_status else ""))
        status = status or (0 if res.ok else 1)
    return status


def add_parser(sub) -> None:
    """Register `brokerscope alerts …`."""
    p = sub.add_parser("alerts", help="alert rules, notifications and their history")
    asub = p.add_subparsers(dest="alerts_command", required=True)

    def with_config(sp):
        sp.add_argument("--config", "-c", required=True, help="YAML config (README, 'Running it: alerts, metrics, dashboard')")
        return sp

    sp = with_config(asub.add_parser("evaluate", help="one tick: evaluate the rules, dedup, send, record"))
    sp.add_argument("--dry-run", action="store_true", help="decide only: send nothing, write nothing")
    sp.add_argument("--format", choices=["text", "json"], default="text")
    sp.set_defaults(func=cmd_evaluate)

    sp = with_config(asub.add_parser("history", help="alert state changes (alert_history)"))
    sp.add_argument("--since", type=since_option, metavar="TIME", help=SINCE_HELP)
    sp.add_argument("--format", choices=["text", "json"], default="text")
    sp.set_defaults(func=cmd_history)

    sp = with_config(asub.add_parser("test-receiver", help="send a test alert (firing, then resolved) to one receiver"))
    sp.add_argument("name", metavar="NAME", help="receiver name under alerts.receivers")
    sp.set_defaults(func=cmd_test_receiver)
