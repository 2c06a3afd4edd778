"""A listing's cursor and its merge of the shards: each shard read in its own order, newest first.

A cursor is opaque to its reader: base64 of ``{v, i, k, p}``, the version, the index, the owner's key
and a position per shard (the last entry taken, ``"end"``, or none yet). Only a cursor this listing
returned is accepted.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ...core.errors import InvalidInputError
from ...core.ids import JOB_ID_PATTERN
from . import schema
from .attributes import Item

#: The longest cursor ``list_page`` accepts (one it returns is a few hundred characters).
MAX_CURSOR_CHARS = 4096
CURSOR_VERSION = 1
CURSOR_END = "end"

_INDEX_NUMBER = re.compile(r"^-?[0-9]{1,38}(\.[0-9]{1,38})?$")


def _is_index_number(value: Any) -> bool:
    """Whether ``value`` is a number as the index returns it (text, at most 38 digits), fit for a start key."""
    return isinstance(value, str) and bool(_INDEX_NUMBER.fullmatch(value)) and len(value.replace("-", "")) <= 39


def _order(item: Item) -> tuple[Decimal, str]:
    """A listing's order key of an index entry: ``(createdAt, jobId)``."""
    try:
        created_at = Decimal(str(item["createdAt"].get("N")))
    except (KeyError, ArithmeticError):
        created_at = Decimal(0)
    return created_at, str(item.get("pk", {}).get("S", "")).split("#", 2)[-1]


def position_of(item: Item) -> list[str]:
    """The cursor's position after an index entry: its ``createdAt`` as the index gave it, and its job id."""
    return [str(item["createdAt"].get("N")), str(item["pk"].get("S", "")).split("#", 2)[-1]]


def merge_newest_first(
    fetched: list[list[Item]],
    frontiers: list[Item | None],
    limit: int,
    order: Callable[[Item], tuple[Decimal, ...] | tuple[Decimal, str]] = _order,
) -> list[tuple[int, Item]]:
    """Up to ``limit`` entries of the shards' lists, newest first (greatest ``order`` first), each shard taken in
    its own order.

    ``frontiers`` holds, per shard, the last index entry its query examined when the shard has
    more (DynamoDB's ``LastEvaluatedKey``), else None. A shard none of whose fetched entries is left
    holds its unread ones behind its frontier: the merge stops before an entry older than that
    frontier, which one of them could be newer than. (A filter on the query can leave a shard with
    no entries and a frontier: entries newer than the frontier may still be taken from the others.)
    """
    taken: list[tuple[int, Item]] = []
    next_of = [0] * len(fetched)
    while len(taken) < limit:
        best: int | None = None
        for shard, entries in enumerate(fetched):
            if next_of[shard] < len(entries) and (
                best is None or order(entries[next_of[shard]]) > order(fetched[best][next_of[best]])
            ):
                best = shard
        if best is None:
            break
        candidate = order(fetched[best][next_of[best]])
        for shard, entries in enumerate(fetched):
            frontier = frontiers[shard]
            if next_of[shard] == len(entries) and frontier is not None and order(frontier) > candidate:
                return taken
        taken.append((best, fetched[best][next_of[best]]))
        next_of[best] += 1
    return taken


def encode_cursor(index: str, scope: str, positions: list[Any]) -> str:
    """The opaque cursor of a listing: its index, the owner's key, and a position per shard."""
    values = {"v": CURSOR_VERSION, "i": index, "k": scope, "p": positions}
    text = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def decode_cursor(cursor: str, index: str, scope: str, owner: str) -> list[Any]:
    """The per-shard positions a cursor of this listing holds; anything else is an InvalidInputError."""
    refused = InvalidInputError("Invalid cursor: it was not returned by this listing")
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
        raise refused
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True))
    except (ValueError, binascii.Error, RecursionError) as exc:
        raise refused from exc
    if not isinstance(values, dict) or set(values) != {"v", "i", "k", "p"}:
        raise refused
    if type(values["v"]) is not int or values["v"] != CURSOR_VERSION or values["i"] != index or values["k"] != scope:
        raise refused
    positions = values["p"]
    if not isinstance(positions, list) or len(positions) != schema.LIST_SHARDS:
        raise refused
    for shard, position in enumerate(positions):
        if position is None or position == CURSOR_END:
            continue
        if not (isinstance(position, list) and len(position) == 2 and _is_index_number(position[0])):
            raise refused
        job_id = position[1]
        if not isinstance(job_id, str) or not JOB_ID_PATTERN.fullmatch(job_id):
            raise refused
        if schema.list_shard(owner, job_id) != shard:
            raise refused
    return positions
