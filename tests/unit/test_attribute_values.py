"""DynamoDB attribute values convert exactly as boto3 converts them, numbers read back as int or float, binary as bytes.

cairn converts the common values itself and hands everything else to boto3: both give the same values,
and refuse the same ones with the same errors.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeSerializer

from cairn.aws.dynamodb.attributes import from_attribute, from_item, item_size, to_attribute, to_item, value_of

WRITTEN = [
    "",
    "é",
    0,
    -7,
    10**38 - 1,
    -(10**38) + 1,
    True,
    False,
    None,
    b"x",
    bytearray(b"y"),
    Decimal("1.5"),
    {"a": [1, "b", {"c": None}], "d": {}},
    ("t", 1),
    {"s"},
    {1, 2},
]


@pytest.mark.parametrize("value", WRITTEN, ids=repr)
def test_a_value_is_written_as_boto3_writes_it(value: Any) -> None:
    assert to_attribute(value) == TypeSerializer().serialize(value)


@pytest.mark.parametrize(
    "value",
    [1.5, float("nan"), object(), Decimal("Infinity"), 10**38, 10**40],
    ids=["float", "nan", "object", "infinity", "38 digits and one", "41 digits"],
)
def test_what_boto3_refuses_is_refused_alike(value: Any) -> None:
    with pytest.raises(Exception) as theirs:  # noqa: PT011 (the very error boto3 raises, whichever it is)
        TypeSerializer().serialize(value)
    with pytest.raises(type(theirs.value)) as ours:
        to_attribute(value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        ({"S": "é"}, "é"),
        ({"N": "12"}, 12),
        ({"N": "-0"}, 0),
        ({"N": "007"}, 7),
        ({"N": "1" * 38}, int("1" * 38)),
        ({"N": "1E+40"}, 10**40),  # an exponent: through the Decimal context
        ({"N": "1.50"}, 1.5),
        ({"N": "1E+3"}, 1000),
        ({"N": "٣"}, 3),  # not ASCII: read as Decimal reads it
        ({"BOOL": False}, False),
        ({"NULL": True}, None),
        ({"B": b"q"}, b"q"),
        ({"B": bytearray(b"r")}, bytearray(b"r")),
        ({"M": {"a": {"L": [{"N": "1"}, {"S": "b"}]}}}, {"a": [1, "b"]}),
        ({"SS": ["a"]}, {"a"}),
        ({"NS": ["1", "2.5"]}, {1, 2.5}),
    ],
    ids=repr,
)
def test_a_stored_value_reads_back_as_plain_python(stored: dict[str, Any], read: Any) -> None:
    found = from_attribute(stored)
    assert found == read
    assert type(found) is type(read)


@pytest.mark.parametrize("stored", [{}, {"X": "1"}, {"N": "1" * 39}, {"B": "text"}, "text"], ids=repr)
def test_a_value_boto3_cannot_read_is_refused(stored: Any) -> None:
    with pytest.raises((TypeError, ArithmeticError, AttributeError)):
        from_attribute(stored)


def test_items_convert_whole_or_one_attribute_at_a_time() -> None:
    values = {"pk": "JOB#a", "sequence": 3, "checkpoint": {"nextPhase": "p", "state": {"gzip": b"\x1f"}}, "gone": None}
    item = to_item(values)

    assert "gone" not in item
    assert from_item(item) == {key: value for key, value in values.items() if value is not None}
    assert value_of(item, "checkpoint") == values["checkpoint"]
    assert value_of(item, "gone") is None


def test_an_item_is_sized_by_its_names_and_values() -> None:
    item = to_item({"pk": "é", "n": 12345, "m": {"k": [True, None]}, "b": Binary(b"abc")})

    # names 2 + 1 + 1 + 1; "é" 2 bytes; 5 digits 2 + 2; a map 3 + "k" 1 + a list (3 + 1 + 1 + 1 + 1) + 1; 3 bytes
    assert item_size(item) == 5 + 2 + 4 + (3 + 1 + 7 + 1) + 3
