"""The sample events of a bundle: one JSON file per function and case, for ``sam local invoke -e`` and the tests.

:func:`sample_events` renders the generic ones for a bundle's pipelines, each keyed by its path in the
bundle (``events/api/create-job.json``):

- ``events/api/``: requests to the API function as API Gateway's HTTP API sends them (payload format
  2.0), signed by IAM unless the case says otherwise; the job ones address the first pipeline's sample job.
- ``events/scheduler/``: what the scheduler function gets: the scheduled sweep, a phase function's
  on-failure destination record (a timeout, an out-of-memory crash), a delayed advance from SQS, the
  state machine's steps (``resolve``, ``record-failure``), ``start``, ``retry`` and the advance of a phase
  the pipeline does not know.
- ``events/statemachine/``: the input of an execution of the state machine (now and after a delay).
- ``events/phases/<pipeline>/<phase>.json``: the advance each phase function gets for its pipeline's
  sample job (what ``cairn new`` writes for a new pipeline's phases).

Every value is fixed (request ids, signatures and trace ids are derived from the case's name), so two
renderings are the same files. A bundle may keep cases of its own beside these. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias
from urllib.parse import urlencode

from ..core.naming import function_name

JsonValue: TypeAlias = "dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None"
"""A value ``json.dumps`` writes as it is."""
Event: TypeAlias = dict[str, JsonValue]
"""One sample event: the JSON object a function is invoked with."""

ACCOUNT = "123456789012"
REGION = "us-east-1"
SAMPLE_JOB = "job-0001"
"""The job the sample events address."""
SAMPLE_OWNER = f"arn:aws:iam::{ACCOUNT}:user/alice"
"""The owner of the sample job: the IAM user who signs the sample API requests."""
FUNCTION_PREFIX = "cairn-"
"""The start of the function names the samples mention (a stack named ``cairn``)."""
SIGNAL = "approval"
"""The signal the sample API request sends, and its payload."""
SIGNAL_PAYLOAD: Event = {"approved": True}
UNKNOWN_PIPELINE = "video-transcode"
UNKNOWN_PHASE = "summarise"
NOT_BEFORE = 1_796_000_000_000
"""When the sample delayed advance is due (Unix ms)."""

_API_ID = "a1b2c3d4e5"
_DOMAIN = f"{_API_ID}.execute-api.{REGION}.amazonaws.com"
_SOURCE_IP = "203.0.113.42"
_USER_AGENT = "aws-cli/2.22.8 md/awscrt#0.23.4 ua/2.0 os/linux#6.8.0 md/arch#x86_64 lang/python#3.12.6"
_ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
_CALLER_ID = "AIDAJQABLZS4A3QDU576Q"
_REQUEST_TIME = "12/Mar/2025:19:03:58 +0000"
_REQUEST_EPOCH_MS = 1_741_806_238_000
_AMZ_DATE = "20250312T190358Z"
_CREDENTIAL = f"{_ACCESS_KEY}/{_AMZ_DATE[:8]}/{REGION}/execute-api/aws4_request"
_FAILURE_TIME = "2026-11-30T05:00:00.000Z"


@dataclass(frozen=True)
class PipelineOutline:
    """What the sample events need of a pipeline: its name, its phases in order and a sample initial state."""

    name: str
    phases: Sequence[str]
    sample: JsonValue = field(default_factory=dict)
    """The state the sample job starts with (the API's ``GET /pipelines`` sample); None is ``{}``."""

    @property
    def state(self) -> JsonValue:
        """The sample job's initial state."""
        return {} if self.sample is None else self.sample


def sample_events(pipelines: Sequence[PipelineOutline], *, api_job: str = SAMPLE_JOB) -> dict[str, Event]:
    """Every generic sample event of a bundle running ``pipelines``, by its path in the bundle.

    The API, scheduler and state machine events address the first pipeline; ``api_job`` is the job the
    API requests name. ValueError without a pipeline, or for a pipeline without phases.
    """
    if not pipelines:
        raise ValueError("The sample events need at least one pipeline")
    for pipeline in pipelines:
        if not pipeline.phases:
            raise ValueError(f'Pipeline "{pipeline.name}" has no phases: it has no sample events')
    first = pipelines[0]
    names = [pipeline.name for pipeline in pipelines]
    events = {
        **_under("api", api_events(first, names, job_id=api_job)),
        **_under("scheduler", scheduler_events(first)),
        **_under("statemachine", state_machine_events(first)),
    }
    for pipeline in pipelines:
        events.update(phase_events(pipeline))
    return events


def dump(event: JsonValue) -> str:
    """The text of a sample event's file: indented JSON and a final newline."""
    return json.dumps(event, indent=2) + "\n"


# -- the phase functions ------------------------------------------------------------------------


def phase_sequence(index: int) -> int:
    """The sample job's sequence when the phase at ``index`` is advanced, if no phase before it saved its state.

    A job starts at 1; each phase then claims the job (one write) and commits the next phase (another).
    """
    return 2 * index + 1


def phase_event(pipeline: str, phase: str, *, sequence: int | None, job_id: str = SAMPLE_JOB) -> Event:
    """The advance a phase function gets (``AdvanceMessage``): ``phase`` of the job, while it is at ``sequence``."""
    event: Event = {"jobId": job_id, "owner": SAMPLE_OWNER, "pipeline": pipeline, "phase": phase}
    if sequence is not None:
        event["sequence"] = sequence
    return event


def phase_events(pipeline: PipelineOutline) -> dict[str, Event]:
    """One advance per phase of ``pipeline`` for its sample job, at ``events/phases/<pipeline>/<phase>.json``.

    The sequences are :func:`phase_sequence`'s: right for a new pipeline's phases. Once a phase saves its
    state mid-way or the pipeline waits or maps, the phases after it are advanced at later sequences (or
    as a map's items): its files then say so, checked against the messages its sample job really sends.
    """
    return {
        f"events/phases/{pipeline.name}/{phase}.json": phase_event(pipeline.name, phase, sequence=phase_sequence(index))
        for index, phase in enumerate(pipeline.phases)
    }


# -- the state machine --------------------------------------------------------------------------


def state_machine_events(pipeline: PipelineOutline) -> dict[str, Event]:
    """The input of an execution that drives the sample job from its start: now, and after a second."""
    start: Event = {"jobId": SAMPLE_JOB, "owner": SAMPLE_OWNER, "pipeline": pipeline.name, "delay": 0, "sequence": 1}
    return {"start": start, "start-delayed": {**start, "delay": 1}}


# -- the scheduler ------------------------------------------------------------------------------


def scheduler_events(pipeline: PipelineOutline) -> dict[str, Event]:
    """What the scheduler function gets for the sample job of ``pipeline``, by case."""
    first, middle = _first_phase(pipeline), _middle_phase(pipeline)
    job: Event = {"jobId": SAMPLE_JOB, "owner": SAMPLE_OWNER, "pipeline": pipeline.name}
    timeout = f"Task timed out after {900:.2f} seconds"
    return {
        "scheduled-sweep": {
            "version": "0",
            "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": "2026-11-30T05:00:00Z",
            "region": REGION,
            "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/cairn-sweep"],
            "detail": {},
        },
        "on-failure-timeout": _on_failure(
            pipeline,
            middle,
            request_id="c0ffee00-1111-4a2b-8c3d-4e5f60718293",
            error_type="Sandbox.Timedout",
            message=f"2026-11-30T04:59:59.000Z c0ffee00-1111-4a2b-8c3d-4e5f60718293 {timeout}",
        ),
        "on-failure-out-of-memory": _on_failure(
            pipeline,
            first,
            request_id="d00dfeed-2222-4b3c-9d4e-5f6071829304",
            error_type="Runtime.ExitError",
            message="RequestId: d00dfeed-2222-4b3c-9d4e-5f6071829304 Error: Runtime exited with error: signal: killed",
        ),
        "delayed-advance": _delayed_advance(pipeline, first),
        "resolve": {"action": "resolve", **job},
        "record-failure": {
            "action": "record-failure",
            **job,
            "phase": middle[1],
            "error": {
                "Error": "Sandbox.Timedout",
                "Cause": json.dumps({"errorMessage": timeout}, separators=(",", ":")),
            },
            "sequence": middle[0],
        },
        "start": {"action": "start", **job, "state": pipeline.state},
        "retry": {"action": "retry", **job, "mode": "resume"},
        "advance-unknown-phase": {"action": "advance", **job, "phase": _unused(pipeline.phases, UNKNOWN_PHASE)},
    }


def _on_failure(
    pipeline: PipelineOutline, at: tuple[int, str], *, request_id: str, error_type: str, message: str
) -> Event:
    """The record Lambda sends a phase function's on-failure destination when an async invocation failed."""
    sequence, phase = at
    function = function_name(FUNCTION_PREFIX, pipeline.name, phase)
    return {
        "version": "1.0",
        "timestamp": _FAILURE_TIME,
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 1,
        },
        "requestPayload": phase_event(pipeline.name, phase, sequence=sequence),
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorMessage": message, "errorType": error_type},
    }


def _delayed_advance(pipeline: PipelineOutline, at: tuple[int, str]) -> Event:
    """An advance that waited out a delay on the delay queue, as SQS hands it to the scheduler."""
    sequence, phase = at
    body = json.dumps({**phase_event(pipeline.name, phase, sequence=sequence), "notBefore": NOT_BEFORE})
    sent = str(NOT_BEFORE)
    record: Event = {
        "messageId": "5d2c1a9e-8f3b-4c61-9a2e-0d7c4b1e6f20",
        "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": sent,
            "SenderId": "AROAEXAMPLE:cairn-api",
            "ApproximateFirstReceiveTimestamp": str(NOT_BEFORE + 500),
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:cairn-delays",
        "awsRegion": REGION,
    }
    return {"Records": [record]}


# -- the API --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    """One sample request: its route, the values in its path and query, its JSON body, who sends it."""

    method: str
    route: str
    path: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    body: str | None = None
    caller: str = "iam"
    """``iam`` (SigV4-signed), ``public`` (no credentials, a public route) or ``unsigned`` (no credentials on
    a signed route, naming an owner in a header of its own)."""


def api_events(pipeline: PipelineOutline, registered: Sequence[str], *, job_id: str = SAMPLE_JOB) -> dict[str, Event]:
    """The API's requests by case: the job ones for ``job_id`` of ``pipeline`` (``registered``: every pipeline)."""
    job = {"jobId": job_id}
    create = {"pipeline": pipeline.name, "jobId": job_id, "state": pipeline.state}
    unknown = {**create, "pipeline": _unused(registered, UNKNOWN_PIPELINE)}
    cut = json.dumps({"pipeline": pipeline.name, "jobId": job_id})[:-1] + ", "
    signal = {**job, "name": SIGNAL}
    requests = {
        "create-job": _Request("POST", "/jobs", body=_json(create)),
        "create-job-existing": _Request("POST", "/jobs", body=_json(create)),
        "create-job-unknown-pipeline": _Request("POST", "/jobs", body=_json(unknown)),
        "create-job-malformed-json": _Request("POST", "/jobs", body=cut),
        "get-job": _Request("GET", "/jobs/{jobId}", job),
        "get-job-with-state": _Request("GET", "/jobs/{jobId}", job, {"includeState": "true"}),
        "get-job-log": _Request("GET", "/jobs/{jobId}/log", job),
        "get-job-history": _Request("GET", "/jobs/{jobId}/history", job, {"limit": "20"}),
        "get-job-state": _Request("GET", "/jobs/{jobId}/states/{phase}", {**job, "phase": pipeline.phases[0]}),
        "get-job-diff": _Request(
            "GET", "/jobs/{jobId}/diff", job, {"from": pipeline.phases[0], "to": _middle_phase(pipeline)[1]}
        ),
        "get-job-maps": _Request("GET", "/jobs/{jobId}/maps", job),
        "list-jobs": _Request("GET", "/jobs", query={"limit": "20"}),
        "list-jobs-by-status": _Request("GET", "/jobs", query={"status": "complete"}),
        "list-jobs-bad-status": _Request("GET", "/jobs", query={"status": "finished"}),
        "list-jobs-bad-cursor": _Request("GET", "/jobs", query={"cursor": "bm90LWEtY3Vyc29y"}),
        "count-jobs": _Request("GET", "/jobs/counts"),
        "retry-job-resume": _Request("POST", "/jobs/{jobId}/retry", job, body=_json({"mode": "resume"})),
        "retry-job-full": _Request("POST", "/jobs/{jobId}/retry", job, body=_json({"mode": "full"})),
        "retry-job-from": _Request(
            "POST", "/jobs/{jobId}/retry", job, body=_json({"mode": "from", "phase": _middle_phase(pipeline)[1]})
        ),
        "retry-job-bad-mode": _Request("POST", "/jobs/{jobId}/retry", job, body=_json({"mode": "restart"})),
        "pause-job": _Request("POST", "/jobs/{jobId}/pause", job),
        "cancel-job": _Request("POST", "/jobs/{jobId}/cancel", job),
        "nudge-job": _Request("POST", "/jobs/{jobId}/nudge", job),
        "send-signal": _Request("POST", "/jobs/{jobId}/signals/{name}", signal, body=_json(SIGNAL_PAYLOAD)),
        "list-pipelines": _Request("GET", "/pipelines"),
        "health": _Request("GET", "/health", caller="public"),
        "health-deep": _Request("GET", "/health/deep"),
        "openapi": _Request("GET", "/openapi.json", caller="public"),
        "unauthenticated": _Request("POST", "/jobs", body=_json(create), caller="unsigned"),
    }
    return {name: _http_event(name, request) for name, request in requests.items()}


def _http_event(name: str, request: _Request) -> Event:
    """The HTTP API's event for ``request`` (payload format 2.0), its ids and signature derived from ``name``."""
    digest = hashlib.sha256(f"cairn sample request {name}".encode()).digest()
    route_key = f"{request.method} {request.route}"
    path = request.route.format_map(request.path)
    headers: dict[str, JsonValue] = {
        "accept": "application/json",
        "accept-encoding": "gzip, deflate",
        "host": _DOMAIN,
        "user-agent": _USER_AGENT,
        "x-amzn-trace-id": f"Root=1-67d1d99e-{hashlib.sha256(digest).hexdigest()[:24]}",
        "x-forwarded-for": _SOURCE_IP,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if request.body is not None:
        headers.update({"content-length": str(len(request.body.encode())), "content-type": "application/json"})
    context: Event = {"accountId": ACCOUNT, "apiId": _API_ID}
    if request.caller == "iam":
        signed = f"Credential={_CREDENTIAL}, SignedHeaders=host;x-amz-date, Signature={digest.hex()}"
        headers.update({"authorization": f"AWS4-HMAC-SHA256 {signed}", "x-amz-date": _AMZ_DATE})
        context["authorizer"] = {"iam": _iam_caller()}
    elif request.caller == "unsigned":
        headers["x-cairn-owner"] = SAMPLE_OWNER
    context.update(
        {
            "domainName": _DOMAIN,
            "domainPrefix": _API_ID,
            "http": {
                "method": request.method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": _SOURCE_IP,
                "userAgent": _USER_AGENT,
            },
            "requestId": base64.b64encode(digest[:10]).decode()[:-1],
            "routeKey": route_key,
            "stage": "$default",
            "time": _REQUEST_TIME,
            "timeEpoch": _REQUEST_EPOCH_MS,
        }
    )
    event: Event = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": urlencode(request.query),
        "headers": dict(sorted(headers.items())),
    }
    if request.query:
        event["queryStringParameters"] = dict(request.query)
    event["requestContext"] = context
    if request.path:
        event["pathParameters"] = dict(request.path)
    if request.body is not None:
        event["body"] = request.body
    event["isBase64Encoded"] = False
    return event


def _iam_caller() -> Event:
    """The authorizer context of a request SigV4-signed by the sample owner."""
    return {
        "accessKey": _ACCESS_KEY,
        "accountId": ACCOUNT,
        "callerId": _CALLER_ID,
        "cognitoIdentity": None,
        "principalOrgId": "o-a1b2c3d4e5",
        "userArn": SAMPLE_OWNER,
        "userId": _CALLER_ID,
    }


# -- helpers --------------------------------------------------------------------------------------


def _json(value: JsonValue) -> str:
    """A request body: ``value`` as JSON text."""
    return json.dumps(value)


def _under(folder: str, events: Mapping[str, Event]) -> dict[str, Event]:
    """``events`` keyed by their paths in ``events/<folder>/``."""
    return {f"events/{folder}/{name}.json": event for name, event in events.items()}


def _first_phase(pipeline: PipelineOutline) -> tuple[int, str]:
    """The sample job's sequence at the pipeline's first phase, and the phase."""
    return phase_sequence(0), pipeline.phases[0]


def _middle_phase(pipeline: PipelineOutline) -> tuple[int, str]:
    """The sample job's sequence at the phase in the middle of the pipeline, and the phase: where the samples fail."""
    index = len(pipeline.phases) // 2
    return phase_sequence(index), pipeline.phases[index]


def _unused(taken: Sequence[str], wanted: str) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``... when it is taken: a name that names nothing of the bundle."""
    name, count = wanted, 1
    while name in taken:
        count += 1
        name = f"{wanted}-{count}"
    return name
