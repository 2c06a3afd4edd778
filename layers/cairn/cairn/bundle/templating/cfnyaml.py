"""CloudFormation YAML: read it with its short tags, and write it as a person would.

:func:`load` turns ``!Ref X``, ``!Sub "..."``, ``!GetAtt A.B``, ``!If [...]`` and the other short
forms into their long form (``{"Ref": "X"}``, ``{"Fn::GetAtt": ["A", "B"]}``). :func:`dump` does the
reverse: block mappings and lists indented by two, the short tags, ``!If`` on one line when its
arguments are short, strings quoted only when YAML would read them otherwise. The output depends on
the data only, so the same data always gives the same text.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import TemplateError

#: Strings written without quotes: they read back as the same string in YAML 1.1 and 1.2.
_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9_./:-]*")
_RESERVED_WORDS = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}
#: A flow list (``!If [a, b, c]``) is used when it stays this short.
_FLOW_WIDTH = 100


def _construct_tag(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
    """A short tag's value in its long form: ``!Ref X`` as ``{"Ref": "X"}``, ``!GetAtt A.B`` as a list."""
    import yaml

    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        return {"Fn::GetAtt": value.split(".", 1)}
    return {f"Fn::{suffix}": value}


@functools.cache
def _loader() -> Any:
    """PyYAML's safe loader (libyaml's when PyYAML has it) with CloudFormation's short tags (PyYAML comes with the
    dev extra)."""
    try:
        import yaml
    except ImportError as exc:
        raise TemplateError("reading a template needs PyYAML: pip install 'cairn-lambda[dev]'") from exc

    safe: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: several times faster

    class Loader(safe):  # type: ignore[valid-type,misc]  # a class chosen at run time
        """The safe loader, with the short tags."""

    Loader.add_multi_constructor("!", _construct_tag)
    return Loader


def load(text: str) -> Any:
    """The data of a CloudFormation YAML document, short tags in their long form; TemplateError when it is not YAML."""
    loader = _loader()
    import yaml

    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise TemplateError(f"not valid YAML: {' '.join(str(exc).split())}") from None


def dump(mapping: Mapping[str, Any], indent: int = 0) -> str:
    """``mapping`` as block YAML starting ``indent`` spaces in, ending with a newline."""
    return "".join(f"{line}\n" for line in _mapping_lines(mapping, indent))


def scalar(value: Any) -> str:
    """A scalar as YAML: numbers and booleans as such, a string plain when that reads back the same."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if value is None:
        return "null"
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED_WORDS and not text.endswith(":"):
        return text
    return json.dumps(text)


def _intrinsic(node: Any) -> tuple[str, Any] | None:
    """``(tag, argument)`` when ``node`` is an intrinsic function with a short form."""
    if isinstance(node, Mapping) and len(node) == 1:
        ((key, argument),) = node.items()
        if key in ("Ref", "Condition"):
            return f"!{key}", argument
        if key.startswith("Fn::"):
            return f"!{key[4:]}", argument
    return None


def _inline(node: Any) -> str | None:
    """``node`` on one line, or None when it needs a block."""
    if isinstance(node, Mapping):
        found = _intrinsic(node)
        if found is None:
            return "{}" if not node else None
        tag, argument = found
        if tag == "!GetAtt" and isinstance(argument, list) and len(argument) == 2:
            argument = ".".join(str(part) for part in argument)
        if tag == "!Sub" and isinstance(argument, str):
            return f"!Sub {json.dumps(argument)}"
        if isinstance(argument, str):
            return f"{tag} {scalar(argument)}"
        if isinstance(argument, list):
            flow = _flow(argument)
            return None if flow is None else f"{tag} {flow}"
        return None
    if isinstance(node, list):
        return "[]" if not node else None
    return scalar(node)


def _flow(items: Sequence[Any]) -> str | None:
    """``[a, b, c]`` when every item is a short scalar or intrinsic."""
    parts = []
    for item in items:
        if isinstance(item, Mapping) and _intrinsic(item) is None:
            return None
        text = _inline(item)
        if text is None or text.startswith(("[", "{")):
            return None
        parts.append(text)
    flow = f"[{', '.join(parts)}]"
    return flow if len(flow) <= _FLOW_WIDTH else None


def _mapping_lines(mapping: Mapping[str, Any], indent: int) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for key, value in mapping.items():
        head = f"{pad}{scalar(key)}:"
        text = _inline(value)
        if text is not None:
            lines.append(f"{head} {text}")
        else:
            lines += _block(head, value, indent)
    return lines


def _block(head: str, value: Any, indent: int) -> list[str]:
    """``head`` followed by ``value`` on the next lines (a mapping, a list, or an intrinsic's list)."""
    found = _intrinsic(value)
    if found is not None:
        tag, argument = found
        if isinstance(argument, list):
            return [f"{head} {tag}", *_list_lines(argument, indent + 2)]
        return [f"{head} {tag}", *_mapping_lines(argument, indent + 2)]
    if isinstance(value, Mapping):
        return [head, *_mapping_lines(value, indent + 2)]
    return [head, *_list_lines(value, indent + 2)]


def _list_lines(items: Sequence[Any], indent: int) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for item in items:
        text = _inline(item)
        if text is not None:
            lines.append(f"{pad}- {text}")
        elif isinstance(item, Mapping) and _intrinsic(item) is None:
            nested = _mapping_lines(item, indent + 2)
            lines += [f"{pad}- {nested[0].lstrip()}", *nested[1:]]
        elif isinstance(item, list):
            nested = _list_lines(item, indent + 2)
            lines += [f"{pad}- {nested[0].lstrip()}", *nested[1:]]
        else:
            lines += _block(f"{pad}-", item, indent)
    return lines
