"""A worker that timed out, reported by Lambda's on-failure record on the local stack (moto): the crashed attempt
shows when it really started and how long it ran, in the job view (``claimedAt``, the phase record) and its log."""

from __future__ import annotations

from cairn.testing.invoker import LocalContext
from cairn.testing.stack import LocalStack
from tests.events import load_event
from tests.functional.api_client import Api
from tests.functional.test_scheduler_events import JOB, crash_extract_after_first_page, job, start
from tests.support import FakeClock

TIMEOUT_SECONDS = 900


def test_a_timed_out_phase_shows_its_real_start_and_length(stack: LocalStack, stack_clock: FakeClock, api: Api) -> None:
    event = load_event("scheduler/on-failure-timeout")
    start(stack, phases_done=2)
    crash_extract_after_first_page(stack, event["requestContext"]["requestId"])
    held = job(stack)
    shown = api.call("get-job", job_id=JOB).body
    assert held.claimed_at is not None
    assert shown["claimedAt"] == held.claimed_at  # the view says when the phase in flight began
    stack_clock.advance(TIMEOUT_SECONDS)  # Lambda ends the invocation at its timeout

    stack.scheduler(event, LocalContext("cairn-scheduler"))

    crashed = job(stack)
    record = crashed.phases[-1]
    assert (record.phase, record.attempt, record.outcome) == ("extract", 1, "error")
    assert record.started_at == held.claimed_at
    assert record.ended_at - record.started_at == TIMEOUT_SECONDS * 1000
    died = [entry.message for entry in crashed.log if entry.message.startswith("Worker died")]
    assert len(died) == 1
    assert died[0].startswith('Worker died during phase "extract" (attempt 1) after 900.0 s, reported at ')
    assert died[0].endswith("Task timed out after 900.00 seconds")
    assert api.call("get-job", job_id=JOB).body["claimedAt"] is None  # no worker holds it now
