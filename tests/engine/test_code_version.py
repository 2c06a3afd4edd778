"""Each phase record names the code that ran it, so a rerun after a fix shows in the history."""

from __future__ import annotations

import hashlib
import inspect
import sys
from typing import Any

import pytest

from cairn import Cairn, Done, InlineScheduler, MemoryStorage, Next, PhaseContext, Pipeline
from cairn.core.versions import VERSION_VARIABLE, code_version
from tests.support import FakeClock


def _pipeline() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("versions")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        return Next("second", {})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        return Done(None)

    return pipeline


def _run(clock: FakeClock) -> Cairn:
    jobs = Cairn(_pipeline(), storage=MemoryStorage(clock=clock), scheduler=InlineScheduler(now=clock.monotonic))
    jobs.start("versions", "job-1", state={})
    jobs.run_until_idle()
    return jobs


def test_locally_a_phase_record_carries_a_hash_of_the_pipelines_module(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VERSION_VARIABLE, raising=False)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_VERSION", raising=False)
    source = inspect.getsource(sys.modules[__name__])
    expected = "sha256:" + hashlib.sha256(source.encode()).hexdigest()[:12]

    phases = _run(clock).get("job-1").phases

    assert [record.code_version for record in phases] == [expected, expected]


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({VERSION_VARIABLE: "build-42"}, "build-42"),
        ({"AWS_LAMBDA_FUNCTION_VERSION": "7"}, "lambda:7"),
    ],
)
def test_a_build_id_or_a_published_lambda_version_names_the_code(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str
) -> None:
    for name in (VERSION_VARIABLE, "AWS_LAMBDA_FUNCTION_VERSION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    phases = _run(clock).get("job-1").phases

    assert {record.code_version for record in phases} == {expected}


def test_latest_is_not_a_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VERSION_VARIABLE, raising=False)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
    assert code_version(_pipeline) is not None
    assert not str(code_version(_pipeline)).startswith("lambda:")
