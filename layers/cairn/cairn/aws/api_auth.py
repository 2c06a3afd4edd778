"""Who is calling: the job owner, taken only from API Gateway's authorizer context.

An HTTP API (payload format 2.0) puts the verified caller in
``requestContext.authorizer``: ``iam`` for IAM authorization, ``jwt.claims``
for a JWT authorizer. Headers and the body are never consulted: a client
cannot name the owner it acts as.

The owner is the principal, never one session of it (:func:`principal_key`):

- an assumed role (``arn:aws:sts::<account>:assumed-role/<role>/<session>``, an
  IAM Identity Center user, an ECS task, a CI run): the role,
  ``arn:aws:iam::<account>:role/<role>``, whatever the session name;
- a caller of a Cognito identity pool: its identity id;
- an IAM user, a federated user or the root user: its ARN;
- a JWT: ``<iss>|<sub>`` (``sub`` alone when the token has no issuer).

A key that the owner rule (:func:`cairn.core.ids.validate_owner`) would refuse, too
long or with other characters, becomes a readable prefix and its SHA-256
(:func:`owner_key`): every real principal is a valid owner.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from ..core.ids import OWNER_PATTERN

#: Routes that read no owner's data and answer without an authorizer context: health, the OpenAPI document, and
#: the dashboard's page and files (static, with no secret in them; the page's own calls carry the user's token).
PUBLIC_ROUTES = frozenset(
    {("GET", "/health"), ("GET", "/openapi.json"), ("GET", "/dashboard"), ("GET", "/assets/{file}")}
)

_ASSUMED_ROLE = re.compile(r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/.*$")
_HASHED = re.compile(r"\|sha256:[0-9a-f]{64}$")
_NOT_OWNER_CHARACTER = re.compile(r"[^A-Za-z0-9._:@|/+=-]")
_LEADING_NON_ALPHANUMERIC = re.compile(r"^[^A-Za-z0-9]+")
_PREFIX_LENGTH = 48
_SEGMENTS = re.compile(r"(\{[^}/]+\})")


class Unauthenticated(Exception):
    """The request carries no usable caller identity."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def principal_key(principal: str) -> str:
    """The principal an IAM caller ARN stands for: an assumed role's role ARN; any other ARN as is."""
    match = _ASSUMED_ROLE.fullmatch(principal)
    if match is None:
        return principal
    return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"


def owner_key(key: str) -> str:
    """``key`` when the owner rule accepts it; else a readable prefix and the SHA-256 of the whole key.

    A key kept as is never ends like a hashed one, so two different keys never share an owner.
    """
    if OWNER_PATTERN.fullmatch(key) and not _HASHED.search(key):
        return key
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    readable = _LEADING_NON_ALPHANUMERIC.sub("", _NOT_OWNER_CHARACTER.sub("_", key))
    prefix = readable[:_PREFIX_LENGTH] or "owner"
    return f"{prefix}|sha256:{digest}"


def caller_of(event: Mapping[str, Any]) -> str | None:
    """The calling principal (not its session) from the authorizer context, or None when there is none."""
    authorizer = _mapping(_mapping(event.get("requestContext")).get("authorizer"))
    iam = _mapping(authorizer.get("iam"))
    identity_id = _text(_mapping(iam.get("cognitoIdentity")).get("identityId"))
    if identity_id:
        return f"cognito-identity:{identity_id}"
    user_arn = _text(iam.get("userArn"))
    if user_arn:
        return principal_key(user_arn)
    user_id = _text(iam.get("userId"))
    if user_id:
        return user_id.split(":", 1)[0]  # an assumed role's "<role id>:<session>": the role
    claims = _mapping(_mapping(authorizer.get("jwt")).get("claims"))
    subject = _text(claims.get("sub"))
    if subject:
        issuer = _text(claims.get("iss"))
        return f"{issuer}|{subject}" if issuer else subject
    return None


def owner_of(event: Mapping[str, Any]) -> str:
    """The owner of the jobs this request may see and change; Unauthenticated when there is none."""
    caller = caller_of(event)
    if caller is None:
        raise Unauthenticated("This request is not authenticated: call the API with IAM (SigV4) or a JWT")
    return owner_key(caller)


def _route_pattern(path: str) -> re.Pattern[str]:
    """A full-match pattern for a route path: each ``{name}`` is one path segment."""
    return re.compile("".join("[^/]+" if part.startswith("{") else re.escape(part) for part in _SEGMENTS.split(path)))


_PUBLIC_PATTERNS = tuple((method, _route_pattern(path)) for method, path in sorted(PUBLIC_ROUTES))


def is_public(event: Mapping[str, Any]) -> bool:
    """Whether the request is for a route that needs no caller (health, the OpenAPI document, the dashboard)."""
    context = _mapping(event.get("requestContext"))
    http = _mapping(context.get("http"))
    method = str(http.get("method", "")).upper()
    path = str(http.get("path") or event.get("rawPath") or "")
    stage = context.get("stage")
    if isinstance(stage, str) and stage and stage != "$default" and path.startswith(f"/{stage}/"):
        path = path[len(stage) + 1 :]
    return any(method == public and pattern.fullmatch(path) for public, pattern in _PUBLIC_PATTERNS)
