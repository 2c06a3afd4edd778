"""The admission rule itself: JSON, nested at most MAX_JSON_DEPTH deep, Unicode text, within a size."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from cairn import InvalidInputError
from cairn.core.admission import MAX_JSON_DEPTH, check_json, json_value, nesting_depth


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"down": value}
    return value


class Holder(BaseModel):
    data: Any = None


def test_depth_counts_arrays_and_objects_and_a_scalar_is_zero() -> None:
    assert nesting_depth("text") == 0
    assert nesting_depth([]) == 1
    assert nesting_depth({"a": [1, {"b": ()}]}) == 4
    assert nesting_depth(nested(100_000)) == 100_000  # no recursion


def test_a_value_that_contains_itself_is_refused_without_hanging() -> None:
    looped: list[Any] = []
    looped.append({"again": looped})

    assert nesting_depth(looped) is None
    with pytest.raises(InvalidInputError, match=f"more than {MAX_JSON_DEPTH} deep"):
        json_value(looped, "State")


def test_a_shared_value_within_the_limit_is_admitted() -> None:
    shared = nested(MAX_JSON_DEPTH - 1)
    assert json_value([shared, shared], "State") == [shared, shared]


def test_tuples_models_and_non_string_keys_become_json() -> None:
    assert json_value({1: (1, 2)}, "State") == {"1": [1, 2]}
    assert json_value(Holder(data=(1, "a")), "State") == {"data": [1, "a"]}


def test_a_model_holding_a_value_too_deep_is_refused_before_it_is_dumped() -> None:
    with pytest.raises(InvalidInputError, match="State nests arrays and objects 301 deep; at most 64"):
        json_value(Holder(data=nested(300)), "State")


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (float("nan"), "State is not JSON"),
        ({"when": object()}, "State is not JSON"),
        ({"\ud800": 1}, "State holds a string that is not valid Unicode"),
        (["\udc00"], "State holds a string that is not valid Unicode"),
    ],
)
def test_what_a_store_cannot_write_is_refused(value: Any, refused: str) -> None:
    with pytest.raises(InvalidInputError, match=refused):
        json_value(value, "State")


def test_a_size_limit_counts_the_compact_utf8_json() -> None:
    check_json({"é": "ü"}, "Payload", max_bytes=len('{"é":"ü"}'.encode()))
    with pytest.raises(InvalidInputError, match="Payload is 12 bytes as JSON; at most 11"):
        check_json({"é": "üx"}, "Payload", max_bytes=11)


def test_plain_json_data_is_kept_as_it_is_and_anything_else_becomes_what_its_json_parses_to() -> None:
    from collections import OrderedDict

    from cairn.core.admission import admit

    plain = {"records": [{"id": 1, "tags": ["a"]}], "note": None}
    admitted = admit(plain, "State")
    assert admitted.value is plain  # nothing parsed back: the text is the only copy made
    assert json.loads(admitted.text) == plain
    for value, parsed in [
        ({"a": (1, 2)}, {"a": [1, 2]}),
        ({"a": {2: "x"}}, {"a": {"2": "x"}}),
        (OrderedDict(a=1), {"a": 1}),
    ]:
        admitted = admit(value, "State")
        assert admitted.value == parsed, value
        assert type(admitted.value) is type(parsed), value


def test_a_large_plain_state_is_kept_and_an_odd_value_deep_inside_it_still_becomes_json() -> None:
    from collections import OrderedDict

    from cairn.core.admission import admit

    records = [{"id": n, "tags": ["a", {"b": None}], "ok": True, "share": 0.5} for n in range(1_000)]
    plain = {"records": records, "note": "n"}
    assert nesting_depth(plain) == 5  # the state, its records, a record, its tags, a tag
    assert admit(plain, "State").value is plain
    for odd, parsed in [((1,), [1]), ({2: "x"}, {"2": "x"}), (OrderedDict(a=1), {"a": 1})]:
        value = {"records": [*records, {"deep": [odd]}], "note": "n"}
        admitted = admit(value, "State")
        assert admitted.value == {"records": [*records, {"deep": [parsed]}], "note": "n"}, odd
        assert type(admitted.value["records"][-1]["deep"][0]) is type(parsed), odd


def test_depth_is_exact_wherever_the_deepest_value_sits_among_others() -> None:
    for depth in (MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 300):
        value = [1, "a", {"k": None}, [nested(depth - 1)]]  # scalars, dicts and lists side by side at every level
        assert nesting_depth(value) == depth + 1
    json_value([1, {"k": [nested(MAX_JSON_DEPTH - 3)]}], "State")
    with pytest.raises(InvalidInputError, match=f"State nests arrays and objects {MAX_JSON_DEPTH + 1} deep"):
        json_value([1, {"k": [nested(MAX_JSON_DEPTH - 2)]}], "State")
