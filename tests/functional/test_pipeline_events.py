"""The sample events of the phase functions: ``events/phases/<pipeline>/<phase>.json``, one per phase of every
registered pipeline (``cairn new`` writes a new pipeline's; a registered phase without one fails here).

Each file is the message the driver sends that phase's function for its pipeline's sample job: the
event's job, started with the pipeline's sample state (the one ``GET /pipelines`` offers, else ``{}``).
The test starts that job on the local stack, plays the queued invokes (and, when the job waits for a
signal, sends the one of ``events/api/send-signal.json``) until the driver sends the event's message,
then gives the file's event to the phase's function instead: the phase runs, and the job then runs to its end.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

import cairn.maps.map_items
from cairn import Cairn, Job, JobStatus
from cairn.aws.api_models import PipelineView
from cairn.scheduling.messages import AdvanceMessage
from cairn.testing.invoker import Invocation, LocalContext
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.events import EVENTS, load_event, phase_event

PHASES = [(pipeline.name, phase) for pipeline in PIPELINES for phase in pipeline.phase_names]
#: What a sample job needs beside its pipeline's sample state to reach a phase: document-intake's
#: item phase runs only in a map over the pages, which it starts when page_concurrency is set.
STARTS: dict[tuple[str, str], dict[str, Any]] = {("document-intake", "extract_page"): {"page_concurrency": 2}}
MAX_STEPS = 200


class FixedMapId:
    """The engine's ``uuid`` module as the map's start sees it: the map gets the id the sample event names."""

    def __init__(self, hex_id: str) -> None:
        self.value = uuid.UUID(hex=hex_id)

    def uuid4(self) -> uuid.UUID:
        return self.value


def sample_state(pipeline_name: str, phase: str) -> Any:
    """The state the sample job starts with to reach ``phase``."""
    sample = PipelineView.of(PIPELINES.get(pipeline_name)).sample
    state = {} if sample is None else sample
    extra = STARTS.get((pipeline_name, phase))
    return {**state, **extra} if extra else state


def signal_if_waiting(app: Cairn, job_id: str) -> bool:
    """Send the sample signal (``events/api/send-signal.json``) when the job waits for it; whether it did."""
    job = app.get(job_id)
    if job.status != JobStatus.WAITING:
        return False
    sample = load_event("api/send-signal")
    name = sample["pathParameters"]["name"]
    assert job.waiting_for == name, f"the sample job waits for {job.waiting_for!r}; the sample signal is {name!r}"
    app.signal(job_id, name, json.loads(sample["body"]))
    return True


def sent_message(invocation: Invocation) -> AdvanceMessage | None:
    """The advance an invocation of a phase function carries (None for another function's event)."""
    try:
        return AdvanceMessage.model_validate(invocation.payload)
    except ValueError:
        return None


def play_until(stack: LocalStack, app: Cairn, message: AdvanceMessage) -> Invocation:
    """Run the sample job until the driver's next invocation carries ``message``; that invocation, not run."""
    for _ in range(MAX_STEPS):
        if stack.invoker.queue:
            if sent_message(stack.invoker.queue[0]) == message:
                return stack.invoker.queue.popleft()
            stack.invoker.drain(max_steps=1)
        elif not signal_if_waiting(app, message.job_id):
            break
    job = app.get(message.job_id)
    pytest.fail(
        f"the sample job ({job.status.value}, sequence {job.sequence}) never sends the sample event's message "
        f"{message.to_wire()}: its phase, sequence or item is not one the driver sends"
    )


def settle(stack: LocalStack, app: Cairn, job_id: str) -> Job:
    """Run what is queued, sending the sample signal whenever the job waits for it; the job once nothing is left."""
    for _ in range(MAX_STEPS):
        stack.invoker.drain()
        if not signal_if_waiting(app, job_id):
            break
    return app.get(job_id)


def test_every_phase_of_every_registered_pipeline_has_a_sample_event() -> None:
    missing = [
        f"events/phases/{pipeline}/{phase}.json"
        for pipeline, phase in PHASES
        if not (EVENTS / "phases" / pipeline / f"{phase}.json").is_file()
    ]
    assert missing == [], "phase functions without a sample event (cairn new writes a new pipeline's)"


def test_every_phase_event_is_the_event_of_a_registered_phase() -> None:
    found = {path.relative_to(EVENTS / "phases").as_posix() for path in (EVENTS / "phases").rglob("*.json")}
    assert found - {f"{pipeline}/{phase}.json" for pipeline, phase in PHASES} == set()


@pytest.mark.parametrize(("pipeline_name", "phase"), PHASES, ids=[f"{name}/{phase}" for name, phase in PHASES])
def test_the_phase_event_is_what_the_sample_job_sends_and_it_runs_the_phase(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch, pipeline_name: str, phase: str
) -> None:
    event = phase_event(pipeline_name, phase)
    message = AdvanceMessage.model_validate(event)
    assert (message.pipeline, message.phase) == (pipeline_name, phase)
    pipeline = PIPELINES.get(pipeline_name)
    app = stack.runtime.cairn(message.owner, pipeline)
    if message.fan_out is not None:  # a map's id is random: the sample job's map gets the one the event names
        monkeypatch.setattr(cairn.maps.map_items, "uuid", FixedMapId(message.fan_out))
    app.start(pipeline, message.job_id, state=sample_state(pipeline_name, phase))

    sent = play_until(stack, app, message)
    function = stack.runtime.settings.phase_function(pipeline_name, phase)
    assert sent.function == function

    response = stack.invoker.functions[function].handler(event, LocalContext(function))

    assert (response["jobId"], response["phase"]) == (message.job_id, phase)
    assert response["status"] in ("running", "waiting", "complete"), response
    job = app.get(message.job_id)
    if message.fan_out is None:
        assert [record.phase for record in job.phases][-1] == phase
    else:
        items = stack.runtime.storage(message.owner).get_items(message.job_id, message.fan_out)
        assert [item.status for item in items if item.index == message.item] == ["done"]
    finished = settle(stack, app, message.job_id)
    assert finished.status == JobStatus.COMPLETE, finished.error
