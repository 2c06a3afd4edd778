"""The engine suite: what the engine does with a job, on MemoryStorage (the storage port has its own suite)."""

from __future__ import annotations

import pytest

from cairn import MemoryStorage
from cairn.core.storage_port import Storage
from tests.support import FakeClock


@pytest.fixture
def storage(clock: FakeClock) -> Storage:
    return MemoryStorage(clock=clock)
