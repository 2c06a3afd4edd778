"""What the API reads of a request before routing it: a path without control characters and a body it can parse.

Powertools decodes and parses a body itself, and some bodies make that fail
with a 500: invalid base64, bytes that are not UTF-8, JSON nested thousands
deep, an integer of thousands of digits, a multipart type without a boundary.
Every request goes through :func:`admit` first, the one home of these rules: a
request the API cannot read is refused here with a 4xx (:class:`ApiError`)
before anything is looked up or written, and the event handed on carries its
body as plain JSON text that Powertools reads without surprise.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from ..core.admission import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from ..core.admission import check_json, depth_refusal
from ..core.errors import InvalidInputError
from .api_errors import ApiError

#: The largest request body the API reads, in bytes: Lambda's limit for a synchronous invocation's
#: payload (API Gateway's own cap, 10 MB, is above it). The state in it is bounded again, by
#: ``payloads.MAX_INPUT_BYTES`` (:func:`~cairn.aws.api_services.checked_input`) and by its item without
#: a state bucket: both are a 413 before anything is written.
MAX_BODY_BYTES = 6 * 1024 * 1024
#: The most characters a number in a request body may have (Python refuses ints above 4300 digits).
MAX_NUMBER_CHARS = 1000
JSON_MEDIA_TYPE = "application/json"


def _invalid(message: str) -> ApiError:
    return ApiError(HTTPStatus.BAD_REQUEST, "invalid_request", message)


def _too_large(limit: int) -> ApiError:
    return ApiError(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request_too_large", f"The request body is over the limit of {limit} bytes"
    )


def _header(headers: Mapping[str, Any], name: str) -> str:
    """A header's value by its name in any case ("" when absent)."""
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            return str(value)
    return ""


def check_content_type(content_type: str) -> None:
    """A body must be JSON: ``application/json`` (or no type at all), in UTF-8; else 415."""
    media_type, *params = (part.strip().lower() for part in content_type.split(";"))
    charsets = [param.partition("=")[2].strip('"') for param in params if param.startswith("charset=")]
    if media_type not in ("", JSON_MEDIA_TYPE) or any(charset not in ("utf-8", "utf8") for charset in charsets):
        raise ApiError(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "Send the request body as application/json"
        )


def body_bytes(body: str, *, base64_encoded: bool, limit: int) -> bytes:
    """The body's bytes, decoded from base64 when API Gateway encoded it; over ``limit`` bytes is a 413."""
    longest = (limit // 3 + 1) * 4 if base64_encoded else limit  # no more characters than that can fit
    if len(body) > longest:
        raise _too_large(limit)
    if base64_encoded:
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise _invalid("The request body is not valid base64 (isBase64Encoded is true)") from None
    else:
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:
            raise _invalid("The request body is not UTF-8 text") from None
    if len(raw) > limit:
        raise _too_large(limit)
    return raw


def _number(text: str, parse: type[int] | type[float]) -> int | float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _invalid(f"A number in the request body has more than {MAX_NUMBER_CHARS} characters")
    value = parse(text)
    if value in (float("inf"), float("-inf")):
        raise _invalid("A number in the request body is too large to be a finite number")
    return value


def _no_constant(name: str) -> Any:
    raise _invalid(f"The request body is not valid JSON ({name} is not a JSON number)")


def _check_parsed(value: Any) -> None:
    """The parsed body passes the rule every stored value passes (:mod:`cairn.core.admission`); else 400.

    Arrays and objects nest at most :data:`MAX_JSON_DEPTH` deep and every string is Unicode text:
    JSON may escape half of a surrogate pair on its own (``"\\ud800"``), which no store can encode.
    """
    try:
        check_json(value, "The request body")
    except InvalidInputError as exc:
        raise _invalid(exc.message) from None


def parse_json(raw: bytes) -> str:
    """The body as JSON text after checking it parses safely: UTF-8, bounded nesting and numbers; else 400."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid("The request body is not UTF-8 text") from None
    try:
        value = json.loads(
            text,
            parse_int=lambda digits: _number(digits, int),
            parse_float=lambda digits: _number(digits, float),
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as exc:
        raise _invalid(
            f"The request body is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise _invalid(depth_refusal("The request body")) from None
    _check_parsed(value)
    return text


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def check_path(event: Mapping[str, Any]) -> None:
    """A path with a control character (a newline after a job id, say) is refused, never matched to a route."""
    http = _mapping(_mapping(event.get("requestContext")).get("http"))
    for path in (event.get("rawPath"), http.get("path")):
        if isinstance(path, str) and any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
            raise _invalid("The request path contains a control character")


def admit(event: dict[str, Any], *, max_body_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The event to route, its body as checked JSON text; a request the API cannot read is an :class:`ApiError`."""
    check_path(event)
    body = event.get("body")
    if body is None or body == "":
        return event
    if not isinstance(body, str):
        raise _invalid("The request body is not text")
    headers = _mapping(event.get("headers"))
    check_content_type(_header(headers, "content-type"))
    raw = body_bytes(body, base64_encoded=bool(event.get("isBase64Encoded")), limit=max_body_bytes)
    text = parse_json(raw)
    plain = {key: value for key, value in headers.items() if str(key).lower() != "content-type"}
    return {**event, "body": text, "isBase64Encoded": False, "headers": {**plain, "content-type": JSON_MEDIA_TYPE}}
