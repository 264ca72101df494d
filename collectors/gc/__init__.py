"""GC log parsing for brokerscope (issue P3).

Pure-Python, stdlib-only, streaming parser for HotSpot GC logs of JDK 8 to 25: unified logging
(``-Xlog:gc*,safepoint`` with any decorators) and the legacy ``-XX:+PrintGCDetails`` formats, for
the Serial, Parallel, CMS, G1, ZGC (classic and generational) and Shenandoah collectors.

Public API:

* :class:`GcLogParser` -- ``feed(line, line_no) -> list[GcEvent]``, ``finish()``, ``stats``
* :func:`parse_file` / :func:`parse_lines` -> ``(events, stats)``; :func:`iter_events` (generator)
* :func:`open_log` -- plain / ``.gz`` / ``.zip`` text stream
* :class:`GcEvent`, :class:`ParseStats` (taxonomy and counting rules in :mod:`.model`)
"""

from .model import COLLECTORS, KNOWN_FLAGS, PAUSE_TYPES, GcEvent, ParseStats
from .parser import GcLogParser, PythonGcLogParser, iter_events, open_log, parse_file, parse_lines, parser_impl

__all__ = [
    "COLLECTORS",
    "KNOWN_FLAGS",
    "PAUSE_TYPES",
    "GcEvent",
    "GcLogParser",
    "PythonGcLogParser",
    "parser_impl",
    "ParseStats",
    "iter_events",
    "open_log",
    "parse_file",
    "parse_lines",
]
