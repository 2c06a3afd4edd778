"""fetch reads s3:// documents from the bucket the deployment names (DocumentsBucket), and from no other."""

from __future__ import annotations

import pytest

from cairn import JobStatus
from cairn.testing.stack import LocalStack
from document_intake.pipeline import pipeline as document_intake
from document_intake.sources import DOCUMENTS_BUCKET, SAMPLES_DIR
from tests.aws import s3_client

GRANTED = "cairn-documents"
OTHER = "someone-elses-documents"


@pytest.fixture
def buckets(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two buckets holding the sample invoice; the deployment (on Lambda) names the first."""
    s3 = s3_client()
    for bucket in (GRANTED, OTHER):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="in/invoice.txt", Body=(SAMPLES_DIR / "invoice.txt").read_bytes())
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "cairn-document-intake-fetch")
    monkeypatch.setenv(DOCUMENTS_BUCKET, GRANTED)


def run(stack: LocalStack, document: str) -> tuple[JobStatus, str | None]:
    jobs = stack.runtime.cairn("owner-1", document_intake)
    jobs.start(document_intake, "job-1", state={"document": document})
    stack.run_until_idle(timeout=20)
    job = jobs.get("job-1")
    return job.status, job.error


@pytest.mark.usefixtures("buckets")
def test_fetch_reads_a_document_from_the_documents_bucket(stack: LocalStack) -> None:
    status, error = run(stack, f"s3://{GRANTED}/in/invoice.txt")

    assert (status, error) == (JobStatus.COMPLETE, None)
    job = stack.runtime.storage("owner-1").get_job("job-1")
    assert job is not None
    assert job.result is not None
    assert job.result["document"]["kind"] == "invoice"


@pytest.mark.usefixtures("buckets")
def test_fetch_refuses_a_bucket_the_deployment_does_not_name(stack: LocalStack) -> None:
    status, error = run(stack, f"s3://{OTHER}/in/invoice.txt")

    assert status == JobStatus.ERROR
    assert error == (
        f'Document "s3://{OTHER}/in/invoice.txt" is in bucket "{OTHER}": this deployment reads s3:// documents '
        f'from bucket "{GRANTED}" only (its DocumentsBucket parameter)'
    )


@pytest.mark.usefixtures("buckets")
def test_a_deployment_without_a_documents_bucket_reads_no_s3_document(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DOCUMENTS_BUCKET, "")

    status, error = run(stack, f"s3://{GRANTED}/in/invoice.txt")

    assert status == JobStatus.ERROR
    assert error is not None
    assert "deploy it with the DocumentsBucket parameter" in error
