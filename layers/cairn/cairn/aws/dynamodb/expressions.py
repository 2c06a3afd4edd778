"""A small builder for DynamoDB update and condition expressions with every attribute name aliased."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .attributes import Item, item_size, to_attribute, to_item


class Expression:
    """The parts of one ``UpdateItem``/``PutItem``: SET and REMOVE clauses, conditions, names and values."""

    def __init__(self) -> None:
        self._sets: list[str] = []
        self._removes: list[str] = []
        self._conditions: list[str] = []
        self._names: dict[str, str] = {}
        self._values: dict[str, Any] = {}
        self._assigned: dict[str, str] = {}
        self._copies: dict[str, str] = {}
        self._fallbacks: dict[str, str] = {}

    def name(self, path: str) -> str:
        """The aliased form of an attribute path (``a.b`` aliases each part)."""
        if "." not in path:
            alias = "#" + path
            self._names[alias] = path
            return alias
        aliased = []
        for part in path.split("."):
            self._names[f"#{part}"] = part
            aliased.append(f"#{part}")
        return ".".join(aliased)

    def value(self, key: str, value: Any) -> str:
        """A placeholder for ``value`` (one per ``key``)."""
        placeholder = f":{key}"
        self._values[placeholder] = value
        return placeholder

    def set(self, attribute: str, value: Any) -> Expression:
        """``SET attribute = value`` (a None value removes the attribute instead)."""
        if value is None:
            return self.remove(attribute)
        return self.set_to(attribute, self.value(attribute, value))

    def set_to(self, attribute: str, expression: str) -> Expression:
        """``SET attribute = <expression>`` (the expression uses ``name``/``value`` placeholders)."""
        self._sets.append(f"{self.name(attribute)} = {expression}")
        self._assigned[attribute] = expression
        return self

    def set_as(self, attribute: str, source: str) -> Expression:
        """``SET attribute`` to what this write sets ``source`` to, whenever that is set (before the write is sent)."""
        self.name(attribute)
        self._copies[attribute] = source
        return self

    def set_as_or(self, attribute: str, source: str, otherwise: str) -> Expression:
        """``SET attribute`` to what this write sets ``source`` to when it sets it, else to ``otherwise`` (an
        expression of placeholders, such as ``if_not_exists(#source, :none)``)."""
        self.name(attribute)
        self._copies[attribute] = source
        self._fallbacks[attribute] = otherwise
        return self

    def remove(self, *attributes: str) -> Expression:
        """``REMOVE attribute, ...``."""
        self._removes.extend(self.name(attribute) for attribute in attributes)
        return self

    def remove_elements(self, attribute: str, indexes: Iterable[int]) -> Expression:
        """``REMOVE attribute[i], ...``: list elements by their position before the write."""
        aliased = self.name(attribute)
        self._removes.extend(f"{aliased}[{int(index)}]" for index in indexes)
        return self

    def require(self, condition: str) -> Expression:
        """Add a condition (all conditions must hold)."""
        self._conditions.append(f"({condition})")
        return self

    def update_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``update_item``."""
        clauses = []
        sets = list(self._sets)
        for attribute, source in self._copies.items():
            assigned = self._assigned.get(source, self._fallbacks.get(attribute))
            if assigned is None:
                raise ValueError(f"{attribute} takes the value of {source}, which this write does not set")
            sets.append(f"{self.name(attribute)} = {assigned}")
        if sets:
            clauses.append("SET " + ", ".join(sets))
        if self._removes:
            clauses.append("REMOVE " + ", ".join(self._removes))
        return self._with_placeholders({"UpdateExpression": " ".join(clauses)})

    def condition_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for a conditional ``put_item``."""
        return self._with_placeholders({})

    def projection_kwargs(self, *attributes: str) -> dict[str, Any]:
        """Keyword arguments that read only ``attributes`` (``get_item``, ``batch_get_item``)."""
        projection = ", ".join(self.name(attribute) for attribute in attributes)
        return self._with_placeholders({"ProjectionExpression": projection}, conditions=False)

    def size_after(
        self,
        item: Item,
        extra: Mapping[str, Any] | None = None,
        *,
        keeping: Iterable[str] = (),
        size: int | None = None,
    ) -> int:
        """About the size of ``item`` once this update (with ``extra``, top-level attributes it would also set) applies.

        Never less: a value computed by the update (``sequence + 1``) keeps its stored size plus a byte, and a
        removal of list elements or of a nested attribute is not counted; nor is one of the attributes ``keeping``
        names (which a later write sets again). ``size`` is the item's own size when it is known
        (:func:`~.attributes.item_size`): then only the attributes the update changes are counted again.
        """
        kept = set(keeping)
        after = dict(item)
        touched: set[str] = set()
        computed = 0
        sets = {**self._assigned, **dict.fromkeys(extra or {}, "")}
        for attribute, assigned in sets.items():
            if "." in attribute:
                computed += 1 + item_size({attribute: after.get(attribute.split(".")[0], {"NULL": True})})
            elif extra is not None and attribute in extra:
                after[attribute] = _attribute(attribute, extra[attribute])
                touched.add(attribute)
            elif assigned in self._values:
                after[attribute] = _attribute(attribute, self._values[assigned])
                touched.add(attribute)
            else:
                computed += 1
        for removed in self._removes:
            name = self._names.get(removed, removed[1:])
            if removed.startswith("#") and "[" not in removed and "." not in removed and name not in kept:
                after.pop(name, None)
                touched.add(name)
        for attribute, source in self._copies.items():
            if source in after:
                after[attribute] = after[source]
                touched.add(attribute)
        if size is None:
            return item_size(after) + computed
        for name in touched:  # every other attribute is the item's own: its size is in ``size`` already
            size += (item_size({name: after[name]}) if name in after else 0) - (
                item_size({name: item[name]}) if name in item else 0
            )
        return size + computed

    def size(self) -> int:
        """The bytes the values it sets (and tests) would add to an item, counted as DynamoDB counts an item."""
        return item_size(to_item(self._values)) + sum(len(name.encode()) for name in self._names.values())

    def _with_placeholders(self, kwargs: dict[str, Any], *, conditions: bool = True) -> dict[str, Any]:
        """``kwargs`` with the condition and the names and values they use (DynamoDB refuses unused ones)."""
        if conditions and self._conditions:
            kwargs["ConditionExpression"] = " AND ".join(self._conditions)
        used = set(re.findall(r"[#:][A-Za-z0-9_]+", " ".join(str(text) for text in kwargs.values())))
        names = {alias: name for alias, name in self._names.items() if alias in used}
        values = {placeholder: value for placeholder, value in self._values.items() if placeholder in used}
        if names:
            kwargs["ExpressionAttributeNames"] = names
        if values:
            kwargs["ExpressionAttributeValues"] = to_item(values)
        return kwargs


def _attribute(name: str, value: Any) -> Any:
    """The attribute value ``name`` takes when set to ``value``, as :func:`~.attributes.to_item` writes it."""
    if value is None:
        raise KeyError(name)  # to_item leaves a None value out
    return to_attribute(value)
