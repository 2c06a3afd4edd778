"""The API fuzzed from its own OpenAPI document, through the in-process handler: no request ever gets a 5xx.

schemathesis generates requests that fit the document (positive) and that
break it (negative) for every operation; each goes to the API function as the
API Gateway event it would be (:mod:`tests.functional.api_wsgi`). Every response
must be a non-5xx that the document describes. A second test checks that
another owner's job ids and cursors never read or change a caller's jobs.

With ``CAIRN_RELIABILITY_REPORT_DIR`` set, the counts are written there
(``api_fuzz.json``, ``cross_owner.json``) for the reliability report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok
from schemathesis.errors import FailureGroup

from tests.events import load_event
from tests.functional.api_client import ALICE, API, BOB, Api, as_caller, for_job, with_query
from tests.functional.api_wsgi import LambdaWsgi
from tests.support import record_figure

MAX_EXAMPLES = 50  # per operation and generation mode
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
#: Job ids the generator tends to produce: jobs under them exist, so fuzzed requests also reach real jobs.
SEEDED_JOBS = ["0", "A", "a", "00", "0A"]


@dataclass
class Tally:
    """What a fuzzing run sent and what came back wrong."""

    requests: int = 0
    server_errors: int = 0
    failures: list[str] = field(default_factory=list)


def fuzz_operation(case_strategy: Any, tally: Tally, job_ids: list[str]) -> None:
    """Send ``MAX_EXAMPLES`` generated requests, derandomized; count them and keep every failed check.

    A generated job id is replaced by one of ``job_ids`` (existing jobs) in some requests, so that
    they reach real jobs too; pass no ids for requests meant to break the document.
    """

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=case_strategy, existing=st.sampled_from([None, *job_ids]))
    def run(case: Case[Any], existing: str | None) -> None:
        if existing is not None and case.path_parameters and "jobId" in case.path_parameters:
            case.path_parameters["jobId"] = existing
        response = case.call()
        tally.requests += 1
        if response.status_code >= 500:
            tally.server_errors += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as exc:  # keep going: every failed check is reported at the end
            tally.failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {exc}"[:2000])

    run()


def has_input(definition: dict[str, Any]) -> bool:
    return bool(definition.get("parameters") or definition.get("requestBody"))


def test_fuzzing_the_api_from_its_openapi_document_never_gets_a_5xx(api: Api) -> None:
    for job_id in SEEDED_JOBS:
        api.create(job_id)
    app = LambdaWsgi(lambda event: api.stack.call(API, event), ALICE)
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    tally = Tally()

    try:
        for result in schema.get_all_operations():
            assert isinstance(result, Ok), result  # the document loads whole
            operation = result.ok()
            fuzz_operation(operation.as_strategy(generation_mode=GenerationMode.POSITIVE), tally, SEEDED_JOBS)
            if has_input(operation.definition.raw):  # an operation without parameters has nothing to break
                fuzz_operation(operation.as_strategy(generation_mode=GenerationMode.NEGATIVE), tally, [])
    finally:
        record_figure("api_fuzz", requests=tally.requests, server_errors=tally.server_errors)

    assert tally.requests >= 10 * MAX_EXAMPLES  # fewer than 16 x: a tiny input space runs out of new examples
    assert tally.server_errors == 0, tally.failures
    assert tally.failures == []
    assert all(status < 500 for status in app.statuses)


def bob_requests(job_ids: list[str], cursors: list[str]) -> list[dict[str, Any]]:
    """Every way BOB could reach ALICE's jobs: each job route for each of her ids, her cursors in his listings."""
    events = []
    for job_id in job_ids:
        for name in ("get-job", "get-job-with-state", "get-job-log", "retry-job-resume", "retry-job-full"):
            events.append(for_job(load_event(f"api/{name}"), job_id))
        for name in ("pause-job", "cancel-job"):
            events.append(for_job(load_event(f"api/{name}"), job_id))
    for cursor in cursors:
        for query in ({"cursor": cursor}, {"cursor": cursor, "status": "running"}, {"cursor": cursor, "limit": "1"}):
            events.append(with_query(load_event("api/list-jobs"), query))
    return [as_caller(event, BOB) for event in events]


def test_another_owner_never_reads_or_changes_a_callers_jobs(api: Api) -> None:
    job_ids = [f"alice-{index}" for index in range(6)]
    for job_id in job_ids:
        api.create(job_id)
    api.run_phases(3)
    cursors: list[str] = []
    query = {"limit": "1"}
    while len(cursors) < 5:
        page = api.call("list-jobs", query=query).body
        if not page.get("cursor"):
            break
        cursors.append(page["cursor"])
        query = {"limit": "1", "cursor": page["cursor"]}
    assert len(cursors) == 5
    before = {job_id: api.stored(job_id) for job_id in job_ids}

    attempts, succeeded, statuses = 0, 0, []
    try:
        for event in bob_requests(job_ids, cursors):
            reply = api.send(event)
            attempts += 1
            statuses.append(reply.status)
            body = json.dumps(reply.body)
            listed = [job["jobId"] for job in reply.body.get("jobs", [])] if isinstance(reply.body, dict) else []
            if any(job_id in body for job_id in job_ids if reply.status < 400) or listed:
                succeeded += 1
    finally:
        record_figure("cross_owner", attempts=attempts, succeeded=succeeded)

    assert attempts == len(job_ids) * 7 + len(cursors) * 3
    assert succeeded == 0
    assert all(400 <= status < 500 for status in statuses), statuses
    assert {job_id: api.stored(job_id) for job_id in job_ids} == before
    assert api.call("list-jobs", caller=BOB).body["jobs"] == []
