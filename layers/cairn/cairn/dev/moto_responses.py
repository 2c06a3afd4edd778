"""Moto's request dispatch and response building without the work that repeats per request: same answers.

Profiled under ``cairn dev`` (a job polled while its phase saves every few ms), a third of the endpoint's CPU went to
two things that give the same result every time:

- moto's server finds the service of each request by listing its package folder on disk (a ``listdir`` and an
  ``isdir`` per service, under a lock); the list is the installed moto's and does not change while it runs;
- moto's response serializer looks each member of a response up through six alias rules, building a context
  object and six rule objects per member, present or not (a DynamoDB attribute value is a structure of ten
  members, one of them set). For a plain ``dict`` value (DynamoDB's answers are such dicts) the rules read only
  the member's shape, its parent's and the key, so the names they try are worked out once per member, by moto's
  own rules, and looked up in the dict in the same order; with a transformer for the response, or any other
  value, moto's own lookup runs.

:func:`quick_moto_responses` changes how moto gets there, never what it answers;
``tests/benchmarks/test_moto_speedups.py`` compares the answers with and without it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import moto.backends as moto_backends
from moto.core.serialize import AttributePickerContext, ResponseSerializer


def _listed_once(original: Callable[[], Iterable[str]]) -> Callable[[], tuple[str, ...]]:
    @functools.wraps(original)
    @functools.cache
    def list_of_moto_modules() -> tuple[str, ...]:
        return tuple(original())

    return list_of_moto_modules


_NAMES_IN_A_PLAIN_DICT: dict[tuple[int, int, str, type[Any]], tuple[Any, Any, tuple[str, ...]]] = {}
_REMEMBERED = 4096
"""Members whose names are kept at most (botocore keeps a model's shapes, so a service's members are few)."""


def _names_in_a_plain_dict(serializer: ResponseSerializer, shape: Any, key: str) -> tuple[str, ...]:
    """The names moto's picker tries, in order, for ``key`` in a plain ``dict``: found by moto's rules once per member.

    For a plain dict the rules read only the member's shape, its parent shape (moto sets ``parent`` on a member
    before it reads it) and the key, so the names are kept for that shape, parent and key (the objects themselves
    are kept with them, so an id is never taken for another object's).
    """
    parent = getattr(shape, "parent", None)
    picker = serializer._value_picker
    where = (id(shape), id(parent), key, type(picker))
    kept = _NAMES_IN_A_PLAIN_DICT.get(where)
    if kept is not None and kept[0] is shape and kept[1] is parent:
        return kept[2]
    trying = getattr(picker, "get_possible_keys", None)
    context = AttributePickerContext(obj={}, key=key, shape=shape, operation_model=serializer.operation_model)
    names: tuple[str, ...] = tuple(trying(context)) if trying is not None else (key,)
    if len(_NAMES_IN_A_PLAIN_DICT) >= _REMEMBERED:
        _NAMES_IN_A_PLAIN_DICT.clear()
    _NAMES_IN_A_PLAIN_DICT[where] = (shape, parent, names)
    return names


def _plain_dicts_read_directly(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_value(self: ResponseSerializer, value: Any, key: str, shape: Any) -> Any:
        if type(value) is not dict or getattr(self._value_picker, "response_transformers", None):
            return original(self, value, key, shape)
        names = _names_in_a_plain_dict(self, shape, key)
        if any("." in name for name in names):  # moto reads a dotted name as a path
            return original(self, value, key, shape)
        for name in names:
            if name in value:
                return value[name]
        return None

    return get_value


@contextmanager
def quick_moto_responses() -> Iterator[None]:
    """Within the block, moto lists its services once and reads plain response dicts directly (same answers)."""
    with ExitStack() as patches:
        listing = _listed_once(moto_backends.list_of_moto_modules)
        patches.enter_context(mock.patch.object(moto_backends, "list_of_moto_modules", listing))
        reading = _plain_dicts_read_directly(ResponseSerializer.get_value)
        patches.enter_context(mock.patch.object(ResponseSerializer, "get_value", reading))
        yield
