"""The API function's refusals and failures: validation, authentication, the store or scheduler failing."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from cairn import JobStatus
from cairn.adapters import StorageError
from cairn.aws.api import api_handler
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.runtime import Runtime
from cairn.core.settings import Settings
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.events import load_event
from tests.functional.api_client import ALICE, BOB, JOB, Api, for_job
from tests.support import FakeClock

KNOWN_PIPELINES = ", ".join(PIPELINES.names)  # every registered pipeline is named


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "create-job-bad-id",
            "body.jobId: Invalid job id 'invoice 2024/001': use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        ),
        ("create-job-unknown-pipeline", f'Unknown pipeline "video-transcode" (known pipelines: {KNOWN_PIPELINES})'),
        ("create-job-bad-state", 'Invalid state for pipeline "document-intake"'),
        ("create-job-malformed-json", "The request body is not valid JSON"),
        (
            "list-jobs-bad-status",
            "query parameter status: Input should be "
            "'idle', 'running', 'waiting', 'paused', 'complete', 'error' or 'cancelled'",
        ),
        ("list-jobs-bad-cursor", "Invalid cursor: it was not returned by this listing"),
        ("retry-job-bad-mode", "body.mode: Input should be 'resume', 'full' or 'from'"),
    ],
)
def test_an_invalid_request_is_400_with_a_clear_message_and_writes_nothing(api: Api, name: str, message: str) -> None:
    api.create()
    api.run()
    before, items = api.stored(), api.item_count()

    reply = api.call(name)

    assert reply.status == 400
    assert reply.code == "invalid_request"
    assert reply.message.startswith(message)
    assert api.item_count() == items
    assert api.stored() == before
    assert api.stack.invoker.pending() == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"pipeline": "document-intake", "jobID": "x-1"}, "body.jobID: is not a known field"),
        ({"jobId": "x-1"}, "body.pipeline: Field required"),
        ({"pipeline": "document-intake", "jobId": "-starts-with-a-dash"}, "body.jobId: Invalid job id"),
        ({"pipeline": "document-intake", "jobId": "x" * 129}, "body.jobId: Invalid job id"),
        (
            {"pipeline": "document-intake", "jobId": "x-1", "state": {"colour": "red"}},
            'Invalid state for pipeline "document-intake"',
        ),
        (["document-intake"], "body: Input should be a valid dictionary"),
    ],
)
def test_a_create_body_that_does_not_fit_is_400(api: Api, body: Any, message: str) -> None:
    reply = api.call("create-job", body=body)

    assert reply.status == 400
    assert reply.code == "invalid_request"
    assert reply.message.startswith(message), reply.message
    assert api.item_count() == 0


def test_a_body_that_is_not_json_is_415(api: Api) -> None:
    event = load_event("api/create-job")
    event["headers"]["content-type"] = "text/plain"

    reply = api.send(event)

    assert (reply.status, reply.code) == (415, "unsupported_media_type")
    assert api.item_count() == 0


def test_a_create_without_a_body_is_400(api: Api) -> None:
    event = load_event("api/create-job")
    del event["body"]

    reply = api.send(event)

    assert (reply.status, reply.message) == (400, "The request body is required (a JSON object)")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": "0"}, "query parameter limit: Input should be greater than or equal to 1"),
        ({"limit": "101"}, "query parameter limit: Input should be less than or equal to 100"),
        ({"limit": "ten"}, "query parameter limit: Input should be a valid integer"),
    ],
)
def test_a_bad_page_size_is_400(api: Api, query: dict[str, str], message: str) -> None:
    reply = api.call("list-jobs", query=query)

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message.startswith(message)


def test_a_cursor_of_another_callers_listing_is_400(api: Api) -> None:
    for job_id in ("a-1", "a-2", "a-3"):
        api.create(job_id)
    cursor = api.call("list-jobs", query={"limit": "1"}).body["cursor"]
    assert cursor

    reply = api.call("list-jobs", caller=BOB, query={"cursor": cursor})

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert api.call("list-jobs-by-status", query={"status": "running", "cursor": cursor}).status == 400


@pytest.mark.parametrize("job_id", ["-dash-first", "a" * 129, "semi;colon"])
def test_a_bad_job_id_in_the_path_is_400(api: Api, job_id: str) -> None:
    reply = api.call("get-job", job_id=job_id)

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message.startswith("path parameter jobId: Invalid job id")


def test_an_unauthenticated_request_is_401_before_anything_else_and_writes_nothing(api: Api) -> None:
    reply = api.call("unauthenticated")  # it also sends an x-cairn-owner header naming alice

    assert reply.status == 401
    assert reply.code == "unauthenticated"
    assert api.item_count() == 0
    assert api.stack.invoker.pending() == 0

    malformed = load_event("api/unauthenticated")
    malformed["body"] = "{not json"
    assert api.send(malformed).status == 401  # refused before the body is read
    for name in ("get-job", "list-jobs", "pause-job", "retry-job-full"):
        event = load_event(f"api/{name}")
        del event["requestContext"]["authorizer"]
        assert api.send(event).status == 401


@pytest.mark.parametrize(
    "authorizer",
    [
        {"iam": {"userArn": "", "userId": ""}},
        {"jwt": {"claims": {"iss": "https://issuer.example"}, "scopes": []}},
        {"lambda": {"owner": ALICE}},
    ],
    ids=["empty-iam", "jwt-without-sub", "lambda-authorizer"],
)
def test_an_authorizer_context_without_a_usable_identity_is_401(api: Api, authorizer: dict[str, Any]) -> None:
    event = load_event("api/create-job")
    event["requestContext"]["authorizer"] = authorizer

    reply = api.send(event)

    assert (reply.status, reply.code) == (401, "unauthenticated")
    assert api.item_count() == 0


def test_iam_user_id_is_the_owner_when_there_is_no_user_arn(api: Api) -> None:
    event = load_event("api/create-job")
    iam = event["requestContext"]["authorizer"]["iam"]
    del iam["userArn"]

    assert api.send(event).status == 202
    assert api.stored(owner=iam["userId"]).status == JobStatus.RUNNING


def test_an_unknown_route_is_a_json_404(api: Api) -> None:
    event = for_job(load_event("api/get-job"), JOB)
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/jobs/{JOB}/results"

    reply = api.send(event)

    assert (reply.status, reply.code) == (404, "not_found")
    assert reply.message == f"No route for GET /jobs/{JOB}/results"


def test_health_needs_no_caller_and_the_deep_check_reads_the_table(api: Api) -> None:
    reply = api.call("health")

    assert reply.status == 200
    assert reply.body == {"status": "ok", "driver": "direct", "checked": "api"}
    deep = api.call("health-deep")
    assert (deep.status, deep.body) == (200, {"status": "ok", "driver": "direct", "checked": "table"})


def test_the_deep_check_is_503_when_the_table_cannot_be_read(api: Api) -> None:
    runtime = api.stack.runtime
    assert runtime.dynamodb is not None
    assert runtime.settings.table_name is not None
    runtime.dynamodb.delete_table(TableName=runtime.settings.table_name)

    reply = api.call("health-deep")

    assert (reply.status, reply.code) == (503, "unavailable")
    assert reply.message == "The job table cannot be read"
    assert api.call("health").status == 200  # the public check reads nothing


def test_an_unexpected_error_is_a_500_that_reveals_nothing(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: DynamoDBStorage, job_id: str, **_: object) -> None:
        raise RuntimeError("internal detail: table cairn-secret, key JOB#alice")

    for read in ("get_job", "get_job_view"):  # the whole job, and the view GET /jobs/{jobId} reads
        monkeypatch.setattr(DynamoDBStorage, read, broken)

    reply = api.call("get-job")

    assert (reply.status, reply.code) == (500, "internal")
    assert "secret" not in reply.message
    assert "RuntimeError" not in reply.message


def test_a_store_that_is_throttled_is_503_with_retry_after(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def throttled(self: DynamoDBStorage, job_id: str, **_: object) -> None:
        raise StorageError("DynamoDB GetItem failed: ProvisionedThroughputExceededException", retryable=True)

    for read in ("get_job", "get_job_view"):
        monkeypatch.setattr(DynamoDBStorage, read, throttled)

    reply = api.call("get-job")

    assert (reply.status, reply.code) == (503, "unavailable")
    assert reply.headers["Retry-After"] == "1"
    assert "DynamoDB" not in reply.message


def test_a_deployment_without_a_table_is_a_500_misconfigured(stack: LocalStack) -> None:
    runtime = Runtime(settings=Settings(table_name=None), dynamodb=stack.runtime.dynamodb)
    stack.register("cairn-api-misconfigured", api_handler(PIPELINES, runtime=runtime))

    response = stack.call("cairn-api-misconfigured", load_event("api/get-job"))

    assert response["statusCode"] == 500
    assert '"code":"misconfigured"' in response["body"]
    assert "CAIRN_TABLE_NAME" not in response["body"]


class FailingLambda:
    """A Lambda client whose invokes fail as a throttled service would."""

    def invoke(self, **kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke")


def test_a_job_whose_first_invoke_fails_is_accepted_and_the_sweep_starts_it(api: Api, stack_clock: FakeClock) -> None:
    runtime = api.stack.runtime
    runtime.lambda_client = FailingLambda()

    reply = api.call("create-job")

    assert reply.status == 202
    assert reply.body["status"] == "running"
    assert api.stored().status == JobStatus.RUNNING
    assert api.stack.invoker.pending() == 0

    runtime.lambda_client = api.stack.invoker
    stack_clock.advance(runtime.settings.sweep_idle_seconds + 1)
    revived = api.stack.call("cairn-scheduler", load_event("scheduler/scheduled-sweep"))
    assert revived == {"revived": [JOB]}
    api.run()
    assert api.stored().status == JobStatus.COMPLETE


def test_the_openapi_document_lists_every_route_with_its_responses(api: Api) -> None:
    reply = api.call("openapi")

    assert reply.status == 200
    document = reply.body
    assert document["info"]["title"] == "cairn"
    routes = {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}
    assert routes == {
        ("POST", "/jobs"),
        ("GET", "/jobs"),
        ("GET", "/jobs/counts"),
        ("GET", "/jobs/{jobId}"),
        ("GET", "/jobs/{jobId}/log"),
        ("GET", "/jobs/{jobId}/history"),
        ("GET", "/jobs/{jobId}/states/{phase}"),
        ("GET", "/jobs/{jobId}/diff"),
        ("GET", "/jobs/{jobId}/maps"),
        ("GET", "/jobs/{jobId}/maps/{mapId}/items/{index}"),
        ("POST", "/jobs/{jobId}/retry"),
        ("POST", "/jobs/{jobId}/pause"),
        ("POST", "/jobs/{jobId}/cancel"),
        ("POST", "/jobs/{jobId}/nudge"),
        ("POST", "/jobs/{jobId}/signals/{name}"),
        ("GET", "/pipelines"),
        ("GET", "/failures"),
        ("POST", "/bulk"),
        ("GET", "/bulk/{bulkId}"),
        ("GET", "/bulk/{bulkId}/jobs"),
        ("GET", "/health"),
        ("GET", "/health/deep"),
        ("GET", "/openapi.json"),
    }
    operations = {(method.upper(), path): op for path, ops in document["paths"].items() for method, op in ops.items()}
    assert set(operations["POST", "/jobs"]["responses"]) == {"202", "400", "401", "409", "413", "415", "429", "500"}
    for read in ("/jobs/{jobId}/states/{phase}", "/jobs/{jobId}/diff", "/jobs/{jobId}/maps"):
        assert set(operations["GET", read]["responses"]) == {"200", "400", "401", "404", "500"}
    retry_responses = {"202", "400", "401", "404", "409", "413", "415", "500"}
    assert set(operations["POST", "/jobs/{jobId}/retry"]["responses"]) == retry_responses
    assert set(operations["POST", "/jobs/{jobId}/signals/{name}"]["responses"]) == retry_responses
    assert set(operations["GET", "/health"]["responses"]) == {"200", "500"}  # it reads nothing
    assert set(operations["GET", "/health/deep"]["responses"]) == {"200", "400", "401", "500", "503"}
    assert not any("422" in op["responses"] for op in operations.values())
    schemas = document["components"]["schemas"]
    assert {"CreateJobRequest", "RetryRequest", "JobView", "JobPage", "JobLog", "ErrorBody", "Health"} <= set(schemas)
    assert set(schemas["JobCounts"]["properties"]) == {
        "counts",
        "total",
        "exact",
        "unreadable",
        "stalled",
        "maintained",
    }
    assert set(schemas["CreateJobRequest"]["properties"]) == {"pipeline", "jobId", "state"}
    assert {"jobId", "nextPhase", "createdAt", "state"} <= set(schemas["JobView"]["properties"])
    parameters = {param["name"] for param in operations["GET", "/jobs"]["parameters"]}
    assert parameters == {
        "status",
        "pipeline",
        "createdFrom",
        "createdTo",
        "idPrefix",
        "cursor",
        "limit",
        "sort",
        "costs",
        "stalled",
        "errorType",
        "errorPhase",
    }
    log_parameters = {param["name"] for param in operations["GET", "/jobs/{jobId}/log"]["parameters"]}
    assert log_parameters == {"jobId", "limit", "cursor"}
    history_parameters = {param["name"] for param in operations["GET", "/jobs/{jobId}/history"]["parameters"]}
    assert history_parameters == {"jobId", "limit", "cursor"}
    assert {"JobHistory", "HistoryWrite"} <= set(schemas)
    assert "historyCursor" in schemas["JobView"]["properties"]
    assert [param["name"] for param in operations["GET", "/jobs/{jobId}"]["parameters"]] == [
        "jobId",
        "includeState",
        "includeInput",
    ]
