"""Talking to one ZooKeeper server: four-letter words on the client port, AdminServer commands.

Every call returns a `ZkExchange` — the raw answer or an error text that says what to do — and
never raises for a dead, slow or misconfigured server: a refused connection is an error
observation (indeterminate), not a crash and not "down". Error texts use the same phrases as the
Jolokia client ("connection refused", "no answer within the timeout", …) so
`collectors.jolokia.error_kind_of` classifies both.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx

SOURCE_4LW = "zk.4lw"
SOURCE_ADMIN = "zk.admin"
SOURCE_ZNODE = "zk.znode"

# CATALOG §5.3: a command missing from `4lw.commands.whitelist` answers with this sentence.
NOT_WHITELISTED = "is not executed because it is not in the whitelist"
# CATALOG §5.1: a running server without quorum (or still loading) answers every command with this.
NOT_SERVING = "This ZooKeeper instance is not currently serving requests"
# Only these reach a server: reads of state, nothing that resets counters or changes trace masks.
READ_ONLY_COMMANDS = frozenset({"srvr", "mntr", "ruok", "stat", "monitor", "server_stats", "leader", "zabstate"})
MAX_ANSWER_BYTES = 4 << 20

_HOST_PORT = re.compile(r"^zk://(\[[^\]]+\]|[^:/]+):(\d+)$")


@dataclass
class ZkExchange:
    """One command sent to one server and what came back."""

    source: str  # zk.4lw | zk.admin
    request: dict  # {"command": "mntr", "endpoint": "host:port"} or {"command": "monitor", "url": …}
    started: float  # epoch seconds when it was sent
    response: Any = None  # 4lw: the raw text; admin: the parsed JSON body
    error: str | None = None
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def endpoint_of(url: str) -> tuple[str, int]:
    """zk://host:port (the config normalizes every ZooKeeper URL to this) → (host, port)."""
    m = _HOST_PORT.match(url)
    if not m:
        raise ValueError(f"not a zk://host:port URL: {url!r}")
    return m.group(1).strip("[]"), int(m.group(2))


def default_admin_url(url: str) -> str:
    host, _ = endpoint_of(url)
    return f"http://{host if ':' not in host else f'[{host}]'}:8080/commands"  # admin.serverPort default


def _check_read_only(command: str) -> None:
    if command not in READ_ONLY_COMMANDS:
        raise ValueError(f"refusing to send {command!r}: the collector only sends {sorted(READ_ONLY_COMMANDS)}")


async def four_letter_word(name: str, url: str, command: str, timeout: float) -> ZkExchange:
    """Send one 4lw to the server's client port and read until it closes the connection."""
    _check_read_only(command)
    host, port = endpoint_of(url)
    ex = ZkExchange(SOURCE_4LW, {"command": command, "endpoint": f"{host}:{port}"}, time.time())
    t0 = time.perf_counter()
    deadline = t0 + timeout
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        writer.write(command.encode())
        await writer.drain()
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), max(0.001, deadline - time.perf_counter()))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise ValueError(f"answer longer than {MAX_ANSWER_BYTES} bytes")
        text = b"".join(chunks).decode("utf-8", "replace")
        if text:
            ex.response = text
        else:
            ex.error = (f"{name}: the server closed the connection without answering {command!r} at {host}:{port}; "
                        "is this a ZooKeeper client port?")
    except ConnectionRefusedError as e:
        ex.error = (f"{name}: connection refused at {host}:{port} ({e.strerror or e}); ZooKeeper is not "
                    "listening — is the server running? (state unknown, not 'down')")
    except (asyncio.TimeoutError, TimeoutError):
        ex.error = (f"{name}: no answer within the timeout ({timeout:g}s) to {command!r} at {host}:{port}; "
                    "the JVM may be paused (GC, SIGSTOP) or overloaded — state unknown")
    except (ConnectionResetError, BrokenPipeError) as e:
        ex.error = f"{name}: connection reset by {host}:{port} during {command!r} ({e}); the JVM died or closed the socket"
    except OSError as e:
        ex.error = f"{name}: cannot reach {host}:{port} ({e.strerror or e}); check the host and port in `url`"
    except ValueError as e:
        ex.error = f"{name}: {command!r} at {host}:{port}: {e}"
    finally:
        if writer is not None:
            writer.close()
    ex.elapsed_ms = (time.perf_counter() - t0) * 1000.0
    return ex


async def admin_command(client: httpx.AsyncClient, name: str, base_url: str, command: str, timeout: float) -> ZkExchange:
    """GET <AdminServer>/commands/<command>; the JSON body is the response (CATALOG §5.4)."""
    _check_read_only(command)
    url = f"{base_url}/{command}"
    ex = ZkExchange(SOURCE_ADMIN, {"command": command, "url": url}, time.time())
    t0 = time.perf_counter()
    try:
        resp = await client.get(url, timeout=timeout)
        body: Any = None
        try:
            body = resp.json()
        except ValueError:
            pass
        if resp.status_code == 200 and isinstance(body, dict):
            ex.response = body
        elif resp.status_code == 500 and "zkServer" in resp.text:
            # measured on 3.8.0: `monitor` on a server without quorum is an NPE (HTTP 500), not JSON
            ex.error = f"{name}: HTTP 500 from {url}: {NOT_SERVING} (the AdminServer failed on a server without quorum)"
        else:
            ex.error = (f"{name}: HTTP {resp.status_code} from {url} instead of AdminServer JSON "
                        f"({resp.text[:120]!r}); check `zookeeper.admin_url`")
    except httpx.ConnectError as e:
        ex.error = (f"{name}: connection refused at {url} ({e}); the AdminServer is not listening — set "
                    "`zookeeper.admin_url` (admin.serverPort) or whitelist mntr (4lw.commands.whitelist)")
    except httpx.TimeoutException as e:
        ex.error = f"{name}: no answer within the timeout from {url} ({type(e).__name__}); state unknown"
    except httpx.HTTPError as e:
        ex.error = f"{name}: connection reset or HTTP failure at {url} ({type(e).__name__}: {e})"
    ex.elapsed_ms = (time.perf_counter() - t0) * 1000.0
    return ex


def whitelist_refusal(text: Any) -> bool:
    """Is this 4lw answer the whitelist refusal (the command is disabled on that server)?"""
    return isinstance(text, str) and NOT_WHITELISTED in text


def not_serving(answer: Any) -> bool:
    """A running server without quorum: 4lw text, or an AdminServer `error` field, says so."""
    if isinstance(answer, str):
        return answer.strip().startswith(NOT_SERVING)
    if isinstance(answer, dict):
        return NOT_SERVING in str(answer.get("error") or "")
    return False


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=False)
