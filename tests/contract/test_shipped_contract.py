"""The storage contract cairn ships (cairn.testing.contract), run on every adapter and on a user's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from cairn import FileStorage, MemoryStorage
from cairn.adapters import Clock, Storage
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.testing.contract import StorageContract
from cairn.testing.serialised import one_call_at_a_time
from tests.aws import dynamodb_client, new_table
from tests.contract.user_adapter import KeyValueStorage

pytest_plugins = ["pytester"]


class TestMemoryStorage(StorageContract):
    def make_storage(self, clock: Clock) -> Storage:
        return MemoryStorage(clock=clock)


class TestFileStorage(StorageContract):
    @pytest.fixture(autouse=True)
    def folder(self, tmp_path: Path) -> None:
        self.root = tmp_path / "jobs"

    def make_storage(self, clock: Clock) -> Storage:
        return FileStorage(self.root, clock=clock)


class TestDynamoDBStorage(StorageContract):
    @pytest.fixture(autouse=True)
    def table(self) -> Iterator[None]:
        with mock_aws():
            self.client = one_call_at_a_time(dynamodb_client())
            self.table_name = new_table(self.client)
            yield

    def make_storage(self, clock: Clock) -> Storage:
        return DynamoDBStorage(self.table_name, client=self.client, clock=clock)


class TestUserAdapter(StorageContract):
    def make_storage(self, clock: Clock) -> Storage:
        return KeyValueStorage(clock=clock)


BROKEN_ADAPTER = '''
from cairn import MemoryStorage
from cairn.testing.clock import SkippingClock
from cairn.testing.contract import StorageContract


class FenceBlindStorage(MemoryStorage):
    """Saves and commits with whatever fence it is given: the claim it names is taken to be the live one."""

    def _fenced(self, job_id, fence):
        job = self.get_job(job_id)
        if job is not None and job.lease_owner is not None:
            from cairn import Fence
            return Fence(job.lease_owner, job.claim_sequence)
        return fence

    def save(self, job_id, fence, request):
        return super().save(job_id, self._fenced(job_id, fence), request)

    def commit(self, job_id, fence, request):
        return super().commit(job_id, self._fenced(job_id, fence), request)


class TestFenceBlindStorage(StorageContract):
    def make_storage(self, clock):
        return FenceBlindStorage(clock=clock)
'''


def test_an_adapter_that_ignores_the_fence_fails_the_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken_adapter=BROKEN_ADAPTER)

    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-p", "no:randomly")

    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 2
    assert outcomes.get("passed", 0) > 10
    result.stdout.fnmatch_lines(
        ["*FAILED*test_a_stale_fence_is_refused*", "*FAILED*test_a_fence_of_no_claim_is_refused*"]
    )
