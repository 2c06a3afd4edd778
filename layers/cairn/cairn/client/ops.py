"""``cairn ops``: an operator's actions on a deployed stack. ``cairn ops redrive``: the scheduler's dead-letter queue.

Standard library only at import time: boto3 is imported by the command that runs. The logic is
:mod:`cairn.client.redrive`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from .options import positive

if TYPE_CHECKING:
    from .redrive import Target

EXIT_USAGE = 2
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL"


def add_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``cairn ops`` and its subcommands."""
    ops = commands.add_parser(
        "ops",
        help="operator actions on a deployed stack (redrive the scheduler's dead-letter queue)",
        description="Operator actions on a deployed stack.",
    )
    actions = ops.add_subparsers(dest="action", metavar="ACTION", parser_class=type(ops))
    ops.set_defaults(run=lambda _: _usage(ops))
    redrive = actions.add_parser(
        "redrive",
        help="give the scheduler again the events in its dead-letter queue",
        description="Receive the on-failure records in the scheduler's dead-letter queue and invoke the scheduler "
        "with the event each one holds (a crash report, a sweep), deleting a message once the scheduler took it. "
        "A repeat is harmless: a crash report about a claim that is gone, and an advance for a sequence the job "
        "moved past, change nothing. Progress on stderr, the summary on stdout; exit 0 when every message was "
        "applied, 1 when some failed or are malformed (they stay in the queue), 2 on a usage error.",
    )
    where = redrive.add_argument_group("where (a stack, or the queue and the function)")
    where.add_argument(
        "--stack-name",
        metavar="NAME",
        help="read the stack's outputs SchedulerDeadLetterQueueUrl and SchedulerFunctionName",
    )
    where.add_argument("--queue-url", metavar="URL", help="the dead-letter queue (instead of --stack-name)")
    where.add_argument("--function", metavar="NAME", help="the scheduler function (instead of --stack-name)")
    redrive.add_argument("--region", help="the stack's region (default: your configuration)")
    redrive.add_argument("--endpoint-url", metavar="URL", help=f"an AWS endpoint (default: ${ENDPOINT_VARIABLE})")
    redrive.add_argument("--dry-run", action="store_true", help="list the messages (job, phase, when, why) only")
    redrive.add_argument("--max", type=positive(int), metavar="N", help="handle at most N messages")
    redrive.add_argument("--json", action="store_true", help="print the summary as JSON")
    redrive.set_defaults(run=run_redrive)
    from .owner_limit import add_parser as add_owner_limit

    add_owner_limit(actions)


def run_redrive(arguments: argparse.Namespace) -> int:
    """``cairn ops redrive``: 0 when every message was applied, 1 when some were not, 2 on a usage error."""
    from .redrive import RedriveUsageError, redrive

    if not arguments.stack_name and not (arguments.queue_url and arguments.function):
        if arguments.queue_url or arguments.function:
            return _error("--queue-url and --function go together: give both (or --stack-name)")
        return _error("say which stack: --stack-name NAME, or --queue-url URL --function NAME")
    if arguments.stack_name and (arguments.queue_url or arguments.function):
        return _error("give --stack-name, or --queue-url and --function, not both")
    try:
        clients = _Clients(arguments.region, arguments.endpoint_url or os.environ.get(ENDPOINT_VARIABLE) or None)
        target = _target(arguments, clients)
        summary = redrive(
            clients.make("sqs"),
            clients.make("lambda"),
            target,
            dry_run=arguments.dry_run,
            max_messages=arguments.max,
            report=lambda handled: print(handled.line(), file=sys.stderr, flush=True),
        )
    except RedriveUsageError as exc:
        return _error(str(exc))
    except Exception as exc:  # credentials, an endpoint that does not answer, a queue that does not exist
        if type(exc).__module__.startswith(("botocore", "boto3")):
            return _error(f"{type(exc).__name__}: {exc}")
        raise
    if arguments.json:
        print(json.dumps({"queueUrl": target.queue_url, "function": target.function, **summary.to_json()}))
    else:
        print(summary.line())
    return summary.exit_status


class _Clients:
    """boto3 clients in one region, through one endpoint."""

    def __init__(self, region: str | None, endpoint_url: str | None) -> None:
        self.region = region
        self.endpoint_url = endpoint_url

    def make(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.region, endpoint_url=self.endpoint_url)  # type: ignore[call-overload]


def _target(arguments: argparse.Namespace, clients: _Clients) -> Target:
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
    print(f"cairn ops redrive: error: {message}", file=sys.stderr)
    return EXIT_USAGE
