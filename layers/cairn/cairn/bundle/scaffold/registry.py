"""The bundle's registry, ``functions/pipelines.py``: what it registers, and its text with a new pipeline added."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .names import ScaffoldError

REGISTRY = Path("functions") / "pipelines.py"
REGISTRY_NAME = "PIPELINES"


_INSPECT = f"""\
import importlib.util, json, sys
import pipelines

def found(module):
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return True
    return spec is not None and spec.origin is not None  # a namespace folder (docs/, events/) does not count

phases = [[pipeline.name, pipeline.phase_names] for pipeline in pipelines.{REGISTRY_NAME}]
print(json.dumps({{"phases": phases, "found": found(sys.argv[1])}}))
"""


@dataclass(frozen=True)
class Bundle:
    """What a fresh import of the bundle's registry says: its phases, and whether a module name is taken."""

    phases: list[tuple[str, str]]
    module_found: bool


def inspect_bundle(root: Path, module: str) -> Bundle:
    """Import the registry of the bundle in ``root`` in a fresh interpreter, and look ``module`` up there."""
    done = subprocess.run(
        [sys.executable, "-c", _INSPECT, module],
        cwd=root,
        env={**os.environ, "PYTHONPATH": search_path(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no error message"]
        raise ScaffoldError(f"{REGISTRY} does not import: {lines[-1]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    phases = [(pipeline, phase) for pipeline, names in found["phases"] for phase in names]
    return Bundle(phases, bool(found["found"]))


def search_path(root: Path) -> str:
    """PYTHONPATH for the bundle in ``root``, as the Makefile sets it (functions/, the library, the root).

    The library this command runs from comes next, for a bundle that does not carry it; the caller's
    PYTHONPATH is left out, so what is found is the bundle's own.
    """
    parts = [root / "functions", root / "layers" / "cairn", root, Path(__file__).resolve().parents[3]]
    return os.pathsep.join(str(part) for part in parts)


def add_to_registry(source: str, module: str) -> str:
    """``functions/pipelines.py`` with pipeline package ``module`` added: one import line, one list entry.

    The file must have the layout ``cairn new`` keeps: one ``from <module>.pipeline import pipeline as
    <module>`` line per pipeline, and ``PIPELINES = PipelineRegistry([...])`` with one name per line.
    Lines are found through the syntax tree; any other layout is refused, never guessed at.
    """
    unrecognised = f"{REGISTRY} does not have the layout cairn new edits"
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ScaffoldError(f"{REGISTRY} is not valid Python: {exc.msg} (line {exc.lineno})") from exc
    lines = source.splitlines(keepends=True)
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    pipeline_imports = [node for node in imports if _is_pipeline_import(node)]
    empty = _empty_registry_line(tree, lines)
    if empty is not None and not pipeline_imports:
        return _first_entry(lines, imports, empty, module)
    entries = _registry_entries(tree, lines)
    if entries is None or not pipeline_imports:
        raise ScaffoldError(
            f"{unrecognised}: one 'from <package>.pipeline import pipeline as <package>' line per pipeline and "
            f"'{REGISTRY_NAME} = PipelineRegistry([...])' listing one name per line"
        )
    registered = {node.names[0].asname for node in pipeline_imports}
    if {entry.id for entry in entries} != registered:
        raise ScaffoldError(f"{unrecognised}: the imported pipelines and the {REGISTRY_NAME} list differ")
    if module in registered:
        raise ScaffoldError(f"{REGISTRY} already imports a pipeline package {module!r}")
    entry_line = entries[-1].lineno - 1
    indent = lines[entry_line][: len(lines[entry_line]) - len(lines[entry_line].lstrip())]
    import_line = _import_position(imports, pipeline_imports, module) - 1
    new_lines = [*lines]
    new_lines.insert(entry_line + 1, f"{indent}{module},\n")
    new_lines.insert(import_line, f"from {module}.pipeline import pipeline as {module}\n")
    return "".join(new_lines)


EMPTY_REGISTRY = f"{REGISTRY_NAME} = PipelineRegistry([])"
"""The registry line of a bundle without pipelines (``cairn init --no-example``)."""


def _empty_registry_line(tree: ast.Module, lines: Sequence[str]) -> int | None:
    """The index of the line ``PIPELINES = PipelineRegistry([])``, alone as written; None if there is none."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and lines[node.lineno - 1].strip() == EMPTY_REGISTRY:
            return node.lineno - 1
    return None


def _first_entry(lines: Sequence[str], imports: list[ast.ImportFrom], registry_line: int, module: str) -> str:
    """An empty registry with its first pipeline: the import among the one-line ``from`` imports, the list opened."""
    one_line = [node for node in imports if node.lineno == node.end_lineno and node.module and not node.level]
    if not one_line:
        raise ScaffoldError(f"{REGISTRY} does not import PipelineRegistry: the layout cairn new edits is gone")
    key = _sort_key(f"{module}.pipeline")
    later = [node.lineno for node in one_line if key < _sort_key(node.module or "")]
    import_line = (later[0] if later else one_line[-1].lineno + 1) - 1
    new_lines = [*lines]
    new_lines[registry_line : registry_line + 1] = [
        f"{REGISTRY_NAME} = PipelineRegistry(\n",
        "    [\n",
        f"        {module},\n",
        "    ]\n",
        ")\n",
    ]
    new_lines.insert(import_line, f"from {module}.pipeline import pipeline as {module}\n")
    return "".join(new_lines)


def _is_pipeline_import(node: ast.ImportFrom) -> bool:
    """``from <package>.pipeline import pipeline as <package>`` on one line."""
    if node.level or node.module is None or len(node.names) != 1 or node.lineno != node.end_lineno:
        return False
    package, _, rest = node.module.partition(".")
    alias = node.names[0]
    return rest == "pipeline" and alias.name == "pipeline" and alias.asname == package


def _registry_entries(tree: ast.Module, lines: Sequence[str]) -> list[ast.Name] | None:
    """The names listed in ``PIPELINES = PipelineRegistry([...])``, each alone on its line; None otherwise."""
    found: list[list[ast.Name]] = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Name) and target.id == REGISTRY_NAME):
            continue
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "PipelineRegistry"
            and len(value.args) == 1
            and not value.keywords
            and isinstance(value.args[0], ast.List)
        ):
            return None
        entries = value.args[0].elts
        if not entries or not all(isinstance(entry, ast.Name) for entry in entries):
            return None
        names = [entry for entry in entries if isinstance(entry, ast.Name)]
        if any(lines[entry.lineno - 1].strip() != f"{entry.id}," for entry in names):
            return None
        found.append(names)
    return found[0] if len(found) == 1 else None


def _import_position(imports: list[ast.ImportFrom], pipeline_imports: list[ast.ImportFrom], module: str) -> int:
    """The line number before which the new import goes: sorted among the ``from`` imports of its block."""
    first = pipeline_imports[0]
    block = [node for node in imports if node.lineno == node.end_lineno and node.module and not node.level]
    # The block is the run of one-line imports around the first pipeline import, with no gap between them.
    index = block.index(first)
    start = index
    while start > 0 and block[start - 1].lineno == block[start].lineno - 1:
        start -= 1
    end = index
    while end + 1 < len(block) and block[end + 1].lineno == block[end].lineno + 1:
        end += 1
    run = block[start : end + 1]
    key = _sort_key(f"{module}.pipeline")
    for node in run:
        if key < _sort_key(node.module or ""):
            return node.lineno
    return run[-1].lineno + 1


def _sort_key(module: str) -> list[tuple[int, str]]:
    """isort's natural, case-insensitive order of module names (``demo2`` before ``demo10``)."""
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", module.lower()) if part]
