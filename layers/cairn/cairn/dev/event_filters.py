"""Lambda's event filtering (an event source mapping's ``FilterCriteria``) on localhost.

A pattern is JSON whose objects follow the record's and whose leaves are lists of matchers; a record passes
when it matches any of the mapping's patterns, and a pattern when every field it names matches one of its
matchers. The matchers are Lambda's (the EventBridge syntax): a string, number, boolean or null equal to the
field (a number equals a number only); ``{"prefix": s}``, ``{"suffix": s}``, ``{"equals-ignore-case": s}``,
``{"anything-but": value or [values]}``, ``{"exists": bool}`` and ``{"numeric": [op, n, ...]}`` (``=``, ``<``,
``<=``, ``>``, ``>=``; a DynamoDB number, a string in the record, is read as its number). A field holding a
list matches when one of its elements does. A pattern this module cannot read raises :class:`FilterError`
when it is parsed.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

OPERATORS: Final = frozenset({"prefix", "suffix", "equals-ignore-case", "anything-but", "exists", "numeric"})
_COMPARISONS: Final[dict[str, Callable[[float, float], bool]]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_MISSING: Final = object()


class FilterError(ValueError):
    """A filter pattern that is not JSON, or uses a matcher this module does not know."""


def parse(pattern: str) -> dict[str, Any]:
    """The pattern of one ``FilterCriteria.Filters[].Pattern``, checked; FilterError when it cannot be read."""
    try:
        parsed = json.loads(pattern)
    except ValueError as exc:
        raise FilterError(f"filter pattern {pattern!r} is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise FilterError(f"filter pattern {pattern!r} is not a JSON object")
    _check(parsed, pattern)
    return parsed


def _check(pattern: Mapping[str, Any], text: str) -> None:
    for value in pattern.values():
        if isinstance(value, dict):
            _check(value, text)
            continue
        if not isinstance(value, list):
            raise FilterError(f"filter pattern {text!r}: a field's matchers must be a list, not {value!r}")
        for matcher in value:
            if isinstance(matcher, dict) and (len(matcher) != 1 or next(iter(matcher)) not in OPERATORS):
                raise FilterError(f"filter pattern {text!r}: unsupported matcher {matcher!r}")
            numeric = matcher.get("numeric") if isinstance(matcher, dict) else None
            if numeric is not None and not (
                isinstance(numeric, list) and len(numeric) % 2 == 0 and set(numeric[::2]) <= set(_COMPARISONS)
            ):
                raise FilterError(f"filter pattern {text!r}: unsupported numeric matcher {matcher!r}")


def passes(patterns: Sequence[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is delivered: no patterns, or one of them matches it."""
    return not patterns or any(matches(pattern, record) for pattern in patterns)


def matches(pattern: Mapping[str, Any], record: Any) -> bool:
    """Whether every field ``pattern`` names matches in ``record``."""
    for key, wanted in pattern.items():
        value = record.get(key, _MISSING) if isinstance(record, Mapping) else _MISSING
        if isinstance(wanted, Mapping):
            if not matches(wanted, value if isinstance(value, Mapping) else {}):
                return False
        elif not any(_field_matches(matcher, value) for matcher in wanted):
            return False
    return True


def _field_matches(matcher: Any, value: Any) -> bool:
    if isinstance(matcher, Mapping) and "exists" in matcher:
        return bool(matcher["exists"]) == (value is not _MISSING)
    if value is _MISSING:
        return False
    if isinstance(value, list):
        return any(_value_matches(matcher, element) for element in value)
    return _value_matches(matcher, value)


def _value_matches(matcher: Any, value: Any) -> bool:
    if not isinstance(matcher, Mapping):
        return _equal(matcher, value)
    kind, operand = next(iter(matcher.items()))
    if kind == "prefix":
        return isinstance(value, str) and value.startswith(str(operand))
    if kind == "suffix":
        return isinstance(value, str) and value.endswith(str(operand))
    if kind == "equals-ignore-case":
        return isinstance(value, str) and value.casefold() == str(operand).casefold()
    if kind == "anything-but":
        excluded = operand if isinstance(operand, list) else [operand]
        return not any(_equal(item, value) for item in excluded)
    return _numeric(operand, value)


def _equal(matcher: Any, value: Any) -> bool:
    if isinstance(matcher, bool) or matcher is None or isinstance(value, bool):
        return matcher is value or (matcher == value and type(matcher) is type(value))
    if isinstance(matcher, int | float):
        return isinstance(value, int | float) and value == matcher
    return bool(matcher == value)


def _numeric(conditions: Sequence[Any], value: Any) -> bool:
    number = _number(value)
    if number is None:
        return False
    pairs = zip(conditions[::2], conditions[1::2], strict=False)
    return all(_COMPARISONS[str(op)](number, float(bound)) for op, bound in pairs)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
