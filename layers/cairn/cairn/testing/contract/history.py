"""The contract of reading a job a part at a time: the job view, its history newest first, its log oldest first."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import pytest

from ...core.errors import ClaimLostError, InvalidInputError
from ...core.models import HistoryItem, Job, LogEntry
from ...core.storage_port import Storage
from ...core.transitions import Journal
from ..clock import SkippingClock
from .base import JOB, ContractBase, claim_request, commit_request, fence_of, start_request, started, stored

#: Phase runs of the job the paging tests read (a start and one commit each: their log entries and records).
RUNS = 12


class _Page(Protocol):
    @property
    def cursor(self) -> str | None: ...


Page = TypeVar("Page", bound=_Page)
Item = TypeVar("Item")


def run_phase(storage: Storage, clock: SkippingClock, job: Job, note: str, *, job_id: str = JOB) -> Job:
    """Claim ``job`` and commit its phase to itself, the commit logging ``note``; the job as committed."""
    clock.advance(1)
    claimed = storage.claim(claim_request(clock, job))
    assert claimed is not None, "a claim of a running job at its sequence was refused"
    request = commit_request(clock, claimed, "next", next_phase="first", state={"note": note})
    entry = LogEntry(message=note, timestamp=clock(), phase="first")
    return storage.commit(job_id, fence_of(claimed), replace(request, journal=Journal(log=(entry,))))


def grown(storage: Storage, clock: SkippingClock, runs: int = RUNS, *, job_id: str = JOB) -> Job:
    """A job started and run through ``runs`` phases, each logging ``run <n>``; the job as stored."""
    job = started(storage, clock, job_id=job_id, state={"note": "start"})
    for number in range(runs):
        job = run_phase(storage, clock, job, f"run {number}", job_id=job_id)
    return stored(storage, job_id)


def every_history_page(storage: Storage, cursor: str | None, limit: int, *, job_id: str = JOB) -> list[list[Any]]:
    """The pages of history from ``cursor`` (the newest without one) to the first write, each newest first."""
    return every_page(lambda at: storage.history_page(job_id, at, limit), lambda page: page.items, cursor, "history")


def every_page(
    read: Callable[[str | None], Page | None], items: Callable[[Page], list[Item]], cursor: str | None, what: str
) -> list[list[Item]]:
    """The ``items`` of every page ``read`` returns from ``cursor`` on, each page's cursor reading the next."""
    pages: list[list[Item]] = []
    while True:
        page = read(cursor)
        assert page is not None, "the store lost the job"
        pages.append(items(page))
        if page.cursor is None:
            return pages
        assert len(pages) < 1000, f"the {what} pages do not end"
        cursor = page.cursor


def oldest_first(pages: list[list[HistoryItem]]) -> tuple[list[LogEntry], list[Any]]:
    """The log and the phase records the pages hold (each page newest first), oldest first."""
    items = [item for page in pages for item in page][::-1]
    return [entry for item in items for entry in item.log], [item.record for item in items if item.record]


def altered(cursor: str) -> list[str]:
    """Cursors made from ``cursor``: every position value changed to a list, and a field added."""
    values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    changed = {name: value if name in ("j", "r") else [value] for name, value in values.items()}

    def encoded(shape: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(shape).encode()).decode().rstrip("=")

    return [encoded(changed), encoded({**values, "extra": 1})]


class HistoryContract(ContractBase):
    """The job view, history pages and log pages: every write's history once, the newest first, none lost."""

    def test_a_job_view_holds_its_newest_history_and_the_older_pages_the_rest_once(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        whole = grown(storage, clock)

        view = storage.get_job_view(JOB, history=4)

        assert view is not None
        assert view.job.model_dump(exclude={"log", "phases"}) == whole.model_dump(exclude={"log", "phases"})
        assert len(view.job.phases) >= min(4, len(whole.phases)) - 1  # a start adds a log entry, no record
        assert whole.log[len(whole.log) - len(view.job.log) :] == view.job.log  # the newest: the log's end
        assert whole.phases[len(whole.phases) - len(view.job.phases) :] == view.job.phases
        if view.older is None:
            assert (view.job.log, view.job.phases) == (whole.log, whole.phases)
            return
        pages = every_history_page(storage, view.older, 5)
        log, phases = oldest_first(pages)
        assert (log + view.job.log, phases + view.job.phases) == (whole.log, whole.phases)

    def test_the_current_job_is_the_whole_job_but_for_its_log_and_phase_records(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        whole = grown(storage, clock)

        current = storage.get_current_job(JOB)

        assert current is not None
        assert current.model_dump(exclude={"log", "phases"}) == whole.model_dump(
            exclude={"log", "phases"}
        )  # state, input
        assert storage.get_current_job("nobody") is None
        bare = storage.get_current_job(JOB, payloads=False)  # a state and input kept apart may be left out
        assert bare is not None
        assert bare.model_dump(exclude={"log", "phases", "input", "checkpoint"}) == whole.model_dump(
            exclude={"log", "phases", "input", "checkpoint"}
        )
        assert bare.checkpoint is not None
        assert whole.checkpoint is not None
        assert (bare.checkpoint.next_phase, bare.checkpoint.created_at) == (
            whole.checkpoint.next_phase,
            whole.checkpoint.created_at,
        )

    def test_history_pages_hold_every_write_once_newest_first(self, storage: Storage, clock: SkippingClock) -> None:
        whole = grown(storage, clock)

        pages = every_history_page(storage, None, 5)

        assert all(0 < len(page) <= 5 for page in pages)
        assert oldest_first(pages) == (whole.log, whole.phases)
        newest = pages[0][0]
        assert newest.log == [whole.log[-1]]  # the newest write first

    def test_history_and_log_pages_leave_out_a_write_that_never_landed(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job = grown(storage, clock, 3)
        clock.advance(1)
        claimed = storage.claim(claim_request(clock, job))
        assert claimed is not None
        storage.start_job(start_request(clock, phase="first", seen=claimed, state={"note": "over"}))  # fences it
        lost = commit_request(clock, claimed, "next", next_phase="first", state={"note": "lost"})
        entry = LogEntry(message="the commit that never landed", timestamp=clock(), phase="first")
        with pytest.raises(ClaimLostError):
            storage.commit(JOB, fence_of(claimed), replace(lost, journal=Journal(log=(entry,))))
        run_phase(storage, clock, stored(storage), "after")
        whole = stored(storage)

        log, phases = oldest_first(every_history_page(storage, None, 2))
        entries = [entry for page in self.every_log_page(storage, 2) for entry in page]

        assert entry not in whole.log
        assert (log, phases) == (whole.log, whole.phases)
        assert entries == whole.log

    @staticmethod
    def every_log_page(storage: Storage, limit: int, *, job_id: str = JOB) -> list[list[LogEntry]]:
        """The pages of the job's log, oldest first."""
        return every_page(lambda at: storage.log_page(job_id, at, limit), lambda page: page.entries, None, "log")

    def test_log_pages_hold_the_whole_log_oldest_first(self, storage: Storage, clock: SkippingClock) -> None:
        whole = grown(storage, clock)

        for limit in (1, 3, 1000):
            pages = self.every_log_page(storage, limit)
            assert [entry for page in pages for entry in page] == whole.log
            assert all(len(page) == limit for page in pages[:-1])

    def test_a_cursor_of_another_job_altered_or_from_before_a_full_retry_is_refused(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job = grown(storage, clock, 6)
        grown(storage, clock, 6, job_id="other")
        history = storage.history_page(JOB, None, 2)
        log = storage.log_page(JOB, None, 2)
        assert history is not None
        assert history.cursor is not None
        assert log is not None
        assert log.cursor is not None

        for read in (storage.history_page, storage.log_page):
            with pytest.raises(InvalidInputError, match="Invalid cursor"):
                read("other", history.cursor if read == storage.history_page else log.cursor, 2)
        for bad in ("!!", "e30", "x" * 10_000, *altered(history.cursor), *altered(log.cursor)):
            for read in (storage.history_page, storage.log_page):
                with pytest.raises(InvalidInputError, match="Invalid cursor"):
                    read(JOB, bad, 2)

        over = replace(start_request(clock, seen=stored(storage), state={"note": "over"}), reset_history=True)
        storage.start_job(over)  # a full retry: a new run, with a new history

        assert stored(storage).run == job.run + 1
        with pytest.raises(InvalidInputError, match="started over"):
            storage.history_page(JOB, history.cursor, 2)
        with pytest.raises(InvalidInputError, match="started over"):
            storage.log_page(JOB, log.cursor, 2)

    def test_an_unknown_job_has_no_view_history_or_log(self, storage: Storage, clock: SkippingClock) -> None:
        assert storage.get_job_view("nobody") is None
        assert storage.history_page("nobody") is None
        assert storage.log_page("nobody") is None
