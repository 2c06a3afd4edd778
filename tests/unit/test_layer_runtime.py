"""A layer built for one Lambda runtime refuses to load under another Python, naming both and the fix, on Lambda
only (the layer's compiled dependencies and bytecode are for one Python)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.layer_runtime import MARKER, check

LAMBDA = {"AWS_LAMBDA_FUNCTION_NAME": "cairn-prod-api"}


def built_for(tmp_path: Path, runtime: str | None) -> Path:
    if runtime is not None:
        (tmp_path / MARKER).write_text(f"{runtime}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("built", "running"), [("python3.12", "python3.13"), ("python3.13", "python3.12")])
def test_a_function_on_another_runtime_refuses_the_layer_naming_both(tmp_path: Path, built: str, running: str) -> None:
    with pytest.raises(ImportError) as refused:
        check(LAMBDA, running, built_for(tmp_path, built))
    message = str(refused.value)
    assert f"built for {built}, but this function runs on {running}" in message
    assert "Globals: Function: Runtime" in message


@pytest.mark.parametrize(
    ("environ", "running", "marker"),
    [
        (LAMBDA, "python3.13", "python3.13"),  # the runtime it was built for
        ({}, "python3.13", "python3.12"),  # not on Lambda: a laptop importing a layer folder, say
        (LAMBDA, "python3.13", "nonsense"),  # a marker that names no runtime
        (LAMBDA, "python3.13", None),  # no marker: cairn from the package index or the source tree
    ],
)
def test_otherwise_it_checks_nothing(tmp_path: Path, environ: dict[str, str], running: str, marker: str | None) -> None:
    check(environ, running, built_for(tmp_path, marker))
