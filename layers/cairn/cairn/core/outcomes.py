"""What a phase returns: go on to a phase, finish, fail, sleep, or wait for a signal.

``Next``, ``Done`` and ``Fail`` mirror the seed's ``{kind: "next" | "done" | "error"}``. ``Sleep``
and ``WaitFor`` are a ``next`` whose phase runs later: the checkpoint is committed first, and no
compute runs while the job waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Next:
    """Continue with ``next_phase``, handing it ``state``."""

    next_phase: str
    state: Any


@dataclass(frozen=True)
class Done:
    """The pipeline is finished; ``result`` is kept on the job."""

    result: Any = None


@dataclass(frozen=True)
class Fail:
    """The phase failed for good (never retried); the checkpoint is kept."""

    error: str


@dataclass(frozen=True)
class Sleep:
    """Continue with ``next_phase`` after ``seconds``, handing it ``state``: nothing runs meanwhile."""

    seconds: float
    next_phase: str
    state: Any


@dataclass(frozen=True)
class WaitFor:
    """Wait for ``signal`` (a name), then continue with ``next_phase``, which reads the payload as ``ctx.signal``.

    After ``timeout`` seconds without it (None: until the job's TTL ends), the job goes to ``error``,
    or continues with ``timeout_phase`` when one is named (``ctx.signal`` is then None).
    """

    signal: str
    next_phase: str
    state: Any
    timeout: float | None = None
    timeout_phase: str | None = None


@dataclass(frozen=True)
class Map:
    """Run ``phase`` once per item of ``items`` (at most ``max_concurrency`` at a time), then ``then`` once.

    Each item phase reads its item as ``ctx.state`` and returns ``Done(result)``; it is retried per
    its own ``RetryPolicy``. ``then`` runs when every item has finished, with ``state`` (None: the
    current state) and the items' results, in item order, as ``ctx.results``.
    """

    items: Sequence[Any]
    phase: str
    then: str
    state: Any = None
    max_concurrency: int = 10


PhaseResult = Next | Done | Fail | Sleep | WaitFor | Map
