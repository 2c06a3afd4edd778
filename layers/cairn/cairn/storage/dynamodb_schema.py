"""The checkpoint table's layout: keys, attribute names, indexes. One table holds everything.

- Job item: ``pk = JOB#<owner>#<jobId>``, ``sk = JOB``.
- Log entries and phase records under the same ``pk``: ``sk = LOG#<run>#...`` and ``PHASE#<run>#...``.
- ``expiresAt`` (epoch seconds) is the TTL attribute on every item.
- Index ``ByStatus`` (``statusKey = <owner>#<status>``, ``createdAt``): one owner's jobs by status.
- Index ``ByOwner`` (``owner``, ``createdAt``): one owner's jobs, any status.
- Index ``Stalled`` (``sweepKey``, ``updatedAt``): sparse, only running jobs; for the sweep.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import InvalidInputError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import GlobalSecondaryIndexTypeDef

JOB_SK = "JOB"
LOG_PREFIX = "LOG#"
PHASE_PREFIX = "PHASE#"
TTL_ATTRIBUTE = "expiresAt"
BY_STATUS_INDEX = "ByStatus"
BY_OWNER_INDEX = "ByOwner"
STALLED_INDEX = "Stalled"
SWEEP_KEY_RUNNING = "running"

#: Small attributes copied into the listing indexes (no state, no result).
SUMMARY_ATTRIBUTES = [
    "jobId",
    "pipeline",
    "status",
    "attempt",
    "error",
    "updatedAt",
    "expiresAt",
    "nextPhase",
    "leaseExpiresAt",
]

_OWNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@|/+=-]{0,127}$")


def validate_owner(owner: str) -> str:
    """The owner, if it is a non-empty id without '#'; else a clear error."""
    if not isinstance(owner, str) or not _OWNER.match(owner):
        raise InvalidInputError(f"Invalid owner {owner!r}: use 1-128 letters, digits or ._:@|/+=- (no '#')")
    return owner


def job_pk(owner: str, job_id: str) -> str:
    """The partition key of a job and everything stored with it."""
    return f"JOB#{owner}#{job_id}"


def status_key(owner: str, status: str) -> str:
    """The ``ByStatus`` partition of one owner's jobs with one status."""
    return f"{owner}#{status}"


def log_sk(run: int, version: int, sequence: int, index: int) -> str:
    """Sort key of one log entry: by run, then fencing version, then write order within the claim."""
    return f"{LOG_PREFIX}{run:06d}#{version:09d}#{sequence:012d}#{index:04d}"


def phase_sk(run: int, version: int) -> str:
    """Sort key of one phase record: one per claim, so the fencing version orders them."""
    return f"{PHASE_PREFIX}{run:06d}#{version:09d}"


def create_table(client: DynamoDBClient, table_name: str) -> None:
    """Create the table as the SAM template does (on-demand, TTL on ``expiresAt``). For tests and local runs."""

    def index(name: str, pk: str, sk: str) -> GlobalSecondaryIndexTypeDef:
        return {
            "IndexName": name,
            "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": SUMMARY_ATTRIBUTES},
        }

    client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "statusKey", "AttributeType": "S"},
            {"AttributeName": "owner", "AttributeType": "S"},
            {"AttributeName": "createdAt", "AttributeType": "N"},
            {"AttributeName": "sweepKey", "AttributeType": "S"},
            {"AttributeName": "updatedAt", "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            index(BY_STATUS_INDEX, "statusKey", "createdAt"),
            index(BY_OWNER_INDEX, "owner", "createdAt"),
            index(STALLED_INDEX, "sweepKey", "updatedAt"),
        ],
    )
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
