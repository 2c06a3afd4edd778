"""The bulk operations capability of the storage port: one action on many jobs, run later, once per job.

A store that keeps bulk operations gives a :class:`BulkOperations` from :meth:`cairn.Storage.bulk_operations`;
one that keeps none gives None (the port's default), and the API answers ``POST /bulk`` with a 501.

A bulk is its record (:class:`BulkRecord`: who asked, what, how many jobs), the ids it selected kept in pages of
at most :data:`PAGE_SIZE` (a selection of 10,000 does not fit one item) and one outcome a job. A job is acted on
at most once per bulk: a worker first claims the job's outcome (:meth:`BulkOperations.claim`, conditional, with a
lease, so two workers never hold it at once), and the claim keeps the job's sequence the first claim saw, which
fences the action: a later attempt (a worker retried after it died mid-way) finds the job moved past that
sequence and does not act again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Literal

BulkAction = Literal["retry", "restart", "cancel"]
"""What a bulk does to each job: ``retry`` resumes it, ``restart`` starts it over, ``cancel`` cancels it."""
Outcome = Literal["done", "refused", "errored"]
"""A job's outcome in a bulk: acted on, refused by the job as it was (status, sequence), or failed to act."""
OUTCOMES: tuple[Outcome, ...] = ("done", "refused", "errored")

MAX_BULK = 10_000
"""The most jobs one bulk acts on."""
PAGE_SIZE = 1_000
"""Selected ids kept a page (a page of the longest ids stays far below an item's 400 KB)."""


@dataclass(frozen=True)
class Selected:
    """A job a bulk selected, with its status then (None when it was named by id)."""

    job_id: str
    status: str | None = None


@dataclass(frozen=True)
class BulkRecord:
    """One bulk operation: who started it and when, what it does, to how many jobs, and how far it is."""

    bulk_id: str
    by: str
    action: BulkAction
    created_at: int
    selected: int
    pages: int
    selection: str
    """The token naming this bulk's pages (a resent request's pages never mix with these)."""
    limit: int
    filter: dict[str, object] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    """``done``, ``refused`` and ``errored`` so far."""
    finished_at: int | None = None

    @property
    def pending(self) -> int:
        """Jobs with no outcome yet."""
        return max(0, self.selected - sum(self.counts.get(name, 0) for name in OUTCOMES))


@dataclass(frozen=True)
class JobOutcome:
    """What a bulk did to one job; ``outcome`` None while it is pending."""

    job_id: str
    outcome: Outcome | None = None
    detail: str = ""
    at: int | None = None


@dataclass(frozen=True)
class JobClaim:
    """A worker's claim on one job of a bulk: ``sequence`` is the fence (the job's sequence at the first claim)."""

    attempt: str
    sequence: int
    first: bool
    """Whether this is the first claim (no earlier attempt saw the job)."""


@dataclass(frozen=True)
class Held:
    """Another attempt holds the job's claim until ``until`` (Unix ms)."""

    until: int


class BulkOperations(ABC):
    """Where one owner's bulk operations live."""

    @abstractmethod
    def create_bulk(self, record: BulkRecord, pages: list[list[Selected]], *, expires_at: int) -> BulkRecord:
        """Keep ``record`` and its pages (until ``expires_at``, Unix s); when a bulk with its id exists (a resent
        request), that one is returned and nothing is written over it."""

    @abstractmethod
    def get_bulk(self, bulk_id: str) -> BulkRecord | None:
        """The bulk, or None (unknown, expired, or another owner's)."""

    @abstractmethod
    def selected_page(self, record: BulkRecord, page: int) -> list[Selected]:
        """Page ``page`` (from 0) of the jobs the bulk selected."""

    @abstractmethod
    def claim_job(
        self, record: BulkRecord, page: int, index: int, job_id: str, *, sequence: int, attempt: str, lease_ms: int
    ) -> JobClaim | Held | None:
        """Claim the job at ``index`` of ``page`` for ``attempt`` for ``lease_ms``; ``sequence`` is the job's now.

        None when the job has an outcome already; :class:`Held` while another attempt's claim is live. A claim
        taken over from
        an attempt whose lease ran out keeps that attempt's sequence (``first`` False).
        """

    @abstractmethod
    def record_outcome(
        self, record: BulkRecord, page: int, index: int, outcome: JobOutcome, *, attempt: str, expires_at: int
    ) -> bool:
        """Record the outcome of a job ``attempt`` claims; False when another attempt holds it now."""

    @abstractmethod
    def outcomes(self, record: BulkRecord, page: int, start: int = 0, stop: int = PAGE_SIZE) -> dict[int, JobOutcome]:
        """The outcomes recorded for the jobs at ``start`` to ``stop`` (excluded) of ``page``, by index."""

    @abstractmethod
    def note_progress(self, record: BulkRecord, page: int, counts: dict[str, int], *, finished_at: int | None) -> None:
        """Set the outcome counts of ``page`` (recounted, so a repeated note does not count twice); with
        ``finished_at`` the bulk is finished."""
