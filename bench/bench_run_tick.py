"""`brokerscope run`'s analysis tick on a large fleet with a week of history (issue 20, done-when:
"500 HA groups with a week of history keeps its analysis tick under its 30 s interval, measured
over an hour of simulated time").

    python bench/bench_run_tick.py                                   # 500 groups, 7 days, 60 minutes
    python bench/bench_run_tick.py --groups 20 --days 1 --minutes 5  # a quick run

What it does:

1. A fleet of `--groups` ActiveMQ master/slave pairs (2 instances each) scraped at the service's
   default scrape interval (5 s, on the collector's grid: settings/config.py, collectors/schedule.py).
   Per group the roles over the week and the hour come from bench_spine's generator
   (`group_states`): crashes (the master stops answering, the slave takes over, the old master
   comes back as slave in a new JVM), clean hand-overs, split brains, restarts of the master, and
   0.3 % missed scrapes; about one event per group per `--event-hours` (default 24 h). Each
   instance has `--destinations` queues (default 3: `orders` 5 msg/s, `invoices` 2 msg/s,
   `ActiveMQ.DLQ` empty; only the master has destination MBeans, as in ActiveMQ), and 10 % of the
   groups lose the consumers of `invoices` for 3-10 minutes once in the week (stuck messages).
2. The week of history is written as the silver job would have written it — `broker_state`,
   `destination_stats`, `collector_health` (and an empty `replication_stats`) — with delta-rs in
   parts of 6 hours (Arrow/NumPy, oldest first), then stamped with the silver job's watermark on an
   empty bronze_jolokia (version 0). Every column comes from what the ActiveMQ pack gives for the
   simulator's rendering of that instance in that role (templates made by the real normalize), the
   time-varying ones (uptime, counters, broker id) computed; `--check-rows` asserts that sampled
   generated rows equal the pack's rows for the simulator's Jolokia answers. The obs_key of the
   history rows is synthetic (instance#scrape): hashing 100 M requests would take longer than the
   rest. The last `--tail-minutes` (10) of the week go to bronze_jolokia instead, as Jolokia
   exchanges rendered by the simulator (brokerscope/simulate: activemq registry, Jolokia 2 answers,
   refused connections), so the silver job's incremental path has the stored bronze tail it reads
   (clock skew: the last 60 samples per target).
3. One `analyze` (analysis.runner.analyze, the service's call) brings every watermark up to date:
   silver incrementally over the bronze tail, every gold job in full (none has a watermark yet).
   Timed and reported apart.
4. `--minutes` of simulated time in ticks of the service's analysis interval (30 s): each tick
   lands that interval's scrapes in bronze_jolokia the way the collector does (`bronze_row` of each
   exchange, `Lakehouse.append_new` every flush_interval = 2 s of scrapes), then runs
   `Service.analyze_once` — analysis.runner.analyze with the one warm Spark session
   (spark_session("brokerscope-run"), the service's defaults) plus the gold refresh for /metrics —
   timed, with a per-job breakdown from analyze's progress callback.
5. `--check` (default on): incremental = full on every gold and state table — the gold/state
   tables of a hard-linked copy of the lakehouse are removed and one analyze recomputes them all in
   full from the same silver; every table must be equal row for row.

Rendering the new scrapes (the simulator builds every Jolokia answer in Python, ~1 ms each) and
landing them are outside the timed tick, as in the service, where the collector does them on its
own thread; on this 2-core machine they run between two ticks, not beside them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.bench_spine import group_states  # noqa: E402
from bench.machine import loadavg, machine_line  # noqa: E402
from brokerscope.simulate import activemq  # noqa: E402
from brokerscope.simulate.jolokia import dialect, exchange, refused_error  # noqa: E402
from brokerscope.simulate.model import Counters, Destination, Member  # noqa: E402
from collectors.base import scrape_requests  # noqa: E402
from collectors.packs import pack_for  # noqa: E402
from collectors.recording import bronze_row  # noqa: E402
from collectors.schedule import period  # noqa: E402
from lakehouse.store import Lakehouse  # noqa: E402
from lakehouse.tables import contract  # noqa: E402

SCRAPE_INTERVAL = 5.0  # settings/config.py: Config.scrape_interval's default
ANALYSIS_INTERVAL = 30.0  # settings/service.py: ServiceSettings.analysis_interval's default
FLUSH_INTERVAL = 2.0  # settings/config.py: Config.flush_interval's default
T0 = dt.datetime(2026, 11, 16, 0, 0, tzinfo=dt.timezone.utc)
T0_MS = int(T0.timestamp() * 1000)
PERIOD_MS = period(SCRAPE_INTERVAL) * 1000.0
DAY_MS = 86_400_000
# name, messages per scrape while the broker serves, depth kept by the consumers, consumers
DESTINATIONS = [("orders", 25, 2, 1), ("invoices", 10, 2, 1), ("ActiveMQ.DLQ", 0, 0, 0), ("payments", 5, 1, 1),
                ("audit", 3, 1, 2), ("shipments", 4, 2, 1), ("returns", 1, 1, 1), ("notifications", 8, 3, 2)]
STUCK_DEST = "invoices"
ROLES = (1, 0, -1)  # active, inactive, unanswered (group_states' codes); template index = instance * 3 + role slot
ROLE_SLOT = {1: 0, 0: 1, -1: 2}
CHUNK_TICKS = 4352  # ~6 h of scrapes per append (4.35 M broker_state rows at 1,000 instances)
SILVER_HISTORY = ("broker_state", "destination_stats", "collector_health")


# --- the fleet ------------------------------------------------------------------------------------


class GridMember(Member):
    """A simulator Member whose role, JVM and counters at the scrape being rendered are set from
    the fleet's arrays (the same numbers the history's rows were computed from)."""

    now_active: bool = False
    now_jvm_ms: int = 0
    now_uptime_ms: int = 0
    now_counters: dict = {}

    def is_active(self, t: float) -> bool:
        return self.now_active

    def jvm_start(self, t: float) -> float:
        return self.now_jvm_ms / 1000.0

    def uptime_ms(self, t: float) -> int:
        return self.now_uptime_ms

    def counters(self, d: Destination, t: float) -> Counters:
        return self.now_counters[d.name]


class Fleet:
    """Roles, JVM starts and served scrapes of every instance at every scrape of the run."""

    def __init__(self, groups: int, ticks: int, event_ticks: int, n_dest: int, stuck_before: int, seed: int = 11):
        rng = np.random.default_rng(seed)
        self.groups, self.n, self.ticks = groups, 2 * groups, ticks
        self.names = [f"g{g:04d}-{x}" for g in range(groups) for x in "ab"]
        self.group_of = [f"g{g:04d}" for g in range(groups) for _ in "ab"]
        self.urls = [f"http://{name}.brokers.example:8161/api/jolokia" for name in self.names]
        self.dests = DESTINATIONS[:n_dest]
        self.state = np.empty((self.n, ticks), np.int8)
        self.jvm_off = np.empty((self.n, ticks), np.int32)  # ms, whole seconds
        for g in range(groups):
            st, jvm = group_states(rng, ticks, event_ticks)
            self.state[2 * g:2 * g + 2] = st
            self.jvm_off[2 * g:2 * g + 2] = (np.round(jvm / 1000.0) * 1000).astype(np.int32)
        self.jvm_base = (T0_MS // 1000 - rng.integers(3_600, 86_400, self.n)) * 1000  # ms, whole seconds
        self.offset_ms = rng.integers(0, int(PERIOD_MS), self.n)
        self.order = np.argsort(self.offset_ms, kind="stable")  # scrape order within a round
        active = (self.state == 1).astype(np.int32)
        c = np.cumsum(active, axis=1, dtype=np.int32)
        reset = np.ones((self.n, ticks), bool)
        reset[:, 1:] = self.jvm_off[:, 1:] != self.jvm_off[:, :-1]
        base = np.maximum.accumulate(np.where(reset, c - active, 0), axis=1)
        self.served = c - base  # active scrapes since the JVM started, this one included
        del c, base, reset, active
        # stuck `invoices`: 10 % of groups, the master of the moment, 3-10 min inside one 6-h part
        self.stuck_lo = np.full(self.n, -1, np.int64)
        self.stuck_hi = np.full(self.n, -1, np.int64)
        if any(d[0] == STUCK_DEST for d in self.dests) and stuck_before > CHUNK_TICKS:
            for g in rng.choice(groups, size=max(1, groups // 10), replace=False):
                part = int(rng.integers(0, stuck_before // CHUNK_TICKS))
                length = int(rng.integers(36, 121))
                lo = part * CHUNK_TICKS + int(rng.integers(0, CHUNK_TICKS - length))
                i = 2 * g + (0 if self.state[2 * g, lo] == 1 else 1)
                self.stuck_lo[i], self.stuck_hi[i] = lo, lo + length
        self.members = [GridMember(name, "activemq", grp, url, destinations=[Destination(d[0]) for d in self.dests],
                                   facts={"store": f"/var/lib/activemq/{grp}"})
                        for name, grp, url in zip(self.names, self.group_of, self.urls)]

    def ts_ms(self, i: np.ndarray, k: np.ndarray) -> np.ndarray:
        return T0_MS + self.offset_ms[i] + np.round(k * PERIOD_MS).astype(np.int64)

    def counters(self, i: np.ndarray, k: np.ndarray) -> dict[str, tuple[np.ndarray, ...]]:
        """Per destination: (messages, consumers, enqueued, dequeued) at scrapes (i, k)."""
        served = self.served[i, k].astype(np.int64)
        lo, hi = self.stuck_lo[i], self.stuck_hi[i]
        stuck = (lo >= 0) & (k >= lo) & (k < hi)
        out = {}
        for name, rate, depth, consumers in self.dests:
            enq = rate * served + depth
            msgs = np.full(len(i), depth, np.int64)
            cons = np.full(len(i), consumers, np.int64)
            if name == STUCK_DEST and stuck.any():
                s0 = self.served[i[stuck], lo[stuck]].astype(np.int64)
                msgs[stuck] = depth + rate * (served[stuck] - s0)
                cons[stuck] = 0
            out[name] = (msgs, cons, enq, enq - msgs)
        return out

    # -- one scrape as the simulator renders it ------------------------------------------------

    def envelope(self, i: int, k: int, jol, requests: list[dict]) -> dict:
        ts_ms = int(self.ts_ms(np.array([i]), np.array([k]))[0])
        ts = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.timezone.utc)
        m = self.members[i]
        st = int(self.state[i, k])
        if st == -1:
            return exchange(jol, m.name, ts, requests, refused_error(m.name, m.url), 1.2)
        m.now_active = st == 1
        m.now_jvm_ms = int(self.jvm_base[i] + self.jvm_off[i, k])
        m.now_uptime_ms = ts_ms - m.now_jvm_ms
        ii, kk = np.array([i]), np.array([k])
        m.now_counters = {name: Counters(int(enq[0]), int(deq[0]), int(msgs[0]), int(cons[0]), None)
                          for name, (msgs, cons, enq, deq) in self.counters(ii, kk).items()}
        return exchange(jol, m.name, ts, requests, activemq.registry(m, (ts_ms - T0_MS) / 1000, ts), 6.0 + i % 5)

    def bronze_rows(self, i: int, k: int, jol, requests: list[dict]) -> dict:
        env = self.envelope(i, k, jol, requests)
        return bronze_row(env, "activemq", self.group_of[i], self.urls[i], "collect",
                          http_status=None if env.get("error") else 200)


# --- the history: silver rows computed in NumPy/Arrow ------------------------------------------------


def templates(fleet: Fleet) -> dict[str, dict[str, pa.Array]]:
    """Per silver table and column, the pack's value for each (instance, role): index i*3 + slot
    (destination_stats: (i*3 + slot) * D + d). Made by the silver job's own normalize over the
    simulator's Jolokia answers."""
    from analysis.silver import normalize_batch

    jol, requests = dialect(2), scrape_requests(pack_for("activemq"))
    rows = []
    for i in range(fleet.n):
        for st in ROLES:
            saved = fleet.state[i, 0]
            fleet.state[i, 0] = st
            rows.append(fleet.bronze_rows(i, 0, jol, requests))
            fleet.state[i, 0] = saved
    batch = pa.RecordBatch.from_pylist(rows, schema=contract("bronze_jolokia").schema)
    targets = {name: ("activemq", grp) for name, grp in zip(fleet.names, fleet.group_of)}
    out = {}
    for table in SILVER_HISTORY:
        t = pa.Table.from_batches([normalize_batch(batch, table, targets)])
        if table == "destination_stats":  # master rows only: pad to (instance, slot, destination)
            names = [d[0] for d in fleet.dests]
            key = {(r["instance"], r["destination"]): r for r in t.to_pylist()}
            full = [key.get((fleet.names[x // (3 * len(names))], names[x % len(names)])) or {} for x in range(fleet.n * 3 * len(names))]
            t = pa.Table.from_pylist(full, schema=contract(table).schema)
        else:
            assert t.num_rows == fleet.n * 3, (table, t.num_rows)
        out[table] = {c: t.column(c).combine_chunks() for c in t.column_names}
    return out


def silver_parts(fleet: Fleet, tpl, i: np.ndarray, k: np.ndarray) -> dict[str, pa.Table]:
    """The silver rows of scrapes (i, k) (any order; kept)."""
    n_dest = len(fleet.dests)
    st = fleet.state[i, k]
    slot = np.select([st == 1, st == 0], [0, 1], 2)
    code = pa.array(i * 3 + slot)
    ts_ms = fleet.ts_ms(i, k)
    ts = pa.array(ts_ms * 1000, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    days = np.arange(ts_ms.min() // DAY_MS, ts_ms.max() // DAY_MS + 1)
    date_names = pa.array([(dt.datetime(1970, 1, 1) + dt.timedelta(days=int(d))).strftime("%Y-%m-%d") for d in days])
    obs_date = date_names.take(pa.array(ts_ms // DAY_MS - days[0]))
    inst_names = pa.array(fleet.names)
    obs_key = pc.binary_join_element_wise(inst_names.take(pa.array(i)), pc.cast(pa.array(k), pa.string()), "#")
    cnt = fleet.counters(i, k)
    active = st == 1
    jvm_ms = fleet.jvm_base[i] + fleet.jvm_off[i, k]

    def from_template(table: str, codes: pa.Array, override: dict) -> pa.Table:
        c = contract(table)
        cols = {}
        for f in c.schema:
            cols[f.name] = override[f.name] if f.name in override else tpl[table][f.name].take(codes)
        return pa.table(cols, schema=c.schema)

    answered = st != -1
    bs = from_template("broker_state", code, {
        "obs_key": obs_key, "ts": ts, "obs_date": obs_date,
        "uptime_ms": pa.array(ts_ms - jvm_ms, mask=~answered),
        "broker_id": pc.if_else(pa.array(active), pc.binary_join_element_wise(pa.scalar("ID:"), pc.binary_join_element_wise(
            inst_names.take(pa.array(i)), pc.cast(pa.array(jvm_ms % 10**13), pa.string()), pa.scalar("0:1"), "-"), ""),
            pa.nulls(len(i), pa.string())).cast(pa.string()),
        "total_enqueued": pa.array(sum(v[2] for v in cnt.values()), mask=~active),
        "total_dequeued": pa.array(sum(v[3] for v in cnt.values()), mask=~active),
        "total_messages": pa.array(sum(v[0] for v in cnt.values()), mask=~active),
        "consumers": pa.array(sum(v[1] for v in cnt.values()), mask=~active),
    })
    ch = from_template("collector_health", code, {"obs_key": obs_key, "ts": ts, "obs_date": obs_date, "collector_ts": ts})
    rows = np.flatnonzero(active)
    n_rows = len(rows) * n_dest
    dcode = pa.array(np.repeat(i[rows] * 3 * n_dest, n_dest) + np.tile(np.arange(n_dest), len(rows)))
    inter = {}
    for name, (msgs, cons, enq, deq) in cnt.items():
        for col, v in (("messages", msgs), ("consumers", cons), ("enqueued", enq), ("dequeued", deq)):
            inter.setdefault(col, []).append(v[rows])
    stacked = {col: np.stack(v, axis=1).ravel() for col, v in inter.items()}  # row-major: (row, destination)
    in_flight = np.where(stacked["consumers"] > 0, np.minimum(1, stacked["messages"]), 0)
    rep = pa.array(np.repeat(rows, n_dest))
    ds = from_template("destination_stats", dcode, {
        "obs_key": obs_key.take(rep), "ts": ts.take(rep), "obs_date": obs_date.take(rep),
        "messages": pa.array(stacked["messages"]), "consumers": pa.array(stacked["consumers"]),
        "enqueued": pa.array(stacked["enqueued"]), "dequeued": pa.array(stacked["dequeued"]),
        "in_flight": pa.array(in_flight), "dispatched": pa.array(stacked["dequeued"] + in_flight),
    })
    assert ds.num_rows == n_rows
    return {"broker_state": bs, "destination_stats": ds, "collector_health": ch}


def check_rows(fleet: Fleet, tpl, samples: int, ticks: int, rng) -> int:
    """Generated silver rows = the pack's rows for the simulator's answer at the same scrapes."""
    from brokerscope.service import observation_rows
    from settings import Target

    jol, requests = dialect(2), scrape_requests(pack_for("activemq"))
    i = rng.integers(0, fleet.n, samples)
    k = rng.integers(0, ticks, samples)
    lo = np.flatnonzero(fleet.stuck_lo >= 0)
    if len(lo):  # and some inside the stuck runs
        i = np.concatenate([i, lo[:5]])
        k = np.concatenate([k, (fleet.stuck_lo[lo[:5]] + fleet.stuck_hi[lo[:5]]) // 2])
    got = silver_parts(fleet, tpl, i, k)
    checked = 0
    for x, (ii, kk) in enumerate(zip(i, k)):
        env = fleet.envelope(int(ii), int(kk), jol, requests)
        want = observation_rows(env, Target(name=fleet.names[ii], kind="activemq", url=fleet.urls[ii], group=fleet.group_of[ii]))
        mine_bs = got["broker_state"].slice(x, 1).to_pylist()[0]
        for col, v in want.broker_state[0].items():
            if col != "obs_key" and mine_bs[col] != v:
                raise AssertionError(f"broker_state {fleet.names[ii]} scrape {kk}: {col} = {mine_bs[col]!r}, the pack gives {v!r}")
        key = mine_bs["obs_key"]
        mine_ds = {r["destination"]: r for r in got["destination_stats"].filter(pc.equal(got["destination_stats"].column("obs_key"), key)).to_pylist()}
        if len(mine_ds) != len(want.destination_stats):
            raise AssertionError(f"destination_stats {fleet.names[ii]} scrape {kk}: {len(mine_ds)} rows, the pack gives {len(want.destination_stats)}")
        for w in want.destination_stats:
            for col, v in w.items():
                if col != "obs_key" and mine_ds[w["destination"]][col] != v:
                    raise AssertionError(f"destination_stats {fleet.names[ii]} {w['destination']} scrape {kk}: {col} = "
                                         f"{mine_ds[w['destination']][col]!r}, the pack gives {v!r}")
        checked += 1
    return checked


# --- the run ----------------------------------------------------------------------------------------


def job_of(msg: str) -> str:
    """A progress line → the job it starts (details such as versions and counts dropped)."""
    m = msg.split(" (")[0].split(":")[0]
    return m.replace("inputs unchanged since the last run", "").strip()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=500, help="HA groups (2 ActiveMQ instances each; default 500)")
    ap.add_argument("--days", type=float, default=7.0, help="days of history (default 7)")
    ap.add_argument("--minutes", type=float, default=60.0, help="simulated minutes of ticks (default 60)")
    ap.add_argument("--destinations", type=int, default=3, help=f"queues per broker (default 3, at most {len(DESTINATIONS)})")
    ap.add_argument("--event-hours", type=float, default=24.0, help="about one HA event per group per this many hours (default 24)")
    ap.add_argument("--tail-minutes", type=float, default=10.0, help="last minutes of the history kept as bronze (default 10)")
    ap.add_argument("--check-rows", type=int, default=200, help="sampled history rows compared with the pack's (default 200)")
    ap.add_argument("--no-check", action="store_true", help="skip the incremental = full check at the end")
    ap.add_argument("--driver-memory", help="spark.driver.memory (default: the service's, spark_session's default)")
    ap.add_argument("--stop-at", help="end the ticks at this UTC wall-clock time (HH:MM), reporting the ticks run so far")
    ap.add_argument("--profile", action="store_true",
                    help="run each tick under cProfile and print where the tick's wall time went (the jobs' Python "
                         "functions, which wait on their Spark actions), and keep each tick's pstats in --workdir")
    ap.add_argument("--resume", action="store_true", help="continue the ticks of an earlier run in --workdir (its progress.json)")
    ap.add_argument("--workdir", help="keep the lakehouse here (default: a temp dir, removed)")
    args = ap.parse_args(argv)
    if not 1 <= args.destinations <= len(DESTINATIONS):
        ap.error(f"--destinations takes 1 to {len(DESTINATIONS)}")

    t_start = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:7.1f}s] {msg}", flush=True)

    import pyspark

    print(f"date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    load_before = loadavg()
    print(machine_line(memory=True, extra=f"pyspark=={pyspark.__version__}"))
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "? (not a git checkout)"
    except OSError:
        rev = "?"
    print(f"commit: {rev}; command: python bench/bench_run_tick.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())

    hist_ticks = int(np.ceil(args.days * DAY_MS / PERIOD_MS))
    tail_ticks = int(np.ceil(args.tail_minutes * 60_000 / PERIOD_MS))
    hour_ms = int(args.minutes * 60_000)
    run_ticks = hist_ticks + int(np.ceil(hour_ms / PERIOD_MS)) + 2
    silver_ticks = hist_ticks - tail_ticks
    work = args.workdir or tempfile.mkdtemp(prefix="bench-run-tick-")
    root = os.path.join(work, "lakehouse")
    if not args.resume:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    try:
        return run(args, say, work, root, hist_ticks, tail_ticks, silver_ticks, run_ticks, hour_ms, load_before)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def run(args, say, work, root, hist_ticks, tail_ticks, silver_ticks, run_ticks, hour_ms, load_before) -> int:
    from settings import config_from_dict

    marker = os.path.join(work, "progress.json")
    resume = args.resume and os.path.exists(marker)
    info = json.load(open(marker)) if resume else {}
    model = {"groups": args.groups, "days": args.days, "destinations": args.destinations, "event_hours": args.event_hours,
             "tail_minutes": args.tail_minutes, "run_ticks": run_ticks}
    if resume:  # the same fleet (its random events depend on the number of scrapes modelled), never a longer hour
        if "model" not in info:
            raise SystemExit(f"--resume: {marker} was written by an earlier version of this bench")
        if {k: v for k, v in info["model"].items() if k != "run_ticks"} != {k: v for k, v in model.items() if k != "run_ticks"}:
            raise SystemExit(f"--resume: {marker} was made with {info['model']}, not {model}")
        if run_ticks > info["model"]["run_ticks"]:
            raise SystemExit("--resume: --minutes may not exceed the first run's")
        run_ticks = info["model"]["run_ticks"]
    t = time.perf_counter()
    fleet = Fleet(args.groups, run_ticks, max(1, int(args.event_hours * 3_600_000 / PERIOD_MS)), args.destinations, silver_ticks)
    say(f"fleet: {args.groups} groups x 2 ActiveMQ instances, {hist_ticks:,} scrapes each in {args.days:g} days "
        f"(every {PERIOD_MS / 1000:.4f} s) + {args.minutes:g} min; {len(fleet.dests)} queues per broker; "
        f"{int((fleet.stuck_lo >= 0).sum())} stuck runs; model built in {time.perf_counter() - t:.1f} s")

    cfg_data = {"lakehouse": root, "scrape_interval": SCRAPE_INTERVAL,
                "targets": [{"name": n, "kind": "activemq", "url": u, "group": g} for n, u, g in zip(fleet.names, fleet.urls, fleet.group_of)]}
    with open(os.path.join(work, "brokerscope.yaml"), "w") as fh:
        json.dump(cfg_data, fh)  # JSON is YAML
    cfg = config_from_dict(cfg_data)
    lh = Lakehouse(root)

    jol, requests = dialect(2), scrape_requests(pack_for("activemq"))
    ts_all = None

    def scrapes_between(lo_ms: int, hi_ms: int) -> list[tuple[int, int]]:
        """(instance, scrape) with lo <= ts < hi, in time order."""
        nonlocal ts_all
        if ts_all is None:
            k0 = hist_ticks - tail_ticks - 2
            ks = np.arange(k0, run_ticks)
            ts_all = (k0, T0_MS + fleet.offset_ms[:, None] + np.round(ks[None, :] * PERIOD_MS).astype(np.int64))
        k0, tsa = ts_all
        ii, kk = np.nonzero((tsa >= lo_ms) & (tsa < hi_ms))
        order = np.argsort(tsa[ii, kk], kind="stable")
        return list(zip(ii[order].tolist(), (kk[order] + k0).tolist()))

    def land(lo_ms: int, hi_ms: int, flush_s: float = FLUSH_INTERVAL) -> tuple[int, float, float]:
        """Render and land the scrapes of [lo, hi) as the collector does: one append_new per flush."""
        r0 = time.perf_counter()
        flushes = []
        for f_lo in range(lo_ms, hi_ms, int(flush_s * 1000)):
            f_hi = min(hi_ms, f_lo + int(flush_s * 1000))
            flushes.append([fleet.bronze_rows(i, k, jol, requests) for i, k in scrapes_between(f_lo, f_hi)])
        r1 = time.perf_counter()
        n = sum(lh.append_new("bronze_jolokia", rows) for rows in flushes if rows)
        return n, r1 - r0, time.perf_counter() - r1

    hist_end_ms = T0_MS + int(round(hist_ticks * PERIOD_MS))
    from lakehouse.spark import spark_session

    if resume:
        say(f"--resume: the lakehouse and set-up of {marker}, {len(info['ticks'])} ticks done")
        t = time.perf_counter()
        spark = spark_session("brokerscope-run", conf={"spark.driver.memory": args.driver_memory} if args.driver_memory else None)
        say(f"Spark started in {time.perf_counter() - t:.1f} s")
    else:
        spark, info = set_up(args, say, fleet, cfg, lh, root, hist_ticks, silver_ticks, hist_end_ms, land)
        info["ticks"], info["next_lo"], info["model"] = [], hist_end_ms, model
        with open(marker, "w") as fh:
            json.dump(info, fh)
    written, gen_s, setup_s, setup_jobs = info["written"], info["gen_s"], info["setup_s"], info["setup_jobs"]
    return hour(args, say, fleet, cfg, cfg_data, lh, root, work, spark, land, hour_ms, info, marker, load_before,
                written, gen_s, setup_s, setup_jobs)


def set_up(args, say, fleet, cfg, lh, root, hist_ticks, silver_ticks, hist_end_ms, land):
    """History, bronze tail, Spark, the set-up analyze: (spark, what the summary needs)."""
    from analysis.params import analysis_params
    from analysis.runner import analyze
    from analysis.silver import SILVER_JOB, code_sources
    from analysis.watermark import Watermark, fingerprint
    from lakehouse.spark import spark_session
    from lakehouse.tables import SILVER_FROM_JOLOKIA

    t = time.perf_counter()
    tpl = templates(fleet)
    checked = check_rows(fleet, tpl, args.check_rows, hist_ticks, np.random.default_rng(3))
    say(f"templates from the pack's normalize; {checked} sampled scrapes: generated silver rows = the pack's rows "
        f"for the simulator's answers ({time.perf_counter() - t:.1f} s)")

    # -- history: silver, in 6-hour parts ----------------------------------------------------------
    from deltalake import CommitProperties, write_deltalake

    params = analysis_params(cfg)
    mark = Watermark(SILVER_JOB, 0, fingerprint(SILVER_JOB, sorted(params.spine.targets.items()), repr(params.spine.skew_threshold),
                                                sources=code_sources()))
    lh.overwrite("bronze_jolokia", contract("bronze_jolokia").schema.empty_table())  # version 0, empty
    t = time.perf_counter()
    written = defaultdict(int)
    chunks = [(a, min(a + CHUNK_TICKS, silver_ticks)) for a in range(0, silver_ticks, CHUNK_TICKS)]
    for x, (a, b) in enumerate(chunks):
        k = np.repeat(np.arange(a, b), fleet.n)
        i = np.tile(fleet.order, b - a)  # oldest first, as collectors append
        parts = silver_parts(fleet, tpl, i, k)
        last = x == len(chunks) - 1
        for table, tbl in parts.items():
            if last:  # the silver job's watermark: bronze_jolokia version 0 is reflected
                c = contract(table)
                write_deltalake(lh.uri(table), tbl, mode="append", partition_by=list(c.partition_by),
                                commit_properties=CommitProperties(custom_metadata=mark.commit_info()))
            else:
                lh.append(table, tbl)
            written[table] += tbl.num_rows
        if x % 4 == 3 or last:
            el = time.perf_counter() - t
            say(f"  history part {x + 1}/{len(chunks)}: " + ", ".join(f"{k_} {v:,}" for k_, v in written.items())
                + f" rows; {sum(written.values()) / el / 1e6:.2f} M rows/s")
    for table in SILVER_FROM_JOLOKIA:
        if table not in SILVER_HISTORY:  # replication_stats: none for ActiveMQ; created empty, stamped
            c = contract(table)
            write_deltalake(lh.uri(table), c.schema.empty_table(), mode="append", partition_by=list(c.partition_by),
                            commit_properties=CommitProperties(custom_metadata=mark.commit_info()))
    # the silver job's carry, which anchors its watermark: no bronze before the tail (no skew samples), every
    # instance's group configured (nothing to carry of broker_state)
    from analysis.silver import OUTPUT_VERSIONS
    from analysis.silver_carry import Carry, carry_table
    from analysis.watermark import anchor_info
    write_deltalake(lh.uri("silver_carry"), carry_table(Carry()), mode="overwrite",
                    commit_properties=CommitProperties(custom_metadata=anchor_info(lh, mark.commit_info(), SILVER_FROM_JOLOKIA,
                                                                                   OUTPUT_VERSIONS)))
    gen_s = time.perf_counter() - t
    say(f"history written in {gen_s:.1f} s: " + ", ".join(f"{k_} {v:,}" for k_, v in written.items()))

    # the silver history ends at scrape silver_ticks - 1 of every instance; the tail starts with its next scrape
    tail_lo_ms = int(fleet.ts_ms(np.arange(fleet.n), np.full(fleet.n, silver_ticks)).min())
    n, render_s, land_s = land(tail_lo_ms, hist_end_ms, flush_s=60.0)
    say(f"bronze tail: {n:,} Jolokia exchanges ({args.tail_minutes:g} min) rendered in {render_s:.1f} s, "
        f"landed in {land_s:.1f} s (one append_new per minute)")

    # -- Spark, and the analysis that brings every watermark up to date ------------------------------
    t = time.perf_counter()
    spark = spark_session("brokerscope-run", conf={"spark.driver.memory": args.driver_memory} if args.driver_memory else None)
    say(f"Spark started in {time.perf_counter() - t:.1f} s (driver memory {spark.conf.get('spark.driver.memory')}, "
        f"master {spark.sparkContext.master})")
    setup_log: list[tuple[float, str]] = []
    t = time.perf_counter()
    counts = analyze(cfg, spark=spark, progress=lambda m: (setup_log.append((time.perf_counter(), m)), say(f"  setup: {m}")))
    setup_s = time.perf_counter() - t
    if not any("incremental" in m for _, m in setup_log if m.startswith("bronze → silver")):
        raise AssertionError("the set-up analysis did not continue silver incrementally (the history would be lost)")
    if lh.count("broker_state") < written["broker_state"]:
        raise AssertionError("broker_state lost rows in the set-up analysis")
    setup_jobs = breakdown(setup_log, time.perf_counter())
    say(f"set-up analyze (silver incremental over the tail, every gold job in full): {setup_s:.1f} s; "
        + ", ".join(f"{k_} {v}" for k_, v in counts.items() if v))
    return spark, {"written": dict(written), "gen_s": gen_s, "setup_s": setup_s, "setup_jobs": setup_jobs}


def hour(args, say, fleet, cfg, cfg_data, lh, root, work, spark, land, hour_ms, info, marker, load_before,
         written, gen_s, setup_s, setup_jobs) -> int:
    """The ticks, the check, the summary."""
    from brokerscope.service import Service
    from settings.service import ServiceSettings

    # -- the hour ---------------------------------------------------------------------------------
    svc = Service(cfg, settings=ServiceSettings(metrics=False), progress=None, spark=spark)
    tick_log: list[tuple[float, str]] = []

    def step(msg: str) -> None:  # the service's progress callback, recording when each job starts
        tick_log.append((time.perf_counter(), msg))

    svc._analysis_step = step
    svc.refresh_gold = lambda: (step("gold refresh for /metrics (gold_rows)"), Service.refresh_gold(svc))
    ticks = info["ticks"]
    lo = info["next_lo"]
    n_ticks = int(round(hour_ms / (ANALYSIS_INTERVAL * 1000)))
    stop_at = None
    if args.stop_at:
        hh, mm = map(int, args.stop_at.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        stop_at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if stop_at <= now:  # a time past midnight
            stop_at += dt.timedelta(days=1)
    for x in range(len(ticks), n_ticks):
        if stop_at is not None and dt.datetime.now(dt.timezone.utc) >= stop_at:
            say(f"--stop-at {args.stop_at}: stopping after {x} of {n_ticks} ticks")
            break
        hi = lo + int(ANALYSIS_INTERVAL * 1000)
        n, render_s, land_s = land(lo, hi)
        tick_log.clear()
        t = time.perf_counter()
        if args.profile:
            import cProfile

            prof = cProfile.Profile()
            counts = prof.runcall(svc.analyze_once)
        else:
            counts = svc.analyze_once()
        tick_s = time.perf_counter() - t
        if svc.analysis_stats.last_error:
            raise AssertionError(f"tick {x + 1}: analysis failed: {svc.analysis_stats.last_error}")
        jobs = breakdown(tick_log, t + tick_s)
        heap_mb = live_heap_mb(spark)
        full = [m for _, m in tick_log if "(full)" in m or "recomputing" in m]
        ticks.append({"s": tick_s, "jobs": jobs, "rows": n, "full": full, "render": render_s, "land": land_s,
                      "heap_mb": heap_mb})
        top = sorted(jobs.items(), key=lambda kv: -kv[1])[:3]
        say(f"tick {x + 1:3}/{n_ticks}: +{n:,} exchanges (rendered {render_s:.1f} s, landed {land_s:.1f} s); analysis "
            f"{tick_s:6.2f} s [{', '.join(f'{k_} {v:.1f}' for k_, v in top)}]"
            + (f"  FULL: {'; '.join(full)}" if full else "") + f"  failovers {counts.get('failover_events')}; driver live heap {heap_mb:.0f} MB")
        if args.profile:
            print_profile(prof, tick_s)
            prof.dump_stats(os.path.join(work, f"tick{x + 1:03d}.pstats"))  # for pstats' callers/callees
        lo = hi
        info["next_lo"] = lo
        with open(marker, "w") as fh:
            json.dump(info, fh)

    # -- incremental = full -------------------------------------------------------------------------
    check_line = "not checked (--no-check)"
    if not args.no_check:
        check_line = equal_to_full(cfg_data, root, work, spark, say)
    load_after = loadavg()
    spark_conf_memory = spark.sparkContext.getConf().get("spark.driver.memory", "1g (Spark's default)")
    spark.stop()

    times = [x["s"] for x in ticks]
    print()
    print(f"fleet: {args.groups} HA groups ({2 * args.groups} ActiveMQ instances), scraped every {SCRAPE_INTERVAL:g} s; "
          f"{len(fleet.dests)} queues per broker (master only)")
    print("history: " + ", ".join(f"{k_} {v:,}" for k_, v in written.items()) + f" rows ({args.days:g} days) + "
          f"{args.tail_minutes:g} min in bronze; written in {gen_s:.0f} s")
    print(f"set-up analyze (every gold job in full, silver incremental): {setup_s:.1f} s — "
          + ", ".join(f"{k_} {v:.1f}" for k_, v in sorted(setup_jobs.items(), key=lambda kv: -kv[1])[:6]))
    if times:
        over = [i + 1 for i, s in enumerate(times) if s >= ANALYSIS_INTERVAL]
        print(f"ticks: {len(times)} x {ANALYSIS_INTERVAL:g} s = {len(times) * ANALYSIS_INTERVAL / 60:g} min simulated"
              f"{'' if len(times) == n_ticks else f' (of {n_ticks} asked: stopped by --stop-at)'}, "
              f"{ticks[0]['rows']:,} new Jolokia exchanges each")
        print(f"analysis tick (Service.analyze_once): min {min(times):.2f} s, median {statistics.median(times):.2f} s, "
              f"p95 {pct(times, 0.95):.2f} s, max {max(times):.2f} s (tick {times.index(max(times)) + 1})")
        print(f"under {ANALYSIS_INTERVAL:g} s: {'every tick' if not over else f'NO: ticks {over}'}; "
              f"ticks with a full recompute: {sum(1 for x in ticks if x['full']) or 'none'}")
        names = sorted({k_ for x in ticks for k_ in x["jobs"]}, key=lambda k_: -statistics.median([x["jobs"].get(k_, 0) for x in ticks]))
        print(f"{'per job (s)':<64} {'median':>7} {'p95':>7} {'max':>7}")
        for name in names:
            v = [x["jobs"].get(name, 0.0) for x in ticks]
            print(f"  {name[:62]:<62} {statistics.median(v):7.2f} {pct(v, 0.95):7.2f} {max(v):7.2f}")
        heaps = [x["heap_mb"] for x in ticks if x.get("heap_mb") is not None]
        if heaps:
            print(f"driver live heap after a full GC (after each tick, outside its time): first {heaps[0]:.0f} MB, "
                  f"last {heaps[-1]:.0f} MB, max {max(heaps):.0f} MB (spark.driver.memory {spark_conf_memory})")
        print(f"outside the tick: rendering the scrapes median {statistics.median([x['render'] for x in ticks]):.1f} s, "
              f"landing them ({int(ANALYSIS_INTERVAL / FLUSH_INTERVAL)} append_new) median {statistics.median([x['land'] for x in ticks]):.1f} s")
    print(f"incremental = full: {check_line}")
    print(f"loadavg(before)={load_before} loadavg(after)={load_after}")
    return 0


def live_heap_mb(spark) -> float:
    """The driver JVM's live heap: used after a full GC (System.gc, outside the timed tick), so a leak
    across ticks shows as a rising line rather than hiding in the collector's slack."""
    jvm = spark.sparkContext._jvm
    jvm.java.lang.System.gc()
    return jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / 2**20


def print_profile(prof, tick_s: float, top: int = 30) -> None:
    """The analysis' own functions by cumulative wall time (a Spark action's time is its caller's)."""
    import pstats

    st = pstats.Stats(prof)
    rows = []
    for (path, line, fn), (_, _, _, cum, _) in st.stats.items():
        if any(f"/{d}/" in path for d in ("analysis", "lakehouse", "brokerscope", "alerts")):
            rows.append((cum, f"{os.path.relpath(path, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))}:{line} {fn}"))
    print(f"  profile of the tick ({tick_s:.1f} s): cumulative wall time of the analysis' functions")
    for cum, name in sorted(rows, reverse=True)[:top]:
        print(f"    {cum:7.2f} s {cum / tick_s:5.0%}  {name}")


def breakdown(log: list[tuple[float, str]], end: float) -> dict[str, float]:
    """Seconds from each progress line to the next (the last to `end`), per job. A job's work
    before its first line falls under the line before: the silver job's watermark check, read of
    the new bronze rows and clock skews under "Delta access", the gold spine's under "bronze → silver";
    stuck_messages and replication_lag say their line after their reads, so those reads fall under
    "broker_minutes" and "stuck_messages" (the commit times in the tables' _delta_log split them exactly)."""
    out: dict[str, float] = defaultdict(float)
    for (t, msg), nxt in zip(log, [*[t for t, _ in log[1:]], end]):
        out[job_of(msg)] += nxt - t
    return dict(out)


def equal_to_full(cfg_data: dict, root: str, work: str, spark, say) -> str:
    """Recompute every gold/state table in full on a copy holding the same bronze and silver, and
    compare with what the incremental ticks left."""
    from analysis.runner import analyze
    from settings import config_from_dict

    lh = Lakehouse(root)
    copy_root = os.path.join(work, "lakehouse-full")
    shutil.rmtree(copy_root, ignore_errors=True)
    os.makedirs(copy_root)
    kept = ("bronze", "silver")
    for layer in os.listdir(root):
        if layer in kept:
            subprocess.run(["cp", "-al", os.path.join(root, layer), os.path.join(copy_root, layer)], check=True)
    # the silver job's own state goes with silver: it anchors silver's watermark, and without it the copy's
    # silver job would rebuild silver from the bronze tail alone (the history was written straight to silver)
    silver_state = ["silver_carry"]
    os.makedirs(os.path.join(copy_root, "state"), exist_ok=True)
    for name in silver_state:
        subprocess.run(["cp", "-al", lh.uri(name), os.path.join(copy_root, "state", name)], check=True)
    derived = sorted({name for layer in os.listdir(root) if layer not in kept and os.path.isdir(os.path.join(root, layer))
                      for name in os.listdir(os.path.join(root, layer)) if not name.startswith((".", "_"))} - set(silver_state))
    t = time.perf_counter()
    analyze(config_from_dict(cfg_data | {"lakehouse": copy_root}), spark=spark)
    full_s = time.perf_counter() - t
    other = Lakehouse(copy_root)
    same, differ = [], []
    for name in derived:
        try:
            c = contract(name)
        except KeyError:
            continue
        if not lh.exists(name):
            continue
        key = lambda r, k=c.keys or tuple(c.column_names): tuple(str(r[x]) for x in k)  # noqa: E731
        a = sorted(lh.read(name).to_pylist(), key=key)
        b = sorted(other.read(name).to_pylist(), key=key) if other.exists(name) else None
        (same if a == b else differ).append(f"{name} ({len(a)})")
    shutil.rmtree(copy_root, ignore_errors=True)
    line = (f"full recompute on a copy {full_s:.1f} s; " + ("every table equal: " if not differ else f"DIFFER: {', '.join(differ)}; equal: ")
            + ", ".join(same))
    say(line)
    return line


if __name__ == "__main__":
    sys.exit(main())
