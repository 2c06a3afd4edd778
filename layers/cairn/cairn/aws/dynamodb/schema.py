"""The checkpoint table's layout: keys, attribute names, indexes. One table holds everything.

- Job item: ``pk = JOB#<owner>#<jobId>``, ``sk = JOB``.
- Under the same ``pk``: history items ``sk = HIST#<write token>`` (what one write added to the log
  and phase records, linked from the job's ``historyHead``), the input ``sk = INPUT#<write token>``,
  and a mid-phase save's state ``sk = SAVE#<write token>``.
- The state is written once per transition, in the item of the write that set it: a start's or a
  commit's history item (its ``entry``, the checkpoint the phase was entered with) or a save's
  item. The job item's ``checkpoint`` is ``{nextPhase, createdAt, stateAt}``, ``stateAt`` naming
  that item's sort key, so the job item stays small and its claim and commit cost one write unit.
- ``expiresAt`` (epoch seconds) is the TTL attribute on every item.
- Index ``ByStatus`` (``statusKey = <owner>#<status>#<shard>``, ``createdAt``): one owner's jobs by
  status, spread over ``LIST_SHARDS`` partitions per owner and status.
- Index ``ByOwner`` (``owner = <owner>#<shard>``, ``createdAt``): one owner's jobs, any status, spread
  over ``LIST_SHARDS`` partitions per owner. (The attribute keeps its name so the index's key schema,
  and a deployed table, stay as they were.)
- Index ``Stalled`` (``sweepKey = running#<shard>``, ``createdAt``): sparse, only running jobs, spread
  over ``SWEEP_SHARDS`` partitions; for the sweep.

A job's shard is fixed by a hash of its key, so no owner, however busy, sends all its index writes
to one partition: an owner has ``LIST_SHARDS`` partitions in ``ByOwner`` and as many per status in
``ByStatus`` (each partition takes about 1,000 writes/s), and the whole table has ``SWEEP_SHARDS``
in ``Stalled``. A listing page queries each of the owner's ``LIST_SHARDS`` partitions for up to
``limit`` keys and merges them newest first (:meth:`cairn.aws.dynamodb.DynamoDBStorage.list_page`):
keys-only entries are about 150 bytes, so a page of 50 costs ``LIST_SHARDS`` queries of about
1 read unit each (4 units, against 1 unsharded) plus the consistent BatchGetItem of the 50 job
items (1 unit each up to 4 KB), as before.

Every index key changes only when the status does and the indexes project keys only, so a phase
transition writes no index at all; listings and the sweep read the few fields they show from the
job items.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from ...core.ids import validate_owner as validate_owner  # the rule lives in cairn.ids

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import GlobalSecondaryIndexTypeDef

JOB_SK = "JOB"
HISTORY_PREFIX = "HIST#"
INPUT_PREFIX = "INPUT#"
SAVE_PREFIX = "SAVE#"
TTL_ATTRIBUTE = "expiresAt"
BY_STATUS_INDEX = "ByStatus"
BY_OWNER_INDEX = "ByOwner"
STALLED_INDEX = "Stalled"
SWEEP_KEY_RUNNING = "running"
SWEEP_SHARDS = 8
LIST_SHARDS = 4

#: The small attributes listings and the sweep read from job items (no state, no result).
SUMMARY_ATTRIBUTES = [
    "pk",
    "jobId",
    "pipeline",
    "status",
    "attempt",
    "error",
    "createdAt",
    "updatedAt",
    "expiresAt",
    "nextPhase",
    "leaseOwner",
    "leaseExpiresAt",
    "notBefore",
    "sequence",
]


def job_pk(owner: str, job_id: str) -> str:
    """The partition key of a job and everything stored with it."""
    return f"JOB#{owner}#{job_id}"


def list_shard(owner: str, job_id: str) -> int:
    """The listing shard of a job (0 to ``LIST_SHARDS - 1``), fixed by a hash of its key."""
    return zlib.crc32(job_pk(owner, job_id).encode()) % LIST_SHARDS


def status_key(owner: str, status: str, shard: int) -> str:
    """The ``ByStatus`` partition of one shard of one owner's jobs with one status."""
    return f"{owner}#{status}#{shard}"


def owner_key(owner: str, shard: int) -> str:
    """The ``ByOwner`` partition of one shard of one owner's jobs."""
    return f"{owner}#{shard}"


MAP_ITEM_PREFIX = "~MAP#"
"""Sorts after the job, history and input items, so that reading a job never reads a map's items."""


def map_item_sk(fan_out: str, index: int) -> str:
    """The sort key of item ``index`` of the map ``fan_out`` (in item order within the map)."""
    return f"{MAP_ITEM_PREFIX}{fan_out}#{index:06d}"


def map_items_prefix(fan_out: str) -> str:
    """The sort-key prefix of every item of the map ``fan_out``."""
    return f"{MAP_ITEM_PREFIX}{fan_out}#"


MAP_RECORD_PREFIX = "~MAPS#"
"""A map's own record (its count of finished items): after the job's items too ("~MAPS" sorts after "~MAP#"),
and apart from the items' prefix, so the records of a job's maps are one query that reads no item."""


def map_record_sk(fan_out: str) -> str:
    """The sort key of the record of the map ``fan_out``."""
    return f"{MAP_RECORD_PREFIX}{fan_out}"


def history_sk(token: str) -> str:
    """Sort key of the history item written by the write ``token``."""
    return f"{HISTORY_PREFIX}{token}"


def save_sk(token: str) -> str:
    """Sort key of the state saved mid-phase by the write ``token``."""
    return f"{SAVE_PREFIX}{token}"


def input_sk(token: str) -> str:
    """Sort key of the input set by the write ``token``."""
    return f"{INPUT_PREFIX}{token}"


def sweep_key(owner: str, job_id: str) -> str:
    """The ``Stalled`` partition of a running job: one of ``SWEEP_SHARDS``, fixed per job."""
    return f"{SWEEP_KEY_RUNNING}#{zlib.crc32(job_pk(owner, job_id).encode()) % SWEEP_SHARDS}"


def sweep_keys() -> list[str]:
    """Every ``Stalled`` partition."""
    return [f"{SWEEP_KEY_RUNNING}#{shard}" for shard in range(SWEEP_SHARDS)]


def create_table(client: DynamoDBClient, table_name: str) -> None:
    """Create the table as the SAM template does (on-demand, TTL on ``expiresAt``). For tests and local runs."""

    def index(name: str, pk: str, sk: str) -> GlobalSecondaryIndexTypeDef:
        return {
            "IndexName": name,
            "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
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
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            index(BY_STATUS_INDEX, "statusKey", "createdAt"),
            index(BY_OWNER_INDEX, "owner", "createdAt"),
            index(STALLED_INDEX, "sweepKey", "createdAt"),
        ],
    )
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
