"""What a count reads of one listing shard: its newest entries' keys and status fields, up to a bound."""

from __future__ import annotations

from typing import Any

from . import schema
from .attributes import Item, to_item
from .table import Table


def shard_entries(table: Table, shard: int, bound: int) -> tuple[list[Item], bool]:
    """Up to ``bound`` of one shard's entries, newest first (what a count reads), and whether that is all."""
    kwargs: dict[str, Any] = {
        "TableName": table.name,
        "IndexName": schema.LISTING_INDEX,
        "KeyConditionExpression": "#key = :key",
        "ScanIndexForward": False,
        "ProjectionExpression": "#pk, #status, #statusAt, #statusExpiresAt",
        "ExpressionAttributeNames": {
            "#key": "owner",
            "#pk": "pk",
            "#status": "status",
            "#statusAt": "statusAt",
            "#statusExpiresAt": "statusExpiresAt",
        },
        "ExpressionAttributeValues": to_item({":key": schema.owner_key(table.owner, shard)}),
    }
    entries: list[Item] = []
    while len(entries) < bound:
        page = table.call(table.client.query, Limit=bound - len(entries), **kwargs)
        entries.extend(page.get("Items", []))
        if not page.get("LastEvaluatedKey"):
            return entries, True
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return entries, False
