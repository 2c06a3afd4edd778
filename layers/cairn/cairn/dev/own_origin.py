"""Which requests a local server answers: those for its own address, from its own page.

A server on 127.0.0.1 acts for the developer (their stack, their credentials), and any web page
their browser shows can send it requests. So it answers a request only when ``Host`` names the
server itself (another name that resolves to 127.0.0.1 is DNS rebinding) and, when the browser
says where the request comes from (``Origin``, ``Sec-Fetch-Site``), only when it comes from the
server's own origin. Clients that are not browsers (boto3, the CLI, curl) send neither, and pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LOCAL_HOSTS = ("127.0.0.1", "localhost")
"""The names a local server answers to, besides the address it is bound to."""
OWN_SITES = ("same-origin", "none")
"""``Sec-Fetch-Site`` values of a request from the server's own page, or typed by the user."""


@dataclass(frozen=True)
class OwnOrigin:
    """The origins of one local server (``http://127.0.0.1:PORT``, ``http://localhost:PORT``)."""

    origins: frozenset[str]

    @classmethod
    def of(cls, host: str, port: int) -> OwnOrigin:
        """The origins of the server bound to ``host:port``."""
        names = dict.fromkeys(name.lower() for name in (host, *LOCAL_HOSTS))
        return cls(frozenset(f"http://{name}:{port}" for name in names))

    @property
    def hosts(self) -> frozenset[str]:
        """The ``Host`` values naming this server."""
        return frozenset(origin.removeprefix("http://") for origin in self.origins)

    def refusal(self, host: str | None, origin: str | None, fetch_site: str | None) -> str | None:
        """Why a request with these headers is not for this server from its own page; None when it is."""
        if (host or "").lower() not in self.hosts:
            return f"Host {host or ''!r} is not this server"
        if origin is not None and origin.lower() not in self.origins:
            return f"Origin {origin!r} is not this server's page"
        if fetch_site is not None and fetch_site not in OWN_SITES:
            return f"a {fetch_site} request"
        return None

    def refusal_of(self, environ: Mapping[str, Any]) -> str | None:
        """:meth:`refusal` of a WSGI request."""
        return self.refusal(environ.get("HTTP_HOST"), environ.get("HTTP_ORIGIN"), environ.get("HTTP_SEC_FETCH_SITE"))
