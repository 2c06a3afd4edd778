"""The reference pages the site generates (docs_hooks.py) cover what they are generated from."""

from __future__ import annotations

import docs_hooks
from cairn.bundle.templating import cfnyaml
from cairn.cli import build_parser
from cairn.core import settings


def test_the_cli_page_has_every_command_with_its_help() -> None:
    page = docs_hooks.cli_page()
    names = [name for name, _ in docs_hooks.commands(build_parser(), "cairn")]
    assert {"cairn", "cairn jobs", "cairn dev", "cairn init", "cairn new"} <= set(names)
    for name in names:
        assert f"## `{name}`" in page


def test_the_http_page_has_every_route_of_the_openapi_document() -> None:
    page = docs_hooks.http_page()
    for path, operations in docs_hooks.openapi()["paths"].items():
        for method in operations:
            assert f"## `{method.upper()} {path}`" in page


def test_the_template_page_has_every_parameter_and_output() -> None:
    page = docs_hooks.template_page()
    template = cfnyaml.load(docs_hooks.TEMPLATE.read_text())
    for name in [*template["Parameters"], *template["Outputs"]]:
        assert f"| `{name}` |" in page


def test_the_environment_page_has_every_variable_of_the_settings() -> None:
    page = docs_hooks.environment_page()
    variables = [value for value in vars(settings).values() if isinstance(value, str) and value.startswith("CAIRN_")]
    assert len(variables) >= 10
    for variable in variables:
        assert f"| `{variable}` |" in page
    undescribed = [line for line in page.splitlines() if line.startswith("| `CAIRN_") and line.endswith("|  |")]
    assert not undescribed, f"variables of cairn.core.settings without a docstring: {undescribed}"


def test_the_python_page_renders_every_exported_name() -> None:
    import cairn

    page = docs_hooks.python_page()
    for name in cairn.__all__:
        assert f".{name}\n" in page


def test_the_template_page_names_what_a_bundle_s_template_lacks() -> None:
    page = docs_hooks.template_page()
    in_a_bundle = cfnyaml.load(docs_hooks.BUNDLE_TEMPLATE.read_text())
    note = next(line for line in page.splitlines() if line.startswith("A bundle made by `cairn init`"))
    assert "`DocumentsBucket`" in note
    assert "`AgentModelId`" in note
    assert not [name for name in in_a_bundle["Parameters"] if f"`{name}`" in note]
