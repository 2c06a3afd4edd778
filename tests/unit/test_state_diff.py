"""The diff between two states (cairn.aws.state_diff): JSON Pointer paths, document order, bounded."""

from __future__ import annotations

import json
from typing import Any

from cairn.aws.state_diff import MAX_DIFF_CHARS, MAX_VALUE_CHARS, diff_states


def listed(before: Any, after: Any, limit: int = 200) -> list[dict[str, Any]]:
    return [change.model_dump() for change in diff_states(before, after, limit=limit).changes]


def test_equal_states_have_no_change() -> None:
    state = {"a": [1, {"b": None}], "c": "text"}
    assert diff_states(state, {"a": [1, {"b": None}], "c": "text"}).changes == []


def test_changes_come_in_document_order_with_their_values() -> None:
    before = {"keep": 1, "inner": {"x": 1, "gone": True}, "list": [1, 2, 3]}
    after = {"keep": 1, "inner": {"x": 2}, "list": [1, 5], "new": None}
    assert listed(before, after) == [
        {"path": "/inner/x", "change": "changed", "before": 1, "after": 2},
        {"path": "/inner/gone", "change": "removed", "before": True},
        {"path": "/list/1", "change": "changed", "before": 2, "after": 5},
        {"path": "/list/2", "change": "removed", "before": 3},
        {"path": "/new", "change": "added", "after": None},  # an added null keeps its value; no "before"
    ]


def test_keys_are_escaped_as_json_pointer_asks() -> None:
    assert listed({"a/b": 1, "m~n": 1}, {"a/b": 2, "m~n": 2}) == [
        {"path": "/a~1b", "change": "changed", "before": 1, "after": 2},
        {"path": "/m~0n", "change": "changed", "before": 1, "after": 2},
    ]


def test_a_value_of_another_kind_is_one_change_at_its_place() -> None:
    assert listed({"v": [1]}, {"v": {"0": 1}}) == [
        {"path": "/v", "change": "changed", "before": [1], "after": {"0": 1}}
    ]
    assert listed(True, 1) == [{"path": "", "change": "changed", "before": True, "after": 1}]  # not equal in JSON
    assert listed(None, {"a": 1}) == [{"path": "", "change": "changed", "before": None, "after": {"a": 1}}]


def test_the_list_stops_at_the_limit_and_says_so() -> None:
    before = {f"k{number}": number for number in range(500)}
    diff = diff_states(before, {}, limit=10)
    assert len(diff.changes) == 10
    assert diff.truncated is True
    assert diff.changes[0].path == "/k0"
    assert diff_states(before, {}, limit=500).truncated is False


def test_deep_states_are_compared_without_recursion() -> None:
    deep_before: Any = 0
    deep_after: Any = 1
    for _ in range(5_000):
        deep_before, deep_after = [deep_before], [deep_after]
    (change,) = diff_states(deep_before, deep_after).changes
    assert change.path == "/0" * 5_000
    assert change.before == 0


def test_a_large_value_is_cut_with_its_size_and_the_list_stops_at_a_size() -> None:
    big = "é" * 10_000  # 60,002 characters of JSON once escaped
    diff = diff_states({"a": big, "b": 1}, {"a": "x", "b": 2})
    first = diff.changes[0].model_dump(mode="json", by_alias=True)
    assert first["beforeCut"] == len(json.dumps(big))
    assert first["before"].endswith("…")
    assert len(first["before"]) == MAX_VALUE_CHARS + 1
    assert "afterCut" not in first
    assert first["after"] == "x"
    assert diff.changes[1].model_dump(mode="json", by_alias=True) == {
        "path": "/b",
        "change": "changed",
        "before": 1,
        "after": 2,
    }

    many = diff_states({}, {f"k{index}": "é" * 5000 for index in range(1000)}, limit=1000)
    assert many.truncated
    assert sum(len(json.dumps(change.model_dump(mode="json", by_alias=True))) for change in many.changes) <= (
        MAX_DIFF_CHARS
    )
