"""What ``cairn init`` ships is this repository's own layer build, entry points, settings and template."""

from __future__ import annotations

import pytest

from tests.bundle.skeleton import COPIES, ENV_VARS, ROOT, SKELETON, TEMPLATE, expected_env_vars, expected_template

FIX = "run `make skeleton` (python -m tests.bundle.skeleton) to ship this repository's file again"


@pytest.mark.parametrize("relative", COPIES)
def test_the_shipped_file_is_the_repository_s(relative: str) -> None:
    assert (SKELETON / relative).read_bytes() == (ROOT / relative).read_bytes(), f"{relative} differs: {FIX}"


def test_the_shipped_template_is_this_one_without_its_pipelines() -> None:
    shipped = (SKELETON / TEMPLATE).read_text(encoding="utf-8")
    assert shipped == expected_template(), f"{TEMPLATE} differs: {FIX}"
    for sample_only in ("DocumentsBucket", "AgentModelId", "HasDocumentsBucket", "HasAgentModel", "document-intake"):
        assert sample_only not in shipped


def test_the_shipped_env_vars_are_the_repository_s_shared_ones() -> None:
    assert (SKELETON / ENV_VARS).read_text(encoding="utf-8") == expected_env_vars(), f"{ENV_VARS} differs: {FIX}"
