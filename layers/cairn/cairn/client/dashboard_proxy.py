"""``cairn dashboard``'s server: the dashboard on 127.0.0.1, its API calls forwarded to a deployed API, signed.

The page calls the API on its own origin (``/jobs...``, ``/pipelines``, ``/health``, ``/openapi.json``);
each such call is sent on to the deployed API through :class:`cairn.client.ApiClient`, whose auth
(SigV4 with the user's AWS credentials, for an API with IAM auth) signs it. The answer comes back as
it came: status, ``Content-Type``, ``Location`` and body.

The server acts with the user's credentials, so it answers only its own page: a request for another
host (DNS rebinding) or from another origin (a site in the same browser) is refused (403), and an API call
that does not carry this session's key is refused (401), so that another local process (or user) that
reaches the port cannot have its calls signed. The key is in the address ``cairn dashboard`` prints
(``/?key=...``); the page loaded from it gets it as an HttpOnly, SameSite=Strict cookie its own calls carry.
A script may send it as the ``X-Cairn-Dashboard-Key`` header instead.
"""

from __future__ import annotations

import hmac
import json
import secrets
import signal
import threading
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from ..dashboard.assets import asset_at, is_dashboard_path, reply
from ..dev.serving import LocalSite
from . import ApiClient, ApiUnreachable, RequestFailed

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop ``cairn dashboard`` (Ctrl-C, and a service manager's stop)."""
STOP_POLL_SECONDS = 0.5
"""How often the waiting main thread looks again, should a signal's wake-up be missed."""

MAX_BODY = 10 * 1024 * 1024
"""The largest request body forwarded (bytes): what an HTTP API accepts."""
API_PATHS = frozenset({"/jobs", "/failures", "/pipelines", "/health", "/openapi.json"})
"""Paths forwarded to the API, with every path under ``/jobs/``."""
ANSWER_HEADERS = ("Content-Type", "Location")
"""The API's headers passed back to the page."""
KEY_COOKIE = "cairn_dashboard_key"
KEY_HEADER = "X-Cairn-Dashboard-Key"
"""Where an API call carries this session's key: the page's cookie, or a script's header."""


def is_api_path(path: str) -> bool:
    """Whether a URL path (no query) is one of the API's, forwarded to it."""
    return path in API_PATHS or path.startswith("/jobs/")


class DashboardProxy(LocalSite):
    """The dashboard and the API's routes on ``host:port``, forwarded through ``client``."""

    def __init__(
        self,
        client: ApiClient,
        *,
        host: str = "127.0.0.1",
        port: int,
        log: Callable[[str], None] | None = None,
        key: str | None = None,
    ) -> None:
        self.client = client
        self.log = log
        self.key = key or secrets.token_urlsafe(24)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the proxy says what it forwards itself."""

            def handle_one(self) -> None:
                proxy.handle(self)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_one

        server = ThreadingHTTPServer((host, port), Handler)  # OSError when the port is taken
        server.daemon_threads = True
        self.port = int(server.server_address[1])
        self._serve(server, host, self.port, "dashboard")

    def serve_forever(self) -> None:
        """Serve until Ctrl-C or SIGTERM, then stop and release the port.

        The server runs on its own thread and the signals only set an event: a KeyboardInterrupt
        raised in the middle of starting a request's thread could leave the interpreter unable to exit.
        """
        stopping = threading.Event()
        previous = {number: signal.signal(number, lambda *_: stopping.set()) for number in STOP_SIGNALS}
        try:
            self._serving.start()
            while not stopping.wait(STOP_POLL_SECONDS):
                pass
        finally:
            self._serving.stop()
            for number, handler in previous.items():
                signal.signal(number, handler)

    @property
    def address(self) -> str:
        """The page's address with this session's key: what ``cairn dashboard`` prints for the user to open."""
        return f"{self.url}/?key={self.key}"

    def holds_key(self, request: BaseHTTPRequestHandler) -> bool:
        """Whether the request carries this session's key, in its cookie or its header."""
        given = request.headers.get(KEY_HEADER)
        if given is None:
            try:
                cookie = SimpleCookie(request.headers.get("Cookie") or "")
            except CookieError:
                return False
            given = cookie[KEY_COOKIE].value if KEY_COOKIE in cookie else None
        return given is not None and hmac.compare_digest(given.encode(), self.key.encode())

    def __enter__(self) -> DashboardProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def foreign(self, request: BaseHTTPRequestHandler) -> str | None:
        """Why a request does not come from this server's own page; None when it does."""
        headers = request.headers
        return self.own.refusal(headers.get("Host"), headers.get("Origin"), headers.get("Sec-Fetch-Site"))

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        """Answer one request: a forwarded API call, a dashboard file, or a refusal."""
        method = request.command.upper()
        path, _, query = request.path.partition("?")
        reason = self.foreign(request)
        if reason is not None:
            self._send_error(request, 403, "forbidden", f"The dashboard answers only its own page: {reason}")
            return
        try:
            length = int(request.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            too_large = length > MAX_BODY
            message = f"The body is over {MAX_BODY} bytes" if too_large else "Content-Length is not a number"
            self._send_error(request, 413 if too_large else 400, "invalid_request", message)
            request.close_connection = True
            return
        body = request.rfile.read(length) if length else b""
        if is_api_path(path) and not self.holds_key(request):
            message = (
                f"Open the dashboard at the address cairn dashboard printed ({self.url}/?key=...): its calls carry it"
            )
            self._send_error(request, 401, "unauthenticated", message)
        elif is_api_path(path):
            self._forward(request, method, path, query, body)
        elif method in ("GET", "HEAD") and is_dashboard_path(path) and (found := asset_at(path)) is not None:
            answer = reply(found, dict(request.headers.items()))
            headers = dict(answer.headers)
            keys = parse_qs(query).get("key") or [""]
            if hmac.compare_digest(keys[0].encode(), self.key.encode()):  # the page opened from the printed address
                headers["Set-Cookie"] = f"{KEY_COOKIE}={self.key}; HttpOnly; SameSite=Strict; Path=/"
            self._send(request, answer.status, headers, answer.body)
        else:
            self._send_error(request, 404, "not_found", f"Nothing at {path}")

    def _forward(self, request: BaseHTTPRequestHandler, method: str, path: str, query: str, body: bytes) -> None:
        content_type = request.headers.get("Content-Type")
        try:
            answer = self.client.exchange(
                method,
                path,
                query=query,
                body=body or None,
                headers={"Content-Type": content_type} if content_type else None,
            )
        except RequestFailed as exc:  # no answer (ApiUnreachable), or no credentials to sign with (AuthError)
            status, code = (502, "api_unreachable") if isinstance(exc, ApiUnreachable) else (401, "unauthenticated")
            self._say(f"{method} {path} -> {status}: {exc.message}")
            self._send_error(request, status, code, exc.message)
            return
        wanted = {name.lower() for name in ANSWER_HEADERS}
        headers = {name: value for name, value in answer.headers.items() if name.lower() in wanted}
        if method != "GET" or answer.status >= 400:
            self._say(f"{method} {path} -> {answer.status}")
        self._send(request, answer.status, {**headers, "Cache-Control": "no-store"}, answer.body)

    def _say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)

    def _send_error(self, request: BaseHTTPRequestHandler, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        self._send(request, status, {"Content-Type": "application/json"}, body)

    def _send(self, request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(body)
