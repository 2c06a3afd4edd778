"""The run's side of a map: starting one, running its items, and ``then`` joining their results.

The rules of the items themselves (their records, their claims, the hand-off) are
:mod:`cairn.maps.fan_out`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from ..core import ttl
from ..core.engine.claimed_run import claim_run
from ..core.engine.writes import job_ttl_seconds, logger
from ..core.errors import InvalidInputError, StorageError
from ..core.ids import validate_job_id
from ..core.models import Checkpoint, FanOut, Job, JobStatus, MapItem, MapRecord
from ..core.outcomes import Map
from ..core.pipeline import Pipeline
from ..core.run_features import Run, RunFeature, first_stop, open_hooks, summed_usage
from ..core.scheduler_port import ItemScheduler, Scheduler
from ..core.storage_port import Storage
from ..core.transitions import merge_usage
from .fan_out import (
    ItemRun,
    ItemStore,
    collected,
    map_concurrency,
    new_items,
    runnable,
    schedule_items,
    validate_map,
)


def item_store(storage: Storage, pipeline: Pipeline[Any], job_id: str, fan_out: str) -> ItemStore:
    """The records of the job's map ``fan_out``, written to live as long as the job."""
    expires = ttl.side_expires_at(storage.clock(), job_ttl_seconds(pipeline))
    return ItemStore(storage, job_id, fan_out, expires_at=expires)


def advance_item(
    job_id: str,
    pipeline: Pipeline[Any],
    storage: Storage,
    scheduler: Scheduler,
    *,
    phase: str,
    fan_out: str,
    item: int,
    worker: str | None,
    features: Iterable[RunFeature] | None = None,
) -> Job | None:
    """Run one item of the job's map, while the job runs that map; None when there is nothing to run.

    Returns the job as the item found it (its state and input left out where the store keeps them apart:
    :meth:`Storage.get_current_job`), or as the item's failure left it.
    """
    validate_job_id(job_id)
    if not isinstance(scheduler, ItemScheduler):
        raise InvalidInputError("An item advance needs a scheduler that runs items (schedule_item)")
    job = storage.get_current_job(job_id, payloads=False)  # one small read: an item's cost never grows with the job
    if job is None or job.status != JobStatus.RUNNING or job.fan_out is None or job.fan_out.id != fan_out:
        return None
    if job.checkpoint is None or job.fan_out.phase != phase or not pipeline.has_phase(phase):
        return None
    next_phase = job.checkpoint.next_phase
    hooks = open_hooks(pipeline, features)
    failed: list[Job] = []

    def fail_job(message: str) -> None:
        run = claim_run(job_id, pipeline, storage, phase=next_phase, worker=None, features=features)
        if run is None:
            logger.warning("Job %s: %s; the job was busy, its next advance runs the item again", job_id, message)
            return
        failed.append(run.fail(message))

    runner = ItemRun(
        pipeline=pipeline,
        store=item_store(storage, pipeline, job_id, fan_out),
        fan_out=job.fan_out,
        next_phase=next_phase,
        scheduler=scheduler,
        clock=storage.clock,
        fail_job=fail_job,
        metered=lambda memory, started, ended: summed_usage(
            [each.item_usage(memory, started, ended) for each in hooks]
        ),
    )
    if runner.run(item, worker or uuid.uuid4().hex) is None:
        return None
    return failed[-1] if failed else job  # an item changes the job only when it fails it


def start_map(run: Run, outcome: Map, scheduler: Scheduler) -> Job:
    """Write the map's item records, commit the checkpoint at ``then`` with the map, schedule the first items.

    The run's features may stop the job instead, before anything is written
    (:meth:`~cairn.core.run_features.RunHooks.before_map`: the transition guard's limit, say).
    """
    if not isinstance(scheduler, ItemScheduler):
        raise InvalidInputError(
            "a map needs a scheduler that runs items (the inline scheduler, the direct driver); "
            "the Step Functions driver does not run maps yet"
        )
    values = validate_map(outcome, run.pipeline)
    phase = run.pipeline.resolve_name(outcome.phase)
    stopped = first_stop(hooks.before_map(run, items=len(values), phase=phase) for hooks in run.hooks)
    if stopped is not None:
        return stopped
    state = run.pipeline.dump_state(outcome.state) if outcome.state is not None else run.job.checkpoint.state  # type: ignore[union-attr]
    now = run.storage.clock()
    fan_out = FanOut(
        id=uuid.uuid4().hex,
        phase=phase,
        count=len(values),
        max_concurrency=map_concurrency(outcome.max_concurrency),
    )
    store = item_store(run.storage, run.pipeline, run.job.job_id, fan_out.id)
    items = new_items(values, now)
    # the checkpoint at then is made at the same moment as the map's record: a rerun from then finds its map by it
    record = MapRecord(
        fan_out=fan_out, started_by=run.phase_name, then=outcome.then, created_at=now, sequence=run.job.sequence
    )
    store.create(items, record)
    run.entry(f'Map of {len(values)} items over phase "{fan_out.phase}", then "{outcome.then}"')
    # a state given now has the current version; the one kept keeps the version it was saved with
    version = run.pipeline.version_stamp if outcome.state is not None else run.job.checkpoint.state_version  # type: ignore[union-attr]
    checkpoint = Checkpoint(next_phase=outcome.then, state=state, created_at=now, state_version=version)
    job = run.commit("map", checkpoint=checkpoint, fan_out=fan_out)
    if job.status == JobStatus.RUNNING:
        schedule_items(scheduler, job.job_id, fan_out, runnable(items, fan_out, now), now)
    return job


def items_unfinished(run: Run, scheduler: Scheduler) -> Job | None:
    """The job after giving its claim back when its map still has items to run (scheduled again); else None.

    The one read of every item record the map needs: ``then``'s results, or what a recovery (the sweep,
    a resume) schedules again. A map whose records are gone (expired) puts the job in ``error``.
    """
    fan_out = run.job.fan_out
    if fan_out is None:
        return None
    store = item_store(run.storage, run.pipeline, run.job.job_id, fan_out.id)
    items = store.all()
    if len(items) < fan_out.count:
        record = store.record()
        where = f' started by phase "{record.started_by}"' if record is not None else ""
        message = (
            f"{fan_out.count - len(items)} of the {fan_out.count} item records of the map over phase "
            f'"{fan_out.phase}"{where} are gone (expired): rerun from the phase that starts the map'
        )
        return run.fail(message)
    if all(item.status == "done" for item in items):
        run.results = [item.result for item in items]
        join_map(run, store, items)
        return None
    job = run.commit("release")
    now = run.storage.clock()
    if job.status == JobStatus.RUNNING and isinstance(scheduler, ItemScheduler):
        schedule_items(scheduler, job.job_id, fan_out, runnable(items, fan_out, now), now)
        # The last item may have finished since the records were read, and its hand-off found the job
        # claimed by this run: then is scheduled again here, so that it never waits for the sweep.
        record = store.record()
        if record is not None and record.done >= fan_out.count:
            scheduler.schedule_advance(job.job_id, phase=run.phase_name, sequence=job.sequence)
    return job


def join_map(run: Run, store: ItemStore, items: list[MapItem]) -> None:
    """Add the items' usage and log to the job's, with the next write of this run of ``then``: once per map.

    A retry of ``then``, or a rerun from it, gets the items' results again, not their usage and log
    (the items did not run again). The map's record is marked once that write has landed.
    """
    record = store.record()
    if record is not None and record.joined is not None:
        return
    _, usage, entries = collected(items)
    run.journal.add_usage(usage)
    for entry in entries:
        run.journal.add_entry(entry)
    if record is not None:
        run.after_write = lambda: _mark_joined(store)


def _mark_joined(store: ItemStore) -> None:
    """Record that the map's usage and log were added to the job's (a failure is only logged)."""
    try:
        store.mark("joined")
    except StorageError as exc:  # the write it follows has landed: a rerun of then would add the usage again
        logger.warning("Job %s: could not mark map %s's usage joined: %s", store.job_id, store.fan_out, exc)


def usage_so_far(storage: Storage, job: Job) -> dict[str, float]:
    """The job's usage with what the items of its map in progress have used so far, each counted once.

    The items' usage joins the job's with the first write of the run of ``then`` (:func:`join_map`), which
    marks the map ``joined``: until then it is read from the item records (every record of the map: a job
    view of a running map costs what the map's lanes cost); once joined, or with no map in progress, the
    job's own usage is all of it. A store that keeps no map record cannot say it was joined: a save of
    ``then`` counts the items twice until ``then`` commits.
    """
    fan_out = job.fan_out
    if fan_out is None:
        return dict(job.usage)
    record = storage.get_map(job.job_id, fan_out.id)
    if record is not None and record.joined is not None:
        return dict(job.usage)
    _, items_usage, _ = collected(storage.get_items(job.job_id, fan_out.id))
    return merge_usage(job.usage, items_usage)
