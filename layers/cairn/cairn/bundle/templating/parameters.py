"""The parameter checks CloudFormation makes before it creates a stack, which moto's CloudFormation skips.

:func:`check` raises :class:`ParameterError` with CloudFormation's own wording when a value breaks its
declaration (``AllowedValues``, ``AllowedPattern``, ``MinLength``/``MaxLength``, ``MinValue``/``MaxValue``,
a ``Number`` that is not one; ``ConstraintDescription`` replaces the reason), when a parameter is unknown
or has neither value nor default, or when an ``Assert`` of a rule whose ``RuleCondition`` holds fails.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import TemplateError


class ParameterError(TemplateError):
    """A parameter value CloudFormation rejects: its message."""


def check(template: Mapping[str, Any], given: Mapping[str, str]) -> None:
    """Raise :class:`ParameterError` when CloudFormation would reject ``given`` for ``template``."""
    declared: Mapping[str, Any] = template.get("Parameters") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterError(f"Parameters: [{', '.join(unknown)}] do not exist in the template")
    missing = [name for name, spec in declared.items() if name not in given and "Default" not in (spec or {})]
    if missing:
        raise ParameterError(f"Parameters: [{', '.join(missing)}] must have values")
    values = {name: str(given.get(name, (spec or {}).get("Default"))) for name, spec in declared.items()}
    for name, spec in declared.items():
        reason = _broken(spec or {}, values[name])
        if reason is not None:
            constraint = (spec or {}).get("ConstraintDescription")
            raise ParameterError(
                f"Parameter '{name}' failed to satisfy constraint: {constraint}"
                if constraint
                else f"Parameter '{name}' {reason}"
            )
    for rule in (template.get("Rules") or {}).values():
        if "RuleCondition" in rule and not _truth(rule["RuleCondition"], values):
            continue
        for assertion in rule.get("Assertions") or []:
            if not _truth(assertion.get("Assert"), values):
                raise ParameterError(str(assertion.get("AssertDescription") or "Template rule assertion failed"))


def _broken(spec: Mapping[str, Any], value: str) -> str | None:
    """What ``value`` breaks of its declaration, as CloudFormation words it; None when nothing."""
    allowed = spec.get("AllowedValues")
    if allowed is not None and value not in [str(item) for item in allowed]:
        return "must be one of AllowedValues"
    pattern = spec.get("AllowedPattern")
    if pattern is not None and re.fullmatch(str(pattern), value) is None:
        return f"must match pattern {pattern}"
    if "MinLength" in spec and len(value) < int(spec["MinLength"]):
        return f"must contain at least {spec['MinLength']} characters"
    if "MaxLength" in spec and len(value) > int(spec["MaxLength"]):
        return f"must contain at most {spec['MaxLength']} characters"
    if spec.get("Type") != "Number":
        return None
    try:
        number = float(value)
    except ValueError:
        return "must be a number"
    if "MinValue" in spec and number < float(spec["MinValue"]):
        return f"must be a number not less than {spec['MinValue']}"
    if "MaxValue" in spec and number > float(spec["MaxValue"]):
        return f"must be a number not greater than {spec['MaxValue']}"
    return None


def _truth(node: Any, values: Mapping[str, str]) -> bool:
    """A rule condition or assertion (``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or``, ``Fn::Contains``)."""
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping) or len(node) != 1:
        raise ParameterError(f"Rules: cannot evaluate {node!r}")
    ((function, argument),) = node.items()
    if function == "Fn::Equals":
        left, right = (_value(item, values) for item in argument)
        return bool(left == right)
    if function == "Fn::Not":
        return not _truth(argument[0], values)
    if function == "Fn::And":
        return all(_truth(item, values) for item in argument)
    if function == "Fn::Or":
        return any(_truth(item, values) for item in argument)
    if function == "Fn::Contains":
        return _value(argument[1], values) in [_value(item, values) for item in _value(argument[0], values)]
    raise ParameterError(f"Rules: {function} is not a rule function")


def _value(node: Any, values: Mapping[str, str]) -> Any:
    """A rule function's argument: a ``Ref`` to a parameter, or a literal."""
    if isinstance(node, Mapping) and set(node) == {"Ref"}:
        return values.get(str(node["Ref"]))
    return [str(item) for item in node] if isinstance(node, list) else str(node)
