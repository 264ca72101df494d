"""Broker-controlled text made safe for a human's screen.

Store, queue and broker names come from the brokers (and error messages quote their answers). A
name holding ESC, BEL or CR could rewrite the operator's terminal (clear it, retitle it, overwrite
a line), and bidi overrides could make one name read as another. Every human-facing output (the
CLI's text, errors and logs, the Markdown report) passes such text through `printable`, which
shows each of those characters as a visible escape instead (`\\x1b`, `\\u202e`)."""

from __future__ import annotations

import logging
import re

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidi/isolate overrides.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_UNSAFE_INLINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: object, keep_newlines: bool = False) -> str:
    """`text` with every control or bidi-override character shown as an escape (tab kept;
    newlines kept only with `keep_newlines`, for multi-line messages we wrote ourselves)."""
    s = str(text)
    return (_UNSAFE if keep_newlines else _UNSAFE_INLINE).sub(_escape, s.replace("\t", " ") if not keep_newlines else s)


class PrintableFormatter(logging.Formatter):
    """Log lines with broker-supplied text escaped (tracebacks keep their newlines)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), keep_newlines=True)
