"""What a job saw: the state each phase was entered with, and what changed between two of them.

- ``GET /jobs/{jobId}/states/{phase}``: the state the job's newest entry into ``phase`` set, kept in its
  history for rerun-from-phase (404 when the job has not entered that phase since it last started over, or
  only waits to enter it: its checkpoint names the phase and no run of it has begun).
  A state too large for one reply (:mod:`.api_limits`) is answered as ``stateUrl``, a presigned GET of its
  S3 object valid :data:`LINK_SECONDS`, with ``stateBytes``, ``stateEncoding`` and ``stateUrlExpiresAt``.
- ``GET /jobs/{jobId}/diff?from=A&to=B``: when each phase was entered and the changes from A's state to B's
  (:mod:`cairn.aws.state_diff`: JSON Pointer paths, at most a bounded number of changes, large values cut).

Registered on the API's resolver by :mod:`cairn.aws.api`; the caller sees only its own jobs.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field

from ..app import Cairn
from ..core.models import WireModel
from .api_errors import ApiError
from .api_job_view import LinkedState
from .api_limits import LINK_SECONDS, TOO_LARGE, VALUE_ROOM, too_large_message, value_bytes
from .api_models import PhaseName
from .api_redaction import linking_refused
from .api_routes import JobIdPath, callers_jobs, responses
from .state_diff import StateChange, diff_states

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The routes of this module, included in the API's resolver."""


class PhaseEntry(WireModel):
    """Which checkpoint entered a phase: the phase and when."""

    phase: str = Field(description="The phase (its current name, or the name asked for)")
    entered_at: int = Field(description="When the checkpoint entering the phase was written (Unix ms)")
    state_version: int | None = Field(
        default=None,
        exclude_if=lambda version: version is None,
        description="The pipeline's state_version the state was saved with; absent: 1 (see State migrations)",
    )


class EnteredState(PhaseEntry):
    """The state a phase was entered with: the checkpoint that last entered it."""

    state: Any = Field(description="The state the phase started with")


class JobState(EnteredState, LinkedState):
    """``GET /jobs/{jobId}/states/{phase}``: the state inline, or (too large for one reply) a link to it."""

    job_id: str


class StateComparison(WireModel):
    """``GET /jobs/{jobId}/diff``: the changes from one phase's entry state to another's (not the states: see
    ``GET /jobs/{jobId}/states/{phase}``, so that two large states never make one reply of both)."""

    job_id: str
    before: PhaseEntry = Field(alias="from")
    after: PhaseEntry = Field(alias="to")
    changes: list[StateChange] = Field(description="In document order; paths are JSON Pointers")
    truncated: bool = Field(description="More changes exist than are listed")


PhasePath = Annotated[PhaseName, Path(alias="phase", description="The phase (or an old name of it)")]


def _entered(jobs: Cairn, job_id: str, phase: str, before: int | None = None) -> EnteredState:
    checkpoint = jobs.entered(job_id, phase, before=before)
    return EnteredState(
        phase=checkpoint.next_phase,
        entered_at=checkpoint.created_at,
        state=checkpoint.state,
        state_version=checkpoint.state_version,
    )


@router.get(
    "/jobs/<jobId>/states/<phase>",
    summary="The state a phase was entered with",
    description="The checkpoint that last entered the phase, as the job's history keeps it for rerun-from-phase. "
    "404 when the job has not entered that phase since it last started over, or only waits to enter it (its "
    "checkpoint names the phase and no run of it has begun). With before, the newest entry "
    "written at or before that time (an earlier run's: the dashboard compares two runs so). A state too large "
    "for one reply (about 5 MB once escaped) is not in the reply: stateUrl is a link (valid 5 minutes) whose plain "
    "GET answers it, with stateBytes, stateEncoding (gzip: the bytes are gzipped JSON) and stateUrlExpiresAt; "
    "500 reply_too_large when the store keeps it where no link can reach.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The phase's entry state", HTTPStatus.NOT_FOUND),
)
def get_entered_state(
    job_id: JobIdPath,
    phase: PhasePath,
    before: Annotated[
        int | None, Query(ge=0, description="Unix ms: the newest entry written at or before then (default: the newest)")
    ] = None,
) -> JobState:
    jobs = callers_jobs(router, job_id)
    checkpoint = jobs.entered(job_id, phase, before=before)
    entry = EnteredState(
        phase=checkpoint.next_phase,
        entered_at=checkpoint.created_at,
        state=None,
        state_version=checkpoint.state_version,
    )
    size = value_bytes(checkpoint.state)
    if size <= VALUE_ROOM:
        return JobState(job_id=job_id, **{**entry.model_dump(), "state": checkpoint.state})
    refused = linking_refused(jobs.pipelines, size)
    if refused is not None:
        raise refused
    link = jobs.entered_link(job_id, checkpoint, before=before, expires_in=LINK_SECONDS)
    if link is None:  # kept in the table (an older write, or a store without objects): no other way to send it
        raise ApiError(*TOO_LARGE, too_large_message(size))
    return JobState(job_id=job_id, **entry.model_dump(), **LinkedState.fields_of(link))


@router.get(
    "/jobs/<jobId>/diff",
    summary="What changed between two phases' states",
    description="The changes from the state the first phase was entered with to the second's (JSON Pointer "
    "paths; added, removed or changed; a bounded list). The states themselves: GET /jobs/{jobId}/states/{phase}.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "Both entry states and the changes between them", HTTPStatus.NOT_FOUND),
)
def get_state_diff(
    job_id: JobIdPath,
    before: Annotated[PhaseName, Query(alias="from", description="The phase whose entry state is the base")],
    after: Annotated[PhaseName, Query(alias="to", description="The phase whose entry state is compared with it")],
) -> StateComparison:
    jobs = callers_jobs(router, job_id)
    old, new = _entered(jobs, job_id, before), _entered(jobs, job_id, after)
    diff = diff_states(old.state, new.state)
    return StateComparison.model_validate(
        {
            "jobId": job_id,
            "from": PhaseEntry(phase=old.phase, entered_at=old.entered_at, state_version=old.state_version),
            "to": PhaseEntry(phase=new.phase, entered_at=new.entered_at, state_version=new.state_version),
            "changes": diff.changes,
            "truncated": diff.truncated,
        }
    )
