"""The one admission rule for a value cairn stores for a caller, and for a request body the API reads.

A value is admitted when it is JSON (objects with string keys, arrays, strings, finite numbers,
booleans, null), its arrays and objects nest at most :data:`MAX_JSON_DEPTH` deep, every string is
Unicode text (JSON can carry half a surrogate pair on its own, ``"\\ud800"``, which no store can
encode), and, where it cannot go to S3, its compact JSON is at most the size given. Anything else is
an :class:`~cairn.core.errors.InvalidInputError` naming what was refused and the limit, raised before
anything is written.

The limit keeps what was accepted readable: every store reads a record back with a JSON parser
that stops far deeper (pydantic's reader at 200 levels, the standard library's at about 1,000), and
the record adds only a few levels around the value. The walk uses no recursion, so a value nested
100,000 deep is refused like one nested 65 deep, and a value that contains itself is refused too.
Plain JSON data (dicts with string keys, lists, strings, numbers, booleans, None) is walked a whole
level at a time, by the interpreter's own loops; anything else, or anything nested too deep, is
walked one container at a time, which says exactly how deep and why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from pydantic import BaseModel

from .errors import InvalidInputError
from .text import shown

#: How deeply arrays and objects may nest in a stored value or a request body (a scalar is 0 deep).
MAX_JSON_DEPTH = 64
#: The largest signal payload, as compact JSON (UTF-8 bytes): it is kept on the job item, never in S3,
#: until the phase that reads it commits.
MAX_SIGNAL_PAYLOAD_BYTES = 64 * 1024


def depth_refusal(what: str, depth: int | None = None) -> str:
    """What a value nested too deep is told: its depth when known, and the limit."""
    found = f"{depth}" if depth is not None else f"more than {MAX_JSON_DEPTH}"
    return f"{what} nests arrays and objects {found} deep; at most {MAX_JSON_DEPTH}"


def text_refusal(what: str) -> str:
    """What a value holding a string that is not Unicode text is told."""
    return f"{what} holds a string that is not valid Unicode (an unpaired surrogate)"


def is_text(text: str) -> bool:
    """Whether ``text`` is Unicode text every store can encode (UTF-8, no unpaired surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_text(text: str, what: str) -> str:
    """``text`` when it is Unicode text; else InvalidInputError naming ``what`` (a non-string is left to its model)."""
    if isinstance(text, str) and not is_text(text):
        raise InvalidInputError(text_refusal(what))
    return text


_SCALARS = (str, int, float, type(None))


def _children(value: Any) -> Iterable[Any] | None:
    """The values (or items) of a container as the JSON encoder writes it; None for anything else."""
    kind = type(value)
    if kind is dict:
        return value.values()  # type: ignore[no-any-return]
    if kind is list or kind is tuple:
        return value  # type: ignore[no-any-return]
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, list | tuple):
        return value
    if isinstance(value, BaseModel):
        return [*vars(value).values(), *(value.__pydantic_extra__ or {}).values()]
    return None


@dataclass
class _Walk:
    """What a walk of a value found: its depth (None: it contains itself) and whether it is plain JSON data."""

    depth: int | None
    plain: bool


def _walk(value: Any) -> _Walk:
    """Walk ``value`` one level at a time, without recursion (see :func:`nesting_depth`).

    ``plain`` says whether the value is already what parsing its JSON gives back: dicts with string
    keys, lists and scalars only (no tuple, no model, no other mapping or sequence).
    """
    depth, level, plain = 0, [value], True
    seen: set[int] = set()
    while True:
        found: list[Any] = []
        below: list[Any] = []
        for item in level:
            children = _children(item)
            if children is None:
                continue
            if plain:
                kind = type(item)
                plain = kind is list or (kind is dict and _has_text_keys(item))
            found.append(item)
            below += [child for child in children if not isinstance(child, _SCALARS)]
        if not found:
            return _Walk(depth, plain)
        depth += 1
        if depth > MAX_JSON_DEPTH:
            if any(id(item) in seen for item in found):
                return _Walk(None, False)
            seen.update(id(item) for item in found)
        level = below


def _has_text_keys(mapping: Iterable[Any]) -> bool:
    """Whether every key of ``mapping`` (or every item of an iterable of keys) is a string (joining them, in C,
    refuses any other)."""
    try:
        "".join(mapping)
    except TypeError:
        return False
    return True


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})
_PLAIN_TYPES = _PLAIN_SCALARS | {dict, list}


def _plain_depth(value: Any) -> int | None:
    """How deeply ``value`` nests when it is plain JSON data at most :data:`MAX_JSON_DEPTH` deep; else None.

    Plain JSON data is what parsing JSON gives: dicts (of that type exactly) with string keys, lists, and
    strings, ints, floats, booleans and None. Each level is checked whole by loops in C (the types of its
    values, the joined keys of its dicts), so a large state costs no Python step per value. None sends the
    value to :func:`_walk`, which gives the same answer for plain data and the exact one for anything else.
    """
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return 0
    if kind is not dict and kind is not list:
        return None
    dicts: list[dict[Any, Any]] = [value] if kind is dict else []
    lists: list[list[Any]] = [value] if kind is list else []
    depth = 0
    while dicts or lists:
        depth += 1
        if depth > MAX_JSON_DEPTH or (dicts and not _has_text_keys(chain.from_iterable(dicts))):
            return None
        kinds = set(map(type, _level_below(dicts, lists)))
        if not kinds <= _PLAIN_TYPES:
            return None
        if dict not in kinds and list not in kinds:
            break
        below = list(_level_below(dicts, lists))
        if len(kinds) == 1:
            dicts, lists = (below, []) if dict in kinds else ([], below)
        else:
            dicts = [item for item in below if type(item) is dict]
            lists = [item for item in below if type(item) is list]
    return depth


def _level_below(dicts: list[dict[Any, Any]], lists: list[list[Any]]) -> Iterable[Any]:
    """The values of ``dicts`` and the items of ``lists``, one after the other."""
    return chain(chain.from_iterable(map(dict.values, dicts)), chain.from_iterable(lists))


def nesting_depth(value: Any) -> int | None:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0); None when it contains itself.

    Lists, tuples, dicts and pydantic models count as the arrays and objects they are written as.
    The walk goes one level at a time, without recursion; past :data:`MAX_JSON_DEPTH` it notes each
    container it meets, so a container inside itself ends it.
    """
    return _walked(value).depth


def _walked(value: Any) -> _Walk:
    """What walking ``value`` finds: whole levels at a time for plain JSON data within the limit, else :func:`_walk`."""
    depth = _plain_depth(value)
    return _Walk(depth, True) if depth is not None else _walk(value)


def _check_depth(value: Any, what: str) -> _Walk:
    walk = _walked(value)
    if walk.depth is None or walk.depth > MAX_JSON_DEPTH:
        raise InvalidInputError(depth_refusal(what, walk.depth))
    return walk


def _encoded(value: Any, what: str, max_bytes: int | None) -> tuple[str, bool]:
    """``value`` as compact JSON text, once its depth is known to be within the limit; else InvalidInputError.

    The text is encoded as UTF-8 (as the stores write it), which refuses unpaired surrogates and
    gives the size ``max_bytes`` bounds. The flag says whether ``value`` is plain JSON data already.
    """
    plain = _check_depth(value, what).plain
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} is not JSON: {exc}") from exc
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(text_refusal(what)) from None
    if max_bytes is not None and size > max_bytes:
        raise InvalidInputError(f"{what} is {size} bytes as JSON; at most {max_bytes}")
    return text, plain


@dataclass(frozen=True)
class Admitted:
    """An admitted value: its JSON data, and the compact JSON text it was admitted as (for a store to write)."""

    value: Any
    text: str


def admit(value: Any, what: str = "Value", *, max_bytes: int | None = None) -> Admitted:
    """``value`` admitted (pydantic models dumped, tuples as arrays), with its compact JSON; else InvalidInputError.

    The value is serialised once, here: a store writes :attr:`Admitted.text` rather than encoding it again.
    A value that is plain JSON data already (dicts with string keys, lists, scalars) is kept as it is;
    any other is replaced by what its JSON parses to.
    """
    if isinstance(value, BaseModel):
        _check_depth(value, what)
        try:
            value = value.model_dump(mode="json")
        except ValueError as exc:
            raise InvalidInputError(f"{what} is not JSON: {exc}") from exc
    text, plain = _encoded(value, what, max_bytes)
    return Admitted(value if plain else json.loads(text), text)


def check_json(value: Any, what: str, *, max_bytes: int | None = None) -> None:
    """Admit JSON data ``value`` (parsed, or about to be stored); else InvalidInputError naming ``what``.

    ``max_bytes`` bounds its compact JSON (UTF-8 bytes), for a value that cannot go to S3.
    """
    _encoded(value, what, max_bytes)


def json_value(value: Any, what: str = "Value", *, max_bytes: int | None = None) -> Any:
    """``value`` as admitted JSON data (pydantic models dumped, tuples as arrays); else InvalidInputError.

    The value is walked before it is encoded, so no depth or cycle reaches the encoder.
    """
    return admit(value, what, max_bytes=max_bytes).value


def checked_usage(usage: Mapping[str, object]) -> None:
    """InvalidInputError unless every usage figure is a finite, non-negative number."""
    for name, figure in usage.items():
        if isinstance(figure, bool) or not isinstance(figure, int | float) or not math.isfinite(figure) or figure < 0:
            raise InvalidInputError(
                f"Invalid usage '{shown(name)}': {shown(figure)} (a usage figure is a finite, non-negative number)"
            )
