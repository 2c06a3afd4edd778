"""A map's records: the map's own record (its count of finished items and its marks) and one per item.

Both sit under the job's ``pk`` (:mod:`cairn.aws.dynamodb.schema`). An item's record is written on
the version read; the write that finishes an item and the count on the map's record are one
transaction.
"""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from ...core.errors import StorageError
from ...core.models import MapItem, MapMark, MapRecord
from . import schema
from .attributes import to_item
from .expressions import Expression
from .table import ConditionFailed, Table

_CANCELLATION_CODES = re.compile(
    r"\b(None|ConditionalCheckFailed|TransactionConflict|ItemCollectionSizeLimitExceeded|"
    r"ProvisionedThroughputExceeded|ThrottlingError|ValidationError)\b"
)


def _cancellation_reasons(exc: ClientError) -> list[str]:
    """Why a transaction was cancelled, one code per action in order ("None" for an action that was fine).

    DynamoDB sends them as ``CancellationReasons``; where a service leaves them out (moto, some
    versions), the message lists them: "... [None, ConditionalCheckFailed]".
    """
    reasons = [str(reason.get("Code")) for reason in exc.response.get("CancellationReasons", [])]
    if reasons:
        return reasons
    message = str(exc.response.get("Error", {}).get("Message", ""))
    return _CANCELLATION_CODES.findall(message[message.find("[") :] if "[" in message else "")


class _Cancelled(Exception):
    """A transaction was cancelled; ``reasons`` has one code per action."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = reasons


#: The attribute of a map's record that holds each of its marks.
_MAP_MARKS: dict[MapMark, str] = {"handed_off": "handedOff", "joined": "joined"}


class MapItems:
    """The map records of one owner's jobs."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        """The map's item records, in item order (one consistent query)."""
        items = self.table.query_partition(job_id, prefix=schema.map_items_prefix(fan_out))
        return [self.table.codec.decode_map_item(item) for item in items]

    def get_item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        """One item record: one consistent GetItem by its key."""
        key = to_item({"pk": self.table.codec.pk(job_id), "sk": schema.map_item_sk(fan_out, index)})
        response = self.table.call(self.table.client.get_item, TableName=self.table.name, Key=key, ConsistentRead=True)
        item = response.get("Item")
        return self.table.codec.decode_map_item(item) if item else None

    def write_item(
        self,
        job_id: str,
        fan_out: str,
        item: MapItem,
        *,
        expected_version: int | None,
        expires_at: int,
        finishes: bool = False,
    ) -> bool:
        """One conditional put: on the version read (or on no record); False when it no longer holds.

        With ``finishes`` the put and the count on the map's record are one transaction (both or
        neither); its client token is the record's write token, so botocore sending it again after a
        lost response applies it once.
        """
        encoded, keys = self.table.codec.map_item(job_id, fan_out, item, expires_at=expires_at)
        expression = Expression()
        if expected_version is None:
            expression.require(f"attribute_not_exists({expression.name('pk')})")
        else:
            expression.require(f"{expression.name('version')} = {expression.value('expected', expected_version)}")
        put = {"TableName": self.table.name, "Item": encoded, **expression.condition_kwargs()}
        try:
            if finishes:
                self._put_counted(job_id, fan_out, put, token=item.write_token, expires_at=expires_at)
            else:
                self.table.call(self.table.client.put_item, **put)
        except ConditionFailed:
            for key in keys:
                self.table.payloads.delete(key)
            return False
        return True

    def _put_counted(
        self, job_id: str, fan_out: str, put: dict[str, Any], *, token: str | None, expires_at: int
    ) -> None:
        """The item's put and one more finished item on its map's record, in one transaction.

        A map with no record yet (started before maps kept one) gets only a count, which reads as no record.
        """
        count = Expression()
        count.set_to("done", f"if_not_exists({count.name('done')}, {count.value('zero', 0)}) + {count.value('one', 1)}")
        count.set("expiresAt", expires_at)
        key = to_item({"pk": self.table.codec.pk(job_id), "sk": schema.map_record_sk(fan_out)})
        update = {"TableName": self.table.name, "Key": key, **count.update_kwargs()}
        request: dict[str, Any] = {"TransactItems": [{"Put": put}, {"Update": update}]}
        if token:
            request["ClientRequestToken"] = token

        def transact() -> Any:
            try:
                return self.table.client.transact_write_items(**request)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                    raise  # translated by Table.call, as every other error
                raise _Cancelled(_cancellation_reasons(exc)) from exc

        try:
            self.table.call(transact)
        except _Cancelled as cancelled:
            if cancelled.reasons[:1] == ["ConditionalCheckFailed"]:  # the item's version moved: not written
                raise ConditionFailed(None) from cancelled
            # another transaction on the map's record at the same moment (TransactionConflict): nothing written
            raise StorageError(
                f"DynamoDB transaction cancelled ({', '.join(cancelled.reasons)})", retryable=True
            ) from cancelled

    def create_map(self, job_id: str, record: MapRecord, *, expires_at: int) -> None:
        """One put on no record: a put sent again (a lost response) leaves the first as it is."""
        encoded = self.table.codec.map_record(job_id, record, expires_at=expires_at)
        expression = Expression()
        expression.require(f"attribute_not_exists({expression.name('pk')})")
        try:
            self.table.call(
                self.table.client.put_item, TableName=self.table.name, Item=encoded, **expression.condition_kwargs()
            )
        except ConditionFailed:
            return

    def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
        """The map's record: one consistent GetItem by its key."""
        key = to_item({"pk": self.table.codec.pk(job_id), "sk": schema.map_record_sk(fan_out)})
        response = self.table.call(self.table.client.get_item, TableName=self.table.name, Key=key, ConsistentRead=True)
        item = response.get("Item")
        return self.table.codec.decode_map_record(item) if item else None

    def get_maps(self, job_id: str) -> list[MapRecord]:
        """The records of the job's maps: one consistent query of their prefix (no item record among them)."""
        found = [
            self.table.codec.decode_map_record(item)
            for item in self.table.query_partition(job_id, prefix=schema.MAP_RECORD_PREFIX)
        ]
        records = [record for record in found if record is not None]
        return sorted(records, key=lambda record: (record.created_at, record.sequence, record.fan_out.id))

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        """One conditional update: the mark set to ``token`` if the record has none (or has this one)."""
        attribute = _MAP_MARKS[mark]
        expression = Expression()
        expression.set(attribute, token)
        held = expression.name(attribute)
        expression.require(
            f"attribute_exists({expression.name('map')}) AND "
            f"(attribute_not_exists({held}) OR {held} = {expression.value(attribute, token)})"
        )
        key = to_item({"pk": self.table.codec.pk(job_id), "sk": schema.map_record_sk(fan_out)})
        try:
            self.table.call(
                self.table.client.update_item, TableName=self.table.name, Key=key, **expression.update_kwargs()
            )
        except ConditionFailed:
            return False
        return True
