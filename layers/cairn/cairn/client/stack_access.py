"""How the ``cairn ops`` commands reach a deployed stack: its region, an AWS endpoint, boto3 clients, AWS errors.

Standard library only at import time: boto3 is imported when a client is made.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from ..bundle.command_line import error

ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL"


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--region`` and ``--endpoint-url``."""
    parser.add_argument("--region", help="the stack's region (default: your configuration)")
    parser.add_argument("--endpoint-url", metavar="URL", help=f"an AWS endpoint (default: ${ENDPOINT_VARIABLE})")


class Clients:
    """boto3 clients in one region, through one endpoint."""

    def __init__(self, region: str | None, endpoint_url: str | None) -> None:
        self.region = region
        self.endpoint_url = endpoint_url

    @classmethod
    def of(cls, arguments: argparse.Namespace) -> Clients:
        """The clients ``--region`` and ``--endpoint-url`` (else ``$AWS_ENDPOINT_URL``) ask for."""
        return cls(arguments.region, arguments.endpoint_url or os.environ.get(ENDPOINT_VARIABLE) or None)

    def make(self, service: str) -> Any:
        """A new client of ``service``."""
        import boto3

        return boto3.client(service, region_name=self.region, endpoint_url=self.endpoint_url)  # type: ignore[call-overload]


def on_stack(command: str, expected: tuple[type[Exception], ...], work: Callable[[], int]) -> int:
    """``work()``'s exit status; an ``expected`` error, or one boto3 raised, is one line on stderr (exit 2)."""
    try:
        return work()
    except expected as exc:
        return error(command, str(exc))
    except Exception as exc:  # credentials, an endpoint that does not answer, a stack or resource that does not exist
        if not type(exc).__module__.startswith(("botocore", "boto3")):
            raise
        return error(command, f"{type(exc).__name__}: {exc}")
