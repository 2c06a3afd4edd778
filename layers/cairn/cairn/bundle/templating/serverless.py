"""The template's SAM functions as SAM sees them: each one's properties with ``Globals.Function`` merged in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SERVERLESS_FUNCTION = "AWS::Serverless::Function"


def _is_intrinsic(node: Any) -> bool:
    if not isinstance(node, Mapping) or len(node) != 1:
        return False
    key = str(next(iter(node)))
    return key == "Ref" or key.startswith("Fn::")


def merge_globals(defaults: Any, own: Any) -> Any:
    """SAM's Globals merge: mappings key by key, lists concatenated, else the function's own (an intrinsic too)."""
    if _is_intrinsic(defaults) or _is_intrinsic(own):
        return own
    if isinstance(defaults, Mapping) and isinstance(own, Mapping):
        merged = dict(defaults)
        for key, value in own.items():
            merged[key] = merge_globals(defaults[key], value) if key in defaults else value
        return merged
    if isinstance(defaults, list) and isinstance(own, list):
        return [*defaults, *own]
    return own


def resources(template: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The template's resources that are mappings, by logical id."""
    found = template.get("Resources")
    if not isinstance(found, Mapping):
        return {}
    return {str(key): value for key, value in found.items() if isinstance(value, Mapping)}


def global_function(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """``Globals.Function`` (empty without one)."""
    shared = template.get("Globals")
    found = shared.get("Function") if isinstance(shared, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def functions(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each ``AWS::Serverless::Function``'s properties, ``Globals.Function`` merged in, by logical id."""
    shared = global_function(template)
    found: dict[str, dict[str, Any]] = {}
    for logical_id, resource in resources(template).items():
        if resource.get("Type") == SERVERLESS_FUNCTION:
            own = resource.get("Properties")
            found[logical_id] = dict(merge_globals(shared, own if isinstance(own, Mapping) else {}))
    return found


def variables(properties: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A function's environment variables; None when they are not a plain mapping (an ``Fn::If``, say)."""
    environment = properties.get("Environment") or {}
    if not isinstance(environment, Mapping) or _is_intrinsic(environment):
        return None
    found = environment.get("Variables") or {}
    return found if isinstance(found, Mapping) and not _is_intrinsic(found) else None
