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


def take_start(table: Table, owner: str, limit: int, now_ms: int) -> StartCount:
    """Count one start of ``owner`` in the current minute while fewer than ``limit`` are counted there; refused,
    nothing is counted and ``retry_after`` is the seconds until the next minute."""
    window = now_ms // WINDOW_MS
    ends_ms = (window + 1) * WINDOW_MS
    try:
        table.call(
            table.client.update_item,
            TableName=table.name,
            Key=_key(owner, window),
            UpdateExpression="ADD #starts :one SET #expires = :expires",
            ConditionExpression="attribute_not_exists(#starts) OR #starts < :limit",
            ExpressionAttributeNames={"#starts": "starts", "#expires": "expiresAt"},
            ExpressionAttributeValues=to_item(
                {":one": 1, ":limit": limit, ":expires": epoch_seconds(ends_ms + KEPT_AFTER_MS)}
            ),
        )
    except ConditionFailed:
        return StartCount(window, max(1, math.ceil((ends_ms - now_ms) / 1000)))
    return StartCount(window)


def give_back(table: Table, owner: str, window: int) -> None:
    """Uncount a start counted in ``window`` that did not start a job (refused as bad input, say).

    A give-back that fails leaves the start counted: the owner's minute is only stricter."""
    try:
        table.call(
            table.client.update_item,
            TableName=table.name,
            Key=_key(owner, window),
            UpdateExpression="ADD #starts :less",
            ConditionExpression="#starts > :none",
            ExpressionAttributeNames={"#starts": "starts"},
            ExpressionAttributeValues=to_item({":less": -1, ":none": 0}),
        )
    except (ConditionFailed, StorageError):
        return
