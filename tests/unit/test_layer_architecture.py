"""A layer built for one architecture refuses to load on the other, naming both and the fix, on Lambda only."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.layer_architecture import MARKER, check

LAMBDA = {"AWS_LAMBDA_FUNCTION_NAME": "cairn-prod-api"}


def built_for(tmp_path: Path, architecture: str) -> Path:
    (tmp_path / MARKER).write_text(f"{architecture}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("built", "machine"), [("x86_64", "aarch64"), ("arm64", "x86_64")])
def test_a_function_on_the_other_architecture_refuses_the_layer_naming_both(
    tmp_path: Path, built: str, machine: str
) -> None:
    running = {"aarch64": "arm64", "x86_64": "x86_64"}[machine]
    with pytest.raises(ImportError) as refused:
        check(LAMBDA, lambda: machine, built_for(tmp_path, built))
    message = str(refused.value)
    assert f"built for {built}, but this function runs on {running}" in message
    assert f"--parameter-overrides Architecture={running}" in message
    assert f"cairn init --arch {running}" in message


@pytest.mark.parametrize(
    ("environ", "machine", "marker"),
    [
        (LAMBDA, "aarch64", "arm64"),  # the same architecture
        (LAMBDA, "x86_64", "x86_64"),
        ({}, "x86_64", "arm64"),  # not on Lambda: a laptop importing a layer folder, say
        (LAMBDA, "riscv64", "arm64"),  # a machine Lambda does not run: nothing to compare
        (LAMBDA, "x86_64", "sparc"),  # a marker that names nothing known
        (LAMBDA, "x86_64", None),  # no marker: cairn from PyPI or the source tree
    ],
)
def test_otherwise_it_checks_nothing(tmp_path: Path, environ: dict[str, str], machine: str, marker: str | None) -> None:
    folder = built_for(tmp_path, marker) if marker else tmp_path
    check(environ, lambda: machine, folder)
