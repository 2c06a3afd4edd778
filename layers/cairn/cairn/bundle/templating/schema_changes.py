"""Whether a state saved under one JSON schema still passes another: the changes a saved state may not survive.

:func:`incompatible_changes` compares two JSON schemas of a state model (pydantic's, ``$ref`` into ``$defs``)
and names each change, by the field's dotted path (``items[]`` for a list's items, ``pair[1]`` for a tuple's,
``counts.*`` for a dict's values):

- a type no longer accepted ("type changed"), an enum value no longer accepted ("enum narrowed");
- a constraint added or narrowed (``minimum``, ``maxLength``, ``pattern``, ``format``, ``minItems``, ...);
- a property removed or renamed, or newly required; a dict whose keys are no longer free;
- all of it inside models, optional models, lists, tuples, dicts and union variants.

A union is compared variant by variant: each old variant needs a new one that accepts everything it did,
wherever it stands in the union (a variant reordered or added is compatible). A widened type, a new
optional property, a looser constraint, a title or a description is compatible.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

Schema = Mapping[str, Any]
Seen = frozenset[str]
Roots = tuple[Schema, Schema]
#: Any JSON: what a schema without a type accepts.
ANY = "any"
_KINDS = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
#: The bounds on a value's size, by its kind: (the least, the most).
_SIZES = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def incompatible_changes(old: Schema, new: Schema) -> list[str]:
    """What a state valid under schema ``old`` may no longer pass under ``new``; none for a compatible change."""
    return list(dict.fromkeys(_changes(old, new, "", (old, new), (frozenset(), frozenset()))))


def _resolve(schema: Any, root: Schema, seen: Seen) -> tuple[Schema, Seen]:
    """``schema`` with its ``$ref`` (into ``$defs``) followed; the refs followed so far (a recursive model ends)."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        ref = schema["$ref"]
        seen = seen | {ref}
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        schema = target
    return (schema if isinstance(schema, Mapping) else {}), seen


def _branches(schema: Any, root: Schema, seen: Seen) -> list[tuple[Schema, Seen]]:
    """The alternatives a schema accepts (``anyOf``/``oneOf`` flattened), each resolved."""
    resolved, seen = _resolve(schema, root, seen)
    options = resolved.get("anyOf") or resolved.get("oneOf")
    if not isinstance(options, list):
        return [(resolved, seen)]
    return [branch for option in options for branch in _branches(option, root, seen)]


def _values(branch: Schema) -> list[Any] | None:
    """The values an enum or const branch accepts; None for any other branch."""
    if "enum" in branch and isinstance(branch["enum"], list):
        return list(branch["enum"])
    if "const" in branch:
        return [branch["const"]]
    return None


def _kinds(branch: Schema) -> list[str]:
    """The JSON types a branch (not an enum) accepts; ``any`` without a type."""
    kind = branch.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [item for item in kind if isinstance(item, str)] or [ANY]
    return [ANY]


def _kind_of(value: Any) -> str:
    return "null" if value is None else _KINDS.get(type(value), ANY)


def _token_text(branch: Schema) -> list[str]:
    values = _values(branch)
    if values is not None:
        return [json.dumps(value, sort_keys=True) for value in values]
    return _kinds(branch)


def _describe(branches: Sequence[tuple[Schema, Seen]]) -> str:
    return " | ".join(sorted({text for branch, _ in branches for text in _token_text(branch)})) or "nothing"


def _kind_accepts(new_kind: str, old_kind: str) -> bool:
    return new_kind in (old_kind, ANY) or (old_kind == "integer" and new_kind == "number")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _lower(branch: Schema, kind: str) -> tuple[float, bool] | None:
    """The lowest value a numeric branch accepts, and whether that bound is itself excluded."""
    inclusive, exclusive = _number(branch.get("minimum")), _number(branch.get("exclusiveMinimum"))
    if kind == "integer" and exclusive is not None:
        inclusive, exclusive = max(inclusive or -math.inf, math.floor(exclusive) + 1), None
    bounds = [(value, False) for value in (inclusive,) if value is not None]
    bounds += [(value, True) for value in (exclusive,) if value is not None]
    return max(bounds, key=lambda bound: (bound[0], bound[1])) if bounds else None


def _upper(branch: Schema, kind: str) -> tuple[float, bool] | None:
    """The highest value a numeric branch accepts, and whether that bound is itself excluded."""
    inclusive, exclusive = _number(branch.get("maximum")), _number(branch.get("exclusiveMaximum"))
    if kind == "integer" and exclusive is not None:
        inclusive, exclusive = min(inclusive if inclusive is not None else math.inf, math.ceil(exclusive) - 1), None
    bounds = [(value, False) for value in (inclusive,) if value is not None]
    bounds += [(value, True) for value in (exclusive,) if value is not None]
    return min(bounds, key=lambda bound: (bound[0], not bound[1])) if bounds else None


def _narrower_lower(old: tuple[float, bool] | None, new: tuple[float, bool] | None) -> bool:
    return new is not None and (old is None or new[0] > old[0] or (new[0] == old[0] and new[1] and not old[1]))


def _narrower_upper(old: tuple[float, bool] | None, new: tuple[float, bool] | None) -> bool:
    return new is not None and (old is None or new[0] < old[0] or (new[0] == old[0] and new[1] and not old[1]))


def _multiple(old: Any, new: Any) -> bool:
    """Whether every multiple of ``old`` (None: any number) is a multiple of ``new``."""
    step, of = _number(new), _number(old)
    if step is None or step == 0:
        return True
    return of is not None and math.isclose(of / step, round(of / step))


def _narrowed(old: Schema, new: Schema, kind: str) -> list[str]:
    """The constraints of ``new`` that refuse a value of kind ``kind`` that ``old`` accepted, as ``name value``."""
    narrowed: list[str] = []
    if kind in ("integer", "number"):
        if _narrower_lower(_lower(old, kind), _lower(new, kind)):
            narrowed += [f"{key} {new[key]}" for key in ("minimum", "exclusiveMinimum") if key in new]
        if _narrower_upper(_upper(old, kind), _upper(new, kind)):
            narrowed += [f"{key} {new[key]}" for key in ("maximum", "exclusiveMaximum") if key in new]
        if "multipleOf" in new and not _multiple(old.get("multipleOf"), new["multipleOf"]):
            narrowed.append(f"multipleOf {new['multipleOf']}")
    if kind in _SIZES:
        low, high = _SIZES[kind]
        if isinstance(new.get(low), int) and new[low] > (old.get(low) if isinstance(old.get(low), int) else 0):
            narrowed.append(f"{low} {new[low]}")
        if isinstance(new.get(high), int) and (not isinstance(old.get(high), int) or new[high] < old[high]):
            narrowed.append(f"{high} {new[high]}")
    if kind == "string":
        for key in ("pattern", "format"):
            if key in new and new[key] != old.get(key):
                narrowed.append(f"{key} {json.dumps(new[key])}")
    if kind == "array" and new.get("uniqueItems") is True and old.get("uniqueItems") is not True:
        narrowed.append("uniqueItems")
    return narrowed


def _within(value: float, branch: Schema, kind: str) -> bool:
    """Whether the number ``value`` passes a numeric branch's bounds and step."""
    low, high = _lower(branch, kind), _upper(branch, kind)
    above = low is None or value > low[0] or (value == low[0] and not low[1])
    below = high is None or value < high[0] or (value == high[0] and not high[1])
    step = _number(branch.get("multipleOf"))
    return above and below and (not step or math.isclose(value / step, round(value / step)))


def _accepts_value(branch: Schema, value: Any) -> bool:
    """Whether ``branch`` accepts the enum value ``value`` (its type and its constraints)."""
    kind = _kind_of(value)
    values = _values(branch)
    if values is not None:
        return any(item == value and _kind_of(item) == kind for item in values)
    kinds = [accepted for accepted in _kinds(branch) if _kind_accepts(accepted, kind)]
    if not kinds or kinds == [ANY]:
        return bool(kinds)
    if kind == "string":
        pattern = branch.get("pattern")
        try:
            matches = not isinstance(pattern, str) or re.search(pattern, value) is not None
        except re.error:
            matches = False
        longest = branch.get("maxLength")
        return (
            matches
            and "format" not in branch  # a value of the format cannot be told here: the format narrows
            and len(value) >= branch.get("minLength", 0)
            and (not isinstance(longest, int) or len(value) <= longest)
        )
    if kind in ("integer", "number"):
        return _within(float(value), branch, kinds[0])
    return True


def _changes(old: Any, new: Any, path: str, roots: Roots, seen: tuple[Seen, Seen]) -> Iterator[str]:
    """The incompatible changes from ``old`` to ``new`` at ``path`` (a field's dotted name; "" for the state)."""
    field = f'field "{path}"' if path else "the state"
    olds, news = _branches(old, roots[0], seen[0]), _branches(new, roots[1], seen[1])
    lost_values: list[Any] = []
    lost_kinds = False
    found: list[str] = []
    for branch, branch_seen in olds:
        values = _values(branch)
        if values is not None:
            lost_values += [value for value in values if not any(_accepts_value(other, value) for other, _ in news)]
            continue
        for kind in _kinds(branch):
            candidates = [(other, other_seen) for other, other_seen in news if _accepts_kind(other, kind)]
            if not candidates:
                lost_kinds = True
                continue
            found += _best((branch, branch_seen), kind, candidates, path, roots)
    if lost_kinds:
        yield f"{field}: type changed from {_describe(olds)} to {_describe(news)}"
    elif lost_values:
        yield f"{field}: enum narrowed, no longer accepts {' | '.join(sorted(json.dumps(v) for v in lost_values))}"
    yield from found


def _accepts_kind(branch: Schema, kind: str) -> bool:
    """Whether ``branch`` (not an enum) accepts values of ``kind``, whatever its constraints."""
    return _values(branch) is None and any(_kind_accepts(accepted, kind) for accepted in _kinds(branch))


def _best(
    old: tuple[Schema, Seen], kind: str, candidates: list[tuple[Schema, Seen]], path: str, roots: Roots
) -> list[str]:
    """The changes from ``old`` (its values of ``kind``) to the new branch that accepts them best: none when one
    accepts them all; else those to the variant of the same title, or the one with the fewest changes."""
    scored: list[tuple[bool, int, int, list[str]]] = []
    for index, candidate in enumerate(candidates):
        changes = _branch_changes(old, candidate, kind, path, roots)
        if not changes:
            return []
        same_title = old[0].get("title") is not None and old[0].get("title") == candidate[0].get("title")
        scored.append((not same_title, len(changes), index, changes))
    return min(scored)[3]


def _branch_changes(
    old: tuple[Schema, Seen], new: tuple[Schema, Seen], kind: str, path: str, roots: Roots
) -> list[str]:
    """The changes from one old branch's values of ``kind`` to one new branch."""
    field = f'field "{path}"' if path else "the state"
    changes: list[str] = []
    if _kinds(new[0]) != [ANY]:
        narrowed = _narrowed(old[0], new[0], kind)
        if narrowed:
            changes.append(f"{field}: narrowed ({', '.join(narrowed)})")
    if kind == "object":
        changes += _object_changes(old, new, path, roots)
    elif kind == "array":
        changes += _array_changes(old, new, path, roots)
    return changes


def _extra(schema: Schema) -> Any:
    """What an object schema takes beyond its properties: a schema, True (anything) or None (nothing kept)."""
    extra = schema.get("additionalProperties")
    if extra is True or isinstance(extra, Mapping):
        return extra
    return None if "properties" in schema or extra is False else True


def _object_changes(old: tuple[Schema, Seen], new: tuple[Schema, Seen], path: str, roots: Roots) -> list[str]:
    """Properties removed, newly required or changed, and dict values changed, between two object schemas."""
    (old_schema, old_seen), (new_schema, new_seen) = old, new
    field = f'field "{path}"' if path else "the state"
    old_properties = old_schema.get("properties") if isinstance(old_schema.get("properties"), Mapping) else {}
    new_properties = new_schema.get("properties") if isinstance(new_schema.get("properties"), Mapping) else {}
    old_extra, new_extra = _extra(old_schema), _extra(new_schema)
    changes: list[str] = []
    for name, old_property in (old_properties or {}).items():
        dotted = f"{path}.{name}" if path else name
        target = (new_properties or {}).get(name, new_extra)
        if target is None:
            changes.append(f'field "{dotted}": removed (or renamed)')
        elif target is not True:
            changes += _changes(old_property, target, dotted, roots, (old_seen, new_seen))
    if old_extra is not None:
        dotted = f"{path}.*" if path else "*"
        if new_extra is None:
            kept = ", ".join(sorted(new_properties or {})) or "none"
            changes.append(f"{field}: its keys are no longer free (only {kept} would be kept)")
        elif new_extra is not True:
            changes += _changes({} if old_extra is True else old_extra, new_extra, dotted, roots, (old_seen, new_seen))
    old_required, new_required = set(old_schema.get("required", [])), set(new_schema.get("required", []))
    for name in sorted(new_required - old_required):
        dotted = f"{path}.{name}" if path else name
        new_field = name not in (old_properties or {})
        changes.append(f'field "{dotted}": newly required' + (" (a new field without a default)" if new_field else ""))
    return changes


def _items(schema: Schema) -> tuple[list[Any], Any]:
    """An array schema's positional item schemas (a tuple's) and the schema of the items after them (None: none)."""
    prefix = schema.get("prefixItems")
    positional = list(prefix) if isinstance(prefix, list) else []
    rest = schema.get("items", None if positional else True)
    return positional, (None if rest is False else ({} if rest is True else rest))


def _array_changes(old: tuple[Schema, Seen], new: tuple[Schema, Seen], path: str, roots: Roots) -> list[str]:
    """The changes to the items of two array schemas, position by position, then the rest."""
    (old_schema, old_seen), (new_schema, new_seen) = old, new
    (old_prefix, old_rest), (new_prefix, new_rest) = _items(old_schema), _items(new_schema)
    changes: list[str] = []
    for index in range(max(len(old_prefix), len(new_prefix))):
        was = old_prefix[index] if index < len(old_prefix) else old_rest
        now = new_prefix[index] if index < len(new_prefix) else new_rest
        if was is not None and now is not None:
            changes += _changes(was, now, f"{path}[{index}]", roots, (old_seen, new_seen))
    if old_rest is not None and new_rest is not None:
        changes += _changes(old_rest, new_rest, f"{path}[]", roots, (old_seen, new_seen))
    return changes
