"""What a phase run meters into its job's usage, for its cost (:mod:`cairn.features.cost`).

Added to the usage the run's commit hands over (summed once with that write, however often it is
resent), and kept on the run's phase record (``PhaseRecord.usage``):

- ``lambda_requests``: 1, the invocation that ran the phase; ``lambda_gb_seconds:<architecture>``:
  the run's duration (its claim to its commit) times its function's memory (``memory`` / 1024 GB), on
  the architecture the process runs on (``arm64`` or ``x86_64``);
- ``dynamodb_write_units``: what the job store's writes of the run bill on demand, estimated from the
  sizes the engine hands over, the same on every store: the claim and the commit each update the job's
  item, which keeps a reference to its state (1 unit each); each save or commit adds the history item
  that holds the state it wrote (1 unit per started KB of the state as compact JSON, with
  :data:`ITEM_OVERHEAD` bytes for the item's other fields). The memory and file stores meter what the
  DynamoDB store would bill; a state the DynamoDB store keeps in S3 is estimated as if it were inline
  (its S3 requests are not metered), and the listing index's writes are left out;
- ``stepfunctions_transitions``: with the ``stepfunctions`` driver, the :data:`SFN_TRANSITIONS_PER_RUN`
  state transitions of the state machine's loop around one phase run.

A ``release`` (a run that gives its claim back without running its phase) adds no history item: its
commit meters no unit for one. A *look* of a job waiting for its owner's share (:mod:`cairn.features.owner_share`)
is such a release: it meters what it costs (its invocation, the claim, the release, and the note of the
job in its owner's share, 1 unit, where the store keeps notes), and the same again under
``share_wait:<meter>`` (:func:`waiting_usage`): the part of the job's usage spent waiting, which its cost
counts and its budget does not (:func:`budgeted_usage`).

A map's item meters its Lambda request and GB-seconds the same way, with its finish (its usage joins
the job's with the phase after the map); its own writes are not metered.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Mapping
from typing import Any

from ..core.models import Checkpoint
from ..core.pipeline import Pipeline
from ..core.run_features import CommitFacts, Run, RunHooks
from ..core.settings import stepfunctions_driver
from .prices import is_metered

ITEM_OVERHEAD = 600
"""The bytes of a history item besides the state it holds (keys, log entries, phase record): an estimate."""
SFN_TRANSITIONS_PER_RUN = 2
"""RunPhase, AfterPhase: one loop of the machine (a start or a delay adds the resolve's)."""
LAMBDA_REQUESTS = "lambda_requests"
"""The meter of Lambda invocations."""
WRITE_UNITS = "dynamodb_write_units"
"""The meter of DynamoDB on-demand write request units."""
SFN_TRANSITIONS = "stepfunctions_transitions"
"""The meter of Step Functions Standard state transitions."""
KB = 1024
SHARE_WAIT = "share_wait:"
"""The prefix of the counters that repeat what a job's looks at its owner's full share metered."""


def architecture() -> str:
    """The architecture this process runs on, as Lambda names it: ``arm64`` or ``x86_64``."""
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def gb_seconds_meter() -> str:
    """The meter of Lambda compute on this process's architecture (``lambda_gb_seconds:arm64``, say)."""
    return f"lambda_gb_seconds:{architecture()}"


def invocation_usage(memory_mb: int, started_at: int, ended_at: int) -> dict[str, float]:
    """One Lambda invocation of ``memory_mb`` MB that ran from ``started_at`` to ``ended_at`` (Unix ms)."""
    seconds = max(1, ended_at - started_at) / 1000  # Lambda bills 1 ms at least
    return {LAMBDA_REQUESTS: 1, gb_seconds_meter(): round(seconds * memory_mb / 1024, 9)}


def history_units(checkpoint: Checkpoint | None) -> int:
    """The write units of the history item a save or a commit adds, holding ``checkpoint``'s state (if any)."""
    return math.ceil((ITEM_OVERHEAD + state_bytes(checkpoint)) / KB)


def state_bytes(checkpoint: Checkpoint | None) -> int:
    """The size of the checkpoint's state as the compact JSON it was admitted as (0: none, or not admitted).

    The engine hands a store admitted checkpoints (:meth:`cairn.core.pipeline.Pipeline.checkpoint`): their
    text is at hand, so a state is never serialised again to be metered.
    """
    text = checkpoint.state_json if checkpoint is not None else None
    return len(text.encode("utf-8")) if text is not None else 0


def save_usage(checkpoint: Checkpoint | None) -> dict[str, float]:
    """What a save metered: its update of the job's item and the history item holding its state."""
    return {WRITE_UNITS: 1 + history_units(checkpoint)}


def run_usage(
    *,
    memory_mb: int,
    started_at: int,
    ended_at: int,
    committed: Checkpoint | None,
    history: bool = True,
    waiting: bool = False,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What a run meters with its commit: its invocation, its claim and commit writes, its driver's transitions.

    ``history``: the commit adds a history item (a ``release`` adds none). ``waiting``: the run was a look at
    its owner's full share, metered as waiting (:func:`waiting_usage`).
    """
    usage: dict[str, Any] = invocation_usage(memory_mb, started_at, ended_at)
    usage[WRITE_UNITS] = 1 + 1 + (history_units(committed) if history else 0)  # the claim, the commit, its history
    if stepfunctions_driver(environ):
        usage[SFN_TRANSITIONS] = SFN_TRANSITIONS_PER_RUN
    return waiting_usage(usage) if waiting else usage


def share_note_usage() -> dict[str, float]:
    """What noting a waiting job in its owner's share meters (one write of the share), as waiting."""
    return waiting_usage({WRITE_UNITS: 1})


def waiting_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """``usage`` spent waiting for the owner's share: each meter, and again as ``share_wait:<meter>``."""
    return {**usage, **{f"{SHARE_WAIT}{meter}": value for meter, value in usage.items()}}


def budgeted_usage(usage: Mapping[str, float]) -> dict[str, float]:
    """The part of a job's ``usage`` its budget counts: all of it but what its looks at a full share metered."""
    return {
        meter: value - usage.get(f"{SHARE_WAIT}{meter}", 0)
        for meter, value in usage.items()
        if not meter.startswith(SHARE_WAIT)
    }


class Metering:
    """Metering as a run-level feature (:mod:`cairn.core.run_features`): what each write and item run meters."""

    name = "metering"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks:
        """The meters of one run (they read nothing before the claim)."""
        return MeteringHooks()


class MeteringHooks(RunHooks):
    """Meters a run's saves, its commit and its map's items; the phase record keeps the meters that cost money."""

    def save_usage(self, run: Run, checkpoint: Checkpoint) -> Mapping[str, float]:
        return save_usage(checkpoint)

    def commit_usage(self, run: Run, commit: CommitFacts) -> Mapping[str, float]:
        return run_usage(
            memory_mb=commit.memory_mb,
            started_at=commit.started_at,
            ended_at=commit.ended_at,
            committed=commit.checkpoint,
            history=commit.kind != "release",
            waiting=commit.share_wait is not None,
        )

    def keeps_on_record(self, meter: str) -> bool:
        return is_metered(meter)

    def item_usage(self, memory_mb: int, started_at: int, ended_at: int) -> Mapping[str, float]:
        return invocation_usage(memory_mb, started_at, ended_at)
