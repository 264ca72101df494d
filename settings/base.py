"""What every settings model shares: the error type, durations, names, URLs, secrets, the strict base.

The ground floor of the configuration: it imports nothing of brokerscope's, so every other part
(collectors, analysis, alerts, dashboards, the CLI) can import it without a cycle.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = [
    "ConfigError", "Strict", "Duration", "DurationOrZero", "parse_duration", "parse_since", "since_option",
    "SINCE_HELP", "check_name",
    "check_http_url", "resolve_secret", "Name", "OneOf", "one_of",
]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_ZERO = re.compile(r"\s*0+(\.0+)?\s*(ms|s|m|h)?\s*")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_HTTP_URL = re.compile(r"^https?://[^/\s]+")


class ConfigError(ValueError):
    """The configuration is invalid; the message names each offending key and the fix."""


class Strict(BaseModel):
    """A settings section: unknown keys are errors (typos never pass silently), values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_duration(value: object) -> float:
    """'500ms' / '5s' / '2m' / '1h' / a bare number of seconds → seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '500ms', '5s' or '2m'")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ValueError(f"{value!r} is not a duration; write e.g. '500ms', '5s', '2m' or '1h'")
        seconds = float(m.group(1)) * _UNIT_S[m.group(2)]
    if seconds <= 0:
        raise ValueError("must be greater than zero")
    return seconds


def parse_duration_or_zero(value: object) -> float:
    """As parse_duration, but zero ('0', '0s') is allowed: 'at once'."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    if isinstance(value, str) and _ZERO.fullmatch(value):
        return 0.0
    return parse_duration(value)


# A field of seconds that also takes "500ms", "5s", "2m", "1h" (one validator for every settings model).
Duration = Annotated[float, BeforeValidator(parse_duration)]
DurationOrZero = Annotated[float, BeforeValidator(parse_duration_or_zero)]


_LOOK_BACK = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*(?:ago)?\s*$")
_LOOK_BACK_S = {**_UNIT_S, "d": 86400.0, "w": 604800.0}
SINCE_FORMS = ("an RFC 3339 time (2026-11-21T22:30:00Z; no zone: UTC)", "a date (2026-11-21: its midnight UTC)",
               "a look-back (500ms, 30s, 15m, 2h, 3d, 1w; '15m ago' too)", "now", "today", "yesterday (midnights UTC)")


def parse_since(text: str | None, now: datetime | None = None, zone: tzinfo = timezone.utc) -> datetime | None:
    """A point in time as a user writes it on the command line or in a filter box (SINCE_FORMS):
    '2026-11-21T22:30:00Z', '2026-11-21', '15m', '2h ago', 'now', 'today', 'yesterday'. A time
    without an offset, today and yesterday are in `zone` (UTC unless the user chose another). A
    ValueError lists the forms."""
    if not text or not text.strip():
        return None
    word = text.strip().lower()
    now = now or datetime.now(timezone.utc)
    midnight = now.astimezone(zone).replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"now": now, "today": midnight, "yesterday": midnight - timedelta(days=1)}
    if word in named:
        return named[word]
    m = _LOOK_BACK.match(word)
    if m:
        return now - timedelta(seconds=float(m.group(1)) * _LOOK_BACK_S[m.group(2)])
    try:
        ts = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a time; write {'; '.join(SINCE_FORMS)}") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=zone)


def since_option(text: str) -> datetime:
    """parse_since for argparse's `type=`: a bad value becomes argparse's own error, which names the
    option (`argument --since: 'x' is not a time; write …`) and exits 2, no traceback."""
    import argparse  # only the command lines need it

    try:
        return parse_since(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


SINCE_HELP = "from this time: RFC 3339, a date, a look-back (15m, 2h, 3d), today, yesterday"


def check_name(value: str, names_what: str) -> str:
    """A name that becomes part of file names and row keys: letters, digits and . _ : - only."""
    if not _NAME.fullmatch(value):
        raise ValueError(f"use letters, digits and . _ : - only (it names {names_what})")
    return value


def Name(names_what: str):
    """A field type for a name that becomes part of file names and row keys (see check_name)."""
    return Annotated[str, Field(min_length=1), AfterValidator(lambda v: check_name(v, names_what))]


def one_of(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not allowed; use one of: {', '.join(allowed)}")
    return value


def OneOf(*allowed: str):
    """A str field that takes one of `allowed` (a str, not a Literal: the loader's hint for literal
    errors names the broker kinds)."""
    return Annotated[str, AfterValidator(lambda v: one_of(v, allowed))]


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_env_name(value: str) -> str:
    """A `*_env` key names a variable; anything else is likely the secret itself, never echoed."""
    if not _ENV_NAME.match(value):
        raise ValueError("must name an environment variable (letters, digits and _, e.g. BROKER_PASSWORD), not hold "
                         "the secret itself; the value given is not shown. Put the secret in that variable or in a *_file")
    return value


EnvName = Annotated[str, AfterValidator(check_env_name)]


def check_http_url(value: str, example: str) -> str:
    if not _HTTP_URL.match(value):
        raise ValueError(f"must be an http:// or https:// URL, e.g. {example}")
    return value


def resolve_secret(owner: str, what: str, env: str | None, file: Path | None, error: type[ValueError] = ConfigError,
                   keep_spaces: bool = True) -> str | None:
    """The secret named by `<what>_env` / `<what>_file`, read at use time (never kept in the config);
    None when neither is set. The error says where it was looked for. A file's line end is never
    part of the secret; `keep_spaces=False` strips spaces too (tokens that go into a header)."""
    if env:
        value = os.environ.get(env)
        if value is None:
            # a name in UPPER_CASE is surely a name; anything else may be the secret typed in: not shown
            shown = env if env.isupper() else f"named in {what}_env (not shown: not UPPER_CASE, it may be the secret itself)"
            raise error(f"{owner}: environment variable {shown} ({what}_env) is not set; export it or use {what}_file")
        return value
    if file:
        try:
            text = Path(file).read_text()
            return text.rstrip("\r\n") if keep_spaces else text.strip()
        except OSError as e:
            raise error(f"{owner}: cannot read {what}_file {file}: {e.strerror}") from None
    return None
