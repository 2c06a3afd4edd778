"""The dashboard's files: what ``asset`` reads, and every name that would leave the folder refused."""

from __future__ import annotations

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
