"""Many jobs in ``cairn dev``'s table, written through the DynamoDB store as the API's default caller owns them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config

from cairn.aws.api_auth import owner_key, principal_key
from cairn.aws.dynamodb.storage import DynamoDBStorage
from cairn.core.models import Checkpoint
from cairn.core.transitions.requests import StartJob
from tests.local.devstack import DevStack

DAY_MS = 86_400_000
WRITERS = 8


def dev_storage(stack: DevStack) -> DynamoDBStorage:
    """The store ``cairn dev``'s API reads for its default caller, on its local AWS endpoint."""
    info: dict[str, Any] = stack.admin("info")
    client = boto3.client(
        "dynamodb",
        endpoint_url=info["awsEndpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(max_pool_connections=WRITERS * 2, retries={"max_attempts": 5}),
    )
    return DynamoDBStorage(table_name=info["table"], owner=owner_key(principal_key(info["identity"])), client=client)


def seed_jobs(stack: DevStack, job_ids: list[str], *, pipeline: str, first_phase: str, now_ms: int) -> None:
    """Create each job (idle at ``first_phase``, nothing scheduled), created 1 ms apart in the order given."""
    storage = dev_storage(stack)

    def create(at: int) -> None:
        created = now_ms - (len(job_ids) - at)
        state = {"document": f"{job_ids[at]}.txt"}
        storage.start_job(
            StartJob(
                job_id=job_ids[at],
                pipeline=pipeline,
                checkpoint=Checkpoint(next_phase=first_phase, state=state, created_at=created),
                now_ms=created,
                expires_at=created + 7 * DAY_MS,
                seen=None,
                ttl_seconds=7 * 86_400,
                input=state,
            )
        )

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(create, range(len(job_ids))))
