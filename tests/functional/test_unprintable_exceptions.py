"""A phase that raises an exception whose ``str()`` or ``repr()`` fails: the job still ends with a record of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import pytest

from cairn import JobStatus, PhaseContext, Pipeline
from cairn.testing.api import ApiClient
from cairn.testing.plugin import LocalCairns


class Unprintable(Exception):
    """An exception whose ``str()`` and ``repr()`` both raise."""

    def __str__(self) -> str:
        raise ValueError("no text for you")

    def __repr__(self) -> str:
        raise ValueError("no repr either")


class NotText(Exception):
    """An exception whose ``__str__`` returns something that is not a string (``str()`` raises TypeError)."""

    def __str__(self) -> Any:
        return 42


EXCEPTIONS = [(Unprintable, "ValueError"), (NotText, "TypeError")]


def failing(kind: type[Exception]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("unprintable")

    @pipeline.phase(name="only")
    def only(ctx: PhaseContext[Any]) -> NoReturn:
        raise kind()

    return pipeline


@pytest.mark.parametrize(("kind", "raised"), EXCEPTIONS)
def test_run_until_idle_records_the_exception_type_with_a_placeholder(
    cairn_local: LocalCairns, kind: type[Exception], raised: str
) -> None:
    pipeline = failing(kind)
    app = cairn_local(pipeline)
    app.start(pipeline, "j-1", state={})

    app.run_until_idle()

    job = app.get("j-1")
    assert job.status == JobStatus.ERROR
    name = f"{__name__}.{kind.__qualname__}"
    assert job.error == f"<unprintable {kind.__qualname__}: str() raised {raised}>"
    (record,) = job.phases
    assert record.failure is not None
    assert record.failure.type == name
    assert record.failure.traceback.startswith(f"{name}: <unprintable")
    assert "raise kind()" in record.failure.traceback


@pytest.mark.parametrize(("kind", "raised"), EXCEPTIONS)
def test_on_the_stack_the_phase_function_records_the_users_exception(
    cairn_api: Callable[..., ApiClient], kind: type[Exception], raised: str
) -> None:
    api = cairn_api(failing(kind))
    assert api.post("/jobs", {"pipeline": "unprintable", "jobId": "j-1", "state": {}}).status == 202

    api.run_until_idle()

    job = api.get("/jobs/j-1").body
    assert job["status"] == "error", job
    assert job["error"] == f"<unprintable {kind.__qualname__}: str() raised {raised}>"
    assert job["phases"][0]["failure"]["type"] == f"{__name__}.{kind.__qualname__}"


class NoRepr:
    """A value whose ``repr()`` raises."""

    def __repr__(self) -> str:
        raise ValueError("no repr")


def test_a_phase_that_returns_a_value_whose_repr_fails_ends_the_job_with_a_placeholder(
    cairn_local: LocalCairns,
) -> None:
    pipeline: Pipeline[Any] = Pipeline("odd")
    pipeline.phase(name="only")(lambda ctx: NoRepr())  # type: ignore[type-var]  # not an outcome
    app = cairn_local(pipeline)
    app.start(pipeline, "j-1", state={})

    app.run_until_idle()

    job = app.get("j-1")
    assert job.status == JobStatus.ERROR
    assert job.error == (
        'Phase "only" returned <unprintable NoRepr: repr() raised ValueError>; '
        "expected Next, Done, Fail, Sleep, WaitFor or Map"
    )
