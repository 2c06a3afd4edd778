"""Serialised AWS clients for local runs: moto applies a conditional write in two steps, DynamoDB in one.

moto checks a write's condition and then applies it, so two threads can both
pass a condition that DynamoDB would let only one pass. A client whose calls
never overlap gives local runs and tests DynamoDB's per-request atomicity.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar, cast

_Client = TypeVar("_Client")


class _OneCallAtATime:
    """A client proxy whose API calls never overlap."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name.startswith("_") or not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attribute(*args, **kwargs)

        return call


def one_call_at_a_time(client: _Client) -> _Client:
    """``client`` with its calls serialised, so moto's conditional writes are atomic as DynamoDB's are."""
    return cast(_Client, _OneCallAtATime(client))
