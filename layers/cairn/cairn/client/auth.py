"""How a request to the jobs API says who is calling: nobody (a local server), IAM (SigV4) or a JWT.

Each mode is a small class whose :meth:`~Auth.apply` adds headers to a :class:`PreparedRequest`
just before it is sent. botocore is imported only when a request is signed, so the command line
starts without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from .errors import AuthError

IDENTITY_HEADER = "X-Cairn-Identity"
"""The header the local dev server takes the caller from (a principal ARN); a deployed API ignores it."""

SERVICE = "execute-api"

_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")


@dataclass
class PreparedRequest:
    """A request ready to send: what an :class:`Auth` may add headers to."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


class Auth(Protocol):
    """Adds the caller's credentials to a request."""

    def apply(self, request: PreparedRequest) -> None:
        """Add headers to ``request`` (called once per request, just before it is sent)."""


class NoAuth:
    """No credentials; with ``identity``, the ``X-Cairn-Identity`` header the local dev server acts on."""

    def __init__(self, identity: str | None = None) -> None:
        self.identity = identity

    def apply(self, request: PreparedRequest) -> None:
        """Add the identity header when there is an identity."""
        if self.identity:
            request.headers[IDENTITY_HEADER] = self.identity


class BearerAuth:
    """A JWT (or any bearer token) for an API behind a JWT authorizer."""

    def __init__(self, token: str) -> None:
        if not token.strip():
            raise AuthError("the bearer token is empty")
        self.token = token.strip()

    def apply(self, request: PreparedRequest) -> None:
        """Add ``Authorization: Bearer <token>``."""
        request.headers["Authorization"] = f"Bearer {self.token}"


def region_of(url: str) -> str | None:
    """The region in an ``https://<id>.execute-api.<region>.amazonaws.com`` URL; None for another host."""
    match = _EXECUTE_API_HOST.fullmatch((urlsplit(url).hostname or "").lower())
    return match["region"] if match else None


class SigV4Auth:
    """IAM: sign each request with SigV4 for ``execute-api``, with credentials from botocore's default chain.

    The region is ``region`` when given, else the one in the URL's host, else the configured default.
    ``credentials`` (a botocore credentials object) replaces the default chain, e.g. in tests.
    """

    def __init__(self, region: str | None = None, *, credentials: Any = None) -> None:
        self.region = region
        self._credentials = credentials

    def _session(self) -> Any:
        import botocore.session

        return botocore.session.get_session()

    def credentials(self) -> Any:
        """The credentials requests are signed with (resolved on first use); AuthError when there are none."""
        if self._credentials is None:
            self._credentials = self._session().get_credentials()
        if self._credentials is None:
            raise AuthError(
                "no AWS credentials found to sign the request (IAM auth): set AWS_PROFILE or "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, run `aws sso login`, or use --auth jwt --token"
            )
        return self._credentials

    def region_for(self, url: str) -> str:
        """The region to sign a request to ``url`` for; AuthError when none can be found."""
        region = self.region or region_of(url) or self._session().get_config_variable("region")
        if not region:
            raise AuthError(f"cannot tell the AWS region of {url}: pass --region (or set AWS_DEFAULT_REGION)")
        return str(region)

    def apply(self, request: PreparedRequest) -> None:
        """Add ``Authorization`` (AWS4-HMAC-SHA256), ``X-Amz-Date`` and, for temporary credentials, the token."""
        from botocore.auth import SigV4Auth as Signer
        from botocore.awsrequest import AWSRequest

        region = self.region_for(request.url)
        signed = AWSRequest(method=request.method, url=request.url, data=request.body, headers=dict(request.headers))
        Signer(self.credentials(), SERVICE, region).add_auth(signed)
        request.headers.update({str(name): str(value) for name, value in signed.headers.items()})
