"""Options several subcommands share, defined once."""

from __future__ import annotations

import argparse

from settings import SINCE_HELP, since_option


def add_time_window(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--since", type=since_option, metavar="TIME", help=SINCE_HELP)
    sp.add_argument("--until", type=since_option, metavar="TIME", help="up to this time (same forms as --since)")
