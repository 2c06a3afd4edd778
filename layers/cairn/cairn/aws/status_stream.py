"""The checkpoint table's stream, read for the job counts: Lambda's DynamoDB Streams event to status changes.

The scheduler function receives the stream's records of job items (the template's ``StatusCounts`` source
filters the rest out) and applies each owner's to its counts (:mod:`.dynamodb.status_counts`). A record that is
not a job item's, or cannot be read, is logged and skipped: it never holds up the stream. When an owner's counts
cannot be written, the batch is reported failed from its first record: Lambda delivers it again, and the owners
already applied skip what they counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .dynamodb import schema
from .dynamodb.status_counts import Image, StatusChange, StatusCounts
from .observability import logger

JOB_PREFIX = "JOB#"


def is_stream_event(records: list[Any]) -> bool:
    """Whether ``records`` are a DynamoDB stream's (not the delay queue's)."""
    return bool(records) and all(isinstance(r, dict) and r.get("eventSource") == "aws:dynamodb" for r in records)


def _image(image: Any) -> Image | None:
    """What a job item's image says of its count (None: no image)."""
    if not isinstance(image, Mapping):
        return None
    created = image.get("createdAt", {}).get("N") if isinstance(image.get("createdAt"), Mapping) else None
    status = image.get("status", {}).get("S") if isinstance(image.get("status"), Mapping) else None
    created_at = int(created) if isinstance(created, str) and created.isdigit() else 0  # no time: never counted
    return Image(created_at, status if isinstance(status, str) else "")


def status_changes(records: list[dict[str, Any]]) -> dict[str, list[StatusChange]]:
    """Each owner's changes of its job items, in the stream's order (records of other items left out)."""
    owners: dict[str, list[StatusChange]] = {}
    for record in records:
        change = record.get("dynamodb")
        keys = change.get("Keys") if isinstance(change, Mapping) else None
        pk = keys.get("pk", {}).get("S") if isinstance(keys, Mapping) and isinstance(keys.get("pk"), Mapping) else None
        sk = keys.get("sk", {}).get("S") if isinstance(keys, Mapping) and isinstance(keys.get("sk"), Mapping) else None
        event_id = record.get("eventID")
        if not isinstance(pk, str) or sk != schema.JOB_SK or not pk.startswith(JOB_PREFIX) or not event_id:
            continue
        owner = pk[len(JOB_PREFIX) :].partition("#")[0]
        assert isinstance(change, Mapping)
        before, after = _image(change.get("OldImage")), _image(change.get("NewImage"))
        if before is None and after is None:
            logger.warning("Skipped a stream record with no image", extra={"key": pk, "eventID": event_id})
            continue
        owners.setdefault(owner, []).append(StatusChange(str(event_id), before, after))
    return owners


def count_status_changes(records: list[dict[str, Any]], counts: StatusCounts) -> dict[str, Any]:
    """Apply a stream batch to its owners' counts; on a failure, the batch again from its first record."""
    failed = False
    for owner, changes in status_changes(records).items():
        try:
            counts.apply(owner, changes)
        except Exception:
            logger.exception("Could not apply an owner's status changes; the stream delivers them again")
            failed = True
    if not failed:
        return {"batchItemFailures": []}
    first = records[0].get("dynamodb", {}).get("SequenceNumber", "")
    return {"batchItemFailures": [{"itemIdentifier": first}]}
