"""``cairn dev``'s HTTP: a burst is answered in full, a stalled request is cut off, foreign and oversized
requests are refused, on the local API and on the local AWS endpoint alike."""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import boto3
import pytest
from botocore.config import Config

from cairn.dev.process import dev_process
from cairn.dev.wsgi_server import READ_TIMEOUT_VARIABLE
from tests.local.devstack import HUNG, DevStack, environment

pytestmark = pytest.mark.xdist_group("local-http")

READ_TIMEOUT = 2.0
"""The read timeout this module's server runs with (seconds): short, to keep the suite fast."""
BURST = 100
"""Concurrent starts: last in the module, as the jobs they start keep the stack busy for a while."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev --driver direct`` with a short read timeout."""
    log = tmp_path_factory.mktemp("dev-http") / "dev.log"
    variables = {**environment(), READ_TIMEOUT_VARIABLE: str(READ_TIMEOUT)}
    with dev_process(log, "--no-reload", "--driver", "direct", env=variables) as dev:
        yield DevStack(dev.process, dev.base_url, dev.log)


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def aws_url(stack: DevStack) -> str:
    return str(stack.admin("info")["awsEndpoint"])


def request(
    url: str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    wait: float = HUNG,
) -> tuple[int, bytes]:
    """One request on a connection of its own, answered within ``wait`` seconds; its status and body."""
    connection = http.client.HTTPConnection(*address(url), timeout=wait)
    try:
        connection.request(method, path, body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def start_body(job_id: str) -> bytes:
    return json.dumps({"pipeline": "document-intake", "jobId": job_id, "state": {"text": "A short note."}}).encode()


def exchange_raw(url: str, data: bytes, wait: float = HUNG) -> bytes:
    """Send ``data`` as it is, then read until the server closes the connection: what came back. Fails the test
    when ``wait`` seconds pass with nothing more from the server (it held the request open)."""
    with socket.create_connection(address(url), timeout=wait) as connection:
        connection.sendall(data)
        received = b""
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except TimeoutError:
            pytest.fail(f"the server held a stalled request open for {wait:g}s; it sent {received[:200]!r}")
        return received


@pytest.mark.parametrize(
    "sent",
    [
        b"POST /jobs HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        b'{"pipelin',  # the headers promise 1000 bytes, 10 come
        b"POST /jobs HTTP/1.1\r\nHost: {host}\r\nContent-Len",  # headers that never end
        b"",  # a connection that never says anything
    ],
    ids=["body", "headers", "idle"],
)
def test_a_stalled_request_is_answered_408_or_closed_by_the_server(stack: DevStack, sent: bytes) -> None:
    host = stack.base_url.removeprefix("http://").encode()
    received = exchange_raw(stack.base_url, sent.replace(b"{host}", host))  # the server ends it, not the client

    assert received == b"" or received.startswith(b"HTTP/1.1 408 "), received
    if b"Content-Length: 1000" in sent:
        assert received.startswith(b"HTTP/1.1 408 ")  # the request line and headers came: the server says why


@pytest.mark.parametrize("which", ["api", "aws"])
def test_a_request_head_trickled_a_byte_at_a_time_is_cut_off_within_the_read_timeout(
    stack: DevStack, which: str
) -> None:
    url = stack.base_url if which == "api" else aws_url(stack)
    host = url.removeprefix("http://").encode()
    head = b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\n" + b"X-Slow: " + b"a" * 20 + b"\r\n\r\n"
    started = time.monotonic()
    with socket.create_connection(address(url), timeout=HUNG) as connection:
        for byte in head:  # one byte every half second: each gap is well within the read timeout
            try:
                connection.sendall(bytes([byte]))
            except OSError:
                break  # the server closed the connection
            if select.select([connection], [], [], 0.5)[0]:
                break  # the server answered or closed
        try:
            received = connection.recv(65536)
        except OSError:
            received = b""
    took = time.monotonic() - started

    assert received == b"" or received.startswith(b"HTTP/1.1 408 "), received
    assert took < READ_TIMEOUT + 2, f"a trickled head was served for {took:.1f}s"


def test_the_api_still_answers_after_stalled_requests(stack: DevStack) -> None:
    stalled = [socket.create_connection(address(stack.base_url)) for _ in range(20)]
    try:
        assert request(stack.base_url, "GET", "/health")[0] == 200
    finally:
        for connection in stalled:
            connection.close()


@pytest.mark.parametrize("which", ["api", "aws"])
def test_a_request_for_another_host_is_refused(stack: DevStack, which: str) -> None:
    url = stack.base_url if which == "api" else aws_url(stack)
    port = address(url)[1]
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1"):
        status, body = request(url, "GET", "/health" if which == "api" else "/", headers={"Host": host})
        assert status == 403, (host, body)
    assert request(url, "GET", "/health", headers={"Host": f"localhost:{port}"})[0] != 403


def test_a_start_from_another_sites_page_is_refused_and_starts_nothing(stack: DevStack) -> None:
    foreign = (
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": f"http://127.0.0.1:{address(stack.base_url)[1] + 1}"},  # another local server's page
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    )
    for number, headers in enumerate(foreign):
        status, body = request(stack.base_url, "POST", "/jobs", start_body(f"foreign-{number}"), headers)
        assert status == 403, (headers, body)
    listed = stack.api.list_all()["jobs"]
    assert not [job for job in listed if job["jobId"].startswith("foreign-")]


def test_the_servers_own_page_may_start_a_job(stack: DevStack) -> None:
    same = {"Origin": stack.base_url, "Sec-Fetch-Site": "same-origin"}
    status, body = request(stack.base_url, "POST", "/jobs", start_body("own-page"), same)
    assert (status, json.loads(body)["jobId"]) == (202, "own-page")


def test_the_aws_endpoint_refuses_a_browsers_cross_origin_request(stack: DevStack) -> None:
    info = stack.admin("info")
    body = json.dumps({"TableName": info["table"]}).encode()  # the stack's own table
    headers = {  # DynamoDB's DeleteTable as a page could send it: its credential scope names the service
        "Origin": "https://evil.example",
        "X-Amz-Target": "DynamoDB_20120810.DeleteTable",
        "Content-Type": "application/x-amz-json-1.0",
        "Authorization": "AWS4-HMAC-SHA256 Credential=local/20250101/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host;x-amz-target, Signature=0",
    }
    status, answer = request(info["awsEndpoint"], "POST", "/", body, headers)
    assert status == 403, answer
    assert json.loads(answer)["message"] == "Refused: Origin 'https://evil.example' is not this server's page"

    session = boto3.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    dynamodb = session.client("dynamodb", endpoint_url=info["awsEndpoint"])  # no Origin: not a browser's
    table = dynamodb.describe_table(TableName=info["table"])["Table"]  # still there: the delete never reached moto
    assert (table["TableName"], table["TableStatus"]) == (info["table"], "ACTIVE")


def test_the_aws_endpoint_serves_boto3(stack: DevStack) -> None:
    info = stack.admin("info")
    session = boto3.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    for endpoint in (info["awsEndpoint"], info["awsEndpoint"].replace("127.0.0.1", "localhost")):
        table = session.client("dynamodb", endpoint_url=endpoint).describe_table(TableName=info["table"])
        assert table["Table"]["TableStatus"] == "ACTIVE"


def _dynamodb(stack: DevStack) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=aws_url(stack),
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )


def test_concurrent_writes_and_queries_on_the_aws_endpoint_all_succeed(stack: DevStack) -> None:
    table = stack.admin("info")["table"]
    client = _dynamodb(stack)

    def item(name: str) -> dict[str, Any]:
        return {"pk": {"S": f"RACE#{name}"}, "sk": {"S": "JOB"}, "owner": {"S": "race"}, "createdAt": {"N": "1"}}

    for batch in range(0, 2000, 25):
        requests = [{"PutRequest": {"Item": item(f"seed-{n}")}} for n in range(batch, batch + 25)]
        client.batch_write_item(RequestItems={table: requests})
    failures: list[str] = []
    until = time.monotonic() + 4

    def write(worker: int) -> None:
        writer = _dynamodb(stack)
        count = 0
        while time.monotonic() < until:
            try:
                if count % 2:
                    writer.put_item(TableName=table, Item=item(f"w{worker}-{count}"))
                else:  # a transaction, as every save of a job is
                    writer.transact_write_items(
                        TransactItems=[{"Put": {"TableName": table, "Item": item(f"w{worker}-{count}")}}]
                    )
            except Exception as error:
                failures.append(f"put: {error}")
            count += 1

    def read() -> None:
        reader = _dynamodb(stack)
        while time.monotonic() < until:
            try:
                reader.query(
                    TableName=table,
                    IndexName="Listing",
                    KeyConditionExpression="#o = :o",
                    ExpressionAttributeNames={"#o": "owner"},
                    ExpressionAttributeValues={":o": {"S": "race"}},
                    Select="COUNT",
                )
                reader.scan(TableName=table, Select="COUNT", Limit=5000)
            except Exception as error:
                failures.append(f"read: {error}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=HUNG)

    assert not failures, failures[:3]


def test_headers_over_the_bound_are_431(stack: DevStack) -> None:
    many = {f"X-Filler-{number}": "x" * 1000 for number in range(12)}  # 12 KB of values: over API Gateway's 10 KB
    assert request(stack.base_url, "GET", "/health", headers=many)[0] == 431
    assert request(stack.base_url, "GET", "/health", headers={"X-Filler": "x" * 70_000})[0] == 431
    assert request(stack.base_url, "GET", "/health", headers={"X-Filler": "x" * 2000})[0] == 200


def test_a_body_over_the_bound_is_413(stack: DevStack) -> None:
    host = stack.base_url.removeprefix("http://")
    promised = f"POST /jobs HTTP/1.1\r\nHost: {host}\r\nContent-Length: {11 * 1024 * 1024}\r\n\r\n".encode()
    received = exchange_raw(stack.base_url, promised)
    assert received.startswith(b"HTTP/1.1 413 "), received[:200]

    chunk = b"x" * (1024 * 1024)
    chunked = b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(11)) + b"0\r\n\r\n"
    status, _ = request(stack.base_url, "POST", "/jobs", chunked, {"Transfer-Encoding": "chunked"})
    assert status == 413


def test_a_chunked_start_reaches_the_function(stack: DevStack) -> None:
    body = start_body("chunked-start")
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    status, answer = request(stack.base_url, "POST", "/jobs", chunked, {"Transfer-Encoding": "chunked"})
    assert (status, json.loads(answer)["jobId"]) == (202, "chunked-start")


def test_a_burst_of_concurrent_starts_is_answered_in_full(stack: DevStack) -> None:
    ready = threading.Barrier(BURST)
    answers: dict[int, Any] = {}

    def start(number: int) -> None:
        ready.wait()
        try:
            status, body = request(stack.base_url, "POST", "/jobs", start_body(f"burst-{number}"), wait=240)
            answers[number] = (status, json.loads(body).get("jobId"))
        except Exception as exc:  # a reset or a refused connection: what the test is about
            answers[number] = exc

    threads = [threading.Thread(target=start, args=(number,)) for number in range(BURST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)  # the API function runs 4 at a time: slow, but all

    failed = {number: answer for number, answer in answers.items() if isinstance(answer, Exception)}
    assert not failed, f"{len(failed)} of {BURST} got no answer: {sorted(set(map(repr, failed.values())))}"
    assert answers == {number: (202, f"burst-{number}") for number in range(BURST)}
