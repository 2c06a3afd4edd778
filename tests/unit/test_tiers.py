"""The tiers' lists in tests/conftest.py name files that exist, so a renamed test never slips out of its tier."""

from __future__ import annotations

from tests.conftest import BUNDLE_FILES, LONG_FILES, LONG_FOLDERS, PROPERTY_FILES, TESTS


def test_every_file_and_folder_the_tiers_name_exists() -> None:
    files = [*LONG_FILES, *BUNDLE_FILES, *PROPERTY_FILES]
    assert [name for name in files if not (TESTS / name).is_file()] == []
    assert [name for name in LONG_FOLDERS if not (TESTS / name).is_dir()] == []
