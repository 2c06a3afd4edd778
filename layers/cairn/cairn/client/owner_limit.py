"""``cairn ops owner-limit OWNER [N]``: show or set one owner's fair share in a deployed stack's table.

The owner's limit is kept in the checkpoint table (:mod:`cairn.aws.dynamodb.owner_shares`) and
overrides the stack's ``OwnerConcurrency`` for that owner: ``N`` sets it (0: no limit for the owner),
``--clear`` drops it (the stack's default applies again), neither shows it and the owner's running
phases. Standard library only at import time: boto3 is imported when the command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..bundle.command_line import add_subcommand, error
from .stack_access import Clients, add_aws_options, on_stack

COMMAND = "cairn ops owner-limit"
TABLE_OUTPUT = "TableName"
SUMMARY = "show or set one owner's fair share (the most phases of its jobs running at once)"
DESCRIPTION = (
    "Show or set one owner's limit of phases running at once, kept in the stack's table: it "
    "overrides the stack's OwnerConcurrency for that owner. N sets it (0: no limit), --clear drops it, neither "
    "shows it with the owner's running phases. Exit 0 on success, 2 on a usage error."
)


def add_parser(actions: argparse._SubParsersAction[Any]) -> None:
    """Register ``cairn ops owner-limit``."""
    command = add_subcommand(actions, "owner-limit", run_owner_limit, SUMMARY, DESCRIPTION)
    command.add_argument("owner", metavar="OWNER", help="the owner (the API's caller id)")
    command.add_argument("limit", metavar="N", nargs="?", type=_limit, help="the owner's limit (0: no limit)")
    command.add_argument("--clear", action="store_true", help="drop the owner's limit (the stack's default applies)")
    where = command.add_mutually_exclusive_group()
    where.add_argument("--stack-name", metavar="NAME", help="read the stack's output TableName")
    where.add_argument("--table", metavar="NAME", help="the checkpoint table (instead of --stack-name)")
    add_aws_options(command)
    command.add_argument("--json", action="store_true", help="print the outcome as JSON")


def _limit(text: str) -> int:
    from ..core.errors import ConfigurationError
    from ..core.settings import OWNER_LIMIT_RANGE, owner_limit_of

    try:
        return owner_limit_of(text, "N")
    except ConfigurationError:
        raise argparse.ArgumentTypeError(f"must be {OWNER_LIMIT_RANGE}, got {text!r}") from None


def run_owner_limit(arguments: argparse.Namespace) -> int:
    """``cairn ops owner-limit``: 0 on success, 2 on a usage error (or an AWS error, named)."""
    if not arguments.stack_name and not arguments.table:
        return _error("say which stack: --stack-name NAME, or --table NAME")
    if arguments.clear and arguments.limit is not None:
        return _error("give N or --clear, not both")
    from ..core.errors import CairnError

    return on_stack(COMMAND, (CairnError, LookupError), lambda: _owner_limit(arguments))


def _owner_limit(arguments: argparse.Namespace) -> int:
    from ..aws.dynamodb import DynamoDBStorage

    clients = Clients.of(arguments)
    table = arguments.table or _table_of_stack(clients.make("cloudformation"), arguments.stack_name)
    store = DynamoDBStorage(table, owner=arguments.owner, client=clients.make("dynamodb"))
    if arguments.clear or arguments.limit is not None:
        store.set_owner_limit(arguments.owner, None if arguments.clear else arguments.limit)
    kept = store.owner_limit(arguments.owner)
    running = store.running_slots(arguments.owner, store.clock())
    if arguments.json:
        print(json.dumps({"owner": arguments.owner, "limit": kept, "running": running}))
    else:
        shown = (
            "no limit of its own (the stack's OwnerConcurrency applies)"
            if kept is None
            else ("no limit" if kept == 0 else f"at most {kept} phases at once")
        )
        print(f"Owner {arguments.owner}: {shown}; {running} running now")
    return 0


def _table_of_stack(cloudformation: Any, stack_name: str) -> str:
    stacks = cloudformation.describe_stacks(StackName=stack_name).get("Stacks") or []
    found = stacks[0].get("Outputs") or [] if stacks else []
    outputs = {str(item.get("OutputKey")): str(item.get("OutputValue")) for item in found}
    if not outputs.get(TABLE_OUTPUT):
        raise LookupError(f"stack {stack_name!r} has no output {TABLE_OUTPUT}: name the table with --table NAME")
    return outputs[TABLE_OUTPUT]


def _error(message: str) -> int:
    return error(COMMAND, message)
