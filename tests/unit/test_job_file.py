"""Job files (`cairn jobs pull`): what is refused, with which message, and what redaction replaces."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cairn import Done, Next, Pipeline
from cairn.core.errors import InvalidInputError
from cairn.core.models import Checkpoint, JobStatus
from cairn.storage.job_file import JobFile, PulledJob, PulledWrite, read_job_file, redact, unmatched
from cairn.testing.plugin import LocalCairns

GOOD = JobFile(
    pulled_at=1_800_000_000_000,
    pulled_from="https://api.example.com",
    job=PulledJob(
        job_id="j-1",
        pipeline="p",
        status=JobStatus.COMPLETE,
        input={"customer": {"email": "a@b.c"}, "items": [{"email": "x@y.z"}]},
        checkpoint=Checkpoint(next_phase="two", state={"customer": {"email": "a@b.c"}}, created_at=2),
        result={"customer": {"email": "a@b.c"}},
        created_at=1,
        updated_at=3,
    ),
    history=[PulledWrite(entry=Checkpoint(next_phase="one", state={"customer": {"email": "a@b.c"}}, created_at=1))],
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not a cairn job file: it is not JSON"),
        ('{"format": "other"}', 'is not a cairn job file (no "format": "cairn-job"'),
        ("[1, 2]", 'is not a cairn job file (no "format": "cairn-job"'),
        ('{"format": "cairn-job", "version": 9}', "is a cairn job file of version 9; this cairn reads version 1"),
        ('{"format": "cairn-job", "version": 1, "pulledAt": 1}', "is a damaged cairn job file: pulledFrom: Field"),
        ("[" * 100_000, "is not a cairn job file: it is not JSON"),
    ],
)
def test_a_corrupt_or_foreign_file_is_refused_with_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match="^job.json " + message.replace("(", r"\(").replace(")", r"\)")):
        read_job_file(text, name="job.json")


def test_a_file_reads_back_as_it_was_written() -> None:
    assert read_job_file(GOOD.to_json()) == GOOD


def test_redact_replaces_the_path_in_every_state_and_in_list_items() -> None:
    redacted = redact(GOOD, ["state.customer.email", "items.email"])

    text = redacted.to_json()
    assert "a@b.c" not in text
    assert "x@y.z" not in text
    assert redacted.job.input == {"customer": {"email": "[redacted]"}, "items": [{"email": "[redacted]"}]}
    assert redacted.redacted == ["items.email", "state.customer.email"]


def test_a_redaction_path_that_reaches_no_field_is_named_and_not_listed_as_redacted() -> None:
    paths = ["state.customer.email", "state.custmer.email", "items.phone"]

    assert unmatched(GOOD, paths) == ["state.custmer.email", "items.phone"]
    assert redact(GOOD, paths).redacted == ["state.customer.email"]


def test_a_bad_redaction_path_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="give a dotted path"):
        redact(GOOD, ["state..email"])


def test_cairn_local_load_refuses_a_truncated_file_and_loads_nothing(cairn_local: LocalCairns, tmp_path: Path) -> None:
    target = tmp_path / "j-1.cairn-job.json"
    target.write_text(GOOD.to_json()[:200], encoding="utf-8")

    with pytest.raises(InvalidInputError, match="is not a cairn job file: it is not JSON"):
        cairn_local.load(target)
    assert cairn_local.loaded_storage is None
    with pytest.raises(InvalidInputError, match=r"cannot read .*missing\.json"):
        cairn_local.load(tmp_path / "missing.json")


def test_cairn_local_is_still_called_as_before_and_each_call_gets_a_fresh_store(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[dict[str, int]] = Pipeline("count")
    pipeline.phase(name="one")(lambda ctx: Next("two", {"n": 1}))
    pipeline.phase(name="two")(lambda ctx: Done({"n": ctx.state["n"] + 1}))
    first, second = cairn_local(pipeline), cairn_local(pipeline)
    first.start(pipeline, "c-1")
    first.run_until_idle()
    assert first.get("c-1").result == {"n": 2}
    with pytest.raises(Exception, match="c-1"):
        second.get("c-1")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("jobId", "../../etc/passwd"),
        ("jobId", ""),
        ("jobId", "a\x00b"),
        ("jobId", "a\nb"),
        ("jobId", "j" * 5000),
        ("jobId", "café"),
        ("usage", {"tokens": float("nan")}),
        ("usage", {"tokens": float("inf")}),
        ("usage", {"tokens": -3}),
    ],
)
def test_cairn_local_load_refuses_an_id_the_api_refuses_and_usage_that_is_not_a_count(
    cairn_local: LocalCairns, tmp_path: Path, field: str, value: object
) -> None:
    wire = GOOD.to_wire()
    wire["job"][field] = value
    target = tmp_path / "bad.cairn-job.json"
    target.write_text(json.dumps(wire), encoding="utf-8")  # NaN and Infinity as Python's json writes them

    with pytest.raises(
        InvalidInputError, match=rf"^{re.escape(str(target))} is a damaged cairn job file: job\.{field}"
    ):
        cairn_local.load(target)
    assert cairn_local.loaded_storage is None
