"""A listing dearest first: one owner's jobs through the ``CostListing`` index, across the whole filter.

The index keys each job on its listing shard and on ``listCost``, its cost at its last status change
(:mod:`.cost_figures`). A page queries each of the owner's shards dearest first, from where the cursor left
it, and merges them by cost (:func:`.cursors.merge_newest_first`): page 2 starts where page 1 ended, and every
job matching the filter comes once. A filter (status, pipeline, created-time range, id prefix) filters the
entries on the server, so the order stays true; DynamoDB bills a Query for every entry it evaluates, those a
filter passes over included. An entry is 130 to 220 bytes and an eventually consistent read half a unit per
4 KB, so a page of 50 without a filter reads about 21 entries a shard: about 2 read units (0.04 a job); a
filter one job in ``n`` matches reads about ``n`` times that, at most ``MAX_ROUNDS`` x 4 x 250 entries (about
160 read units) before the page returns what it found, with a cursor.

What it does not order: a job whose status has not changed since the index came (it is not in it), and a
running job's phases since its last status change (its place is its cost then: a lower bound; its own view
has the cost as it is now).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ...core.errors import InvalidInputError, StorageError
from ...core.models import JobPage
from ...features.cost import plain_number
from ..listing import JobFilter
from . import schema
from .attributes import Item, to_item
from .cursors import decode_cursor, merge_newest_first
from .listings import Listings, _Listing

#: What a job item read for an entry that cannot answer gives: the summary and its listed cost.
COST_ITEM_ATTRIBUTES = [*schema.SUMMARY_ATTRIBUTES, schema.LISTED_COST_ATTRIBUTE]


class CostOrderUnavailable(StorageError):
    """The ``CostListing`` index is not there yet: a stack deployed before it, or one still building it."""


class _CostListing(_Listing):
    """A listing through ``CostListing``: every filter filters its entries."""

    @property
    def index(self) -> str:
        return schema.COST_LISTING_INDEX

    @property
    def filtered(self) -> bool:
        return not self.where.is_empty


def _cost_order(entry: Item) -> tuple[Decimal, ...]:
    """The order key of a ``CostListing`` entry: its listed cost."""
    try:
        return (Decimal(str(entry[schema.LISTED_COST_ATTRIBUTE].get("N"))),)
    except (KeyError, ArithmeticError):
        return (Decimal(schema.UNKNOWN_COST),)


class CostListings(Listings):
    """One owner's jobs, dearest first."""

    cursor_index = schema.COST_LISTING_INDEX
    item_attributes = COST_ITEM_ATTRIBUTES
    reads_failures = False  # a page dearest first reads its index entries alone

    def cost_page(self, *, cursor: str | None = None, limit: int = 50, where: JobFilter | None = None) -> JobPage:
        """One page of this owner's live jobs matching ``where``, dearest first (each summary's ``cost_usd`` is
        the cost it is ordered by); the cursor is bound to the filter and to this order.

        A cursor this listing did not return (a newest-first one included) is an InvalidInputError; a table
        without the index is a CostOrderUnavailable (retryable: an index being built).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be between 1 and 1000, got {limit!r}")
        where = where or JobFilter()
        scope = self.table.owner
        bound = scope if where.is_empty else f"{scope}?{where.fingerprint()}"
        positions = (
            decode_cursor(cursor, schema.COST_LISTING_INDEX, bound, scope)
            if cursor is not None
            else [None] * schema.LIST_SHARDS
        )
        return self._page(_CostListing(scope, where), positions, bound, limit)

    def _merge(self, fetched: list[list[Item]], frontiers: list[Item | None], limit: int) -> list[tuple[int, Item]]:
        return merge_newest_first(fetched, frontiers, limit, order=_cost_order)

    def _position(self, entry: Item) -> list[str]:
        cost = plain_number(_cost_order(entry)[0])
        return [cost, str(entry["pk"].get("S", "")).split("#", 2)[-1]]

    def _query(self, listing: _Listing, kwargs: dict[str, Any]) -> Any:
        try:
            return self.table.call(self.table.client.query, **kwargs)
        except StorageError as exc:
            cause = str(exc.__cause__ or "")
            if schema.COST_LISTING_INDEX in cause and ("ValidationException" in cause or "ResourceNotFound" in cause):
                raise CostOrderUnavailable(
                    "Jobs cannot be listed dearest first yet: the table's CostListing index is missing or still "
                    "being built (a stack updated to this release adds it; docs/OPERATIONS.md)",
                    retryable=True,
                ) from exc
            raise

    def _shard_query(self, listing: _Listing, shard: int, position: Any, limit: int) -> dict[str, Any]:
        """The Query of one shard, dearest first, after ``position``; every filter filters the entries."""
        where = listing.where
        key_value = schema.owner_key(listing.scope, shard)
        names = {"#key": "owner"}
        values: dict[str, Any] = {":key": key_value}
        filters = []
        status = where.status.value if where.status else None
        for attribute, value in (("status", status), ("pipeline", where.pipeline)):
            if value is not None:
                filters.append(f"#{attribute} = :{attribute}")
                names[f"#{attribute}"] = attribute
                values[f":{attribute}"] = value
        if where.created_from is not None:
            filters.append("#created >= :createdFrom")
            values[":createdFrom"] = where.created_from
        if where.created_to is not None:
            filters.append("#created <= :createdTo")
            values[":createdTo"] = where.created_to
        if where.created_from is not None or where.created_to is not None:
            names["#created"] = "createdAt"
        if where.id_prefix is not None:
            filters.append("begins_with(#pk, :idPrefix)")
            names["#pk"] = "pk"
            values[":idPrefix"] = self.table.codec.pk(where.id_prefix)
        kwargs: dict[str, Any] = {
            "TableName": self.table.name,
            "IndexName": schema.COST_LISTING_INDEX,
            "KeyConditionExpression": "#key = :key",
            "ScanIndexForward": False,
            "Limit": limit,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": to_item(values),
        }
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        if position is not None:
            cost, job_id = position
            kwargs["ExclusiveStartKey"] = {
                "owner": {"S": key_value},
                schema.LISTED_COST_ATTRIBUTE: {"N": cost},
                "pk": {"S": self.table.codec.pk(job_id)},
                "sk": {"S": schema.JOB_SK},
            }
        return kwargs
