"""The folders say what runs where: the core imports no AWS, the layer carries no local tools."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.bundle import layer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "cairn" / "cairn"
#: Folders and modules of the package that are not the core.
AWS = PACKAGE / "aws"
LOCAL_TOOLS = (
    PACKAGE / "testing",
    PACKAGE / "cli.py",
    PACKAGE / "client",
    PACKAGE / "__main__.py",
    PACKAGE / "dev",
    PACKAGE / "bundle",
)
LAYER_LEFT_OUT = tuple(Path(part) for part in layer.LOCAL_ONLY)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute or relative, at any depth (a lazy import counts too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def is_under(path: Path, *roots: Path) -> bool:
    return any(path == root or root in path.parents for root in roots)


def core_modules() -> list[Path]:
    return [path for path in PACKAGE.rglob("*.py") if not is_under(path, AWS, *LOCAL_TOOLS)]


def test_no_core_module_imports_boto3_botocore_or_the_aws_folder() -> None:
    modules = core_modules()
    assert {module_name(path) for path in modules} >= {
        "cairn.core.engine",
        "cairn.core.transitions",
        "cairn.storage.file",
    }
    offenders = {
        module_name(path): sorted(
            name
            for name in imported_modules(path)
            if name.split(".")[0] in ("boto3", "botocore", "mypy_boto3_dynamodb", "moto")
            or name.startswith(("cairn.aws", "cairn.testing"))
        )
        for path in modules
    }
    # The package's front module may name DynamoDBStorage for a lazy export; it never imports it eagerly.
    lazy = offenders.pop("cairn", [])
    assert lazy in ([], ["cairn.aws.dynamodb", "cairn.aws.dynamodb.DynamoDBStorage"])
    assert {name: found for name, found in offenders.items() if found} == {}


def test_nothing_that_runs_in_lambda_imports_the_local_tools() -> None:
    runtime = [path for path in PACKAGE.rglob("*.py") if not is_under(path, *LOCAL_TOOLS)]
    offenders = {
        module_name(path): sorted(
            name
            for name in imported_modules(path)
            if name.startswith(
                (
                    "cairn.testing",
                    "cairn.cli",
                    "cairn.bundle.scaffold",
                    "cairn.bundle.templating",
                    "cairn.dev",
                    "cairn.client",
                )
            )
            or name.split(".")[0] in ("moto", "yaml")
        )
        for path in runtime
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_importing_the_core_loads_no_aws_sdk() -> None:
    code = (
        "import sys, cairn\n"
        "from cairn import Cairn, Pipeline, run_pipeline, MemoryStorage, FileStorage, InlineScheduler\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore'))\n"
        "print(','.join(loaded))\n"
    )
    env = {"PYTHONPATH": str(ROOT / "layers" / "cairn"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == ""


def test_the_layer_leaves_out_every_local_tool_and_keeps_the_runtime(tmp_path: Path) -> None:
    """What layers/Makefile keeps of the installed package (cairn.bundle.layer.prune), on a copy of the source."""
    staged = tmp_path / "python"
    shutil.copytree(PACKAGE, staged / "cairn")
    (staged / "bin").mkdir()
    (staged / "bin" / "cairn").write_text("#!/bin/sh\n")
    layer.prune(staged)

    files = {path.relative_to(staged).as_posix() for path in staged.rglob("*") if path.is_file()}
    assert {"cairn/core/engine/__init__.py", "cairn/aws/dynamodb/__init__.py", "cairn/aws/phase_handler.py"} <= files
    assert not [
        name for name in files if any(Path(name).is_relative_to(Path("cairn") / part) for part in LAYER_LEFT_OUT)
    ]
    assert "cairn/dashboard/assets.py" in files  # the dashboard's files stay: the API may serve them
    assert not [name for name in files if "__pycache__" in name or name.startswith("bin/")]


def test_the_layer_leaves_out_exactly_the_local_tools() -> None:
    """One list: what the layer leaves out is what these tests call the local tools."""
    assert {PACKAGE / part for part in layer.LOCAL_ONLY} == set(LOCAL_TOOLS)


def test_dynamodb_storage_is_available_from_the_package_on_first_use() -> None:
    import cairn
    from cairn.aws.dynamodb import DynamoDBStorage

    assert cairn.DynamoDBStorage is DynamoDBStorage


# The rooms of the package, bottom to top, and the rooms each may import: the design, one table.
# A room is a folder (``core``, ``storage``, ...) or a top-level module (``app``, ``cli``, ...);
# ``__init__`` is the package front, ``cairn`` itself. An arrow not in this table is a finding.
_BASE = ("core",)
_PORTS = ("core", "maps", "features", "storage", "scheduling", "agents")
_LIBRARY = (*_PORTS, "app", "dashboard", "aws")
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "layer_architecture": (),  # stdlib only: the package front imports it first, before any dependency
    "distribution": (),  # stdlib only: the distribution's name and version (cairn --version, cairn init's pin)
    "layer_runtime": (),  # the same, for the layer's runtime
    "core": (),
    "maps": _BASE,  # the map phase kind: plugs into the core's run hooks
    "features": ("core", "maps"),  # run-level features: plug into the core's run hooks, after the maps'
    "storage": ("core", "features"),  # a store keeps each job's cost figure (features.cost) for its cost order
    "scheduling": _BASE,
    "agents": _BASE,
    "app": _PORTS,
    "adapters": _PORTS,  # what an adapter's author imports: nothing in the package imports it
    "dashboard": ("core",),
    "aws": (*_PORTS, "app", "dashboard"),
    # aws only lazily: DynamoDBStorage on first use
    "__init__": ("layer_architecture", "layer_runtime", *_PORTS, "app", "aws"),
    "testing": _LIBRARY,
    "bundle": (*_LIBRARY, "distribution"),
    "dev": (*_LIBRARY, "testing", "bundle"),
    "client": (*_LIBRARY, "testing", "bundle", "dev"),
    "cli": (*_LIBRARY, "distribution", "testing", "bundle", "dev", "client"),
    "__main__": ("cli",),
}
#: The entry points: the only modules that may import the package front ``cairn``.
ENTRY_POINTS = ("cli", "__main__")
#: The files ``cairn init`` copies into a new bundle: the user's code, which imports ``cairn`` as users do.
SKELETON = PACKAGE / "bundle" / "skeleton"


def room_of(module: str) -> str | None:
    """The room of a module of the package (``cairn.core.engine`` -> ``core``); None outside the package."""
    parts = module.split(".")
    if parts[0] != "cairn":
        return None
    if len(parts) == 1 or parts[1] not in MAY_IMPORT:
        return "__init__"  # ``cairn`` itself, or a name taken from it (``from cairn import Done``)
    return parts[1]


def library_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if not is_under(path, SKELETON))


def room_imports() -> dict[tuple[str, str], list[str]]:
    """Every arrow between two rooms, with the imports that draw it (``file: module``)."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for path in library_modules():
        source = room_of(module_name(path))
        assert source is not None
        for name in sorted(imported_modules(path)):
            target = room_of(name)
            if target is not None and target != source:
                arrows.setdefault((source, target), []).append(f"{path.relative_to(PACKAGE.parent)}: {name}")
    return arrows


def test_the_table_names_every_room_of_the_package() -> None:
    rooms = {path.stem for path in PACKAGE.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
    assert rooms == set(MAY_IMPORT)
    assert all(set(allowed) <= set(MAY_IMPORT) for allowed in MAY_IMPORT.values())


def test_the_table_has_no_circle() -> None:
    order = list(MAY_IMPORT)  # bottom to top: a room may import only rooms listed before it
    assert {
        room: [other for other in allowed if order.index(other) >= order.index(room)]
        for room, allowed in MAY_IMPORT.items()
    } == {room: [] for room in MAY_IMPORT}


def test_every_import_between_rooms_points_down_the_table() -> None:
    upward = [
        f"{where} imports {target!r} from room {source!r}: {source!r} may import only {MAY_IMPORT[source]}"
        for (source, target), found in room_imports().items()
        if target not in MAY_IMPORT[source]
        for where in found
    ]
    assert upward == []


def test_no_two_rooms_import_each_other_even_through_others() -> None:
    arrows = room_imports()
    graph: dict[str, set[str]] = {}
    for source, target in arrows:
        graph.setdefault(source, set()).add(target)

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph.get(start, ()))
        while todo:
            room = todo.pop()
            if room not in seen:
                seen.add(room)
                todo.extend(graph.get(room, ()))
        return seen

    circles = sorted(
        f"rooms {source!r} and {target!r} import each other: {arrows[source, target][0]}"
        for source, target in arrows
        if source in reaches(target)
    )
    assert circles == []


def test_no_library_module_imports_the_package_front() -> None:
    """``cairn`` (its __init__) is for users and the entry points; a library module imports the module it needs."""
    offenders = [
        f"{path.relative_to(PACKAGE.parent)} imports {name!r}: only the entry points {ENTRY_POINTS} import the front"
        for path in library_modules()
        if room_of(module_name(path)) not in (*ENTRY_POINTS, "__init__")
        for name in sorted(imported_modules(path))
        if room_of(name) == "__init__"
    ]
    assert offenders == []


#: The most lines a module of the library may have: a module that outgrows it holds more than one job.
MODULE_LINES = 500


def test_no_library_module_is_over_the_size_of_one_job() -> None:
    sizes = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert len(sizes) > 100  # the whole package was read
    assert {name: lines for name, lines in sizes.items() if lines > MODULE_LINES} == {}


def module_imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports, each import resolved to the module that defines the name (``from .
    import schema`` is ``schema``'s module; ``from .models import Job`` is ``models``); type-only and lazy ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    package = me.rsplit(".", 1)[0] if path.name != "__init__.py" else me

    def defining(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(defining(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else defining(target))
    return {name for name in found if name is not None and name != me}


def circles_within_rooms() -> list[list[str]]:
    """Each group of modules of one room that import one another, round and back (strongly connected, 2 or more)."""
    paths = {module_name(path): path for path in library_modules()}
    graph = {
        name: sorted(other for other in module_imports(path, set(paths)) if room_of(other) == room_of(name))
        for name, path in paths.items()
    }
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        order[name] = lowest[name] = len(order)
        stack.append(name)
        for other in graph[name]:
            if other not in order:
                visit(other)
                lowest[name] = min(lowest[name], lowest[other])
            elif other in stack:
                lowest[name] = min(lowest[name], order[other])
        if lowest[name] == order[name]:
            group: list[str] = []
            while not group or group[-1] != name:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for name in sorted(graph):
        if name not in order:
            visit(name)
    return circles


def test_no_two_modules_of_a_room_import_each_other_type_only_imports_included() -> None:
    """A circle between files hides inside a folder (the rooms above see folders); a ``Protocol`` in the lower
    file, or the shared part moved down, breaks it."""
    assert circles_within_rooms() == []


def test_a_circle_between_two_files_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "cairn"
    (package / "core").mkdir(parents=True)
    for name, text in {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/upper.py": "from .lower import LIMIT\n",
        "core/lower.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .upper import Thing\n",
        "core/alone.py": "from . import lower\n",
    }.items():
        (package / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    monkeypatch.setattr(sys.modules[__name__], "SKELETON", package / "bundle" / "skeleton")

    assert circles_within_rooms() == [["cairn.core.lower", "cairn.core.upper"]]
