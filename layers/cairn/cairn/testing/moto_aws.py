"""AWS for tests, in-process: moto, with fake credentials and a fixed region set only meanwhile.

Inside :func:`fake_aws` every boto3 client made talks to moto; no call can reach a real
account, whatever profile or keys the machine has. The environment is restored on exit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from unittest import mock

import boto3
from moto import mock_aws

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
"""The region of every local resource."""

FAKE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
"""Set while moto runs: keys no account accepts, and the local region."""

CLEARED = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE")
"""Unset while moto runs: what could point a client at a real account or endpoint."""


@contextmanager
def fake_aws() -> Iterator[None]:
    """moto in-process, with fake credentials and the local region in the environment until the block ends."""
    with mock.patch.dict(os.environ, FAKE_ENVIRONMENT):
        for name in CLEARED:
            os.environ.pop(name, None)
        with mock_aws():
            yield


def dynamodb_client() -> DynamoDBClient:
    """A DynamoDB client in the local region (moto's, inside :func:`fake_aws`)."""
    return boto3.client("dynamodb", region_name=REGION)


def s3_client() -> S3Client:
    """An S3 client in the local region (moto's, inside :func:`fake_aws`)."""
    return boto3.client("s3", region_name=REGION)


def sqs_client() -> SQSClient:
    """An SQS client in the local region (moto's, inside :func:`fake_aws`)."""
    return boto3.client("sqs", region_name=REGION)
