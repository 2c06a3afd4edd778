"""What each condition of a template is for some parameter values: CloudFormation's rules, without AWS.

A condition is built of ``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or`` and ``Condition``. The values it
compares are literals, a ``Ref`` to a parameter or a pseudo parameter, or ``Fn::FindInMap``, ``Fn::Join``,
``Fn::Select``, ``Fn::Split`` and ``Fn::Sub`` of those: CloudFormation allows no other function there. Anything
else, a condition that names itself, or a parameter without a value is a :class:`ConditionError` saying which.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import TemplateError

_SUB_NAME: Final = re.compile(r"\$\{([^}]*)\}")
_LIST_TYPES: Final = ("CommaDelimitedList", "List<")


class ConditionError(TemplateError):
    """A condition CloudFormation could not evaluate: which one, and why."""


@dataclass(frozen=True)
class Pseudo:
    """The stack's pseudo parameters: what ``AWS::StackName``, ``AWS::Region`` and the others are."""

    stack_name: str
    region: str
    account: str

    def values(self) -> dict[str, Any]:
        """Each pseudo parameter's value (``AWS::NoValue`` has none a condition may use)."""
        partition = "aws-cn" if self.region.startswith("cn-") else "aws"
        partition = "aws-us-gov" if self.region.startswith("us-gov-") else partition
        return {
            "AWS::StackName": self.stack_name,
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": partition,
            "AWS::URLSuffix": "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com",
            "AWS::StackId": f"arn:{partition}:cloudformation:{self.region}:{self.account}:stack/{self.stack_name}/0",
            "AWS::NotificationARNs": [],
        }


def condition_values(template: Mapping[str, Any], parameters: Mapping[str, str], pseudo: Pseudo) -> dict[str, bool]:
    """Every condition of ``template``, true or false, for ``parameters`` (each parameter's default otherwise)."""
    return _Evaluation(template, {**pseudo.values(), **_parameters(template, parameters)}).all()


def _parameters(template: Mapping[str, Any], given: Mapping[str, str]) -> dict[str, Any]:
    """Each parameter's value as a condition sees it: the given one or the default, a list for a list type."""
    declared = template.get("Parameters") or {}
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        spec = spec if isinstance(spec, Mapping) else {}
        value = given.get(name, spec.get("Default"))
        if value is None:
            continue
        text = _text(value)
        is_list = str(spec.get("Type", "")).startswith(_LIST_TYPES)
        values[str(name)] = [part.strip() for part in text.split(",")] if is_list else text
    return values


def _text(value: Any) -> str:
    """A scalar as CloudFormation compares it: a string (YAML's true is "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class _Evaluation:
    """One evaluation of a template's conditions: each worked out once, a cycle refused."""

    template: Mapping[str, Any]
    values: Mapping[str, Any]
    done: dict[str, bool] = field(default_factory=dict)
    open: list[str] = field(default_factory=list)

    def all(self) -> dict[str, bool]:
        for name in self.template.get("Conditions") or {}:
            self.condition(str(name))
        return dict(self.done)

    def condition(self, name: str) -> bool:
        if name in self.done:
            return self.done[name]
        definitions = self.template.get("Conditions") or {}
        if name not in definitions:
            raise ConditionError(f"Conditions: {self._where()}names the undefined condition {name}")
        if name in self.open:
            raise ConditionError(f"Conditions.{name}: refers to itself ({' -> '.join([*self.open, name])})")
        self.open.append(name)
        try:
            self.done[name] = self.truth(definitions[name])
        finally:
            self.open.pop()
        return self.done[name]

    def truth(self, node: Any) -> bool:
        function, argument = self._function(node)
        if function == "Condition":
            return self.condition(str(argument))
        if function == "Fn::Equals":
            first, second = self._arguments(function, argument, 2)
            return bool(self.value(first) == self.value(second))
        if function == "Fn::Not":
            (only,) = self._arguments(function, argument, 1)
            return not self.truth(only)
        if function in ("Fn::And", "Fn::Or"):
            if not isinstance(argument, list) or not 2 <= len(argument) <= 10:
                raise ConditionError(f"Conditions.{self._name()}: {function} takes 2 to 10 conditions")
            truths = (self.truth(item) for item in argument)
            return all(truths) if function == "Fn::And" else any(truths)
        raise ConditionError(f"Conditions.{self._name()}: {function} is not a condition function")

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, Mapping):
            return _text(node)
        function, argument = self._function(node)
        if function == "Ref":
            return self._ref(str(argument))
        if function == "Fn::FindInMap":
            return self._find_in_map(*(self.value(item) for item in self._arguments(function, argument, 3)))
        if function == "Fn::Join":
            delimiter, items = self._arguments(function, argument, 2)
            return str(self.value(delimiter)).join(_text(item) for item in self._list(function, self.value(items)))
        if function == "Fn::Select":
            index, items = self._arguments(function, argument, 2)
            chosen = self._list(function, self.value(items))
            position = str(self.value(index))
            if not position.isdigit() or int(position) >= len(chosen):
                raise ConditionError(f"Conditions.{self._name()}: Fn::Select index {position} is not in the list")
            return chosen[int(position)]
        if function == "Fn::Split":
            delimiter, text = self._arguments(function, argument, 2)
            return str(self.value(text)).split(str(self.value(delimiter)))
        if function == "Fn::Sub":
            return self._sub(argument)
        raise ConditionError(f"Conditions.{self._name()}: {function} cannot be used in a condition")

    def _ref(self, name: str) -> Any:
        if name not in self.values:
            known = name in (self.template.get("Parameters") or {})
            reason = "has no value (no default, none given)" if known else "is not a parameter"
            raise ConditionError(f"Conditions.{self._name()}: Ref {name} {reason}")
        return self.values[name]

    def _find_in_map(self, mapping: Any, top: Any, second: Any) -> Any:
        table = (self.template.get("Mappings") or {}).get(mapping)
        row = table.get(top) if isinstance(table, Mapping) else None
        if not isinstance(row, Mapping) or second not in row:
            raise ConditionError(f"Conditions.{self._name()}: Fn::FindInMap finds no {mapping}.{top}.{second}")
        return self.value(row[second])

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else self._arguments("Fn::Sub", argument, 2)
        if not isinstance(text, str) or not isinstance(variables, Mapping):
            raise ConditionError(f"Conditions.{self._name()}: Fn::Sub takes a string and a map of variables")

        def replaced(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            value = self.value(variables[name]) if name in variables else self._ref(name)
            return _text(value)

        return _SUB_NAME.sub(replaced, text)

    def _function(self, node: Any) -> tuple[str, Any]:
        if not isinstance(node, Mapping) or len(node) != 1:
            raise ConditionError(f"Conditions.{self._name()}: {node!r} is not a condition function")
        ((function, argument),) = node.items()
        return str(function), argument

    def _arguments(self, function: str, argument: Any, count: int) -> list[Any]:
        if not isinstance(argument, list) or len(argument) != count:
            raise ConditionError(f"Conditions.{self._name()}: {function} takes a list of {count}")
        return argument

    def _list(self, function: str, value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise ConditionError(f"Conditions.{self._name()}: {function} needs a list, not {value!r}")
        return value

    def _name(self) -> str:
        return self.open[-1] if self.open else "?"

    def _where(self) -> str:
        return f"{self.open[-1]} " if self.open else ""
