"""What a phase returns: go on to a phase, finish, or fail.

These mirror the seed's ``{kind: "next" | "done" | "error"}``.
"""

from __future__ import annotations

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


PhaseResult = Next | Done | Fail
