"""A phase function imports its own pipeline's code alone, not every pipeline of its bundle; the scheduler imports
each pipeline when an event first names it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from cairn.aws.bundle_pipelines import BundlePipelines
from cairn.aws.phase_handler import own_pipelines
from cairn.core.errors import ConfigurationError, InvalidInputError

PIPELINE_MODULE = """
from cairn import Done, Pipeline

pipeline = Pipeline({name!r})

@pipeline.phase
def only(ctx):
    return Done()
"""


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundle's functions/ folder with pipelines ``own-alpha`` and ``own-beta`` and its registry module."""
    for name in ("own-alpha", "own-beta"):
        package = tmp_path / name.replace("-", "_")
        package.mkdir()
        (package / "__init__.py").write_text("")
        (package / "pipeline.py").write_text(PIPELINE_MODULE.format(name=name))
    (tmp_path / "own_registry.py").write_text(
        textwrap.dedent(
            """
            from cairn.core.registry import PipelineRegistry
            from own_alpha.pipeline import pipeline as own_alpha
            from own_beta.pipeline import pipeline as own_beta

            PIPELINES = PipelineRegistry([own_alpha, own_beta])
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in [
        name for name in sys.modules if name.startswith(("own_alpha", "own_beta", "own_registry", "outside"))
    ]:
        monkeypatch.delitem(sys.modules, module)
    return tmp_path


def test_a_phase_function_imports_its_own_pipeline_alone(bundle: Path) -> None:
    registry = own_pipelines("own_registry", environ={"CAIRN_PIPELINE": "own-alpha"})

    assert registry.names == ["own-alpha"]
    assert "own_alpha.pipeline" in sys.modules
    assert "own_beta.pipeline" not in sys.modules
    assert "own_registry" not in sys.modules


def test_a_pipeline_kept_under_another_package_is_found_in_the_registry(bundle: Path) -> None:
    (bundle / "own_alpha" / "pipeline.py").write_text(PIPELINE_MODULE.format(name="renamed"))

    registry = own_pipelines("own_registry", environ={"CAIRN_PIPELINE": "own-alpha"})

    assert registry.names == ["own-beta", "renamed"]  # the name matched no package's pipeline: the whole registry


def test_without_a_pipeline_named_the_registry_is_used_and_a_missing_one_is_a_clear_error(bundle: Path) -> None:
    assert own_pipelines("own_registry", environ={}).names == ["own-alpha", "own-beta"]
    (bundle / "empty_registry.py").write_text("")
    with pytest.raises(ConfigurationError, match="defines no PIPELINES registry"):
        own_pipelines("empty_registry", environ={"CAIRN_PIPELINE": "nowhere"})


def test_an_import_error_inside_the_pipelines_own_code_is_not_hidden(bundle: Path) -> None:
    (bundle / "own_alpha" / "pipeline.py").write_text("import a_module_nobody_installed\n")

    with pytest.raises(ModuleNotFoundError, match="a_module_nobody_installed"):
        own_pipelines("own_registry", environ={"CAIRN_PIPELINE": "own-alpha"})


@pytest.mark.parametrize("name", ["../own_alpha", "own.alpha", "class", " own-alpha", "os"])
def test_a_name_no_bundle_package_could_have_reads_the_registry(bundle: Path, name: str) -> None:
    assert own_pipelines("own_registry", environ={"CAIRN_PIPELINE": name}).names == ["own-alpha", "own-beta"]


def test_the_scheduler_imports_each_pipeline_when_an_event_first_names_it(bundle: Path) -> None:
    pipelines = BundlePipelines("own_registry")
    assert not {"own_alpha.pipeline", "own_beta.pipeline", "own_registry"} & set(sys.modules)

    alpha = pipelines.get("own-alpha")
    assert alpha.name == "own-alpha"
    assert pipelines.get("own-alpha") is alpha
    assert "own_alpha.pipeline" in sys.modules
    assert "own_beta.pipeline" not in sys.modules
    assert "own_registry" not in sys.modules

    assert pipelines.names == ["own-alpha", "own-beta"]  # every pipeline: the whole registry
    assert [pipeline.name for pipeline in pipelines] == ["own-alpha", "own-beta"]
    assert pipelines.get("own-beta").name == "own-beta"
    with pytest.raises(InvalidInputError, match='Unknown pipeline "nowhere"'):
        pipelines.get("nowhere")


def test_a_name_never_imports_a_package_from_outside_the_bundle(
    bundle: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed library with a ``pipeline`` module (or a pipeline of that name kept elsewhere) is left alone."""
    elsewhere = tmp_path_factory.mktemp("site")
    (elsewhere / "outside_lib").mkdir()
    (elsewhere / "outside_lib" / "__init__.py").write_text("")
    (elsewhere / "outside_lib" / "pipeline.py").write_text(PIPELINE_MODULE.format(name="outside-lib"))
    monkeypatch.syspath_prepend(str(elsewhere))

    with pytest.raises(InvalidInputError, match='Unknown pipeline "outside-lib"'):
        BundlePipelines("own_registry").get("outside-lib")
    assert own_pipelines("own_registry", environ={"CAIRN_PIPELINE": "outside-lib"}).names == ["own-alpha", "own-beta"]
    assert "outside_lib.pipeline" not in sys.modules
