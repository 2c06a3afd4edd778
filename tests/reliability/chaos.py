"""A chaos run of the deployed bundle on a laptop: a share of DynamoDB, S3 and Lambda calls fail.

The phase functions and the scheduler run on :class:`cairn.testing.stack.LocalStack` against a moto
server over HTTP, so botocore's own retry loop runs as it does on AWS. Each DynamoDB and S3 request
is, with probability ``rate``, throttled (DynamoDB's ``ThrottlingException``, S3's ``SlowDown``),
answered with a 500, or sent and then its response lost (botocore sends it again). Each Lambda
invoke is, with the same probability, throttled, failed with a 5xx, or queued with its response
lost (the caller retries, so the invoke is queued twice); Lambda's at-least-once delivery is played
by queueing some async invokes twice. The scheduler's 5-minute sweep runs between rounds.

What it checks is what users depend on: every job completes with the right result, each phase
commits once, and no phase that committed is run again (a re-run only follows a failed attempt).
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import boto3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from cairn import Done, Job, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.core.errors import CairnError
from cairn.core.registry import PipelineRegistry
from cairn.testing.invoker import LocalLambda
from cairn.testing.stack import SCHEDULER, LocalStack
from tests.aws import REGION, canned_response, dynamodb_client, moto_server, s3_client
from tests.support import FakeClock

OWNER = "arn:aws:iam::123456789012:user/chaos"
PHASES = ["fetch", "split", "extract", "publish"]
PADDING = random.Random(0).randbytes(12_000).hex()  # incompressible, above the offload threshold: state in S3
FAULT_KINDS = ("throttled", "server_error", "lost")
SCHEDULED_EVENT = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


@dataclass
class Figures:
    """What a chaos run did and saw."""

    jobs: int = 0
    completed: int = 0
    rounds: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    duplicates_delivered: int = 0
    phase_runs: int = 0
    failed_attempts: int = 0
    redone: int = 0
    wrong_results: int = 0
    seconds: float = 0.0

    @property
    def faults_injected(self) -> int:
        """Every injected fault, all services and kinds."""
        return sum(self.faults.values())

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready data."""
        return {
            "jobs": self.jobs,
            "completed": self.completed,
            "rounds": self.rounds,
            "calls": dict(self.calls),
            "faults": dict(self.faults),
            "faults_injected": self.faults_injected,
            "duplicates_delivered": self.duplicates_delivered,
            "phase_runs": self.phase_runs,
            "failed_attempts": self.failed_attempts,
            "redone": self.redone,
            "wrong_results": self.wrong_results,
            "seconds": round(self.seconds, 1),
        }


def _dynamodb_error(status: int, code: str) -> tuple[bytes, str]:
    return json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code}).encode(), (
        "application/x-amz-json-1.0"
    )


def _s3_error(status: int, code: str) -> tuple[bytes, str]:
    body = f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{code}</Message></Error>"
    return body.encode(), "application/xml"


class CallFaults:
    """botocore hooks on one client: each request, with probability ``rate``, gets one fault."""

    MAX_ATTEMPTS = 5  # the clients' botocore retry setting (tests.aws)

    CODES: ClassVar[dict[str, dict[str, tuple[int, str]]]] = {
        "dynamodb": {"throttled": (400, "ThrottlingException"), "server_error": (500, "InternalServerError")},
        "s3": {"throttled": (503, "SlowDown"), "server_error": (500, "InternalError")},
    }

    def __init__(self, service: str, rate: float, chooser: random.Random, figures: Figures) -> None:
        self.service = service
        self.rate = rate
        self.chooser = chooser
        self.figures = figures
        self._fault = threading.local()

    def install(self, client: Any) -> None:
        """Register the hooks on ``client`` (the retry hook ahead of botocore's own)."""
        client.meta.events.register(f"before-send.{self.service}", self.before_send)
        client.meta.events.register_first(f"needs-retry.{self.service}", self.needs_retry)

    def before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        """Answer with a throttle or a 5xx instead of sending, or mark the response as one to lose."""
        self.figures.calls[self.service] += 1
        self._fault.kind = None
        if self.chooser.random() >= self.rate:
            return None
        kind = self.chooser.choice(FAULT_KINDS)
        self.figures.faults[f"{self.service} {kind}"] += 1
        self._fault.kind = kind
        if kind == "lost":
            return None
        status, code = self.CODES[self.service][kind]
        body, content_type = (_dynamodb_error if self.service == "dynamodb" else _s3_error)(status, code)
        return canned_response(request.url, status, body, content_type)

    def needs_retry(self, attempts: int, **_: Any) -> float | None:
        """Retry an injected fault at once, as botocore would after its backoff (a lost response: sent again).

        Past ``MAX_ATTEMPTS`` botocore's own handler decides, and gives up as it would on AWS.
        """
        kind, self._fault.kind = getattr(self._fault, "kind", None), None
        if kind is not None and attempts < self.MAX_ATTEMPTS:
            return 0.0
        return None


class FaultyLambda:
    """A Lambda client whose invokes fail as ``rate`` says, retried as botocore's standard mode would."""

    ATTEMPTS = 3

    def __init__(self, inner: LocalLambda, rate: float, chooser: random.Random, figures: Figures) -> None:
        self.inner = inner
        self.rate = rate
        self.chooser = chooser
        self.figures = figures

    def invoke(self, *, FunctionName: str, InvocationType: str = "RequestResponse", Payload: Any = b"{}") -> Any:
        """Invoke through ``inner``; faults are retried up to ``ATTEMPTS`` times, then raised."""
        for _ in range(self.ATTEMPTS):
            self.figures.calls["lambda"] += 1
            if self.chooser.random() >= self.rate:
                response = self.inner.invoke(FunctionName=FunctionName, InvocationType=InvocationType, Payload=Payload)
                if InvocationType == "Event" and self.chooser.random() < self.rate / 2:
                    self.inner.invoke(FunctionName=FunctionName, InvocationType=InvocationType, Payload=Payload)
                    self.figures.duplicates_delivered += 1
                return response
            kind = self.chooser.choice(FAULT_KINDS)
            self.figures.faults[f"lambda {kind}"] += 1
            if kind == "lost":  # it was queued; the caller never heard, and sends it again
                self.inner.invoke(FunctionName=FunctionName, InvocationType=InvocationType, Payload=Payload)
                self.figures.duplicates_delivered += 1
        code = "TooManyRequestsException" if kind == "throttled" else "ServiceException"
        raise ClientError({"Error": {"Code": code, "Message": "injected"}}, "Invoke")


class Ledger:
    """Every run of a phase body, and the input it ran on."""

    def __init__(self) -> None:
        self.runs: Counter[tuple[str, str]] = Counter()

    def pipeline(self) -> Pipeline[Any]:
        """Four phases that pass a trail along, with a checkpoint large enough to live in S3."""
        pipeline: Pipeline[Any] = Pipeline("chaos")
        policy = RetryPolicy(max_attempts=8, backoff=0.0, jitter=False)

        def make(name: str, following: str | None) -> None:
            def phase(ctx: PhaseContext[Any]) -> Next | Done:
                self.runs[(ctx.job_id, name)] += 1
                ctx.log(f"{name} ran")
                state = {"trail": [*ctx.state["trail"], name], "padding": PADDING}
                return Next(following, state) if following else Done({"trail": state["trail"]})

            pipeline.phase(name=name, retry=policy)(phase)

        for index, name in enumerate(PHASES):
            make(name, PHASES[index + 1] if index + 1 < len(PHASES) else None)
        return pipeline


def _start(stack: LocalStack, pipeline: Pipeline[Any], job_id: str) -> None:
    """Start a job as a caller would: try again while the platform answers with a transient error."""
    jobs = stack.runtime.cairn(OWNER, pipeline)
    for _ in range(20):
        try:
            jobs.start(pipeline, job_id, state={"trail": [], "padding": PADDING})
            return
        except CairnError as exc:
            if type(exc).__name__ == "JobExistsError":
                return
            continue
    raise AssertionError(f"{job_id} could not be started")


def _check(job: Job, runs: Counter[tuple[str, str]], figures: Figures) -> None:
    """Count the job's phase runs, failed attempts, re-runs of a committed phase, and a wrong result."""
    if job.status == JobStatus.COMPLETE:
        figures.completed += 1
    if job.result != {"trail": PHASES}:
        figures.wrong_results += 1
    for phase in PHASES:
        records = [record for record in job.phases if record.phase == phase]
        succeeded = [record for record in records if record.outcome in ("next", "done")]
        failed = len(records) - len(succeeded)
        ran = runs[(job.job_id, phase)]
        figures.phase_runs += ran
        figures.failed_attempts += failed
        # Each run is either the one that committed or a recorded failed attempt; more is a redo.
        figures.redone += max(0, ran - len(succeeded) - failed) + max(0, len(succeeded) - 1)


def run_chaos(*, jobs: int = 10, rate: float = 0.2, seed: int = 1, max_rounds: int = 60) -> Figures:
    """Run ``jobs`` jobs to the end with ``rate`` of DynamoDB, S3 and Lambda calls failing; returns the figures."""
    figures = Figures(jobs=jobs)
    chooser = random.Random(seed)
    ledger = Ledger()
    pipeline = ledger.pipeline()
    clock = FakeClock(start_ms=int(time.time() * 1000))
    began = time.monotonic()
    with moto_server() as endpoint:
        dynamodb, s3 = dynamodb_client(endpoint), s3_client(endpoint)
        sqs = boto3.client("sqs", region_name=REGION, endpoint_url=endpoint)
        stack = LocalStack.create(PipelineRegistry([pipeline]), dynamodb=dynamodb, s3=s3, sqs=sqs, clock=clock)
        for service, client in (("dynamodb", dynamodb), ("s3", s3)):
            CallFaults(service, rate, chooser, figures).install(client)
        stack.runtime.lambda_client = FaultyLambda(stack.invoker, rate, chooser, figures)
        ids = [f"chaos-{index:04d}" for index in range(jobs)]
        for job_id in ids:
            _start(stack, pipeline, job_id)
        reader = stack.runtime.storage(OWNER)
        while figures.rounds < max_rounds:
            figures.rounds += 1
            stack.run_until_idle(timeout=120)
            if all(_status(reader, job_id) in (JobStatus.COMPLETE, JobStatus.ERROR) for job_id in ids):
                break
            clock.advance(stack.runtime.settings.sweep_idle_seconds + 1)
            _call_until_answered(stack, SCHEDULED_EVENT)
        for job_id in ids:
            _check(_read(reader, job_id), ledger.runs, figures)
    figures.seconds = time.monotonic() - began
    return figures


def _read(reader: Any, job_id: str) -> Job:
    for _ in range(20):
        try:
            job = reader.get_job(job_id)
        except CairnError:
            continue
        if job is None:
            raise AssertionError(f"{job_id} is gone")
        return job  # type: ignore[no-any-return]
    raise AssertionError(f"{job_id} could not be read")


def _status(reader: Any, job_id: str) -> JobStatus:
    return _read(reader, job_id).status


def _call_until_answered(stack: LocalStack, event: dict[str, Any]) -> None:
    """Invoke the scheduler as EventBridge would; a failed sweep is simply the next one's work."""
    with contextlib.suppress(CairnError):
        stack.call(SCHEDULER, event)
