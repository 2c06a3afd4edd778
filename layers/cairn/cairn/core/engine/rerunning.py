"""A rerun from a named phase: the job continues there with the given state, or the one it entered with."""

from __future__ import annotations

from functools import partial
from typing import Any

from ..errors import InvalidInputError, JobNotFoundError, StorageError, VersionConflict
from ..map_phases import pipeline_item_phases
from ..map_reruns import map_entered, refuse_item_phase
from ..models import Checkpoint, Job, LogEntry
from ..pipeline import Pipeline
from ..scheduler_port import Scheduler
from ..storage_port import Storage
from ..transitions import Journal, StartJob
from .writes import START_ATTEMPTS, job_expires_at, job_ttl_seconds, resolve_write


def rerun_from(
    job_id: str,
    pipeline: Pipeline[Any],
    phase: str,
    given_state: Any,
    storage: Storage,
    scheduler: Scheduler,
    actor: str | None,
) -> Job:
    """Continue ``job_id`` at ``phase`` with ``given_state``, or the state it had when it last entered ``phase``."""
    for _ in range(START_ATTEMPTS):
        now = storage.clock()
        existing = storage.get_current_job(job_id)
        if existing is None:
            raise JobNotFoundError(job_id)
        maps = storage.get_maps(job_id)
        named = pipeline_item_phases(pipeline)
        target = pipeline.resolve_name(phase)
        if target in named or any(pipeline.resolve_name(record.fan_out.phase) == target for record in maps):
            # a phase a map runs as its items: refused if it never ran as a phase of its own (its records tell)
            refuse_item_phase(storage.get_job(job_id) or existing, phase, maps, pipeline.resolve_name, named)
        follows_map = any(pipeline.resolve_name(record.then) == pipeline.resolve_name(phase) for record in maps)
        kept = storage.entered(job_id, phase) if given_state is None or follows_map else None
        state, source = given_state, "the state given"
        version = pipeline.version_stamp  # a state given now is the current version's; a kept one keeps its own
        if state is None:
            if kept is None:
                raise InvalidInputError(
                    f'Job "{job_id}" has no state kept from entering phase "{phase}" (it never reached it, or '
                    "that part of its history has expired); rerun with the state to use"
                )
            state, source, version = kept.state, f"the state it entered with at {kept.created_at}", kept.state_version
        # a map's then phase gets its items' results again (their records are kept)
        taken_up = map_entered(phase, maps, kept, pipeline.resolve_name) if follows_map else None
        if taken_up is not None:
            source += f" and the results of its map's {taken_up.fan_out.count} items"
        who = f" by {actor}" if actor else ""
        note = LogEntry(
            message=f'Job rerun from phase "{phase}"{who} (was {existing.status.value}), with {source}',
            timestamp=now,
            phase=phase,
            kind="action",
            actor=actor,
        )
        request = StartJob(
            job_id=job_id,
            pipeline=pipeline.name,
            checkpoint=Checkpoint(next_phase=phase, state=state, created_at=now, state_version=version),
            now_ms=now,
            expires_at=job_expires_at(pipeline, now),
            seen=existing,
            ttl_seconds=job_ttl_seconds(pipeline),
            input=existing.input,
            journal=Journal(log=(note,)),
            fan_out=taken_up.fan_out if taken_up is not None else None,
        )
        try:
            job = resolve_write(partial(storage.start_job, request))
        except VersionConflict:
            continue
        scheduler.schedule_advance(job_id, phase=phase, sequence=job.sequence)
        return job
    raise StorageError(f'Job "{job_id}" kept changing while it was being rerun; try again', retryable=True)
