"""Fixtures for the DynamoDB tests: a table (and bucket) on moto, in-process or over HTTP."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from cairn.testing.stack import LocalStack
from tests.aws import delete_bucket, delete_table, dynamodb_client, new_bucket, new_table, s3_client, shared_moto
from tests.functional import jobs_server
from tests.functional.api_client import Api
from tests.functional.jobs_server import JobsServer
from tests.functional.stacks import moto_stack
from tests.support import FakeClock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

    from tests.functional.test_waits_drivers import Deploy


@dataclass
class Moto:
    """One test's AWS: clients, a fresh table and a fresh bucket."""

    dynamodb: DynamoDBClient
    s3: S3Client
    table: str
    bucket: str


@pytest.fixture
def moto() -> Iterator[Moto]:
    """Moto in-process (the session's backend): a table and a bucket for this test, deleted after it."""
    with shared_moto():
        dynamodb, s3 = dynamodb_client(), s3_client()
        made = Moto(dynamodb, s3, new_table(dynamodb), new_bucket(s3))
        yield made
        delete_table(dynamodb, made.table)
        delete_bucket(s3, made.bucket)


@pytest.fixture
def moto_http(moto_endpoint: str) -> Iterator[Moto]:
    """The moto server over HTTP: a table and a bucket for this test."""
    dynamodb, s3 = dynamodb_client(moto_endpoint), s3_client(moto_endpoint)
    table = new_table(dynamodb)
    yield Moto(dynamodb, s3, table, new_bucket(s3))
    dynamodb.delete_table(TableName=table)


@pytest.fixture
def stack_clock() -> FakeClock:
    """The clock of the local stack: starts at the real time, moves only when a test says so."""
    return FakeClock(start_ms=int(time.time() * 1000))


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle (phase functions and scheduler, direct driver) in-process on moto."""
    with moto_stack(stack_clock) as stack:
        yield stack


@pytest.fixture
def api(stack: LocalStack) -> Api:
    """The API function deployed beside the phase functions and the scheduler."""
    return Api(stack)


@pytest.fixture
def jobs(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[JobsServer]:
    """The API (serving the stack's pipelines) on a loopback port; `cairn jobs` reaches it through $CAIRN_API."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # the functions' EMF lines would go to stdout
    for name in ("CAIRN_TOKEN", "CAIRN_IDENTITY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(jobs_server, "PIPELINES", stack.pipelines)
    with JobsServer(stack) as server:
        monkeypatch.setenv("CAIRN_API", server.url)
        yield server


@pytest.fixture
def no_api(monkeypatch: pytest.MonkeyPatch) -> str:
    """$CAIRN_API names a loopback port nobody listens on: a command that sent a request would exit 1, not 2."""
    for name in ("CAIRN_TOKEN", "CAIRN_IDENTITY"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("CAIRN_API", url)
    return url


@pytest.fixture
def direct() -> Iterator[Deploy]:
    """Deploy a pipeline on the direct driver (tests/functional/test_waits_drivers.py builds it)."""
    from tests.functional.test_waits_drivers import direct_driver

    with direct_driver() as make:
        yield make


@pytest.fixture
def stepfunctions() -> Iterator[Deploy]:
    """Deploy a pipeline on the Step Functions driver, run by moto's engine."""
    from tests.functional.test_waits_drivers import stepfunctions_driver

    with stepfunctions_driver() as make:
        yield make
