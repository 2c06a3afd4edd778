"""A client of the jobs HTTP API, and the commands built on it: ``cairn jobs`` and ``cairn dashboard`` (a local proxy).

Standard library only at import time: botocore is imported when a request is first signed (IAM).
"""

from __future__ import annotations

from .auth import Auth, BearerAuth, NoAuth, PreparedRequest, SigV4Auth
from .errors import ApiError, ApiUnreachable, AuthError, RequestFailed
from .http import DEFAULT_API, DEFAULT_TIMEOUT, ApiClient

__all__ = [
    "DEFAULT_API",
    "DEFAULT_TIMEOUT",
    "ApiClient",
    "ApiError",
    "ApiUnreachable",
    "Auth",
    "AuthError",
    "BearerAuth",
    "NoAuth",
    "PreparedRequest",
    "RequestFailed",
    "SigV4Auth",
]
