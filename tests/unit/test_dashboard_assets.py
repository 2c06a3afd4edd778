"""The dashboard's files: what ``asset`` reads, and every name that would leave the folder refused."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from cairn.dashboard import assets


@pytest.fixture
def static(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "index.html").write_text("<title>cairn dashboard</title>")
    (tmp_path / "icons").mkdir()
    (tmp_path / "icons" / "run.svg").write_text("<svg/>")
    (tmp_path / "README").write_text("no suffix")
    (tmp_path.parent / "outside.css").write_text("secret {}")
    monkeypatch.setattr(assets, "static_folder", lambda: tmp_path)
    return tmp_path


def test_the_page_for_an_empty_path_and_files_by_name(static: Path) -> None:
    page = (b"<title>cairn dashboard</title>", "text/html; charset=utf-8")
    assert assets.asset("") == page
    assert assets.asset("/") == page
    assert assets.asset("index.html") == page
    assert assets.asset("icons/run.svg") == (b"<svg/>", "image/svg+xml")


@pytest.mark.parametrize(
    "path",
    [
        "../outside.css",
        "icons/../../outside.css",
        "icons/../index.html",
        "/index.html",
        "//index.html",
        str(Path(__file__).resolve()),
        "icons\\run.svg",
        "icons//run.svg",
        "./index.html",
        ".index.html",
        "index.html\x00.css",
        "README",
        "missing.js",
        "icons",
        "icons/",
    ],
)
def test_a_name_that_leaves_the_folder_hides_or_is_unknown_is_no_asset(static: Path, path: str) -> None:
    assert assets.asset(path) is None


def test_urls_map_to_the_page_and_assets() -> None:
    assert assets.is_dashboard_path("/")
    assert assets.is_dashboard_path("/index.html")
    assert assets.is_dashboard_path("/assets/app.js")
    assert not assets.is_dashboard_path("/jobs")
    assert not assets.is_dashboard_path("/app.js")


def test_the_url_of_a_file(static: Path) -> None:
    assert assets.asset_at("/assets/icons/run.svg") == (b"<svg/>", "image/svg+xml")
    assert assets.asset_at("/") == assets.asset_at("/index.html") == assets.asset("")
    assert assets.asset_at("/assets/") is None
    assert assets.asset_at("/jobs") is None


# --- what a server sends: validators and compression (assets.reply) ----------------------------------------------

STYLE = ("body { color: #222; }\n" * 100).encode()  # 2.2 KB of text: worth compressing
CSS = "text/css; charset=utf-8"


def test_a_file_is_sent_whole_with_its_validator_to_a_client_that_asks_for_no_encoding() -> None:
    sent = assets.reply((STYLE, CSS), {})

    assert (sent.status, sent.body) == (200, STYLE)
    assert sent.headers["ETag"] == assets.etag(STYLE)
    assert sent.headers["ETag"].startswith('W/"')
    assert sent.headers["Vary"] == "Accept-Encoding"
    assert sent.headers["Cache-Control"] == "no-cache"
    assert sent.headers["Content-Type"] == CSS
    assert "Content-Encoding" not in sent.headers


@pytest.mark.parametrize("accept", ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.8", "*", "GZIP"])
def test_text_of_a_kilobyte_or_more_is_gzipped_for_a_client_that_accepts_it(accept: str) -> None:
    sent = assets.reply((STYLE, CSS), {"Accept-Encoding": accept})

    assert sent.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(sent.body) == STYLE
    assert len(sent.body) < len(STYLE) / 5
    assert sent.body == assets.reply((STYLE, CSS), {"accept-encoding": accept}).body  # the same bytes each time


@pytest.mark.parametrize("accept", ["gzip;q=0", "br", "identity", "*;q=0", "gzip;q=zero", ""])
def test_no_gzip_where_the_client_refuses_it(accept: str) -> None:
    sent = assets.reply((STYLE, CSS), {"Accept-Encoding": accept})

    assert (sent.body, "Content-Encoding" in sent.headers) == (STYLE, False)


def test_a_small_file_and_an_image_are_sent_as_they_are() -> None:
    small = assets.reply((b"a{}", CSS), {"Accept-Encoding": "gzip"})
    image = assets.reply((bytes(4096), "image/png"), {"Accept-Encoding": "gzip"})

    assert "Content-Encoding" not in small.headers
    assert "Content-Encoding" not in image.headers


@pytest.mark.parametrize(
    "if_none_match",
    ["{tag}", "{opaque}", '"other", {tag}', "*", " {tag} "],
    ids=["weak", "strong-form", "in-a-list", "any", "spaces"],
)
def test_a_reload_naming_the_files_validator_is_a_304_without_a_body(if_none_match: str) -> None:
    tag = assets.etag(STYLE)
    header = if_none_match.format(tag=tag, opaque=tag.removeprefix("W/"))

    sent = assets.reply((STYLE, CSS), {"If-None-Match": header, "Accept-Encoding": "gzip"})

    assert (sent.status, sent.body) == (304, b"")
    assert sent.headers["ETag"] == tag


def test_a_changed_file_has_a_new_validator_and_is_sent_again() -> None:
    old_tag = assets.etag(STYLE)

    sent = assets.reply((STYLE + b"p{}\n", CSS), {"If-None-Match": old_tag})

    assert sent.status == 200
    assert sent.headers["ETag"] != old_tag


def test_the_page_preloads_every_module_so_the_browser_fetches_them_at_once() -> None:
    page = assets.asset_at("/")
    assert page is not None
    preloaded = re.findall(r'<link rel="modulepreload" href="assets/([^"]+)">', page[0].decode())
    modules = sorted(item.name for item in assets.static_folder().iterdir() if item.name.endswith(".js"))

    assert preloaded == modules
    assert page[0].decode().index("modulepreload") < page[0].decode().index('<script type="module"')
    for name in preloaded:
        served = assets.asset_at(f"/assets/{name}")
        assert served is not None
        assert served[1].startswith("text/javascript")
