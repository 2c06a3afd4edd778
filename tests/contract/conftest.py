"""The storage contract suite runs every test once per storage adapter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cairn import FileStorage, MemoryStorage
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.storage_port import Storage
from cairn.testing.serialised import one_call_at_a_time
from tests.aws import delete_table, dynamodb_client, new_table, shared_moto
from tests.support import FakeClock

StorageFactory = Callable[[FakeClock], Storage]

STORAGES = ["memory", "file", "dynamodb", "dynamodb-http"]


@pytest.fixture(params=STORAGES)
def storage_kind(request: pytest.FixtureRequest) -> str:
    """Which adapter the test runs against."""
    return str(request.param)


@pytest.fixture
def storage_factory(storage_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StorageFactory]:
    """Builds the adapter under test; every call on one test shares one backing store.

    DynamoDB clients are serialised: moto applies a conditional write in two steps, DynamoDB in one.
    """
    if storage_kind == "memory":
        shared: dict[str, MemoryStorage] = {}

        def memory(clock: FakeClock) -> Storage:
            return shared.setdefault("store", MemoryStorage(clock=clock))

        yield memory
    elif storage_kind == "file":
        yield lambda clock: FileStorage(tmp_path / "jobs", clock=clock)
    elif storage_kind == "dynamodb":
        with shared_moto():
            client = one_call_at_a_time(dynamodb_client())
            table = new_table(client)
            yield lambda clock: DynamoDBStorage(table, client=client, clock=clock)
            delete_table(client, table)
    else:
        endpoint = request.getfixturevalue("moto_endpoint")
        client = one_call_at_a_time(dynamodb_client(endpoint))
        table = new_table(client)
        yield lambda clock: DynamoDBStorage(table, client=client, clock=clock)
        client.delete_table(TableName=table)


@pytest.fixture
def storage(storage_factory: StorageFactory, clock: FakeClock) -> Storage:
    return storage_factory(clock)
