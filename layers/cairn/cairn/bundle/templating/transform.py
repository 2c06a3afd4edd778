"""The template as CloudFormation receives it: ``AWS::LanguageExtensions``, then the SAM transform.

:func:`packaged` rewrites each local path, as ``sam package`` does: a function's ``CodeUri`` and a
layer's ``ContentUri`` become the S3 locations an ``upload`` callback gives, a state machine's
``DefinitionUri`` file becomes its inline ``Definition``. :func:`transform` resolves every ``Fn::If``
whose condition depends on parameters only (what ``AWS::LanguageExtensions`` does before SAM sees the
template; :mod:`.conditions` works out the conditions) and runs aws-sam-translator,
the transform CloudFormation runs for ``AWS::Serverless-2016-10-31``. A template the translator rejects
raises :class:`TransformError` with the translator's own messages.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from .conditions import ConditionError, Pseudo, condition_values
from .errors import TemplateError
from .serverless import SERVERLESS_FUNCTION, global_function

LANGUAGE_EXTENSIONS: Final = "AWS::LanguageExtensions"
Upload = Callable[[str, Path], str]
"""``(logical id, local folder)`` to the ``s3://bucket/key`` the folder's zip was put at."""
_NO_VALUE: Final = {"Ref": "AWS::NoValue"}
_REMOVED: Final = object()
#: Resource type and the property naming a folder to upload.
_UPLOADED: Final = {SERVERLESS_FUNCTION: "CodeUri", "AWS::Serverless::LayerVersion": "ContentUri"}


class TransformError(TemplateError):
    """The SAM transform (or the language extensions before it) rejects the template: its own message."""


def placeholder_upload(logical_id: str, folder: Path) -> str:
    """An S3 location for ``folder`` that nothing is uploaded to: enough for the transform to read the template."""
    return f"s3://cairn-check/{logical_id}.zip"


def packaged(template: Mapping[str, Any], root: Path, upload: Upload, *, present: bool = True) -> dict[str, Any]:
    """``template`` with its local code folders uploaded and its definition files inlined (paths from ``root``).

    A ``CodeUri`` given in ``Globals.Function`` is given to each function that has none. TransformError
    names a path that is not there (with ``present``; else a missing folder is uploaded as it is, and a
    missing definition file is left to an S3 location).
    """
    result = copy.deepcopy(dict(template))
    shared_code = global_function(result).get("CodeUri")
    for logical_id, resource in (result.get("Resources") or {}).items():
        if not isinstance(resource, dict):
            continue
        properties = resource.setdefault("Properties", {})
        kind = resource.get("Type")
        key = _UPLOADED.get(str(kind))
        if kind == SERVERLESS_FUNCTION and "CodeUri" not in properties and shared_code is not None:
            properties["CodeUri"] = shared_code
        if key is not None and _local(properties.get(key)):
            folder = root / properties[key]
            if present and not folder.is_dir():
                raise TransformError(f"Resources.{logical_id}.Properties.{key}: no folder {folder}")
            properties[key] = upload(logical_id, folder.resolve())
        if kind == "AWS::Serverless::StateMachine" and _local(properties.get("DefinitionUri")):
            file = root / properties.pop("DefinitionUri")
            if not present and not file.is_file():
                properties["DefinitionUri"] = f"s3://cairn-check/{logical_id}.json"
                continue
            try:
                properties["Definition"] = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise TransformError(f"Resources.{logical_id}.Properties.DefinitionUri: {file}: {exc}") from None
    if shared_code is not None:
        del result["Globals"]["Function"]["CodeUri"]
    return result


def problems(template: Mapping[str, Any], root: Path) -> list[str]:
    """What the SAM transform rejects of ``template`` (in folder ``root``) with its parameters' defaults, one line."""
    try:
        transform(
            packaged(template, root, placeholder_upload, present=False),
            {},
            stack_name="cairn-check",
            region="us-east-1",
            account="123456789012",
        )
    except TransformError as exc:
        return [f"the SAM transform rejects the template: {exc}"]
    return []


def transform(
    template: Mapping[str, Any], parameters: Mapping[str, str], *, stack_name: str, region: str, account: str
) -> dict[str, Any]:
    """The plain CloudFormation template of a packaged SAM ``template`` for these parameter values."""
    from samtranslator.model.exceptions import InvalidDocumentException  # type: ignore[import-untyped]
    from samtranslator.translator.transform import transform as sam  # type: ignore[import-untyped]

    fragment = language_extensions(template, parameters, stack_name=stack_name, region=region, account=account)
    values = {**_parameter_defaults(template), **parameters, "AWS::Region": region, "AWS::AccountId": account}
    try:
        with _region(region):
            result: dict[str, Any] = sam(fragment, values, _NoManagedPolicies())
    except InvalidDocumentException as exc:
        raise TransformError(" ".join([exc.message, *(cause.message for cause in exc.causes)])) from None
    return result


def language_extensions(
    template: Mapping[str, Any], parameters: Mapping[str, str], *, stack_name: str, region: str, account: str
) -> dict[str, Any]:
    """What ``AWS::LanguageExtensions`` hands on: each ``Fn::If`` replaced by its branch, the transform dropped.

    A template without that transform is returned as it is.
    """
    transforms = template.get("Transform") or []
    transforms = [transforms] if isinstance(transforms, str) else list(transforms)
    if LANGUAGE_EXTENSIONS not in transforms:
        return dict(template)
    conditions = _conditions(template, parameters, stack_name=stack_name, region=region, account=account)
    result = dict(template)
    for section in ("Globals", "Resources", "Outputs"):
        if section in result:
            result[section] = _resolve_ifs(result[section], conditions)
    remaining = [name for name in transforms if name != LANGUAGE_EXTENSIONS]
    result["Transform"] = remaining[0] if len(remaining) == 1 else remaining
    return result


def _conditions(
    template: Mapping[str, Any], parameters: Mapping[str, str], *, stack_name: str, region: str, account: str
) -> Mapping[str, bool]:
    """Every condition's value for these parameter values (:mod:`.conditions`)."""
    try:
        return condition_values(template, parameters, Pseudo(stack_name=stack_name, region=region, account=account))
    except ConditionError as exc:
        raise TransformError(f"{LANGUAGE_EXTENSIONS}: {exc}") from None


def _resolve_ifs(node: Any, conditions: Mapping[str, bool]) -> Any:
    """``node`` with every ``Fn::If`` replaced by its branch; ``AWS::NoValue`` removes the key or item."""
    if isinstance(node, Mapping):
        if set(node) == {"Fn::If"} and isinstance(node["Fn::If"], list) and len(node["Fn::If"]) == 3:
            name, when_true, when_false = node["Fn::If"]
            if name not in conditions:
                raise TransformError(f"{LANGUAGE_EXTENSIONS}: Fn::If names the undefined condition {name}")
            chosen = when_true if conditions[name] else when_false
            return _REMOVED if chosen == _NO_VALUE else _resolve_ifs(chosen, conditions)
        resolved = {key: _resolve_ifs(item, conditions) for key, item in node.items()}
        return {key: item for key, item in resolved.items() if item is not _REMOVED}
    if isinstance(node, list):
        items = [_resolve_ifs(item, conditions) for item in node]
        return [item for item in items if item is not _REMOVED]
    return node


def _parameter_defaults(template: Mapping[str, Any]) -> dict[str, str]:
    """Each parameter's default, as CloudFormation passes it (a string)."""
    declared = template.get("Parameters") or {}
    return {str(name): str(spec["Default"]) for name, spec in declared.items() if "Default" in (spec or {})}


def _local(value: Any) -> bool:
    """Whether ``value`` is a local path (a string, not an ``s3://`` location)."""
    return isinstance(value, str) and bool(value) and not value.startswith("s3://")


class _NoManagedPolicies:
    """The translator's managed-policy loader, offline: policies are named by ARN, never looked up in IAM."""

    def load(self) -> dict[str, str]:
        return {}


@contextlib.contextmanager
def _region(region: str) -> Iterator[None]:
    """The translator reads the region from a boto3 session: give it ``region`` unless one is set."""
    if os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION"):
        yield
        return
    os.environ["AWS_DEFAULT_REGION"] = region
    try:
        yield
    finally:
        os.environ.pop("AWS_DEFAULT_REGION", None)
