"""Importing the bundle's code from its functions folder: the registry, and a handler's module.

The folder goes on ``sys.path`` for the import only, and the module's package is imported afresh: one
of the same name imported before (another bundle's, or this one's before an edit) is set aside for the
import and put back after it, so each call sees the folder's code as it is now.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from ...core.registry import PipelineRegistry
from .errors import TemplateError

DEFAULT_REGISTRY = "pipelines:PIPELINES"
DEFAULT_FUNCTIONS = Path("functions")


@contextlib.contextmanager
def _on_path(folder: Path, module_name: str) -> Iterator[None]:
    """``folder`` first on sys.path and ``module_name``'s package imported afresh, for the block only."""
    top = module_name.split(".")[0]

    def package() -> list[str]:
        return [name for name in sys.modules if name == top or name.startswith(f"{top}.")]

    set_aside = {name: sys.modules.pop(name) for name in package()}
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in package():
            del sys.modules[name]
        sys.modules.update(set_aside)


def import_module(functions: Path, module_name: str) -> ModuleType:
    """The module ``module_name`` of the functions folder; TemplateError (with the cause) when it does not import."""
    with _on_path(functions.resolve(), module_name):
        try:
            return importlib.import_module(module_name)
        except BaseException as exc:  # the bundle's code may raise anything, SystemExit included
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise TemplateError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc


def attribute(module: ModuleType, dotted: str) -> Any:
    """``module.<dotted>``; TemplateError when it is missing."""
    target: Any = module
    for part in dotted.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise TemplateError(f"module {module.__name__!r} has no attribute {dotted!r}") from exc
    return target


def load_registry(spec: str = DEFAULT_REGISTRY, functions: Path = DEFAULT_FUNCTIONS) -> PipelineRegistry:
    """The ``PipelineRegistry`` that ``MODULE:ATTR`` names, imported from the functions folder."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise TemplateError(f"invalid registry {spec!r}: expected MODULE:ATTR, e.g. {DEFAULT_REGISTRY}")
    if not functions.is_dir():
        raise TemplateError(f"no functions folder {functions}")
    registry = attribute(import_module(functions, module_name), name)
    if not isinstance(registry, PipelineRegistry):
        raise TemplateError(f"{spec} is a {type(registry).__name__}, not a cairn.core.registry.PipelineRegistry")
    return registry
