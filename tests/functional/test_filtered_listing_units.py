"""A listing filtered by status or by pipeline reads only the entries that match: the index keyed on the filter's
value (``StatusListing``, ``PipelineListing``) answers it, so a page costs what the jobs it lists cost, however few
of the owner's jobs match. Read units as DynamoDB bills them (every entry a query evaluates).

A stack deployed before those indexes lists the same pages through the ``Listing`` index's filter until they are
there; a cursor taken either way is followed the other way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from moto import mock_aws

from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from cairn import InlineScheduler, JobStatus, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage, listings, schema
from cairn.aws.listing import JobFilter
from cairn.core.engine import pause_job
from cairn.testing.clock import SkippingClock
from tests.aws import dynamodb_client, new_table
from tests.functional.test_listing_filters import looping

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

OWNER = "filterer"
JOBS = 1_000
#: One job in this many matches each filter: 2% of the owner's jobs, 20 of 1,000.
EVERY = 50
PAGE = 10
START_MS = 1_790_000_000_000


@dataclass
class Seeded:
    """The owner's jobs in one table, and a meter on its client."""

    storage: DynamoDBStorage
    meter: DynamoDBMeter

    def measured(self, action: Callable[[], Any]) -> tuple[Any, Figures]:
        """What ``action()`` returns, and what it cost."""
        self.meter.take()
        returned = action()
        return returned, self.meter.take()


def seed(storage: DynamoDBStorage, clock: SkippingClock, jobs: int) -> None:
    """``jobs`` jobs of one owner: every 50th paused (the status filter's), every 50th other of pipeline ``rare``."""
    common, rare = looping("common"), looping("rare")
    for number in range(jobs):
        clock.now_ms += 1000
        job_id = f"job-{number:04d}"
        pipeline = rare if number % EVERY == EVERY // 2 else common
        run_pipeline(job_id, pipeline, storage=storage, scheduler=InlineScheduler(), initial_state={})
        if number % EVERY == 0:
            pause_job(job_id, storage=storage)


@pytest.fixture(scope="module")
def seeded() -> Iterator[Seeded]:
    """1,000 jobs, built once for the module's tests that only read them."""
    with mock_aws():
        client = dynamodb_client()
        clock = SkippingClock(START_MS)
        storage = DynamoDBStorage(new_table(client), owner=OWNER, client=client, clock=clock)
        seed(storage, clock, JOBS)
        meter = DynamoDBMeter(client)
        try:
            yield Seeded(storage, meter)
        finally:
            meter.detach()


PAUSED = [f"job-{number:04d}" for number in range(JOBS - EVERY, -1, -EVERY)]
RARE = [f"job-{number:04d}" for number in range(JOBS - EVERY // 2, -1, -EVERY)]


@pytest.mark.parametrize(
    ("where", "expected"),
    [(JobFilter(status=JobStatus.PAUSED), PAUSED), (JobFilter(pipeline="rare"), RARE)],
    ids=["status", "pipeline"],
)
def test_a_filter_matching_two_percent_reads_a_fifth_of_a_unit_per_job_listed_on_every_page(
    seeded: Seeded, where: JobFilter, expected: list[str]
) -> None:
    storage = seeded.storage
    first, figures = seeded.measured(lambda: storage.list_page(where=where, limit=PAGE))
    assert [summary.job_id for summary in first.jobs] == expected[:PAGE]
    # one query of each of the 4 shards, each evaluating only its matching entries: 4 x 0.5 units
    assert (figures.read_requests, figures.read_units, figures.dynamodb["BatchGetItem"]) == (4, 2.0, 0)
    assert figures.read_units / PAGE <= 0.2

    second, figures = seeded.measured(lambda: storage.list_page(where=where, limit=PAGE, cursor=first.cursor))
    assert [summary.job_id for summary in second.jobs] == expected[PAGE : 2 * PAGE]
    assert (figures.read_requests, figures.read_units, figures.dynamodb["BatchGetItem"]) == (4, 2.0, 0)
    assert all(where.matches(summary) for summary in [*first.jobs, *second.jobs])


def test_the_same_filter_through_the_listing_index_alone_reads_every_entry(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the filter indexes save: the ``Listing`` index's filter evaluates the owner's entries until it has
    found a page (a stack whose filter indexes are missing lists this way, and the same pages)."""
    monkeypatch.setattr(listings.Listings, "_keyed", lambda self, where: None)
    page, figures = seeded.measured(lambda: seeded.storage.list_page(status=JobStatus.PAUSED, limit=PAGE))
    assert [summary.job_id for summary in page.jobs] == PAUSED[:PAGE]
    assert figures.read_units / PAGE > 1, f"{figures.read_units} read units for {PAGE} jobs through a filter"


def previous_release_table(client: DynamoDBClient) -> str:
    """A table as the release before the filter indexes made it: ``Listing`` and ``Stalled`` only."""
    name = new_table(client)
    for index in schema.FILTER_INDEXES.values():
        client.update_table(TableName=name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": index}}])
    return name


def indexes_queried(client: DynamoDBClient, action: Callable[[], Any]) -> list[str]:
    """The index each Query ``action()`` sent asked for."""
    asked: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        asked.append(params.get("IndexName", ""))

    client.meta.events.register("provide-client-params.dynamodb.Query", record, unique_id="indexes-queried")
    try:
        action()
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.Query", unique_id="indexes-queried")
    return asked


def test_a_stack_deployed_before_the_filter_indexes_lists_the_same_pages_and_uses_each_once_it_is_there(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listings, "_unready_indexes", {})
    with mock_aws():
        client = dynamodb_client()
        clock = SkippingClock(START_MS)
        table = previous_release_table(client)
        storage = DynamoDBStorage(table, owner=OWNER, client=client, clock=clock)
        seed(storage, clock, 4 * EVERY)
        rare = JobFilter(pipeline="rare")
        expected = [f"job-{number:04d}" for number in range(4 * EVERY - EVERY // 2, -1, -EVERY)]

        first = storage.list_page(where=rare, limit=2)
        assert "Listing without the PipelineListing index" in caplog.text
        asked = indexes_queried(client, lambda: storage.list_page(where=rare, limit=2, cursor=first.cursor))
        assert set(asked) == {"Listing"}, "not tried again before INDEX_RECHECK_SECONDS"
        second = storage.list_page(where=rare, limit=2, cursor=first.cursor)
        assert [summary.job_id for summary in [*first.jobs, *second.jobs]] == expected

        client.update_table(  # the next deploy adds the index; DynamoDB builds it from the items' attributes
            TableName=table,
            AttributeDefinitions=[{"AttributeName": "pipeline", "AttributeType": "S"}],
            GlobalSecondaryIndexUpdates=[
                {
                    "Create": {
                        "IndexName": "PipelineListing",
                        "KeySchema": [
                            {"AttributeName": "owner", "KeyType": "HASH"},
                            {"AttributeName": "pipeline", "KeyType": "HASH"},
                            {"AttributeName": "createdAt", "KeyType": "RANGE"},
                        ],
                        "Projection": {
                            "ProjectionType": "INCLUDE",
                            "NonKeyAttributes": schema.filter_index_attributes("pipeline"),
                        },
                    }
                }
            ],
        )
        monkeypatch.setattr(listings, "INDEX_RECHECK_SECONDS", 0.0)
        listings._unready_indexes.clear()
        asked = indexes_queried(client, lambda: storage.list_page(where=rare, limit=2, cursor=first.cursor))
        assert set(asked) == {"PipelineListing"}
        again = storage.list_page(where=rare, limit=2, cursor=first.cursor)  # a cursor the fallback returned
        assert [summary.job_id for summary in again.jobs] == expected[2:4]
        paused = storage.list_page(status=JobStatus.PAUSED, limit=10)
        assert [summary.job_id for summary in paused.jobs] == [f"job-{n:04d}" for n in range(150, -1, -EVERY)]
