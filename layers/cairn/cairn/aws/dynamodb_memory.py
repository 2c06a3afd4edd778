"""The pipelines' memory in the checkpoint table: one item per lesson, apart from every job.

- ``pk = MEM#<owner>#<pipeline>``, ``sk = L#<recordedAt, 13 digits>#<lesson key>``: an owner's lessons
  of one pipeline, oldest to newest, so a recall is one query read backwards. No index attribute is set:
  listings and the sweep never see them.
- ``expiresAt`` is the memory's own TTL (``Pipeline(memory_ttl=...)``); a recall leaves out an expired
  lesson whether or not DynamoDB has deleted it yet.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from ..core.lessons import StoredLesson
from ..core.models import Lesson
from .dynamodb_items import Item, from_item, location, to_item

logger = logging.getLogger(__name__)

MEMORY_PREFIX = "MEM#"
LESSON_PREFIX = "L#"


def memory_pk(owner: str, pipeline: str) -> str:
    """The partition of one owner's lessons of one pipeline."""
    return f"{MEMORY_PREFIX}{owner}#{pipeline}"


def lesson_item(owner: str, pipeline: str, record: StoredLesson) -> Item:
    """The DynamoDB item of a lesson record."""
    lesson = record.lesson
    values: dict[str, Any] = {
        "pk": memory_pk(owner, pipeline),
        "sk": f"{LESSON_PREFIX}{lesson.recorded_at:013d}#{record.key}",
        "lesson": lesson.to_wire(),
        "expiresAt": record.expires_at,
    }
    return to_item(values)


def decode_lesson(item: Item) -> StoredLesson | None:
    """The lesson record an item holds; None (logged) for one that cannot be read, which a recall skips."""
    try:
        values = from_item(item)
        return StoredLesson(Lesson.model_validate(values["lesson"]), int(values["expiresAt"]))
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        logger.warning("Skipped an unreadable lesson %s: %s", location(item), exc)
        return None
