"""The local paths a template names (code, layer content, definitions): each must exist beside the template.

A ``CodeUri`` or ``ContentUri`` is a folder (or a ``.zip``), a ``DefinitionUri`` a file, both relative to
the template's folder; S3 locations (``s3://...`` or a mapping) are not checked. A path that the
``.gitignore`` beside the template ignores is a build output (``build/layer/``, which ``make build``
stages before ``sam build``): it need not exist before the build.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from . import serverless

#: Resource type: the property naming a local path, whether it is a folder, and what it should name.
PATHS: dict[str, tuple[str, bool, str]] = {
    serverless.SERVERLESS_FUNCTION: ("CodeUri", True, "the folder of the function's code"),
    "AWS::Serverless::LayerVersion": ("ContentUri", True, "the folder of the layer's content"),
    "AWS::Serverless::StateMachine": ("DefinitionUri", False, "the state machine's definition file"),
    "AWS::Serverless::Api": ("DefinitionUri", False, "the API's OpenAPI file"),
    "AWS::Serverless::HttpApi": ("DefinitionUri", False, "the API's OpenAPI file"),
}


def local(value: Any) -> str | None:
    """``value`` when it is a local path (a string, not ``s3://``); None for an S3 location or an intrinsic."""
    return value if isinstance(value, str) and value and not value.startswith("s3://") else None


def exists(root: Path, value: str, folder: bool) -> bool:
    """Whether ``value`` (relative to ``root``) is a folder or a ``.zip`` (``folder``), or a file."""
    path = root / value
    if folder:
        return path.is_dir() or (path.is_file() and path.suffix == ".zip")
    return path.is_file()


def built(root: Path, value: str) -> bool:
    """Whether the ``.gitignore`` in ``root`` ignores ``value``: a build output, made before the build reads it.

    Its patterns are matched per path segment (``build/``) or, with a ``/`` inside, from ``root``
    (``layers/cairn/build/``); ``!`` (re-include) lines are not read.
    """
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    parts = PurePosixPath(value).parts
    for line in lines:
        pattern = line.strip()
        if not pattern or pattern.startswith(("#", "!")):
            continue
        anchored = "/" in pattern.rstrip("/")
        pattern = pattern.strip("/")
        for depth in range(1, len(parts) + 1):
            candidate = "/".join(parts[:depth]) if anchored else parts[depth - 1]
            if fnmatchcase(candidate, pattern):
                return True
    return False


def code_folder(properties: Mapping[str, Any], root: Path) -> Path | None:
    """The folder a function's (merged) ``CodeUri`` names, when it is a local folder that exists."""
    value = local(properties.get("CodeUri"))
    if value is None or not (root / value).is_dir():
        return None
    return (root / value).resolve()


def _declared(template: Mapping[str, Any]) -> Iterator[tuple[str, str, Any, bool, str]]:
    """``(who, property, value, folder, what)`` for each path property the template sets itself."""
    shared = serverless.global_function(template)
    if "CodeUri" in shared:
        yield ("Globals.Function", *_entry(serverless.SERVERLESS_FUNCTION, shared))
    for logical_id, resource in serverless.resources(template).items():
        kind = resource.get("Type")
        properties = resource.get("Properties")
        if isinstance(kind, str) and kind in PATHS and isinstance(properties, Mapping) and PATHS[kind][0] in properties:
            yield (logical_id, *_entry(kind, properties))


def _entry(kind: str, properties: Mapping[str, Any]) -> tuple[str, Any, bool, str]:
    key, folder, what = PATHS[kind]
    return key, properties[key], folder, what


def problems(template: Mapping[str, Any], root: Path, where: str) -> list[str]:
    """One line per local path of ``template`` (in ``root``, shown as ``where``) that does not exist."""
    found = []
    for who, key, raw, folder, what in _declared(template):
        value = local(raw)
        if value is None or exists(root, value, folder) or built(root, value):
            continue
        kind = "folder" if folder else "file"
        found.append(
            f"{who}.{key}: {kind} {value!r} does not exist (paths are relative to the folder of {where}): "
            f"set {key} to {what}"
        )
    return found
