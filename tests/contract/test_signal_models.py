"""A signal whose payload model the pipeline declares (``Pipeline(..., signals={name: Model})``), on every store:
a payload that fits is delivered as the model's JSON, one that does not is refused before anything is written."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from cairn import Cairn, Done, InlineScheduler, InvalidInputError, JobStatus, PhaseContext, Pipeline, WaitFor
from cairn.core.errors import PipelineError
from cairn.core.storage_port import Storage
from tests.support import FakeClock

JOB = "reviewed-1"


class Verdict(BaseModel):
    """The ``verdict`` signal's payload."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    note: str = ""


def reviewed() -> Pipeline[Any]:
    """``ask`` waits for ``verdict`` (declared) or ``any`` (not declared); ``use`` finishes with the payload."""
    pipeline: Pipeline[Any] = Pipeline("reviewed", signals={"verdict": Verdict})

    @pipeline.phase
    def ask(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor(ctx.state["signal"], "use", ctx.state)

    @pipeline.phase
    def use(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.signal)

    return pipeline


def waiting(storage: Storage, clock: FakeClock, signal: str) -> Cairn:
    jobs = Cairn(reviewed(), storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start("reviewed", JOB, state={"signal": signal})
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.WAITING
    return jobs


def test_a_payload_that_fits_is_delivered_as_the_models_json(storage: Storage, clock: FakeClock) -> None:
    jobs = waiting(storage, clock, "verdict")

    jobs.signal(JOB, "verdict", {"approved": True})
    jobs.run_until_idle()

    assert jobs.get(JOB).result == {"approved": True, "note": ""}  # the model's defaults filled in


@pytest.mark.parametrize(
    ("payload", "problem"),
    [({"approved": "maybe"}, "approved"), ({}, "approved"), ({"approved": True, "by": "x"}, "by"), (None, "")],
)
def test_a_payload_that_does_not_fit_is_refused_and_nothing_is_written(
    storage: Storage, clock: FakeClock, payload: Any, problem: str
) -> None:
    jobs = waiting(storage, clock, "verdict")
    before = jobs.get(JOB)

    with pytest.raises(InvalidInputError, match=r'Invalid payload for signal "verdict" of pipeline "reviewed"') as no:
        jobs.signal(JOB, "verdict", payload)

    assert problem in str(no.value)
    assert jobs.get(JOB) == before
    jobs.signal(JOB, "verdict", {"approved": False, "note": "again"})
    jobs.run_until_idle()
    assert jobs.get(JOB).result == {"approved": False, "note": "again"}


def test_a_signal_without_a_declared_model_takes_any_json(storage: Storage, clock: FakeClock) -> None:
    jobs = waiting(storage, clock, "any")

    jobs.signal(JOB, "any", [1, "two", None])
    jobs.run_until_idle()

    assert jobs.get(JOB).result == [1, "two", None]


@pytest.mark.parametrize(
    ("signals", "message"),
    [
        ({"bad name": Verdict}, "invalid signal name 'bad name'"),
        ({"verdict": dict}, "must be a pydantic model"),
        ({"": Verdict}, "invalid signal name"),
    ],
)
def test_a_declaration_that_cannot_be_honoured_is_refused_when_the_pipeline_is_made(
    signals: dict[str, Any], message: str
) -> None:
    with pytest.raises(PipelineError, match=message):
        Pipeline("declared", signals=signals)
