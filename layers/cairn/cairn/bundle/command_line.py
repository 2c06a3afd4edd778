"""What the ``cairn`` subcommands share: adding one to the command line, number options, an error line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

EXIT_USAGE = 2

Parser = TypeVar("Parser", bound=argparse.ArgumentParser)
Number = TypeVar("Number", int, float)
Run = Callable[[argparse.Namespace], int]


def add_subcommand(
    commands: argparse._SubParsersAction[Parser],
    name: str,
    run: Run | None,
    summary: str,
    description: str | None = None,
) -> Parser:
    """Add subcommand ``name``: ``summary`` in the list of commands, ``run`` runs it.

    Its ``--help`` shows ``description``, else the summary as a sentence.
    """
    parser = commands.add_parser(name, help=summary, description=description or summary[:1].upper() + summary[1:] + ".")
    if run is not None:
        parser.set_defaults(run=run)
    return parser


def number(text: str, kind: Callable[[str], Number], what: str) -> Number:
    """``text`` read as ``kind`` (int, float), else an argparse error: ``not a <what>``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    port = number(text, int, "port number")
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {port}")
    return port


def error(command: str, message: str) -> int:
    """Print ``<command>: error: <message>`` on stderr; the exit status of a usage error."""
    print(f"{command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE
