"""The test kit (cairn.testing.plugin): the README's "Testing your pipeline" example runs verbatim, and its parts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cairn import Cairn, Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.testing.plugin import SimulatedCrash, SkippingClock, crash_on

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The code block of the README's "Testing your pipeline" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Testing your pipeline", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return str(block)


def test_the_readme_example_runs_verbatim_as_a_users_test(tmp_path: Path) -> None:
    (tmp_path / "test_invoice.py").write_text(readme_example())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "cairn.testing.plugin",
            "-p",
            "no:cacheprovider",
            "test_invoice.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 passed" in run.stdout
    assert len(readme_example().strip().splitlines()) <= 25  # a user's test with a crash and a resume stays short


def test_retry_backoffs_take_no_real_time(cairn_local: Callable[..., Cairn], cairn_clock: SkippingClock) -> None:
    failures = [True, True]
    pipeline: Pipeline[dict[str, int]] = Pipeline("flaky")

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=3600.0, max_delay=7200.0, jitter=False))
    def call(ctx: PhaseContext[dict[str, int]]) -> Done:
        if failures.pop(0) if failures else False:
            raise RuntimeError("the service is down")
        return Done({"attempt": ctx.attempt})

    app = cairn_local(pipeline)
    started = cairn_clock()
    app.start(pipeline, "job-1")
    app.run_until_idle()

    job = app.get("job-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"attempt": 3}
    assert cairn_clock() - started >= 2 * 3600 * 1000  # two hour-long backoffs, skipped


def test_crash_on_dies_at_the_chosen_call_and_the_job_resumes(cairn_local: Callable[..., Cairn]) -> None:
    ran: list[str] = []
    pipeline: Pipeline[dict[str, int]] = Pipeline("two")

    @pipeline.phase
    def first(ctx: PhaseContext[dict[str, int]]) -> Next:
        ran.append("first")
        return Next("second", {"n": 1})

    @pipeline.phase
    def second(ctx: PhaseContext[dict[str, int]]) -> Done:
        ran.append("second")
        return Done(ctx.state)

    storage = crash_on("commit", nth=1)
    app = cairn_local(pipeline, storage=storage)
    app.start(pipeline, "job-1")
    with pytest.raises(SimulatedCrash, match="commit #1"):
        app.run_until_idle()
    assert storage.crashed
    checkpoint = app.get("job-1").checkpoint
    assert checkpoint is not None
    assert checkpoint.next_phase == "first"  # the commit never happened

    app.retry("job-1")
    app.run_until_idle()
    assert app.get("job-1").result == {"n": 1}
    assert ran == ["first", "first", "second"]
