"""The sample events in ``events/phases/<pipeline>/`` (``cairn new`` writes them), each through its phase function.

Each file is the message a phase function gets for its pipeline's sample job: ``job-0001``, started
with an empty state (the state model's defaults). The test starts that job on the local stack, plays
the queued invokes until the event's message is next, and gives the sample event to the function.
"""

from __future__ import annotations

import pytest

from cairn import run_pipeline
from cairn.testing.invoker import LocalContext
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.events import EVENTS, load_event

FOLDERS = sorted(path for path in (EVENTS / "phases").iterdir() if path.is_dir())
CASES = [f"phases/{folder.name}/{event.stem}" for folder in FOLDERS for event in sorted(folder.glob("*.json"))]


def test_each_folder_is_a_registered_pipeline_with_one_event_per_phase() -> None:
    for folder in FOLDERS:
        pipeline = PIPELINES.get(folder.name)
        assert sorted(path.stem for path in folder.glob("*.json")) == sorted(pipeline.phase_names), folder.name


@pytest.mark.parametrize("name", CASES)
def test_each_phase_event_runs_its_phase_through_its_function(stack: LocalStack, name: str) -> None:
    event = load_event(name)
    pipeline = PIPELINES.get(event["pipeline"])
    owner, job_id, phase = event["owner"], event["jobId"], event["phase"]
    assert name == f"phases/{pipeline.name}/{phase}"
    storage = stack.runtime.storage(owner)
    run_pipeline(
        job_id, pipeline, storage=storage, scheduler=stack.runtime.start_scheduler(owner, pipeline), initial_state={}
    )
    while stack.invoker.queue and any(stack.invoker.queue[0].payload.get(key) != value for key, value in event.items()):
        stack.invoker.drain(max_steps=1)
    assert stack.invoker.queue, f"the sample job never sends {name}: its sequence or phase is not the job's"
    function = stack.invoker.queue.popleft().function
    assert function == stack.runtime.settings.phase_function(pipeline.name, phase)

    response = stack.invoker.functions[function].handler(event, LocalContext(function))

    assert (response["jobId"], response["phase"]) == (job_id, phase)
    assert response["status"] in ("running", "complete")
    job = storage.get_job(job_id)
    assert job is not None
    assert [record.phase for record in job.phases][-1] == phase
