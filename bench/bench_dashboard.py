"""First paint and interaction time of the incident view on a lakehouse with 1 M events, measured
in real headless Chromium (Debian chromium + chromium-driver, through selenium). Target < 1.5 s.

    python bench/bench_dashboard.py [--events 1000000] [--days 7] [--repeat 5] [--cold 3] [--busy 1] [--keep DIR]

The lakehouse is generated per the table contracts (no Spark): one HA group `bench-pair` of two
Artemis instances observed every ~1.2 s for --days days = --events broker_state rows, failing over
every 6 hours (role_intervals, failover_events), 20,000 GC findings spread over the span, a
split-brain window, and two incidents with their evidence:

  short   the split brain: ~1 min, a few hundred observations in its default range
  long    a degraded-replication incident spanning the whole period: all --events observations
          fall inside its default range, so the server aggregates them into buckets

Measured, in the browser (performance.now(), from navigation start or from the click):

  in-app link   click on the incident's link on the overview (a person's path: no page reload)
                until the incident's title and the timeline's role bars are drawn
  page load     navigation to /incident/ID (URL typed: the page and its bundles load again) until
                the timeline is drawn (the narrative, windows and evidence are part of that render)
  range         click "everything" (the cluster's whole span, all events) until the figure shows it
  zoom          Plotly zoom to one hour of the aggregated view until the figure is redrawn at
                full resolution (the server re-reads that hour)

Each is done --repeat times; the first visit of a page is cold (nothing cached in the server
process), later ones warm (the server caches reads per table version). Chromium and the server
share the machine's cores.

Then, side by side in the same run, the 7-day incident's cold first paint read from the gold
per-minute rollup broker_minutes (built by its Spark job, analysis/minutes.py, on the generated
broker_state) and from silver broker_state (a second lakehouse root that links every table but
broker_minutes: the dashboard's fallback path). --cold rounds, the two variants in alternating
order; each measure on a server started for it, which first served the browser a page that reads no
table: Dash and the browser are warm (bundles cached, as for someone who used the dashboard
before), the data is cold — nothing cached in the server process, as after every analysis, since
reads are cached per table version (the OS page cache is not dropped):

  cold page load   /incident/ID typed, until drawn
  cold page load, empty browser cache
                   the same with the browser's HTTP cache cleared first (CDP Network.clearBrowserCache):
                   a first visit ever, every bundle fetched and compiled again
  cold in-app link the overview first (not timed), then the click, until drawn
  server build     the page's server side alone (route() on a fresh Gold, no browser)

For every typed-URL cold page load, where its time went (medians, ms from navigation start, from the
browser's own timeline): the bundles run (DOMContentLoaded), the page's layout answered
(/_dash-layout, which carries the page), the figure drawn, and the callback round trips before the
first paint (0 since the first view is rendered in the layout).

--busy N keeps N processes spinning during all measures (a loaded machine, on top of whatever
else runs).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dashboards import data as D  # noqa: E402
from dashboards.app import DashboardServer, create_app  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
GROUP, A, B = "bench-pair", "art-1", "art-2"
FAILOVER_EVERY = timedelta(hours=6)
SHORT, LONG = "bench-split-brain", "bench-long"


def broker_state(events: int, days: float) -> pa.Table:
    """events rows: A and B observed alternately; the live one has connections and traffic."""
    i = np.arange(events, dtype=np.int64)
    step_us = int(days * 86_400e6) // events
    ts_us = int(T0.timestamp() * 1e6) + i * step_us
    ts = pa.array(ts_us).cast(pa.timestamp("us", tz="UTC"))
    inst_b = i % 2 == 1
    period = (ts_us - int(T0.timestamp() * 1e6)) // int(FAILOVER_EVERY.total_seconds() * 1e6)
    active = (period % 2 == 1) == inst_b
    n = events
    rng = np.random.default_rng(7)
    return pa.table({
        "obs_key": pc.binary_join_element_wise("obs-", pa.array(i).cast(pa.string()), ""),
        "ts": ts, "obs_date": pc.strftime(ts, format="%Y-%m-%d"), "kind": pa.array(["artemis"] * n),
        "group_name": pa.array([GROUP] * n), "instance": pa.array(np.where(inst_b, B, A)),
        "reachable": pa.array(np.ones(n, bool)), "active": pa.array(active),
        "role": pa.array(np.where(active, "live", "backup")), "replica_sync": pa.array(~active),
        "connections": pa.array(np.where(active, 40 + rng.integers(0, 20, n), 0)),
        "total_enqueued": pa.array(i * 50), "total_dequeued": pa.array(i * 49),
    })


def gold_tables(days: float) -> dict[str, list[dict]]:
    end = T0 + timedelta(days=days)
    intervals, failovers, t, k = [], [], T0, 0
    while t < end:
        inst = (A, B)[k % 2]
        stop = min(t + FAILOVER_EVERY - timedelta(seconds=2), end)
        intervals.append(dict(interval_id=f"iv{k}", kind="artemis", group_name=GROUP, instance=inst, start_ts=t,
                              end_ts=stop, start_lower=t - timedelta(seconds=1.2) if k else None,
                              end_upper=stop + timedelta(seconds=1.2), is_open=stop >= end,
                              observations=int((stop - t).total_seconds() / 2.4), unanswered_inside=0))
        if k:
            failovers.append(dict(event_id=f"fo{k}", kind="artemis", group_name=GROUP, event_type="failover",
                                  from_instance=(A, B)[(k - 1) % 2], to_instance=inst, old_last_active=t - timedelta(seconds=2),
                                  new_first_active=t, outage_start=t - timedelta(seconds=2), outage_end=t,
                                  outage_upper_s=2.0, overlap=False))
        t, k = t + FAILOVER_EVERY, k + 1
    mid = T0 + timedelta(days=days / 2, minutes=3)
    sb = dict(window_id="sb1", kind="artemis", group_name=GROUP, instance_a=A, instance_b=B, certain_start=mid,
              certain_end=mid + timedelta(seconds=20), possible_start=mid - timedelta(seconds=1.2),
              possible_end=mid + timedelta(seconds=21.2), certainty="certain", duration_s=20.0, enqueued_a=900,
              enqueued_b=850)
    gc = [dict(finding_id=f"gc{j}", code="gc.pause-over-third-session" if j % 50 == 0 else "gc.full",
               severity="warn", target=(A, B)[j % 2], group_name=GROUP,
               ts=T0 + timedelta(seconds=days * 86400 * j / 20_000), file_id="f", value=float(200 + j % 7000),
               threshold=6000.0, unit="ms", message=f"pause {j}") for j in range(20_000)]
    incidents = [
        dict(incident_id=SHORT, cluster=GROUP, kind="artemis", severity="critical", status="closed", start_ts=mid,
             end_ts=mid + timedelta(seconds=20), duration_s=20.0, title=f"split brain in {GROUP} (certain, 20.0 s)",
             narrative=f"{A} and {B} were both live for 20 s.", advice="Enable quorum voting.", instances=f"{A},{B}",
             codes="split-brain", finding_count=1, has_split_brain=True, has_failover=False),
        dict(incident_id=LONG, cluster=GROUP, kind="artemis", severity="warn", status="closed", start_ts=T0,
             end_ts=end, duration_s=days * 86400, title=f"replication degraded in {GROUP} for {days:g} days",
             narrative="Backups fell behind after every failover.", advice="Check the replication network.",
             instances=f"{A},{B}", codes="failover", finding_count=len(failovers), has_split_brain=False,
             has_failover=True),
    ]
    evidence = [dict(incident_id=SHORT, source_table="split_brain_windows", source_id="sb1", code="split-brain",
                     severity="critical", group_name=GROUP, instance=f"{A},{B}", start_ts=mid,
                     end_ts=mid + timedelta(seconds=20), message="both live")]
    evidence += [dict(incident_id=LONG, source_table="failover_events", source_id=f["event_id"], code="failover",
                      severity="warn", group_name=GROUP, instance=f["to_instance"], start_ts=f["old_last_active"],
                      end_ts=f["new_first_active"], message=f"failover to {f['to_instance']}") for f in failovers]
    return {"role_intervals": intervals, "failover_events": failovers, "split_brain_windows": [sb],
            "gc_findings": gc, "incidents": incidents, "incident_evidence": evidence}


def build(root: str, events: int, days: float) -> Lakehouse:
    lh = Lakehouse(root)
    t = time.perf_counter()
    lh.overwrite("broker_state", broker_state(events, days))
    for name, rows in gold_tables(days).items():
        lh.overwrite(name, rows)
    print(f"lakehouse: {events:,} broker_state rows over {days:g} days + gold tables in {time.perf_counter() - t:.1f} s → {root}")
    return lh


def build_rollup(lh: Lakehouse) -> None:
    """broker_minutes by its Spark job (full run), as `brokerscope analyze` builds it."""
    from analysis.minutes import run_minutes  # deferred: pyspark, only when the rollup is missing
    from lakehouse.spark import SparkLakehouse, spark_session

    t = time.perf_counter()
    spark = spark_session("bench-dashboard")
    try:
        n = run_minutes(SparkLakehouse(spark, lh))["broker_minutes"]
    finally:
        spark.stop()
    print(f"broker_minutes: {n:,} rows (from {lh.count('broker_state'):,} observations) by analysis/minutes.py "
          f"in {time.perf_counter() - t:.1f} s, Spark start included")


def silver_only(lh: Lakehouse, root: str) -> Lakehouse:
    """A lakehouse root whose tables are links to lh's, broker_minutes left out: the silver fallback."""
    for layer in ("bronze", "silver", "gold"):
        src = os.path.join(lh.root, layer)
        if not os.path.isdir(src):
            continue
        os.makedirs(os.path.join(root, layer), exist_ok=True)
        for name in os.listdir(src):
            dst = os.path.join(root, layer, name)
            if name != "broker_minutes" and not os.path.lexists(dst):
                os.symlink(os.path.join(src, name), dst)
    return Lakehouse(root)


# --- the browser side --------------------------------------------------------------------------------------

WAIT_FIGURE = """
const [mark, done] = [arguments[0], arguments[arguments.length - 1]];
function ready() {
  const gd = document.querySelector('#timeline .js-plotly-plot');
  if (!gd || !gd._fullLayout || !document.querySelector('#timeline .barlayer .point')) return false;
  return mark === null || (gd.layout.meta || '') !== mark;
}
(function poll() { ready() ? requestAnimationFrame(() => done(performance.now())) : setTimeout(poll, 5); })();
"""

NAVIGATE_AND_WAIT = """
const [title, done] = [arguments[0], arguments[arguments.length - 1]];
const link = [...document.querySelectorAll('#incident-list a')].find(a => a.textContent === title);
const t0 = performance.now();
link.click();
(function poll() {
  const t = document.querySelector('#incident-title');
  const drawn = t && t.textContent === title && document.querySelector('#timeline .barlayer .point');
  drawn ? requestAnimationFrame(() => done(performance.now() - t0)) : setTimeout(poll, 5);
})();
"""

CLICK_AND_WAIT = """
const [label, done] = [arguments[0], arguments[arguments.length - 1]];
const gd = document.querySelector('#timeline .js-plotly-plot');
const before = JSON.stringify(gd.layout.xaxis.range) + gd.data.length + JSON.stringify(gd.layout.annotations || []);
const t0 = performance.now();
[...document.querySelectorAll('#range-choice label')].find(l => l.textContent.trim() === label).querySelector('input').click();
(function poll() {
  const now = JSON.stringify(gd.layout.xaxis.range) + gd.data.length + JSON.stringify(gd.layout.annotations || []);
  now !== before ? requestAnimationFrame(() => done(performance.now() - t0)) : setTimeout(poll, 5);
})();
"""

ZOOM_AND_WAIT = """
const [lo, hi, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const gd = document.querySelector('#timeline .js-plotly-plot');
const before = JSON.stringify(gd.layout.annotations || []) + JSON.stringify(gd.data.map(d => (d.x || []).length));
const t0 = performance.now();
Plotly.relayout(gd, {'xaxis.range[0]': lo, 'xaxis.range[1]': hi});
(function poll() {
  const g = document.querySelector('#timeline .js-plotly-plot');
  const now = JSON.stringify(g.layout.annotations || []) + JSON.stringify(g.data.map(d => (d.x || []).length));
  now !== before ? requestAnimationFrame(() => done(performance.now() - t0)) : setTimeout(poll, 5);
})();
"""


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1200"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    d.set_script_timeout(60)
    return d


def wait_overview(d, url: str) -> None:
    d.get(url)
    d.execute_async_script("const done = arguments[arguments.length - 1]; "
                           "(function p(){document.querySelector('#incident-list') ? done(1) : setTimeout(p, 20);})();")


def first_paint(d, url: str) -> float:
    d.get(url)
    return d.execute_async_script(WAIT_FIGURE, None) / 1000.0


# where a typed URL's first paint went, from the browser's timeline (ms from navigation start)
BREAKDOWN = """
const nav = performance.getEntriesByType('navigation')[0];
const res = performance.getEntriesByType('resource');
const layout = res.find(r => r.name.includes('_dash-layout'));
return {scripts: nav.domContentLoadedEventEnd, layout: layout ? layout.responseEnd : null,
        callbacks: res.filter(r => r.name.includes('_dash-update-component') && r.startTime < arguments[0]).length,
        fetched_kb: res.reduce((n, r) => n + (r.transferSize || 0), 0) / 1024};
"""


def typed_url(d, url: str) -> tuple[float, dict]:
    """First paint of a typed URL (s) and where it went (BREAKDOWN, plus the paint in ms)."""
    d.get(url)
    painted = d.execute_async_script(WAIT_FIGURE, None)
    return painted / 1000.0, {**d.execute_script(BREAKDOWN, painted), "paint": painted}


def spin() -> None:
    while True:
        pass


def cold_side_by_side(d, variants: dict[str, Lakehouse], rounds: int, title: str,
                      breakdown: dict[str, list[dict]]) -> dict[str, list[float]]:
    """Per variant: cold page loads (browser cache warm, then empty), cold in-app link and the server
    build of the 7-day incident (s); each typed URL's BREAKDOWN goes into `breakdown`."""
    from dashboards.app import route  # the page's server side, as the browser's request runs it

    out: dict[str, list[float]] = {}
    ports: dict[str, int] = {}

    def fresh(label: str) -> DashboardServer:
        """A new server on the variant's own port (the browser keeps its bundles cached, as for a
        person who used the dashboard before), its Dash machinery warmed by a page that reads no
        table: what is cold is the data, as after every analysis (reads are cached per table version)."""
        srv = DashboardServer(create_app(D.Gold(variants[label])), "127.0.0.1", ports.get(label, 0)).start()
        ports[label] = srv.port
        d.get(f"{srv.url}/browser-warm-up")
        d.execute_async_script("const done = arguments[arguments.length - 1]; "
                               "(function p(){document.querySelector('#page-message') ? done(1) : setTimeout(p, 20);})();")
        return srv

    for k in range(rounds):
        for label in (list(variants) if k % 2 == 0 else list(reversed(variants))):
            lh = variants[label]
            page, empty, link, server = (f"{what}, {label}" for what in COLD_MEASURES)
            srv = fresh(label)
            t, parts = typed_url(d, f"{srv.url}/incident/{LONG}")
            out.setdefault(page, []).append(t)
            breakdown.setdefault(page, []).append(parts)
            srv.stop()
            srv = fresh(label)
            d.execute_cdp_cmd("Network.clearBrowserCache", {})
            t, parts = typed_url(d, f"{srv.url}/incident/{LONG}")
            out.setdefault(empty, []).append(t)
            breakdown.setdefault(empty, []).append(parts)
            srv.stop()
            srv = fresh(label)
            wait_overview(d, srv.url + "/")
            out.setdefault(link, []).append(d.execute_async_script(NAVIGATE_AND_WAIT, title) / 1000.0)
            srv.stop()
            t = time.perf_counter()
            route(D.Gold(lh), f"/incident/{LONG}")
            out.setdefault(server, []).append(time.perf_counter() - t)
    return out


COLD_MEASURES = ("cold page load, long incident", "cold page load, empty browser cache", "cold in-app link, long incident",
                 "server build (no browser)")


def breakdown_line(label: str, parts: list[dict]) -> str:
    med = {k: statistics.median(p[k] for p in parts) for k in ("scripts", "layout", "paint", "callbacks", "fetched_kb")}
    return (f"  {label:<52} bundles run {med['scripts']:4.0f} ms, layout (with the page) in {med['layout']:4.0f} ms, "
            f"drawn {med['paint']:4.0f} ms; callbacks before the paint {med['callbacks']:g}; "
            f"fetched {med['fetched_kb']:,.0f} KiB")


def cold_summary(label: str, xs: list[float], target: float | None) -> str:
    verdict = "" if target is None else ("OK" if max(xs) < target else f"OVER {target:g} s")
    return (f"  {label:<52} " + " ".join(f"{x:6.3f}" for x in xs)
            + f"   median {statistics.median(xs):6.3f} s   max {max(xs):6.3f} s   {verdict}").rstrip()


def summary(label: str, xs: list[float]) -> str:
    cold, warm = xs[0], xs[1:] or xs
    return (f"  {label:<44} cold {cold:6.3f} s   warm median {statistics.median(warm):6.3f} s"
            f"   max {max(warm):6.3f} s   {'OK' if max(xs) < 1.5 else 'OVER 1.5 s'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", type=int, default=3, help="rounds of the cold rollup-vs-silver comparison")
    ap.add_argument("--busy", type=int, default=1, help="processes kept spinning during the measures")
    ap.add_argument("--keep", help="lakehouse folder to keep (reused when it exists)")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="bench-dashboard-")
    root = os.path.join(work, "lh")
    lh = Lakehouse(root) if args.keep and os.path.isdir(os.path.join(root, "gold")) else build(root, args.events, args.days)
    if not lh.exists("broker_minutes"):
        build_rollup(lh)
    silver = silver_only(lh, os.path.join(work, "lh-silver-only"))
    results: dict[str, list[float]] = {}
    cold: dict[str, list[float]] = {}
    breakdown: dict[str, list[dict]] = {}
    d = None
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for b in busy:
        b.start()
    srv = DashboardServer(create_app(D.Gold(lh)), "127.0.0.1", 0).start()
    try:
        d = browser()
        wait_overview(d, srv.url + "/")  # browser start-up and the Dash bundles, outside the measures
        short, long = (D.incident(D.Gold(lh), i) for i in (SHORT, LONG))
        mid = short["start_ts"]
        for _ in range(args.repeat):
            for inc, label in ((short, "split-brain incident (~1 min)"),
                               (long, f"{args.days:g}-day incident ({args.events:,} obs)")):
                wait_overview(d, srv.url + "/")
                results.setdefault(f"overview → {label}, in-app link", []).append(
                    d.execute_async_script(NAVIGATE_AND_WAIT, inc["title"]) / 1000.0)
            results.setdefault("page load, split-brain incident (~1 min)", []).append(
                first_paint(d, f"{srv.url}/incident/{SHORT}"))
            results.setdefault(f"page load, {args.days:g}-day incident ({args.events:,} obs)", []).append(
                first_paint(d, f"{srv.url}/incident/{LONG}"))
            lo = (mid - timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M:%S")
            hi = (mid + timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M:%S")
            results.setdefault("zoom to 1 h of the aggregated view", []).append(
                d.execute_async_script(ZOOM_AND_WAIT, lo, hi) / 1000.0)
            first_paint(d, f"{srv.url}/incident/{SHORT}")
            results.setdefault(f"range → everything ({args.events:,} obs)", []).append(
                d.execute_async_script(CLICK_AND_WAIT, "everything") / 1000.0)
        srv.stop()
        srv = None
        load_mid = os.getloadavg()
        cold = cold_side_by_side(d, {"rollup": lh, "silver": silver}, args.cold, long["title"], breakdown)
    finally:
        if d is not None:
            d.quit()
        if srv is not None:
            srv.stop()
        for b in busy:
            b.terminate()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"incident view, {args.repeat} runs each (cold = first visit; headless Chromium, server in-process); "
          f"{args.busy} spinning process(es) of the bench; load average {load_mid[0]:.1f} / {load_mid[1]:.1f} / "
          f"{load_mid[2]:.1f} on {os.cpu_count()} cores:")
    for label, xs in results.items():
        print(summary(label, xs))
    print(f"cold 7-day incident ({args.events:,} obs), broker_minutes vs broker_state, {args.cold} rounds in "
          f"alternating order, each on a fresh server; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}:")
    for label, xs in cold.items():
        print(cold_summary(label, xs, 1.5 if "rollup" in label and "server" not in label else None))
    print("where each typed URL's cold first paint went (medians; ms from navigation start):")
    for label, parts in breakdown.items():
        print(breakdown_line(label, parts))
    med = {label: statistics.median(xs) for label, xs in cold.items()}
    for what in COLD_MEASURES:
        print(f"  {what}: silver / rollup = {med[f'{what}, silver'] / med[f'{what}, rollup']:.1f}x (medians)")
    checked = [*results.values(), *(xs for label, xs in cold.items() if "rollup" in label and "server" not in label)]
    return 0 if all(max(xs) < 1.5 for xs in checked) else 1


if __name__ == "__main__":
    sys.exit(main())
