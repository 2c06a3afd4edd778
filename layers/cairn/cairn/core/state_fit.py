"""A stored state read into the pipeline's state model strictly: nothing the model would drop or coerce.

pydantic alone reads a state leniently: a key the model no longer has (a field renamed, with a default) is
ignored and a value of another type is coerced (the saved ``"0042"`` read as ``42``), so a job resumed under
a changed model would go on with its data silently lost. :func:`read_state` first validates the stored JSON
strictly (no coercion, no key left over). Where that refuses something, it compares what the model makes of
the state (read leniently, then written back as the engine writes it) with what was stored, at the place
refused: what reads back the same fits (a computed field, a key an ``extra="allow"`` model keeps, a set in
another order); anything else is a :class:`StateMisfitError` naming each field and the fix. The engine stops
the job in ``error`` and keeps its checkpoint, so once the migration is deployed a retry resumes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InvalidInputError
from .text import shown, validation_problems

M = TypeVar("M", bound=BaseModel)

#: How many characters of a saved or read value a misfit quotes.
QUOTED_CHARS = 60
#: How many misfits a message names (it counts the rest).
MAX_NAMED = 10


class StateMisfitError(InvalidInputError):
    """A stored state the state model would read with a key dropped or a value coerced; ``fields`` names them."""

    def __init__(self, message: str, *, fields: Sequence[str]) -> None:
        super().__init__(message)
        self.fields = list(fields)


class _Missing:
    """What the model writes at a place it has nothing."""


MISSING = _Missing()


def _where(pipeline: str, saved: int, current: int) -> str:
    if saved == current:
        return f'Stored state does not fit pipeline "{pipeline}" (state_version {current})'
    return f'Stored state does not fit pipeline "{pipeline}" (saved with version {saved}, migrated to {current})'


def _fix(saved: int, current: int) -> str:
    if saved == current:
        return (
            f"the state model changed without a new state_version: bump state_version and add a migration "
            f"(Pipeline(state_version={current + 1}, migrations={{{current}: ...}})) that brings such a state to the "
            "new model, then retry the job"
        )
    return f"make the migrations return version {current}'s state (the model's keys, its types), then retry the job"


def read_state(pipeline: str, model: type[M], raw: Any, *, saved: int, current: int) -> M:
    """``raw`` (a stored state, saved under version ``saved`` and migrated to ``current``) as a ``model`` instance.

    InvalidInputError when the model refuses it; :class:`StateMisfitError` when the model would drop one of
    its keys or read one of its values as another.
    """
    refused: ValidationError | None = None
    try:
        text = json.dumps(raw, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return model.model_validate_json(text, strict=True, extra="forbid")
    except ValidationError as exc:
        refused = exc
    except (TypeError, ValueError):  # not JSON: read as given, below
        pass
    try:
        lenient = model.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise InvalidInputError(f"{_where(pipeline, saved, current)}: {problems}: {_fix(saved, current)}") from exc
    misfits = dict(_misfits(refused, raw, _written(lenient))) if refused is not None else {}
    if misfits:
        described = "; ".join(list(misfits.values())[:MAX_NAMED])
        if len(misfits) > MAX_NAMED:
            described += f"; and {len(misfits) - MAX_NAMED} more"
        raise StateMisfitError(
            f"{_where(pipeline, saved, current)}: {described}: {_fix(saved, current)}", fields=list(misfits)
        )
    return lenient


def _written(state: BaseModel) -> Any:
    """The state as the engine would store it (its JSON); MISSING when it cannot be written."""
    try:
        return state.model_dump(mode="json")
    except (TypeError, ValueError):
        return MISSING


def _misfits(refused: ValidationError, raw: Any, written: Any) -> Iterator[tuple[str, str]]:
    """(field, what is wrong) for each place the strict read refused where the model reads another value."""
    for error in refused.errors(include_url=False):
        path, saved, read = _at(raw, written, error["loc"])
        if read is not MISSING and _same(saved, read):
            continue  # written back as it was stored: nothing dropped, nothing coerced
        name = shown(path or "state")
        if read is MISSING:
            yield path, f'key "{name}": not in the state model (its value would be dropped)'
        else:
            saved_text, read_text = shown(repr(saved), QUOTED_CHARS), shown(repr(read), QUOTED_CHARS)
            yield path, f'field "{name}": the saved {saved_text} would be read as {read_text}'


def _at(raw: Any, written: Any, location: Sequence[int | str]) -> tuple[str, Any, Any]:
    """The longest part of ``location`` the stored state has, and what the stored and the written states hold there.

    A location may name a union's member (``pet.Cat.lives``): the walk ends where the stored state has no such key.
    """
    path = ""
    for part in location:
        if isinstance(raw, dict) and isinstance(part, str) and part in raw:
            raw = raw[part]
            written = written.get(part, MISSING) if isinstance(written, dict) else MISSING
            path = f"{path}.{part}" if path else part
        elif isinstance(raw, list) and isinstance(part, int) and 0 <= part < len(raw):
            raw = raw[part]
            written = written[part] if isinstance(written, list) and part < len(written) else MISSING
            path = f"{path}[{part}]"
        else:
            break
    return path, raw, written


def _same(saved: Any, read: Any) -> bool:
    """Whether ``read`` holds everything ``saved`` does, unchanged (keys ``read`` adds are the model's defaults)."""
    if isinstance(saved, bool) or isinstance(read, bool):
        return type(saved) is type(read) and saved == read
    if isinstance(saved, int | float) and isinstance(read, int | float):
        return saved == read
    if isinstance(saved, dict) and isinstance(read, dict):
        return all(key in read and _same(value, read[key]) for key, value in saved.items())
    if isinstance(saved, list) and isinstance(read, list):
        if len(saved) != len(read):
            return False
        if all(_same(one, other) for one, other in zip(saved, read, strict=True)):
            return True
        return sorted(map(_canonical, saved)) == sorted(map(_canonical, read))  # a set, written in another order
    return type(saved) is type(read) and saved == read


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)
