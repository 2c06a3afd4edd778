"""The document-intake pipeline end to end on MemoryStorage, including a crash and a resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn import InvalidInputError, Job, JobStatus, MemoryStorage, run_pipeline
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from document_intake import pipeline as intake
from document_intake import sources
from document_intake.fields import PageFields, extract_fields
from document_intake.pipeline import pipeline
from document_intake.sources import SAMPLES_DIR, read_document, register_reader
from document_intake.state import IntakeState
from document_intake.watch import WatchedStorage
from tests.support import counters, job_of, make_scheduler, usage_without_transitions


def run_job(state: dict[str, Any], storage: Storage | None = None, job_id: str = "doc-1") -> Job:
    """Run one job to the end on an inline scheduler and return it."""
    storage = storage or MemoryStorage()
    scheduler = make_scheduler(pipeline, storage)
    run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state=state)
    scheduler.drain()
    return job_of(storage, job_id)


def crash_after_saves(inner: Storage, count: int) -> WatchedStorage:
    """``inner``, but the process "dies" right after its ``count``-th mid-phase checkpoint is written."""
    saves = 0

    def on_save(job: Job) -> None:
        nonlocal saves
        saves += 1
        if saves == count:
            raise SimulatedCrash(f"process died right after save #{count}")

    return WatchedStorage(inner, on_save=on_save)


def totals(job: Job) -> dict[str, str]:
    return {key: amount["value"] for key, amount in job.result["fields"]["totals"].items()}


def labelled_dates(job: Job) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for item in job.result["fields"]["dates"]:
        if item["label"]:
            found.setdefault(item["label"], []).append(item["value"])
    return found


def extraction_logs(job: Job) -> list[str]:
    return [entry.message for entry in job.log if entry.message.startswith("Extracted page")]


# The samples ---------------------------------------------------------------------------------------


def test_the_phases_are_registered_in_order() -> None:
    assert pipeline.name == "document-intake"
    assert pipeline.phase_names == ["fetch", "split", "extract", "extract_page", "publish"]


@pytest.mark.parametrize("document", ["invoice.txt", "contract.txt", "report.txt"])
def test_a_map_over_the_pages_gives_the_result_of_the_page_by_page_extraction(document: str) -> None:
    one_by_one = run_job({"document": document}, job_id="sequential")
    mapped = run_job({"document": document, "page_concurrency": 2}, job_id="mapped")

    assert mapped.status == JobStatus.COMPLETE, mapped.error
    assert mapped.result == one_by_one.result
    assert usage_without_transitions(mapped.usage) == usage_without_transitions(one_by_one.usage)
    # page by page: fetch, split, extract and publish leave their phase; the map: fetch, split's map
    # and each of its items, publish
    assert one_by_one.usage["transitions"] == 4
    assert mapped.usage["transitions"] == 3 + mapped.result["document"]["pages"]
    assert [record.phase for record in mapped.phases] == ["fetch", "split", "publish"]
    assert [record.outcome for record in mapped.phases] == ["next", "map", "done"]
    assert sorted(extraction_logs(mapped)) == sorted(
        f"Extracted page {number}: {message.split(': ')[1]}"
        for number, message in enumerate(extraction_logs(one_by_one), start=1)
    )


def test_invoice_sample() -> None:
    job = run_job({"document": "invoice.txt"})
    assert job.status == JobStatus.COMPLETE, job.error
    result = job.result
    assert result["document"] == {
        "title": "INVOICE",
        "kind": "invoice",
        "kind_reason": 'first-page heading "INVOICE"',
        "source": "invoice.txt",
        "pages": 3,
        "characters": len((SAMPLES_DIR / "invoice.txt").read_text()),
    }
    assert result["fields"]["references"] == {
        "invoice": "INV-2025-0342",
        "purchase_order": "PO-77120",
        "customer": "HPL-1088",
    }
    assert totals(job) == {
        "subtotal": "10544.00",
        "loyalty_discount": "-527.20",
        "sales_tax": "801.34",
        "total": "10818.14",
        "amount_paid": "0.00",
        "balance_due": "10818.14",
    }
    assert labelled_dates(job) == {
        "Invoice Date": ["2025-03-03"],
        "Due Date": ["2025-04-02"],
        "Service Period": ["2025-02-01", "2025-02-28"],
    }
    assert result["fields"]["parties"] == [
        {"role": "Bill To", "name": "Harbor Point Logistics Inc."},
        {"role": "Remit To", "name": "Northwind Cloud Services LLC"},
    ]
    assert result["fields"]["emails"] == [
        "billing@northwindcloud.example",
        "ap@harborpoint.example",
        "support@northwindcloud.example",
        "accounts@northwindcloud.example",
    ]
    items = result["fields"]["line_items"]
    assert len(items) == 8
    assert items[0]["description"] == "Managed Kubernetes cluster (production)"
    assert [check["passed"] for check in result["checks"]] == [True, True]
    assert [page["heading"] for page in result["pages"]] == ["INVOICE", "SERVICES (CONTINUED)", "SUMMARY"]
    assert counters(job.usage) == {"characters": result["document"]["characters"], "pages": 3, "transitions": 4}


def test_contract_sample() -> None:
    job = run_job({"document": "contract.txt"})
    assert job.status == JobStatus.COMPLETE, job.error
    result = job.result
    assert result["document"]["title"] == "MANAGED DATA SERVICES AGREEMENT"
    assert result["document"]["kind"] == "contract"
    assert result["document"]["pages"] == 4
    assert result["fields"]["references"] == {"contract": "NW-MSA-2025-017"}
    assert result["fields"]["parties"] == [
        {"role": "Provider", "name": "Northwind Cloud Services LLC"},
        {"role": "Client", "name": "Harbor Point Logistics Inc."},
        {"role": "Signed for Provider", "name": "Jordan Ellis"},
        {"role": "Signed for Client", "name": "Maria Okafor"},
    ]
    assert labelled_dates(job) == {
        "Effective Date": ["2025-01-06"],
        "Initial Term": ["2026-01-31"],
        "Date": ["2025-01-06", "2025-01-08"],
    }
    labelled = {item["label"]: item["value"] for item in result["fields"]["amounts"] if item["label"]}
    assert labelled == {"Onboarding Fee": "6000.00", "Monthly Fee": "4500.00", "Total Contract Value": "60000.00"}
    assert totals(job) == {"total_contract_value": "60000.00"}
    assert "7. NOTICES AND GOVERNING LAW" in result["fields"]["headings"]
    assert result["checks"] == []
    assert job.usage["pages"] == 4


def test_report_sample() -> None:
    job = run_job({"document": "report.txt"})
    assert job.status == JobStatus.COMPLETE, job.error
    result = job.result
    assert result["document"]["title"] == "Q1 2025 OPERATIONS REPORT"
    assert result["document"]["kind"] == "report"
    assert result["document"]["pages"] == 5
    assert result["fields"]["references"] == {"report": "OPS-2025-Q1-WC"}
    assert labelled_dates(job) == {
        "Reporting period": ["2025-01-01", "2025-03-31"],
        "Date issued": ["2025-04-14"],
        "Approval date": ["2025-04-16"],
    }
    revenue = [item["value"] for item in result["fields"]["amounts"] if item["label"] == "Revenue"]
    assert revenue == ["4320000.00", "4820000.00"]
    headline = result["fields"]["amounts"][0]
    assert (headline["text"], headline["value"], headline["page"]) == ("$4.82 million", "4820000.00", 1)
    assert totals(job) == {"total_capital_expenditure": "752500.00"}
    assert [party["name"] for party in result["fields"]["parties"]] == [
        "Dana Whitfield",
        "Executive Leadership Team",
        "Samuel Ortiz",
    ]
    assert result["counts"]["pages"] == 5
    assert job.usage["pages"] == 5


def test_inline_text_is_a_single_page_when_it_has_no_page_breaks() -> None:
    job = run_job({"text": "Invoice No: A-1001\nTotal: $12.50\nQuestions: help@example.com\n"})
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result["document"]["source"] == "inline text"
    assert job.result["document"]["pages"] == 1
    assert totals(job) == {"total": "12.50"}
    decisions = [entry for entry in job.log if entry.kind == "decision" and entry.phase == "split"]
    assert decisions[0].message == "Treat the text as a single page"


def test_publish_writes_the_result_to_output_path(tmp_path: Path) -> None:
    target = tmp_path / "out" / "invoice.json"
    job = run_job({"document": "invoice.txt", "output_path": str(target)})
    assert job.status == JobStatus.COMPLETE, job.error
    assert json.loads(target.read_text()) == job.result
    assert [path.name for path in target.parent.iterdir()] == ["invoice.json"]


# Clear failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"document": "no-such-file.txt"}, 'Document "no-such-file.txt" not found'),
        ({}, "needs 'document'"),
        ({"document": "invoice.txt", "text": "x"}, "not both"),
        ({"document": "ftp://example.com/doc.txt"}, 'No reader for "ftp://" sources'),
        ({"text": " \n\f\n"}, "has no text"),
    ],
)
def test_bad_input_fails_the_job_with_a_clear_error(state: dict[str, Any], message: str) -> None:
    job = run_job(state)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert message in job.error
    assert job.checkpoint is not None


@pytest.mark.parametrize("document", ["no-such-file.txt", "../samples/./no-such-file.txt"])
def test_a_missing_file_is_named_by_the_absolute_path_looked_for(document: str) -> None:
    looked_for = (SAMPLES_DIR / document).resolve()  # this machine's path, whatever the document said
    assert looked_for.is_absolute()
    assert ".." not in looked_for.parts

    job = run_job({"document": document})

    assert job.status == JobStatus.ERROR
    assert job.error == f'Document "{document}" not found (looked for {looked_for})'


def test_an_unknown_state_key_is_refused_before_anything_is_written() -> None:
    storage = MemoryStorage()
    with pytest.raises(InvalidInputError, match="docment"):
        run_job({"docment": "invoice.txt"}, storage)
    assert storage.get_job("doc-1") is None


def test_another_source_can_be_plugged_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "_READERS", dict(sources._READERS))
    register_reader("memo", lambda location: f"MEMO {location.upper()}\nReference: REF-0042\n")
    assert read_document("memo://hello").startswith("MEMO HELLO")
    job = run_job({"document": "memo://hello"})
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result["fields"]["references"] == {"reference": "REF-0042"}


def test_local_sources_resolve_against_samples_and_accept_absolute_paths(tmp_path: Path) -> None:
    own = tmp_path / "note.txt"
    own.write_text("hello")
    assert read_document(str(own)) == "hello"
    assert read_document(f"file://{own}") == "hello"
    assert read_document("invoice.txt") == (SAMPLES_DIR / "invoice.txt").read_text()


# Crash and resume ----------------------------------------------------------------------------------


@pytest.fixture
def extraction_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first line of every page handed to field extraction, in order."""
    calls: list[str] = []

    def counting(text: str) -> PageFields:
        calls.append(text.splitlines()[0])
        return extract_fields(text)

    monkeypatch.setattr(intake, "extract_fields", counting)
    return calls


def test_a_crash_mid_extract_resumes_at_the_next_page(extraction_calls: list[str]) -> None:
    expected = run_job({"document": "contract.txt"}, job_id="clean")
    assert len(extraction_calls) == 4
    extraction_calls.clear()

    storage = MemoryStorage()
    crashing = crash_after_saves(storage, 2)
    scheduler = make_scheduler(pipeline, crashing)
    run_pipeline("doc-1", pipeline, storage=crashing, scheduler=scheduler, initial_state={"document": "contract.txt"})
    with pytest.raises(SimulatedCrash):
        scheduler.drain()

    crashed = job_of(storage, "doc-1")
    assert crashed.status == JobStatus.RUNNING
    assert crashed.checkpoint is not None
    assert crashed.checkpoint.next_phase == "extract"
    saved = IntakeState.model_validate(crashed.checkpoint.state)
    assert (saved.pages_done, len(saved.pages)) == (2, 4)
    assert len(extraction_calls) == 2

    resumed = run_job({"document": "contract.txt"}, storage)
    assert resumed.status == JobStatus.COMPLETE, resumed.error
    assert resumed.result == expected.result
    assert len(extraction_calls) == 4, "pages 1-2 must not be extracted again"
    assert extraction_calls[2:] == ["5. CONFIDENTIALITY AND DATA PROTECTION", "SCHEDULE A: SERVICE SCOPE"]
    assert extraction_logs(resumed) == [
        f"Extracted page {n}/4: {c} fields" for n, c in ((1, 10), (2, 7), (3, 6), (4, 6))
    ]
    assert counters(resumed.usage) == counters(expected.usage)
    assert any(entry.message == "Resume at page 3 of 4" for entry in resumed.log if entry.kind == "decision")
    assert [record.phase for record in resumed.phases] == ["fetch", "split", "extract", "publish"]


def test_a_crash_after_the_last_page_resumes_straight_to_publish(extraction_calls: list[str]) -> None:
    storage = MemoryStorage()
    crashing = crash_after_saves(storage, 3)
    scheduler = make_scheduler(pipeline, crashing)
    run_pipeline("doc-1", pipeline, storage=crashing, scheduler=scheduler, initial_state={"document": "invoice.txt"})
    with pytest.raises(SimulatedCrash):
        scheduler.drain()
    assert len(extraction_calls) == 3

    resumed = run_job({"document": "invoice.txt"}, storage)
    assert resumed.status == JobStatus.COMPLETE, resumed.error
    assert len(extraction_calls) == 3
    assert resumed.result["document"]["pages"] == 3
    assert resumed.usage["pages"] == 3
