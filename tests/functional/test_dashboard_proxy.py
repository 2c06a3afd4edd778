"""``cairn dashboard``: the dashboard beside a deployed API, each API call forwarded and signed with SigV4.

The deployed API is the stand-in of tests/functional/jobs_server.py (the API function behind a real
HTTP server on the local stack); the signatures that reach it are computed again and compared.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.credentials import Credentials

from cairn.cli import main
from cairn.client import ApiClient, SigV4Auth
from cairn.client.dashboard_proxy import KEY_COOKIE, KEY_HEADER, DashboardProxy
from cairn.dashboard import assets
from cairn.dev.process import free_port
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.functional.jobs_server import JobsServer, sigv4_signature_is_valid

SESSION_TOKEN = "session-token"
CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SESSION_TOKEN)
PAGE = "<!doctype html><title>cairn dashboard</title>"
ROOT = Path(__file__).resolve().parents[2]
HUNG = 120.0
"""Seconds after which a wait here calls the server hung: a safety net (a busy machine is slow, never this slow)."""


@pytest.fixture
def api(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[JobsServer]:
    """The stand-in for the deployed API."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    with JobsServer(stack) as server:
        yield server


@pytest.fixture
def static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "app.js").write_text("// the dashboard\n")
    monkeypatch.setattr(assets, "static_folder", lambda: tmp_path)
    return tmp_path


@pytest.fixture
def proxy(api: JobsServer, static: Path) -> Iterator[DashboardProxy]:
    client = ApiClient(api.url, auth=SigV4Auth("us-east-1", credentials=CREDENTIALS))
    with DashboardProxy(client, port=0) as served:
        yield served


Answer = tuple[int, dict[str, str], bytes]


def keyed(proxy: DashboardProxy, **headers: str) -> dict[str, str]:
    """The headers of the page's own call: its session key cookie, and ``headers``."""
    return {"Cookie": f"{KEY_COOKIE}={proxy.key}", **headers}


def fetch(url: str, path: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None) -> Answer:
    """One request to the server at ``url``, as a page would send it."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=HUNG)
    data = None if body is None else json.dumps(body).encode()
    sent = {**({"Content-Type": "application/json"} if data else {}), **(headers or {})}
    try:
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_the_pages_calls_reach_the_api_signed_and_come_back_as_answered(proxy: DashboardProxy, api: JobsServer) -> None:
    origin = keyed(proxy, Origin=proxy.url, **{"Sec-Fetch-Site": "same-origin"})
    state = {"document": "invoice.txt"}

    status, headers, body = fetch(
        proxy.url, "/jobs", "POST", {"pipeline": "document-intake", "jobId": "signed-1", "state": state}, origin
    )
    assert status == 202, body
    assert headers["Location"] == "/jobs/signed-1"
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["jobId"] == "signed-1"
    api.run()
    status, _, body = fetch(proxy.url, "/jobs?status=complete&limit=5", headers=keyed(proxy))
    assert status == 200
    assert [job["jobId"] for job in json.loads(body)["jobs"]] == ["signed-1"]
    status, _, body = fetch(proxy.url, "/pipelines", headers=keyed(proxy))
    assert [pipeline["name"] for pipeline in json.loads(body)["pipelines"]] == sorted(PIPELINES.names)
    status, _, body = fetch(proxy.url, "/jobs/signed-1/retry", "POST", {"mode": "full"}, origin)
    assert status == 202

    posted, listed, pipelines, retried = api.seen
    assert (posted.method, posted.target) == ("POST", "/jobs")
    assert listed.target == "/jobs?status=complete&limit=5"
    assert pipelines.target == "/pipelines"
    assert retried.target == "/jobs/signed-1/retry"
    for seen in api.seen:
        assert seen.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert seen.headers["x-amz-security-token"] == SESSION_TOKEN
        assert sigv4_signature_is_valid(seen, CREDENTIALS), seen.target
        assert "origin" not in seen.headers  # only the body and its type are passed on
        assert "cookie" not in seen.headers  # the session's key stays here
    assert json.loads(posted.body)["jobId"] == "signed-1"
    assert posted.headers["content-type"] == "application/json"


def test_an_api_call_without_the_sessions_key_is_refused_and_the_printed_address_gives_it(
    proxy: DashboardProxy, api: JobsServer
) -> None:
    for headers in ({}, {"Cookie": f"{KEY_COOKIE}=guessed"}, {KEY_HEADER: "guessed"}, {"Cookie": "a=b; c"}):
        status, _, body = fetch(proxy.url, "/jobs", headers=headers)  # another local process, say
        assert status == 401, headers
        assert "Open the dashboard at the address cairn dashboard printed" in json.loads(body)["error"]["message"]
    assert api.seen == []  # nothing was signed
    assert "Set-Cookie" not in fetch(proxy.url, "/")[1]
    assert "Set-Cookie" not in fetch(proxy.url, "/?key=guessed")[1]

    status, headers, _ = fetch(proxy.url, proxy.address.removeprefix(proxy.url))
    assert status == 200
    cookie = headers["Set-Cookie"]
    assert cookie == f"{KEY_COOKIE}={proxy.key}; HttpOnly; SameSite=Strict; Path=/"
    assert fetch(proxy.url, "/jobs", headers={"Cookie": cookie.split(";")[0]})[0] == 200
    assert fetch(proxy.url, "/jobs", headers={KEY_HEADER: proxy.key})[0] == 200  # a script's header
    assert len(proxy.key) >= 32


def test_an_api_error_comes_back_as_the_api_said_it(proxy: DashboardProxy, api: JobsServer) -> None:
    status, _, body = fetch(proxy.url, "/jobs/nobody-s-job", headers=keyed(proxy))

    assert status == 404
    assert json.loads(body)["error"]["code"] == "not_found"
    assert len(api.seen) == 1


def test_the_dashboards_files_are_served_here_and_nothing_else(proxy: DashboardProxy, api: JobsServer) -> None:
    status, headers, body = fetch(proxy.url, "/")
    assert (status, headers["Content-Type"], body.decode()) == (200, "text/html; charset=utf-8", PAGE)
    assert fetch(proxy.url, "/assets/app.js")[2] == b"// the dashboard\n"
    for path in ("/assets/missing.js", "/assets/../index.html", "/admin", "/jobsx"):
        status, _, body = fetch(proxy.url, path)
        assert status == 404, path
        assert json.loads(body)["error"]["code"] == "not_found"
    assert api.seen == []


def test_cairn_dashboard_gzips_a_file_for_a_browser_and_answers_a_reload_with_a_304(
    proxy: DashboardProxy, api: JobsServer, static: Path
) -> None:
    script = "export const answer = 42;\n" * 100
    (static / "app.js").write_text(script)

    status, headers, body = fetch(proxy.url, "/assets/app.js", headers={"Accept-Encoding": "gzip, br"})
    assert (status, headers["Content-Encoding"]) == (200, "gzip")
    assert gzip.decompress(body).decode() == script
    status, again, body = fetch(proxy.url, "/assets/app.js", headers={"If-None-Match": headers["ETag"]})
    assert (status, body) == (304, b"")
    assert again["ETag"] == headers["ETag"]
    assert api.seen == []


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example:3001"},  # DNS rebinding: another name for 127.0.0.1
        {"Origin": "https://evil.example"},  # another site's page in the same browser
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
    ids=["host", "origin", "null-origin", "cross-site"],
)
def test_a_request_that_is_not_from_its_own_page_is_refused(
    proxy: DashboardProxy, api: JobsServer, headers: dict[str, str]
) -> None:
    status, _, body = fetch(proxy.url, "/jobs/anything/cancel", "POST", headers=keyed(proxy, **headers))

    assert status == 403
    assert json.loads(body)["error"]["code"] == "forbidden"
    assert fetch(proxy.url, "/", headers=headers)[0] == 403
    assert api.seen == []


def test_an_api_that_does_not_answer_is_a_502_with_the_reason(static: Path) -> None:
    client = ApiClient(f"http://127.0.0.1:{free_port()}", auth=SigV4Auth("us-east-1", credentials=CREDENTIALS))
    with DashboardProxy(client, port=0) as proxy:
        status, _, body = fetch(proxy.url, "/jobs", headers=keyed(proxy))

    assert status == 502
    error = json.loads(body)["error"]
    assert error["code"] == "api_unreachable"
    assert "cannot reach the cairn API" in error["message"]


def without_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "CAIRN_API"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_the_command_needs_an_api_and_credentials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    without_credentials(monkeypatch, tmp_path)

    assert main(["dashboard"]) == 2
    assert capsys.readouterr().err.startswith("cairn dashboard: error: --api URL is required")
    assert main(["dashboard", "--api", "https://abc123.execute-api.us-east-1.amazonaws.com"]) == 2
    assert "no AWS credentials found to sign the request" in capsys.readouterr().err
    assert main(["dashboard", "--api", "ftp://example.com", "--region", "us-east-1"]) == 2
    assert "must be http:// or https://" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["dashboard", "--port", "70000"])
    assert exited.value.code == 2


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_cairn_dashboard_serves_until_ctrl_c(api: JobsServer, tmp_path: Path, stop: signal.Signals) -> None:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "layers" / "cairn"),
        "AWS_ACCESS_KEY_ID": CREDENTIALS.access_key,
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS.secret_key,
        "AWS_SESSION_TOKEN": SESSION_TOKEN,
        "CAIRN_API": api.url,
    }
    command = [sys.executable, "-m", "cairn", "dashboard", "--port", str(port), "--region", "us-east-1"]
    log = tmp_path / "dashboard.log"
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + HUNG
        while (found := re.search(rf"{re.escape(url)}/\?key=([\w-]+) ", log.read_text())) is None:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"no address in {HUNG:g}s:\n{log.read_text()}"
            time.sleep(0.1)
        status, _, body = fetch(url, "/health", headers={KEY_HEADER: found.group(1)})
        assert (status, json.loads(body)["status"]) == (200, "ok")
        assert sigv4_signature_is_valid(api.seen[-1], CREDENTIALS)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=HUNG)
    assert code == 0
    printed = log.read_text()
    assert (
        f"cairn dashboard: {url}/?key={found.group(1)} for the API at {api.url} (IAM, signed for us-east-1)" in printed
    )
    assert "Traceback" not in printed
