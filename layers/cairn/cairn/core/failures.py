"""Why an attempt failed: the exception's type and a bounded traceback, the user's own frames first.

A failure is kept with the attempt it ended (:class:`~cairn.core.models.PhaseRecord`), so the job
view, ``cairn jobs show`` and the dashboard can show it after the worker is gone. It holds what a
traceback prints and nothing more: file names, line numbers, function names and source lines. No
local variable and no environment variable is ever read, so a secret in either cannot leak into it.
"""

from __future__ import annotations

import functools
import sysconfig
import traceback
from collections.abc import Sequence
from pathlib import Path

from .models import MAX_TYPE_CHARS, Failure, clip_text

MAX_TRACEBACK_CHARS = 6_000
"""The longest traceback kept with an attempt (a history item has a size limit)."""

MAX_CHAINED = 3
"""Causes (``raise ... from``, or an exception raised while handling another) named after the exception."""

_CAIRN_ROOT = str(Path(__file__).resolve().parents[1]) + "/"
_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "<frozen ")


def failure_of(exc: BaseException) -> Failure:
    """The failure ``exc`` describes: its type and its bounded traceback."""
    return Failure(type=exception_type(exc), traceback=render_traceback(exc))


def reported_failure(error_type: object, stack: object) -> Failure | None:
    """The failure a dead invocation's report gave (Lambda's ``errorType`` and ``stackTrace``), if it named a type."""
    if not isinstance(error_type, str) or not error_type:
        return None
    lines = [clip_text(str(line).rstrip(), 500) for line in stack] if isinstance(stack, list) else []
    return Failure(type=clip_text(error_type, MAX_TYPE_CHARS), traceback=_fitted(lines, []))


def describe(exc: BaseException) -> str:
    """An exception as one line: its message, else its type's name (a placeholder when ``str()`` fails)."""
    return message_of(exc) or type(exc).__name__


def message_of(exc: BaseException) -> str:
    """``str(exc)``; ``<unprintable Name: str() raised Error>`` when a user's ``__str__`` (or an argument's
    ``__repr__``) raises or returns something that is not text."""
    try:
        return str(exc)
    except Exception as error:
        return f"<unprintable {type(exc).__qualname__}: str() raised {type(error).__qualname__}>"


def repr_of(value: object) -> str:
    """``repr(value)``; ``<unprintable Name: repr() raised Error>`` when a user's ``__repr__`` fails."""
    try:
        return repr(value)
    except Exception as error:
        return f"<unprintable {type(value).__qualname__}: repr() raised {type(error).__qualname__}>"


def exception_type(exc: BaseException) -> str:
    """``TypeError`` for a builtin exception, ``package.module.Name`` for any other."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return clip_text(name, MAX_TYPE_CHARS)


def is_user_frame(filename: str) -> bool:
    """Whether a frame's file is the user's: not cairn's, not the standard library's, not an installed package's."""
    if filename.startswith("<") or any(marker in filename for marker in _LIBRARY_MARKERS):
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: describing a failure never fails
        return True
    return not resolved.startswith(_CAIRN_ROOT) and not resolved.startswith(_library_roots())


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """The folders of the standard library and of installed packages (read on the first failure, not at import)."""
    paths = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted(str(Path(path).resolve()) + "/" for path in paths if path))


def render_traceback(exc: BaseException) -> str:
    """The traceback of ``exc``: its line, the user's frames in full, the other frames in brief, then its causes.

    Within :data:`MAX_TRACEBACK_CHARS`, the other frames give way first, then the user's oldest frames.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    user = [frame for frame in frames if is_user_frame(frame.filename)]
    other = [frame for frame in frames if not is_user_frame(frame.filename)]
    head = [_exception_line(exc), *(f"Caused by: {_exception_line(cause)}" for cause in _causes(exc))]
    user_block = ["In your code (most recent call last):", *_frame_lines(user, source=True)] if user else []
    other_block = (
        [f"In cairn and libraries ({len(other)} frames):", *_frame_lines(other, source=False)] if other else []
    )
    return _fitted(head + user_block, other_block)


def _exception_line(exc: BaseException) -> str:
    message = message_of(exc)
    return clip_text(f"{exception_type(exc)}: {message}" if message else exception_type(exc), 1_000)


def _frame_lines(frames: Sequence[traceback.FrameSummary], *, source: bool) -> list[str]:
    lines = []
    for frame in frames:
        line = f'  File "{_short_path(frame.filename)}", line {frame.lineno}, in {frame.name}'
        if source and frame.line:
            line += "\n    " + clip_text(frame.line.strip(), 300)
        lines.append(line)
    return lines


def _short_path(filename: str) -> str:
    """A library's file from its package on (``.../site-packages/pydantic/main.py`` -> ``pydantic/main.py``)."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    if filename.startswith(_CAIRN_ROOT):
        return "cairn/" + filename[len(_CAIRN_ROOT) :]
    return filename


def _causes(exc: BaseException) -> list[BaseException]:
    """The exceptions behind ``exc``, nearest first (at most :data:`MAX_CHAINED`, never one twice)."""
    found: list[BaseException] = []
    current = exc
    while len(found) < MAX_CHAINED:
        behind = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        if behind is None or behind is exc or any(behind is seen for seen in found):
            break
        found.append(behind)
        current = behind
    return found


def _fitted(first: list[str], then: list[str]) -> str:
    """``first`` and then ``then`` joined within :data:`MAX_TRACEBACK_CHARS`.

    ``then`` gives way first, from its oldest line after its heading; then the oldest lines of ``first``
    after its first line (the exception's) and its heading. What was left out is said where it was.
    """
    then = _trimmed(then, MAX_TRACEBACK_CHARS - _size(first) - 1, keep=1) if then else []
    first = _trimmed(first, MAX_TRACEBACK_CHARS - _size(then) - 1, keep=_user_heading(first))
    return clip_text("\n".join(first + then), MAX_TRACEBACK_CHARS)


def _user_heading(lines: list[str]) -> int:
    """How many of ``lines`` come before the first frame (the exception's lines and the heading)."""
    for index, line in enumerate(lines):
        if line.startswith("  File "):
            return index
    return len(lines)


def _trimmed(lines: list[str], room: int, *, keep: int) -> list[str]:
    """``lines`` within ``room`` characters: the lines after the first ``keep`` left out, oldest first."""
    if _size(lines) <= room:
        return lines
    body = lines[keep:]
    dropped = 0
    while body and _size(lines[:keep]) + _size(body) + 40 > room:
        body.pop(0)
        dropped += 1
    note = f"  … {dropped} older frames left out" if dropped else None
    return lines[:keep] + ([note] if note else []) + body if _size(lines[:keep]) <= room else []


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)
