"""The phases a pipeline's code runs as a map's items: read from its phases' source, before any job has mapped.

A phase returns ``Map(items, phase="extract_page", then="publish")``: ``extract_page`` is an item phase,
whatever a job's history says (a job that has not reached its map yet, one that took another branch). Only
names written as literals in a ``Map(...)`` call are found; a name computed at run time is known from the
records of the maps a job ran (:mod:`.map_reruns`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import Pipeline


@dataclass(frozen=True)
class MapCall:
    """A ``Map(...)`` call in a module: the function it is written in (top level), its item phase and ``then``."""

    function: str | None
    phase: str
    then: str | None


@dataclass(frozen=True)
class ItemPhase:
    """A phase the code runs as a map's items: the phase whose code returns the map, and the map's ``then``."""

    phase: str
    started_by: str | None
    then: str | None


def pipeline_item_phases(pipeline: Pipeline[Any]) -> dict[str, ItemPhase]:
    """The item phases of ``pipeline``'s code (:func:`item_phases` over its phases)."""
    return item_phases((name, pipeline.get_phase(name).run) for name in pipeline.phase_names)


def item_phases(phases: Iterable[tuple[str, Callable[..., Any]]]) -> dict[str, ItemPhase]:
    """The item phases that the code of ``phases`` (each a phase's name and its function) names in ``Map(...)``.

    A module whose source cannot be read (no file) names none.
    """
    named = dict(phases)
    by_function: dict[tuple[str, str], str] = {}
    for name, run in named.items():  # a function registered twice is the first phase's
        by_function.setdefault((getattr(run, "__module__", ""), getattr(run, "__name__", "")), name)
    found: dict[str, ItemPhase] = {}
    for module in sorted({getattr(run, "__module__", "") or "" for run in named.values()}):
        for call in _map_calls(module):
            if call.phase in named:
                started_by = by_function.get((module, call.function or ""))
                found.setdefault(call.phase, ItemPhase(call.phase, started_by, call.then))
    return found


def _map_calls(module_name: str) -> tuple[MapCall, ...]:
    """The ``Map(...)`` calls of module ``module_name`` that name their item phase as a literal."""
    module = sys.modules.get(module_name)
    if module is None:
        return ()
    try:
        source = inspect.getsource(module)  # read again when the file changed (a reloaded module)
    except (OSError, TypeError):
        return ()
    return _calls_in(source)


@functools.lru_cache(maxsize=64)
def _calls_in(source: str) -> tuple[MapCall, ...]:
    """The ``Map(...)`` calls of a module's ``source`` that name their item phase as a literal (parsed once)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    calls: list[MapCall] = []
    for top in tree.body:
        function = top.name if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef) else None
        for node in ast.walk(top):
            if isinstance(node, ast.Call) and _is_map(node.func):
                phase = _argument(node, "phase", 1)
                if phase is not None:
                    calls.append(MapCall(function, phase, _argument(node, "then", 2)))
    return tuple(calls)


def _is_map(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "Map") or (isinstance(func, ast.Attribute) and func.attr == "Map")


def _argument(call: ast.Call, keyword: str, position: int) -> str | None:
    """The string literal passed as ``keyword`` (or at ``position``); None when it is not a literal."""
    value: ast.expr | None = next((item.value for item in call.keywords if item.arg == keyword), None)
    if value is None and len(call.args) > position:
        value = call.args[position]
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
