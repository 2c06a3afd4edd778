"""Redaction: secrets kept out of what cairn stores, logs and serves.

A :class:`Redaction` holds regex ``patterns`` (a match in any text is replaced by ``[redacted]``) and dotted
``fields`` (``state.api_token``: that field of a state is shown as ``[redacted]``). A pipeline's own
(``Pipeline(redact=...)``) join the stack's (``CAIRN_REDACT``, the template's ``Redact``).

- Texts (error messages, tracebacks, log lines, annotations) are redacted before they are stored: the
  patterns, and the text of every value the fields reach in the running job's state (:meth:`knowing`).
- States are the job's own data and are checkpointed as they are (a resumed phase needs them); the fields
  are erased from every state the API serves and ``cairn jobs pull`` writes.
- The functions' log lines are redacted as a whole, by every pattern of the process and the values its runs'
  fields reached (:func:`log_redaction`).

Bad settings (a regex that does not compile, an empty path) are a ConfigurationError at start-up.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError
from .models import Failure

REDACTED = "[redacted]"
"""What a redacted text or field holds instead of the secret."""
MIN_VALUE_CHARS = 4
"""A field's value shorter than this is not searched for in texts (it would redact ordinary words)."""


@dataclass(frozen=True)
class Redaction:
    """Regex patterns replaced in texts, dotted field paths erased from states, and secret values seen."""

    patterns: tuple[re.Pattern[str], ...] = ()
    fields: tuple[str, ...] = ()
    values: frozenset[str] = field(default_factory=frozenset)

    @property
    def active(self) -> bool:
        """Whether it redacts anything."""
        return bool(self.patterns or self.fields or self.values)

    def text(self, text: str) -> str:
        """``text`` with every pattern's match and every known secret value replaced by ``[redacted]``."""
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        for pattern in self.patterns:
            text = pattern.sub(REDACTED, text)
        return text

    def maybe_text(self, text: str | None) -> str | None:
        """:meth:`text` of ``text``, None kept."""
        return None if text is None else self.text(text)

    def state(self, value: Any) -> Any:
        """``value`` (a state, an input, a result) with each field path that reaches a field erased."""
        for path in self.fields:
            value = _erased(value, parts_of(path))
        return value

    def failure(self, failure: Failure | None) -> Failure | None:
        """The failure with its traceback redacted."""
        if failure is None or not self.active:
            return failure
        return failure.model_copy(update={"traceback": self.text(failure.traceback)})

    def knowing(self, *states: Any) -> Redaction:
        """This redaction that also replaces, in texts, the values its fields reach in ``states``."""
        found = {text for state in states for text in values_at(state, self.fields)}
        return Redaction(self.patterns, self.fields, self.values | found) if found else self

    def joined(self, other: Redaction) -> Redaction:
        """Both redactions' patterns, fields and values."""
        patterns = self.patterns + tuple(p for p in other.patterns if p not in self.patterns)
        fields = self.fields + tuple(f for f in other.fields if f not in self.fields)
        return Redaction(patterns, fields, self.values | other.values)


NO_REDACTION = Redaction()
"""Redacts nothing."""


def redaction_of(patterns: Iterable[str] = (), fields: Iterable[str] = (), *, where: str) -> Redaction:
    """A redaction of regex ``patterns`` and dotted ``fields``, each checked (``where`` names them in an error)."""
    if isinstance(patterns, str) or isinstance(fields, str):
        raise ConfigurationError(f"{where}: patterns and fields are lists of strings, not one string")
    compiled = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise ConfigurationError(f"{where}: a pattern must be a non-empty regex, got {pattern!r}")
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigurationError(f"{where}: pattern {pattern!r} is not a valid regex ({exc})") from None
        if compiled[-1].fullmatch(""):
            raise ConfigurationError(f"{where}: pattern {pattern!r} matches the empty text")
    checked = []
    for path in fields:
        if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
            raise ConfigurationError(f"{where}: field {path!r} is not a dotted path such as state.customer.email")
        checked.append(path)
    return Redaction(tuple(compiled), tuple(checked))


@functools.cache
def parsed_redaction(raw: str, *, where: str) -> Redaction:
    """The redaction a stack's setting ``raw`` names (JSON of ``patterns`` and ``fields``; empty: none), or a
    ConfigurationError naming ``where`` (the setting: ``CAIRN_REDACT``, read by :mod:`cairn.core.settings`)."""
    if not raw:
        return NO_REDACTION
    try:
        settings = json.loads(raw)
    except ValueError:
        settings = None
    if not isinstance(settings, dict) or set(settings) - {"patterns", "fields"}:
        raise ConfigurationError(
            f'{where} must be JSON such as {{"patterns": ["tok-[0-9a-z]+"], "fields": ["state.api_token"]}}, '
            f"got {raw[:200]!r}"
        )
    return redaction_of(settings.get("patterns") or [], settings.get("fields") or [], where=where)


def parts_of(path: str) -> list[str]:
    """A path's names below a state (a leading ``state.`` names any state: input, checkpoint, result...)."""
    parts = path.split(".")
    return parts[1:] if parts[0] == "state" and len(parts) > 1 else parts


def _erased(value: Any, parts: list[str]) -> Any:
    if not parts:
        return REDACTED
    if isinstance(value, dict):
        head = parts[0]
        if head not in value:
            return value
        return {**value, head: _erased(value[head], parts[1:])}
    if isinstance(value, list):  # a list's items each have the field
        return [_erased(item, parts) for item in value]
    return value


def values_at(value: Any, paths: Iterable[str]) -> set[str]:
    """The texts of the values ``paths`` reach in ``value`` (numbers as written, nested values as JSON)."""
    found: set[str] = set()
    for path in paths:
        _collect(value, parts_of(path), found)
    return {text for text in found if len(text) >= MIN_VALUE_CHARS and text != REDACTED}


def _collect(value: Any, parts: list[str], found: set[str]) -> None:
    if not parts:
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int | float):
            found.add(str(value))
        else:
            for leaf in _leaves(value):
                found.add(leaf)
        return
    if isinstance(value, dict) and parts[0] in value:
        _collect(value[parts[0]], parts[1:], found)
    elif isinstance(value, list):
        for item in value:
            _collect(item, parts, found)


def _leaves(value: Any) -> Iterable[str]:
    """The strings inside a nested value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


_process: list[Redaction] = []
MAX_SEEN_VALUES = 1_000
"""The most secret values a process remembers for its log lines (the newest are kept)."""
_seen: dict[str, None] = {}


def for_run(redaction: Redaction, *states: Any) -> Redaction:
    """``redaction`` knowing the values its fields reach in ``states`` (a run's input and state); the process's
    log lines are redacted of those values from now on too (:func:`log_redaction`)."""
    known = redaction.knowing(*states)
    for value in known.values - redaction.values:
        _seen.pop(value, None)
        _seen[value] = None
    while len(_seen) > MAX_SEEN_VALUES:
        del _seen[next(iter(_seen))]
    return known


def register(redaction: Redaction) -> None:
    """Add a pipeline's redaction to those the process's log lines are redacted with."""
    if redaction.active and redaction not in _process:
        _process.append(redaction)


def log_redaction(stack: Redaction) -> Redaction:
    """What the process's log lines are redacted with: the ``stack``'s, every pipeline's made here, and the secret
    values its runs have seen (:func:`for_run`)."""
    redaction = stack
    for other in _process:
        redaction = redaction.joined(other)
    return Redaction(redaction.patterns, redaction.fields, redaction.values | frozenset(_seen)) if _seen else redaction


STATE_KEYS = frozenset({"state", "input", "result", "results"})
"""The keys of a reply (the API's, a job file's) whose values are states: the fields are erased there."""


def redacted_document(document: Any, redaction: Redaction) -> Any:
    """A JSON document (an API reply, a job file) with the fields erased from every state in it, then every text
    redacted: the patterns, and the values the fields reached anywhere in the document."""
    if not redaction.active:
        return document
    found: set[str] = set()
    erased = _erase_states(document, redaction, found)
    return _redact_texts(erased, _with_values(redaction, found))


def _with_values(redaction: Redaction, found: set[str]) -> Redaction:
    kept = {text for text in found if len(text) >= MIN_VALUE_CHARS and text != REDACTED}
    return Redaction(redaction.patterns, redaction.fields, redaction.values | kept)


def _erase_states(value: Any, redaction: Redaction, found: set[str]) -> Any:
    if isinstance(value, list):
        return [_erase_states(item, redaction, found) for item in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("path"), str) and value.get("change") in ("added", "removed", "changed"):
        return _erased_change(value, redaction, found)
    erased = {}
    for key, item in value.items():
        if key in STATE_KEYS and redaction.fields:
            states = item if key == "results" and isinstance(item, list) else [item]
            for state in states:
                found.update(values_at(state, redaction.fields))
            item = (
                [redaction.state(state) for state in item]
                if key == "results" and isinstance(item, list)
                else (redaction.state(item))
            )
        erased[key] = _erase_states(item, redaction, found)
    return erased


def _erased_change(change: dict[str, Any], redaction: Redaction, found: set[str]) -> dict[str, Any]:
    """A diff's change (a JSON Pointer ``path``, ``before``, ``after``) with the fields at or under it erased."""
    at = [part.replace("~1", "/").replace("~0", "~") for part in change["path"].split("/")[1:]]
    erased = dict(change)
    for path in redaction.fields:
        parts = parts_of(path)
        if parts[: len(at)] != at and at[: len(parts)] != parts:
            continue
        below = parts[len(at) :]
        for side in ("before", "after"):
            if side in erased:
                _collect(erased[side], below, found)
                erased[side] = _erased(erased[side], below)
    return erased


def _redact_texts(value: Any, redaction: Redaction) -> Any:
    if isinstance(value, str):
        return redaction.text(value)
    if isinstance(value, list):
        return [_redact_texts(item, redaction) for item in value]
    if isinstance(value, dict):
        return {key: _redact_texts(item, redaction) for key, item in value.items()}
    return value
