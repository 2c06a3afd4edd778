"""What ``cairn template check`` checks of every resource, hand-written or generated: that it can work.

Each function's ``Handler`` resolves in its ``CodeUri`` folder (:mod:`.handlers`); each local path
exists (:mod:`.locations`); each ``AWS::Serverless::Function`` sets every variable of
:data:`cairn.core.settings.REQUIRED_VARIABLES` (all of them: the bundle's functions all run cairn's code,
and Globals give the variables to every function); and every Parameter and Condition is used
(:mod:`.references`); and the SAM transform accepts the template (:mod:`.transform`).
Each finding is one line naming the resource, the property and the fix.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.settings import REQUIRED_VARIABLES
from . import handlers, locations, references, serverless, transform


@dataclass(frozen=True)
class BrokenHandler:
    """A function's handler that does not resolve in its code folder, and why."""

    handler: str
    code_uri: str
    why: str


def broken_handlers(functions: Mapping[str, Mapping[str, Any]], root: Path) -> dict[str, BrokenHandler]:
    """The functions (properties merged with Globals, by logical id) whose handler does not resolve.

    A function without a local code folder (a missing one is a location problem), an image or inline
    code is not looked at.
    """
    wanted: dict[str, tuple[Path, str]] = {}
    for logical_id, properties in functions.items():
        folder = locations.code_folder(properties, root)
        handler = properties.get("Handler")
        if folder is None or not isinstance(handler, str) or "InlineCode" in properties:
            continue
        if properties.get("PackageType", "Zip") == "Zip":
            wanted[logical_id] = (folder, handler)
    results = handlers.resolve(wanted.values())
    broken = {}
    for logical_id, (folder, handler) in wanted.items():
        why = results[folder, handler]
        if why is not None:
            broken[logical_id] = BrokenHandler(handler, str(functions[logical_id]["CodeUri"]), why)
    return broken


def handler_problem(logical_id: str, broken: BrokenHandler) -> str:
    """The line for a function whose handler does not resolve."""
    return (
        f"{logical_id}.Handler: {broken.handler!r} does not resolve in {broken.code_uri} ({broken.why}): "
        f"set Handler to MODULE.FUNCTION of a file under {broken.code_uri}"
    )


def variable_problems(functions: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per function that misses a variable cairn reads (its variables not all an ``Fn::If``)."""
    found = []
    for logical_id, properties in functions.items():
        variables = serverless.variables(properties)
        missing = [name for name in REQUIRED_VARIABLES if variables is not None and variables.get(name) is None]
        if missing:
            found.append(
                f"{logical_id}.Environment.Variables: {', '.join(missing)} not set (cairn reads "
                f"{'them' if len(missing) > 1 else 'it'}): set {'them' if len(missing) > 1 else 'it'} in "
                "Globals.Function.Environment.Variables, as the bundle's template does"
            )
    return found


def declaration_problems(template: Mapping[str, Any]) -> list[str]:
    """One line per Parameter or Condition that nothing the stack deploys uses."""
    return [
        f"{section}.{name}: declared but used nowhere (left by a removed pipeline?): remove it, or run "
        "cairn template sync"
        for section, names in references.unused(template).items()
        for name in names
    ]


def problems(
    template: Mapping[str, Any],
    root: Path,
    where: str,
    broken: Mapping[str, BrokenHandler],
    reported: Collection[str] = (),
) -> list[str]:
    """Every finding on ``template`` (in folder ``root``, shown as ``where``); handlers of ``reported`` left out."""
    found = locations.problems(template, root, where)
    found += [handler_problem(logical_id, item) for logical_id, item in broken.items() if logical_id not in reported]
    found += variable_problems(serverless.functions(template))
    return found + declaration_problems(template) + transform.problems(template, root)
