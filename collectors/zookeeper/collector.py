"""The live ZooKeeper collector: per ensemble, scrape every server on one tick; read the watched
coordination state through the ensemble; land every exchange raw in bronze_zk and the recording.

Targets of kind `zookeeper` are servers; their `group` names the ensemble (a server without a group
is an ensemble of its own). All servers of an ensemble are scraped concurrently at the same tick and
their envelopes carry that tick's time, so one `ts` is one consistent round of the ensemble (what
quorum arithmetic needs). A scrape of a server is `srvr` (always enabled, CATALOG §5.3), then —
while it serves — `mntr`; when the server answers that `mntr` is not whitelisted, the AdminServer's
`/commands/monitor` from then on. Each call is bounded by the target's timeout (≤ the interval), and
a server still busy with its previous scrape skips the tick, so a dead or paused server never
delays the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict

import httpx

from collectors.base import obs_key, parse_ts
from collectors.bronze import (BronzeBuffer, CollectorHost, flush_counted, flush_periodically, land_exchanges, land_or_spill,
                               recording_path)
from collectors.jolokia import error_kind_of
from collectors.schedule import ticks
from collectors.zookeeper.coordination import ReadOnlyZk, take_snapshot, watch_request
from collectors.zookeeper.wire import (
    SOURCE_ZNODE,
    ZkExchange,
    admin_command,
    compact_json,
    default_admin_url,
    endpoint_of,
    four_letter_word,
    not_serving,
    whitelist_refusal,
)
from settings import Target

log = logging.getLogger("brokerscope.collect")
BRONZE_TABLE = "bronze_zk"


def ensemble_of(t: Target) -> str:
    return t.group or t.name


def ensembles(targets: list[Target]) -> dict[str, list[Target]]:
    out: dict[str, list[Target]] = defaultdict(list)
    for t in targets:
        if t.kind == "zookeeper":
            out[ensemble_of(t)].append(t)
    return dict(out)


def connect_string(members: list[Target]) -> str:
    return ",".join("{}:{}".format(*endpoint_of(t.url)) for t in members)


def bronze_zk_row(env: dict, kind: str, group: str | None, collector: str) -> dict:
    """The bronze_zk row of one zk.* envelope (live and replay share this, so keys match)."""
    ts = parse_ts(env["ts"])
    req = env["request"][0] if env.get("request") else {}
    resp = env.get("response")
    return {
        "obs_key": obs_key(env["source"], env["target"], ts, env["request"]),
        "ts": ts,
        "obs_date": ts.strftime("%Y-%m-%d"),
        "target": env["target"],
        "kind": kind,
        "group_name": group,
        "source": env["source"],
        "command": req.get("command") or req.get("watch"),
        "endpoint": req.get("endpoint") or req.get("url") or req.get("hosts"),
        "request_json": compact_json(env["request"]),
        "response_text": resp if isinstance(resp, str) or resp is None else compact_json(resp),
        "error": env.get("error"),
        "error_kind": error_kind_of(env.get("error")),
        "elapsed_ms": env.get("elapsed_ms"),
        "collector": collector,
    }


def validate_zk_envelope(env: dict) -> str | None:
    """Why a zk.* envelope cannot be ingested (None: fine)."""
    if not isinstance(env.get("request"), list) or not env["request"] or not isinstance(env["request"][0], dict):
        return f"{env['source']} envelope without a 'request' array of one object"
    if env.get("response") is None and not env.get("error"):
        return f"{env['source']} envelope with neither response nor error"
    if env["source"] == SOURCE_ZNODE and env.get("response") is not None and not isinstance(env["response"], dict):
        return "zk.znode response must be an object {\"nodes\": [...]}"
    return None


class ZkCollector:
    """Runs inside `collectors.scraper.Collector.run` for the targets of kind zookeeper."""

    def __init__(self, parent: CollectorHost, targets: list[Target]) -> None:
        self.parent = parent
        self.config = parent.config
        self.ensembles = ensembles(targets)
        self._mntr_refused: set[str] = set()  # servers whose 4lw whitelist lacks mntr
        self._pending = BronzeBuffer(parent.lakehouse, BRONZE_TABLE)
        # kazoo logs every refused reconnect at WARNING; the failures land as error observations
        logging.getLogger("kazoo.client").setLevel(logging.ERROR)

    async def run(self, t_end: float | None) -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            loops = [self._ensemble_loop(name, members, http, t_end) for name, members in self.ensembles.items()]
            loops += [self._watch_loop(name, members, t_end) for name, members in self.ensembles.items()
                      if any(t.zookeeper and t.zookeeper.watch for t in members)]
            done = asyncio.Event()
            flusher = asyncio.create_task(self._flush_loop(done))
            try:
                await asyncio.gather(*loops)
            finally:
                done.set()
                await flusher  # never two bronze commits at once: the last one runs after it
                land_or_spill(self.flush, self._pending, self.parent.stats, recording_path(self.parent.recorder),
                              self.parent.spill_dirs())

    # -- scheduling ------------------------------------------------------------------------------

    def _ticks(self, t_end: float | None):
        return ticks(self.config.scrape_interval, self.parent._stop, t_end)

    def _timeout(self, t: Target) -> float:
        # as the Jolokia scraper: a call may take up to the interval, never less than 1 s; a late
        # round skips ticks instead of piling up
        return min(t.timeout, max(self.config.scrape_interval, 1.0))

    async def _ensemble_loop(self, name: str, members: list[Target], http: httpx.AsyncClient, t_end: float | None) -> None:
        """Every tick starts a scrape of each server, stamped with the tick; a server still busy
        with its previous scrape (paused, slow) skips the tick, so it never holds up the others."""
        busy: dict[str, asyncio.Task] = {}
        async for tick in self._ticks(t_end):
            for t in members:
                if t.name not in busy or busy[t.name].done():
                    busy[t.name] = asyncio.create_task(self._scrape_and_land(t, http, tick))
        await asyncio.gather(*busy.values())

    async def _scrape_and_land(self, t: Target, http: httpx.AsyncClient, tick: float) -> None:
        self._land(t, tick, await self._scrape_server(t, http))

    async def _scrape_server(self, t: Target, http: httpx.AsyncClient) -> list[ZkExchange]:
        timeout = self._timeout(t)
        srvr = await four_letter_word(t.name, t.url, "srvr", timeout)
        if not srvr.ok or not_serving(srvr.response):
            return [srvr]  # dead (error observation) or without quorum: mntr would say no more
        if t.name not in self._mntr_refused:
            mntr = await four_letter_word(t.name, t.url, "mntr", timeout)
            if not whitelist_refusal(mntr.response):
                return [srvr, mntr]
            log.warning("%s: mntr is not in 4lw.commands.whitelist; using the AdminServer's /commands/monitor", t.name)
            self._mntr_refused.add(t.name)
            first = [srvr, mntr]  # the refusal is an observation too (recorded once)
        else:
            first = [srvr]
        admin = (t.zookeeper.admin_url if t.zookeeper and t.zookeeper.admin_url else None) or default_admin_url(t.url)
        return first + [await admin_command(http, t.name, admin, "monitor", timeout)]

    async def _watch_loop(self, name: str, members: list[Target], t_end: float | None) -> None:
        """Snapshots of the watched path sets, read once per tick through the whole ensemble."""
        owners = [(t, w) for t in members if t.zookeeper for w in t.zookeeper.watch]
        requests, seen = [], set()
        for t, w in owners:  # the same set declared on several members is read once
            req = watch_request(w)
            key = compact_json(req)
            if key not in seen:
                seen.add(key)
                requests.append((t, req))
        timeout = min(self._timeout(members[0]), 5.0)
        zk = ReadOnlyZk(connect_string(members), timeout=timeout)
        try:
            async for tick in self._ticks(t_end):
                for t, req in requests:
                    ex = await asyncio.to_thread(self._snapshot, zk, t, req)
                    self._land(t, ex.started, [ex])  # no round to align with: stamp when the read began
        finally:
            await asyncio.to_thread(zk.close)

    @staticmethod
    def _snapshot(zk: ReadOnlyZk, t: Target, req: dict) -> ZkExchange:
        ex = ZkExchange(SOURCE_ZNODE, dict(req, hosts=zk.hosts), time.time())
        t0 = time.perf_counter()
        try:
            ex.response = take_snapshot(zk, req)
        except Exception as e:  # noqa: BLE001  (any kazoo failure is an error observation)
            kind = type(e).__name__
            if kind in ("KazooTimeoutError", "TimeoutError", "ConnectionLoss", "SessionExpiredError", "ConnectionError"):
                ex.error = (f"{t.name}: no answer within the timeout reading {req['watch']} through {zk.hosts} "
                            f"({kind}: {e}); the ensemble may have lost its quorum — state unknown")
            else:
                ex.error = f"{t.name}: reading {req['watch']} through {zk.hosts} failed ({kind}: {e})"
        ex.elapsed_ms = (time.perf_counter() - t0) * 1000.0
        return ex

    # -- landing ---------------------------------------------------------------------------------

    def _land(self, t: Target, tick: float, exchanges: list[ZkExchange]) -> None:
        """One scrape of a server (or one snapshot): counted once, every exchange recorded."""
        land_exchanges(self.parent, self._pending, t.name, tick, exchanges,
                       lambda env: bronze_zk_row(env, t.kind, t.group, "collect"))

    async def _flush_loop(self, done: asyncio.Event) -> None:
        await flush_periodically(self.flush, done, self.config.flush_interval, self.parent.stats)

    def flush(self) -> int:
        return flush_counted(self._pending, self.parent.stats)

