"""Every reply of the API redacted (:mod:`cairn.core.redaction`): the fields erased from the states it shows, the
patterns and the secret values replaced in its texts, whatever the route and whenever the text was stored."""

from __future__ import annotations

import json
from typing import Any

from ..core.redaction import Redaction, redacted_document
from ..core.registry import PipelineRegistry
from .api_errors import ApiError
from .api_limits import TOO_LARGE, too_large_message


def deployment_redaction(pipelines: PipelineRegistry) -> Redaction:
    """What the API's replies are redacted with: every pipeline's redaction and the stack's."""
    joined = Redaction()
    for pipeline in pipelines:
        joined = joined.joined(pipeline.redaction)
    return joined


def linking_refused(pipelines: PipelineRegistry, size: int) -> ApiError | None:
    """Why a value of ``size`` bytes, too large for one reply, is not handed over as a link: the deployment redacts
    its replies, and the stored object holds the value unredacted. None when it may be."""
    if not deployment_redaction(pipelines).active:
        return None
    return ApiError(
        *TOO_LARGE,
        f"{too_large_message(size)}. This deployment redacts its replies (CAIRN_REDACT, or a pipeline's redact_*), "
        "so a value too large for one reply is not handed over as a link to it as stored",
    )


def redacted_response(response: dict[str, Any], redaction: Redaction) -> dict[str, Any]:
    """The handler's response with its body redacted: a JSON body as a document, any other text as text."""
    body = response.get("body")
    if not redaction.active or not isinstance(body, str) or not body or response.get("isBase64Encoded"):
        return response
    headers = response.get("headers") or {}
    kind = next((str(value) for key, value in headers.items() if key.lower() == "content-type"), "")
    if "json" in kind:
        try:
            document = json.loads(body)
        except ValueError:
            return {**response, "body": redaction.text(body)}
        redacted = json.dumps(redacted_document(document, redaction), separators=(",", ":"), ensure_ascii=False)
        return {**response, "body": redacted}
    return {**response, "body": redaction.text(body)}
