"""``cairn template check``: where template.yaml and the registry disagree, one line each, naming the phase."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .. import naming
from ..pipeline import Phase, Pipeline
from ..registry import PipelineRegistry
from ..settings import PHASE, PIPELINE
from . import cfnyaml, loading, resources, section
from .errors import TemplateError

FUNCTION_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")
#: The function settings that follow from a phase's declaration, with how a problem names each.
SETTINGS = {"Timeout": "timeout", "MemorySize": "memory"}


def _who(pipeline: str, phase: str) -> str:
    return f'phase "{phase}" of pipeline "{pipeline}"'


def _phase_of(resource: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (pipeline, phase) a function's environment says it runs; None for a function that is no phase's."""
    if resource.get("Type") not in FUNCTION_TYPES:
        return None
    variables = resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
    if not isinstance(variables, Mapping) or PHASE not in variables:
        return None
    return str(variables.get(PIPELINE, "")), str(variables[PHASE])


def _find_function(template: Mapping[str, Any], pipeline: str, phase: str) -> tuple[str, Mapping[str, Any]] | None:
    """The phase's function: under its own logical id, or any function whose environment names the phase."""
    logical_id = naming.resource_id(pipeline, phase, "Function")
    own = template.get(logical_id)
    if isinstance(own, Mapping) and own.get("Type") in FUNCTION_TYPES:
        return logical_id, own
    for other_id, resource in template.items():
        if isinstance(resource, Mapping) and _phase_of(resource) == (pipeline, phase):
            return other_id, resource
    return None


class _Handlers:
    """Whether a ``module.attribute`` handler imports from the functions folder (each module imported once)."""

    def __init__(self, functions: Path) -> None:
        self.functions = functions
        self.problems: dict[str, str | None] = {}

    def problem(self, handler: Any) -> str | None:
        if not isinstance(handler, str) or "." not in handler:
            return f"its handler {handler!r} is not MODULE.FUNCTION"
        if handler not in self.problems:
            self.problems[handler] = self._find(handler)
        return self.problems[handler]

    def _find(self, handler: str) -> str | None:
        module_name, name = handler.rsplit(".", 1)
        try:
            target = loading.attribute(loading.import_module(self.functions, module_name), name)
        except TemplateError as exc:
            return f'its handler "{handler}" does not work: {exc}'
        return None if callable(target) else f'its handler "{handler}" is not callable'


def _setting_problems(expected: Mapping[str, Any], actual: Mapping[str, Any], where: str) -> Iterator[str]:
    """The phase function's settings that differ from the declaration's."""
    for key, what in SETTINGS.items():
        if actual.get(key) != expected[key]:
            yield f"its {what} ({key}) is {actual.get(key)!r} in {where}, {expected[key]!r} in the pipeline"
    wanted = expected["Environment"]["Variables"]
    found = actual.get("Environment", {}).get("Variables", {})
    for variable in sorted(set(wanted) | set(found)):
        if wanted.get(variable) != found.get(variable):
            yield (
                f"its environment variable {variable} is {found.get(variable, 'missing')!r} in {where}, "
                f"{wanted.get(variable, 'not declared')!r} in the pipeline"
            )
    if actual.get("Policies") != expected["Policies"]:
        yield f"its IAM policies in {where} differ from the shared policies and the statements the phase declares"


def _phase_problems(
    pipeline: Pipeline[Any], phase: Phase, template: Mapping[str, Any], handlers: _Handlers, where: str
) -> Iterator[str]:
    found = _find_function(template, pipeline.name, phase.name)
    if found is None:
        logical_id = naming.resource_id(pipeline.name, phase.name, "Function")
        yield f"{_who(pipeline.name, phase.name)}: no function in {where} (expected {logical_id})"
        return
    _, resource = found
    properties = resource.get("Properties", {})
    expected = resources.function(pipeline, phase)["Properties"]
    handler_problem = handlers.problem(properties.get("Handler"))
    if handler_problem:
        yield f"{_who(pipeline.name, phase.name)}: {handler_problem}"
    for problem in _setting_problems(expected, properties, where):
        yield f"{_who(pipeline.name, phase.name)}: {problem}"
    log_group = naming.resource_id(pipeline.name, phase.name, "LogGroup")
    if log_group not in template:
        yield f"{_who(pipeline.name, phase.name)}: no log group in {where} (expected {log_group})"


def _stale_problems(registry: PipelineRegistry, template: Mapping[str, Any], where: str) -> Iterator[str]:
    """Functions of phases the registry no longer has."""
    registered = {(pipeline.name, name) for pipeline in registry for name in pipeline.phase_names}
    for logical_id, resource in template.items():
        pair = _phase_of(resource) if isinstance(resource, Mapping) else None
        if pair is not None and pair not in registered:
            yield f"{_who(*pair)}: not in the registry, but {where} still has its function {logical_id}"


def stack_name_problems(samconfig: Path) -> list[str]:
    """Stack names in samconfig.toml too long for every phase function's name to fit Lambda's 64 characters."""
    if not samconfig.is_file():
        return []
    try:
        config = tomllib.loads(samconfig.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [f"{samconfig.name} does not parse: {exc}"]
    problems = []
    for environment, commands in config.items():
        for command, table in commands.items() if isinstance(commands, dict) else ():
            name = table.get("parameters", {}).get("stack_name") if isinstance(table, dict) else None
            if isinstance(name, str) and len(name) > naming.MAX_STACK_NAME:
                problems.append(
                    f'stack name "{name}" ({samconfig.name}, [{environment}.{command}.parameters]) has {len(name)} '
                    f"characters: at most {naming.MAX_STACK_NAME} keep every phase function's name within Lambda's "
                    f"{naming.MAX_FUNCTION_NAME}"
                )
    return problems


def check(template: Path, registry: PipelineRegistry, functions: Path = loading.DEFAULT_FUNCTIONS) -> list[str]:
    """Every disagreement between ``template`` and ``registry``, one line each; none when they agree.

    Each phase needs its function (running a handler that imports from ``functions``) with the
    timeout, memory, environment and statements it declares, and its log group; no function may run a
    phase the registry does not have; the generated section must be what ``cairn template sync``
    writes; and the stack name in the samconfig.toml beside the template must leave room for the
    function names.
    """
    where = template.name
    try:
        text = template.read_text(encoding="utf-8")
        loaded = cfnyaml.load(text)
    except OSError as exc:
        raise TemplateError(f"cannot read {template}: {exc.strerror or exc}") from exc
    except Exception as exc:  # PyYAML's errors say where
        raise TemplateError(f"{template} does not parse: {exc}") from exc
    found = loaded.get("Resources") if isinstance(loaded, dict) else None
    defined: dict[str, Any] = dict(found) if isinstance(found, dict) else {}
    handlers = _Handlers(functions)
    problems: list[str] = []
    for pipeline, phase in resources.phases(registry):
        problems += _phase_problems(pipeline, phase, defined, handlers, where)
    problems += _stale_problems(registry, defined, where)
    for logical_id in sorted(set(section.hand_written(text)) & set(resources.generated(registry))):
        problems.append(f"{logical_id} is written by hand in {where}: remove it, cairn template sync writes it")
    current = section.current(text)
    if current is None:
        problems.append(f"{where} has no generated section ({section.START} ...): run cairn template sync")
    elif current != section.render(registry):
        problems.append(f"the generated section of {where} is not what the registry gives: run cairn template sync")
    return problems + stack_name_problems(template.parent / "samconfig.toml")
