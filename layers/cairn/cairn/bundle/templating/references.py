"""What a template's parts refer to, and the Parameters and Conditions nothing it deploys uses.

A name is used through ``Ref``, ``Fn::GetAtt``, a ``${Name}`` of ``Fn::Sub`` (the names
:func:`cairn.bundle.templating.intrinsic_names.references` reads), the condition of an ``Fn::If``, or a ``Condition``
(a resource's or an output's, or ``!Condition`` in a condition). What the stack deploys is every
section but Parameters and Conditions (Resources, Globals, Outputs, Rules...): a condition is used
when one of those uses it, or a used condition does; a parameter when one of those or a used
condition does. So a parameter only an unused condition reads is unused too (cfn-lint's W2001 and
W8001, with that one step more).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .intrinsic_names import references as value_references

PARAMETERS = "Parameters"
CONDITIONS = "Conditions"
DECLARATIONS = (PARAMETERS, CONDITIONS)


def _condition_names(node: Any) -> set[str]:
    """The conditions ``node`` names: each ``Fn::If``'s first argument and each ``Condition: NAME``."""
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                if key == "Condition" and isinstance(value, str):
                    found.add(value)
                elif key == "Fn::If" and isinstance(value, list) and value and isinstance(value[0], str):
                    found.add(value[0])
                pending.append(value)
        elif isinstance(item, list):
            pending.extend(item)
    return found


def referenced(node: Any) -> set[str]:
    """Every name ``node`` refers to: parameters, conditions, resources, pseudo parameters."""
    return value_references(node) | _condition_names(node)


def declared(template: Mapping[str, Any], section: str) -> dict[str, Any]:
    """The declarations of ``section`` (Parameters or Conditions), by name."""
    found = template.get(section)
    return {str(name): value for name, value in found.items()} if isinstance(found, Mapping) else {}


def with_conditions(names: set[str], template: Mapping[str, Any]) -> set[str]:
    """``names`` and every name the conditions among them refer to, transitively."""
    conditions = declared(template, CONDITIONS)
    found = set(names)
    pending = [name for name in found if name in conditions]
    while pending:
        more = referenced(conditions[pending.pop()]) - found
        found |= more
        pending += [name for name in more if name in conditions]
    return found


def used(template: Mapping[str, Any]) -> set[str]:
    """Every name what the stack deploys refers to, through the conditions it uses."""
    deployed = {key: value for key, value in template.items() if key not in DECLARATIONS}
    return with_conditions(referenced(deployed), template)


def unused(template: Mapping[str, Any]) -> dict[str, list[str]]:
    """The Parameters and the Conditions declared that nothing the stack deploys uses, in template order."""
    live = used(template)
    return {section: [name for name in declared(template, section) if name not in live] for section in DECLARATIONS}


def removable(template: Mapping[str, Any], among: set[str]) -> dict[str, list[str]]:
    """The unused declarations named in ``among`` that can go: none that stays (an unused one too) refers to them."""
    going = {section: set(names) & among for section, names in unused(template).items()}
    while True:
        staying = [
            value
            for section in DECLARATIONS
            for name, value in declared(template, section).items()
            if name not in going[section]
        ]
        needed = referenced(staying)
        if not any(names & needed for names in going.values()):
            break
        going = {section: names - needed for section, names in going.items()}
    return {
        section: [name for name in declared(template, section) if name in going[section]] for section in DECLARATIONS
    }
