"""``cairn dev`` serves the dashboard: its page at ``/``, its files at ``/assets/...``; the API's routes come first."""

from __future__ import annotations

import base64
import gzip
import http.client
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from cairn.dashboard import assets
from cairn.dev.environments import Outcome
from cairn.dev.gateway import ApiGateway
from cairn.dev.lambda_service import LambdaService
from cairn.dev.logs import DevLog
from cairn.dev.models import Route
from cairn.testing.api_events import LOCAL_IDENTITY

PAGE = "<!doctype html><title>cairn dashboard</title><script src='/assets/app.js'></script>"


class Function:
    """A stand-in API function: answers every event with its route key, and keeps the events."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def invoke(self, name: str, event: dict[str, Any]) -> Outcome:
        self.events.append(event)
        body = json.dumps({"routeKey": event["routeKey"]})
        return Outcome({"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": body})


@pytest.fixture
def static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The dashboard's files, from a folder of this test's."""
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "app.js").write_text("console.log('cairn');\n")
    (tmp_path / "app.css").write_text("body { margin: 0; }\n")
    (tmp_path / "notes.md").write_text("not a kind of file the dashboard has\n")
    monkeypatch.setattr(assets, "static_folder", lambda: tmp_path)
    return tmp_path


def serve(routes: list[Route], function: Function) -> ApiGateway:
    """The gateway on a free port in front of the stand-in function (not started)."""
    lambdas = cast(LambdaService, function)
    return ApiGateway(routes, "api", lambdas, DevLog(io.StringIO()), identity=LOCAL_IDENTITY, port=0)


@pytest.fixture
def function() -> Function:
    return Function()


@pytest.fixture
def gateway(static: Path, function: Function) -> Iterator[ApiGateway]:
    routes = [Route("GET", "/jobs", False), Route("GET", "/jobs/{jobId}", False), Route("GET", "/health", True)]
    served = serve(routes, function)
    served.start()
    yield served
    served.stop()


def fetch(
    gateway: ApiGateway, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request, its path sent exactly as given."""
    host, port = gateway.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)  # a safety net: a hung server fails
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_the_page_is_served_at_the_root_and_its_files_under_assets(gateway: ApiGateway, function: Function) -> None:
    for path in ("/", "/index.html", "/?job=invoice-1"):
        status, headers, body = fetch(gateway, path)
        assert status == 200, path
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert body.decode() == PAGE
        assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = fetch(gateway, "/assets/app.js")
    assert (status, headers["Content-Type"]) == (200, "text/javascript; charset=utf-8")
    assert body == b"console.log('cairn');\n"
    assert fetch(gateway, "/assets/app.css")[1]["Content-Type"] == "text/css; charset=utf-8"
    status, headers, body = fetch(gateway, "/", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["Content-Length"] == str(len(PAGE))
    assert function.events == []  # the API function saw none of these


@pytest.mark.parametrize(
    "path",
    [
        "/assets/missing.js",
        "/assets/",
        "/assets/notes.md",  # not a kind of file the dashboard serves
        "/assets/../index.html",
        "/assets/%2e%2e/index.html",
        "/assets//etc/passwd",
        "/assets/.hidden.js",
        "/app.js",  # files are under /assets/ only
        "/elsewhere",
    ],
)
def test_anything_else_is_the_gateways_404(gateway: ApiGateway, path: str) -> None:
    status, headers, body = fetch(gateway, path)

    assert status == 404
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"message": "Not Found"}


def test_the_page_is_only_for_a_get(gateway: ApiGateway) -> None:
    assert fetch(gateway, "/", method="POST")[0] == 404
    assert fetch(gateway, "/assets/app.js", method="DELETE")[0] == 404


def test_the_api_routes_come_first(static: Path, function: Function) -> None:
    routes = [Route("GET", "/", True), Route("GET", "/jobs", False)]
    served = serve(routes, function)
    served.start()
    try:
        status, _, body = fetch(served, "/")
        assert (status, json.loads(body)) == (200, {"routeKey": "GET /"})
        status, _, body = fetch(served, "/jobs")
        assert (status, json.loads(body)) == (200, {"routeKey": "GET /jobs"})
        assert fetch(served, "/assets/app.js")[0] == 200  # no route of its own: the dashboard's file
    finally:
        served.stop()
    assert [event["routeKey"] for event in function.events] == ["GET /", "GET /jobs"]


def test_the_packaged_page_is_read_from_the_installed_package() -> None:
    folder = assets.static_folder()
    assert str(folder).endswith("cairn/dashboard/static")
    found = assets.asset("")
    assert found is not None
    assert found[1] == "text/html; charset=utf-8"
    assert assets.asset("/") == found


def jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT with ``claims`` (the local gateway reads claims; it has no issuer to verify against)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def test_a_bearer_token_is_the_caller_as_a_jwt_authorizer_names_it(gateway: ApiGateway, function: Function) -> None:
    token = jwt({"sub": "user-1", "iss": "https://issuer.example", "email": "a@example.com"})

    status, _, _ = fetch(gateway, "/jobs", headers={"Authorization": f"Bearer {token}"})

    assert status == 200
    authorizer = function.events[-1]["requestContext"]["authorizer"]
    assert authorizer == {
        "jwt": {"claims": {"sub": "user-1", "iss": "https://issuer.example", "email": "a@example.com"}, "scopes": None}
    }


def test_without_a_token_the_caller_is_the_local_identity(gateway: ApiGateway, function: Function) -> None:
    fetch(gateway, "/jobs")

    assert function.events[-1]["requestContext"]["authorizer"]["iam"]["userArn"] == LOCAL_IDENTITY


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer not-a-jwt",
        "Bearer a.b",
        "Bearer e30.e30.sig",  # {} claims: no subject
        f"Bearer {jwt({'iss': 'https://issuer.example'})}",
        "Bearer x.!!!.y",
    ],
)
def test_a_token_that_is_no_usable_jwt_is_refused_before_the_function(
    gateway: ApiGateway, function: Function, authorization: str
) -> None:
    status, _, body = fetch(gateway, "/jobs", headers={"Authorization": authorization})

    assert (status, json.loads(body)) == (401, {"message": "Unauthorized"})
    assert function.events == []


def test_a_public_route_ignores_the_token(gateway: ApiGateway, function: Function) -> None:
    status, _, _ = fetch(gateway, "/health", headers={"Authorization": "Bearer not-a-jwt"})

    assert status == 200
    assert "authorizer" not in function.events[-1]["requestContext"]


def test_cairn_devs_gateway_gzips_a_file_for_a_browser_and_answers_a_reload_with_a_304(
    static: Path, function: Function
) -> None:
    style = "body { margin: 0; }\n" * 200
    (static / "app.css").write_text(style)
    served = serve([], function)
    served.start()
    try:
        status, headers, body = fetch(served, "/assets/app.css", headers={"Accept-Encoding": "gzip"})
        assert (status, headers["Content-Encoding"], headers["Vary"]) == (200, "gzip", "Accept-Encoding")
        assert gzip.decompress(body).decode() == style
        assert headers["Content-Length"] == str(len(body))

        status, again, body = fetch(served, "/assets/app.css", headers={"If-None-Match": headers["ETag"]})
        assert (status, body, again["ETag"]) == (304, b"", headers["ETag"])

        status, plain, body = fetch(served, "/assets/app.css")
        assert (status, body.decode(), "Content-Encoding" in plain) == (200, style, False)
    finally:
        served.stop()
