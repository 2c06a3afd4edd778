"""The API fuzzed from its own OpenAPI document, through the in-process handler on moto.

schemathesis generates requests that fit the document (positive) and that
break it (negative) for every operation; each goes to the API function as the
API Gateway event it would be (:mod:`tests.functional.api_wsgi`). Every response
must be a non-5xx that the document describes; a request that fits the document
is never refused with 400, and one that breaks it is refused with a 4xx and the
error envelope (400 for a body, a query or a parameter the route reads).

Three rules no JSON Schema can state are the only 400s a fitting request may get,
each matched by its own message (:data:`DOCUMENTED_REFUSALS`, declared in the
document's words): a ``state`` the pipeline's state model refuses (``state`` is
free-form JSON in the document; ``GET /pipelines`` gives each model's schema), a
``cursor`` the listing did not return, a listing's ``pipeline`` the deployment does not run, a
reversed created-time range, and a body nested deeper than ``x-max-depth``.

A second test checks that another owner's job ids and cursors never read or change
a caller's jobs.

``MAX_EXAMPLES`` per operation and mode, derandomized; ``CAIRN_FUZZ_SCALE`` (or the
proofs' ``CAIRN_PROOF_SCALE``, which ``make reliability`` sets) runs that many times more.
With ``CAIRN_RELIABILITY_REPORT_DIR`` set, the counts are written there
(``api_fuzz.json``, ``cross_owner.json``) for the reliability report.
"""

from __future__ import annotations

import json
import os
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

from cairn.aws.api_request import MAX_JSON_DEPTH
from tests.events import load_event
from tests.functional.api_client import ALICE, API, BOB, Api, as_caller, for_job, with_query
from tests.functional.api_wsgi import LambdaWsgi
from tests.support import record_figure

SCALE = max(1, int(os.environ.get("CAIRN_FUZZ_SCALE") or os.environ.get("CAIRN_PROOF_SCALE") or "1"))
MAX_EXAMPLES = 25 * SCALE  # per operation and generation mode
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
#: Job ids the generator tends to produce: jobs under them exist, so fuzzed requests also reach real jobs.
SEEDED_JOBS = ["0", "A", "a", "00", "0A"]
#: The only 400s a request that fits the document may get: (the field, the start of the refusal). Each is a rule
#: the document states in words, since JSON Schema cannot: the pipeline's own state model (``state`` is free-form
#: JSON in the document), a cursor's provenance (opaque, only ever one the listing returned) and nesting depth.
DOCUMENTED_REFUSALS = (
    ("state", 'Invalid state for pipeline "'),
    ("cursor", "Invalid cursor: "),
    ("pipeline", 'Unknown pipeline "'),
    ("createdFrom", "The created-time range is reversed"),
    ("since", "The created-time range is reversed"),
    ("until", "The created-time range is reversed"),
    ("errorType", "An exception type or a failed phase filters jobs in error only"),
    ("errorPhase", "An exception type or a failed phase filters jobs in error only"),
    ("body", f"The request body nests arrays and objects more than {MAX_JSON_DEPTH} deep"),
)
#: What a request that breaks the document may get: 400, 404 when a broken path parameter matches no route
#: (or names no job), 413/415 for a body too large or not JSON.
REFUSALS_OF_INVALID = {400, 404, 413, 415}


@dataclass
class Tally:
    """What a fuzzing run sent and what came back wrong."""

    requests: int = 0
    server_errors: int = 0
    failures: list[str] = field(default_factory=list)
    refused_valid: list[str] = field(default_factory=list)
    documented: int = 0


def fields_sent(case: Case[Any]) -> set[str]:
    """The names of the query parameters and body fields a request sends (``body`` for any body)."""
    sent = set(case.query or {})
    if not isinstance(case.body, schemathesis.core.NotSet):
        sent.add("body")
        if isinstance(case.body, dict):
            sent.update(case.body)
            nested = case.body.get("filter")
            if isinstance(nested, dict):  # POST /bulk: the listing's filter, in the body
                sent.update(str(name) for name in nested)
    if case.method.upper() == "POST" and case.path == "/jobs":
        sent.add("state")  # an absent state is checked too: the model may refuse null
    return sent


def documented_refusal(case: Case[Any], message: str) -> bool:
    """Whether a 400 of a request that fits the document is one of :data:`DOCUMENTED_REFUSALS`, for its field."""
    sent = fields_sent(case)
    return any(name in sent and message.startswith(start) for name, start in DOCUMENTED_REFUSALS)


def check_refusal(case: Case[Any], response: Any, mode: GenerationMode, tally: Tally) -> None:
    """A fitting request is never a 400 but for a documented rule; a breaking one is refused with the envelope."""
    status = response.status_code
    body = response.json() if response.content else None
    error = body.get("error") if isinstance(body, dict) else None
    seen = f"{case.method} {case.formatted_path} query={case.query} body={case.body!r}"[:600]
    if mode == GenerationMode.POSITIVE and status == 400:
        message = str(error.get("message", "")) if isinstance(error, dict) else ""
        if documented_refusal(case, message):
            tally.documented += 1
        else:
            tally.refused_valid.append(f"{seen} -> 400: {message}"[:1000])
    # That a breaking request is refused at all is negative_data_rejection's check (it knows which mutations
    # break the document; an unknown query parameter, say, does not); here: refused as the document says.
    if (
        mode == GenerationMode.NEGATIVE
        and 400 <= status < 500
        and not (status in REFUSALS_OF_INVALID and isinstance(error, dict) and {"code", "message"} <= set(error))
    ):
        tally.failures.append(f"{seen} -> {status}: a request that breaks the document is refused otherwise: {body}")


def fuzz_operation(operation: Any, mode: GenerationMode, tally: Tally, job_ids: list[str], cursors: list[str]) -> None:
    """Send ``MAX_EXAMPLES`` generated requests, derandomized; count them and keep every failed check.

    A generated job id is replaced by one of ``job_ids`` (existing jobs) and a generated cursor by one
    of ``cursors`` (ones the listing returned) in some requests, so that they reach real jobs and
    pages too; pass none for requests meant to break the document.
    """

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=operation.as_strategy(generation_mode=mode),
        existing=st.sampled_from([None, *job_ids]),
        returned=st.sampled_from([None, *cursors]),
    )
    def run(case: Case[Any], existing: str | None, returned: str | None) -> None:
        if existing is not None and case.path_parameters and "jobId" in case.path_parameters:
            case.path_parameters["jobId"] = existing
        if returned is not None and case.query and "cursor" in case.query:
            case.query = {key: value for key, value in case.query.items() if key != "status"} | {"cursor": returned}
        response = case.call()
        tally.requests += 1
        if response.status_code >= 500:
            tally.server_errors += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as exc:  # keep going: every failed check is reported at the end
            tally.failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {exc}"[:2000])
        check_refusal(case, response, mode, tally)

    run()


def has_input(definition: dict[str, Any]) -> bool:
    return bool(definition.get("parameters") or definition.get("requestBody"))


def listing_cursors(api: Api) -> list[str]:
    """Cursors the listing returned (of the unfiltered listing, a page of one job at a time)."""
    cursors: list[str] = []
    query = {"limit": "1"}
    while len(cursors) < 3:
        cursor = api.call("list-jobs", query=query).body.get("cursor")
        if not cursor:
            break
        cursors.append(cursor)
        query = {"limit": "1", "cursor": cursor}
    return cursors


def test_fuzzing_the_api_from_its_openapi_document_never_gets_a_5xx(api: Api) -> None:
    """No 5xx; a request that fits the document is never a 400 (bar :data:`DOCUMENTED_REFUSALS`); one that
    breaks it is a 4xx with the error envelope."""
    for job_id in SEEDED_JOBS:
        api.create(job_id)
    cursors = listing_cursors(api)
    assert len(cursors) == 3
    app = LambdaWsgi(lambda event: api.stack.call(API, event), ALICE)
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    tally = Tally()

    try:
        for result in schema.get_all_operations():
            assert isinstance(result, Ok), result  # the document loads whole
            operation = result.ok()
            fuzz_operation(operation, GenerationMode.POSITIVE, tally, SEEDED_JOBS, cursors)
            if has_input(operation.definition.raw):  # an operation without parameters has nothing to break
                fuzz_operation(operation, GenerationMode.NEGATIVE, tally, [], [])
    finally:
        record_figure(
            "api_fuzz",
            requests=tally.requests,
            server_errors=tally.server_errors,
            valid_requests_refused=len(tally.refused_valid),
        )

    assert tally.requests >= 10 * MAX_EXAMPLES  # fewer than 16 x: a tiny input space runs out of new examples
    assert tally.server_errors == 0, tally.failures
    assert tally.refused_valid == [], f"{len(tally.refused_valid)} fitting requests refused: {tally.refused_valid}"
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
