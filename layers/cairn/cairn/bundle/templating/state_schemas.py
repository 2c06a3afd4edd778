"""The state schemas a bundle records, so that a state model change needs a ``state_version`` bump.

``cairn template sync`` records the JSON schema of each pipeline's state model under its
``state_version`` in ``state-schemas.json`` beside template.yaml (``{pipeline: {version: schema}}``, a file
to commit). ``cairn template check`` compares each model's schema now with the one recorded for the same
version: a change that a state saved before cannot survive (a property removed or renamed, its type
changed, a property newly required, an enum narrowed) is reported, naming the pipeline and the field:
bump ``state_version`` and add a migration (:mod:`cairn.core.migrations`). A compatible change (a new
optional property, a description) passes, and the next sync records it. A version bumped past the
newest one recorded needs a migration from each version in between; one missing is reported.

Pipelines without a pydantic state model (plain JSON state) are not recorded. Without the file
nothing is compared; a sync writes it. The sync refuses to record an incompatible schema over the
recorded one, so the check keeps failing until the version is bumped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...core.pipeline import Pipeline
from ...core.registry import PipelineRegistry
from .errors import TemplateError

SCHEMAS_FILE = "state-schemas.json"
#: What every incompatible change is told to do.
BUMP = "bump state_version and add a migration"

Schema = Mapping[str, Any]
Recorded = dict[str, dict[str, Any]]


def schemas_path(template: Path) -> Path:
    """The state schemas file of the bundle whose template is ``template``."""
    return template.parent / SCHEMAS_FILE


def state_schema(pipeline: Pipeline[Any]) -> dict[str, Any] | None:
    """The JSON schema of the pipeline's state model (as states are validated); None without a pydantic model."""
    model = pipeline.state_model
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    try:
        return model.model_json_schema(mode="validation")
    except Exception as exc:  # a field of a type JSON schema cannot describe
        raise TemplateError(f'pipeline "{pipeline.name}": its state model has no JSON schema: {exc}') from exc


def read_recorded(path: Path) -> Recorded | None:
    """The recorded schemas (None: no file); TemplateError for a file that is not the expected JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TemplateError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise TemplateError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(loaded, dict) or not all(isinstance(versions, dict) for versions in loaded.values()):
        raise TemplateError(f"{path} should map each pipeline to its schemas by version: run cairn template sync")
    return loaded


def _resolve(schema: Any, root: Schema, seen: frozenset[str] = frozenset()) -> tuple[Schema, frozenset[str]]:
    """``schema`` with its ``$ref`` (into ``$defs``) followed; the refs followed so far (a recursive model ends)."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        ref = schema["$ref"]
        seen = seen | {ref}
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        schema = target
    return (schema if isinstance(schema, Mapping) else {}), seen


def _branches(schema: Schema, root: Schema, seen: frozenset[str]) -> list[tuple[Schema, frozenset[str]]]:
    """The alternatives a schema accepts (``anyOf``/``oneOf`` flattened), each resolved."""
    resolved, seen = _resolve(schema, root, seen)
    options = resolved.get("anyOf") or resolved.get("oneOf")
    if not isinstance(options, list):
        return [(resolved, seen)]
    return [branch for option in options for branch in _branches(option, root, seen)]


def _accepted(schema: Schema, root: Schema, seen: frozenset[str]) -> set[tuple[str, ...]]:
    """What a schema accepts, coarsely: ``("string",)`` for any string, ``("enum", json)`` per value, ``("any",)``."""
    tokens: set[tuple[str, ...]] = set()
    for branch, _ in _branches(schema, root, seen):
        if "enum" in branch or "const" in branch:
            values = branch["enum"] if "enum" in branch else [branch["const"]]
            tokens |= {("enum", json.dumps(value, sort_keys=True)) for value in values}
        elif isinstance(branch.get("type"), str):
            tokens.add((branch["type"],))
        elif isinstance(branch.get("type"), list):
            tokens |= {(kind,) for kind in branch["type"] if isinstance(kind, str)}
        else:
            tokens.add(("any",))
    return tokens


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "any")


def _covered(token: tuple[str, ...], new: set[tuple[str, ...]]) -> bool:
    """Whether what ``token`` stood for is still accepted by ``new``."""
    if token in new or ("any",) in new:
        return True
    kind = token[0] if token[0] != "enum" else _kind_of(json.loads(token[1]))
    return (kind,) in new or (kind == "integer" and ("number",) in new)


def _describe(tokens: set[tuple[str, ...]]) -> str:
    return " | ".join(sorted(token[1] if token[0] == "enum" else token[0] for token in tokens)) or "nothing"


def _object_of(schema: Schema, root: Schema, seen: frozenset[str]) -> tuple[Schema, frozenset[str]] | None:
    """The object alternative of a schema that has properties (an optional sub-model's), if any."""
    for branch, branch_seen in _branches(schema, root, seen):
        if isinstance(branch.get("properties"), Mapping):
            return branch, branch_seen
    return None


def _items_of(schema: Schema, root: Schema, seen: frozenset[str]) -> tuple[Schema, frozenset[str]] | None:
    """The items schema of a schema's array alternative, if any."""
    for branch, branch_seen in _branches(schema, root, seen):
        if branch.get("type") == "array" and isinstance(branch.get("items"), Mapping):
            return branch["items"], branch_seen
    return None


def _changes(
    old: Schema, new: Schema, path: str, roots: tuple[Schema, Schema], seen: tuple[frozenset[str], frozenset[str]]
) -> Iterator[str]:
    """The incompatible changes from ``old`` to ``new`` at ``path`` (a field's dotted name; "" for the state)."""
    field = f'field "{path}"' if path else "the state"
    old_tokens, new_tokens = _accepted(old, roots[0], seen[0]), _accepted(new, roots[1], seen[1])
    lost = {token for token in old_tokens if not _covered(token, new_tokens)}
    if lost and all(token[0] == "enum" for token in lost):
        yield f"{field}: enum narrowed, no longer accepts {_describe(lost)}"
    elif lost:
        yield f"{field}: type changed from {_describe(old_tokens)} to {_describe(new_tokens)}"
    old_object, new_object = _object_of(old, roots[0], seen[0]), _object_of(new, roots[1], seen[1])
    if old_object is not None and new_object is not None:
        yield from _object_changes(old_object, new_object, path, roots)
    old_items, new_items = _items_of(old, roots[0], seen[0]), _items_of(new, roots[1], seen[1])
    if old_items is not None and new_items is not None:
        yield from _changes(old_items[0], new_items[0], f"{path}[]", roots, (old_items[1], new_items[1]))


def _object_changes(
    old: tuple[Schema, frozenset[str]], new: tuple[Schema, frozenset[str]], path: str, roots: tuple[Schema, Schema]
) -> Iterator[str]:
    """Properties removed, newly required or changed between two object schemas."""
    (old_schema, old_seen), (new_schema, new_seen) = old, new
    old_properties, new_properties = old_schema["properties"], new_schema["properties"]
    old_required, new_required = set(old_schema.get("required", [])), set(new_schema.get("required", []))
    for name, old_property in old_properties.items():
        dotted = f"{path}.{name}" if path else name
        if name not in new_properties:
            yield f'field "{dotted}": removed (or renamed)'
            continue
        yield from _changes(old_property, new_properties[name], dotted, roots, (old_seen, new_seen))
    for name in sorted(new_required - old_required):
        dotted = f"{path}.{name}" if path else name
        yield f'field "{dotted}": newly required' + (
            " (a new field without a default)" if name not in old_properties else ""
        )


def incompatible_changes(old: Schema, new: Schema) -> list[str]:
    """What a state valid under schema ``old`` may no longer pass under ``new``; none for a compatible change."""
    return list(_changes(old, new, "", (old, new), (frozenset(), frozenset())))


def _recorded_versions(recorded: Mapping[str, Any]) -> list[int]:
    return sorted(int(version) for version in recorded if str(version).isdigit())


def problems(template: Path, registry: PipelineRegistry) -> list[str]:
    """What ``cairn template check`` reports about the state schemas (nothing without the file)."""
    path = schemas_path(template)
    recorded = read_recorded(path)
    if recorded is None:
        return []
    found: list[str] = []
    for pipeline in registry:
        schema = state_schema(pipeline)
        versions = recorded.get(pipeline.name, {})
        if schema is None or not versions:
            continue
        who = f'pipeline "{pipeline.name}"'
        current = pipeline.state_version
        known = _recorded_versions(versions)
        if str(current) in versions:
            for change in incompatible_changes(versions[str(current)], schema):
                found.append(
                    f"{who}: state {change} since {path.name} recorded state_version {current}: {BUMP} "
                    f"(Pipeline(state_version={current + 1}, migrations={{{current}: ...}}))"
                )
        elif known and current < known[-1]:
            found.append(f"{who}: state_version {current} is older than version {known[-1]} recorded")
        elif known:
            found += [
                f"{who}: state_version {current} has no migration from version {version} (the newest recorded in "
                f"{path.name} is {known[-1]}): add Pipeline(migrations={{{version}: ...}})"
                for version in range(known[-1], current)
                if version not in pipeline.migrations
            ]
    return found


def sync_schemas(template: Path, registry: PipelineRegistry) -> tuple[list[str], list[str]]:
    """Record each pipeline's state schema under its version: (what changed, what was refused).

    A schema incompatible with the one recorded for the same version is not recorded (refused: the
    check's problem); the other pipelines' records are written.
    """
    path = schemas_path(template)
    existing = read_recorded(path)
    recorded = existing or {}
    updated: Recorded = {}
    changed: list[str] = []
    refused: list[str] = []
    for pipeline in registry:
        schema = state_schema(pipeline)
        if schema is None:
            continue
        versions = dict(recorded.get(pipeline.name, {}))
        key = str(pipeline.state_version)
        previous = versions.get(key)
        conflicts = incompatible_changes(previous, schema) if previous is not None else []
        if conflicts:
            refused += [f'pipeline "{pipeline.name}": state {change}: {BUMP}' for change in conflicts]
        elif previous != schema:
            versions[key] = schema
            changed.append(
                f"{'updated' if previous is not None else 'recorded'} the state schema of pipeline "
                f'"{pipeline.name}" version {key}'
            )
        updated[pipeline.name] = dict(sorted(versions.items(), key=lambda item: int(item[0])))
    changed += [
        f'removed the state schemas of pipeline "{name}" (not in the registry)'
        for name in recorded
        if name not in updated
    ]
    text = json.dumps(dict(sorted(updated.items())), indent=2, sort_keys=False) + "\n"
    if (updated or existing is not None) and (existing is None or path.read_text(encoding="utf-8") != text):
        path.write_text(text, encoding="utf-8")
    return changed, refused
