"""A job id's rule has one home (cairn.core.ids): the listing's prefix follows it, the dashboard's copy matches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cairn.aws.listing import JobFilter
from cairn.core.errors import InvalidInputError
from cairn.core.ids import JOB_ID_PATTERN, validate_job_id

DASHBOARD_IDS = Path(__file__).resolve().parents[2] / "layers" / "cairn" / "cairn" / "dashboard" / "static" / "ids.js"


def test_the_dashboards_copy_of_the_job_id_rule_is_the_apis() -> None:
    (copy,) = re.findall(r"export const JOB_ID_PATTERN = /(.+)/;", DASHBOARD_IDS.read_text(encoding="utf-8"))
    assert copy == JOB_ID_PATTERN.pattern


@pytest.mark.parametrize("prefix", ["job-1", "J", "a.b_c-d", "x" * 128])
def test_every_job_id_is_a_prefix_the_listing_takes(prefix: str) -> None:
    assert validate_job_id(prefix) == prefix
    assert JobFilter(id_prefix=prefix).id_prefix == prefix


@pytest.mark.parametrize("prefix", ["-job", ".x", "job 1", "jöb", "", "x" * 129])
def test_what_no_job_id_starts_with_is_refused_by_both(prefix: str) -> None:
    with pytest.raises(InvalidInputError):
        validate_job_id(prefix)
    with pytest.raises(InvalidInputError):
        JobFilter(id_prefix=prefix)
