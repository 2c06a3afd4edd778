"""A bundle's pipelines, imported as a function needs them: one package per pipeline, by the name rule.

``cairn new NAME`` puts pipeline ``NAME`` in the package ``NAME`` with ``_`` for ``-``, its ``pipeline`` module
defining ``pipeline``; the bundle's registry module (``pipelines.py``) imports them all into ``PIPELINES``. A
Lambda function that serves one pipeline per event (a phase function, the scheduler) imports only the pipelines
its events name, so its cold start does not grow with the bundle. Only a package beside the registry module
is imported so (a name in an event never imports an installed library's ``pipeline`` module); a pipeline kept
elsewhere is found in the registry, which is then imported whole.
"""

from __future__ import annotations

import importlib
import importlib.util
import keyword
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core import naming
from ..core.errors import ConfigurationError
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from ..core.settings import PIPELINE


def bundle_home(registry_module: str) -> Path | None:
    """The folder of the bundle's registry module, found without importing it (None: no such module)."""
    try:
        spec = importlib.util.find_spec(registry_module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).resolve().parent if spec is not None and spec.origin else None


def pipeline_by_package(name: str, home: Path | None) -> Pipeline[Any] | None:
    """Pipeline ``name`` from its own package in ``home`` (``<package>.pipeline``'s ``pipeline``); None where there
    is none.

    A name no bundle package could have (a path, a dotted or reserved name), or whose package is not a folder
    of ``home``, is never imported. A module the pipeline's own code imports and lacks is the user's error,
    raised as it is.
    """
    package = naming.module_name(name)
    if home is None or not package.isidentifier() or keyword.iskeyword(package):
        return None
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or Path(spec.origin).resolve().parent.parent != home:
        return None
    try:
        module = importlib.import_module(f"{package}.pipeline")
    except ModuleNotFoundError as exc:
        if exc.name not in (package, f"{package}.pipeline"):
            raise
        return None
    found = getattr(module, "pipeline", None)
    return found if isinstance(found, Pipeline) and found.name == name else None


def bundle_registry(registry_module: str) -> PipelineRegistry:
    """``registry_module``'s ``PIPELINES`` (every pipeline of the bundle, imported)."""
    registry = getattr(importlib.import_module(registry_module), "PIPELINES", None)
    if not isinstance(registry, PipelineRegistry):
        raise ConfigurationError(f"Module {registry_module!r} defines no PIPELINES registry")
    return registry


def own_pipelines(registry_module: str = "pipelines", environ: Mapping[str, str] | None = None) -> PipelineRegistry:
    """The pipelines a phase function needs: its own alone, when the bundle's layout gives it; else the registry.

    ``CAIRN_PIPELINE`` names the function's pipeline (:func:`pipeline_by_package`); a pipeline kept elsewhere is
    found in ``registry_module``'s ``PIPELINES``, which imports them all.
    """
    env = os.environ if environ is None else environ
    found = pipeline_by_package(env.get(PIPELINE, ""), bundle_home(registry_module))
    return PipelineRegistry([found]) if found is not None else bundle_registry(registry_module)


class BundlePipelines(PipelineRegistry):
    """The bundle's pipelines, each imported on its first lookup by name (:func:`pipeline_by_package`).

    A name the layout does not give, a listing of every pipeline or their names import the whole registry
    (``registry_module``'s ``PIPELINES``) and answer from it.
    """

    def __init__(self, registry_module: str = "pipelines") -> None:
        super().__init__([])
        self._registry_module = registry_module
        self._home = bundle_home(registry_module)
        self._found: dict[str, Pipeline[Any]] = {}
        self._whole: PipelineRegistry | None = None

    def _registry(self) -> PipelineRegistry:
        if self._whole is None:
            self._whole = bundle_registry(self._registry_module)
        return self._whole

    def get(self, name: str) -> Pipeline[Any]:
        """The pipeline called ``name``: from its package, else the registry (an unknown name is a clear error)."""
        pipeline = self._found.get(name)
        if pipeline is None:
            pipeline = pipeline_by_package(name, self._home) if self._whole is None else None
            if pipeline is None:
                pipeline = self._registry().get(name)
            self._found[name] = pipeline
        return pipeline

    def __iter__(self) -> Iterator[Pipeline[Any]]:
        return iter(self._registry())

    @property
    def names(self) -> list[str]:
        """The names of every pipeline of the bundle."""
        return self._registry().names
