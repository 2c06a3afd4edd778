"""``POST /jobs/{jobId}/nudge``: what the sweep would do for a stalled job, now.

The advance is scheduled through :func:`cairn.scheduling.recovery.revive` at the job's sequence, so a nudge sent
twice, or one that lands after the sweep's (or after the job moved on), runs nothing twice. The nudge is recorded
in the job's log with the caller, once per sequence (:meth:`~cairn.core.storage_port.Storage.note_nudge`). A job
that is not stalled (not running, held by a live worker, written recently, its map's items still running) is
refused with 409 saying why.
"""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import Field

from ..core.errors import JobNotFoundError
from ..core.ids import validate_job_id
from ..core.models import WireModel
from ..core.transitions.history import action_entry
from ..scheduling import recovery
from .api_errors import ApiError
from .api_routes import JobIdPath, caller, responses
from .api_services import current_services
from .observability import logger, metrics
from .stall_view import stall_of

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The nudge route, included in the API's resolver."""


class NudgeResult(WireModel):
    """What a nudge scheduled."""

    job_id: str
    phase: str = Field(description="The phase scheduled again")
    sequence: int = Field(description="The sequence it is scheduled at: an advance at an older one does nothing")
    first: bool = Field(
        description="False when a nudge at this sequence was already recorded (this one, sent again, or another "
        "caller's): the advance is scheduled again, which runs nothing twice"
    )


@router.post(
    "/jobs/<jobId>/nudge",
    status_code=HTTPStatus.ACCEPTED.value,
    summary="Revive a stalled job now",
    description="Schedules the stalled job's next phase again at its sequence, as the sweep would (a duplicate or "
    "late nudge runs nothing twice), and records the nudge and its caller in the job's log once per sequence. 409 "
    "when the job is not stalled (not running, a worker holds it, it was written recently, or its map's items are "
    "still running), saying why. Reads the job's small item (and its map's record when it is in a map).",
    tags=["jobs"],
    responses=responses(HTTPStatus.ACCEPTED, "The advance is scheduled", HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT),
)
def nudge(job_id: JobIdPath) -> NudgeResult:
    services = current_services()
    owner = caller(router)
    logger.append_keys(job_id=validate_job_id(job_id))
    storage = services.cairn(owner).storage
    job = storage.get_current_job(job_id, payloads=False)
    if job is None:
        raise JobNotFoundError(job_id)
    settings = services.runtime.settings
    stall = stall_of(storage, job, settings)
    if stall is None:
        map_record = storage.get_map(job_id, job.fan_out.id) if job.fan_out is not None else None
        why = recovery.why_not_stalled(
            job, storage.clock(), idle_seconds=settings.sweep_idle_seconds, map_record=map_record
        )
        raise ApiError(HTTPStatus.CONFLICT, "conflict", f'Job "{job_id}" is not stalled: {why}')
    if stall.phase is None:
        raise ApiError(HTTPStatus.CONFLICT, "conflict", f'Job "{job_id}" is stalled but names no phase to run next')
    pipeline = services.pipeline_of(job_id, job.pipeline)
    entry = action_entry(f"Nudged: {stall.phase} scheduled again at sequence {stall.sequence}", owner, storage.clock())
    first = storage.note_nudge(job_id, entry, sequence=stall.sequence)
    logger.info("Nudged a stalled job", extra={"by": owner, "phase": stall.phase, "sequence": stall.sequence})
    recovery.revive(services.runtime.start_scheduler(owner, pipeline), job_id, stall.phase, stall.sequence)
    metrics.add_metric(name="JobsNudged", unit=MetricUnit.Count, value=1)
    return NudgeResult(job_id=job_id, phase=stall.phase, sequence=stall.sequence, first=first is not False)
