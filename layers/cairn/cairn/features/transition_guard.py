"""The transition guard: how many phase runs and map items a job may take before it is stopped.

The stack's functions run with ``RecursiveLoop: Allow`` (a job's long self-loops are one traced
chain), so Lambda no longer stops a phase that loops, or fans out, without end: this guard does.

What it counts, in the job's usage under ``"transitions"`` (every store keeps usage, summed, with
the write that commits it: once, however often a write is resent):

- each phase run that leaves its phase, 1, with its commit (:data:`TRANSITION_KINDS`: ``next``,
  ``sleep``, ``wait``, ``map``, ``done``): what a loop is made of. A ``retry`` or an ``error`` is not
  counted: the phase's retry policy bounds those, and the count stays what the job's committed
  transitions are, whatever crashes and resends happened on the way (as the rest of its usage does);
- each item of a map, when the map starts: every item is an invocation of its own. An item's own
  attempts add nothing more (its retry policy bounds them), and its usage joining the job's (with the
  phase after the map) carries no count, so nothing is counted twice.

The rule: before a claimed run executes its phase, a job that has counted its limit is stopped in
``error``; a map is refused at its start unless its items and the phase after them fit in what is left.

The limit is :attr:`Pipeline.max_transitions <cairn.core.pipeline.Pipeline>` (default
:data:`~cairn.core.pipeline.DEFAULT_MAX_TRANSITIONS`), lowered for every pipeline of a stack by
``CAIRN_MAX_TRANSITIONS`` when that is set (:func:`cairn.core.settings.stack_max_transitions`).

A retry after the guard stopped a job: the guard counts from that stop (its commit records the count
it stopped at, under ``"transitions_at_guard_stop"``), so the retry may take the whole limit again,
while ``"transitions"`` keeps counting every transition of the job's life (usage is kept across
runs). Any other (re)start continues the count: a resume after a pause or a cancel, a retry after
another error, a start over of a complete job.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.errors import TransitionLimitError
from ..core.models import Job
from ..core.pipeline import Pipeline
from ..core.run_features import CommitFacts, Run, RunHooks
from ..core.scheduler_port import Scheduler
from ..core.settings import MAX_TRANSITIONS, stack_max_transitions

TRANSITIONS = "transitions"
"""The usage counter of a job's transitions: the phase runs that left their phase, and its maps' items."""
TRANSITION_KINDS = frozenset({"next", "sleep", "wait", "map", "done"})
"""The commits that count a transition: those that leave the phase."""
logger = logging.getLogger("cairn")
GUARD_STOP = "transitions_at_guard_stop"
"""The usage counter set to ``transitions`` when the guard last stopped the job: it counts from there."""


class Limited(Protocol):
    """What the guard reads of a pipeline (:class:`~cairn.core.pipeline.Pipeline`): its own limit."""

    @property
    def max_transitions(self) -> int:
        """The most transitions a job of the pipeline makes before the guard stops it."""
        ...


@dataclass(frozen=True)
class TransitionLimit:
    """The limit in force for a job, and the setting that gives it (named in the error)."""

    value: int
    setting: str


def transition_limit(pipeline: Limited, environ: Mapping[str, str] | None = None) -> TransitionLimit:
    """The pipeline's ``max_transitions``, or the stack's ``CAIRN_MAX_TRANSITIONS`` when that is lower.

    A bad ``CAIRN_MAX_TRANSITIONS`` is a ConfigurationError (read from ``environ``, else the process's).
    """
    own = pipeline.max_transitions
    stack = stack_max_transitions(environ)
    if stack is not None and stack < own:
        return TransitionLimit(stack, f"{MAX_TRANSITIONS}={stack} for the stack, below Pipeline(max_transitions={own})")
    return TransitionLimit(own, f"Pipeline(max_transitions={own}), or {MAX_TRANSITIONS} for the stack")


def counted(usage: Mapping[str, float]) -> int:
    """The transitions the guard counts in a job's ``usage``: all of them, or those since it last stopped the job."""
    return int(usage.get(TRANSITIONS, 0) - usage.get(GUARD_STOP, 0))


def run_refused(job_id: str, usage: Mapping[str, float], limit: TransitionLimit) -> TransitionLimitError | None:
    """Why the job may not run its next phase (it has counted its limit); None: it may."""
    if counted(usage) < limit.value:
        return None
    return TransitionLimitError(job_id, limit.value, _message(f'Job "{job_id}" reached its limit', limit))


def map_refused(
    job_id: str, usage: Mapping[str, float], limit: TransitionLimit, *, items: int, phase: str
) -> TransitionLimitError | None:
    """Why the job may not start a map of ``items`` items over ``phase``; None: it may.

    The run that starts the map, its items and the phase after them must fit in the limit: a map
    that could not be followed by its ``then`` would run every item for nothing.
    """
    made = counted(usage)
    if made + 1 + items + 1 <= limit.value:
        return None
    what = (
        f'Job "{job_id}" cannot start a map of {items} items over phase "{phase}" ({made} of its transitions made '
        "so far): the items and the phase after them would pass its limit"
    )
    return TransitionLimitError(job_id, limit.value, _message(what, limit))


def stop_usage(usage: Mapping[str, float]) -> dict[str, float]:
    """The usage the guard's stop adds (an ``error``, it counts no transition): the count it stopped at."""
    return {GUARD_STOP: usage.get(TRANSITIONS, 0) - usage.get(GUARD_STOP, 0)}


def _message(what: str, limit: TransitionLimit) -> str:
    return (
        f"{what} of {limit.value} transitions ({limit.setting}): a phase that loops or fans out without end "
        f"is stopped here. Retry the job to allow it {limit.value} more, or raise the limit first if that is "
        "not enough."
    )


class TransitionGuard:
    """The guard as a run-level feature (:mod:`cairn.core.run_features`): counts, and stops, a job's transitions."""

    name = "transition-guard"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks:
        """The guard for one run: the limit read now, so that a bad ``CAIRN_MAX_TRANSITIONS`` writes nothing."""
        return GuardHooks(transition_limit(pipeline))


@dataclass(frozen=True)
class GuardHooks(RunHooks):
    """Stops a job at its limit, refuses a map that would pass it, and counts each transition with its commit."""

    limit: TransitionLimit

    def before_phase(self, run: Run, scheduler: Scheduler) -> Job | None:
        refused = run_refused(run.job.job_id, run.job.usage, self.limit)
        return None if refused is None else stop(run, refused)

    def before_map(self, run: Run, *, items: int, phase: str) -> Job | None:
        refused = map_refused(run.job.job_id, run.job.usage, self.limit, items=items, phase=phase)
        return None if refused is None else stop(run, refused)

    def commit_usage(self, run: Run, commit: CommitFacts) -> Mapping[str, float]:
        if commit.kind not in TRANSITION_KINDS:
            return {}
        items = commit.fan_out.count if commit.kind == "map" and commit.fan_out is not None else 0
        return {TRANSITIONS: 1 + items}  # each map item is an invocation of its own


def stop(run: Run, refused: TransitionLimitError) -> Job:
    """Stop the job in ``error``: it reached its limit; the commit records the count stopped at (a retry counts on)."""
    logger.error("Job %s: %s", run.job.job_id, refused.message)
    run.journal.add_usage(stop_usage(run.job.usage))
    return run.fail(refused.message)
