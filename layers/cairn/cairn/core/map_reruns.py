"""Reruns of a job with maps: the phases a rerun may start from, and the map a phase's entry took.

A phase that runs only as a map's items (never as a phase of its own) is not a place to rerun from: a
rerun starts from the phase that began the map, or from its ``then``. The item phases are those the
pipeline's code names in ``Map(...)`` (:mod:`.map_phases`: known before the job maps, whatever branch it
took) and those the job's maps ran (a name the code computes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .errors import InvalidInputError
from .map_phases import ItemPhase
from .models import Checkpoint, Job, MapRecord

Resolve = Callable[[str], str]
"""A phase's current name (``Pipeline.resolve_name``: a renamed phase's old name is an alias)."""


def _same(name: str) -> str:
    return name


def map_order(record: MapRecord) -> tuple[int, int, str]:
    """The order of a job's maps: when each began, and the job's sequence then (two in one millisecond)."""
    return (record.created_at, record.sequence, record.fan_out.id)


def item_only_phases(
    job: Job, maps: Sequence[MapRecord], resolve: Resolve = _same, named: Mapping[str, ItemPhase] | None = None
) -> dict[str, MapRecord | ItemPhase]:
    """The phases ``job`` runs only as a map's items (never as a phase of its own), each with its newest map.

    ``named``: the item phases the pipeline's code names (:func:`.map_phases.item_phases`), for a job
    that has not run their map (yet).
    """
    ran = {resolve(record.phase) for record in job.phases}
    if job.checkpoint is not None:
        ran.add(resolve(job.checkpoint.next_phase))
    found: dict[str, MapRecord | ItemPhase] = {
        resolve(name): item for name, item in (named or {}).items() if resolve(name) not in ran
    }
    for record in sorted(maps, key=map_order):
        if resolve(record.fan_out.phase) not in ran:
            found[resolve(record.fan_out.phase)] = record
    return found


def rerun_phases(
    phase_names: Sequence[str],
    job: Job,
    maps: Sequence[MapRecord],
    resolve: Resolve = _same,
    named: Mapping[str, ItemPhase] | None = None,
) -> list[str]:
    """The phases a rerun of ``job`` may start from: the pipeline's, but those it runs only as a map's items."""
    items = item_only_phases(job, maps, resolve, named)
    return [name for name in phase_names if resolve(name) not in items]


def refuse_item_phase(
    job: Job,
    phase: str,
    maps: Sequence[MapRecord],
    resolve: Resolve = _same,
    named: Mapping[str, ItemPhase] | None = None,
) -> None:
    """InvalidInputError when ``phase`` runs only as a map's items: say where to rerun from instead."""
    item = item_only_phases(job, maps, resolve, named).get(resolve(phase))
    if item is None:
        return
    started_by = f'"{item.started_by}"' if item.started_by else "the phase that returns the map"
    then = f'"{item.then}"' if item.then else "the map's then phase"
    raise InvalidInputError(
        f'Phase "{phase}" runs only as an item of the map started by phase {started_by} '
        f"(then {then}): rerun from {started_by} to run the map again, or from "
        f"{then} to rerun what follows it with the items' results"
    )


def map_entered(
    phase: str, maps: Sequence[MapRecord], entered: Checkpoint | None, resolve: Resolve = _same
) -> MapRecord | None:
    """The map whose results ``phase`` took when the job last entered it (None: it entered without one).

    The map's commit entered ``then`` with a checkpoint made when the map began (``created_at``); when
    that entry is no longer kept, the newest map that goes on to ``phase``.
    """
    candidates = sorted((record for record in maps if resolve(record.then) == resolve(phase)), key=map_order)
    if entered is None:
        return candidates[-1] if candidates else None
    matching = [record for record in candidates if record.created_at == entered.created_at]
    return matching[-1] if matching else None
