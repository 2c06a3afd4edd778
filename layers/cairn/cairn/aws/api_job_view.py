"""The job as the API shows it (``GET /jobs/{jobId}``, and the job every write route answers with), and the
fields that hand a value too large for one reply over as a link."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ..core.models import Job, JobStatus, PhaseRecord, WireModel
from ..core.storage_port import ObjectLink
from ..features.prices import PriceTable
from .api_cost import CostView
from .stall_view import StalledView


class CutShort(WireModel):
    """A phase run a cancel cut short: which phase, when its claim began, when the cancel landed."""

    phase: str
    started_at: int = Field(description="When the run's claim began (Unix ms)")
    ended_at: int = Field(description="When the cancel landed (Unix ms)")

    @classmethod
    def of(cls, job: Job) -> CutShort | None:
        """The run ``job``'s cancel cut short; None unless it is cancelled with a claim's start and no lease."""
        cut = job.status == JobStatus.CANCELLED and job.claimed_at is not None and job.lease_owner is None
        if not cut or job.claimed_at is None or job.checkpoint is None:
            return None
        return cls(phase=job.checkpoint.next_phase, started_at=job.claimed_at, ended_at=job.updated_at)


def _url(value: str) -> Any:
    """The field of the link handing ``value`` over (absent unless it is too large for the reply)."""
    return Field(
        default=None,
        exclude_if=lambda url: url is None,
        description=f"Instead of {value}, when it is too large for one reply: a short-lived link whose plain GET "
        f"answers the {value}'s JSON (gzipped when {value}Encoding is gzip)",
    )


def _size(value: str) -> Any:
    """The field of the bytes a link to ``value`` answers."""
    return Field(
        default=None, exclude_if=lambda size: size is None, description=f"With {value}Url: the bytes it answers"
    )


def _encoding(value: str) -> Any:
    """The field of how a link to ``value`` answers it."""
    return Field(
        default=None, exclude_if=lambda encoding: encoding is None, description=f"With {value}Url: gzip or json"
    )


def _expiry(value: str) -> Any:
    """The field of when a link to ``value`` stops working."""
    return Field(
        default=None, exclude_if=lambda at: at is None, description=f"With {value}Url: when it stops working (Unix ms)"
    )


class LinkedState(WireModel):
    """A reply's state handed over as a link when it is too large for the reply (:mod:`.api_limits`): ``stateUrl``,
    a presigned GET of the object holding it, with its size, encoding and expiry; ``state`` is then absent."""

    state_url: str | None = _url("state")
    state_bytes: int | None = _size("state")
    state_encoding: Literal["gzip", "json"] | None = _encoding("state")
    state_url_expires_at: int | None = _expiry("state")

    LINKED: ClassVar[tuple[str, ...]] = ("state",)
    """The values of the reply that may be handed over as links: each ``X`` has the fields ``X_url``, ``X_bytes``,
    ``X_encoding`` and ``X_url_expires_at``."""

    @model_serializer(mode="wrap")
    def _values_or_their_links(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]  # noqa: ANN202
        """A value handed over as a link is absent from the reply (a null there would be a value). No return
        annotation: with one, the OpenAPI document would describe the reply by it instead of by the model's fields."""
        data: dict[str, Any] = handler(self)
        for value in self.LINKED:
            if getattr(self, f"{value}_url") is not None:
                data.pop(value, None)
        return data

    @staticmethod
    def fields_of(link: ObjectLink, value: str = "state") -> dict[str, Any]:
        """The fields handing ``value`` over as ``link``, by their Python names."""
        return {
            f"{value}_url": link.url,
            f"{value}_bytes": link.size,
            f"{value}_encoding": "gzip" if link.encoding == "gzip" else "json",
            f"{value}_url_expires_at": link.expires_at,
        }


class JobView(LinkedState):
    """A job as the API shows it. ``state`` (the checkpoint's state) only when asked for; too large for the reply,
    a link to it instead (``stateUrl``). A result too large for the reply likewise comes as ``resultUrl``."""

    LINKED: ClassVar[tuple[str, ...]] = ("state", "result")

    job_id: str
    pipeline: str
    status: JobStatus
    next_phase: str | None = Field(default=None, description="The phase the checkpoint names; null without one")
    checkpoint_created_at: int | None = Field(
        default=None, description="When the checkpoint was written (Unix time in milliseconds); null without one"
    )
    sequence: int = Field(default=0, description="How many state-changing writes the job has had (checkpoint writes)")
    state_version: int | None = Field(
        default=None,
        exclude_if=lambda version: version is None,
        description="The pipeline's state_version the checkpoint's state was saved with; absent: 1, or no checkpoint "
        "(see State migrations)",
    )
    waiting_for: str | None = Field(default=None, description="The signal a waiting job waits for")
    wait_deadline: int | None = Field(
        default=None, description="When a waiting job times out (Unix time in milliseconds); null: never"
    )
    wake_at: int | None = Field(
        default=None, description="When a sleeping job, or a retry's backoff, ends (Unix time in milliseconds)"
    )
    share_wait: str | None = Field(
        default=None,
        exclude_if=lambda reason: reason is None,
        description="Why a running job waits: its owner's share is taken (\"waiting for its owner's share: 2 of 2 "
        'phases running"); it runs when a phase of its owner ends (wakeAt: when it looks again)',
    )
    attempt: int
    claimed_at: int | None = Field(
        default=None,
        description="When the phase run in flight began (Unix time in milliseconds): its worker's claim; null when "
        "no worker holds the job. A crash report keeps it, so the crashed attempt's record starts then",
    )
    cut_short: CutShort | None = Field(
        default=None,
        exclude_if=lambda run: run is None,
        description="The phase run a cancel cut short (its worker could no longer commit): present on a cancelled "
        "job that a worker held when it was cancelled",
    )
    stalled: StalledView | None = Field(
        default=None,
        exclude_if=lambda stall: stall is None,
        description="Present while the job is stalled (running, but no worker holds it, or its map's items are done "
        "and the next phase never started): since when, why, what the sweep will do and when; "
        "POST /jobs/{jobId}/nudge does it now",
    )
    error: str | None = None
    result: Any = None
    result_url: str | None = _url("result")
    result_bytes: int | None = _size("result")
    result_encoding: Literal["gzip", "json"] | None = _encoding("result")
    result_url_expires_at: int | None = _expiry("result")
    usage: dict[str, int | float] = Field(default_factory=dict)
    phases: list[PhaseRecord] = Field(
        default_factory=list,
        description="The phase records of the job's newest writes (about ten), oldest first; historyCursor reads "
        "the older ones",
    )
    history_cursor: str | None = Field(
        default=None,
        description="The cursor of the job's older history, for GET /jobs/{jobId}/history?cursor=; null: phases "
        "holds every record",
    )
    created_at: int = Field(description="Unix time in milliseconds")
    updated_at: int = Field(description="Unix time in milliseconds")
    expires_at: int = Field(description="Unix time in seconds after which the job is gone")
    state: Any = Field(
        default=None,
        exclude_if=lambda state: state is None,
        description="The checkpoint's state; present only with ?includeState=true and a checkpoint",
    )
    input: Any = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The state the job was started with (what Start over uses unless given another); present only "
        "with ?includeInput=true",
    )
    cost: CostView | None = Field(
        default=None,
        exclude_if=lambda cost: cost is None,
        description="What the job has cost so far, in all and per phase run, at the deployment's prices",
    )
    rerun_phases: list[str] | None = Field(
        default=None,
        exclude_if=lambda phases: phases is None,
        description="The phases a rerun (mode from) may start from, in the pipeline's order: its phases but those "
        "the job runs only as a map's items (a rerun from one is refused). Present on GET /jobs/{jobId} when "
        "this deployment runs the job's pipeline",
    )

    @classmethod
    def of(
        cls,
        job: Job,
        *,
        include_state: bool = False,
        include_input: bool = False,
        rerun_phases: list[str] | None = None,
        history_cursor: str | None = None,
        prices: PriceTable | None = None,
        stalled: StalledView | None = None,
    ) -> JobView:
        """The view of a stored job (with ``rerun_phases`` when the caller worked them out).

        ``history_cursor`` is the cursor of the history older than ``job.phases`` (a job view read
        with only its newest history: :meth:`cairn.core.storage_port.Storage.get_job_view`). With ``prices``
        the view carries the job's cost.
        """
        checkpoint = job.checkpoint
        return cls(
            job_id=job.job_id,
            pipeline=job.pipeline,
            status=job.status,
            next_phase=checkpoint.next_phase if checkpoint else None,
            checkpoint_created_at=checkpoint.created_at if checkpoint else None,
            sequence=job.sequence,
            state_version=checkpoint.state_version if checkpoint else None,
            waiting_for=job.waiting_for,
            wait_deadline=job.wait_deadline,
            wake_at=job.not_before if job.status == JobStatus.RUNNING else None,
            share_wait=job.share_wait if job.status == JobStatus.RUNNING else None,
            attempt=job.attempt,
            claimed_at=job.claimed_at if job.lease_owner is not None else None,
            cut_short=CutShort.of(job),
            stalled=stalled,
            error=job.error,
            result=job.result,
            usage=dict(job.usage),
            phases=list(job.phases),
            created_at=job.created_at,
            updated_at=job.updated_at,
            expires_at=job.expires_at,
            state=checkpoint.state if include_state and checkpoint else None,
            input=job.input if include_input else None,
            rerun_phases=rerun_phases,
            history_cursor=history_cursor,
            cost=CostView.of(job, prices) if prices is not None else None,
        )
