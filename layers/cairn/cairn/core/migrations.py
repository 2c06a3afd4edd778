"""State migrations: a state saved by an older state model, brought up to the pipeline's current one.

A pipeline declares the version of its state model, ``Pipeline(state_version=3)``, and one migration
per older version, ``migrations={1: v1_to_v2, 2: v2_to_v3}``: migration ``k`` takes the JSON state
saved under version ``k`` and returns version ``k + 1``'s (JSON, or a model instance, dumped to JSON).

Every checkpoint records the version its state was saved with (``stateVersion``; absent means 1, so a
version-1 pipeline stores exactly what it stored before versions existed). A stored state is read
through :func:`migrate_state` before a phase sees it: the migrations from its version to the current
one run in order, each once. A state with no path forward (a missing migration, a version newer than
the code's) or a migration that raises is a :class:`StateMigrationError`, raised before any migration
runs in the first case; the engine stops the job in ``error`` and keeps its checkpoint, so a retry
once the migration is deployed resumes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .admission import json_value
from .errors import InvalidInputError, PipelineError
from .failures import describe

#: A migration: the JSON state of one version in, the next version's state (JSON or a model) out.
Migration = Callable[[Any], Any]

#: The version of a checkpoint that records none: every checkpoint saved before versions existed.
FIRST_VERSION = 1


class StateMigrationError(InvalidInputError):
    """A stored state cannot be brought to the pipeline's state_version (no path, or a migration failed)."""

    def __init__(self, message: str, *, saved: int, current: int) -> None:
        super().__init__(message)
        self.saved = saved
        self.current = current


def checked_state_version(pipeline: str, state_version: object) -> int:
    """``state_version`` when it is a positive whole number; else a PipelineError naming the pipeline."""
    if isinstance(state_version, bool) or not isinstance(state_version, int) or state_version < FIRST_VERSION:
        raise PipelineError(
            f"Pipeline {pipeline!r}: state_version must be a positive whole number, got {state_version!r}"
        )
    return state_version


def checked_migrations(pipeline: str, state_version: int, migrations: object) -> dict[int, Migration]:
    """``migrations`` as a dict, each key a version from 1 to ``state_version - 1`` and each value callable."""
    if migrations is None:
        return {}
    if not isinstance(migrations, Mapping):
        raise PipelineError(
            f"Pipeline {pipeline!r}: migrations must map a version to a function, got {type(migrations).__name__}"
        )
    checked: dict[int, Migration] = {}
    for version, migration in migrations.items():
        if isinstance(version, bool) or not isinstance(version, int) or not FIRST_VERSION <= version < state_version:
            known = f"1 to {state_version - 1}" if state_version > FIRST_VERSION else "none (state_version is 1)"
            raise PipelineError(
                f"Pipeline {pipeline!r}: migration key {version!r} is not a version before state_version "
                f"{state_version} (a migration k turns version k into k + 1; valid keys: {known})"
            )
        if not callable(migration):
            raise PipelineError(f"Pipeline {pipeline!r}: migration {version} is not callable: {migration!r}")
        checked[version] = migration
    return checked


def version_stamp(state_version: int) -> int | None:
    """What a checkpoint records for ``state_version``: None for version 1 (stored as before versions)."""
    return None if state_version == FIRST_VERSION else state_version


def saved_version(recorded: int | None) -> int:
    """The version a checkpoint's state was saved with: what it records, else 1."""
    return FIRST_VERSION if recorded is None else recorded


def migration_path(pipeline: str, saved: int, current: int, migrations: Mapping[int, Migration]) -> list[int]:
    """The migrations that bring version ``saved`` to ``current``, in order; StateMigrationError when there is none."""
    cannot = f"State saved with version {saved} cannot be migrated to version {current}"
    if saved > current:
        raise StateMigrationError(
            f'{cannot}: it is newer than pipeline "{pipeline}"\'s state_version (run the code that saved it, '
            f"or raise state_version to {saved} with migrations up to it)",
            saved=saved,
            current=current,
        )
    path = list(range(saved, current))
    for version in path:
        if version not in migrations:
            raise StateMigrationError(
                f"{cannot}: no migration from version {version} (Pipeline(migrations={{{version}: ...}}))",
                saved=saved,
                current=current,
            )
    return path


def migrate_state(
    pipeline: str, raw: Any, recorded: int | None, current: int, migrations: Mapping[int, Migration]
) -> Any:
    """The JSON state ``raw`` (saved under version ``recorded``, None meaning 1) as version ``current``'s JSON.

    The whole path is checked before any migration runs; each migration on it runs once, in order, and
    its result is admitted as JSON. A migration that raises, or returns what is not JSON, is a
    StateMigrationError naming it.
    """
    saved = saved_version(recorded)
    state = raw
    for version in migration_path(pipeline, saved, current, migrations):
        migration = migrations[version]
        name = getattr(migration, "__qualname__", None) or type(migration).__qualname__
        what = f'migration {version} ({name}) of pipeline "{pipeline}"'
        try:
            state = json_value(migration(state), f"The state {what} returned")
        except Exception as exc:  # the user's migration failed: named, the job keeps its checkpoint
            detail = describe(exc)
            raise StateMigrationError(
                f"State saved with version {saved} cannot be migrated to version {current}: "
                f"{what} failed: {type(exc).__name__}: {detail}",
                saved=saved,
                current=current,
            ) from exc
    return state
