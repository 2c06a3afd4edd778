"""An environment samconfig.toml saves, checked as ``sam deploy --config-env NAME`` would deploy it.

``cairn template check --config-env NAME`` reads the environment's ``parameter_overrides`` and ``region``
as SAM does (its ``deploy`` table's, else its ``global`` table's) and reports what the deploy would be
refused for: a value its parameter's declaration does not allow, a rule's assertion that fails
(``Stage=prod`` without an alarm target: the rule ``ProdNeedsAlarmTarget``), or a placeholder left in.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .parameters import ParameterError
from .parameters import check as check_parameters

PLACEHOLDER = "REPLACE-WITH-"
"""How a value samconfig.toml ships for the deployer to fill in begins."""
COMMAND = "deploy"
"""The command whose settings an environment is checked for."""


def parameter_overrides(saved: object) -> dict[str, str]:
    """SAM's ``parameter_overrides``: ``Key=Value`` words (a value quoted where it holds a space), or a list of them."""
    if saved is None:
        words: list[str] = []
    elif isinstance(saved, str):
        words = shlex.split(saved)
    elif isinstance(saved, list):
        words = [str(word) for word in saved]
    else:
        raise ValueError(f"{saved!r} is neither a string nor a list")
    found = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals or not key:
            raise ValueError(f"{word!r} is not Key=Value")
        found[key] = value
    return found


def _settings(config: Mapping[str, Any], environment: str) -> dict[str, Any]:
    """The environment's settings for ``sam deploy``: its global table, then its deploy table over it."""
    tables = config.get(environment)
    if not isinstance(tables, Mapping):
        raise KeyError(environment)
    merged: dict[str, Any] = {}
    for command in ("global", COMMAND):
        table = tables.get(command, {})
        parameters = table.get("parameters", {}) if isinstance(table, Mapping) else {}
        if isinstance(parameters, Mapping):
            merged.update(parameters)
    return merged


def problems(template: Mapping[str, Any], samconfig: Path, environments: Sequence[str]) -> list[str]:
    """What ``sam deploy --config-env NAME`` would be refused for, for each NAME of ``environments``."""
    if not environments:
        return []
    try:
        config = tomllib.loads(samconfig.read_text(encoding="utf-8"))
    except OSError as exc:
        return [f"--config-env: cannot read {samconfig}: {exc.strerror or exc}"]
    except tomllib.TOMLDecodeError as exc:
        return [f"{samconfig.name} does not parse: {exc}"]
    found = []
    for environment in environments:
        where = f"{samconfig.name} [{environment}]"
        try:
            settings = _settings(config, environment)
        except KeyError:
            saved = sorted(name for name, tables in config.items() if isinstance(tables, Mapping))
            found.append(f"{where}: no such environment (it has {', '.join(saved) or 'none'})")
            continue
        region = settings.get("region")
        if isinstance(region, str) and region.startswith(PLACEHOLDER):
            found.append(f"{where}: region is still the placeholder {region}: name the region to deploy to")
        try:
            given = parameter_overrides(settings.get("parameter_overrides"))
        except ValueError as exc:
            found.append(f"{where}: parameter_overrides does not parse: {exc}")
            continue
        for name, value in given.items():
            if value.startswith(PLACEHOLDER):
                found.append(f"{where}: {name} is still the placeholder {value}")
        try:
            check_parameters(template, given)
        except ParameterError as exc:
            found.append(f"{where}: sam deploy --config-env {environment} would be refused: {exc}")
    return found
