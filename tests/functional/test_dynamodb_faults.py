"""Transient faults: throttling is retried by botocore; a write that landed before a lost response is recognised."""

from __future__ import annotations

import json
from typing import Any

from botocore.awsrequest import AWSResponse

from cairn import JobStatus, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from tests.aws import canned_response
from tests.functional.conftest import Moto
from tests.functional.pipelines import PHASES, four_phase_pipeline
from tests.support import FakeClock, job_of, make_scheduler

# RETURNS: botocore acts on what these hooks return (a response to use, a delay before retrying);
# its type stubs declare event handlers as returning None, hence the ignores where they are registered.


class Throttle:
    """Answers every other request, ``times`` times, with DynamoDB's ThrottlingException instead of sending it."""

    def __init__(self, times: int) -> None:
        self.remaining = times
        self.sent = 0
        self.throttled = 0

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        self.sent += 1
        if self.remaining <= 0 or self.sent % 2 == 0:
            return None
        self.remaining -= 1
        self.throttled += 1
        body = json.dumps(
            {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "Rate of requests exceeds"}
        ).encode()
        return canned_response(request.url, 400, body, "application/x-amz-json-1.0")


def test_a_throttled_table_still_completes_the_job(moto_http: Moto, clock: FakeClock) -> None:
    throttle = Throttle(times=4)
    moto_http.dynamodb.meta.events.register("before-send.dynamodb", throttle)  # type: ignore[arg-type]
    storage = DynamoDBStorage(moto_http.table, client=moto_http.dynamodb, clock=clock)
    pipeline = four_phase_pipeline()
    scheduler = make_scheduler(pipeline, storage, clock)

    run_pipeline("throttled", pipeline, storage=storage, scheduler=scheduler, initial_state={"trail": []})
    scheduler.drain()

    assert throttle.throttled == 4
    job = job_of(storage, "throttled")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"trail": PHASES}
    assert [record.phase for record in job.phases] == PHASES


class RepeatOnce:
    """Makes botocore send a request again after it succeeded, as after a lost response (a timeout)."""

    def __init__(self) -> None:
        self.repeated: list[str] = []

    def __call__(self, attempts: int, response: Any, operation: Any, **_: Any) -> float | None:
        if attempts == 1 and response is not None and response[0].status_code == 200:
            self.repeated.append(operation.name)
            return 0.0
        return None


def test_a_write_repeated_after_it_landed_is_recognised_not_refused(moto_http: Moto, clock: FakeClock) -> None:
    repeat = RepeatOnce()
    for operation in ("UpdateItem", "PutItem", "BatchWriteItem"):
        moto_http.dynamodb.meta.events.register(f"needs-retry.dynamodb.{operation}", repeat)  # type: ignore[arg-type]
    storage = DynamoDBStorage(moto_http.table, client=moto_http.dynamodb, clock=clock)
    pipeline = four_phase_pipeline()
    scheduler = make_scheduler(pipeline, storage, clock)

    run_pipeline("repeated", pipeline, storage=storage, scheduler=scheduler, initial_state={"trail": []})
    scheduler.drain()

    assert "UpdateItem" in repeat.repeated
    assert "PutItem" in repeat.repeated
    job = job_of(storage, "repeated")
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"trail": PHASES}
    assert [record.phase for record in job.phases] == PHASES  # each transition committed once
