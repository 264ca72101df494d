"""`brokerscope demo`: a real local drill, end to end.

Default (`--broker activemq`): starts a real ActiveMQ Classic master/slave pair (shared KahaDB,
shared-file lock), collects both over Jolokia every 0.5 s and tails their GC logs, SIGKILLs the
master, waits for the slave to take over, restarts the old master (it must come back as slave),
stops, runs the Spark jobs and prints the reconstructed timeline next to the drill's own ground truth.

`--broker artemis`: the same with a real Artemis 2.40.0 shared-store pair (the artemis-kill drill:
SIGKILL of the primary, the backup takes over, the primary restarts and takes the role back), scored
by the drill's own scorecard against the brokers' log lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

from brokerscope.drills import artemis_kill, kill_master
from brokerscope.drills.common import say
from brokerscope.timeline import STATE_COLUMNS, build_timeline, render_text
from lakehouse.store import Lakehouse
from settings import load_config

__all__ = ["run_drill", "compare", "run_demo", "say"]


BROKERS = ("activemq", "artemis")


def run_drill(workdir: Path, scrape_interval: float = 0.5, keep: bool = False,
              broker: str = "activemq") -> tuple[Path, dict]:
    """Run the demo's drill (kill_master, or artemis_kill's shared-store variant); returns (config
    path, ground truth)."""
    if broker == "artemis":
        return artemis_kill.run(Path(workdir), scrape_interval, keep, variant="artemis-kill")
    return kill_master.run(Path(workdir), scrape_interval, keep, gc_logs=True)


def compare(truth: dict, failovers: list[dict], interval: float) -> list[str]:
    """How close the reconstruction came to the drill's ground truth, in words."""
    ev = [e for e in failovers if e["from_instance"] == truth["master_before"] and e["to_instance"] == truth["new_master"]]
    if not ev:
        return [f"✗ no failover {truth['master_before']} → {truth['new_master']} was reconstructed"]
    e = ev[0]
    kill = truth["kill_ts"]
    last_active = e["old_last_active"].timestamp()
    first_active = e["new_first_active"].timestamp()
    takeover = truth.get("takeover_log_ts") or truth["takeover_seen_ts"]
    src = "broker log" if truth.get("takeover_log_ts") else "drill probe"
    lines = []
    d_kill = kill - last_active
    ok = 0 <= d_kill <= interval + 0.05
    lines.append(f"{'✓' if ok else '✗'} old master last seen active {d_kill:.3f} s before the SIGKILL (bound: one scrape, {interval:g} s)")
    d_take = first_active - takeover
    ok2 = -0.05 <= d_take <= interval + 0.05
    lines.append(f"{'✓' if ok2 else '✗'} new master first seen active {d_take:.3f} s after it took over ({src}) (bound: one scrape)")
    true_outage = takeover - kill
    lines.append(f"  true outage {true_outage:.3f} s (kill → takeover); reconstructed ≤ {e['outage_upper_s']:.3f} s")
    return lines


def run_demo(workdir: Path, scrape_interval: float = 0.5, keep: bool = False, broker: str = "activemq") -> int:
    """0 when the reconstruction meets the drill's bar (ActiveMQ: the three checks; Artemis: its
    scorecard), else 1."""
    from analysis.runner import analyze  # deferred: pyspark is heavy to import

    if broker not in BROKERS:
        raise ValueError(f"broker must be one of {', '.join(BROKERS)}, not {broker!r}")
    workdir = workdir.resolve()
    cfg_path, truth = run_drill(workdir, scrape_interval, keep, broker)
    cfg = load_config(cfg_path)
    say("analysing: Spark jobs bronze → silver → gold")
    counts = analyze(cfg, progress=lambda m: say(f"  {m}"))
    lh = Lakehouse(cfg.lakehouse_root())
    failovers = lh.read("failover_events").to_pylist()
    entries = build_timeline(
        lh.read("role_intervals"),
        lh.read("failover_events"),
        lh.read("split_brain_windows"),
        lh.read("broker_state", columns=STATE_COLUMNS),
    )
    print("\n=== timeline (reconstructed from Jolokia scrapes) ===")
    sys.stdout.write(render_text(entries))
    print("\n=== against the drill's ground truth ===")
    if broker == "artemis":
        card = artemis_kill.score(lh, truth)
        print(card.render())
        met = card.passed
    else:
        lines = compare(truth, failovers, scrape_interval)
        back = [e for e in entries if e.what == "back-inactive" and e.instance == truth["master_before"]]
        lines.append(f"{'✓' if back else '✗'} {truth['master_before']} came back as slave"
                     + (f" (seen {back[0].ts:%H:%M:%S.%f})"[:-4] + ")" if back else ""))
        print("\n".join(lines))
        met = not any(line.startswith("✗") for line in lines)
    gc = lh.read("gc_events", columns=["target", "pause_ms", "event_type"]).to_pylist() if lh.exists("gc_events") else []
    pauses = [g["pause_ms"] for g in gc if g["pause_ms"] is not None and g["event_type"] != "safepoint"]
    if pauses:
        print(f"\nGC: both brokers' gc.log, tailed while scraping: {len(pauses)} pauses, "
              f"max {max(pauses):.1f} ms, total {sum(pauses):.1f} ms; `brokerscope gc report` for one file")
    print("\n=== where things are ===")
    print(f"config       {cfg_path}")
    print(f"recording    {workdir / 'recording.jsonl.gz'}")
    print(f"ground truth {workdir / 'ground_truth.json'}")
    for name, n in counts.items():
        print(f"table        {lh.uri(name)}  ({n} rows)")
    print(f"\nnext: brokerscope timeline --config {cfg_path} --format json")
    return 0 if met else 1
