"""How the ``cairn ops`` commands reach a deployed stack: its region, an AWS endpoint, boto3 clients, AWS errors.

Standard library only at import time: boto3 is imported when a client is made.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

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


def aws_error(exc: Exception) -> str | None:
    """``exc`` in one line when boto3 or botocore raised it; None for any other error."""
    if type(exc).__module__.startswith(("botocore", "boto3")):
        return f"{type(exc).__name__}: {exc}"
    return None
