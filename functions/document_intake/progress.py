"""Plain-text progress for the demo: one flushed line per phase outcome and per saved page."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from cairn import Cairn, Job
from cairn.core.models import PhaseRecord
from cairn.core.storage_port import Storage

from .state import IntakeState


def plural(count: int, noun: str) -> str:
    """``1 page``, ``3 pages``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def state_of(job: Job) -> IntakeState | None:
    """The job's checkpointed state, if it has a checkpoint."""
    return IntakeState.model_validate(job.checkpoint.state) if job.checkpoint is not None else None


def _outcome(record: PhaseRecord) -> str:
    if record.outcome == "next":
        return f"next -> {record.next_phase}"
    if record.outcome in ("error", "retry", "unknown-phase"):
        return f"{record.outcome}: {record.error}"
    return record.outcome


def _detail(job: Job, phase: str) -> str:
    if job.result is not None:
        document = job.result.get("document", {})
        return f'{document.get("kind")}: "{document.get("title")}"'
    state = state_of(job)
    if state is None or job.error:
        return ""
    if phase == "fetch":
        return f"{plural(state.characters, 'character')} from {state.source}"
    if phase == "split":
        return plural(len(state.pages), "page")
    if phase == "extract":
        return f"{plural(state.pages_done, 'page')} extracted"
    return ""


class Progress:
    """Prints what a job does as it runs; every line is flushed at once."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._mark = time.perf_counter()

    def say(self, text: str = "") -> None:
        """Print one line now."""
        print(text, file=self.out, flush=True)

    def _lap_ms(self) -> float:
        now = time.perf_counter()
        elapsed, self._mark = (now - self._mark) * 1000, now
        return elapsed

    def page_saved(self, job: Job) -> int:
        """Report a mid-phase checkpoint as ``extract  page 2/4 saved``; returns the pages done."""
        state = state_of(job)
        done, total = (state.pages_done, len(state.pages)) if state else (0, 0)
        phase = job.checkpoint.next_phase if job.checkpoint else "?"
        self.say(f"  {phase:<8} {f'page {done}/{total} saved':<24} {self._lap_ms():7.1f} ms")
        return done

    def _announce(self, storage: Storage, job_id: str, phase: str) -> None:
        job = storage.get_job(job_id)
        state = state_of(job) if job is not None else None
        if state is None or phase != "extract" or not state.pages_done:
            return
        done, total = state.pages_done, len(state.pages)
        if done < total:
            self.say(f"  {phase:<8} resumes at page {done + 1}/{total} ({plural(done, 'page')} already saved)")
        else:
            self.say(f"  {phase:<8} resumes with all {plural(total, 'page')} already saved")

    def advancer(self, app: Cairn) -> Callable[..., Job | None]:
        """A function for ``InlineScheduler.bind``: advance the job through ``app``, then print what the phase did."""

        def advance(job_id: str, *, phase: str, sequence: int | None = None, **extra: Any) -> Job | None:
            self._announce(app.storage, job_id, phase)
            self._mark = time.perf_counter()
            started = self._mark
            job = app.advance(job_id, phase=phase, sequence=sequence, **extra)
            elapsed = (time.perf_counter() - started) * 1000
            if job is None:
                self.say(f"  {phase:<8} nothing to do (the job is not running or was already advanced)")
                return None
            record = job.phases[-1]
            line = f"  {record.phase:<8} {_outcome(record):<24} {elapsed:7.1f} ms   {_detail(job, record.phase)}"
            self.say(line.rstrip())
            return job

        return advance
