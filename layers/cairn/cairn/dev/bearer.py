"""The caller of a local request that carries ``Authorization: Bearer <JWT>``, as a JWT authorizer would name it.

``cairn dev`` has no issuer to check a token against, so it reads the token's claims without verifying its
signature: the local stack trusts its caller as it trusts ``X-Cairn-Identity``. A deployed stack's JWT
authorizer verifies the token; the owner comes out the same (``iss|sub``).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


class BadToken(Exception):
    """The ``Authorization`` header holds no token a JWT authorizer would accept."""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (a bare token too, as API Gateway takes it)."""
    if not authorization or not authorization.strip():
        return None
    scheme, _, rest = authorization.strip().partition(" ")
    return rest.strip() if scheme.lower() == "bearer" else authorization.strip()


def unverified_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT (``header.payload.signature``), not verified; BadToken unless it names a ``sub``."""
    parts = token.split(".")
    if len(parts) != 3:
        raise BadToken("not a JWT (header.payload.signature)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise BadToken("the token's payload is not base64url JSON") from exc
    if not isinstance(claims, dict) or not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise BadToken("the token names no subject (sub)")
    return claims
