"""Calling the API function as API Gateway would, and reading back what it stored: shared by the API tests."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from cairn import Job
from cairn.testing.api import ApiClient
from cairn.testing.api import Reply as Reply  # the API tests read replies as the kit makes them
from cairn.testing.api_events import iam_caller
from cairn.testing.stack import LocalStack
from tests.events import load_event

API = "cairn-api"
ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
# The owner of the sample JWT event: its issuer and subject.
CAROL = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Ab12Cd34E|7f3c2a9e-4b1d-4c8e-9a2f-1e5d6c7b8a90"
JOB = "invoice-2024-001"  # the job the sample events name
PHASES = ["fetch", "split", "extract", "publish"]


def as_caller(event: dict[str, Any], user_arn: str) -> dict[str, Any]:
    """The event as IAM user ``user_arn`` would send it."""
    event["requestContext"]["authorizer"] = iam_caller(user_arn)
    return event


def for_job(event: dict[str, Any], job_id: str) -> dict[str, Any]:
    """The event addressed to ``job_id`` instead of the sample job."""
    for holder, key in ((event, "rawPath"), (event["requestContext"]["http"], "path")):
        holder[key] = holder[key].replace(JOB, job_id)
    event["pathParameters"] = {"jobId": job_id}
    return event


def with_body(event: dict[str, Any], body: Any) -> dict[str, Any]:
    """The event with another JSON body."""
    event["body"] = json.dumps(body)
    event["headers"]["content-length"] = str(len(event["body"].encode()))
    return event


def with_query(event: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
    """The event with another query string."""
    event["queryStringParameters"] = query
    event["rawQueryString"] = urlencode(query)
    return event


class Api:
    """The API function deployed on a local stack (through the test kit's client), and what tests read back."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.client = ApiClient(stack, owner=ALICE, function=API)

    def send(self, event: dict[str, Any]) -> Reply:
        """Invoke the API function with ``event``."""
        reply = self.client.send(event)
        assert reply.headers["Content-Type"] == "application/json"
        return reply

    def call(
        self,
        name: str,
        *,
        caller: str | None = None,
        job_id: str | None = None,
        body: Any = None,
        query: dict[str, str] | None = None,
    ) -> Reply:
        """Send sample event ``api/<name>``, optionally as another caller, for another job, body or query."""
        event = load_event(f"api/{name}")
        if caller is not None:
            as_caller(event, caller)
        if job_id is not None:
            for_job(event, job_id)
        if body is not None:
            with_body(event, body)
        if query is not None:
            with_query(event, query)
        return self.send(event)

    def create(self, job_id: str = JOB, *, caller: str | None = None, document: str = "invoice.txt") -> Reply:
        """Start a document-intake job through the API (202 expected)."""
        body = {"pipeline": "document-intake", "jobId": job_id, "state": {"document": document}}
        reply = self.call("create-job", caller=caller, body=body)
        assert reply.status == 202, reply.body
        return reply

    def job(self, job_id: str = JOB, owner: str = ALICE) -> Job | None:
        """The job as stored in the table."""
        return self.stack.runtime.storage(owner).get_job(job_id)

    def stored(self, job_id: str = JOB, owner: str = ALICE) -> Job:
        """The stored job; fails the test when it is absent."""
        job = self.job(job_id, owner)
        assert job is not None, f"job {job_id} of {owner} not found"
        return job

    def item_count(self) -> int:
        """How many items the table holds (jobs, log entries, phase records)."""
        table, client = self.stack.runtime.settings.table_name, self.stack.runtime.dynamodb
        assert table is not None
        assert client is not None
        return client.scan(TableName=table, Select="COUNT")["Count"]

    def run(self) -> None:
        """Run every queued phase invoke until the stack is idle."""
        self.stack.run_until_idle(timeout=20)

    def run_phases(self, count: int) -> None:
        """Run only the next ``count`` queued invokes."""
        self.stack.invoker.drain(max_steps=count)


def phase_names(job: Job) -> list[str]:
    """The phases a job committed, in order."""
    return [record.phase for record in job.phases]
