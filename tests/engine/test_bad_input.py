"""Bad input: invalid job ids, retry modes, phases and states are refused before anything is written."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pytest
from pydantic import BaseModel

from cairn import CairnError, Done, InvalidInputError, PhaseContext, Pipeline, advance_phase, run_pipeline
from cairn.core.engine import cancel_job, pause_job
from cairn.core.storage_port import Storage
from tests.support import FakeClock, job_of, make_scheduler

JOB = "job-1"


class Counter(BaseModel):
    count: int = 0


def _pipelines() -> tuple[Pipeline[Any], Pipeline[Counter]]:
    plain: Pipeline[Any] = Pipeline("plain")
    typed: Pipeline[Counter] = Pipeline("typed", state=Counter)

    @plain.phase(name="work")
    def plain_work(ctx: PhaseContext[Any]) -> Done:
        return Done()

    @typed.phase(name="work")
    def typed_work(ctx: PhaseContext[Counter]) -> Done:
        return Done()

    return plain, typed


BAD_JOB_IDS = ["", "has space", "../escape", "a/b", ".hidden", "x" * 129, "tab\tid", "ü-non-ascii"]


BAD_STARTS: list[tuple[str, dict[str, Any]]] = [
    ("plain", {"retry_mode": "restart"}),
    ("plain", {"retry_mode": ""}),
    ("plain", {"initial_phase": "nowhere"}),
    ("plain", {"initial_state": {"when": datetime(2024, 1, 1)}}),
    ("plain", {"initial_state": {"ratio": math.nan}}),
    ("plain", {"initial_state": {1, 2}}),
    ("plain", {"initial_state": object()}),
    ("typed", {"initial_state": {"count": "many"}}),
    ("typed", {"initial_state": ["not", "a", "counter"]}),
    ("typed", {"initial_state": {"count": 1}, "retry_mode": "sometimes"}),
]


@pytest.mark.parametrize("job_id", BAD_JOB_IDS)
def test_an_invalid_job_id_is_refused_everywhere(storage: Storage, clock: FakeClock, job_id: str) -> None:
    plain, _ = _pipelines()
    scheduler = make_scheduler(plain, storage, clock)

    with pytest.raises(InvalidInputError):
        run_pipeline(job_id, plain, storage=storage, scheduler=scheduler, initial_state={})
    with pytest.raises(InvalidInputError):
        advance_phase(job_id, plain, storage=storage, scheduler=scheduler)
    with pytest.raises(InvalidInputError):
        pause_job(job_id, storage=storage)
    with pytest.raises(InvalidInputError):
        cancel_job(job_id, storage=storage)

    assert storage.list_jobs() == []
    assert scheduler.pending() == 0


@pytest.mark.parametrize(("which", "kwargs"), BAD_STARTS)
def test_bad_input_to_run_pipeline_raises_and_changes_nothing(
    storage: Storage, clock: FakeClock, which: str, kwargs: dict[str, Any]
) -> None:
    plain, typed = _pipelines()
    pipeline: Pipeline[Any] = plain if which == "plain" else typed
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"count": 3})
    pause_job(JOB, storage=storage)
    before = job_of(storage, JOB)
    queued = scheduler.pending()
    clock.advance(1)

    with pytest.raises(CairnError):
        run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, **{"initial_state": {}, **kwargs})
    with pytest.raises(CairnError):
        run_pipeline("job-2", pipeline, storage=storage, scheduler=scheduler, **{"initial_state": {}, **kwargs})

    assert job_of(storage, JOB) == before
    assert storage.get_job("job-2") is None
    assert scheduler.pending() == queued


def test_a_valid_model_instance_or_dict_is_accepted_as_state(storage: Storage, clock: FakeClock) -> None:
    _, typed = _pipelines()
    scheduler = make_scheduler(typed, storage, clock)

    first = run_pipeline("job-a", typed, storage=storage, scheduler=scheduler, initial_state=Counter(count=2))
    second = run_pipeline("job-b", typed, storage=storage, scheduler=scheduler, initial_state={"count": 5})

    assert first.checkpoint is not None
    assert second.checkpoint is not None
    assert first.checkpoint.state == {"count": 2}
    assert second.checkpoint.state == {"count": 5}
