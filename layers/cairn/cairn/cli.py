"""The ``cairn`` command: ``cairn --version``, ``validate-pipeline MODULE:ATTR``, ``template``, ``new``, ``dev``,
``jobs``, ``dashboard`` and ``ops``.

Standard library only at import time (no boto3): ``cairn`` itself is imported only by the
subcommand that needs it. Every expected error is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .distribution import spelled

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141
"""A shell's status for a process whose output pipe closed (128 + SIGPIPE)."""


class CliError(Exception):
    """An error the command reports in one line, without a traceback."""


def load_object(spec: str) -> Any:
    """The object named by ``MODULE:ATTR`` (``ATTR`` may be dotted), imported from the current directory too."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise CliError(f"invalid pipeline {spec!r}: expected MODULE:ATTR, e.g. my_pipelines:pipeline")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # the user's module may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        from .core.failures import message_of

        raise CliError(f"cannot import module {module_name!r}: {type(exc).__name__}: {message_of(exc)}") from exc
    from .bundle.templating import loading
    from .bundle.templating.errors import TemplateError

    try:
        return loading.attribute(module, attribute)
    except TemplateError as exc:
        raise CliError(str(exc)) from exc
    except Exception as exc:
        from .core.failures import message_of

        raise CliError(f"cannot read {spec!r}: {type(exc).__name__}: {message_of(exc)}") from exc


def describe_pipeline(spec: str) -> list[str]:
    """The lines ``validate-pipeline`` prints for the pipeline named by ``spec``."""
    from .core.pipeline import Pipeline

    pipeline = load_object(spec)
    if not isinstance(pipeline, Pipeline):
        raise CliError(f"{spec!r} is a {type(pipeline).__name__}, not a cairn.Pipeline")
    names = pipeline.phase_names
    if not names:
        raise CliError(f'pipeline "{pipeline.name}" ({spec}) has no phases')
    lines = [f'pipeline "{pipeline.name}": {len(names)} phase{"s" if len(names) != 1 else ""}']
    for index, name in enumerate(names, start=1):
        phase = pipeline.get_phase(name)
        details = [f"max_attempts={phase.retry.max_attempts}", f"lease_seconds={phase.lease_seconds:g}"]
        if index == 1:
            details.append("initial")
        lines.append(f"  {index}. {name} ({', '.join(details)})")
    for old, new in sorted(pipeline.aliases.items()):
        lines.append(f"  alias {old} -> {new}")
    return lines


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``--version`` and the subcommands."""
    parser = _Parser(prog="cairn", description="Crash-safe, multi-phase pipelines: command-line tools.")
    parser.add_argument("--version", action="version", version=spelled())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    validate = commands.add_parser(
        "validate-pipeline",
        help="import MODULE:ATTR, check it is a cairn.Pipeline and list its phases in order",
        description="Import MODULE:ATTR (the current directory is on the path), check it is a "
        "cairn.Pipeline with at least one phase, and print its phases in order.",
    )
    validate.add_argument("pipeline", metavar="MODULE:ATTR", help="e.g. my_pipelines:pipeline")
    validate.set_defaults(run=run_validate_pipeline)
    from .bundle.templating.command import add_command as add_template_command

    add_template_command(commands)
    from .bundle.init import add_command as add_init_command

    add_init_command(commands)
    from .bundle.scaffold import add_command as add_new_command

    add_new_command(commands)
    from .dev.command import add_command as add_dev_command

    add_dev_command(commands)
    from .client.commands import add_command as add_jobs_command

    add_jobs_command(commands)
    from .client.dashboard_command import add_command as add_dashboard_command

    add_dashboard_command(commands)
    from .client.ops import add_command as add_ops_command

    add_ops_command(commands)
    return parser


def run_validate_pipeline(arguments: argparse.Namespace) -> int:
    """``cairn validate-pipeline``: the phases (0), or one line on stderr (2)."""
    try:
        lines = describe_pipeline(arguments.pipeline)
    except CliError as exc:
        print(f"cairn: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns its exit status (0; 1 for problems found; 2 on an error)."""
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        status: int = arguments.run(arguments)
    except BrokenPipeError:  # the reader went away (`cairn jobs log ID | head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return status


if __name__ == "__main__":
    sys.exit(main())
