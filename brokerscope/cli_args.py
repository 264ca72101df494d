"""Options several subcommands share, defined once."""

from __future__ import annotations

import argparse
from datetime import datetime

from settings import parse_since


def time_arg(text: str) -> datetime:
    """--since / --until: every form settings.parse_since reads; argparse says which option was wrong."""
    try:
        return parse_since(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_time_window(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--since", type=time_arg, metavar="TIME",
                    help="from this time: RFC 3339, a date, a look-back (15m, 2h, 3d), today, yesterday")
    sp.add_argument("--until", type=time_arg, metavar="TIME", help="up to this time (same forms as --since)")
