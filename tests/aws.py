"""AWS for tests: moto in-process or a moto server on a loopback port, and a fresh table per test.

Clients come from one botocore session per test process, which reads each service's model once (a client of a
new session costs 25-50 ms more). A test whose resources have fresh names needs no fresh account: it runs on
:func:`shared_moto`, one moto backend for the session, and deletes what it made.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.config import Config
from moto import mock_aws
from moto.server import ThreadedMotoServer

from cairn.aws.dynamodb.schema import create_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"


def use_fake_credentials() -> None:
    """Make sure no real account can be reached: fake keys, a fixed region."""
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "cairn",
            "POWERTOOLS_SERVICE_NAME": "cairn-tests",
        }
    )
    os.environ.pop("AWS_PROFILE", None)


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto server on a free loopback port, for tests that talk HTTP; yields its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


SESSION = boto3.session.Session()
"""The session every test client comes from (moto's own mock swaps boto3's default session for each test)."""


@contextmanager
def shared_moto() -> Iterator[None]:
    """Moto in-process on the backend that tests before this one left: nothing is reset on entry or on exit.

    For a test that makes its AWS resources with fresh names (:func:`new_table`, :func:`new_bucket`) and deletes
    them; a test that needs an empty account uses ``mock_aws()``, which starts from a reset backend.
    """
    mock = mock_aws()
    mock.start(reset=False)
    try:
        yield
    finally:
        mock.stop(remove_data=False)


def delete_table(client: DynamoDBClient, name: str) -> None:
    """Delete a table a test made on the shared backend."""
    client.delete_table(TableName=name)


def delete_bucket(client: S3Client, name: str) -> None:
    """Empty and delete a bucket a test made on the shared backend (every version of every object)."""
    for page in client.get_paginator("list_object_versions").paginate(Bucket=name):
        objects = [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        if objects:
            keys = [{"Key": item["Key"], "VersionId": item["VersionId"]} for item in objects]
            client.delete_objects(Bucket=name, Delete={"Objects": keys})  # type: ignore[typeddict-item]
    client.delete_bucket(Bucket=name)


def _config() -> Config:
    return Config(retries={"mode": "standard", "max_attempts": 5})


def dynamodb_client(endpoint_url: str | None = None) -> DynamoDBClient:
    """A DynamoDB client for moto (in-process when ``endpoint_url`` is None)."""
    return SESSION.client("dynamodb", region_name=REGION, endpoint_url=endpoint_url, config=_config())


def sqs_client(endpoint_url: str | None = None) -> SQSClient:
    """An SQS client for moto (in-process when ``endpoint_url`` is None), from the tests' one session: a client of
    boto3's default session would load botocore's endpoint data again after each start of moto's mock."""
    return SESSION.client("sqs", region_name=REGION, endpoint_url=endpoint_url)


def s3_client(endpoint_url: str | None = None) -> S3Client:
    """An S3 client for moto (in-process when ``endpoint_url`` is None)."""
    return SESSION.client("s3", region_name=REGION, endpoint_url=endpoint_url, config=_config())


def new_table(client: DynamoDBClient) -> str:
    """Create a checkpoint table with a unique name; returns the name."""
    name = f"cairn-test-{uuid.uuid4().hex[:12]}"
    create_table(client, name)
    return name


def new_bucket(client: S3Client) -> str:
    """Create a bucket with a unique name; returns the name."""
    name = f"cairn-test-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name


class _CannedBody:
    """The body of a canned HTTP response, as botocore reads it."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body

    def read(self, *_: Any, **__: Any) -> bytes:
        return self._body


def canned_response(url: str, status: int, body: bytes, content_type: str) -> AWSResponse:
    """An HTTP response a ``before-send`` hook returns instead of sending the request (a throttle, a 5xx)."""
    headers = HTTPHeaders()
    headers["Content-Type"] = content_type
    return AWSResponse(url, status, headers, _CannedBody(body))


def stored_state(client: DynamoDBClient, table: str, pk: str) -> dict[str, Any]:
    """The raw encoded state of the job item at ``pk``: read from the item its checkpoint's ``stateAt`` names, or
    from the job item itself when it keeps a small state too."""
    key = {"pk": {"S": pk}, "sk": {"S": "JOB"}}
    checkpoint = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["checkpoint"]["M"]
    if "state" in checkpoint:
        return dict(checkpoint["state"]["M"])
    holder = {"pk": {"S": pk}, "sk": checkpoint["stateAt"]}
    entry = client.get_item(TableName=table, Key=holder, ConsistentRead=True)["Item"]["entry"]["M"]
    return dict(entry["state"]["M"])
