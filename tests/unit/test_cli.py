"""The ``cairn`` command, run as ``python -m cairn`` in a subprocess from a directory of user code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
from cairn import Done, Next, Pipeline, RetryPolicy

pipeline = Pipeline("orders", aliases={"fetch": "load"})


@pipeline.phase
def load(ctx):
    return Next("charge", ctx.state)


@pipeline.phase(retry=RetryPolicy(max_attempts=3), timeout=60, lease_seconds=60)
def charge(ctx):
    return Next("ship", ctx.state)


@pipeline.phase(name="ship", retry=RetryPolicy(max_attempts=5, backoff=2.0))
def ship_it(ctx):
    return Done({"shipped": True})


empty = Pipeline("empty")
not_a_pipeline = {"name": "orders"}
"""


def cairn(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``python -m cairn ARGUMENTS`` in ``cwd``, with the library on PYTHONPATH (as in the layer)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")}
    return subprocess.run(
        [sys.executable, "-m", "cairn", *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "orders.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "broken.py").write_text("import cairn\nraise RuntimeError('no database configured')\n")
    (tmp_path / "typo.py").write_text("def f(:\n")
    return tmp_path


def test_version_prints_the_distribution_s_name_and_its_version(tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "layers" / "cairn" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    done = cairn(tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"cairn-lambda {project['version']}"
    assert project["name"] == "cairn-lambda"


def test_validate_pipeline_lists_the_phases_in_order_from_the_current_directory(project: Path) -> None:
    done = cairn(project, "validate-pipeline", "orders:pipeline")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        'pipeline "orders": 3 phases',
        "  1. load (max_attempts=1, lease_seconds=150, initial)",
        "  2. charge (max_attempts=3, lease_seconds=60)",
        "  3. ship (max_attempts=5, lease_seconds=150)",
        "  alias fetch -> load",
    ]


def test_validate_pipeline_loads_no_aws_sdk(project: Path) -> None:
    code = (
        "import sys\n"
        "from cairn.cli import main\n"
        "assert main(['validate-pipeline', 'orders:pipeline']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'cairn'}{os.pathsep}{project}"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("orders.pipeline", "invalid pipeline 'orders.pipeline': expected MODULE:ATTR"),
        ("orders:", "invalid pipeline 'orders:': expected MODULE:ATTR"),
        ("no_such_module:pipeline", "cannot import module 'no_such_module': ModuleNotFoundError: No module named"),
        ("broken:pipeline", "cannot import module 'broken': RuntimeError: no database configured"),
        ("typo:pipeline", "cannot import module 'typo': SyntaxError:"),
        ("orders:missing", "module 'orders' has no attribute 'missing'"),
        ("orders:not_a_pipeline", "'orders:not_a_pipeline' is a dict, not a cairn.Pipeline"),
        ("orders:empty", 'pipeline "empty" (orders:empty) has no phases'),
    ],
)
def test_validate_pipeline_errors_are_one_line_on_stderr_with_status_2(project: Path, spec: str, message: str) -> None:
    done = cairn(project, "validate-pipeline", spec)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("cairn: error: ")
    assert message in done.stderr


def test_no_command_prints_the_usage_and_exits_2(tmp_path: Path) -> None:
    done = cairn(tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: cairn")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("validate-pipeline",), "cairn validate-pipeline: error: the following arguments are required: MODULE:ATTR"),
        (("no-such-command",), "cairn: error: argument COMMAND: invalid choice: 'no-such-command'"),
    ],
)
def test_usage_errors_are_one_line_on_stderr_with_status_2(
    tmp_path: Path, arguments: tuple[str, ...], message: str
) -> None:
    done = cairn(tmp_path, *arguments)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr
