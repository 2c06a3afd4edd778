"""The API function as a WSGI app: each request becomes the HTTP API (payload 2.0) event API Gateway would send.

So that a WSGI client (schemathesis' transport) can call the in-process handler
as a user's request would reach it: method, raw path, query string, headers,
body (base64 when it is not UTF-8 text) and the authorizer context of a caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from cairn.testing.api_events import http_api_event, iam_caller, response_body

Invoke = Callable[[dict[str, Any]], dict[str, Any]]
StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def _raw_path(environ: dict[str, Any]) -> str:
    raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if isinstance(raw_uri, str) and raw_uri:
        return raw_uri.split("?", 1)[0]
    path = str(environ.get("PATH_INFO", "/")).encode("latin-1")
    return quote(path, safe="/:@!$&'()*+,;=-._~%")


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    headers = {
        key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")
    }
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = str(environ[key])
    return headers


def event_of(environ: dict[str, Any], caller: str | None) -> dict[str, Any]:
    """The API Gateway event for a WSGI request, as ``caller`` (unauthenticated when None)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    data: bytes = environ["wsgi.input"].read(length) if length else b""
    return http_api_event(
        str(environ["REQUEST_METHOD"]),
        _raw_path(environ),
        query=str(environ.get("QUERY_STRING", "")),
        headers=_headers(environ),
        body=data,
        caller=iam_caller(caller) if caller is not None else None,
    )


class LambdaWsgi:
    """A WSGI app around ``invoke`` (the API function), acting as ``caller``; it keeps every status it answered."""

    def __init__(self, invoke: Invoke, caller: str | None) -> None:
        self.invoke = invoke
        self.caller = caller
        self.statuses: list[int] = []

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        response = self.invoke(event_of(environ, self.caller))
        status = int(response["statusCode"])
        self.statuses.append(status)
        data = response_body(response)
        headers = [(str(key), str(value)) for key, value in (response.get("headers") or {}).items()]
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [data]
