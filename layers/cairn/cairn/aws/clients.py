"""Default AWS clients: built lazily, once per process, with botocore's retry modes."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import boto3
from botocore.client import BaseClient
from botocore.config import Config

from ..core.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient


#: How long a model may take to answer one call (a long reply takes minutes; Lambda allows 15).
MODEL_READ_TIMEOUT = 300


def client_config(settings: Settings, *, read_timeout: int = 10) -> Config:
    """Retries for throttling and 5xx (botocore standard/adaptive mode) and bounded timeouts."""
    return Config(
        retries={"mode": settings.aws_retry_mode, "max_attempts": settings.aws_max_attempts},
        connect_timeout=5,
        read_timeout=read_timeout,
    )


@functools.cache
def default_dynamodb_client() -> DynamoDBClient:
    """The process-wide DynamoDB client, made on first use."""
    return boto3.client("dynamodb", config=client_config(Settings.from_env()))


@functools.cache
def default_s3_client() -> S3Client:
    """The process-wide S3 client, made on first use."""
    return boto3.client("s3", config=client_config(Settings.from_env()))


@functools.cache
def default_lambda_client() -> LambdaClient:
    """The process-wide Lambda client, made on first use."""
    return boto3.client("lambda", config=client_config(Settings.from_env()))


@functools.cache
def default_sqs_client() -> SQSClient:
    """The process-wide SQS client, made on first use."""
    return boto3.client("sqs", config=client_config(Settings.from_env()))


@functools.cache
def default_sfn_client() -> SFNClient:
    """The process-wide Step Functions client, made on first use."""
    return boto3.client("stepfunctions", config=client_config(Settings.from_env()))


@functools.cache
def default_bedrock_runtime_client() -> BaseClient:
    """The process-wide Bedrock Runtime client, made on first use; it waits up to MODEL_READ_TIMEOUT for a reply."""
    client: BaseClient = boto3.client(
        "bedrock-runtime", config=client_config(Settings.from_env(), read_timeout=MODEL_READ_TIMEOUT)
    )
    return client
