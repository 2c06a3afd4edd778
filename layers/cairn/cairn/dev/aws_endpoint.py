"""One local AWS endpoint: moto's server for DynamoDB, S3, SQS and Step Functions, and Lambda's Invoke API.

Every boto3 client of the functions (``AWS_ENDPOINT_URL``) and of the server talks to it.
``POST /2015-03-31/functions/{name}/invocations`` (Lambda's Invoke) runs the template's
functions in worker processes (:class:`LambdaService`); everything else is moto's. moto's
Step Functions engine calls Lambda on ``localhost:$MOTO_PORT``, so its ``lambda:invoke``
tasks reach the same functions over HTTP. moto's DynamoDB answers one request at a time (its tables are
not safe to read while another thread writes them) and at a cost that follows what the request touches
(:mod:`cairn.dev.moto_speedups`), so a table of 10,000 jobs answers as one of 10 does; moto builds its responses
without its per-value alias search (:mod:`cairn.dev.moto_responses`). Served as the API is
(:class:`cairn.dev.wsgi_server.LocalServer`), it answers only requests for its own address from no other site's page
(:mod:`cairn.dev.own_origin`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import urllib.request
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any
from urllib.parse import unquote

from ..testing.moto_service_tasks import service_task_parameters
from .lambda_service import MAX_ASYNC_PAYLOAD, MAX_SYNC_PAYLOAD, FunctionNotFound, LambdaService
from .moto_responses import quick_moto_responses
from .moto_speedups import proportional_moto
from .moto_streams import bounded_streams
from .own_origin import OwnOrigin
from .serving import ServedOnThread
from .wsgi_server import READ_TIMEOUT, LocalServer

StartResponse = Callable[..., Any]
_INVOKE = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations/?$")


def _error(start_response: StartResponse, status: str, code: str, message: str) -> list[bytes]:
    body = json.dumps({"Type": "User", "message": message}).encode()
    start_response(status, [("Content-Type", "application/json"), ("X-Amzn-ErrorType", code)])
    return [body]


class LambdaInvokeApi:
    """The Invoke operation of Lambda's REST API, as a WSGI app over a :class:`LambdaService`."""

    def __init__(self) -> None:
        self.service: LambdaService | None = None

    def __call__(self, environ: dict[str, Any], start_response: StartResponse, name: str) -> Iterable[bytes]:
        service = self.service
        if service is None:
            return _error(
                start_response, "503 Service Unavailable", "ServiceException", "Functions are not deployed yet"
            )
        try:
            function = service.resolve(unquote(name))
        except FunctionNotFound as exc:
            return _error(start_response, "404 Not Found", "ResourceNotFoundException", str(exc))
        kind = environ.get("HTTP_X_AMZ_INVOCATION_TYPE", "RequestResponse")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        limit = MAX_ASYNC_PAYLOAD if kind == "Event" else MAX_SYNC_PAYLOAD
        if length > limit:
            message = f"Request must be smaller than {limit} bytes for the {kind} invocation type"
            return _error(start_response, "413 Request Entity Too Large", "RequestEntityTooLargeException", message)
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            message = "Could not parse request body into json: the payload is not valid JSON"
            return _error(start_response, "400 Bad Request", "InvalidRequestContentException", message)
        if kind == "DryRun":
            start_response("204 No Content", [])
            return [b""]
        if kind == "Event":
            request_id = service.invoke_async(function, payload)
            start_response("202 Accepted", [("x-amzn-RequestId", request_id)])
            return [b""]
        if kind != "RequestResponse":
            message = f"Invalid invocation type: {kind}"
            return _error(start_response, "400 Bad Request", "InvalidParameterValueException", message)
        outcome = service.invoke(function, payload)
        headers = [("Content-Type", "application/json"), ("X-Amz-Executed-Version", "$LATEST")]
        if outcome.error:
            headers.append(("X-Amz-Function-Error", outcome.error))
        start_response("200 OK", headers)
        return [json.dumps(outcome.payload).encode()]


class AwsEndpoint:
    """moto's server and the Lambda Invoke API on one 127.0.0.1 port, served on a thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, read_timeout: float = READ_TIMEOUT) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # request noise off
        self.lambdas = LambdaInvokeApi()
        self._moto = DomainDispatcherApplication(create_backend_app)
        server = LocalServer(self._app, host, port, read_timeout=read_timeout)  # OSError when the port is taken
        self.port = int(server.port)
        self.url = f"http://{host}:{self.port}"
        self.own = OwnOrigin.of(host, self.port)
        self._serving = ServedOnThread(server, "aws-endpoint")
        self._previous_moto_port: str | None = os.environ.get("MOTO_PORT")
        self._dynamodb = threading.Lock()
        self._speedups = ExitStack()

    def _app(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        reason = self.own.refusal_of(environ)
        if reason is not None:
            return _error(start_response, "403 Forbidden", "AccessDeniedException", f"Refused: {reason}")
        match = _INVOKE.match(environ.get("PATH_INFO", ""))
        if match and environ.get("REQUEST_METHOD") == "POST":
            return self.lambdas(environ, start_response, match["name"])
        if str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB"):
            with self._dynamodb:  # moto's tables are plain dicts: one request reads or writes them at a time
                return list(self._moto(environ, start_response))
        result: Iterable[bytes] = self._moto(environ, start_response)
        return result

    def start(self, *, execute_state_machines: bool) -> None:
        """Serve; with ``execute_state_machines``, moto runs Step Functions executions (their Lambda tasks here)."""
        self._previous_moto_port = os.environ.get("MOTO_PORT")
        os.environ["MOTO_PORT"] = str(self.port)
        self._speedups.enter_context(proportional_moto())
        self._speedups.enter_context(quick_moto_responses())
        self._speedups.enter_context(bounded_streams())  # a stream poller reads every fraction of a second
        self._speedups.enter_context(service_task_parameters())  # the machine's hand-off starts an execution
        self._serving.start()
        if execute_state_machines:
            body = json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode()
            request = urllib.request.Request(f"{self.url}/moto-api/config", data=body, method="POST")
            with urllib.request.urlopen(request, timeout=10):
                pass

    def stop(self) -> None:
        """Stop serving."""
        self._serving.stop()
        self._speedups.close()
        if self._previous_moto_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = self._previous_moto_port
