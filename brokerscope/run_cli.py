"""Subcommands of this part (registered by brokerscope.cli)."""


def add_parser(sub) -> None:
    """Register this part's subcommands on the `brokerscope` parser (none yet)."""
