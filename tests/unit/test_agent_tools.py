"""Tools from typed functions: the spec the model sees, and calls that come back as results, never as exceptions."""

from __future__ import annotations

import math
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from cairn.agents import Tool, ToolResult, Toolset, ToolSpec, ToolUse, tool
from cairn.core.errors import PipelineError
from cairn.testing.faults import SimulatedCrash


class Opaque:
    """A class pydantic cannot turn into JSON."""


class Line(BaseModel):
    sku: str
    quantity: int = 1


@tool
def place_order(
    customer: int,
    lines: list[Line],
    tags: list[str],
    note: Annotated[str, Field(description="Shown to the courier")] = "",
    *,
    express: bool = False,
) -> Line:
    """Place an order for a customer.

    The second paragraph is for humans, not for the model.
    """
    return Line(
        sku=f"{customer}:{len(lines)}:{','.join(tags)}:{note}:{express}", quantity=sum(x.quantity for x in lines)
    )


def test_the_spec_comes_from_the_name_the_docstring_and_the_signature() -> None:
    spec = place_order.spec
    schema = spec.input_schema

    assert spec.name == "place_order"
    assert spec.description == "Place an order for a customer."
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["customer", "lines", "tags"]
    properties: Any = schema["properties"]
    assert properties["customer"]["type"] == "integer"
    assert properties["tags"] == {"items": {"type": "string"}, "title": "Tags", "type": "array"}
    assert properties["lines"]["items"] == {"$ref": "#/$defs/Line"}
    assert properties["note"]["description"] == "Shown to the courier"
    assert properties["note"]["default"] == ""
    assert properties["express"]["default"] is False
    defs: Any = schema["$defs"]
    assert defs["Line"]["required"] == ["sku"]
    assert ToolSpec.model_validate_json(spec.model_dump_json()) == spec


def test_a_call_validates_the_input_and_dumps_the_return_value() -> None:
    result = place_order.call(
        {"customer": "7", "lines": [{"sku": "a", "quantity": 2}, {"sku": "b"}], "tags": ["x"], "express": True},
        tool_use_id="t-1",
    )

    assert result == ToolResult(tool_use_id="t-1", content={"sku": "7:2:x::True", "quantity": 3})


def test_the_decorated_function_still_runs_as_a_function() -> None:
    assert place_order(1, [Line(sku="a")], ["t"]) == Line(sku="1:1:t::False", quantity=1)
    assert isinstance(place_order, Tool)


def test_an_invalid_input_is_an_error_result_naming_each_problem() -> None:
    result = place_order.call({"customer": "seven", "lines": [{"quantity": 1}], "colour": "red"}, tool_use_id="t-2")

    assert result.is_error
    assert result.tool_use_id == "t-2"
    assert isinstance(result.content, str)
    assert result.content.startswith('Invalid input for tool "place_order": ')
    for problem in (
        "customer: Input should be a valid integer",
        "lines.0.sku: Field required",
        "tags: Field required",
        "colour: Extra inputs are not permitted",
    ):
        assert problem in result.content


def test_an_exception_in_the_function_is_an_error_result() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    assert divide.call({"a": 1, "b": 4}).content == 0.25
    assert divide.call({"a": 1, "b": 0}, tool_use_id="t") == ToolResult(
        tool_use_id="t", content="ZeroDivisionError: float division by zero", is_error=True
    )


@pytest.mark.parametrize("death", [SimulatedCrash("the process died"), KeyboardInterrupt(), SystemExit(3)])
def test_a_base_exception_that_is_not_an_exception_passes_through(death: BaseException) -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise death

    with pytest.raises(type(death)) as raised:
        fetch.call({"url": "https://example.com"})
    assert raised.value is death


def test_a_return_value_that_is_not_json_is_an_error_result() -> None:
    @tool
    def opaque() -> Any:
        """Return something JSON cannot hold."""
        return object()

    @tool
    def not_a_number() -> float:
        """Return NaN."""
        return math.nan

    for broken in (opaque, not_a_number):
        result = broken.call({})
        assert result.is_error
        assert f'tool "{broken.name}" returned a value that is not JSON' in str(result.content)
    assert opaque.spec.input_schema["properties"] == {}


def test_an_untyped_parameter_is_refused_when_the_tool_is_made() -> None:
    def search(query, limit: int = 5) -> list[str]:  # type: ignore[no-untyped-def]
        """Search."""
        return []

    with pytest.raises(PipelineError, match=r'Tool "search", parameter "query" has no type annotation'):
        tool(search)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x: x, "Invalid tool name '<lambda>'"),
        (print, "cannot read its parameters|has no type annotation|named parameters only"),
    ],
)
def test_functions_that_cannot_be_tools_are_refused_clearly(fn: Any, message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        Tool.of(fn)


def test_variadic_and_non_json_parameters_are_refused() -> None:
    def many(*names: str) -> None:
        """Many."""

    def opaque(thing: Opaque) -> None:
        """Takes an object JSON cannot carry."""

    with pytest.raises(PipelineError, match="named parameters only"):
        Tool.of(many)
    with pytest.raises(PipelineError, match=r'Tool "opaque": a parameter type is not JSON'):
        Tool.of(opaque)


def test_parameter_names_that_clash_with_pydantic_still_work() -> None:
    @tool
    def render(json: str, schema: dict[str, int], model_config: int = 0) -> list[Any]:
        """Render."""
        return [json, schema, model_config]

    properties: Any = render.spec.input_schema["properties"]
    assert sorted(properties) == ["json", "model_config", "schema"]
    assert render.call({"json": "j", "schema": {"a": 1}}).content == ["j", {"a": 1}, 0]


def test_a_tool_can_be_renamed_and_described() -> None:
    renamed = Tool.of(place_order, name="order", description="Order things.")

    assert (renamed.spec.name, renamed.spec.description) == ("order", "Order things.")
    assert Tool.of(place_order) is place_order


def test_a_toolset_dispatches_uses_and_lists_known_tools_for_an_unknown_name() -> None:
    def echo(text: str) -> str:
        """Say it back."""
        return text

    tools = Toolset([place_order, echo])

    assert tools.names == ["place_order", "echo"]
    assert [spec.name for spec in tools.specs] == ["place_order", "echo"]
    assert tools.call(ToolUse(id="u1", name="echo", input={"text": "hi"})) == ToolResult(tool_use_id="u1", content="hi")
    assert tools.call(ToolUse(id="u2", name="shout", input={})) == ToolResult(
        tool_use_id="u2", content='Unknown tool "shout" (known tools: place_order, echo)', is_error=True
    )
    with pytest.raises(PipelineError, match='Two tools are named "echo"'):
        Toolset([echo, echo])
