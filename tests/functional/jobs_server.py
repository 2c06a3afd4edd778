"""A real HTTP server on 127.0.0.1 in front of the API function on a local stack: what `cairn jobs` talks to.

Each request becomes the HTTP API event API Gateway would send, with the caller its authorizer
would report: a JWT's subject for ``Authorization: Bearer <token>`` (the token itself is the
subject here), else the IAM principal the ``X-Cairn-Identity`` header names, else ``identity``.
One lock serialises the API's invocations and the test's runs of the stack, so a test may run
the stack from its own thread while the command polls the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from cairn.aws.api import api_handler
from cairn.testing.api_events import LOCAL_IDENTITY, http_api_event, iam_caller, jwt_caller, response_body
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES

FUNCTION = "cairn-jobs-cli-api"


@dataclass(frozen=True)
class Seen:
    """A request as the server received it (header names lower-cased)."""

    method: str
    target: str  # the path and query string, as sent
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]


class JobsServer:
    """The API function behind a ThreadingHTTPServer on a free loopback port; ``url`` is its address."""

    def __init__(self, stack: LocalStack, *, identity: str = LOCAL_IDENTITY) -> None:
        self.stack = stack
        self.identity = identity
        self.lock = threading.RLock()
        self.seen: list[Seen] = []
        self.log_served = threading.Event()
        stack.register(FUNCTION, api_handler(PIPELINES, runtime=stack.runtime))
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.daemon_threads = True
        self._http.jobs = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, name="jobs-server", daemon=True
        )

    def __enter__(self) -> JobsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def caller(self, headers: dict[str, str]) -> dict[str, Any]:
        """The authorizer context of a request with these headers."""
        authorization = headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            return jwt_caller(authorization.removeprefix("Bearer "))
        return iam_caller(headers.get("x-cairn-identity") or self.identity)

    def respond(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        """Invoke the API function for one request: its status, headers and body."""
        self.seen.append(seen)
        path, _, query = seen.target.partition("?")
        event = http_api_event(
            seen.method,
            path,
            query=query,
            headers=seen.headers,
            body=seen.body or None,
            caller=self.caller(seen.headers),
        )
        with self.lock:
            response = self.stack.call(FUNCTION, event)
        if path.endswith("/log"):
            self.log_served.set()
        headers = {str(name): str(value) for name, value in (response.get("headers") or {}).items()}
        return int(response["statusCode"]), headers, response_body(response)

    def step(self) -> int:
        """Run the next queued phase invocation, if any; how many ran (0 or 1)."""
        with self.lock:
            return self.stack.invoker.drain(max_steps=1)

    def run(self) -> None:
        """Run every queued invocation until the stack is idle."""
        with self.lock:
            self.stack.run_until_idle(timeout=20)

    def requests_to(self, path_suffix: str) -> list[Seen]:
        """The requests whose path ends with ``path_suffix``."""
        return [seen for seen in self.seen if seen.path.endswith(path_suffix)]


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        jobs: JobsServer = self.server.jobs  # type: ignore[attr-defined]
        status, reply_headers, payload = jobs.respond(Seen(self.command, self.path, headers, body))
        self.send_response(status)
        for name, value in reply_headers.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the command's output, not the server's."""


def sigv4_signature_is_valid(seen: Seen, credentials: Credentials) -> bool:
    """Whether the request's SigV4 signature is the one ``credentials`` give for what arrived at the server.

    The signature is computed again, as API Gateway would, over the signed headers as received,
    the path and query as sent, the body, and the request's ``X-Amz-Date``.
    """
    algorithm, _, fields_text = seen.headers["authorization"].partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    fields = dict(part.strip().split("=", 1) for part in fields_text.split(","))
    _key, _date, region, service, _terminator = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    request = AWSRequest(
        method=seen.method,
        url=f"http://{seen.headers['host']}{seen.target}",
        data=seen.body,
        headers={name: seen.headers[name] for name in signed},
    )
    request.context["timestamp"] = seen.headers["x-amz-date"]
    signer = SigV4Auth(credentials, service, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return bool(expected == fields["Signature"])
