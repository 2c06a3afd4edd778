"""What changed between two states: the one rule the API, the CLI and the dashboard show a diff by.

A change names its place by a JSON Pointer (RFC 6901: ``/items/0/name``, ``""`` for the whole
state), says whether a value was ``added``, ``removed`` or ``changed``, and carries the values on
either side. Objects are compared key by key, arrays index by index; any other difference (a
scalar, or an object against an array) is one ``changed`` at that place. The list is in document
order and stops after ``limit`` changes (``truncated`` says so), so two large unrelated states
never make a reply as large as both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

#: The most changes one diff lists; the rest are counted as ``truncated``.
MAX_CHANGES = 200

ChangeKind = Literal["added", "removed", "changed"]


class StateChange(BaseModel):
    """One difference between two states, at ``path`` (a JSON Pointer)."""

    path: str = Field(description='Where, as a JSON Pointer ("" is the whole state)')
    change: ChangeKind = Field(description="added (only after), removed (only before) or changed (both, unequal)")
    before: Any = Field(default=None, description="The value before (absent for added)")
    after: Any = Field(default=None, description="The value after (absent for removed)")

    @model_serializer(mode="wrap")
    def _without_the_missing_side(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An added value has no ``before`` and a removed one no ``after`` (a null there would be a value)."""
        data: dict[str, Any] = handler(self)
        data.pop({"added": "before", "removed": "after"}.get(self.change, ""), None)
        return data


class StateDiff(BaseModel):
    """The changes from one state to another, in document order, at most ``MAX_CHANGES`` of them."""

    changes: list[StateChange]
    truncated: bool = Field(description="More changes exist than the list holds")


def pointer(parent: str, step: str | int) -> str:
    """``parent`` extended by one key or index, escaped as RFC 6901 asks (``~`` as ``~0``, ``/`` as ``~1``)."""
    return f"{parent}/{str(step).replace('~', '~0').replace('/', '~1')}"


_MISSING: Any = object()


def _changes(before: Any, after: Any) -> Iterator[StateChange]:
    """Every change from ``before`` to ``after``, in document order (a stack, not recursion)."""
    pending: list[tuple[str, Any, Any]] = [("", before, after)]
    while pending:
        path, old, new = pending.pop()
        if new is _MISSING:
            yield StateChange(path=path, change="removed", before=old)
        elif old is _MISSING:
            yield StateChange(path=path, change="added", after=new)
        elif isinstance(old, dict) and isinstance(new, dict):
            keys = [*old, *(key for key in new if key not in old)]
            steps = [(pointer(path, key), old.get(key, _MISSING), new.get(key, _MISSING)) for key in keys]
            pending.extend(reversed(steps))
        elif isinstance(old, list) and isinstance(new, list):
            longest = max(len(old), len(new))
            steps = [
                (
                    pointer(path, index),
                    old[index] if index < len(old) else _MISSING,
                    new[index] if index < len(new) else _MISSING,
                )
                for index in range(longest)
            ]
            pending.extend(reversed(steps))
        elif type(old) is not type(new) or old != new:  # scalars, or an object against an array
            yield StateChange(path=path, change="changed", before=old, after=new)


def diff_states(before: Any, after: Any, *, limit: int = MAX_CHANGES) -> StateDiff:
    """The changes that turn JSON data ``before`` into ``after`` (at most ``limit`` listed)."""
    changes: list[StateChange] = []
    for change in _changes(before, after):
        if len(changes) == limit:
            return StateDiff(changes=changes, truncated=True)
        changes.append(change)
    return StateDiff(changes=changes, truncated=False)
