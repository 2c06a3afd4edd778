"""The local stack (``cairn dev``) on free ports, one per driver and one per scratch project, per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local.devstack import DevStack, dev_stack, scratch_project


@pytest.fixture(scope="module")
def direct_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev`` on this bundle's template.yaml, direct driver."""
    log = tmp_path_factory.mktemp("dev-direct") / "dev.log"
    with dev_stack(log, "--driver", "direct") as stack:
        yield stack


@pytest.fixture(scope="module")
def stepfunctions_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev`` on this bundle's template.yaml, stepfunctions driver."""
    log = tmp_path_factory.mktemp("dev-sfn") / "dev.log"
    with dev_stack(log, "--driver", "stepfunctions") as stack:
        yield stack


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundle with the ``sleepy`` pipeline (tests/local/sleepy_pipeline.py) synced into its template."""
    return scratch_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def sleepy_stack(scratch: Path) -> Iterator[DevStack]:
    """``cairn dev`` on the scratch project, reloading on change."""
    with dev_stack(scratch / "dev.log", "--reload", cwd=scratch) as stack:
        yield stack


@pytest.fixture(scope="module")
def napping_scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundle with the ``napping`` pipeline (tests/local/napping_pipeline.py) synced into its template."""
    return scratch_project(tmp_path_factory.mktemp("napping"), ("napping",))


@pytest.fixture(scope="module")
def skipping_stack(napping_scratch: Path) -> Iterator[DevStack]:
    """``cairn dev --skip-waits`` on the napping scratch project, direct driver."""
    with dev_stack(napping_scratch / "dev.log", "--driver", "direct", "--skip-waits", cwd=napping_scratch) as stack:
        yield stack
