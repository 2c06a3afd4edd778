"""Exactly-once effects inside a phase: ``ctx.idempotency_key(name)`` and ``ctx.step(name, fn)``.

A *run of a phase* begins when the job enters the phase (a commit into it, a start, a rerun from it) and lasts
through every retry and resume of it, until the phase commits. What it keeps rides on the checkpoint, as
:class:`~cairn.core.models.PhaseRun`, written by a mid-phase save (the ``save`` transition) and carried by every
later save and by a resume; a commit into a phase, a rerun and a start over write a checkpoint without it.

- :meth:`StepBook.key`: the first key a run of a phase asks for draws the run's id (random) and saves it before
  the key is returned; every key hashes the owner, the pipeline, the job and that id with its name. So a retry or
  a resume of the run derives the same keys, and a rerun or a start over (a checkpoint without the id) others,
  whatever the clock says (two entries in the same millisecond, a test's clock that does not move).
- :meth:`StepBook.run`: ``fn`` is called once per run of the phase; its result is saved with the checkpoint,
  durably, before it is returned, and a retry gets the saved result without calling ``fn``. The window: a crash
  after ``fn``'s effect and before that save lands calls ``fn`` again on the retry; an idempotency key passed to
  the external API closes it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .admission import json_value
from .async_phases import is_async
from .errors import InvalidInputError
from .models import Checkpoint, Job, PhaseRun

if TYPE_CHECKING:
    from .storage_port import Storage

#: The most a run of a phase keeps as its steps' results, as compact JSON (UTF-8 bytes). Steps are kept on the
#: job item with the checkpoint (never in S3), as a signal's payload is: a large result belongs in the state.
MAX_STEPS_BYTES = 64 * 1024
#: What every idempotency key begins with; the rest is 32 hex digits (128 bits of a SHA-256).
KEY_PREFIX = "cairn-"
#: How long the name of a step or of a key may be.
MAX_NAME_CHARS = 200


def _checked_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"{what} is a name of 1 to {MAX_NAME_CHARS} characters, got {name!r}")
    return name


class StepBook:
    """The steps and keys of one run of a phase: what is kept, the names used by this attempt, how it is kept.

    ``seed`` names the job (:func:`job_seed`) or a map's item (:func:`item_seed`); ``kept`` is what earlier
    attempts saved; ``keeper`` saves a :class:`PhaseRun` durably (None: nothing can be kept, as in a map's item,
    whose keys then derive from ``seed`` alone and whose steps are refused with ``refusal``).
    """

    def __init__(
        self,
        seed: str,
        kept: PhaseRun | None = None,
        keeper: Callable[[PhaseRun], None] | None = None,
        *,
        refusal: str = "",
    ) -> None:
        self.seed = seed
        self.kept = kept or PhaseRun()
        self._keeper = keeper
        self._refusal = refusal
        self._used: set[str] = set()

    def key(self, name: str) -> str:
        """The idempotency key of ``name`` in this run of the phase: ``cairn-`` and 32 hex digits."""
        _checked_name(name, "An idempotency key's name")
        if self.kept.key is None and self._keeper is not None:  # the run's id, saved before any key is given out
            self._save(self.kept.model_copy(update={"key": uuid.uuid4().hex}))
        digest = hashlib.sha256(json.dumps([self.seed, self.kept.key, name]).encode()).hexdigest()
        return KEY_PREFIX + digest[:32]

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        """``fn()``'s result, called once per run of the phase and kept before it is returned (see the module)."""
        if is_async(fn):
            raise InvalidInputError(f'Step "{name}": fn is async; use "await ctx.step_async(name, fn)"')
        if self._begin(name):
            return self.kept.steps[name]
        result = fn()
        if inspect.isawaitable(result):  # not run yet: nothing happened, so nothing is kept
            if inspect.iscoroutine(result):
                result.close()
            raise InvalidInputError(f'Step "{name}": fn returned an awaitable; use "await ctx.step_async(name, fn)"')
        return self._keep(name, result)

    async def run_async(self, name: str, fn: Callable[[], Any]) -> Any:
        """As :meth:`run`, for a plain or an ``async def`` ``fn`` (its result awaited when it is awaitable)."""
        if self._begin(name):
            return self.kept.steps[name]
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        return self._keep(name, result)

    def _begin(self, name: str) -> bool:
        """Whether step ``name`` was kept by an earlier attempt; a name this attempt used already is refused."""
        _checked_name(name, "A step")
        if self._keeper is None:
            raise InvalidInputError(f'Step "{name}": {self._refusal or "steps cannot be kept here"}')
        if name in self._used:
            raise InvalidInputError(f'Step "{name}" ran already in this run of the phase: give each step its own name')
        self._used.add(name)
        return name in self.kept.steps

    def _keep(self, name: str, result: Any) -> Any:
        value = json_value(result, f'The result of step "{name}"')
        steps = {**self.kept.steps, name: value}
        size = len(json.dumps(steps, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_STEPS_BYTES:
            raise InvalidInputError(
                f'The results of the steps of this phase run would take {size} bytes with step "{name}"; at most '
                f"{MAX_STEPS_BYTES} (keep large results in the state, or in S3 and the key in the step)"
            )
        self._save(self.kept.model_copy(update={"steps": steps}))
        return value

    def _save(self, kept: PhaseRun) -> None:
        assert self._keeper is not None
        self._keeper(kept)  # durable before what it keeps is returned
        self.kept = kept


def store_owner(storage: Storage) -> str:
    """The owner a store keeps jobs for (a DynamoDB store's), through any wrappers; "" for a store with none."""
    layer: Any = storage
    while layer is not None:
        owner = getattr(layer, "owner", None)
        if isinstance(owner, str):
            return owner
        layer = getattr(layer, "inner", None)
    return ""


def job_seed(owner: str, pipeline: str, job_id: str) -> str:
    """What names a job, for the keys of its phases' runs."""
    return json.dumps(["job", owner, pipeline, job_id])


def item_seed(owner: str, pipeline: str, job_id: str, map_id: str, index: int) -> str:
    """What names one item of one map of a job (every attempt of it), for its keys."""
    return json.dumps(["item", owner, pipeline, job_id, map_id, index])


def carried(previous: Checkpoint | None, checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint`` (a save mid-phase, or a resume) keeping what the run of the phase ``previous`` belongs to kept.

    A checkpoint of another phase is returned as it is: it begins a run of its own.
    """
    if previous is None or previous.phase_run is None or previous.next_phase != checkpoint.next_phase:
        return checkpoint
    return checkpoint.model_copy(update={"phase_run": previous.phase_run})


def book_for_run(storage: Storage, pipeline: str, job: Job, keeper: Callable[[PhaseRun], None]) -> StepBook:
    """The steps and keys of a claimed run of ``job``'s phase: ``keeper`` saves them with the checkpoint."""
    seed = job_seed(store_owner(storage), pipeline, job.job_id)
    return StepBook(seed, job.checkpoint.phase_run if job.checkpoint is not None else None, keeper)


def book_for_item(storage: Storage, pipeline: str, job_id: str, map_id: str, index: int) -> StepBook:
    """A map item's keys (from the item alone: an item keeps no checkpoint to hold a step's result or an id)."""
    seed = item_seed(store_owner(storage), pipeline, job_id, map_id, index)
    return StepBook(seed, refusal="a map's item keeps no checkpoint; use ctx.idempotency_key in an item phase")
