"""Bulk operations in the job table (:mod:`cairn.core.bulk_port`): a record, its pages of ids, one outcome a job.

Under ``pk = BULK#<owner>#<bulkId>`` (never in an index: none of the items has an index's key attributes):

- ``sk = BULK``: the record (who, what, when, how many selected, how many pages, the selection token) and
  ``pageCounts``, each page's outcome counts, recounted by the worker (a ``SET``, so a repeat counts nothing twice).
- ``sk = PAGE#<selection>#<page>``: up to 1,000 selected ids and each one's status at selection. Written before
  the record, which is put only if absent: a resent request that lost the race leaves its pages unnamed.
- ``sk = OUT#<page>#<index>``: a job's claim (``attempt``, ``leaseUntil``, ``fence``: the job's sequence at the
  first claim) and then its outcome (``outcome``, ``detail``, ``at``). Every write to it is conditional.

Every item carries ``expiresAt`` (the table's TTL).
"""

from __future__ import annotations

from typing import Any, cast

from ...core.bulk_port import (
    OUTCOMES,
    PAGE_SIZE,
    BulkOperations,
    BulkRecord,
    Held,
    JobClaim,
    JobOutcome,
    Outcome,
    Selected,
)
from .attributes import from_item, to_item
from .table import ConditionFailed, Table

RECORD_SK = "BULK"
PAGE_PREFIX = "PAGE#"
OUTCOME_PREFIX = "OUT#"
CLAIM_TTL_SECONDS = 7 * 86_400
"""How long a claim whose outcome never came is kept (an outcome sets the bulk's own expiry)."""


def _outcome_sk(page: int, index: int) -> str:
    return f"{OUTCOME_PREFIX}{page:05d}#{index:05d}"


class DynamoDBBulkOperations(BulkOperations):
    """One owner's bulk operations in the job table."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def _pk(self, bulk_id: str) -> str:
        return f"BULK#{self._table.owner}#{bulk_id}"

    def _key(self, bulk_id: str, sk: str) -> Any:
        return to_item({"pk": self._pk(bulk_id), "sk": sk})

    def create_bulk(self, record: BulkRecord, pages: list[list[Selected]], *, expires_at: int) -> BulkRecord:
        existing = self.get_bulk(record.bulk_id)
        if existing is not None:
            return existing
        pk = self._pk(record.bulk_id)
        items = [
            to_item(
                {
                    "pk": pk,
                    "sk": f"{PAGE_PREFIX}{record.selection}#{number:05d}",
                    "ids": [selected.job_id for selected in page],
                    "seen": [selected.status or "" for selected in page],
                    "expiresAt": expires_at,
                }
            )
            for number, page in enumerate(pages)
        ]
        if items:
            self._table.put_items(items)
        values = {
            "pk": pk,
            "sk": RECORD_SK,
            "bulkId": record.bulk_id,
            "bulkBy": record.by,
            "bulkAction": record.action,
            "startedAt": record.created_at,
            "selected": record.selected,
            "pages": record.pages,
            "selection": record.selection,
            "limit": record.limit,
            "selectedBy": dict(record.filter),
            "pageCounts": {},
            "expiresAt": expires_at,
        }
        try:
            self._table.call(
                self._table.client.put_item,
                TableName=self._table.name,
                Item=to_item(values),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            if failed.old:
                return _record(from_item(failed.old))
        return record

    def get_bulk(self, bulk_id: str) -> BulkRecord | None:
        response = self._table.call(
            self._table.client.get_item,
            TableName=self._table.name,
            Key=self._key(bulk_id, RECORD_SK),
            ConsistentRead=True,
        )
        item = response.get("Item")
        if not item or self._table.expired(item, self._table.clock()):
            return None
        return _record(from_item(item))

    def selected_page(self, record: BulkRecord, page: int) -> list[Selected]:
        response = self._table.call(
            self._table.client.get_item,
            TableName=self._table.name,
            Key=self._key(record.bulk_id, f"{PAGE_PREFIX}{record.selection}#{page:05d}"),
            ConsistentRead=True,
        )
        values = from_item(response.get("Item") or {})
        ids, seen = list(values.get("ids") or []), list(values.get("seen") or [])
        return [Selected(str(job_id), str(status) or None) for job_id, status in zip(ids, seen, strict=False)]

    def claim_job(
        self, record: BulkRecord, page: int, index: int, job_id: str, *, sequence: int, attempt: str, lease_ms: int
    ) -> JobClaim | Held | None:
        now = self._table.clock()
        try:
            response = self._table.call(
                self._table.client.update_item,
                TableName=self._table.name,
                Key=self._key(record.bulk_id, _outcome_sk(page, index)),
                UpdateExpression="SET jobId = :job, attempt = :attempt, leaseUntil = :lease, "
                "fence = if_not_exists(fence, :sequence), expiresAt = if_not_exists(expiresAt, :expires)",
                ConditionExpression="attribute_not_exists(outcome) AND "
                "(attribute_not_exists(leaseUntil) OR leaseUntil < :now)",
                ExpressionAttributeValues=to_item(
                    {
                        ":job": job_id,
                        ":attempt": attempt,
                        ":lease": now + lease_ms,
                        ":sequence": sequence,
                        ":expires": now // 1000 + CLAIM_TTL_SECONDS,
                        ":now": now,
                    }
                ),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            held = from_item(failed.old or {})
            return None if "outcome" in held else Held(int(held.get("leaseUntil", now)))
        old = from_item(response.get("Attributes") or {})
        if "fence" in old:
            return JobClaim(attempt=attempt, sequence=int(old["fence"]), first=False)
        return JobClaim(attempt=attempt, sequence=sequence, first=True)

    def record_outcome(
        self, record: BulkRecord, page: int, index: int, outcome: JobOutcome, *, attempt: str, expires_at: int
    ) -> bool:
        try:
            self._table.call(
                self._table.client.update_item,
                TableName=self._table.name,
                Key=self._key(record.bulk_id, _outcome_sk(page, index)),
                UpdateExpression="SET jobId = :job, outcome = :outcome, detail = :detail, #at = :at, "
                "expiresAt = :expires REMOVE leaseUntil",
                ConditionExpression="attempt = :attempt",
                ExpressionAttributeNames={"#at": "at"},
                ExpressionAttributeValues=to_item(
                    {
                        ":job": outcome.job_id,
                        ":outcome": outcome.outcome,
                        ":detail": outcome.detail[:1000],
                        ":at": outcome.at if outcome.at is not None else self._table.clock(),
                        ":expires": expires_at,
                        ":attempt": attempt,
                    }
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed:
            return False
        return True

    def outcomes(self, record: BulkRecord, page: int, start: int = 0, stop: int = PAGE_SIZE) -> dict[int, JobOutcome]:
        found: dict[int, JobOutcome] = {}
        if stop <= start:
            return found
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": to_item(
                {
                    ":pk": self._pk(record.bulk_id),
                    ":first": _outcome_sk(page, start),
                    ":last": _outcome_sk(page, stop - 1),
                }
            ),
            "ConsistentRead": True,
        }
        while True:
            response = self._table.call(self._table.client.query, **kwargs)
            for item in response.get("Items", []):
                values = from_item(item)
                index = int(str(values["sk"]).rsplit("#", 1)[1])
                outcome = values.get("outcome")
                found[index] = JobOutcome(
                    job_id=str(values.get("jobId", "")),
                    outcome=cast("Outcome", outcome) if outcome in OUTCOMES else None,
                    detail=str(values.get("detail", "")),
                    at=int(values["at"]) if "at" in values else None,
                )
            if not response.get("LastEvaluatedKey"):
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def note_progress(self, record: BulkRecord, page: int, counts: dict[str, int], *, finished_at: int | None) -> None:
        update = "SET pageCounts.#page = :counts"
        values: dict[str, Any] = {":counts": {name: int(counts.get(name, 0)) for name in OUTCOMES}}
        if finished_at is not None:
            update += ", finishedAt = if_not_exists(finishedAt, :finished)"
            values[":finished"] = finished_at
        self._table.call(
            self._table.client.update_item,
            TableName=self._table.name,
            Key=self._key(record.bulk_id, RECORD_SK),
            UpdateExpression=update,
            ExpressionAttributeNames={"#page": f"p{page:05d}"},
            ExpressionAttributeValues=to_item(values),
        )


def _record(values: dict[str, Any]) -> BulkRecord:
    """The record an item holds."""
    totals: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for counts in dict(values.get("pageCounts") or {}).values():
        for name in OUTCOMES:
            totals[name] += int(dict(counts).get(name, 0))
    finished = values.get("finishedAt")
    return BulkRecord(
        bulk_id=str(values["bulkId"]),
        by=str(values["bulkBy"]),
        action=values["bulkAction"],
        created_at=int(values["startedAt"]),
        selected=int(values["selected"]),
        pages=int(values["pages"]),
        selection=str(values["selection"]),
        limit=int(values["limit"]),
        filter=dict(values.get("selectedBy") or {}),
        counts=totals,
        finished_at=int(finished) if finished is not None else None,
    )
