"""Tools: typed Python functions (plain or ``async def``) a model may call, with their input checked by pydantic.

``@tool`` (or ``Tool.of(fn)``) reads the function's name, the first paragraph of its docstring and
the types of its parameters; the model gets that as a :class:`ToolSpec`. ``Tool.call`` never raises
for a bad input or a failing function: both come back as an error :class:`ToolResult` the model can
read. Only a ``BaseException`` that is not an ``Exception`` (the process dying, an interrupt) passes.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ..core.async_phases import as_sync
from ..core.errors import PipelineError
from ..core.failures import message_of
from ..core.models import MAX_ERROR_CHARS, clip_text
from ..core.text import validation_problems
from .messages import ToolResult, ToolUse
from .model import TOOL_NAME_PATTERN, ToolSpec

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


class Tool:
    """A function the model may call: its spec (name, description, input schema) and a safe ``call``.

    Calling the tool object itself calls the function directly, as if it were not a tool.
    """

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> None:
        self.fn = fn
        self._run = as_sync(fn)  # an ``async def`` tool runs to completion on each call
        self.name: str = name or str(getattr(fn, "__name__", ""))
        self.description = _first_paragraph(inspect.getdoc(fn)) if description is None else description
        self.input_model = _input_model(fn, self.name)
        self.spec = _spec(self.name, self.description, self.input_model)

    @classmethod
    def of(cls, fn: Callable[..., Any] | Tool, *, name: str | None = None, description: str | None = None) -> Tool:
        """``fn`` as a tool (a tool is returned as it is unless it is renamed or described anew)."""
        if isinstance(fn, Tool):
            if name is None and description is None:
                return fn
            fn = fn.fn
        return cls(fn, name=name, description=description)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def call(self, input: Mapping[str, Any], *, tool_use_id: str = "") -> ToolResult:
        """Run the tool on the model's ``input``; any failure is an error result, never an exception.

        A BaseException that is not an Exception (a simulated crash, KeyboardInterrupt) is not caught.
        """
        try:
            arguments = self.input_model.model_validate(dict(input))
        except ValidationError as exc:
            return _error(tool_use_id, f'Invalid input for tool "{self.name}": {validation_problems(exc, "input")}')
        values = {field.alias or key: getattr(arguments, key) for key, field in self.input_model.model_fields.items()}
        try:
            returned = self._run(**values)
        except Exception as exc:
            return _error(tool_use_id, f"{type(exc).__name__}: {message_of(exc)}")
        try:
            content = _to_json(returned)
        except (TypeError, ValueError, PydanticSerializationError) as exc:
            why = message_of(exc)
            return _error(tool_use_id, f'TypeError: tool "{self.name}" returned a value that is not JSON: {why}')
        return ToolResult(tool_use_id=tool_use_id, content=content)


def tool(fn: Callable[..., Any]) -> Tool:
    """Decorator: the function as a :class:`Tool` (still callable as the function)."""
    return Tool.of(fn)


class Toolset:
    """The tools of an agent, by name: their specs for the model and the dispatch of its tool uses."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            made = Tool.of(item)
            if made.name in self._tools:
                raise PipelineError(f'Two tools are named "{made.name}"')
            self._tools[made.name] = made

    @property
    def names(self) -> list[str]:
        """The tools' names, in the order given."""
        return list(self._tools)

    @property
    def specs(self) -> list[ToolSpec]:
        """What the model is told about the tools."""
        return [item.spec for item in self._tools.values()]

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        """The tool named ``name``, or None."""
        return self._tools.get(name)

    def call(self, use: ToolUse) -> ToolResult:
        """Run the tool the model asked for; an unknown name is an error result listing the known tools."""
        found = self._tools.get(use.name)
        if found is None:
            known = ", ".join(self._tools) or "none"
            return _error(use.id, f'Unknown tool "{use.name}" (known tools: {known})')
        return found.call(use.input, tool_use_id=use.id)


def _input_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters; each field aliased to its parameter's name."""
    if not re.fullmatch(TOOL_NAME_PATTERN, name):
        raise PipelineError(f"Invalid tool name {name!r}: use 1 to 64 letters, digits, '_' or '-'")
    if not callable(fn):
        raise PipelineError(f'Tool "{name}" is not a function: {fn!r}')
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise PipelineError(f'Tool "{name}": cannot read its parameters: {exc}') from exc
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(signature.parameters.values()):
        where = f'Tool "{name}", parameter "{parameter.name}"'
        if parameter.kind in _VARIADIC or parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise PipelineError(f"{where}: a tool takes named parameters only (no *args, **kwargs or positional-only)")
        if parameter.name not in hints:
            raise PipelineError(f"{where} has no type annotation; the model needs its type")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[f"p{index}"] = (hints[parameter.name], Field(default, alias=parameter.name))
    try:
        model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
        model.model_json_schema()
    except (PydanticUserError, TypeError, ValueError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PipelineError(f'Tool "{name}": a parameter type is not JSON: {first_line}') from exc
    return model


def _spec(name: str, description: str, input_model: type[BaseModel]) -> ToolSpec:
    return ToolSpec(name=name, description=description, input_schema=_to_json(input_model.model_json_schema()))


def _first_paragraph(doc: str | None) -> str:
    """The docstring's first paragraph on one line ("" without a docstring)."""
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def _to_json(value: Any) -> Any:
    """``value`` as plain JSON data (pydantic models dumped); refuses what JSON cannot hold (NaN, objects)."""
    plain = to_jsonable_python(value)
    return json.loads(json.dumps(plain, allow_nan=False))


def _error(tool_use_id: str, message: str) -> ToolResult:
    return ToolResult(tool_use_id=tool_use_id, content=clip_text(message, MAX_ERROR_CHARS), is_error=True)
