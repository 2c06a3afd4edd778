"""The storage contract suite runs every test once per storage adapter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cairn import FileStorage, MemoryStorage
from cairn.storage.base import Storage
from tests.support import FakeClock

StorageFactory = Callable[[FakeClock], Storage]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "file"])
def storage_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StorageFactory:
    """Builds the adapter under test; every call on one test shares one backing store."""
    if request.param == "memory":
        shared: dict[str, MemoryStorage] = {}

        def memory(clock: FakeClock) -> Storage:
            return shared.setdefault("store", MemoryStorage(clock=clock))

        return memory
    return lambda clock: FileStorage(tmp_path / "jobs", clock=clock)


@pytest.fixture
def storage(storage_factory: StorageFactory, clock: FakeClock) -> Storage:
    return storage_factory(clock)
