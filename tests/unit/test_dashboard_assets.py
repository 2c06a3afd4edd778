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
    page = assets.Asset(b"<title>cairn dashboard</title>", "text/html; charset=utf-8")
    assert assets.asset("") == page
    assert assets.asset("/") == page
    assert assets.asset("index.html") == page
    assert assets.asset("icons/run.svg") == assets.Asset(b"<svg/>", "image/svg+xml")


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
    assert assets.asset_at("/assets/icons/run.svg") == assets.Asset(b"<svg/>", "image/svg+xml")
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


def test_the_page_loads_its_code_and_its_style_by_content_hash_each_cached_for_good() -> None:
    page = assets.asset_at("/")
    assert page is not None
    text = page.content.decode()
    scripts = re.findall(r'<script[^>]*src="assets/([^"]+)"', text)
    styles = re.findall(r'<link rel="stylesheet" href="assets/([^"]+)"', text)

    assert "modulepreload" not in text
    assert len(scripts) == len(styles) == 1
    assert re.fullmatch(r"app\.[0-9a-f]{16}\.js", scripts[0])
    assert re.fullmatch(r"app\.[0-9a-f]{16}\.css", styles[0])
    script, style = assets.asset_at(f"/assets/{scripts[0]}"), assets.asset_at(f"/assets/{styles[0]}")
    assert script is not None
    assert style is not None
    assert script.content_type.startswith("text/javascript")
    style_file, module = assets.asset("app.css"), assets.asset("app.js")
    assert style_file is not None
    assert module is not None
    assert style.content == style_file.content
    for hashed in (script, style):
        assert assets.reply(hashed, {}).headers["Cache-Control"] == "public, max-age=31536000, immutable"
    for revalidated in (page, style_file, module):  # the page, and each file by its own name
        assert assets.reply(revalidated, {}).headers["Cache-Control"] == "no-cache"


def test_a_changed_module_or_stylesheet_is_a_new_hash_and_the_old_one_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "index.html").write_text(
        '<link rel="stylesheet" href="assets/app.css"><script type="module" src="assets/app.js"></script>'
    )
    (tmp_path / "app.js").write_text('import { h } from "./dom.js";\nh();\n')
    (tmp_path / "dom.js").write_text("export function h() {}\n")
    (tmp_path / "app.css").write_text("body {}\n")
    monkeypatch.setattr(assets, "static_folder", lambda: tmp_path)

    def hashed_names() -> list[str]:
        page = assets.asset("")
        assert page is not None
        return re.findall(r'assets/(app\.[0-9a-f]+\.(?:js|css))"', page.content.decode())

    before = hashed_names()
    (tmp_path / "dom.js").write_text("export function h() { return 1; }\n")  # a module the entry imports
    after_module = hashed_names()
    (tmp_path / "app.css").write_text("body { margin: 0; }\n")
    after_style = hashed_names()

    assert before[1] != after_module[1]
    assert before[0] == after_module[0]
    assert after_module[0] != after_style[0]
    assert assets.asset(before[1]) is None
    assert assets.asset(before[0]) is None
    current = assets.asset(after_style[1])
    assert current is not None
    assert b"return 1;" in current.content
    assert assets.asset("app.0123456789abcdef.js") is None  # a hash that never was
