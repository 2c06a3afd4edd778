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
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..dashboard.assets import HEADERS as ASSET_HEADERS
from ..dashboard.assets import asset_at, is_dashboard_path
from ..testing.api_events import http_api_event, iam_caller, response_body
from .bearer import BadToken, bearer_token, unverified_claims
from .lambda_service import LambdaService
from .logs import DevLog
from .serving import ServedOnThread

if TYPE_CHECKING:
    from .deployment import Route

IDENTITY_HEADER = "x-cairn-identity"
MAX_BODY = 10 * 1024 * 1024
"""The largest request body an HTTP API accepts (bytes)."""
_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:(iam|sts)::\d{12}:[A-Za-z0-9+=,.@_/-]{1,512}$")
AdminRoute = Callable[[], Any]


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


class ApiGateway:
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
    ) -> None:
        self.routes = [CompiledRoute.of(route) for route in routes]
        self.function = function
        self.lambdas = lambdas
        self.log = log
        self.identity = identity
        self.admin = admin or {}
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Request lines are written by the gateway itself, without the noise."""

            def handle_one(self) -> None:
                gateway.handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = handle_one

        server = ThreadingHTTPServer((host, port), Handler)  # OSError when the port is taken
        server.daemon_threads = True
        self.url = f"http://{host}:{server.server_address[1]}"
        self._serving = ServedOnThread(server, "api-gateway")

    def start(self) -> None:
        """Serve on a thread."""
        self._serving.start()

    def stop(self) -> None:
        """Stop serving."""
        self._serving.stop()

    def match(self, method: str, path: str) -> tuple[CompiledRoute, dict[str, str]] | None:
        """The route a request takes and its path parameters, or None."""
        for route in self.routes:
            if route.method not in (method, "ANY"):
                continue
            found = route.pattern.fullmatch(path)
            if found:
                return route, {name: unquote(value) for name, value in found.groupdict().items()}
        return None

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        """Answer one request: an admin route, or the API function's response to its event."""
        started = time.monotonic()
        method = request.command.upper()
        raw_path, _, query = request.path.partition("?")
        if raw_path.startswith("/_cairn/") and method == "GET" and raw_path in self.admin:
            self._send(request, 200, {"Content-Type": "application/json"}, json.dumps(self.admin[raw_path]()).encode())
            return
        try:
            length = int(request.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._send_message(request, 400, "Bad Request", close=True)
            return
        if length > MAX_BODY:
            self._send_message(request, 413, "Request Entity Too Large", close=True)
            return
        body = request.rfile.read(length) if length else b""
        found = self.match(method, raw_path)
        if found is None and method in ("GET", "HEAD") and is_dashboard_path(raw_path):
            self._send_asset(request, raw_path)
            return
        if found is None:
            self._send_message(request, 404, "Not Found")
            self._log_request(method, raw_path, 404, started)
            return
        route, parameters = found
        headers = {name.lower(): value for name, value in request.headers.items()}
        identity = headers.pop(IDENTITY_HEADER, None) or self.identity
        try:
            caller = None if route.public else self._caller(headers.get("authorization"), identity)
        except CallerRefused as refused:
            self._send_message(request, refused.status, refused.message)
            self._log_request(method, raw_path, refused.status, started)
            return
        event = http_api_event(
            method,
            raw_path,
            query=query,
            headers=headers,
            body=body or None,
            caller=caller,
            route_key=route.key,
            path_parameters=parameters or None,
            source_ip=request.client_address[0],
        )
        outcome = self.lambdas.invoke(self.function, event)
        if outcome.failed or not isinstance(outcome.payload, dict):
            status = 500 if outcome.failed else 200
            if outcome.failed:
                self._send_message(request, 500, "Internal Server Error")
            else:
                self._send(request, 200, {"Content-Type": "application/json"}, json.dumps(outcome.payload).encode())
            self._log_request(method, raw_path, status, started)
            return
        response = outcome.payload
        status = int(response.get("statusCode", 200))
        reply_headers = {str(key): str(value) for key, value in (response.get("headers") or {}).items()}
        self._send(request, status, reply_headers, response_body(response), cookies=response.get("cookies") or [])
        self._log_request(method, raw_path, status, started)

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

    def _send_asset(self, request: BaseHTTPRequestHandler, path: str) -> None:
        """The dashboard's page or one of its files; 404 for a file it does not have."""
        found = asset_at(path)
        if found is None:
            self._send_message(request, 404, "Not Found")
            return
        body, content_type = found
        self._send(request, 200, {"Content-Type": content_type, **ASSET_HEADERS}, body)

    def _log_request(self, method: str, path: str, status: int, started: float) -> None:
        if method != "GET" or status >= 400:
            elapsed = (time.monotonic() - started) * 1000
            self.log.say("api", f"{method} {path} -> {status} ({elapsed:.0f} ms)", "INFO" if status < 500 else "ERROR")

    def _send_message(self, request: BaseHTTPRequestHandler, status: int, message: str, *, close: bool = False) -> None:
        body = json.dumps({"message": message}).encode()
        headers = {"Content-Type": "application/json"}
        if close:
            headers["Connection"] = "close"
        self._send(request, status, headers, body)

    def _send(
        self,
        request: BaseHTTPRequestHandler,
        status: int,
        headers: dict[str, str],
        body: bytes,
        *,
        cookies: Sequence[str] = (),
    ) -> None:
        request.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                request.send_header(name, value)
        for cookie in cookies:
            request.send_header("Set-Cookie", str(cookie))
        request.send_header("Content-Length", str(len(body)))
        if headers.get("Connection") == "close":
            request.send_header("Connection", "close")
            request.close_connection = True
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(body)
