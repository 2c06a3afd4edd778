"""What reading a job costs in DynamoDB read units: the same after ten transitions as after a thousand.

A job's view (``get_job_view``: the API's ``GET /jobs/{jobId}``, the dashboard's refresh) reads the job
item, one page of its newest history items and its input; ``get_job`` reads the job's whole partition,
so its cost grows with the job. A page of history or of the log reads what it holds. The meter
(``benchmarks/dynamodb_meter.py``) counts the reads and bills them as DynamoDB does (whole items; every item
a query evaluates).

A thousand claims and commits through moto take over a minute, so a long job's middle is written as
the store writes it (the codec's history items, linked, in batches of 25); its first and last ten
transitions are claims and commits through the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from moto import mock_aws

from benchmarks.cost import CapturingScheduler
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from cairn import Done, PhaseContext, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.errors import JobExistsError
from cairn.core.models import Checkpoint, HistoryItem, Job, LogEntry, PhaseRecord
from cairn.core.transitions import new_token
from cairn.testing.clock import SkippingClock
from cairn.testing.contract.base import PIPELINE, START_MS, TTL_SECONDS, started
from cairn.testing.contract.history import run_phase
from tests.aws import dynamodb_client, new_table
from tests.functional.api_client import ALICE, Api
from tests.support import FakeClock

#: The read units of a job view (a consistent GetItem of the job item, a Query of 11 history items of about
#: 500 bytes, a GetItem of the input), whatever the job's length.
VIEW_UNITS = 4.0
VIEW_READS = {"GetItem": 2, "Query": 1}


def with_history(storage: DynamoDBStorage, job_id: str, count: int) -> None:
    """Add ``count`` transitions to the job's history as its claims and commits would write it.

    Each is a claim and a commit (two sequences) whose commit logs one entry, records its phase run and
    enters the phase again with a small state, in an item keyed as the store keys it; the job item then
    names the last as its head, as the last commit would.
    """
    job = storage.get_job_view(job_id)
    assert job is not None
    stored, head, sequence = job.job, job.job.history_head, job.job.sequence
    now = storage.clock()
    items = []
    for number in range(count):
        sequence += 2
        token = new_token()
        record = PhaseRecord(phase="first", attempt=1, started_at=now, ended_at=now, outcome="next", next_phase="first")
        log = [LogEntry(message=f"middle {number}", timestamp=now, phase="first")]
        entry = Checkpoint(next_phase="first", state={"note": f"middle {number}"}, created_at=now)
        at = stored.model_copy(update={"sequence": sequence})
        history = HistoryItem(token=token, prev=head, log=log, record=record)
        item, _ = storage.codec.history_item(at, history, expires_at=stored.expires_at, checkpoint=entry)
        items.append(item)
        head = token
    client = storage.client
    for start in range(0, len(items), 25):
        batch: list[Any] = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        assert not client.batch_write_item(RequestItems={storage.table_name: batch}).get("UnprocessedItems")
    client.update_item(
        TableName=storage.table_name,
        Key={"pk": {"S": storage.codec.pk(job_id)}, "sk": {"S": "JOB"}},
        UpdateExpression="SET #sequence = :sequence, historyHead = :head, checkpoint.stateAt = :at",
        ExpressionAttributeNames={"#sequence": "sequence"},
        ExpressionAttributeValues={
            ":sequence": {"N": str(sequence)},
            ":head": {"S": head},
            ":at": {"S": f"H#{stored.run}#{sequence:012d}#{head}"},
        },
    )


def job_of(storage: DynamoDBStorage, clock: SkippingClock, job_id: str, transitions: int) -> Job:
    """A job of ``transitions`` phase runs: ten through the store, any more in its middle, ten more last."""
    job = started(storage, clock, job_id=job_id, state={"note": "start"})
    for number in range(min(transitions, 10)):
        job = run_phase(storage, clock, job, f"first {number}", job_id=job_id)
    if transitions > 10:
        with_history(storage, job_id, transitions - 20)
        view = storage.get_job_view(job_id)
        assert view is not None
        job = view.job
        for number in range(10):
            job = run_phase(storage, clock, job, f"last {number}", job_id=job_id)
    whole = storage.get_job(job_id)
    assert whole is not None
    assert len(whole.phases) == transitions
    return whole


@dataclass
class Jobs:
    """Jobs of 10, 100 and 1,000 transitions in one table, and a meter on its client."""

    storage: DynamoDBStorage
    meter: DynamoDBMeter
    whole: dict[int, Job]

    def measured(self, read: Callable[..., Any], *args: Any) -> tuple[Any, Figures]:
        """What ``read(*args)`` returns, and what it cost."""
        self.meter.take()
        returned = read(*args)
        return returned, self.meter.take()


@pytest.fixture(scope="module")
def jobs() -> Iterator[Jobs]:
    """The jobs, built once for the module's tests (which only read them)."""
    with mock_aws():
        client = dynamodb_client()
        clock = SkippingClock(START_MS)
        storage = DynamoDBStorage(new_table(client), client=client, clock=clock)
        whole = {count: job_of(storage, clock, f"job-{count}", count) for count in (10, 100, 1000)}
        meter = DynamoDBMeter(client)
        try:
            yield Jobs(storage, meter, whole)
        finally:
            meter.detach()


def test_a_job_view_costs_the_same_after_ten_transitions_as_after_a_thousand(jobs: Jobs) -> None:
    figures: dict[int, Figures] = {}
    for count, whole in jobs.whole.items():
        view, figures[count] = jobs.measured(jobs.storage.get_job_view, whole.job_id)
        assert view is not None
        assert view.job.model_dump(exclude={"log", "phases"}) == whole.model_dump(exclude={"log", "phases"})
        assert view.job.phases == whole.phases[-10:]  # the newest ten writes: ten phase runs
        assert view.job.log == whole.log[-10:]
        assert view.older is not None

    units = {count: figure.read_units for count, figure in figures.items()}
    assert units == {10: VIEW_UNITS, 100: VIEW_UNITS, 1000: VIEW_UNITS}
    assert units[1000] <= 1.5 * units[10]
    assert all(dict(figure.dynamodb) == VIEW_READS for figure in figures.values())

    # the whole job, by contrast, costs what the job has written
    whole_units = {count: jobs.measured(jobs.storage.get_job, f"job-{count}")[1].read_units for count in jobs.whole}
    print(f"read units after 10 / 100 / 1,000 transitions: view {units}, whole job {whole_units}")
    assert whole_units[10] <= VIEW_UNITS
    assert whole_units[1000] > 20 * VIEW_UNITS


def test_a_page_of_history_or_of_the_log_costs_what_it_holds_wherever_it_is(jobs: Jobs) -> None:
    storage = jobs.storage
    view = storage.get_job_view("job-1000")
    assert view is not None
    costs: list[float] = []
    cursor = view.older
    pages = 0
    while cursor is not None:
        page, figures = jobs.measured(storage.history_page, "job-1000", cursor, 20)
        assert page is not None
        pages += 1
        if page.cursor is not None:  # every full page (the last, shorter, costs less)
            assert len(page.items) == 20
            costs.append(figures.read_units)
            assert dict(figures.dynamodb) == {"GetItem": 1, "Query": 1}
        cursor = page.cursor
    assert pages == 50  # the 991 writes before the view's ten (the start and 990 runs), 20 a page
    assert max(costs) <= 1.5 * min(costs)
    assert max(costs) <= 4.0  # the job item and 21 small history items

    log_costs = []  # of full pages: twenty entries, in twenty items
    short = 0.0
    for count in (10, 100, 1000):
        page, figures = jobs.measured(storage.log_page, f"job-{count}", None, 20)
        assert page is not None
        assert page.entries == jobs.whole[count].log[:20]
        if count == 10:
            assert page.cursor is None  # its ten entries are one page
            short = figures.read_units
            continue
        log_costs.append(figures.read_units)
        deeper, figures = jobs.measured(storage.log_page, f"job-{count}", page.cursor, 20)
        assert deeper is not None
        assert deeper.entries == jobs.whole[count].log[20:40]
        log_costs.append(figures.read_units)
    assert max(log_costs) <= 1.5 * min(log_costs)
    assert short <= min(log_costs)  # ten entries cost no more than twenty


def _contract_pipeline() -> Pipeline[Any]:
    """The pipeline of the contract suite's jobs: one phase, ``first``, and their TTL (a longer one renews their
    history items first, once)."""
    pipeline: Pipeline[Any] = Pipeline(PIPELINE, ttl=timedelta(seconds=TTL_SECONDS))

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


#: What a retry, a rerun from a phase and a start of a known id read, whatever the job's length: the job item
#: (its small state in it), then its input's item; a rerun also its maps and, from the job item down its newest
#: history items, the phase's entry; a start of a known id also the job's view, which its refusal shows.
RESTART_UNITS = {"resume": 2.0, "from": 6.0, "known id": 6.0}


def test_retries_reruns_and_starts_of_a_known_id_read_the_same_after_ten_transitions_as_after_three_hundred() -> None:
    with mock_aws():
        client = dynamodb_client()
        clock = SkippingClock(START_MS)
        storage = DynamoDBStorage(new_table(client), client=client, clock=clock)
        for count in (10, 300):
            job_of(storage, clock, f"job-{count}", count)
        pipeline, scheduler = _contract_pipeline(), CapturingScheduler()
        meter = DynamoDBMeter(client)
        measured: dict[str, dict[int, float]] = {kind: {} for kind in RESTART_UNITS}
        try:
            for count in (10, 300):
                job_id = f"job-{count}"
                restarts: dict[str, dict[str, Any]] = {
                    "resume": {},
                    "from": {"retry_mode": "from", "initial_phase": "first"},
                    "known id": {"create_only": True},
                }
                for kind, options in restarts.items():
                    meter.take()
                    with contextlib.suppress(JobExistsError):
                        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, **options)
                    figures = meter.take()
                    measured[kind][count] = figures.read_units
                    assert "Query" not in figures.dynamodb or kind != "resume", dict(figures.dynamodb)
        finally:
            meter.detach()
    assert measured == {kind: {10: units, 300: units} for kind, units in RESTART_UNITS.items()}


def test_the_api_shows_a_job_for_the_same_read_units_after_ten_transitions_as_after_a_thousand(
    api: Api, stack_clock: FakeClock
) -> None:
    runtime = api.stack.runtime
    storage = runtime.storage(ALICE)
    for count in (10, 1000):
        job_of(storage, stack_clock, f"job-{count}", count)
    assert runtime.dynamodb is not None
    meter = DynamoDBMeter(runtime.dynamodb)
    try:
        units = {}
        for count in (10, 1000):
            meter.take()
            reply = api.call("get-job", job_id=f"job-{count}")
            figures = meter.take()
            assert reply.status == 200, reply.body
            assert len(reply.body["phases"]) == 10
            assert reply.body["historyCursor"] is not None
            units[count] = figures.read_units
    finally:
        meter.detach()
    assert units == {10: VIEW_UNITS, 1000: VIEW_UNITS}
