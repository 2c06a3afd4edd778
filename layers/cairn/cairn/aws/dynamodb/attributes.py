"""DynamoDB attribute values: plain Python values to and from, an item's size, where an item lives.

The conversions are boto3's (:class:`~boto3.dynamodb.types.TypeSerializer` and ``TypeDeserializer``),
numbers read back as int or float and binary as bytes. What items are made of (strings, small ints,
booleans, null, maps and lists) is converted here directly, with the very result boto3 gives; anything
else (a Decimal, a float, a set, a number of more than 38 digits, a malformed value) goes through boto3,
which converts or refuses it as it always did.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from pydantic import ValidationError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

Item = dict[str, "AttributeValueTypeDef"]

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
#: The ints written as their decimal digits (a DynamoDB number holds at most 38 digits).
_EXACT_INT = 10**38
#: The longest string of digits read back as an int directly (more goes through the Decimal context).
_INT_DIGITS = 38


def to_item(values: dict[str, Any]) -> Item:
    """DynamoDB attribute values for plain Python values (None values are left out)."""
    return {key: to_attribute(value) for key, value in values.items() if value is not None}


def to_attribute(value: Any) -> Any:
    """The DynamoDB attribute value of one plain Python value, as ``TypeSerializer.serialize`` gives it."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is int and -_EXACT_INT < value < _EXACT_INT:
        return {"N": str(value)}
    if kind is dict:
        return {"M": {key: to_attribute(inner) for key, inner in value.items()}}
    if kind is bool:
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if kind is list:
        return {"L": [to_attribute(inner) for inner in value]}
    return _serializer.serialize(value)


def from_item(item: Item) -> dict[str, Any]:
    """Plain Python values for an item: numbers as int, binary as bytes."""
    return {key: from_attribute(value) for key, value in item.items()}


def value_of(item: Item, name: str) -> Any:
    """The plain Python value of the attribute ``name`` of ``item`` (None when it has none), the others left unread."""
    return from_attribute(item[name]) if name in item else None


def from_attribute(value: Any) -> Any:
    """The plain Python value of one DynamoDB attribute value (numbers as int or float, binary as bytes)."""
    if type(value) is dict and len(value) == 1:
        for kind, inner in value.items():
            if kind == "S" and type(inner) is str:
                return inner
            if kind == "N" and type(inner) is str and len(inner) <= _INT_DIGITS and _is_integral(inner):
                return int(inner)
            if kind == "M" and type(inner) is dict:
                return {key: from_attribute(member) for key, member in inner.items()}
            if kind == "BOOL" and type(inner) is bool:
                return inner
            if kind == "NULL":
                return None
            if kind == "L" and type(inner) is list:
                return [from_attribute(member) for member in inner]
            if kind == "B" and type(inner) is bytes:
                return inner
    return _plain(_deserializer.deserialize(value))


def _is_integral(text: str) -> bool:
    """Whether ``text`` is ASCII digits after an optional minus (what an integral number is written as)."""
    if text.isdigit():
        return text.isascii()
    return text[:1] == "-" and text[1:].isdigit() and text.isascii()


#: What reading an item's values can raise when they are not what cairn wrote.
UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, RecursionError, ValidationError)


def item_size(item: Item) -> int:
    """The item's size as DynamoDB counts it against its 400 KB limit: attribute names plus values.

    Strings count their UTF-8 bytes, binary its bytes, a number about one byte
    per two digits plus one, a map or list 3 bytes plus one per element (and
    its keys), booleans and null one byte. Slightly generous where the rules
    are approximate, so a write measured under the budget fits.
    """
    size = 0
    for name, value in item.items():
        size += _text_size(name) + _value_size(value)
    return size


def _text_size(text: str) -> int:
    """The UTF-8 length of a name or string."""
    return len(text) if type(text) is str and text.isascii() else len(text.encode())


def _value_size(value: Any) -> int:
    first = next(iter(value.items()), None)  # an attribute value has one
    if first is None:
        raise ValueError("not enough values to unpack (expected at least 1, got 0)")
    kind, inner = first
    if kind == "S":
        return _text_size(inner) if type(inner) is str else len(str(inner).encode())
    if kind == "N":
        if type(inner) is str and inner.isdigit():  # no sign, no point: every character a digit
            return len(inner) // 2 + 2
        return len(str(inner).lstrip("-").replace(".", "")) // 2 + 2
    if kind == "M":
        size = 3
        for key, member in inner.items():
            size += _text_size(key) + _value_size(member) + 1
        return size
    if kind == "B":
        return len(inner.value if isinstance(inner, Binary) else bytes(inner))  # type: ignore[attr-defined]
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        size = 3
        for member in inner:
            size += _value_size(member) + 1
        return size
    return sum(_value_size({kind[0]: member}) for member in inner)  # SS, NS, BS


def location(item: Item) -> str:
    """Where an item lives, ``<pk>/<sk>``, for error messages (read without trusting the item)."""
    keys = [item.get(name) for name in ("pk", "sk")]
    return "/".join(str(key.get("S")) if isinstance(key, dict) else "?" for key in keys)


def unreadable_reason(exc: BaseException) -> str:
    """Why an item cannot be read: the error's type and the first line of its message, clipped."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "value"
        return f"{field}: {first['msg']}"[:300]
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Binary):
        return value.value  # type: ignore[attr-defined]  # the stubs omit Binary.value
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain(inner) for inner in value]
    return value
