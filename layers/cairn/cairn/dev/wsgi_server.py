"""The local servers' HTTP: werkzeug's threaded WSGI server, kept within bounds.

:class:`LocalServer` listens with a backlog that holds a burst of connections, gives up on a client
that sends nothing for the read timeout (as nginx's ``client_body_timeout``, between two reads), gives
up on one whose request line and headers have not all come within the read timeout (as nginx's
``client_header_timeout``: a head trickled a byte at a time is cut off too), refuses a request line and
headers over a bound (431) and logs nothing itself. :func:`read_body` reads a request's body within a
bound (413) and answers a body that stops coming with :class:`TimeoutError` (the app's 408). Serve it on a thread with
:class:`cairn.dev.serving.ServedOnThread`.
"""

from __future__ import annotations

import io
import json
import math
import os
import socket
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

BACKLOG = 1024
"""Connections the kernel holds for the server while its accept loop is busy (capped by ``somaxconn``)."""
READ_TIMEOUT = 10.0
"""Seconds a client may keep the server waiting for its next bytes (request line, headers, body, the next request)."""
READ_TIMEOUT_VARIABLE = "CAIRN_DEV_READ_TIMEOUT"
"""The environment variable that sets the read timeout (seconds) of ``cairn dev``'s servers."""
MAX_HEADER_BYTES = 64 * 1024
"""The request line and header values of one request at most (bytes), by default."""
_READ_CHUNK = 64 * 1024


class BodyTooLarge(ValueError):
    """A request body over the bound."""


def read_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """The read timeout: ``$CAIRN_DEV_READ_TIMEOUT`` seconds, else :data:`READ_TIMEOUT`; ValueError unless a finite
    number over 0."""
    text = environ.get(READ_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return READ_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"{READ_TIMEOUT_VARIABLE} is not a number of seconds: {text!r}") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{READ_TIMEOUT_VARIABLE} must be a number of seconds over 0, got {text!r}")
    return seconds


def read_body(environ: Mapping[str, Any], limit: int) -> bytes:
    """A WSGI request's body (``Content-Length`` or chunked); BodyTooLarge over ``limit`` bytes, ValueError for a
    ``Content-Length`` that is not a number, TimeoutError when the client stops sending, OSError for a bad chunk."""
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):  # chunked: read to its end, never past the limit
        body = bytearray()
        while chunk := stream.read(_READ_CHUNK):
            body += chunk
            if len(body) > limit:
                raise BodyTooLarge(f"The body is over {limit} bytes")
        return bytes(body)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length < 0:
        raise ValueError(f"Content-Length is negative: {length}")
    if length > limit:
        raise BodyTooLarge(f"The body is over {limit} bytes")
    content = stream.read(length) if length else b""
    if len(content) < length:
        raise TimeoutError("The client closed the connection before its body ended")
    return bytes(content)


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each waiting the read timeout at most and, while a deadline is set, never past it."""

    def __init__(self, connection: socket.socket, read_timeout: float) -> None:
        super().__init__()
        self._connection = connection
        self._read_timeout = read_timeout
        self.deadline: float | None = None
        """The monotonic time the reads must end by (None: only the read timeout bounds them)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is None:
            return self._connection.recv_into(buffer)
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("The request line and headers did not come within the read timeout")
        self._connection.settimeout(min(left, self._read_timeout))
        try:
            return self._connection.recv_into(buffer)
        finally:
            self._connection.settimeout(self._read_timeout)


class _Handler(WSGIRequestHandler):
    """werkzeug's request handler with the server's read timeout, head deadline and header bound, quiet."""

    server: LocalServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.read_timeout)  # every read waits this long at most
        self._reader = _DeadlineReader(self.connection, self.server.read_timeout)
        self.rfile.close()  # the socket's own reader: closed, or the socket would stay open after the request
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        """One request, whose request line and headers must all come within the read timeout."""
        self._reader.deadline = time.monotonic() + self.server.read_timeout
        try:
            super().handle_one_request()
        finally:
            self._reader.deadline = None

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self._reader.deadline = None  # the head is in: the body is bound by the read timeout between reads
        if not parsed:
            return False
        size = len(self.requestline) + sum(len(value) for value in self.headers.values())
        if size > self.server.max_header_bytes:
            message = f"The request line and headers are over {self.server.max_header_bytes} bytes"
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, message)
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A refusal before the app sees the request (a bad request line, headers too large), as JSON; then close."""
        status = HTTPStatus(code)
        body = json.dumps({"message": message or status.phrase}).encode()
        self.close_connection = True
        self.send_response(status.value, status.phrase)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if getattr(self, "command", None) != "HEAD":
            self.wfile.write(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """The apps say what they serve."""

    def log_error(self, format: str, *args: Any) -> None:
        """A timed-out or dropped client is no news."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class LocalServer(ThreadedWSGIServer):
    """werkzeug's threaded server for ``app`` on ``host:port`` (0: a free one); OSError when the port is taken."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        *,
        read_timeout: float = READ_TIMEOUT,
        max_header_bytes: int = MAX_HEADER_BYTES,
        backlog: int = BACKLOG,
    ) -> None:
        self.read_timeout = read_timeout
        self.max_header_bytes = max_header_bytes
        listener = socket.create_server((host, port), backlog=backlog)  # bound and listening, or OSError
        try:
            super().__init__(host, int(listener.getsockname()[1]), app, _Handler, fd=listener.fileno())
        finally:
            listener.close()  # the server listens on its own duplicate of it
