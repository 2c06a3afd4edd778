"""How large one reply of the API may be: the one bound every route's reply stays under.

Lambda returns at most 6 MB (6,291,456 bytes) of response, and a larger one reaches the caller as a bare
502/500. A reply is measured as Lambda sends it: the whole response (status, headers, and the body, a JSON
text that is itself a string in the response's JSON, so escaped twice: a non-ASCII character takes six or
seven bytes). :data:`MAX_REPLY_BYTES` leaves a margin below the limit.

The routes that can return large values answer within it by themselves (a state is handed over as a
short-lived link, :mod:`.api_states`; a diff cuts its values, :mod:`cairn.aws.state_diff`); any other
reply past it is turned into a clear error by the handler (:func:`within_limit`).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from .api_errors import refusal
from .observability import logger

#: Lambda's limit on a response (synchronous invoke), in bytes.
LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
#: The most bytes one reply of the API takes as sent: a margin below Lambda's limit.
MAX_REPLY_BYTES = 5 * 1024 * 1024
#: The most bytes (as :func:`value_bytes` counts them) one value a route returns whole may take: the rest of
#: the bound is left for the reply's other fields, its headers and the envelope.
VALUE_ROOM = MAX_REPLY_BYTES - 64 * 1024


def reply_bytes(response: dict[str, Any]) -> int:
    """The bytes of a Lambda response as it is sent (its body, a JSON string, escaped within it)."""
    return len(json.dumps(response, separators=(",", ":")).encode())


def value_bytes(value: Any) -> int:
    """The bytes JSON ``value`` takes in a reply: as the API writes it (ASCII escapes), escaped once more."""
    text = json.dumps(value, separators=(",", ":"))
    return len(json.dumps(text)) - 2


def too_large_message(size: int) -> str:
    """What a caller is told of a reply that would be ``size`` bytes."""
    return (
        f"The reply would be {size} bytes, more than the API can return ({MAX_REPLY_BYTES} bytes): "
        "it is too large; ask for less (a page with limit, or without includeState/includeInput)"
    )


#: How long a link to a state too large for one reply works (seconds): long enough to follow, short enough to keep.
LINK_SECONDS = 300

#: The status and code of a reply refused for its size: the request was fine, the answer cannot be sent.
TOO_LARGE = (HTTPStatus.INTERNAL_SERVER_ERROR, "reply_too_large")


def within_limit(response: dict[str, Any]) -> dict[str, Any]:
    """``response``, or a clear error in its place when it is larger than Lambda could return ."""
    size = reply_bytes(response)
    if size <= MAX_REPLY_BYTES:
        return response
    logger.error("A reply was too large to return", extra={"bytes": size, "status": response.get("statusCode")})
    return refusal(*TOO_LARGE, too_large_message(size))
