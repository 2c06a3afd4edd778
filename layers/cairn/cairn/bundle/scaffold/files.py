"""What ``cairn new`` writes, checked before anything is written, and put back on any failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...core.naming import clashes
from .names import PHASES, ScaffoldError, check_name, hides
from .registry import REGISTRY, add_to_registry, inspect_bundle
from .render import render_events, render_init, render_pipeline, render_test


@dataclass(frozen=True)
class Plan:
    """What ``cairn new`` will write: new files and the registry's new text, all checked first."""

    name: str
    module: str
    root: Path
    files: dict[Path, str] = field(default_factory=dict)
    registry_text: str = ""


def plan(name: str, root: Path) -> Plan:
    """Check that pipeline ``name`` can be added to the bundle in ``root`` and prepare every file."""
    module = check_name(name)
    root = root.resolve()
    registry = root / REGISTRY
    if not registry.is_file() or not (root / "template.yaml").is_file():
        raise ScaffoldError(f"{root} is not a cairn bundle: it needs {REGISTRY} and template.yaml (use --root)")
    functions = root / "functions"
    for taken in (functions / module, functions / f"{module}.py", root / "events" / "phases" / name):
        if taken.exists():
            raise ScaffoldError(f"{taken.relative_to(root)} already exists: choose another name")
    registry_text = add_to_registry(registry.read_text(encoding="utf-8"), module)
    bundle = inspect_bundle(root, module)
    if bundle.module_found:
        raise hides(name, module)
    existing = bundle.phases
    if name in {pipeline for pipeline, _ in existing}:
        raise ScaffoldError(f'a pipeline named "{name}" is already registered in {REGISTRY}')
    problems = clashes([*existing, *((name, phase) for phase in PHASES)])
    if problems:
        raise ScaffoldError(f'pipeline "{name}" would clash with a registered one: {problems[0]}')
    files = {
        functions / module / "__init__.py": render_init(name),
        functions / module / "pipeline.py": render_pipeline(name),
        root / "tests" / "pipelines" / f"test_{module}.py": render_test(name),
        **render_events(name, root),
    }
    package = root / "tests" / "pipelines" / "__init__.py"
    if not package.exists():
        files[package] = '"""Tests of the bundle\'s pipelines, one module each."""\n'
    for path in files:
        if path.exists():
            raise ScaffoldError(f"{path.relative_to(root)} already exists: remove it or choose another name")
    return Plan(name, module, root, files, registry_text)


@dataclass(frozen=True)
class Written:
    """What :func:`write` changed: the registry's text before, the files and folders it made."""

    registry_text: str
    files: list[Path]
    folders: list[Path]


def write(plan: Plan) -> Written:
    """Write the plan's files and the registry; on any error put everything back and re-raise."""
    registry = plan.root / REGISTRY
    written = Written(registry.read_text(encoding="utf-8"), [], [])
    try:
        for path, text in plan.files.items():
            for parent in reversed(path.parents):
                if not parent.exists():
                    parent.mkdir()
                    written.folders.append(parent)
            path.write_text(text, encoding="utf-8")
            written.files.append(path)
        registry.write_text(plan.registry_text, encoding="utf-8")
    except BaseException:
        restore(plan, written)
        raise
    return written


def restore(plan: Plan, written: Written) -> None:
    """Undo :func:`write`: the registry's old text back, the new files and folders (and their caches) removed."""
    (plan.root / REGISTRY).write_text(written.registry_text, encoding="utf-8")
    for path in written.files:
        path.unlink(missing_ok=True)
        cache = path.parent / "__pycache__"
        for compiled in cache.glob(f"{path.stem}.*.pyc") if path.suffix == ".py" else ():
            compiled.unlink()
    for folder in reversed(written.folders):
        cache = folder / "__pycache__"
        if cache.is_dir() and not any(cache.iterdir()):
            cache.rmdir()
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
