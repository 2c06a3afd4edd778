"""The test kit (cairn.testing.plugin): the examples of docs/guides/testing.md run verbatim, and its parts."""

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


def readme_examples() -> list[str]:
    """The python blocks of the testing guide (docs/guides/testing.md), in order."""
    text = (ROOT / "docs" / "guides" / "testing.md").read_text()
    return [str(block) for block in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)]


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest run in ``project`` as a user runs it: the test kit comes from the installed cairn's pytest11 entry
    point, with none of this repository's tests or settings."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "POWERTOOLS_"))}
    env["PYTHONPATH"] = str(ROOT / "layers" / "cairn")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)


def test_the_readme_examples_run_verbatim_as_a_users_tests(tmp_path: Path) -> None:
    examples = readme_examples()
    assert len(examples) >= 2  # a crash and a resume; the API as two owners
    for number, example in enumerate(examples):
        (tmp_path / f"test_example_{number}.py").write_text(example)

    run = run_pytest(tmp_path)

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tests = sum(example.count("\ndef test_") for example in examples)
    assert f"{tests} passed" in run.stdout


def test_a_users_test_of_a_crash_and_a_resume_fits_in_15_lines() -> None:
    crash_and_resume = readme_examples()[0]
    assert "crash_on(" in crash_and_resume
    assert ".retry(" in crash_and_resume
    assert len([line for line in crash_and_resume.splitlines() if line.strip()]) <= 15


def test_the_plugin_loads_without_the_dev_extra_and_its_aws_fixtures_say_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(
        "from cairn import Done, Pipeline\n"
        "pipeline = Pipeline('one')\n"
        "pipeline.phase(name='only')(lambda ctx: Done(ctx.state))\n"
        "def test_on_memory(cairn_local):\n"
        "    app = cairn_local(pipeline)\n"
        "    app.start(pipeline, 'j-1', state={'n': 1})\n"
        "    app.run_until_idle()\n"
        "    assert app.get('j-1').result == {'n': 1}\n"
        "def test_on_dynamodb(cairn_dynamodb):\n"
        "    pass\n"
    )
    core_install = (  # boto3, botocore and moto cannot be imported, as on an install without the extras
        "import sys\n"
        "for name in ('boto3', 'botocore', 'moto'):\n"
        "    sys.modules[name] = None\n"
        "import pytest\n"
        "sys.exit(pytest.main(['-q', '-p', 'cairn.testing.plugin', '-p', 'no:cacheprovider', 'test_user.py']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    run = subprocess.run(
        [sys.executable, "-c", core_install], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )

    assert "1 passed, 1 error" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    assert 'cairn_aws needs moto and boto3: pip install "cairn-lambda[dev]"' in run.stdout


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
