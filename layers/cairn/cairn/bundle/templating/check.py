"""``cairn template check``: where template.yaml and the registry disagree, one line each, naming the phase;
and what in the template cannot work (:mod:`.handwritten`), naming the resource."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core import naming
from ...core.pipeline import Phase, Pipeline
from ...core.registry import PipelineRegistry
from ...core.settings import PHASE, PIPELINE
from .. import python_runtime
from . import cfnyaml, handwritten, loading, machinery, resources, saved_settings, section, serverless, stack_names
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
    if actual.get("Role") != expected["Role"]:
        yield f"its role (Role) is {actual.get('Role')!r} in {where}, {expected['Role']!r} in the pipeline"


def _phase_problems(
    pipeline: Pipeline[Any],
    phase: Phase,
    found: tuple[str, Mapping[str, Any]] | None,
    template: Mapping[str, Any],
    broken: Mapping[str, handwritten.BrokenHandler],
    where: str,
) -> Iterator[str]:
    """What is wrong with the phase's function ``found`` (None: there is none) and its log group."""
    if found is None:
        logical_id = naming.resource_id(pipeline.name, phase.name, "Function")
        yield f"{_who(pipeline.name, phase.name)}: no function in {where} (expected {logical_id})"
        return
    logical_id, resource = found
    properties = resource.get("Properties", {})
    expected = resources.function(pipeline, phase)["Properties"]
    if logical_id in broken:
        handler = broken[logical_id]
        yield f'{_who(pipeline.name, phase.name)}: its handler "{handler.handler}" does not work: {handler.why}'
    for problem in _setting_problems(expected, properties, where):
        yield f"{_who(pipeline.name, phase.name)}: {problem}"
    log_group = naming.resource_id(pipeline.name, phase.name, "LogGroup")
    if log_group not in template:
        yield f"{_who(pipeline.name, phase.name)}: no log group in {where} (expected {log_group})"
    role_id = naming.resource_id(pipeline.name, phase.name, "Role")
    role = template.get(role_id)
    if not isinstance(role, Mapping):
        yield f"{_who(pipeline.name, phase.name)}: no role in {where} (expected {role_id})"
    elif role.get("Properties") != resources.role(pipeline, phase)["Properties"]:
        yield (
            f"{_who(pipeline.name, phase.name)}: the IAM policies of its role {role_id} in {where} differ from the "
            "shared policies and the statements the phase declares"
        )


def _stale_problems(registry: PipelineRegistry, template: Mapping[str, Any], where: str) -> Iterator[str]:
    """Functions of phases the registry no longer has."""
    registered = {(pipeline.name, name) for pipeline in registry for name in pipeline.phase_names}
    for logical_id, resource in template.items():
        pair = _phase_of(resource) if isinstance(resource, Mapping) else None
        if pair is not None and pair not in registered:
            yield f"{_who(*pair)}: not in the registry, but {where} still has its function {logical_id}"


def stack_name_problems(loaded: Mapping[str, Any], samconfig: Path, given: Sequence[str] = ()) -> list[str]:
    """Stack names (``given``, else those samconfig.toml saves) that push a name of the template over its limit."""
    saved, unreadable = stack_names.saved_stack_names(samconfig)
    named = [(name, "--stack-name") for name in given] or saved
    return unreadable + [problem for name, source in named for problem in stack_names.problems(loaded, name, source)]


def check(
    template: Path,
    registry: PipelineRegistry,
    functions: Path = loading.DEFAULT_FUNCTIONS,
    *,
    stack_name: Sequence[str] = (),
    config_env: Sequence[str] = (),
) -> list[str]:
    """Every disagreement between ``template`` and ``registry``, and every part of the template that
    cannot work, one line each; none when all is well. (``functions``, the folder the registry was
    imported from, is no longer read: each handler resolves in its own function's ``CodeUri``.)

    Each phase needs its function (running a handler that resolves in its code folder) with the
    timeout, memory, environment and statements it declares, and its log group; no function may run a
    phase the registry does not have; the generated section must be what ``cairn template sync``
    writes; cairn's machinery must be what the cairn installed writes (:mod:`.machinery`); every resource
    must pass :func:`.handwritten.problems`; the runtime must be one cairn supports,
    chosen once (:func:`cairn.bundle.python_runtime.problems`); and each stack name (``stack_name``,
    else those samconfig.toml beside the template saves) must keep every name the template makes from
    it within its limit (:mod:`.stack_names`); and each environment of ``config_env`` must be one
    ``sam deploy --config-env`` can deploy (:mod:`.saved_settings`).
    """
    where = template.name
    try:
        text = template.read_text(encoding="utf-8")
        loaded = cfnyaml.load(text)
    except OSError as exc:
        raise TemplateError(f"cannot read {template}: {exc.strerror or exc}") from exc
    except Exception as exc:  # PyYAML's errors say where
        raise TemplateError(f"{template} does not parse: {exc}") from exc
    if not isinstance(loaded, dict):
        loaded = {}
    defined = serverless.resources(loaded)
    broken = handwritten.broken_handlers(serverless.functions(loaded), template.parent)
    problems: list[str] = []
    phase_functions: set[str] = set()
    for pipeline, phase in resources.phases(registry):
        found = _find_function(defined, pipeline.name, phase.name)
        if found is not None:
            phase_functions.add(found[0])
        problems += _phase_problems(pipeline, phase, found, defined, broken, where)
    problems += _stale_problems(registry, defined, where)
    for logical_id in sorted(set(section.hand_written(text)) & set(resources.generated(registry))):
        problems.append(f"{logical_id} is written by hand in {where}: remove it, cairn template sync writes it")
    current = section.current(text)
    if current is None:
        problems.append(f"{where} has no generated section ({section.START} ...): run cairn template sync")
    elif current != section.render(registry):
        problems.append(f"the generated section of {where} is not what the registry gives: run cairn template sync")
    problems += machinery.problems(text)
    problems += handwritten.problems(loaded, template.parent, where, broken, reported=phase_functions)
    problems += python_runtime.problems(loaded, template.parent)
    samconfig = template.parent / "samconfig.toml"
    problems += stack_name_problems(loaded, samconfig, stack_name)
    return problems + saved_settings.problems(loaded, samconfig, config_env)
