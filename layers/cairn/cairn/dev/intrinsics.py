"""CloudFormation intrinsics, resolved offline: parameters, pseudo parameters, conditions, mappings.

:class:`Resolver` evaluates ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::If``, ``Fn::FindInMap``,
``Fn::Join``, ``Fn::Split`` and ``Fn::Select`` (and the condition functions ``Fn::Equals``,
``Fn::Not``, ``Fn::And``, ``Fn::Or``, ``Condition``) against parameter values and the physical
resources the caller knows. ``Ref: AWS::NoValue`` removes the key or list item that holds it. Every
value it cannot resolve raises :class:`ResolutionError` naming where it is, e.g.
``Resources.ApiFunction.Properties.Environment.Variables.X``. :func:`resolve_parameters` applies
defaults and overrides and checks each value against its declaration.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..bundle.templating.errors import TemplateError
from ..bundle.templating.intrinsic_names import SUB_VARIABLE, intrinsic

#: Parameter types whose ``Ref`` is a list (the value is comma-separated).
LIST_TYPES: Final = ("CommaDelimitedList", "List<")
_CONDITION_FUNCTIONS: Final = ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition")


class ResolutionError(TemplateError):
    """A value of the template cannot be resolved; ``path`` says where it is."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


class ParameterError(TemplateError):
    """A parameter value is missing, unknown, or breaks its declaration (AllowedValues, AllowedPattern...)."""


class _NoValue:
    """What ``Ref: AWS::NoValue`` resolves to: the key or list item holding it is dropped."""

    def __repr__(self) -> str:
        return "AWS::NoValue"


#: The result of ``Ref: AWS::NoValue`` when it is the whole value given to :meth:`Resolver.resolve`.
NO_VALUE: Final = _NoValue()


@dataclass(frozen=True)
class Pseudo:
    """The pseudo parameters of one stack."""

    stack_name: str
    region: str
    account: str
    partition: str = "aws"
    url_suffix: str = "amazonaws.com"

    def values(self) -> dict[str, Any]:
        """``AWS::X`` name to value (``AWS::NoValue`` is handled by the resolver)."""
        return {
            "AWS::StackName": self.stack_name,
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": self.partition,
            "AWS::URLSuffix": self.url_suffix,
            "AWS::StackId": (
                f"arn:{self.partition}:cloudformation:{self.region}:{self.account}:stack/{self.stack_name}/local"
            ),
            "AWS::NotificationARNs": [],
        }


@dataclass(frozen=True)
class PhysicalResource:
    """What ``Ref`` and ``Fn::GetAtt`` give for one resource.

    ``attribute`` (when set) answers the attributes missing from ``attributes``, for resources only
    named, not created; without it an unknown attribute is an error.
    """

    ref: Any
    attributes: Mapping[str, Any] = field(default_factory=dict)
    attribute: Callable[[str], Any] | None = None

    def get_att(self, name: str) -> Any:
        """The attribute ``name``; KeyError when the resource has no such attribute."""
        if name in self.attributes:
            return self.attributes[name]
        if self.attribute is not None:
            return self.attribute(name)
        raise KeyError(name)


def text(value: Any) -> str:
    """A scalar as CloudFormation passes it: a string, ``true``/``false`` for booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def at(path: str, key: str | int) -> str:
    """``path`` one level down: ``A.B`` for a key, ``A[3]`` for a list index."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def resolve_parameters(declarations: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every parameter's value (a string, as CloudFormation passes it): the override, else the default.

    Raises :class:`ParameterError` for an override the template does not declare, a parameter with
    neither, and a value its ``Type``, ``AllowedValues``, ``AllowedPattern``, ``MinValue``/``MaxValue``
    or ``MinLength``/``MaxLength`` rejects.
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(declarations))
    if unknown:
        raise ParameterError(f"The template declares no parameter {', '.join(unknown)}")
    values: dict[str, str] = {}
    for name, spec in declarations.items():
        spec = spec or {}
        if name in overrides:
            value = text(overrides[name])
        elif "Default" in spec:
            default = spec["Default"]
            value = ",".join(text(item) for item in default) if isinstance(default, list) else text(default)
        else:
            raise ParameterError(f"Parameter {name} has no Default: give it a value")
        _check_parameter(name, spec, value)
        values[name] = value
    return values


def _check_parameter(name: str, spec: Mapping[str, Any], value: str) -> None:
    """Raise :class:`ParameterError` when ``value`` breaks the declaration of parameter ``name``."""
    kind = str(spec.get("Type", "String"))
    hint = f" ({spec['ConstraintDescription']})" if "ConstraintDescription" in spec else ""
    items = value.split(",") if kind.startswith(LIST_TYPES) else [value]
    for item in items:
        allowed = spec.get("AllowedValues")
        if allowed is not None and item not in [text(option) for option in allowed]:
            options = ", ".join(text(option) for option in allowed)
            raise ParameterError(f"Parameter {name}: {item!r} is not one of the allowed values {options}{hint}")
        pattern = spec.get("AllowedPattern")
        if pattern is not None and re.fullmatch(str(pattern), item) is None:
            raise ParameterError(f"Parameter {name}: {item!r} does not match the allowed pattern {pattern}{hint}")
        if kind in ("Number", "List<Number>"):
            _check_number(name, spec, item, hint)
    if "MinLength" in spec and len(value) < int(spec["MinLength"]):
        raise ParameterError(f"Parameter {name}: {value!r} is shorter than {spec['MinLength']} characters{hint}")
    if "MaxLength" in spec and len(value) > int(spec["MaxLength"]):
        raise ParameterError(f"Parameter {name}: {value!r} is longer than {spec['MaxLength']} characters{hint}")


def _check_number(name: str, spec: Mapping[str, Any], value: str, hint: str) -> None:
    """Raise :class:`ParameterError` when ``value`` is not a number within MinValue and MaxValue."""
    try:
        number = float(value)
    except ValueError:
        raise ParameterError(f"Parameter {name}: {value!r} is not a number{hint}") from None
    if "MinValue" in spec and number < float(spec["MinValue"]):
        raise ParameterError(f"Parameter {name}: {value} is below the minimum {spec['MinValue']}{hint}")
    if "MaxValue" in spec and number > float(spec["MaxValue"]):
        raise ParameterError(f"Parameter {name}: {value} is above the maximum {spec['MaxValue']}{hint}")


class Resolver:
    """Resolves the intrinsics of one template for one set of parameter values and physical resources.

    ``resources`` is read at each lookup, so a caller may add resources to it as it creates them.
    ``absent`` names the resources whose ``Condition`` is false (a reference to one is an error).
    ``list_parameters`` names the parameters whose ``Ref`` is a list (CommaDelimitedList, List<...>).
    """

    def __init__(
        self,
        *,
        parameters: Mapping[str, str],
        pseudo: Pseudo,
        conditions: Mapping[str, Any] | None = None,
        mappings: Mapping[str, Any] | None = None,
        resources: Mapping[str, PhysicalResource] | None = None,
        absent: Collection[str] = (),
        list_parameters: Collection[str] = (),
    ) -> None:
        self.parameters = parameters
        self.pseudo = pseudo.values()
        self.conditions = conditions or {}
        self.mappings = mappings or {}
        self.resources: Mapping[str, PhysicalResource] = resources if resources is not None else {}
        self.absent = set(absent)
        self.list_parameters = set(list_parameters)
        self._truths: dict[str, bool] = {}
        self._evaluating: list[str] = []
        self._functions: dict[str, Callable[[Any, str], Any]] = {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Sub": self._sub,
            "Fn::If": self._if,
            "Fn::FindInMap": self._find_in_map,
            "Fn::Join": self._join,
            "Fn::Split": self._split,
            "Fn::Select": self._select,
        }

    # ------------------------------------------------------------------ values

    def resolve(self, node: Any, path: str) -> Any:
        """``node`` with every intrinsic evaluated; keys and list items that are ``AWS::NoValue`` dropped.

        Returns :data:`NO_VALUE` when ``node`` itself is ``AWS::NoValue``.
        """
        call = intrinsic(node)
        if call is not None:
            function, argument = call
            if function in self._functions:
                return self._functions[function](argument, at(path, function))
            if function in _CONDITION_FUNCTIONS:
                return self.truth(node, path)
            raise ResolutionError(path, f"{function} is not supported here")
        if isinstance(node, Mapping):
            resolved = {key: self.resolve(value, at(path, str(key))) for key, value in node.items()}
            return {key: value for key, value in resolved.items() if value is not NO_VALUE}
        if isinstance(node, list):
            items = [self.resolve(item, at(path, index)) for index, item in enumerate(node)]
            return [item for item in items if item is not NO_VALUE]
        return node

    def string(self, node: Any, path: str) -> str:
        """``node`` resolved to a string (numbers and booleans as CloudFormation writes them)."""
        value = self.resolve(node, path)
        if isinstance(value, Mapping | list) or value is None or value is NO_VALUE:
            raise ResolutionError(path, f"expected a string, got {_kind(value)}")
        return text(value)

    def _ref(self, name: Any, path: str) -> Any:
        if not isinstance(name, str):
            raise ResolutionError(path, f"Ref takes a name, got {_kind(name)}")
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.parameters:
            value = self.parameters[name]
            return value.split(",") if name in self.list_parameters else value
        if name in self.pseudo:
            return self.pseudo[name]
        return self._resource(name, path).ref

    def _resource(self, name: str, path: str) -> PhysicalResource:
        if name in self.resources:
            return self.resources[name]
        if name in self.absent:
            raise ResolutionError(path, f"{name} is absent (its Condition is false)")
        if name.startswith("AWS::"):
            raise ResolutionError(path, f"unsupported pseudo parameter {name}")
        raise ResolutionError(path, f"{name} is neither a parameter nor a resource the resolver knows")

    def _get_att(self, argument: Any, path: str) -> Any:
        if isinstance(argument, str) and "." in argument:
            argument = argument.split(".", 1)
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str)):
            raise ResolutionError(path, "Fn::GetAtt takes [resource, attribute]")
        name = argument[0]
        attribute = self.string(argument[1], at(path, 1))
        if name in self.parameters or name in self.pseudo:
            raise ResolutionError(path, f"{name} is a parameter: it has no attribute {attribute}")
        try:
            return self._resource(name, path).get_att(attribute)
        except KeyError:
            raise ResolutionError(path, f"{name} has no attribute {attribute}") from None

    def _sub(self, argument: Any, path: str) -> str:
        variables: dict[str, Any] = {}
        if isinstance(argument, list):
            if len(argument) != 2 or not isinstance(argument[1], Mapping):
                raise ResolutionError(path, "Fn::Sub takes a string or [string, {variables}]")
            template = argument[0]
            variables = {str(key): self.string(value, at(at(path, 1), str(key))) for key, value in argument[1].items()}
        else:
            template = argument
        if not isinstance(template, str):
            raise ResolutionError(path, f"Fn::Sub takes a string, got {_kind(template)}")

        def replace(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            if name.startswith("!"):
                return f"${{{name[1:]}}}"
            if name in variables:
                return str(variables[name])
            if name in self.parameters or name in self.pseudo or "." not in name:
                return self.string({"Ref": name}, path)
            resource, attribute = name.split(".", 1)
            return self.string({"Fn::GetAtt": [resource, attribute]}, path)

        return SUB_VARIABLE.sub(replace, template)

    def _if(self, argument: Any, path: str) -> Any:
        if not (isinstance(argument, list) and len(argument) == 3 and isinstance(argument[0], str)):
            raise ResolutionError(path, "Fn::If takes [condition, value if true, value if false]")
        chosen = 1 if self.condition(argument[0], path) else 2
        return self.resolve(argument[chosen], at(path, chosen))

    def _find_in_map(self, argument: Any, path: str) -> Any:
        if not (isinstance(argument, list) and len(argument) == 3):
            raise ResolutionError(path, "Fn::FindInMap takes [map, top-level key, second-level key]")
        keys = [self.string(key, at(path, index)) for index, key in enumerate(argument)]
        node: Any = self.mappings
        for depth, key in enumerate(keys):
            match = [value for name, value in node.items() if text(name) == key] if isinstance(node, Mapping) else []
            if not match:
                where = "Mappings" if depth == 0 else f"Mappings.{'.'.join(keys[:depth])}"
                raise ResolutionError(path, f"{where} has no key {key!r}")
            node = match[0]
        return node

    def _join(self, argument: Any, path: str) -> str:
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str)):
            raise ResolutionError(path, "Fn::Join takes [delimiter, [values]]")
        items = self.resolve(argument[1], at(path, 1))
        if not isinstance(items, list):
            raise ResolutionError(at(path, 1), f"Fn::Join needs a list, got {_kind(items)}")
        return argument[0].join(self.string(item, at(at(path, 1), index)) for index, item in enumerate(items))

    def _split(self, argument: Any, path: str) -> list[str]:
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str)):
            raise ResolutionError(path, "Fn::Split takes [delimiter, string]")
        return self.string(argument[1], at(path, 1)).split(argument[0])

    def _select(self, argument: Any, path: str) -> Any:
        if not (isinstance(argument, list) and len(argument) == 2):
            raise ResolutionError(path, "Fn::Select takes [index, [values]]")
        index_text = self.string(argument[0], at(path, 0))
        items = self.resolve(argument[1], at(path, 1))
        if not isinstance(items, list):
            raise ResolutionError(at(path, 1), f"Fn::Select needs a list, got {_kind(items)}")
        if not index_text.isdigit() or int(index_text) >= len(items):
            raise ResolutionError(path, f"index {index_text} is out of range for a list of {len(items)}")
        return items[int(index_text)]

    # ------------------------------------------------------------------ conditions

    def condition(self, name: str, path: str) -> bool:
        """Whether the template's condition ``name`` holds (``path`` is where it is used)."""
        if name in self._truths:
            return self._truths[name]
        if name not in self.conditions:
            raise ResolutionError(path, f"the template has no condition {name}")
        if name in self._evaluating:
            cycle = " -> ".join([*self._evaluating[self._evaluating.index(name) :], name])
            raise ResolutionError(path, f"circular conditions: {cycle}")
        self._evaluating.append(name)
        try:
            truth = self.truth(self.conditions[name], f"Conditions.{name}")
        finally:
            self._evaluating.pop()
        self._truths[name] = truth
        return truth

    def truth(self, node: Any, path: str) -> bool:
        """A condition function (``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or``, ``Condition``) evaluated."""
        call = intrinsic(node)
        if call is None or call[0] not in _CONDITION_FUNCTIONS:
            if isinstance(node, bool):
                return node
            raise ResolutionError(path, f"expected a condition function, got {_kind(node)}")
        function, argument = call
        inner = at(path, function)
        if function == "Condition":
            if not isinstance(argument, str):
                raise ResolutionError(inner, "Condition takes a condition name")
            return self.condition(argument, inner)
        if not isinstance(argument, list):
            raise ResolutionError(inner, f"{function} takes a list")
        if function == "Fn::Equals":
            if len(argument) != 2:
                raise ResolutionError(inner, "Fn::Equals takes two values")
            left, right = (self.resolve(value, at(inner, index)) for index, value in enumerate(argument))
            return bool(_comparable(left) == _comparable(right))
        if function == "Fn::Not":
            if len(argument) != 1:
                raise ResolutionError(inner, "Fn::Not takes one condition")
            return not self.truth(argument[0], at(inner, 0))
        if not 2 <= len(argument) <= 10:
            raise ResolutionError(inner, f"{function} takes 2 to 10 conditions")
        truths = (self.truth(value, at(inner, index)) for index, value in enumerate(argument))
        return all(truths) if function == "Fn::And" else any(truths)

    def check_rules(self, rules: Mapping[str, Any] | None) -> None:
        """Raise :class:`ParameterError` when an ``Assert`` of a rule whose ``RuleCondition`` holds fails."""
        for name, rule in (rules or {}).items():
            path = f"Rules.{name}"
            if "RuleCondition" in rule and not self.truth(rule["RuleCondition"], at(path, "RuleCondition")):
                continue
            for index, assertion in enumerate(rule.get("Assertions") or []):
                if not self.truth(assertion.get("Assert"), at(at(at(path, "Assertions"), index), "Assert")):
                    reason = assertion.get("AssertDescription", "an assertion failed")
                    raise ParameterError(f"Rule {name}: {reason}")


def _comparable(value: Any) -> Any:
    """A value compared as ``Fn::Equals`` compares: scalars as strings, lists item by item."""
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _comparable(item) for key, item in value.items()}
    return text(value)


def _kind(value: Any) -> str:
    """A value's kind for an error message."""
    if value is NO_VALUE:
        return "AWS::NoValue"
    call = intrinsic(value)
    if call is not None:
        return call[0]
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)
