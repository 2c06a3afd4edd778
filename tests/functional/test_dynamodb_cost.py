"""What a phase transition costs in DynamoDB calls, counted with botocore's event hooks."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cairn import InlineScheduler, JobStatus, advance_phase, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from tests.functional.conftest import Moto
from tests.functional.pipelines import PHASES, four_phase_pipeline
from tests.support import FakeClock, counters, job_of

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
READS = {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}


class CallCounter:
    """Counts DynamoDB API calls by operation name."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __call__(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1

    def take(self) -> Counter[str]:
        """The calls since the last take."""
        taken, self.calls = self.calls, Counter()
        return taken


def test_each_phase_transition_of_a_small_state_costs_three_writes_and_no_read(moto: Moto, clock: FakeClock) -> None:
    counter = CallCounter()
    moto.dynamodb.meta.events.register("before-call.dynamodb", counter)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    pipeline = four_phase_pipeline()
    scheduler = InlineScheduler()
    per_advance: list[Counter[str]] = []

    def advance(job_id: str, **message: Any) -> None:
        advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **message)
        per_advance.append(counter.take())

    scheduler.bind(advance)
    run_pipeline("cost-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"trail": []})
    start = counter.take()
    scheduler.drain()

    assert len(per_advance) == len(PHASES)
    for calls in per_advance:
        assert sum(calls[name] for name in READS) == 0, calls  # the claim returns the job item, its small state in it
        assert sum(calls[name] for name in WRITES) == 3, calls
        assert calls["UpdateItem"] == 2  # the claim, which returns the item, and the commit
        assert calls["PutItem"] == 1  # the history the commit adds (its phase record and log entries)
    # the read that tells a start from a retry (the job item: none), the input and the first history item, the job
    assert start == Counter({"GetItem": 1, "BatchWriteItem": 1, "PutItem": 1})

    job = job_of(storage, "cost-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"trail": PHASES}
    assert [entry.message for entry in job.log if entry.kind == "log"] == [f"{name} ran" for name in PHASES]
    assert [record.phase for record in job.phases] == PHASES
    assert counters(job.usage) == {"steps": 4, "transitions": 4}  # each of the four phases leaves it once
