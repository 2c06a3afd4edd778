"""The HTTP API on localhost: each request becomes the event API Gateway's HTTP API would send the API function.

Routes are the template's (``HttpApi`` events of the API function): a request matching
none is API Gateway's ``404 {"message": "Not Found"}``; a function that fails is its
``500 {"message": "Internal Server Error"}``. The caller of a route that needs one is the
token's subject when the request carries ``Authorization: Bearer <JWT>`` (put in the event as a JWT
authorizer puts it; claims read, not verified, see :mod:`cairn.dev.bearer`), else the local identity:
the ``X-Cairn-Identity`` header (a principal ARN) or the server's default, put in the event as IAM
authorization puts a signed caller. ``/_cairn/...`` are the dev
server's own routes (``GET /_cairn/invocations``: what runs now, with process ids; ``GET /_cairn/info``:
what runs where, and the stack's clock, skipped ahead with ``--skip-waits``). A ``GET`` that matches no
route serves the dashboard (:mod:`cairn.dashboard.assets`): its page at ``/``, its files at ``/assets/...``.

The server is werkzeug's (:class:`cairn.dev.wsgi_server.LocalServer`: a backlog that holds a burst, a read
timeout, bounded headers). It answers only requests for its own address from its own page
(:mod:`cairn.dev.own_origin`, 403 otherwise); a body over API Gateway's 10 MB is 413, a request line and
header values over its 10240 bytes 431, a body that stops coming 408.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..dashboard.assets import asset_at, is_dashboard_path, reply
from ..testing.api_events import http_api_event, iam_caller, response_body
from .bearer import BadToken, bearer_token, unverified_claims
from .lambda_service import LambdaService
from .logs import DevLog
from .serving import LocalSite
from .wsgi_server import READ_TIMEOUT, BodyTooLarge, LocalServer, read_body

if TYPE_CHECKING:
    from .models import Route

IDENTITY_HEADER = "x-cairn-identity"
MAX_BODY = 10 * 1024 * 1024
"""The largest request body an HTTP API accepts (bytes)."""
MAX_HEADER_BYTES = 10240
"""The request line and header values of one request at most (bytes), as an HTTP API's quota."""
_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:(iam|sts)::\d{12}:[A-Za-z0-9+=,.@_/-]{1,512}$")
AdminRoute = Callable[[], Any]
StartResponse = Callable[..., Any]
_UNSENT_HEADERS = ("content-length", "connection", "transfer-encoding")


class CallerRefused(Exception):
    """A request refused before the function sees it, as API Gateway refuses it (its status and message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class CompiledRoute:
    """A template route and the pattern its path parameters are read with."""

    method: str
    path: str
    public: bool
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, route: Route) -> CompiledRoute:
        """Compile ``/jobs/{jobId}`` (and a greedy ``{proxy+}``) into a full-match pattern."""
        regex = ""
        for part in re.split(r"(\{[^}]+\})", route.path):
            if part.startswith("{") and part.endswith("}"):
                name = part[1:-1]
                regex += f"(?P<{name[:-1]}>.+)" if name.endswith("+") else f"(?P<{name}>[^/]+)"
            else:
                regex += re.escape(part)
        return cls(route.method.upper(), route.path, route.public, re.compile(regex))

    @property
    def key(self) -> str:
        """The route key API Gateway puts in the event (``GET /jobs/{jobId}``)."""
        return f"{self.method} {self.path}"


class ApiGateway(LocalSite):
    """A threaded HTTP server on ``host:port`` in front of the API function."""

    def __init__(
        self,
        routes: Sequence[Route],
        function: str,
        lambdas: LambdaService,
        log: DevLog,
        *,
        identity: str,
        host: str = "127.0.0.1",
        port: int = 3000,
        admin: dict[str, AdminRoute] | None = None,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self.routes = [CompiledRoute.of(route) for route in routes]
        self.function = function
        self.lambdas = lambdas
        self.log = log
        self.identity = identity
        self.admin = admin or {}
        server = LocalServer(  # OSError when the port is taken
            self.wsgi, host, port, read_timeout=read_timeout, max_header_bytes=MAX_HEADER_BYTES
        )
        self._serve(server, host, server.port, "api-gateway")

    def match(self, method: str, path: str) -> tuple[CompiledRoute, dict[str, str]] | None:
        """The route a request takes and its path parameters, or None."""
        for route in self.routes:
            if route.method not in (method, "ANY"):
                continue
            found = route.pattern.fullmatch(path)
            if found:
                return route, {name: unquote(value) for name, value in found.groupdict().items()}
        return None

    def wsgi(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        """The WSGI app: :meth:`handle` of one request, sent with ``start_response``."""
        status, headers, body = self.handle(environ)
        start_response(status_line(status), headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]

    def handle(self, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        """Answer one WSGI request: a refusal, an admin route, a dashboard file or the API function's response."""
        started = time.monotonic()
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        raw_path, _, query = str(environ.get("RAW_URI") or environ.get("PATH_INFO", "/")).partition("?")
        reason = self.own.refusal_of(environ)
        if reason is not None:
            self._log_request(method, raw_path, 403, started, reason)
            return _message(403, "Forbidden")
        if raw_path.startswith("/_cairn/") and method == "GET" and raw_path in self.admin:
            return _reply(200, {"Content-Type": "application/json"}, json.dumps(self.admin[raw_path]()).encode())
        try:
            body = read_body(environ, MAX_BODY)
        except BodyTooLarge:
            return _message(413, "Request Entity Too Large")
        except TimeoutError:
            self._log_request(method, raw_path, 408, started, "the body stopped coming")
            return _message(408, "Request Timeout")
        except (ValueError, OSError):  # a Content-Length that is not a number, a chunk that is not one
            return _message(400, "Bad Request")
        found = self.match(method, raw_path)
        if found is None and method in ("GET", "HEAD") and is_dashboard_path(raw_path):
            return self._asset(raw_path, request_headers(environ))
        if found is None:
            self._log_request(method, raw_path, 404, started)
            return _message(404, "Not Found")
        route, parameters = found
        headers = request_headers(environ)
        identity = headers.pop(IDENTITY_HEADER, None) or self.identity
        try:
            caller = None if route.public else self._caller(headers.get("authorization"), identity)
        except CallerRefused as refused:
            self._log_request(method, raw_path, refused.status, started)
            return _message(refused.status, refused.message)
        event = http_api_event(
            method,
            raw_path,
            query=query,
            headers=headers,
            body=body or None,
            caller=caller,
            route_key=route.key,
            path_parameters=parameters or None,
            source_ip=str(environ.get("REMOTE_ADDR", "127.0.0.1")),
        )
        outcome = self.lambdas.invoke(self.function, event)
        if outcome.failed or not isinstance(outcome.payload, dict):
            status = 500 if outcome.failed else 200
            self._log_request(method, raw_path, status, started)
            if outcome.failed:
                return _message(500, "Internal Server Error")
            return _reply(200, {"Content-Type": "application/json"}, json.dumps(outcome.payload).encode())
        response = outcome.payload
        status = int(response.get("statusCode", 200))
        reply_headers = {str(key): str(value) for key, value in (response.get("headers") or {}).items()}
        self._log_request(method, raw_path, status, started)
        return _reply(status, reply_headers, response_body(response), cookies=response.get("cookies") or [])

    def _caller(self, authorization: str | None, identity: str) -> dict[str, Any]:
        """The authorizer context of a request: its bearer token's, else the identity's; CallerRefused if neither."""
        token = bearer_token(authorization)
        if token is not None:
            try:
                return {"jwt": {"claims": unverified_claims(token), "scopes": None}}
            except BadToken as exc:
                raise CallerRefused(401, "Unauthorized") from exc  # what API Gateway's JWT authorizer answers
        if not _PRINCIPAL.fullmatch(identity):
            raise CallerRefused(403, f"{IDENTITY_HEADER} is not an IAM principal ARN")
        return iam_caller(identity)

    def _asset(self, path: str, headers: Mapping[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        """The dashboard's page or one of its files (a 304, or gzipped, by ``headers``); 404 for a file it lacks."""
        found = asset_at(path)
        if found is None:
            return _message(404, "Not Found")
        answer = reply(found, headers)
        return _reply(answer.status, answer.headers, answer.body)

    def _log_request(self, method: str, path: str, status: int, started: float, why: str | None = None) -> None:
        if method != "GET" or status >= 400:
            elapsed = (time.monotonic() - started) * 1000
            line = f"{method} {path} -> {status} ({elapsed:.0f} ms)" + (f": {why}" if why else "")
            self.log.say("api", line, "INFO" if status < 500 else "ERROR")


def status_line(status: int) -> str:
    """``404 Not Found``; a status without a standard phrase (a function may answer any) is its number alone."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
    """A WSGI request's headers by lower-case name (repeated headers joined with commas, as API Gateway joins them)."""
    headers = {
        key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")
    }
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = str(environ[key])
    return headers


def _message(status: int, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    return _reply(status, {"Content-Type": "application/json"}, json.dumps({"message": message}).encode())


def _reply(
    status: int, headers: dict[str, str], body: bytes, *, cookies: Sequence[str] = ()
) -> tuple[int, list[tuple[str, str]], bytes]:
    """A response's status, its headers as sent (the server's own framing, the cookies) and its body."""
    sent = [(name, value) for name, value in headers.items() if name.lower() not in _UNSENT_HEADERS]
    sent += [("Set-Cookie", str(cookie)) for cookie in cookies]
    sent.append(("Content-Length", str(len(body))))
    return status, sent, body
