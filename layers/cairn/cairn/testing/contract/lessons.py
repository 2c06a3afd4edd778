"""The contract of a pipeline's memory: lessons kept per owner, newest first, replaced by key, until they expire."""

from __future__ import annotations

from ...core.models import Lesson
from ...core.storage_port import Storage
from ..clock import SkippingClock
from .base import PIPELINE, ContractBase, expiry


class LessonContract(ContractBase):
    """``remember`` and ``recall``."""

    def test_lessons_are_recalled_newest_first_up_to_the_limit(self, storage: Storage, clock: SkippingClock) -> None:
        lessons = [Lesson(text=f"lesson {n}", job_id=f"job-{n}", recorded_at=clock() + n) for n in range(3)]
        storage.remember(PIPELINE, lessons, expires_at=expiry(clock))

        assert [lesson.text for lesson in storage.recall(PIPELINE, 2)] == ["lesson 2", "lesson 1"]

    def test_remembering_again_replaces_and_owners_are_apart(self, storage: Storage, clock: SkippingClock) -> None:
        lesson = Lesson(text="check the totals", job_id="job-1", phase="extract", recorded_at=clock())
        storage.remember(PIPELINE, [lesson], expires_at=expiry(clock))
        storage.remember(PIPELINE, [lesson], expires_at=expiry(clock))  # sent again

        assert storage.recall(PIPELINE, 10) == [lesson]
        assert storage.recall("another-pipeline", 10) == []

    def test_a_lesson_past_its_expiry_is_not_recalled(self, storage: Storage, clock: SkippingClock) -> None:
        storage.remember(
            PIPELINE, [Lesson(text="soon gone", job_id="job-1", recorded_at=clock())], expires_at=expiry(clock, 60)
        )
        clock.advance(61)

        assert storage.recall(PIPELINE, 10) == []
