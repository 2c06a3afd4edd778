"""The checkov checks the stack does not meet, each skipped on the resources it fails on, with the reason.

checkov reads a resource's ``Metadata.checkov.skip`` (an id and a comment each) and skips that check for that
resource only, so a check that applies to another resource still fails there. The generated phase functions and
log groups carry their skips from here; the hand-written resources of template.yaml carry the same comments
(``tests/template/test_checkov.py`` holds the two together, and docs/CHECKOV.md gives each reason in full).
"""

from __future__ import annotations

from typing import Any

FUNCTION_CHECKS = ("CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173")
"""Skipped on each function: reserved concurrency, dead-letter queue, VPC, environment key."""
LOG_GROUP_CHECKS = ("CKV_AWS_158",)
"""Skipped on each log group: a customer managed key."""

REASONS: dict[str, str] = {
    "CKV_AWS_115": (
        "Reserved concurrency is a stack parameter (PhaseReservedConcurrency, SchedulerReservedConcurrency, "
        "ApiReservedConcurrency), off by default outside prod: a reservation takes from the account's pool for good."
    ),
    "CKV_AWS_116": (
        "A failed asynchronous invocation goes to its on-failure destination (the scheduler; the scheduler's to "
        "SchedulerDeadLetterQueue); the API is invoked synchronously. A DLQ would hold copies nothing reads."
    ),
    "CKV_AWS_117": (
        "The function calls only AWS APIs over TLS and reaches no private resource; a VPC would need a NAT "
        "gateway or an endpoint per service."
    ),
    "CKV_AWS_173": (
        "The environment holds resource names, ARNs, limits and flags, never a secret (test_checkov.py checks), "
        "encrypted with the AWS managed key."
    ),
    "CKV_AWS_158": ("CloudWatch Logs encrypts the group with its own keys; LogsKmsKeyArn sets a customer managed key."),
    "CKV_AWS_119": ("Encrypted with the AWS managed key aws/dynamodb; TableKmsKeyArn sets a customer managed key."),
    "CKV_AWS_18": (
        "Access logs would need a second bucket and bill a line per request; CloudTrail S3 data events audit "
        "the private, TLS-only bucket where an audit trail is required."
    ),
    "CKV_AWS_27": (
        "Encrypted at rest with SSE-SQS (SqsManagedSseEnabled), which this check does not read; "
        "test_checkov.py checks every queue instead."
    ),
}
"""Each skipped check's reason, as the resources' Metadata gives it to checkov (docs/CHECKOV.md in full)."""


def skipped(*checks: str) -> dict[str, Any]:
    """A resource's ``Metadata`` that skips ``checks`` for it, each with its reason."""
    return {"checkov": {"skip": [{"id": check, "comment": REASONS[check]} for check in checks]}}
