"""Each owner's API starts counted per minute in the job table: the per-owner start rate.

- Start-rate item: ``pk = RATE#<owner>``, ``sk = STARTS#<minute>`` (whole minutes since the epoch), with
  ``starts`` and ``expiresAt`` (two minutes after its minute ends: TTL removes it). It has no ``owner``,
  ``status`` or ``sweepKey``: no listing, count or sweep reads it.

Counting a start is one conditional ``UpdateItem`` (``ADD starts 1`` while ``starts`` is below the
limit), one write unit; a refused start changes nothing (DynamoDB still bills its write unit). A counted
start that then starts nothing (its state refused, its id taken) is given back, one more write unit. The check
and the count are one atomic step, however many API invocations race. A start whose response is lost and
is sent again counts twice: the owner's minute only gets stricter, never looser. The window is fixed, so
an owner may start up to twice the limit across the turn of a minute, never more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...core.errors import StorageError
from ...core.ttl import epoch_seconds
from .attributes import to_item
from .table import ConditionFailed, Table

RATE_PREFIX = "RATE#"
STARTS_PREFIX = "STARTS#"
WINDOW_MS = 60_000
"""The window starts are counted in: one minute."""
KEPT_AFTER_MS = 2 * WINDOW_MS
"""How long after its minute a count is kept before TTL may remove it."""


@dataclass(frozen=True)
class StartCount:
    """What counting a start did: counted in ``window`` (``retry_after`` None), or refused for ``retry_after`` s."""

    window: int
    retry_after: int | None = None


def _key(owner: str, window: int) -> dict[str, Any]:
    return to_item({"pk": f"{RATE_PREFIX}{owner}", "sk": f"{STARTS_PREFIX}{window}"})


NAMES = {"#starts": "starts", "#expires": "expiresAt"}
"""The attributes an update names (DynamoDB refuses a name the expressions do not use)."""


def _update(table: Table, owner: str, window: int, expression: str, condition: str, **values: Any) -> None:
    """One conditional ``UpdateItem`` of the owner's count in ``window``."""
    table.call(
        table.client.update_item,
        TableName=table.name,
        Key=_key(owner, window),
        UpdateExpression=expression,
        ConditionExpression=condition,
        ExpressionAttributeNames={
            name: attribute for name, attribute in NAMES.items() if name in expression + condition
        },
        ExpressionAttributeValues=to_item(values),
    )


def take_start(table: Table, owner: str, limit: int, now_ms: int) -> StartCount:
    """Count one start of ``owner`` in the current minute while fewer than ``limit`` are counted there; refused,
    nothing is counted and ``retry_after`` is the seconds until the next minute.

    A count that is not a number (written by hand, or corrupt) is not read as a limit reached: it is replaced
    by this start's count of 1, so the owner is never refused, nor the API down, for the rest of that minute."""
    window = now_ms // WINDOW_MS
    ends_ms = (window + 1) * WINDOW_MS
    expires = epoch_seconds(ends_ms + KEPT_AFTER_MS)
    try:
        _update(
            table,
            owner,
            window,
            "ADD #starts :one SET #expires = :expires",
            "attribute_not_exists(#starts) OR NOT attribute_type(#starts, :number) OR #starts < :limit",
            **{":one": 1, ":limit": limit, ":expires": expires, ":number": "N"},
        )
    except ConditionFailed:
        return StartCount(window, max(1, math.ceil((ends_ms - now_ms) / 1000)))
    except StorageError as exc:
        if exc.retryable:
            raise
        try:  # ADD found a count of another type: start the minute's count again, if it is still not a number
            _update(
                table,
                owner,
                window,
                "SET #starts = :one, #expires = :expires",
                "attribute_exists(#starts) AND NOT attribute_type(#starts, :number)",
                **{":one": 1, ":expires": expires, ":number": "N"},
            )
        except ConditionFailed:  # another start put a number there meanwhile: count this one as usual
            return take_start(table, owner, limit, now_ms)
    return StartCount(window)


def give_back(table: Table, owner: str, window: int) -> None:
    """Uncount a start counted in ``window`` that did not start a job (refused as bad input, say).

    A give-back that fails leaves the start counted: the owner's minute is only stricter."""
    try:
        _update(table, owner, window, "ADD #starts :less", "#starts > :none", **{":less": -1, ":none": 0})
    except (ConditionFailed, StorageError):
        return
