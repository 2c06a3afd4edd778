"""Why a job failed, through the same path a user takes: the API's job view and `cairn jobs show`, against a
real HTTP server on 127.0.0.1 in front of the API function on the local stack."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from cairn.testing.stack import LocalStack
from tests.functional.jobs_server import JobsServer
from tests.functional.pipelines import pricing_pipeline
from tests.functional.stacks import moto_stack
from tests.functional.test_jobs_cli import run_cli, show_json
from tests.support import FakeClock

PRICING_FILE = "tests/functional/pipelines.py"


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle's pipelines and ``pricing`` (whose phase has a bug) in-process on moto."""
    with moto_stack(stack_clock, pricing_pipeline()) as stack:
        yield stack


def test_show_prints_the_exception_type_and_the_users_frames_of_the_last_failed_attempt(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_cli(capsys, "start", "pricing", "--id", "priced", "--state", '{"total": "12.50"}')
    assert status == 0, err
    jobs.run()

    _, out, _ = run_cli(capsys, "show", "priced")
    view = show_json(capsys, "priced")

    assert view["status"] == "error"
    attempts = [record for record in view["phases"] if record["phase"] == "price"]
    assert [record["outcome"] for record in attempts] == ["retry", "error"]
    for record in attempts:
        failure = record["failure"]
        assert failure["type"] == "TypeError"
        assert failure["traceback"].startswith("TypeError: can't multiply sequence by non-int of type 'float'")
        assert re.search(
            rf'File "[^"]*{PRICING_FILE}", line \d+, in _total_with_tax\n    return total \* 1.2', failure["traceback"]
        )
    assert 'Last failure (phase "price", attempt 2): TypeError' in out
    assert "\n  In your code (most recent call last):\n" in out
    assert "in _total_with_tax" in out


def test_a_phase_that_never_failed_shows_no_failure(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "start", "pricing", "--id", "fine", "--state", '{"total": 10}')
    assert status == 0, err
    jobs.run()

    _, out, _ = run_cli(capsys, "show", "fine")
    view = show_json(capsys, "fine")

    assert view["status"] == "complete"
    assert all("failure" not in record for record in view["phases"])
    assert "Last failure" not in out
