"""Who is calling: the job owner, taken only from API Gateway's authorizer context.

An HTTP API (payload format 2.0) puts the verified caller in
``requestContext.authorizer``: ``iam.userArn`` (else ``iam.userId``) for IAM
authorization, ``jwt.claims.sub`` for a JWT authorizer. Headers and the body
are never consulted: a client cannot name the owner it acts as.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError
from ..ids import validate_owner

#: Routes that read no owner's data and answer without an authorizer context.
PUBLIC_ROUTES = frozenset({("GET", "/health"), ("GET", "/openapi.json")})


class Unauthenticated(Exception):
    """The request carries no usable caller identity."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def caller_of(event: Mapping[str, Any]) -> str | None:
    """The caller's identity from the authorizer context, or None when there is none."""
    authorizer = _mapping(_mapping(event.get("requestContext")).get("authorizer"))
    iam = _mapping(authorizer.get("iam"))
    for candidate in (
        iam.get("userArn"),
        iam.get("userId"),
        _mapping(_mapping(authorizer.get("jwt")).get("claims")).get("sub"),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def owner_of(event: Mapping[str, Any]) -> str:
    """The owner of the jobs this request may see and change; Unauthenticated when there is none."""
    caller = caller_of(event)
    if caller is None:
        raise Unauthenticated("This request is not authenticated: call the API with IAM (SigV4) or a JWT")
    try:
        return validate_owner(caller)
    except InvalidInputError:
        raise Unauthenticated("The caller's identity cannot be used as a job owner") from None


def is_public(event: Mapping[str, Any]) -> bool:
    """Whether the request is for a route that needs no caller (health, the OpenAPI document)."""
    context = _mapping(event.get("requestContext"))
    http = _mapping(context.get("http"))
    method = str(http.get("method", "")).upper()
    path = str(http.get("path") or event.get("rawPath") or "")
    stage = context.get("stage")
    if isinstance(stage, str) and stage and stage != "$default" and path.startswith(f"/{stage}/"):
        path = path[len(stage) + 1 :]
    return (method, path) in PUBLIC_ROUTES
