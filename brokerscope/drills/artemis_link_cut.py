"""artemis-link-cut-zk / artemis-link-cut: cut the replication link between the primary and the
backup of a real Artemis 2.40.0 replication pair — a silent partition through the lab's TCP proxy
(infra.tcp_proxy: bytes held, no RST, no FIN) — for CUT_S, then heal it.

Variants: ``artemis-link-cut-zk`` (ZooKeeper lock manager, session 4 s, a 3-node ensemble) and
``artemis-link-cut`` (classic replication: no lock manager, Artemis' default quorum vote, one pair).
Every connection between the two brokers runs through a proxy in front of each (the cluster
connectors and the connectors they announce, which the backup dials for replication); clients and
the consoles reach both directly, so the probe and the collector see both sides throughout.
Both keep what ``artemis create`` writes for the cluster connection: no connection-ttl and no
check-period, so Artemis' defaults apply — connection-ttl 60 s, client-failure-check-period 30 s.
What they do to a silent cut is measured by every run, never assumed (docs/ARTEMIS_LAB.md fact 23).

Truth: the drill's cut and heal times; the primary's AMQ222092 ("Connection to the backup node
failed, removing replication now"), the backup's AMQ219011 (no data from the primary), what the
backup did then ("Not a candidate … activation sequence" + AMQ221070 with the lock manager; the
vote AMQ221066/AMQ221083/AMQ221071 and AMQ221007 classic), its AMQ221024 (in sync again) after
the heal; one persistent send to the primary just after the cut (when its RECEIPT came); the
drill's 20 Hz console probe of both brokers (whether both were ever active at once). Classic: the
drill ends a split brain by SIGKILLing the backup (its time is the truth of the window's end).

Bar: a split brain if and only if the probe saw both active, then with its start within one scrape
of the backup's AMQ221007, its end within one scrape of the kill, and its cause named in
finding_causes (the primary had lost its replica: the link); no failover; the primary's
unprotected period found as `replica-sync-gap`, its start within one scrape of AMQ222092 and, when
the backup resynchronized, its end within one scrape of AMQ221024, naming the backup as still
answering (the link, not a crashed backup).

Measured (3 runs each, 0.5 s scrapes; docs/ARTEMIS_LAB.md fact 23): the primary drops its backup
(AMQ222092) 58.6-60.4 s after the cut and a durable send made during the cut is acknowledged only
then; the backup notices 112.9-114.4 s after the cut. Lock manager: refused by the activation
sequence the primary bumped, restarts as backup, in sync again 1.0-2.0 s after the heal; the gap
found from +0.002/+0.076/+0.479 s after AMQ222092 to -0.066/-0.324/-0.238 s before AMQ221024.
Classic: the backup votes alone ("max cluster size is 1") and is active 114.9-116.4 s after the
cut beside the primary; both stay active after the heal (AMQ222294 on both in one run, nothing in
another); the split brain found from +0.265/+0.098/+0.311 s after AMQ221007 to
-0.117/-0.362/-0.368 s before the kill, caused by the lost replica.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

from brokerscope.drills.artemis_kill import QUEUE
from brokerscope.drills.artemis_pause import RoleProbe, run_on_replication_pair, score_split_brain, start_pair_collecting
from brokerscope.drills.common import Scorecard, epoch, rows, say, settle
from infra.artemis_lab import ArtemisPair, log_times, stomp_send

NAME = "artemis-link-cut-zk"
SUMMARY = "cut the replication link of an Artemis replication pair silently for 2.5× connection-ttl, then heal"
SUMMARIES = {
    "artemis-link-cut-zk": "cut the replication link of an Artemis pair (ZooKeeper lock manager) silently for 150 s, then heal",
    "artemis-link-cut": "cut the replication link of a classic Artemis replication pair (quorum vote) silently for 150 s, then heal",
}
VARIANTS = {"artemis-link-cut-zk": "replication-zk", "artemis-link-cut": "replication"}
CONNECTION_TTL_S = 60.0  # Artemis' cluster-connection defaults (artemis create writes neither)
CHECK_PERIOD_S = 30.0
#: the backup checks for data every check-period, but only once connection-ttl has passed since its
#: last check: it notices 60-120 s after a silent cut; the cut outlasts that with room to spare
CUT_S = 150.0
SEND_AFTER_CUT_S = 5.0
#: the cause codes (finding_causes) that name the lost replication link
LINK_CAUSES = {"replica-sync-gap"}
#: what the logs say, by key of the truth (first matching line after the cut; `primary`/`backup` side)
LOG_TRUTH = {
    "replica_dropped": ("primary", r"AMQ222092"),
    "sequence_bumped": ("primary", r"incremented coordinated activation sequence"),
    "split_brain_warned_primary": ("primary", r"AMQ222294"),
    "backup_noticed": ("backup", r"AMQ219011"),
    "backup_not_candidate": ("backup", r"Not a candidate for NodeID"),
    "backup_restarting": ("backup", r"AMQ221070"),
    "backup_vote": ("backup", r"AMQ221066"),
    "backup_vote_ignored": ("backup", r"AMQ221083"),
    "backup_failing_over": ("backup", r"AMQ221071"),
    "split_brain_warned_backup": ("backup", r"AMQ222294"),
}


def run(workdir: Path, interval: float = 0.5, keep: bool = False, variant: str = NAME) -> tuple[Path, dict]:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}")
    return run_on_replication_pair(workdir, interval, keep, {"drill": variant, "cut_s": CUT_S},
                                   lambda pair, zk, wd, truth: _drive(pair, wd, interval, truth),
                                   fault_ts="cut_ts", topology=VARIANTS[variant], replication_proxy=True)


def _drive(pair: ArtemisPair, workdir: Path, interval: float, truth: dict) -> None:
    primary, backup = pair.names
    col = start_pair_collecting(pair, workdir, interval, truth, [])  # the pair only: the fault is the link
    with RoleProbe(pair) as probe:
        truth["links_at_cut"] = broker_links(pair)
        truth["cut_ts"] = pair.cut_link()
        say(f"replication link cut (silent: bytes held) for {CUT_S:g} s")
        sender = _send_during_cut(pair, truth)
        time.sleep(CUT_S)
        truth["heal_ts"] = pair.heal_link()
        say("replication link healed")
        truth["resync_log_ts"] = _wait_log(pair.broker_log(backup), "AMQ221024", truth["heal_ts"], timeout=60)
        settle(interval, 20, 10.0)
        truth["roles_after_heal"] = pair.roles()
        say(f"roles after the heal: {truth['roles_after_heal']}")
        if truth["roles_after_heal"] == {primary: "active", backup: "active"}:
            truth["backup_killed_ts"] = time.time()  # ends the split brain: the kill is its known end
            pair.kill(backup)
            say(f"SIGKILL {backup}: both were active")
        settle(interval, 4, 2.0)
        sender.join(timeout=CUT_S)
    truth["role_changes"] = {n: [[round(t, 3), r] for t, r in ch] for n, ch in probe.changes.items()}
    truth["both_active_seen"] = [min(probe.both_active), max(probe.both_active)] if probe.both_active else None
    truth["dual_active"] = bool(probe.both_active)
    truth["collector"] = col.stop().summary()
    say(f"collector stopped: {truth['collector']}")
    truth_from_logs(pair, truth)


def broker_links(pair: ArtemisPair) -> dict[str, int]:
    """The brokers' established TCP connections to each other (`ss -tnp`): through a proxy, or
    direct (which the cut would not cut)."""
    pids = {b.pid for b in pair.brokers.values()}
    proxied, direct = set(pair.link_ports.values()), set(pair.acceptor_ports.values())
    out = {"proxied": 0, "direct": 0}
    listing = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True, timeout=10).stdout
    for line in listing.splitlines():  # Recv-Q Send-Q local peer users:(("java",pid=…))
        fields, owner = line.split(), re.search(r"pid=(\d+)", line)
        if len(fields) < 4 or not owner or int(owner.group(1)) not in pids:
            continue
        peer = int(fields[3].rsplit(":", 1)[1])
        if peer in proxied or peer in direct:
            out["proxied" if peer in proxied else "direct"] += 1
    return out


def _send_during_cut(pair: ArtemisPair, truth: dict) -> threading.Thread:
    """One persistent send to the primary SEND_AFTER_CUT_S after the cut, in a thread: when its RECEIPT
    came (the primary acknowledges a durable send once its replica has it, or once it dropped the replica)."""
    def send() -> None:
        time.sleep(SEND_AFTER_CUT_S)
        truth["send_during_cut_ts"] = time.time()
        try:
            stomp_send(pair.brokers[pair.names[0]].stomp_url, QUEUE, ["during the cut"], login="admin",
                       passcode=pair.admin_password, timeout=CUT_S + 30)
            truth["send_during_cut_receipt_ts"] = time.time()
        except Exception as e:  # noqa: BLE001 - a refused send is an outcome to record
            truth["send_during_cut_error"] = f"{type(e).__name__}: {e}"[:200]

    thread = threading.Thread(target=send, name="send-during-cut", daemon=True)
    thread.start()
    return thread


def _wait_log(log: Path, pattern: str, since: float, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = log_times(log, pattern, since)
        if found:
            return found[0][0]
        time.sleep(0.2)
    return None


def truth_from_logs(pair: ArtemisPair, truth: dict) -> None:
    """LOG_TRUTH's lines (epoch, text) after the cut, read once the drill is over."""
    for key, (side, pattern) in LOG_TRUTH.items():
        found = log_times(pair.broker_log(pair.names[0] if side == "primary" else pair.names[1]), pattern, truth["cut_ts"])
        truth[f"{key}_log_ts"], truth[f"{key}_log_line"] = (found[0][0], found[0][1][:240]) if found else (None, None)


def score(lh, truth: dict) -> Scorecard:
    card = Scorecard(truth["drill"], truth["scrape_interval_s"])
    links = truth["links_at_cut"]
    card.require(links["direct"] == 0 and links["proxied"] > 0, f"the cut did not cut every broker-to-broker connection: {links}")
    score_split_brain(card, lh, truth)
    if truth["dual_active"]:
        _score_split_brain_window(card, lh, truth)
    else:
        card.expect_none("failover", [e for e in rows(lh, "failover_events") if e["event_type"] == "failover"],
                         lambda e: f"{e['from_instance']} → {e['to_instance']}")
    _score_unprotected_primary(card, lh, truth)
    _facts(card, truth)
    return card


def _score_split_brain_window(card: Scorecard, lh, truth: dict) -> None:
    """Both ends of the window against the backup's AMQ221007 and the drill's kill; its cause named."""
    windows = rows(lh, "split_brain_windows")
    if not windows:
        return
    w = min(windows, key=lambda r: r["certain_start"])
    card.boundary("split brain start (vs the backup's AMQ221007)", epoch(w["certain_start"]),
                  truth["takeover_log_ts"] or truth["both_active_seen"][0], lo=-0.1)
    if truth.get("backup_killed_ts"):
        card.boundary("split brain end (vs the drill's SIGKILL of the backup)", epoch(w["certain_end"]),
                      truth["backup_killed_ts"], hi=0.0)
    causes = {c["cause_code"] for c in rows(lh, "finding_causes") if c["effect_id"] == w["window_id"]}
    card.detect("cause: the lost replication link", bool(causes & LINK_CAUSES), f"causes named: {sorted(causes)}")
    card.facts["split brain (s, reconstructed)"] = round(w["duration_s"], 3)


def _score_unprotected_primary(card: Scorecard, lh, truth: dict) -> None:
    """The primary's replica-sync-gap: from AMQ222092 to the backup's AMQ221024, the backup named."""
    primary, backup = truth["master_before"], truth["new_master"]
    gaps = [f for f in rows(lh, "replication_findings") if f["code"] == "replica-sync-gap" and f["instance"] == primary]
    if not card.detect("primary unprotected (replica-sync-gap)", len(gaps) == 1, f"found {gaps}"):
        return
    gap = gaps[0]
    card.boundary("unprotected from (vs the primary's AMQ222092)", epoch(gap["start_ts"]), truth["replica_dropped_log_ts"],
                  lo=-0.1)
    if truth.get("resync_log_ts"):
        card.boundary("unprotected until (vs the backup's AMQ221024)", epoch(gap["end_ts"]), truth["resync_log_ts"],
                      hi=0.1)
    card.detect("cause: the link (the backup kept answering)", "replication link was lost" in gap["message"]
                and (gap["detail"] or "").startswith(f"{backup} answered"), f"{gap['message']!r}; detail {gap['detail']!r}")
    card.facts["unprotected (s, reconstructed)"] = round(gap["duration_s"], 3)
    card.facts["replica-sync-gap message"] = gap["message"]


def _since_cut(truth: dict, key: str) -> float | None:
    return round(truth[key] - truth["cut_ts"], 3) if truth.get(key) else None


def _facts(card: Scorecard, truth: dict) -> None:
    for what, key in (("primary dropped its replica (AMQ222092)", "replica_dropped_log_ts"),
                      ("backup noticed the dead link (AMQ219011)", "backup_noticed_log_ts"),
                      ("backup not a candidate (activation sequence)", "backup_not_candidate_log_ts"),
                      ("backup voted (AMQ221066)", "backup_vote_log_ts"),
                      ("backup active (AMQ221007)", "takeover_log_ts"),
                      ("heal", "heal_ts"),
                      ("backup in sync again (AMQ221024)", "resync_log_ts"),
                      ("primary warned of a possible split brain (AMQ222294)", "split_brain_warned_primary_log_ts"),
                      ("durable send acknowledged (sent +5 s)", "send_during_cut_receipt_ts")):
        card.facts[f"{what}, s after the cut"] = _since_cut(truth, key)
    card.facts["broker-to-broker connections at the cut (ss)"] = truth["links_at_cut"]
    card.facts["roles after the heal"] = truth["roles_after_heal"]
    card.facts["primary's roles (probe, s after the cut)"] = [
        (round(t - truth["cut_ts"], 2), r) for t, r in truth["role_changes"][truth["master_before"]]]
    card.facts["backup's roles (probe, s after the cut)"] = [
        (round(t - truth["cut_ts"], 2), r) for t, r in truth["role_changes"][truth["new_master"]]]
