"""What changed between two states: the one rule the API, the CLI and the dashboard show a diff by.

A change names its place by a JSON Pointer (RFC 6901: ``/items/0/name``, ``""`` for the whole
state), says whether a value was ``added``, ``removed`` or ``changed``, and carries the values on
either side. Objects are compared key by key, arrays index by index; any other difference (a
scalar, or an object against an array) is one ``changed`` at that place. The list is in document
order and stops after ``limit`` changes, or once the changes listed take :data:`MAX_DIFF_CHARS` of
JSON (``truncated`` says so), so two large unrelated states never make a reply as large as both.

A value whose JSON (ASCII, as a reply escapes it) is longer than :data:`MAX_VALUE_CHARS` is cut: in its
place the start of that JSON text (a string ending with ``…``), and ``beforeCut``/``afterCut`` gives the
whole value's JSON length, so a reader knows it is not the value. Read a whole state with
``GET /jobs/{jobId}/states/{phase}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

#: The most changes one diff lists; the rest are counted as ``truncated``.
MAX_CHANGES = 200
#: The longest JSON (characters, non-ASCII escaped) a value of a change is shown whole at; a longer one is cut.
MAX_VALUE_CHARS = 4096
#: The JSON the changes of one diff may take, all told (characters): the list stops there (``truncated``).
MAX_DIFF_CHARS = 2 * 1024 * 1024

ChangeKind = Literal["added", "removed", "changed"]


class StateChange(BaseModel):
    """One difference between two states, at ``path`` (a JSON Pointer)."""

    path: str = Field(description='Where, as a JSON Pointer ("" is the whole state)')
    change: ChangeKind = Field(description="added (only after), removed (only before) or changed (both, unequal)")
    before: Any = Field(default=None, description="The value before (absent for added)")
    after: Any = Field(default=None, description="The value after (absent for removed)")
    before_cut: int | None = Field(
        default=None,
        serialization_alias="beforeCut",
        description="Present when before was cut: the whole value's JSON length; before holds its start",
    )
    after_cut: int | None = Field(
        default=None,
        serialization_alias="afterCut",
        description="Present when after was cut: the whole value's JSON length; after holds its start",
    )

    @model_serializer(mode="wrap")
    def _without_the_missing_side(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An added value has no ``before`` and a removed one no ``after`` (a null there would be a value);
        ``beforeCut``/``afterCut`` only for a value that was cut."""
        data: dict[str, Any] = handler(self)
        data.pop({"added": "before", "removed": "after"}.get(self.change, ""), None)
        for name, alias in (("before_cut", "beforeCut"), ("after_cut", "afterCut")):
            if getattr(self, name) is None:
                data.pop(name, None)
                data.pop(alias, None)
        return data

    def cut(self) -> tuple[StateChange, int]:
        """This change with each value longer than :data:`MAX_VALUE_CHARS` cut, and its JSON length then."""
        update: dict[str, Any] = {}
        for side in ("before", "after"):
            text = json.dumps(getattr(self, side), separators=(",", ":"))
            if len(text) > MAX_VALUE_CHARS:
                update[side] = text[:MAX_VALUE_CHARS] + "…"
                update[f"{side}_cut"] = len(text)
        change = self.model_copy(update=update) if update else self
        return change, len(json.dumps(change.model_dump(mode="json", by_alias=True), separators=(",", ":")))


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
    """The changes that turn JSON data ``before`` into ``after`` (at most ``limit`` listed, large values cut)."""
    changes: list[StateChange] = []
    total = 0
    for change in _changes(before, after):
        shown, size = change.cut()
        if len(changes) == limit or (changes and total + size > MAX_DIFF_CHARS):
            return StateDiff(changes=changes, truncated=True)
        changes.append(shown)
        total += size
    return StateDiff(changes=changes, truncated=False)
