"""Async Jolokia client: one bulk POST per scrape, read-only by construction.

`JolokiaClient.bulk()` never raises for a target that misbehaves: it returns an `Exchange` that
carries the raw body (when there is one) plus a classified error, so a scraper can record an error
observation and move on to the other targets. Per-item statuses (404 for MBeans a passive broker
does not have, 500 "Broker is not yet started") are facts inside a successful exchange.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

READ_ONLY_TYPES = frozenset({"read", "search", "list", "version"})
# A bulk answer larger than this is refused (and never held in memory whole): with destinations
# read in batches of max_destinations_per_scrape, a real answer is a few MiB at most.
MAX_RESPONSE_BYTES = 32 << 20
_RETRYABLE = frozenset({"refused", "reset", "timeout"})


class UnsafeRequestError(ValueError):
    """A request type that could change a broker (exec, write) was asked for."""


@dataclass
class Exchange:
    """One bulk request and what came back."""

    url: str
    requests: list[dict]
    started: float  # epoch seconds when the request was sent (observation time)
    elapsed_ms: float
    http_status: int | None = None
    body: Any = None  # parsed JSON body (list for bulk) or None
    error: str | None = None  # human-readable, names the target and what to do
    error_kind: str | None = None  # refused | reset | timeout | auth | forbidden | http | not_json | truncated | tls | other
    attempts: int = 1
    raw_text: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def items(self) -> list[dict]:
        """Response items in request order ([] when the exchange failed)."""
        if not self.ok or not isinstance(self.body, list):
            return []
        return self.body


def _retryable(ex: Exchange) -> bool:
    """Transport failures and server errors (HTTP 5xx) may pass; a 4xx or a bad body will not."""
    return ex.error_kind in _RETRYABLE or (ex.error_kind == "http" and (ex.http_status or 0) >= 500)


def check_read_only(requests: list[dict]) -> None:
    for i, r in enumerate(requests):
        t = r.get("type") if isinstance(r, dict) else None
        if not isinstance(t, str) or t not in READ_ONLY_TYPES:
            raise UnsafeRequestError(
                f"request {i} has type {t!r}; brokerscope only sends {sorted(READ_ONLY_TYPES)} "
                "(monitoring must never change a broker)"
            )
        if "target" in r:
            # Jolokia proxy mode makes the agent open a JMX connection to any URL it is given
            # (JNDI/RMI lookups: a known remote-code-execution path); the collector never needs it.
            raise UnsafeRequestError(
                f"request {i} carries a proxy `target`; brokerscope never uses Jolokia proxy mode "
                "(point the target's url at the broker's own Jolokia endpoint instead)"
            )


def _looks_truncated(text: str) -> bool:
    s = text.strip()
    return bool(s) and s[0] in "[{" and s[-1] not in "]}"


def decode_text(content: bytes, charset: str | None) -> str:
    """The body as text in its declared charset; UTF-8 when the charset is one Python does not
    know (a broken or hostile agent must not raise out of the client)."""
    try:
        return content.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return content.decode("utf-8", errors="replace")


# Jolokia 2.x answers a bulk POST holding one malformed request (an ObjectName that does not parse, an
# unknown type) with this text and HTTP 400 for the whole bulk; 1.x with one JSON object of status 400
_BAD_REQUEST_TEXT = "400 (Bad Request)"


def _malformed_bulk(name: str, status: int, reason: str) -> str:
    return (f"{name}: HTTP {status}: Jolokia refused the whole bulk request as malformed ({reason[:160]}); one bad "
            "request fails them all — check the values that go into the ObjectNames read (broker_name)")


def classify_body(name: str, status: int, text: str, content_type: str, location: str = "") -> tuple[Any, str | None, str | None]:
    """Turn an HTTP answer into (json body, error, error_kind)."""
    if status == 400 and text.startswith(_BAD_REQUEST_TEXT):
        return None, _malformed_bulk(name, status, " ".join(text[len(_BAD_REQUEST_TEXT):].split())), "http"
    if 300 <= status < 400:
        where = " ".join(location.split())[:200] or "no Location header"
        return None, (
            f"{name}: HTTP {status} redirect to {where!r}; set the target's url to the final address "
            "(brokerscope does not follow redirects: they could carry credentials elsewhere)"
        ), "http"
    if status == 401:
        return None, (
            f"{name}: HTTP 401 Unauthorized — the Jolokia endpoint wants credentials; set username "
            "and password_env/password_file for this target"
        ), "auth"
    if status == 403:
        return None, (
            f"{name}: HTTP 403 Forbidden — credentials missing, wrong or lacking the role (the Artemis "
            "console answers 403, not 401, to a missing or wrong password), or the agent's strict "
            "Origin check rejected us; check username/password and set `origin:` to a value allowed "
            "by jolokia-access.xml"
        ), "forbidden"
    try:
        body = json.loads(text)
    except RecursionError:
        return None, (
            f"{name}: HTTP {status} returned JSON nested too deeply to read ({len(text)} bytes) instead of "
            "Jolokia JSON; check the URL points at the Jolokia endpoint"
        ), "not_json"
    except ValueError:
        snippet = " ".join(text.strip().split())[:120]
        if _looks_truncated(text):
            return None, f"{name}: response JSON is truncated ({len(text)} bytes received); the connection was cut mid-body", "truncated"
        what = "an HTML page" if "<html" in text[:500].lower() or "html" in content_type else "a non-JSON body"
        return None, (
            f"{name}: HTTP {status} returned {what} instead of Jolokia JSON ({snippet!r}); check the "
            "URL points at the Jolokia endpoint (ActiveMQ: /api/jolokia, Artemis: /console/jolokia)"
        ), "not_json"
    if isinstance(body, dict) and body.get("status") == 400:
        return body, _malformed_bulk(name, status, f"{body.get('error_type') or ''}: {body.get('error') or ''}"), "http"
    if status >= 400 and not isinstance(body, list):
        msg = body.get("error") if isinstance(body, dict) else None
        return body, f"{name}: HTTP {status} from Jolokia: {msg or text[:120]}", "http"
    if isinstance(body, dict) and body.get("status") == 403:
        # Jolokia 2.x (the Artemis console, the 2.x JVM agent) refuses a missing or bad Origin with HTTP 200 and this body
        return body, (
            f"{name}: Jolokia refused the request (status 403 in an HTTP {status} answer: "
            f"{str(body.get('error'))[:160]}); its strict Origin check: set `origin:` to a value "
            "jolokia-access.xml allows (Artemis: the console's http host, e.g. http://127.0.0.1)"
        ), "forbidden"
    if not isinstance(body, list):
        # A single error object instead of the bulk array (e.g. Jolokia rejected the whole POST).
        err = body.get("error") if isinstance(body, dict) else None
        return body, (
            f"{name}: HTTP {status}: expected a JSON array for a bulk request, got {type(body).__name__}: "
            f"{err or text[:120]}; check the URL points at the Jolokia endpoint, not a proxy or another API"
        ), "http"
    return body, None, None


@functools.lru_cache(maxsize=None)
def shared_ssl_context(ca_file: str | None = None) -> ssl.SSLContext:
    """One verifying SSL context per CA file, shared by all clients (each costs ~20 ms and ~1 MiB)."""
    return ssl.create_default_context(cafile=ca_file)


class JolokiaClient:
    """Async client for one Jolokia endpoint. Use as an async context manager."""

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        username: str | None = None,
        password: str | None = None,
        origin: str | None = None,
        timeout: float = 5.0,
        retries: int = 1,
        backoff: float = 0.2,
        verify: bool | str = True,
        transport: httpx.AsyncBaseTransport | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        keepalive: float = 5.0,
    ) -> None:
        self.url = url
        self.name = name or url
        self.max_response_bytes = max_response_bytes
        self.timeout = timeout  # per exchange: connect + every read (httpx's own timeouts are per read)
        self.retries = retries
        self.backoff = backoff
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if origin:
            headers["Origin"] = origin
        auth = httpx.BasicAuth(username, password or "") if username else None
        if url.startswith("http://"):
            verify = False  # no TLS: skip building an SSL context (costly per client at 1,000 targets)
        elif verify is True or isinstance(verify, str):
            verify = shared_ssl_context(verify if isinstance(verify, str) else None)
        self._client = httpx.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 3.0)),
            verify=verify,
            follow_redirects=False,
            transport=transport,
            # `keepalive`: how long an idle connection may wait for the next exchange (httpx's 5 s by
            # default). An expired one is only closed at the next exchange, so a shorter keep-alive than
            # the scrape interval holds the socket just as long, reusing it never: a new connection per
            # scrape (the collector passes its interval, see collectors.scraper.keepalive)
            limits=httpx.Limits(max_connections=2, max_keepalive_connections=1, keepalive_expiry=keepalive),
        )

    async def __aenter__(self) -> "JolokiaClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def bulk(self, requests: list[dict], *, deadline: float | None = None) -> Exchange:
        """POST the requests as one bulk array; retry transport failures with jittered backoff.

        `deadline` (epoch seconds) stops retrying once passed, so a slow target never delays the
        next scrape. The observation time is the first attempt's send time.
        """
        check_read_only(requests)
        payload = json.dumps(requests).encode()
        started = time.time()
        t0 = time.perf_counter()
        ex = Exchange(self.url, requests, started, 0.0)
        for attempt in range(1, self.retries + 2):
            ex.attempts = attempt
            await self._guarded_once(payload, len(requests), ex)
            if ex.ok or not _retryable(ex) or attempt > self.retries:
                break
            pause = self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random())
            if deadline is not None and time.time() + pause >= deadline:
                break
            await asyncio.sleep(pause)
        ex.elapsed_ms = (time.perf_counter() - t0) * 1000.0
        return ex

    async def _guarded_once(self, payload: bytes, n_requests: int, ex: Exchange) -> None:
        """One attempt under a total deadline (an answer trickled a byte at a time never ends a
        per-read timeout), and never an exception: whatever a target sends becomes its error."""
        try:
            await asyncio.wait_for(self._once(payload, n_requests, ex), self.timeout)
        except asyncio.TimeoutError:
            ex.body = ex.raw_text = None
            ex.error, ex.error_kind = (
                f"{self.name}: no complete answer within the timeout of {self.timeout:g}s for the whole exchange "
                "(connect and every read); the JVM may be paused or the answer trickles in — state unknown"
            ), "timeout"
        except Exception as e:  # noqa: BLE001 - one target's bytes must never stop the collector
            ex.body = ex.raw_text = None
            ex.error, ex.error_kind = (
                f"{self.name}: unreadable answer ({type(e).__name__}: {str(e)[:200]}); the target is recorded as "
                "unanswered — check the URL points at a Jolokia agent, and report this with a recording if it does"
            ), "other"

    async def _read_capped(self, resp: httpx.Response) -> bytes | None:
        """The body (decoded from any Content-Encoding), or None once it exceeds the limit."""
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            return None
        chunks, size = [], 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    async def _once(self, payload: bytes, n_requests: int, ex: Exchange) -> None:
        ex.error = ex.error_kind = None
        ex.body = ex.http_status = ex.raw_text = None
        try:
            async with self._client.stream("POST", self.url, content=payload) as resp:
                content = await self._read_capped(resp)
            if content is None:
                ex.http_status = resp.status_code
                ex.error, ex.error_kind = (
                    f"{self.name}: HTTP {resp.status_code} answer larger than {self.max_response_bytes / 1048576:g} MiB "
                    "(the limit); refused unread. Lower max_destinations_per_scrape for this target, or check "
                    "the URL points at the Jolokia endpoint"
                ), "http"
                return
            text = decode_text(content, resp.charset_encoding)
        except httpx.ConnectError as e:
            cause = str(e) or type(e).__name__
            if "CERTIFICATE" in cause.upper() or "SSL" in cause.upper():
                ex.error, ex.error_kind = (
                    f"{self.name}: TLS verification failed ({cause}); set ca_file to the CA that "
                    "signed the broker's certificate (verify_tls: false only for a lab)"
                ), "tls"
            else:
                ex.error, ex.error_kind = (
                    f"{self.name}: connection refused at {self.url} ({cause}); the JVM or its Jolokia "
                    "agent is not listening — is the broker running?"
                ), "refused"
            return
        except httpx.TimeoutException as e:
            ex.error, ex.error_kind = (
                f"{self.name}: no answer within the timeout ({type(e).__name__}); the JVM may be "
                "paused (GC, SIGSTOP) or overloaded — state unknown"
            ), "timeout"
            return
        except (httpx.ReadError, httpx.WriteError) as e:
            ex.error, ex.error_kind = (
                f"{self.name}: connection reset while waiting for the answer ({type(e).__name__}"
                f"{': ' + str(e) if str(e) else ''}); the JVM died or closed the socket mid-request"
            ), "reset"
            return
        except httpx.RemoteProtocolError as e:
            ex.error, ex.error_kind = f"{self.name}: connection dropped mid-response ({e}); response truncated", "truncated"
            return
        except httpx.HTTPError as e:
            ex.error, ex.error_kind = f"{self.name}: request failed ({type(e).__name__}: {e}); check the target's url", "other"
            return
        ex.http_status = resp.status_code
        ex.raw_text = text
        body, error, kind = classify_body(self.name, resp.status_code, text, resp.headers.get("content-type", ""),
                                          resp.headers.get("location", ""))
        ex.body, ex.error, ex.error_kind = body, error, kind
        if ex.ok and len(body) != n_requests:
            ex.error, ex.error_kind = (
                f"{self.name}: HTTP {ex.http_status} answer has {len(body)} items for {n_requests} requests; "
                "a Jolokia agent answers each one — check the URL points at it, not at a proxy that rewrites bodies"
            ), "http"


_KIND_BY_PHRASE = (
    ("unreadable answer (", "other"),  # first: the exception text it quotes may say anything
    ("connection refused", "refused"),
    ("connection reset", "reset"),
    ("no answer within the timeout", "timeout"),
    ("no complete answer within the timeout", "timeout"),
    ("HTTP 401", "auth"),
    ("HTTP 403", "forbidden"),
    ("TLS verification failed", "tls"),
    ("truncated", "truncated"),
    ("instead of Jolokia JSON", "not_json"),
    ("HTTP ", "http"),
)


def error_kind_of(message: str | None, first: tuple[tuple[str, str], ...] = ()) -> str | None:
    """The error class of a message this client wrote (for recordings, which keep only the text);
    `first`: (phrase, class) pairs of another client's texts, tried before these."""
    if not message:
        return None
    for phrase, kind in (*first, *_KIND_BY_PHRASE):
        if phrase in message:
            return kind
    return "other"


def item_error(item: dict) -> str | None:
    """The error of one response item, or None when status is 200."""
    status = item.get("status")
    if status == 200:
        return None
    # str(): a broken agent or proxy may send any JSON type here; the message must still be text
    etype, msg = str(item.get("error_type") or ""), str(item.get("error") or "")
    if etype and msg.startswith(etype):  # Jolokia's message usually starts with the class already
        etype = ""
    return f"{status}: {etype} {msg}".replace("  ", " ").strip()


def error_marker(value: Any) -> str | None:
    """Recognize an `ignoreErrors=true` value marker (string ≤2.4, object ≥2.5)."""
    if isinstance(value, str) and value.startswith("ERROR: "):
        return value[7:]
    if isinstance(value, dict) and value.get(".error") is True:
        return f"{value.get('error_type', '')}: {value.get('error', '')}"
    return None
