"""DynamoDB attribute values: plain Python values to and from, an item's size, where an item lives."""

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


def to_item(values: dict[str, Any]) -> Item:
    """DynamoDB attribute values for plain Python values (None values are left out)."""
    return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}


def from_item(item: Item) -> dict[str, Any]:
    """Plain Python values for an item: numbers as int, binary as bytes."""
    return {key: _plain(_deserializer.deserialize(value)) for key, value in item.items()}


#: What reading an item's values can raise when they are not what cairn wrote.
UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, RecursionError, ValidationError)


def item_size(item: Item) -> int:
    """The item's size as DynamoDB counts it against its 400 KB limit: attribute names plus values.

    Strings count their UTF-8 bytes, binary its bytes, a number about one byte
    per two digits plus one, a map or list 3 bytes plus one per element (and
    its keys), booleans and null one byte. Slightly generous where the rules
    are approximate, so a write measured under the budget fits.
    """
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: Any) -> int:
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "B":
        return len(inner.value if isinstance(inner, Binary) else bytes(inner))  # type: ignore[attr-defined]
    if kind == "N":
        return len(str(inner).lstrip("-").replace(".", "")) // 2 + 2
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(key.encode()) + _value_size(inner_value) + 1 for key, inner_value in inner.items())
    if kind == "L":
        return 3 + sum(_value_size(inner_value) + 1 for inner_value in inner)
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
