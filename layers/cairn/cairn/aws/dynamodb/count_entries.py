"""What a count reads of one listing shard: its newest entries' keys and status fields, up to a bound."""

from __future__ import annotations

from typing import Any

from . import schema
from .attributes import Item, to_item
from .table import Table


def shard_entries(
    table: Table, shard: int, bound: int, *, created_before: int | None = None
) -> tuple[list[Item], bool]:
    """Up to ``bound`` of one shard's entries, newest first (what a count reads), and whether that is all; with
    ``created_before``, only the entries of jobs created before that time (a key condition: nothing newer is read)."""
    values: dict[str, Any] = {":key": schema.owner_key(table.owner, shard)}
    condition = "#key = :key"
    names = {"#key": "owner"}
    if created_before is not None:
        condition += " AND #created < :before"
        names["#created"] = "createdAt"
        values[":before"] = created_before
    kwargs: dict[str, Any] = {
        "TableName": table.name,
        "IndexName": schema.LISTING_INDEX,
        "KeyConditionExpression": condition,
        "ScanIndexForward": False,
        "ProjectionExpression": "#pk, #status, #statusAt, #statusExpiresAt",
        "ExpressionAttributeNames": {
            **names,
            "#pk": "pk",
            "#status": "status",
            "#statusAt": "statusAt",
            "#statusExpiresAt": "statusExpiresAt",
        },
        "ExpressionAttributeValues": to_item(values),
    }
    entries: list[Item] = []
    while len(entries) < bound:
        page = table.call(table.client.query, Limit=bound - len(entries), **kwargs)
        entries.extend(page.get("Items", []))
        if not page.get("LastEvaluatedKey"):
            return entries, True
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return entries, False
