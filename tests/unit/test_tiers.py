"""The tiers' lists in tests/conftest.py name files that exist, so a renamed test never slips out of its tier."""

from __future__ import annotations

from tests.conftest import BUNDLE_FILES, LONG_FILES, LONG_FOLDERS, LONG_TESTS, PROPERTY_FILES, TESTS


def test_every_file_and_folder_the_tiers_name_exists() -> None:
    files = [*LONG_FILES, *BUNDLE_FILES, *PROPERTY_FILES, *(test.split("::", 1)[0] for test in LONG_TESTS)]
    assert [name for name in files if not (TESTS / name).is_file()] == []
    assert [name for name in LONG_FOLDERS if not (TESTS / name).is_dir()] == []


def test_every_single_long_test_names_a_test_of_its_file() -> None:
    for test in LONG_TESTS:
        path, name = test.split("::", 1)
        assert f"def {name}(" in (TESTS / path).read_text(encoding="utf-8"), test
