"""The deployed API serves the dashboard itself (``GET /dashboard``, ``GET /assets/{file}``), unsigned."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from cairn.dashboard.assets import static_folder
from cairn.testing.api_events import http_api_event, jwt_caller, response_body
from tests.functional.api_client import API as API_FUNCTION
from tests.functional.api_client import Api

ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example"


def test_the_page_is_served_without_a_caller_as_packaged_with_its_security_headers(api: Api) -> None:
    """The page is the package's file naming its script and stylesheet by content hash: nothing of the
    deployment (no secret) is put in it, and it is revalidated on each load (a deploy is seen at once)."""
    reply = api.client.get("/dashboard", owner=None)

    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert reply.headers["Cache-Control"] == "no-cache"
    hashed = re.compile(r"assets/app\.[0-9a-f]{16}\.(js|css)")
    assert sorted(hashed.findall(reply.body)) == ["css", "js"]
    assert hashed.sub(r"assets/app.\1", reply.body) == static_folder().joinpath("index.html").read_text()
    policy = reply.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert reply.headers["X-Frame-Options"] == "DENY"


def test_the_pages_one_script_and_stylesheet_are_cached_for_good_and_a_stale_hash_is_a_404(api: Api) -> None:
    page = api.client.get("/dashboard", owner=None).body
    names = re.findall(r"assets/(app\.[0-9a-f]{16}\.(?:js|css))", page)

    for name in names:
        event = http_api_event("GET", f"/assets/{name}", caller=None, headers={"accept-encoding": "gzip"})
        served = api.stack.call(API_FUNCTION, event)
        assert served["statusCode"] == 200
        assert served["headers"]["Cache-Control"] == "public, max-age=31536000, immutable"
        assert served["headers"]["Content-Encoding"] == "gzip"
    script = next(name for name in names if name.endswith(".js"))
    assert api.client.get(f"/assets/{script}", owner=None).body.count("(() => {") >= len(MODULES)
    stale = api.client.get("/assets/app.0123456789abcdef.js", owner=None)
    assert (stale.status, stale.code) == (404, "not_found")


@pytest.mark.parametrize(("name", "content_type"), [("app.js", "text/javascript"), ("app.css", "text/css")])
def test_its_files_are_served_beside_it(api: Api, name: str, content_type: str) -> None:
    reply = api.client.get(f"/assets/{name}", owner=None)

    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith(content_type)
    assert reply.body == static_folder().joinpath(name).read_text()


MODULES = sorted(path.name for path in Path(str(static_folder())).glob("*.js"))
"""The modules of the dashboard's script (app.js, the entry, imports the others by relative URL)."""


@pytest.mark.parametrize("name", MODULES)
def test_every_module_of_its_script_is_served_as_a_script_the_page_may_run(api: Api, name: str) -> None:
    reply = api.client.get(f"/assets/{name}", owner=None)

    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert "script-src 'self'" in reply.headers["Content-Security-Policy"]
    assert reply.headers["X-Content-Type-Options"] == "nosniff"  # a module is run only when served as a script
    assert reply.body == static_folder().joinpath(name).read_text()


@pytest.mark.parametrize("name", ["missing.js", ".hidden.js", "proxy.py", "index.htm", "%2e%2e%2fapi.py"])
def test_a_file_it_does_not_have_is_a_404_not_a_500(api: Api, name: str) -> None:
    reply = api.client.get(f"/assets/{name}", owner=None)

    assert reply.status == 404
    assert reply.code == "not_found"


def test_a_stage_prefix_keeps_the_page_public(api: Api) -> None:
    event = http_api_event("GET", "/prod/dashboard", caller=None)
    event["requestContext"]["stage"] = "prod"

    reply = api.client.send(event)

    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/html")


def test_public_means_the_page_only_the_job_routes_still_need_the_callers_token(api: Api) -> None:
    assert api.client.get("/jobs", owner=None).status == 401
    signed_in = api.client.get("/jobs", owner=jwt_caller("user-1", ISSUER))
    assert signed_in.status == 200
    assert signed_in.body["jobs"] == []


def test_the_dashboard_routes_stay_out_of_the_openapi_document(api: Api) -> None:
    paths = api.call("openapi").body["paths"]

    assert "/dashboard" not in paths
    assert not any(path.startswith("/assets") for path in paths)


def test_a_file_is_gzipped_for_a_browser_and_a_reload_with_its_etag_is_a_304(api: Api) -> None:
    """As API Gateway passes it on: the gzipped bytes base64 in the event, the headers as the function set them."""
    css = static_folder().joinpath("app.css").read_bytes()
    event = http_api_event("GET", "/assets/app.css", headers={"accept-encoding": "gzip, deflate, br"})

    first = api.stack.call(API_FUNCTION, event)

    assert first["statusCode"] == 200
    assert first["isBase64Encoded"] is True
    assert first["headers"]["Content-Encoding"] == "gzip"
    assert first["headers"]["Vary"] == "Accept-Encoding"
    assert gzip.decompress(response_body(first)) == css
    etag = first["headers"]["ETag"]
    again = http_api_event("GET", "/assets/app.css", headers={"accept-encoding": "gzip", "if-none-match": etag})

    second = api.stack.call(API_FUNCTION, again)

    assert (second["statusCode"], response_body(second)) == (304, b"")
    assert second["headers"]["ETag"] == etag
