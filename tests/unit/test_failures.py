"""An attempt's failure: the exception's type and a bounded traceback, the user's frames first, no secrets."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from cairn.core.failures import (
    MAX_TRACEBACK_CHARS,
    describe,
    exception_type,
    failure_of,
    is_user_frame,
    reported_failure,
)
from cairn.core.models import Failure, MapItem, PhaseRecord


class QuotaError(Exception):
    pass


def _raise_in_user_code(depth: int) -> None:
    if depth == 0:
        secret = "s3cr3t-local-value"  # noqa: F841 - a local a traceback must never show
        raise QuotaError("quota exceeded for tenant 7")
    _raise_in_user_code(depth - 1)


def _caught(call: Callable[..., object], *args: object) -> BaseException:
    try:
        call(*args)
    except Exception as exc:
        return exc
    raise AssertionError("expected an exception")


def test_a_builtin_exception_is_named_plainly_and_any_other_by_its_module() -> None:
    assert exception_type(TypeError("x")) == "TypeError"
    assert exception_type(QuotaError("x")) == f"{__name__}.QuotaError"


def test_the_traceback_starts_with_the_exception_then_the_users_frames_with_their_source() -> None:
    exc = _caught(_raise_in_user_code, 2)

    failure = failure_of(exc)

    lines = failure.traceback.splitlines()
    assert failure.type == f"{__name__}.QuotaError"
    assert lines[0] == f"{__name__}.QuotaError: quota exceeded for tenant 7"
    assert lines[1] == "In your code (most recent call last):"
    assert f'File "{__file__}"' in lines[2]
    assert 'raise QuotaError("quota exceeded for tenant 7")' in failure.traceback
    assert failure.traceback.count("in _raise_in_user_code") == 3


def test_library_frames_come_after_the_users_and_in_brief() -> None:
    class Strict(BaseModel):
        count: int

    def validate() -> None:
        Strict.model_validate({"count": "many"})

    failure = failure_of(_caught(validate))

    text = failure.traceback
    assert failure.type == "pydantic_core._pydantic_core.ValidationError"
    assert text.index("In your code") < text.index("In cairn and libraries (")
    assert 'File "pydantic/main.py"' in text  # from the package on: no site-packages path
    library_part = text[text.index("In cairn and libraries") :]
    assert "    " not in library_part.replace("\n  File", "")  # no source lines for library frames


def test_no_local_or_environment_variable_reaches_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_TEST_SECRET", "env-secret-value")

    def uses_the_environment() -> None:
        token = os.environ["CAIRN_TEST_SECRET"]  # noqa: F841
        _raise_in_user_code(0)

    text = failure_of(_caught(uses_the_environment)).traceback

    assert "s3cr3t-local-value" not in text
    assert "env-secret-value" not in text


def test_the_causes_are_named_after_the_exception() -> None:
    def chained() -> None:
        try:
            json.loads("{")
        except ValueError as exc:
            raise RuntimeError("could not read the manifest") from exc

    lines = failure_of(_caught(chained)).traceback.splitlines()

    assert lines[0] == "RuntimeError: could not read the manifest"
    assert lines[1].startswith("Caused by: json.decoder.JSONDecodeError: Expecting property name")


def test_a_deep_recursion_is_cut_to_the_limit_keeping_the_exception_and_the_newest_user_frames() -> None:
    failure = failure_of(_caught(_raise_in_user_code, 400))

    text = failure.traceback
    assert len(text) <= MAX_TRACEBACK_CHARS
    assert text.startswith(f"{__name__}.QuotaError: quota exceeded")
    assert "older frames left out" in text
    assert text.rstrip().endswith('raise QuotaError("quota exceeded for tenant 7")')


def test_a_huge_message_is_clipped_and_the_failure_still_fits() -> None:
    failure = failure_of(ValueError("x" * 100_000))

    assert failure.type == "ValueError"
    assert len(failure.traceback) <= MAX_TRACEBACK_CHARS


def test_an_exception_that_was_never_raised_has_only_its_line() -> None:
    assert failure_of(KeyError("jobs")).traceback == "KeyError: 'jobs'"


def test_a_lambda_report_gives_its_error_type_and_stack_and_nothing_for_a_report_without_a_type() -> None:
    reported = reported_failure("Sandbox.Timedout", ['  File "/var/task/app.py", line 3, in handler\n'])

    assert reported == Failure(type="Sandbox.Timedout", traceback='  File "/var/task/app.py", line 3, in handler')
    assert reported_failure(None, ["x"]) is None
    assert reported_failure({"not": "a type"}, None) is None
    assert reported_failure("Runtime.ExitError", "not a list") == Failure(type="Runtime.ExitError", traceback="")


def test_a_hostile_report_is_bounded() -> None:
    reported = reported_failure("T" * 10_000, ["line " * 1_000] * 1_000)

    assert reported is not None
    assert len(reported.type) <= 200
    assert len(reported.traceback) <= MAX_TRACEBACK_CHARS


def test_cairns_own_and_installed_files_are_not_the_users() -> None:
    import pydantic

    import cairn.core.engine.advancing as advancing

    assert is_user_frame(__file__)
    assert not is_user_frame(advancing.__file__)
    assert not is_user_frame(pydantic.__file__)
    assert not is_user_frame(json.__file__)
    assert not is_user_frame("<frozen importlib._bootstrap>")


def test_a_record_without_a_failure_stores_no_failure_key_and_one_with_it_round_trips() -> None:
    plain = PhaseRecord(phase="fetch", attempt=1, started_at=1, ended_at=2, outcome="next")
    failed = plain.model_copy(update={"outcome": "error", "failure": failure_of(_caught(_raise_in_user_code, 0))})

    assert "failure" not in plain.to_wire()
    assert PhaseRecord.model_validate_json(failed.model_dump_json(by_alias=True)) == failed
    assert "failure" not in MapItem(index=0).to_wire()


def test_a_frame_whose_file_cannot_be_resolved_still_gives_a_failure(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    looping = str(tmp_path / "a" / "phase.py")
    code = compile("def run():\n    raise ValueError('from a looping path')\n", looping, "exec")
    scope: dict[str, object] = {}
    exec(code, scope)

    failure = failure_of(_caught(scope["run"]))  # type: ignore[arg-type]

    assert failure.type == "ValueError"
    assert f'File "{looping}", line 2, in run' in failure.traceback
    assert is_user_frame(looping)
    is_user_frame("/tmp/with\x00nul.py")  # a NUL byte in a name does not raise


class _NoRepr:
    def __repr__(self) -> str:
        raise ValueError("no repr")


def test_an_exception_or_a_cause_whose_str_fails_is_shown_with_a_placeholder() -> None:
    def chained() -> None:
        try:
            raise KeyError(_NoRepr())  # str() of a KeyError is its argument's repr
        except KeyError as exc:
            raise RuntimeError(_NoRepr(), "two arguments") from exc

    lines = failure_of(_caught(chained)).traceback.splitlines()

    assert lines[0] == "RuntimeError: <unprintable RuntimeError: str() raised ValueError>"
    assert lines[1] == "Caused by: KeyError: <unprintable KeyError: str() raised ValueError>"
    assert describe(KeyError(_NoRepr())) == "<unprintable KeyError: str() raised ValueError>"
