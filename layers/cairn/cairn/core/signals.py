"""Signals: the rule for a signal's name, and the payload models a pipeline declares for the signals it waits for.

A pipeline may declare a pydantic model per signal (``Pipeline(..., signals={"approval": Approval})``):
a delivery whose payload does not fit is refused before anything is written, naming each problem, and
the API, the CLI and the dashboard show the model's JSON schema (the dashboard prefills its payload).
A signal without a declared model takes any JSON payload, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.errors import PydanticInvalidForJsonSchema

from .errors import InvalidInputError, PipelineError
from .text import validation_problems

SIGNAL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def validate_signal_name(name: str) -> str:
    """``name`` when it is a valid signal name (1-64 letters, digits, '.', '_', '-'); else InvalidInputError."""
    if not isinstance(name, str) or not SIGNAL_NAME_PATTERN.fullmatch(name):
        raise InvalidInputError(
            f"Invalid signal name {name!r}: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def checked_signal_models(pipeline: str, models: Mapping[str, Any] | None) -> dict[str, type[BaseModel]]:
    """The declared payload models by signal name; PipelineError for a bad name or a model that is no pydantic model."""
    checked: dict[str, type[BaseModel]] = {}
    for name, model in (models or {}).items():
        if not isinstance(name, str) or not SIGNAL_NAME_PATTERN.fullmatch(name):
            raise PipelineError(f"Pipeline {pipeline!r}: invalid signal name {name!r} in signals=")
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise PipelineError(f"Pipeline {pipeline!r}: the payload of signal {name!r} must be a pydantic model")
        checked[name] = model
    return checked


def admit_payload(pipeline: str, name: str, model: type[BaseModel] | None, payload: Any) -> Any:
    """The payload as JSON, validated against ``model`` when the signal has one; else InvalidInputError."""
    if model is None:
        return payload
    try:
        return model.model_validate(payload).model_dump(mode="json")
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise InvalidInputError(f'Invalid payload for signal "{name}" of pipeline "{pipeline}": {problems}') from exc


def validation_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema input to ``model`` is validated against; {} when a field of it has no JSON schema."""
    try:
        return model.model_json_schema(mode="validation")
    except PydanticInvalidForJsonSchema:
        return {}
