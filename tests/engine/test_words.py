"""What the front door says: a retried failure is one log line (no traceback), an unknown phase is named as
such, and a start without a state names the fields the state model requires."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel

from cairn import Cairn, Done, InvalidInputError, PhaseContext, Pipeline, RetryPolicy
from cairn.core.errors import PipelineError
from cairn.scheduling.inline import InlineScheduler
from tests.support import FakeClock


class Invoice(BaseModel):
    """A state with two required fields."""

    document: str
    pages: int


def flaky(failures: list[str]) -> Pipeline[Any]:
    """One phase that raises while ``failures`` has an entry (popping it), then finishes."""
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=1, jitter=False))
    def fetch(ctx: PhaseContext[Any]) -> Done:
        if failures:
            raise ConnectionError(failures.pop())
        return Done({"ok": True})

    return pipeline


def test_a_retried_failure_logs_one_line_and_no_traceback(caplog: pytest.LogCaptureFixture, clock: FakeClock) -> None:
    app = Cairn(flaky(["upstream reset"]), scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    app.start("flaky", "job-1", state={})

    with caplog.at_level(logging.INFO, logger="cairn"):
        app.run_until_idle()

    assert app.get("job-1").result == {"ok": True}
    failures = [record for record in caplog.records if "upstream reset" in record.getMessage()]
    assert [(record.levelname, record.exc_info) for record in failures] == [("WARNING", None)]
    assert failures[0].getMessage() == (
        'Job job-1: Phase "fetch" threw: upstream reset; Retrying phase "fetch" (attempt 2 of 3) in 1.0s'
    )
    assert not any(record.exc_info for record in caplog.records)


def test_the_failure_that_ends_the_job_keeps_its_traceback(caplog: pytest.LogCaptureFixture, clock: FakeClock) -> None:
    app = Cairn(flaky(["a", "b", "c"]), scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    app.start("flaky", "job-1", state={})

    with caplog.at_level(logging.INFO, logger="cairn"):
        app.run_until_idle()

    errors = [record for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1
    assert errors[0].exc_info is not None


def test_a_rerun_from_an_unknown_phase_says_unknown_phase() -> None:
    app = Cairn(flaky([]))
    app.start("flaky", "job-1", state={})

    with pytest.raises(PipelineError) as raised:
        app.retry("job-1", mode="from", phase="nowhere")

    assert str(raised.value) == 'Unknown phase "nowhere" (known phases: fetch)'


def test_a_start_without_a_state_names_the_missing_fields() -> None:
    pipeline: Pipeline[Invoice] = Pipeline("invoices", state=Invoice)

    @pipeline.phase
    def read(ctx: PhaseContext[Invoice]) -> Done:
        return Done(ctx.state.pages)

    with pytest.raises(InvalidInputError) as raised:
        Cairn(pipeline).start(pipeline, "job-1")

    assert str(raised.value) == 'Invalid state for pipeline "invoices": document: Field required; pages: Field required'
