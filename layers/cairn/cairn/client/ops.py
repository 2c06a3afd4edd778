"""``cairn ops``: an operator's actions on a deployed stack. ``cairn ops redrive``: the scheduler's dead-letter queue.

Standard library only at import time: boto3 is imported by the command that runs. The logic is
:mod:`cairn.client.redrive`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..bundle.command_line import EXIT_USAGE, add_subcommand, error
from .options import positive
from .stack_access import Clients, add_aws_options, on_stack

if TYPE_CHECKING:
    from .redrive import Target

REDRIVE_COMMAND = "cairn ops redrive"
MAX_REASON = 1000
"""The longest reason a discard records."""
SUMMARY = "operator actions on a deployed stack (redrive the scheduler's dead-letter queue)"
REDRIVE_SUMMARY = "give the scheduler again the events in its dead-letter queue"
REDRIVE_DESCRIPTION = (
    "Receive the on-failure records in the scheduler's dead-letter queue and invoke the scheduler "
    "with the event each one holds (a crash report, a sweep), deleting a message once the scheduler took it. "
    "A repeat is harmless: a crash report about a claim that is gone, and an advance for a sequence the job "
    "moved past, change nothing. Progress on stderr, the summary on stdout; exit 0 when every message was "
    "applied, 1 when some failed or are malformed (they stay in the queue), 2 on a usage error."
)


def add_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``cairn ops`` and its subcommands."""
    ops = add_subcommand(commands, "ops", lambda _: _usage(ops), SUMMARY, "Operator actions on a deployed stack.")
    actions = ops.add_subparsers(dest="action", metavar="ACTION", parser_class=type(ops))
    redrive = add_subcommand(actions, "redrive", run_redrive, REDRIVE_SUMMARY, REDRIVE_DESCRIPTION)
    where = redrive.add_argument_group("where (a stack, or the queue and the function)")
    where.add_argument(
        "--stack-name",
        metavar="NAME",
        help="read the stack's outputs SchedulerDeadLetterQueueUrl and SchedulerFunctionName",
    )
    where.add_argument("--queue-url", metavar="URL", help="the dead-letter queue (instead of --stack-name)")
    where.add_argument("--function", metavar="NAME", help="the scheduler function (instead of --stack-name)")
    add_aws_options(redrive)
    redrive.add_argument("--dry-run", action="store_true", help="list the messages (job, phase, when, why) only")
    redrive.add_argument("--max", type=positive(int), metavar="N", help="handle at most N messages")
    redrive.add_argument("--json", action="store_true", help="print the summary as JSON")
    redrive.add_argument(
        "--discard",
        action="append",
        default=[],
        metavar="MESSAGE_ID",
        help="delete this message (a --dry-run lists its id) instead of redriving it, once the scheduler has "
        "logged who discarded it and why (repeat for more; needs --reason)",
    )
    redrive.add_argument("--reason", metavar="TEXT", help="why the --discard messages will never succeed (audited)")
    from .owner_limit import add_parser as add_owner_limit

    add_owner_limit(actions)


def run_redrive(arguments: argparse.Namespace) -> int:
    """``cairn ops redrive``: 0 when every message was applied, 1 when some were not, 2 on a usage error."""
    from .redrive import RedriveUsageError

    if not arguments.stack_name and not (arguments.queue_url and arguments.function):
        if arguments.queue_url or arguments.function:
            return _error("--queue-url and --function go together: give both (or --stack-name)")
        return _error("say which stack: --stack-name NAME, or --queue-url URL --function NAME")
    if arguments.stack_name and (arguments.queue_url or arguments.function):
        return _error("give --stack-name, or --queue-url and --function, not both")
    if arguments.discard and not (arguments.reason or "").strip():
        return _error("--discard needs --reason TEXT: the audit entry says why")
    if arguments.reason and not arguments.discard:
        return _error("--reason goes with --discard MESSAGE_ID")
    if len(arguments.reason or "") > MAX_REASON:
        return _error(f"--reason is over {MAX_REASON} characters")
    return on_stack(REDRIVE_COMMAND, (RedriveUsageError,), lambda: _redrive(arguments))


def _redrive(arguments: argparse.Namespace) -> int:
    from .redrive import Discard, redrive

    clients = Clients.of(arguments)
    target = _target(arguments, clients)
    discard = None
    if arguments.discard:
        who = str(clients.make("sts").get_caller_identity()["Arn"])
        discard = Discard(frozenset(arguments.discard), arguments.reason.strip(), who)
    summary = redrive(
        clients.make("sqs"),
        clients.make("lambda"),
        target,
        dry_run=arguments.dry_run,
        max_messages=arguments.max,
        report=lambda handled: print(handled.line(), file=sys.stderr, flush=True),
        discard=discard,
    )
    if arguments.json:
        print(json.dumps({"queueUrl": target.queue_url, "function": target.function, **summary.to_json()}))
    else:
        print(summary.line())
    return summary.exit_status


def _target(arguments: argparse.Namespace, clients: Clients) -> Target:
    from .redrive import RedriveUsageError, Target, target_of_stack

    if not arguments.stack_name:
        return Target(arguments.queue_url, arguments.function)
    from botocore.exceptions import ClientError

    try:
        return target_of_stack(clients.make("cloudformation"), arguments.stack_name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ValidationError":  # no such stack
            raise RedriveUsageError(f"stack {arguments.stack_name!r}: {exc.response['Error'].get('Message')}") from exc
        raise


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def _error(message: str) -> int:
    return error(REDRIVE_COMMAND, message)
