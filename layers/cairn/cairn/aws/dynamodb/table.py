"""The table the store's parts share: one owner's view of it, and the requests every part makes.

A :class:`Table` holds the client (built lazily), the table's name, the owner, the item codec and
the clock. :meth:`Table.call` makes every AWS call and turns its errors into cairn's: a failed
condition becomes :class:`ConditionFailed` with the stored item, anything else a
:class:`~cairn.core.errors.StorageError`, retryable when sending it again may succeed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ...core import ttl
from ...core.clock import Clock
from ...core.errors import CorruptJobError, StorageError
from ..payloads import PayloadCodec
from . import schema
from .attributes import Item, location, to_item
from .codec import ItemCodec

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH_WRITE_LIMIT = 25
BATCH_ATTEMPTS = 5

RETRYABLE = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
}


class ConditionFailed(Exception):
    """The write's condition did not hold; ``old`` is the stored item (None when there is none)."""

    def __init__(self, old: Any) -> None:
        super().__init__("condition failed")
        self.old: Item | None = dict(old) if old else None


def written_by(item: Item | None, token: str) -> bool:
    """Whether the stored item is the one written with ``token`` (a repeated write that had landed)."""
    return item is not None and item.get("writeToken", {}).get("S") == token


class Table:
    """One DynamoDB table seen as one ``owner``: what every part of the store reads and writes through."""

    def __init__(
        self,
        name: str,
        *,
        owner: str,
        client: DynamoDBClient | None,
        payloads: PayloadCodec,
        clock: Clock,
    ) -> None:
        self.name = name
        self.owner = owner
        self.payloads = payloads
        self.codec = ItemCodec(owner, payloads)
        self.clock = clock
        self._client = client

    def for_owner(self, owner: str) -> Table:
        """The same table, client, payload codec and clock, seen as another owner."""
        return Table(self.name, owner=owner, client=self._client, payloads=self.payloads, clock=self.clock)

    @property
    def client(self) -> DynamoDBClient:
        """The DynamoDB client (the process-wide default unless one was injected)."""
        if self._client is None:
            from ..clients import default_dynamodb_client

            self._client = default_dynamodb_client()
        return self._client

    def key(self, job_id: str) -> Item:
        """The key of the job's item."""
        return to_item({"pk": self.codec.pk(job_id), "sk": schema.JOB_SK})

    def call(self, operation: Callable[..., Any], **kwargs: Any) -> Any:
        """Make one AWS call; translate its errors (after botocore's own retries) into cairn's.

        A timeout or a reset connection leaves a write's outcome unknown: it is
        a retryable StorageError, and the engine sends the same request again.
        """
        try:
            return operation(**kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed(exc.response.get("Item")) from exc
            retryable = code in RETRYABLE or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500
            raise StorageError(f"DynamoDB {code}: {error.get('Message', exc)}", retryable=retryable) from exc
        except BotoCoreError as exc:
            raise StorageError(f"DynamoDB request failed: {exc}", retryable=True) from exc

    def expired(self, item: Item, now_ms: int) -> bool:
        """Whether the item is past its TTL; an unreadable ``expiresAt`` is a CorruptJobError."""
        expires = item.get(schema.TTL_ATTRIBUTE)
        if expires is None:
            return False
        text = str(expires.get("N")) if isinstance(expires, dict) else ""
        if not text.isdigit() or len(text) > 16:
            raise CorruptJobError(location(item), f"its expiresAt is not a time ({text[:40]!r})")
        return ttl.is_past(int(text), now_ms)

    def query_partition(self, job_id: str, *, prefix: str | None = None) -> Iterator[Item]:
        """The job's items (consistent): without ``prefix``, the job and its history and input (not map items)."""
        start: dict[str, Any] | None = None
        while True:
            if prefix is None:
                condition, values = "pk = :pk AND sk < :items", {":items": schema.MAP_ITEM_PREFIX}
            else:
                condition, values = "pk = :pk AND begins_with(sk, :prefix)", {":prefix": prefix}
            kwargs: dict[str, Any] = {
                "TableName": self.name,
                "KeyConditionExpression": condition,
                "ExpressionAttributeValues": to_item({":pk": self.codec.pk(job_id), **values}),
                "ConsistentRead": True,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = self.call(self.client.query, **kwargs)
            yield from page.get("Items", [])
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def put_items(self, items: list[Item]) -> None:
        """Plain (unconditional, idempotent) writes of items beside a job: one request where there is one item."""
        if len(items) == 1:
            self.call(self.client.put_item, TableName=self.name, Item=items[0])
            return
        for start in range(0, len(items), BATCH_WRITE_LIMIT):
            requests: dict[str, Any] = {
                self.name: [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH_WRITE_LIMIT]]
            }
            for _ in range(BATCH_ATTEMPTS):
                response = self.call(self.client.batch_write_item, RequestItems=requests)
                requests = dict(response.get("UnprocessedItems") or {})
                if not requests:
                    break
            if requests:
                raise StorageError("DynamoDB left part of a write unprocessed; try again", retryable=True)
