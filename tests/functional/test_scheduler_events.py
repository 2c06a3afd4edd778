"""Every sample event of the phase functions and the scheduler, through its handler, on moto."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn import InvalidInputError, Job, JobNotFoundError, JobStatus, advance_phase, run_pipeline
from cairn.testing.faults import CrashingStorage, CrashPoint, SimulatedCrash
from cairn.testing.invoker import LocalContext
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.events import event_names, load_event, phase_event
from tests.support import FakeClock

PIPELINE = PIPELINES.get("document-intake")
OWNER = "arn:aws:iam::123456789012:user/alice"
JOB = "job-0001"
SAMPLE_DOCUMENT = "invoice.txt"


def job(stack: LocalStack) -> Job:
    found = stack.runtime.storage(OWNER).get_job(JOB)
    assert found is not None
    return found


def start(stack: LocalStack, *, phases_done: int, document: str = "contract.txt") -> None:
    """Start the sample job and run its first ``phases_done`` phases; nothing else is left queued."""
    storage = stack.runtime.storage(OWNER)
    run_pipeline(
        JOB,
        PIPELINE,
        storage=storage,
        scheduler=stack.runtime.start_scheduler(OWNER, PIPELINE),
        initial_state={"document": document},
    )
    stack.invoker.drain(max_steps=phases_done)
    stack.invoker.queue.clear()


def crash_extract_after_first_page(stack: LocalStack, request_id: str) -> None:
    """The extract worker (request ``request_id``) dies right after saving page 1: its claim stays behind."""
    storage = CrashingStorage(stack.runtime.storage(OWNER), CrashPoint(operation=1, moment="after"))
    with pytest.raises(SimulatedCrash):
        advance_phase(
            JOB,
            PIPELINE,
            storage=storage,
            scheduler=stack.runtime.lambda_scheduler(OWNER, PIPELINE),
            phase="extract",
            worker=request_id,
        )


def function(stack: LocalStack, phase: str) -> str:
    """The name of the function that runs ``phase`` of document-intake on ``stack``."""
    return stack.runtime.settings.phase_function(PIPELINE.name, phase)


@pytest.mark.parametrize(
    ("phase", "done_before", "next_phase"),
    [
        ("fetch", 0, "split"),
        ("split", 1, "extract"),
        ("extract", 2, "publish"),
        ("publish", 3, None),
    ],
)
def test_each_phase_event_advances_the_job_through_its_function(
    stack: LocalStack, phase: str, done_before: int, next_phase: str | None
) -> None:
    start(stack, phases_done=done_before, document=SAMPLE_DOCUMENT)  # the sample job's document
    handler = stack.invoker.functions[function(stack, phase)].handler

    response = handler(phase_event(PIPELINE.name, phase), LocalContext(function(stack, phase)))

    assert response["jobId"] == JOB
    assert response["phase"] == phase
    stored = job(stack)
    assert [record.phase for record in stored.phases][-1] == phase
    if next_phase is None:
        assert response["status"] == "complete"
        assert stored.checkpoint is None
        assert stored.result["document"]["kind"] == "invoice"
    else:
        assert response["status"] == "running"
        assert stored.checkpoint is not None
        assert stored.checkpoint.next_phase == next_phase
        assert [invocation.function for invocation in stack.invoker.queue] == [function(stack, next_phase)]


def test_a_phase_event_delivered_twice_runs_the_phase_once(stack: LocalStack) -> None:
    start(stack, phases_done=0)
    handler = stack.invoker.functions[function(stack, "fetch")].handler
    first = handler(phase_event(PIPELINE.name, "fetch"), LocalContext(function(stack, "fetch")))
    second = handler(phase_event(PIPELINE.name, "fetch"), LocalContext(function(stack, "fetch")))
    assert first["status"] == "running"
    assert second["status"] == "skipped"
    assert [record.phase for record in job(stack).phases] == ["fetch"]


def test_a_phase_function_refuses_an_event_for_another_phase(stack: LocalStack) -> None:
    start(stack, phases_done=0)
    split = function(stack, "split")
    response = stack.invoker.functions[split].handler(phase_event(PIPELINE.name, "fetch"), LocalContext(split))
    assert response["status"] == "rejected"
    assert job(stack).phases == []


def test_a_delayed_advance_from_the_queue_invokes_the_phase_function(stack: LocalStack) -> None:
    start(stack, phases_done=0)

    response = stack.scheduler(load_event("scheduler/delayed-advance"), LocalContext("cairn-scheduler"))

    assert response == {"batchItemFailures": []}
    assert [invocation.function for invocation in stack.invoker.queue] == ["cairn-document-intake-fetch"]
    stack.run_until_idle()
    assert job(stack).status == JobStatus.COMPLETE


def test_a_delayed_advance_not_yet_due_goes_back_on_the_queue(stack: LocalStack, stack_clock: FakeClock) -> None:
    start(stack, phases_done=0)
    event: dict[str, Any] = load_event("scheduler/delayed-advance")
    body = event["Records"][0]["body"].replace('"notBefore": 1796000000000', f'"notBefore": {stack_clock() + 60_000}')
    event["Records"][0]["body"] = body

    response = stack.scheduler(event, LocalContext("cairn-scheduler"))

    assert response == {"batchItemFailures": []}
    assert stack.invoker.pending() == 0
    assert stack.delayed_waiting() == 1


def test_an_on_failure_record_for_a_timed_out_phase_sets_error_and_keeps_the_checkpoint(stack: LocalStack) -> None:
    event = load_event("scheduler/on-failure-timeout")
    start(stack, phases_done=2)
    crash_extract_after_first_page(stack, event["requestContext"]["requestId"])

    response = stack.scheduler(event, LocalContext("cairn-scheduler"))

    assert response == {"status": "error", "jobId": JOB}
    stored = job(stack)
    assert stored.status == JobStatus.ERROR
    assert stored.error is not None
    assert "Task timed out after 900.00 seconds" in stored.error
    assert stored.checkpoint is not None
    assert stored.checkpoint.next_phase == "extract"
    assert len(stored.checkpoint.state["results"]) == 1  # page 1 was saved before the timeout
    assert stored.lease_owner is None

    run_pipeline(
        JOB,
        PIPELINE,
        storage=stack.runtime.storage(OWNER),
        scheduler=stack.runtime.start_scheduler(OWNER, PIPELINE),
        retry_mode="resume",
    )
    stack.run_until_idle()
    finished = job(stack)
    assert finished.status == JobStatus.COMPLETE
    assert finished.usage["pages"] == 4  # pages 2-4 after the resume, page 1 before: none twice


def test_an_on_failure_record_for_a_phase_with_retries_schedules_the_retry(stack: LocalStack) -> None:
    event = load_event("scheduler/on-failure-out-of-memory")
    start(stack, phases_done=0)
    storage = CrashingStorage(stack.runtime.storage(OWNER), CrashPoint(operation=0, moment="after"))
    with pytest.raises(SimulatedCrash):
        advance_phase(
            JOB,
            PIPELINE,
            storage=storage,
            scheduler=stack.runtime.lambda_scheduler(OWNER, PIPELINE),
            phase="fetch",
            worker=event["requestContext"]["requestId"],
        )

    response = stack.scheduler(event, LocalContext("cairn-scheduler"))

    assert response == {"status": "running", "jobId": JOB}
    stored = job(stack)
    assert stored.attempt == 2
    assert "Runtime exited with error: signal: killed" in stored.log[-2].message
    assert stack.delayed_waiting() == 1  # the retry waits out the fetch phase's backoff on the delay queue
    stack.run_until_idle(timeout=10)
    assert job(stack).status == JobStatus.COMPLETE


def test_a_late_on_failure_record_does_not_disturb_a_job_that_moved_on(stack: LocalStack) -> None:
    start(stack, phases_done=4)
    before = job(stack)

    response = stack.scheduler(load_event("scheduler/on-failure-timeout"), LocalContext("cairn-scheduler"))

    assert response == {"status": "stale", "jobId": JOB}
    assert job(stack) == before


def test_the_scheduled_sweep_revives_a_job_stalled_between_commit_and_invoke(
    stack: LocalStack, stack_clock: FakeClock
) -> None:
    start(stack, phases_done=1)  # fetch committed; the invoke of split was lost
    assert job(stack).checkpoint is not None
    stack_clock.advance(60)
    assert stack.scheduler(load_event("scheduler/scheduled-sweep"), LocalContext("cairn-scheduler")) == {"revived": []}

    stack_clock.advance(stack.runtime.settings.sweep_idle_seconds)
    response = stack.scheduler(load_event("scheduler/scheduled-sweep"), LocalContext("cairn-scheduler"))

    assert response == {"revived": [JOB]}
    stack.run_until_idle()
    assert job(stack).status == JobStatus.COMPLETE
    assert [record.phase for record in job(stack).phases] == ["fetch", "split", "extract", "publish"]


def test_resolve_names_the_next_phase_and_its_function(stack: LocalStack) -> None:
    start(stack, phases_done=2)
    response = stack.scheduler(load_event("scheduler/resolve"), LocalContext("cairn-scheduler"))
    assert response == {
        "jobId": JOB,
        "owner": OWNER,
        "pipeline": "document-intake",
        "run": True,
        "status": "running",
        "phase": "extract",
        "sequence": job(stack).sequence,
        "functionName": "cairn-document-intake-extract",
    }
    stack.runtime.storage(OWNER).pause(JOB)
    paused = stack.scheduler(load_event("scheduler/resolve"), LocalContext("cairn-scheduler"))
    assert paused["run"] is False
    assert paused["status"] == "paused"


def test_record_failure_from_the_state_machine_records_the_crash(stack: LocalStack) -> None:
    start(stack, phases_done=2)
    crash_extract_after_first_page(stack, "some-request")

    response = stack.scheduler(load_event("scheduler/record-failure"), LocalContext("cairn-scheduler"))

    assert response["status"] == "error"
    assert response["scheduled"] is None
    stored = job(stack)
    assert stored.status == JobStatus.ERROR
    assert stored.checkpoint is not None
    assert stored.checkpoint.next_phase == "extract"
    assert stored.error is not None
    assert "Task timed out" in stored.error


def test_an_advance_of_an_unknown_phase_records_a_clear_error(stack: LocalStack) -> None:
    start(stack, phases_done=0)
    # a checkpoint written before a phase was renamed: nextPhase names a phase this pipeline lacks
    _rename_next_phase(stack, "summarise")

    response = stack.scheduler(load_event("scheduler/advance-unknown-phase"), LocalContext("cairn-scheduler"))

    assert response == {"status": "error", "jobId": JOB, "phase": "summarise"}  # the phase run, named as a phase does
    stored = job(stack)
    assert stored.error is not None
    assert 'Unknown phase "summarise"' in stored.error
    assert "fetch, split, extract, extract_page, publish" in stored.error


def test_a_start_event_starts_a_new_job_and_never_resets_an_existing_one(stack: LocalStack) -> None:
    response = stack.scheduler(load_event("scheduler/start"), LocalContext("cairn-scheduler"))
    assert response == {"status": "running", "jobId": JOB}
    stack.run_until_idle()
    finished = job(stack)
    assert finished.status == JobStatus.COMPLETE
    assert finished.result["document"]["kind"] == "invoice"  # the sample state: document-intake's example

    again = stack.scheduler(load_event("scheduler/start"), LocalContext("cairn-scheduler"))

    assert again == {"status": "exists", "jobId": JOB}
    assert job(stack) == finished
    assert stack.invoker.pending() == 0


def test_a_retry_event_resumes_a_failed_job_from_its_checkpoint(stack: LocalStack) -> None:
    timeout = load_event("scheduler/on-failure-timeout")
    start(stack, phases_done=2)
    crash_extract_after_first_page(stack, timeout["requestContext"]["requestId"])
    stack.scheduler(timeout, LocalContext("cairn-scheduler"))
    assert job(stack).status == JobStatus.ERROR

    response = stack.scheduler(load_event("scheduler/retry"), LocalContext("cairn-scheduler"))

    assert response == {"status": "running", "jobId": JOB, "nextPhase": "extract"}
    stack.run_until_idle()
    finished = job(stack)
    assert finished.status == JobStatus.COMPLETE
    assert finished.usage["pages"] == 4


def test_a_retry_event_with_a_state_its_resume_would_ignore_fails_the_invocation(stack: LocalStack) -> None:
    start(stack, phases_done=1)
    stack.runtime.storage(OWNER).pause(JOB)
    before = job(stack)
    event = {**load_event("scheduler/retry"), "state": {"document": "report.txt"}}

    with pytest.raises(InvalidInputError, match='mode="full"'):
        stack.scheduler(event, LocalContext("cairn-scheduler"))

    assert job(stack) == before
    assert stack.invoker.pending() == 0


def test_a_retry_event_for_an_unknown_job_fails_the_invocation(stack: LocalStack) -> None:
    with pytest.raises(JobNotFoundError):
        stack.scheduler(load_event("scheduler/retry"), LocalContext("cairn-scheduler"))


def test_every_scheduler_event_is_exercised_here() -> None:
    # The phase functions' events (events/phases/) are each run in test_pipeline_events.py.
    covered = {
        "scheduler/delayed-advance",
        "scheduler/on-failure-timeout",
        "scheduler/on-failure-out-of-memory",
        "scheduler/scheduled-sweep",
        "scheduler/resolve",
        "scheduler/record-failure",
        "scheduler/advance-unknown-phase",
        "scheduler/start",
        "scheduler/retry",
    }
    assert set(event_names("scheduler")) == covered


def _rename_next_phase(stack: LocalStack, phase: str) -> None:
    """Rewrite the stored checkpoint's nextPhase, as a checkpoint from an older deployment would read."""
    client = stack.runtime.dynamodb
    assert client is not None
    client.update_item(
        TableName=stack.runtime.settings.table_name or "",
        Key={"pk": {"S": f"JOB#{OWNER}#{JOB}"}, "sk": {"S": "JOB"}},
        UpdateExpression="SET checkpoint.nextPhase = :phase, nextPhase = :phase",
        ExpressionAttributeValues={":phase": {"S": phase}},
    )


def test_resolve_reads_only_the_job_items_routing_fields(stack: LocalStack) -> None:
    start(stack, phases_done=2)
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.append((model.name, params))

    stack.runtime.dynamodb.meta.events.register("before-parameter-build.dynamodb", record)  # type: ignore[union-attr]
    response = stack.scheduler(load_event("scheduler/resolve"), LocalContext("cairn-scheduler"))

    assert response["phase"] == "extract"
    [(operation, params)] = calls
    assert operation == "GetItem"
    projected = {params["ExpressionAttributeNames"][alias] for alias in params["ProjectionExpression"].split(", ")}
    assert projected == {"pipeline", "status", "nextPhase", "sequence", "expiresAt", "fanOut"}


def _counted(capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    """The job counters the scheduler's invocation printed (its EMF blobs), by name."""
    counted: dict[str, float] = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith('{"_aws"'):
            blob = json.loads(line)
            for directive in blob["_aws"]["CloudWatchMetrics"]:
                for metric in directive["Metrics"]:
                    if metric["Name"].startswith("Jobs"):
                        value = blob[metric["Name"]]
                        counted[metric["Name"]] = counted.get(metric["Name"], 0) + sum(
                            value if isinstance(value, list) else [value]
                        )
    return counted


@pytest.mark.parametrize("event", ["scheduler/record-failure", "scheduler/advance-unknown-phase"])
def test_a_job_the_scheduler_fails_counts_once_in_jobs_failed(
    stack: LocalStack, event: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed-jobs alarms watch JobsFailed: a job failed by the scheduler counts there, and a report of the
    same failure sent again (a lost response, a duplicate delivery) does not count it twice."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    if event == "scheduler/record-failure":
        start(stack, phases_done=2)
        crash_extract_after_first_page(stack, "some-request")
    else:
        start(stack, phases_done=0)
        _rename_next_phase(stack, "summarise")
    capsys.readouterr()

    stack.scheduler(load_event(event), LocalContext("cairn-scheduler"))
    assert job(stack).status == JobStatus.ERROR
    assert _counted(capsys) == {"JobsFailed": 1.0}

    stack.scheduler(load_event(event), LocalContext("cairn-scheduler"))
    assert _counted(capsys) == {}
