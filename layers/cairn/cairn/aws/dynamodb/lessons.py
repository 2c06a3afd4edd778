"""The pipelines' memory in the checkpoint table: one item per lesson, apart from every job.

- ``pk = MEM#<owner>#<pipeline>``, ``sk = L#<recordedAt, 13 digits>#<lesson key>``: an owner's lessons
  of one pipeline, oldest to newest, so a recall is one query read backwards. No index attribute is set:
  listings and the sweep never see them.
- ``expiresAt`` is the memory's own TTL (``Pipeline(memory_ttl=...)``); a recall leaves out an expired
  lesson whether or not DynamoDB has deleted it yet.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ...core import lessons as lesson_rules
from ...core.lessons import StoredLesson
from ...core.models import Lesson
from .attributes import Item, from_item, location, to_item
from .table import Table

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


class Lessons:
    """The lessons one owner's pipelines remember."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        """Plain puts of the lessons (a batch for several): a lesson written again lands on its own item."""
        records = lesson_rules.stored(lessons, expires_at)
        if records:
            self.table.put_items([lesson_item(self.table.owner, pipeline, record) for record in records])

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        """The newest lessons: the partition read newest first, a page at a time, until ``limit`` are found."""
        wanted = lesson_rules.checked_limit(limit)
        found: list[lesson_rules.StoredLesson] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table.name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": to_item({":pk": memory_pk(self.table.owner, pipeline)}),
            "ScanIndexForward": False,
            "Limit": wanted * 2,
        }
        now = self.table.clock()
        while True:
            page = self.table.call(self.table.client.query, **kwargs)
            found.extend(record for record in map(decode_lesson, page.get("Items", [])) if record is not None)
            newest = lesson_rules.newest(found, now, wanted)
            start = page.get("LastEvaluatedKey")
            if len(newest) >= wanted or not start:
                return newest
            kwargs["ExclusiveStartKey"] = start
