"""The names a template value refers to through its intrinsic functions (``Ref``, ``Fn::GetAtt``, ``Fn::Sub``).

One home for reading intrinsics without resolving them: ``cairn template`` finds unused parameters and
conditions with it, ``cairn dev`` orders the resources it deploys with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")
"""A ``${Name}`` (or ``${Resource.Attribute}``, ``${!Literal}``) of an ``Fn::Sub`` template."""


def intrinsic(node: Any) -> tuple[str, Any] | None:
    """``(function, argument)`` when ``node`` is a one-key mapping naming an intrinsic function."""
    if isinstance(node, Mapping) and len(node) == 1:
        ((key, argument),) = node.items()
        if key == "Ref" or key == "Condition" or (isinstance(key, str) and key.startswith("Fn::")):
            return str(key), argument
    return None


def references(node: Any) -> set[str]:
    """Every name ``node`` refers to through ``Ref``, ``Fn::GetAtt`` and ``Fn::Sub`` (all branches of ``Fn::If``).

    Parameters and pseudo parameters are included: intersect with the resources for dependencies.
    """
    found: set[str] = set()
    call = intrinsic(node)
    if call is not None:
        function, argument = call
        if function == "Ref" and isinstance(argument, str):
            return {argument}
        if function == "Fn::GetAtt":
            if isinstance(argument, str):
                return {argument.split(".", 1)[0]}
            if isinstance(argument, list) and argument and isinstance(argument[0], str):
                return {argument[0]} | references(argument[1:])
        if function == "Fn::Sub":
            template, variables = (argument[0], argument[1]) if isinstance(argument, list) else (argument, {})
            local = set(variables) if isinstance(variables, Mapping) else set()
            if isinstance(template, str):
                for match in SUB_VARIABLE.finditer(template):
                    name = match.group(1).strip()
                    if name and not name.startswith("!"):
                        found.add(name.split(".", 1)[0])
            return (found - local) | references(variables)
    if isinstance(node, Mapping):
        for value in node.values():
            found |= references(value)
    elif isinstance(node, list):
        for item in node:
            found |= references(item)
    return found
