"""A DynamoDB job store for tests: a fresh table and state bucket on moto, in-process.

Call :func:`moto_storage` inside :func:`cairn.testing.moto_aws.fake_aws` (the ``cairn_dynamodb``
fixture does): the table is made as the SAM template makes it, and states too large for an item go
to the bucket, as in a deployment.
"""

from __future__ import annotations

import uuid

from ..aws.dynamodb import DynamoDBStorage
from ..aws.dynamodb.schema import create_table
from ..core.clock import Clock
from ..core.settings import Settings
from .moto_aws import dynamodb_client, s3_client
from .serialised import one_call_at_a_time


def moto_storage(*, clock: Clock | None = None, owner: str = "default") -> DynamoDBStorage:
    """A :class:`DynamoDBStorage` for ``owner`` on a new table and state bucket in moto, reading ``clock``.

    The settings are the defaults, never the environment's ``CAIRN_*``; ``for_owner`` gives the
    same table seen as another owner.
    """
    dynamodb = one_call_at_a_time(dynamodb_client())  # moto's conditional writes made atomic, as DynamoDB's are
    s3 = s3_client()
    suffix = uuid.uuid4().hex[:10]
    table, bucket = f"cairn-jobs-{suffix}", f"cairn-state-{suffix}"
    create_table(dynamodb, table)
    s3.create_bucket(Bucket=bucket)
    return DynamoDBStorage(
        table, owner=owner, client=dynamodb, bucket=bucket, s3_client=s3, clock=clock, settings=Settings()
    )
