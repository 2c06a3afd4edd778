"""``cairn dev --load FILE``: jobs pulled from an API (``cairn jobs pull``) loaded into the local stack's table.

Each job goes in as the owner ``cairn dev`` serves (``--identity``), with the table and state bucket the
functions use, so the local API, dashboard and functions see it as any other job: rerun it from a phase.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..aws.api_auth import owner_of
from ..core.errors import ConfigurationError
from ..core.models import Job
from ..storage.job_files import load_job_file
from ..testing.api_events import iam_caller


def local_owner(identity: str) -> str:
    """The owner the local API serves for the caller ``identity`` (an IAM principal's ARN)."""
    return owner_of({"requestContext": {"authorizer": iam_caller(identity)}})


def load_files(
    deployment: Any, client: Callable[[str], Any], files: Sequence[Path], *, identity: str, replace: bool
) -> list[tuple[Path, Job]]:
    """Load each job file into the deployed table as ``identity``'s job; each file and the job it made."""
    from ..aws.dynamodb import DynamoDBStorage

    if deployment.table_name is None:
        raise ConfigurationError("--load needs a template with one DynamoDB table: the jobs table")
    settings = [function.environment for function in deployment.functions.values()]
    bucket = next((kept["CAIRN_STATE_BUCKET"] for kept in settings if kept.get("CAIRN_STATE_BUCKET")), None)
    storage = DynamoDBStorage(
        deployment.table_name,
        owner=local_owner(identity),
        client=client("dynamodb"),
        bucket=bucket,
        s3_client=client("s3") if bucket else None,
    )
    return [(path, load_job_file(storage, path, replace=replace)) for path in files]
