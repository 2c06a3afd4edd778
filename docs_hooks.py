"""The documentation site's generated reference pages (a MkDocs hook, mkdocs.yml ``hooks:``).

Each page is written at build time from the thing it describes, never by hand: the command line from the parser
``cairn.cli.build_parser`` builds, the HTTP API from the OpenAPI document the API serves, the template's parameters
and outputs from template.yaml, the environment variables from ``cairn.core.settings``, and the Python API from
``cairn.__all__`` (each name rendered by mkdocstrings from its docstring, where it is defined).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent
SETTINGS = ROOT / "layers" / "cairn" / "cairn" / "core" / "settings.py"
TEMPLATE = ROOT / "template.yaml"
BUNDLE_TEMPLATE = ROOT / "layers" / "cairn" / "cairn" / "bundle" / "skeleton" / "template.yaml"
GENERATED = "This page is generated when the site is built"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds the generated reference pages to the site's files."""
    pages = {
        "reference/cli.md": cli_page(),
        "reference/http-api.md": http_page(),
        "reference/openapi.json": json.dumps(openapi(), indent=2, sort_keys=True) + "\n",
        "reference/template.md": template_page(),
        "reference/environment.md": environment_page(),
        "reference/python.md": python_page(),
    }
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    return files


def cli_page() -> str:
    """Every command of ``cairn`` with its help, as argparse prints it."""
    from cairn.cli import build_parser

    lines = [
        "# Command line: cairn",
        "",
        f"{GENERATED} from the parser of `cairn` (`cairn.cli.build_parser`): what `cairn COMMAND --help` prints.",
        "",
    ]
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"  # argparse wraps at the terminal's width: one width for every build
    try:
        for name, parser in commands(build_parser(), "cairn"):
            lines += [f"## `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(lines)


def commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and each of its subcommands, depth first, with their full names."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub_parser in action.choices.items():
                yield from commands(sub_parser, f"{name} {sub_name}")


def openapi() -> dict[str, Any]:
    """The OpenAPI document the API serves at ``GET /openapi.json``."""
    from cairn.aws.api import app
    from cairn.aws.api_document import openapi_document

    return openapi_document(app)


def http_page() -> str:
    """Each route of the OpenAPI document: its summary, parameters, request body and responses."""
    document = openapi()
    info = document["info"]
    lines = [
        "# HTTP API: every route",
        "",
        f"{GENERATED} from the API's own OpenAPI document ([openapi.json](openapi.json), also served at "
        "`GET /openapi.json`). [The HTTP API](http.md) tells what each route does in a table.",
        "",
        f"**{info['title']}** {info.get('version', '')}: {info.get('description', '')}",
        "",
    ]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            lines += [f"## `{method.upper()} {path}`", ""]
            if operation.get("summary"):
                lines += [f"**{operation['summary']}**", ""]
            if operation.get("description"):
                lines += [operation["description"], ""]
            parameters = operation.get("parameters", [])
            if parameters:
                lines += ["| Parameter | In | Required | Description |", "| --- | --- | --- | --- |"]
                for parameter in parameters:
                    description = cell(parameter.get("description") or parameter.get("schema", {}).get("title", ""))
                    required = "yes" if parameter.get("required") else "no"
                    lines.append(f"| `{parameter['name']}` | {parameter['in']} | {required} | {description} |")
                lines.append("")
            body = operation.get("requestBody")
            if body is not None:
                lines += [f"Request body: {cell(body.get('description', 'JSON'))}", ""]
            lines += ["| Status | Meaning |", "| --- | --- |"]
            for status, response in sorted(operation.get("responses", {}).items()):
                lines.append(f"| {status} | {cell(response.get('description', ''))} |")
            lines.append("")
    return "\n".join(lines)


def cell(text: str) -> str:
    """``text`` on one line of a Markdown table, its reStructuredText roles and literals as Markdown code."""
    text = ROLE.sub(r"`\1`", " ".join(str(text).split())).replace("``", "`")
    return text.replace("|", "\\|")


#: A reStructuredText role of a docstring (``:mod:`.transition_guard```), kept as its target in code.
ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def template_page() -> str:
    """template.yaml's parameters (type, default, allowed values, description) and outputs."""
    from cairn.bundle.templating import cfnyaml

    template = cfnyaml.load(TEMPLATE.read_text())
    in_a_bundle = cfnyaml.load(BUNDLE_TEMPLATE.read_text())
    repository_only = [
        name for part in ("Parameters", "Outputs") for name in template[part] if name not in in_a_bundle.get(part, {})
    ]
    lines = [
        "# The template: parameters and outputs",
        "",
        f"{GENERATED} from `template.yaml`. Set a parameter with `sam deploy --parameter-overrides NAME=VALUE` "
        "(or in samconfig.toml), or `cairn dev --parameter NAME=VALUE` on the local stack.",
        "",
    ]
    if repository_only:
        names = ", ".join(f"`{name}`" for name in repository_only)
        lines += [
            f"A bundle made by `cairn init` has every parameter and output below except {names}, "
            "which this repository's sample pipelines use.",
            "",
        ]
    lines += [
        "## Parameters",
        "",
        "| Parameter | Type | Default | Allowed | Description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, parameter in template["Parameters"].items():
        allowed = ", ".join(f"`{value}`" for value in parameter.get("AllowedValues", []))
        pattern = parameter.get("AllowedPattern")
        if pattern:
            allowed = f"`{cell(pattern)}`"
        default = parameter.get("Default")
        shown = "(empty)" if default == "" else f"`{default}`" if default is not None else "none"
        description = cell(parameter.get("Description", ""))
        lines.append(f"| `{name}` | {parameter.get('Type', '')} | {shown} | {allowed} | {description} |")
    lines += ["", "## Outputs", "", "| Output | Description |", "| --- | --- |"]
    for name, output in template["Outputs"].items():
        lines.append(f"| `{name}` | {cell(output.get('Description', ''))} |")
    return "\n".join(lines) + "\n"


def environment_page() -> str:
    """Every environment variable ``cairn.core.settings`` names, with the docstring beside it."""
    tree = ast.parse(SETTINGS.read_text())
    variables: list[tuple[str, str, str]] = []
    body = tree.body
    for index, node in enumerate(body):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith("CAIRN_")):
            continue
        following = body[index + 1] if index + 1 < len(body) else None
        doc = ""
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
            doc = str(following.value.value)
        variables.append((value.value, node.targets[0].id, doc))
    defaults = settings_defaults()
    lines = [
        "# Environment variables",
        "",
        f"{GENERATED} from `cairn.core.settings`, the one module that reads the deployment's settings from the "
        "environment. The template sets them on every function; the defaults are `cairn.core.settings.Settings`'s.",
        "",
        "| Variable | Constant | Default | What it sets |",
        "| --- | --- | --- | --- |",
    ]
    for variable, constant, doc in variables:
        default = defaults.get(variable.removeprefix("CAIRN_").lower())
        shown = "" if default is None else "(empty)" if default == "" else f"`{default}`"
        lines.append(f"| `{variable}` | `{constant}` | {shown} | {cell(doc)} |")
    return "\n".join(lines) + "\n"


def settings_defaults() -> dict[str, object]:
    """The defaults of ``Settings``, by field name."""
    from dataclasses import MISSING, fields

    from cairn.core.settings import Settings

    return {field.name: field.default for field in fields(Settings) if field.default is not MISSING}


def python_page() -> str:
    """Each name of ``cairn.__all__``, rendered from where it is defined, grouped by module; then the modules."""
    import cairn

    exports: dict[str, str] = cairn._EXPORTS
    by_module: dict[str, list[str]] = {}
    for name in cairn.__all__:
        by_module.setdefault("cairn" + exports[name], []).append(name)
    lines = [
        "# Python API",
        "",
        f"{GENERATED} from the docstrings: every name `cairn` exports (`from cairn import ...`), rendered from "
        "the module that defines it, then the modules an application imports by name.",
        "",
    ]
    for module, names in sorted(by_module.items()):
        lines += [f"## `{module}`", ""]
        for name in names:
            lines += [f"::: {module}.{name}", "    options:", "      heading_level: 3", ""]
    lines += ["## Other public modules", ""]
    for module in PUBLIC_MODULES:
        lines += [f"::: {module}", "    options:", "      heading_level: 3", "      members_order: source", ""]
    return "\n".join(lines)


#: Modules an application imports by name besides ``cairn`` (each documents its own ``__all__``).
PUBLIC_MODULES = ("cairn.adapters", "cairn.agents", "cairn.testing.plugin")
