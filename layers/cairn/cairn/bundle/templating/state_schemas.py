"""The state schemas a bundle records, so that a state model change needs a ``state_version`` bump.

``cairn template sync`` records the JSON schema of each pipeline's state model under its
``state_version`` in ``state-schemas.json`` beside template.yaml (``{pipeline: {version: schema}}``, a file
to commit). ``cairn template check`` compares each model's schema now with the one recorded for the same
version: a change that a state saved before may not survive (:mod:`.schema_changes`: a property removed or
renamed, its type changed, a property newly required, an enum or a constraint narrowed) is reported, naming
the pipeline and the field:
bump ``state_version`` and add a migration (:mod:`cairn.core.migrations`). A compatible change (a new
optional property, a description) passes, and the next sync records it. A version bumped past the
newest one recorded needs a migration from each version in between; one missing is reported.

A version's first recorded schema is provisional (marked :data:`PROVISIONAL`): no stack has been built with
it, so no saved state depends on it; the check does not hold the model to it and the sync rewrites it to
follow the model, until :func:`seal_schemas` (``cairn template check --seal``, which a bundle's ``sam build``
runs) fixes it.

Pipelines without a pydantic state model (plain JSON state) are not recorded. Without the file
nothing is compared; a sync writes it. The sync refuses to record an incompatible schema over the
fixed one, so the check keeps failing until the version is bumped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...core.pipeline import Pipeline
from ...core.registry import PipelineRegistry
from .errors import TemplateError
from .schema_changes import incompatible_changes

SCHEMAS_FILE = "state-schemas.json"
#: The key that marks a recorded schema provisional, and what it says to a reader of the file.
PROVISIONAL = "x-cairn-provisional"
PROVISIONAL_NOTE = "recorded before any build: follows the state model until the first sam build"
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


def _recorded_versions(recorded: Mapping[str, Any]) -> list[int]:
    return sorted(int(version) for version in recorded if str(version).isdigit())


def is_provisional(schema: Any) -> bool:
    """Whether a recorded schema is provisional: recorded before any build, it follows the state model."""
    return isinstance(schema, Mapping) and PROVISIONAL in schema


def _provisional(schema: Schema) -> dict[str, Any]:
    return {PROVISIONAL: PROVISIONAL_NOTE, **schema}


def _missing_migrations(pipeline: Pipeline[Any], since: int, path: Path) -> list[str]:
    """One line per migration missing between version ``since`` (the newest recorded before) and the current one."""
    current = pipeline.state_version
    return [
        f'pipeline "{pipeline.name}": state_version {current} has no migration from version {version} (the newest '
        f"recorded in {path.name} is {since}): add Pipeline(migrations={{{version}: ...}})"
        for version in range(since, current)
        if version not in pipeline.migrations
    ]


def problems(template: Path, registry: PipelineRegistry) -> list[str]:
    """What ``cairn template check`` reports about the state schemas (nothing without the file).

    A provisional schema is not held against the model (nothing saved can depend on it yet); the
    migrations from the version recorded before it are still needed.
    """
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
        before = [version for version in known if version < current]
        if str(current) in versions and not is_provisional(versions[str(current)]):
            for change in incompatible_changes(versions[str(current)], schema):
                found.append(
                    f"{who}: state {change} since {path.name} recorded state_version {current}: {BUMP} "
                    f"(Pipeline(state_version={current + 1}, migrations={{{current}: ...}}))"
                )
        elif str(current) not in versions and known and current < known[-1]:
            found.append(f"{who}: state_version {current} is older than version {known[-1]} recorded")
        elif before:
            found += _missing_migrations(pipeline, before[-1], path)
    return found


def _version_order(item: tuple[str, Any]) -> tuple[int, str]:
    key = str(item[0])
    return (int(key), "") if key.isdigit() else (-1, key)


def _write(path: Path, existing: Recorded | None, updated: Recorded) -> None:
    """Write ``updated`` (pipelines and versions in order) unless the file holds it already."""
    ordered = {name: dict(sorted(versions.items(), key=_version_order)) for name, versions in sorted(updated.items())}
    text = json.dumps(ordered, indent=2, sort_keys=False) + "\n"
    if (updated or existing is not None) and (existing is None or path.read_text(encoding="utf-8") != text):
        path.write_text(text, encoding="utf-8")


def sync_schemas(template: Path, registry: PipelineRegistry) -> tuple[list[str], list[str]]:
    """Record each pipeline's state schema under its version: (what changed, what was refused).

    A version recorded for the first time is provisional, and a provisional schema follows the model. A
    schema incompatible with the fixed one recorded for the same version is not recorded (refused: the
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
        what = f'state schema of pipeline "{pipeline.name}" version {key}'
        if previous is None:
            versions[key] = _provisional(schema)
            changed.append(f"recorded the {what} (provisional: it follows the state model until the first sam build)")
        elif is_provisional(previous):
            if previous != _provisional(schema):
                versions[key] = _provisional(schema)
                changed.append(f"updated the provisional {what}")
        elif conflicts := incompatible_changes(previous, schema):
            refused += [f'pipeline "{pipeline.name}": state {change}: {BUMP}' for change in conflicts]
        elif previous != schema:
            versions[key] = schema
            changed.append(f"updated the {what}")
        updated[pipeline.name] = versions
    changed += [
        f'removed the state schemas of pipeline "{name}" (not in the registry)'
        for name in recorded
        if name not in updated
    ]
    _write(path, existing, updated)
    return changed, refused


def seal_schemas(template: Path, registry: PipelineRegistry) -> list[str]:
    """Fix each pipeline's schema of its state_version as it is now, as a build does: what changed.

    The provisional schema of the current version (or one not recorded yet) is recorded as the model's, no
    longer provisional; any other provisional version is fixed as it is. Nothing without the file. Run once
    :func:`problems` found nothing: a fixed schema is what later changes are judged against.
    """
    path = schemas_path(template)
    existing = read_recorded(path)
    if existing is None:
        return []
    updated: Recorded = {name: dict(versions) for name, versions in existing.items()}
    changed: list[str] = []
    for pipeline in registry:
        schema = state_schema(pipeline)
        if schema is None:
            continue
        versions = updated.setdefault(pipeline.name, {})
        current = str(pipeline.state_version)
        for key, previous in list(versions.items()):
            if key != current and is_provisional(previous):
                versions[key] = {name: value for name, value in previous.items() if name != PROVISIONAL}
                changed.append(f'fixed the state schema of pipeline "{pipeline.name}" version {key}')
        if current not in versions or is_provisional(versions[current]):
            versions[current] = schema
            changed.append(f'fixed the state schema of pipeline "{pipeline.name}" version {current} (commit it)')
    _write(path, existing, updated)
    return changed
