"""A fifth of DynamoDB, S3 and Lambda calls throttled, failed or with their response lost: every job completes once.

A quick slice of the chaos run (``make reliability`` runs the large one and writes docs/RELIABILITY.md).
"""

from __future__ import annotations

from tests.reliability.chaos import run_chaos


def test_every_job_completes_once_when_a_fifth_of_aws_calls_fail() -> None:
    figures = run_chaos(jobs=6, rate=0.2, seed=7)

    assert figures.completed == figures.jobs, figures.as_dict()
    assert figures.wrong_results == 0, figures.as_dict()
    assert figures.redone == 0, figures.as_dict()
    injected = {name.split()[0] for name, count in figures.faults.items() if count}
    assert injected == {"dynamodb", "s3", "lambda"}, figures.as_dict()  # every service was faulted
    assert figures.duplicates_delivered > 0
