"""Failed jobs written straight into a store, as the engine writes them: started, claimed, then committed in error.

Cheaper than running phases that raise, and through the same transitions (a commit in error records the
exception's type and the failed phase on the job), so what ``GET /failures`` and the list read is what a real
failure leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.core.models import Checkpoint, Failure, PhaseRecord
from cairn.core.storage_port import Storage
from cairn.core.transitions.requests import Claim, Commit, Fence, StartJob

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Failed:
    """One failed job to seed: its id, pipeline, failing phase, exception type (None: a Fail) and message."""

    job_id: str
    pipeline: str
    phase: str
    type: str | None
    message: str
    created_at: int
    ran_ms: int = 1_500


def seed_failure(storage: Storage, failed: Failed) -> None:
    """Start ``failed``'s job at its phase, claim it and commit it in error ``ran_ms`` later."""
    created, ended = failed.created_at, failed.created_at + failed.ran_ms
    expires = created + 7 * DAY_MS
    job = storage.start_job(
        StartJob(
            job_id=failed.job_id,
            pipeline=failed.pipeline,
            checkpoint=Checkpoint(next_phase=failed.phase, state={}, created_at=created),
            now_ms=created,
            expires_at=expires,
            seen=None,
            ttl_seconds=7 * 86_400,
            input={},
        )
    )
    claimed = storage.claim(
        Claim(
            job_id=failed.job_id,
            pipeline=failed.pipeline,
            phase=failed.phase,
            worker="seed",
            now_ms=created + 1,
            lease_expires_at=created + 60_000,
            expires_at=expires,
            sequence=job.sequence,
        )
    )
    assert claimed is not None, failed
    failure = Failure(type=failed.type, traceback=f"{failed.type}: {failed.message}") if failed.type else None
    record = PhaseRecord(
        phase=failed.phase,
        attempt=1,
        started_at=created + 1,
        ended_at=ended,
        outcome="error",
        error=failed.message,
        failure=failure,
    )
    fence = Fence(worker="seed", claim_sequence=claimed.claim_sequence or claimed.sequence)
    storage.commit(
        failed.job_id,
        fence,
        Commit(seen=claimed, kind="error", now_ms=ended, expires_at=expires, record=record, error=failed.message),
    )
