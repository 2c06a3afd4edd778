"""Benchmark: what each phase transition of document-intake costs on the DynamoDB store.

Runs the example pipeline on every sample against moto (in-process) and prints,
per advance, the DynamoDB calls made (writes and reads) and the time taken.
Run: ``make bench`` (or ``PYTHONPATH=layers/cairn:functions:. python benchmarks/transition_cost.py``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import boto3
from moto import mock_aws

from cairn import InlineScheduler, JobStatus, advance_phase, run_pipeline
from cairn.storage.delegating import DelegatingStorage
from cairn.storage.dynamodb import DynamoDBStorage
from cairn.storage.dynamodb_schema import create_table
from document_intake.pipeline import pipeline

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
SAMPLES = ["invoice.txt", "contract.txt", "report.txt"]
_T = TypeVar("_T")


class AttributedStorage(DelegatingStorage):
    """Counts DynamoDB calls by the storage operation that made them."""

    def __init__(self, inner: DynamoDBStorage) -> None:
        super().__init__(inner)
        self.calls: Counter[tuple[str, str]] = Counter()
        self._current = "other"

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        self._current = name
        try:
            return operation()
        finally:
            self._current = "other"

    def count(self, model: Any, **_: Any) -> None:
        """botocore ``before-call`` hook."""
        self.calls[(self._current, model.name)] += 1


def main() -> None:
    """Run every sample and print the per-transition cost."""
    os.environ.update(
        {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
    )
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "cairn-bench")
        storage = AttributedStorage(DynamoDBStorage("cairn-bench", client=client))
        client.meta.events.register("before-call.dynamodb", storage.count)
        scheduler = InlineScheduler()
        rows: list[tuple[str, int, int, int, float]] = []

        def advance(job_id: str, phase: str) -> None:
            storage.calls.clear()
            started = time.perf_counter()
            advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, phase=phase)
            elapsed = (time.perf_counter() - started) * 1000
            calls = storage.calls
            transition = sum(n for (method, op), n in calls.items() if method in ("claim", "commit") and op in WRITES)
            saves = sum(n for (method, op), n in calls.items() if method == "save" and op in WRITES)
            reads = sum(n for (_, op), n in calls.items() if op not in WRITES)
            rows.append((phase, transition, saves, reads, elapsed))

        scheduler.bind(advance)
        for sample in SAMPLES:
            job_id = sample.removesuffix(".txt")
            run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"document": sample})
            scheduler.drain()
            job = storage.get_job(job_id)
            if job is None or job.status != JobStatus.COMPLETE:
                raise SystemExit(f"{job_id} did not complete: {job}")

    print("Per advance: a claim and a commit (the transition), plus one write per ctx.save_state().")
    print(f"{'phase':<10}{'advances':>9}{'transition writes':>19}{'save writes':>13}{'reads':>7}{'median ms':>11}")
    for phase in ["fetch", "split", "extract", "publish"]:
        mine = [row for row in rows if row[0] == phase]
        print(
            f"{phase:<10}{len(mine):>9}{max(row[1] for row in mine):>19}{max(row[2] for row in mine):>13}"
            f"{max(row[3] for row in mine):>7}{statistics.median(row[4] for row in mine):>11.1f}"
        )
    print(f"{len(rows)} advances; reads on the advance path: {max(row[3] for row in rows)}")


if __name__ == "__main__":
    main()
