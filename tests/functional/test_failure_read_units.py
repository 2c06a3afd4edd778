"""What reading failures costs on DynamoDB, metered as it bills them: the failed jobs of a range are read from the
``StatusListing`` index and their items (eventually consistent, half a read unit each), and a list page filtered to
one failure group reads a bounded number of items however rare the group is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.dynamodb_meter import DynamoDBMeter
from cairn.aws.dynamodb import DynamoDBStorage, listings
from cairn.aws.listing import JobFilter
from tests.failure_seeds import Failed, seed_failure
from tests.functional.conftest import Moto
from tests.functional.test_listing_read_units import metered
from tests.support import FakeClock

COMMON = 60
SHARE = 5
"""The page bound made small (2 rounds of 5 entries a shard: 40 items), so that a few jobs pass it."""


@pytest.fixture
def storage(moto: Moto, clock: FakeClock) -> DynamoDBStorage:
    """60 failures of one kind, newer than one failure of another kind."""
    store = DynamoDBStorage(moto.table, owner="failing", client=moto.dynamodb, clock=clock)
    start = clock()
    seed_failure(store, Failed("rare", "p", "b", "KeyError", "rare", start))
    for number in range(COMMON):
        seed_failure(store, Failed(f"common-{number:03d}", "p", "a", "ValueError", "common", start + 1 + number))
    return store


@pytest.fixture
def meter(moto: Moto) -> Iterator[DynamoDBMeter]:
    meter = DynamoDBMeter(moto.dynamodb)
    meter.enabled = False
    yield meter
    meter.detach()


def test_the_failed_jobs_of_a_range_cost_about_half_a_read_unit_each(
    storage: DynamoDBStorage, clock: FakeClock, meter: DynamoDBMeter
) -> None:
    start = clock()

    failed, figures = metered(
        meter, lambda: storage.failed_jobs(created_from=start, created_to=start + 10_000, pipeline=None, limit=50)
    )

    assert (len(failed.jobs), failed.exact) == (50, False)
    assert {job.error_type for job in failed.jobs} == {"ValueError"}  # the newest 50
    assert figures.consistent_read_units == 0
    assert figures.read_units <= 50 * 0.6, f"{figures.read_units} read units for 50 failed jobs"


def test_a_page_filtered_to_a_rare_failure_reads_at_most_its_bound_of_items(
    storage: DynamoDBStorage, meter: DynamoDBMeter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listings, "MAX_FAILURE_SHARE", SHARE)
    where = JobFilter(error_type="KeyError", error_phase="b")

    page, figures = metered(meter, lambda: storage.list_page(limit=50, where=where))

    assert page.jobs == []  # not reached yet: the page says so with a cursor
    assert page.cursor is not None
    bound = listings.MAX_FAILURE_ROUNDS * listings.MAX_FAILURE_SHARE * 4
    assert figures.dynamodb["BatchGetItem"] <= listings.MAX_FAILURE_ROUNDS
    assert figures.read_units <= bound * 0.6, f"{figures.read_units} read units for one page"

    found: list[str] = []
    cursor: str | None = page.cursor
    while cursor is not None:
        page = storage.list_page(limit=50, where=where, cursor=cursor)
        found.extend(job.job_id for job in page.jobs)
        cursor = page.cursor
    assert found == ["rare"]
