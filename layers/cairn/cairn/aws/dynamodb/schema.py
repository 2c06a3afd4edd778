"""The checkpoint table's layout: keys, attribute names, indexes. One table holds everything.

- Job item: ``pk = JOB#<owner>#<jobId>``, ``sk = JOB``.
- Under the same ``pk``: history items ``sk = H#<run>#<sequence>#<write token>`` (what one write added
  to the log and phase records, linked from the job's ``historyHead``, each naming its predecessor in
  ``prev``), the input ``sk = INPUT#<write token>``, a mid-phase save's state ``sk = SAVE#<write token>``,
  and a commit's state kept apart from its log ``sk = ENTRY#<write token>`` (below).
- A history item's key holds the job's run and the sequence the write gives the job (12 digits, zero
  padded), so one run's items sort in the order of its writes, newest last. Reading the newest history
  is one Query of ``H#<run>#`` up to ``H#<run>#<the job item's sequence>#~``, newest first: the chain
  from ``historyHead`` through ``prev`` is walked down the page, skipping the items of writes that never
  landed (none links them), and read on only while the page is short of linked items; the log, oldest
  first, is the same range read forward (:mod:`.history_reads`). Every write's predecessor has a lower
  sequence in its key (a write's key takes the sequence it gives the job as the writer saw it, never
  above the stored one). The run is not padded: no read crosses runs (a full retry starts a new one).
  Jobs written before history items were ordered keep theirs as ``HIST#<write token>``: a chain that
  reaches a ``prev`` with no ``H#`` item reads it there (one GetItem each).
- The state is written once per transition, in the item of the write that set it: a start's or a
  commit's history item (its ``entry``, the checkpoint the phase was entered with) or a save's
  item. The job item's ``checkpoint`` is ``{nextPhase, createdAt, stateAt}``, ``stateAt`` naming
  that item's sort key, so the job item stays small and its claim and commit cost one write unit.
  A commit whose phase logged so much that reading its history item would cost more read units than
  reading the state alone keeps the state in an ``ENTRY#`` item of its own, written in the same
  request; the history item's ``entry`` then holds ``{nextPhase, createdAt, stateAt}`` naming it. So
  the next claim's read of the state costs what the state costs, whatever the phase before logged.
  A state small enough for the job item to keep it within one write unit (its next claim's lease
  included) is also kept in the job item's ``checkpoint`` (``{nextPhase, createdAt, state}``): the
  claim, which returns the job item, then needs no read.
- ``expiresAt`` (epoch seconds) is the TTL attribute on every item but an owner's share item
  (``pk = SHARE#<owner>``, ``sk = SHARE``: its limit and its slots, :mod:`.owner_shares`), which lasts.
- An owner's counts item (``pk = COUNTS#<owner>``, ``sk = COUNTS``: its jobs per status, kept by the table's
  stream, :mod:`.status_counts`) lasts too; it has no index attribute.
- A job item's status change (and only that) also writes ``statusAt`` (Unix ms of the change) and
  ``statusExpiresAt`` (the ``expiresAt`` the change set): what a listing shows as the job's time and
  checks its liveness with.
- Index ``Listing`` (``owner = <owner>#<shard>``, ``createdAt``): one owner's jobs, spread over
  ``LIST_SHARDS`` partitions per owner, projecting the summary a listing shows (``LISTING_ATTRIBUTES``:
  ``pipeline``, ``status``, ``error``, ``statusAt``, ``statusExpiresAt``; the job id is in ``pk``).
- Indexes ``StatusListing`` (``owner``, ``status``; ``createdAt``) and ``PipelineListing`` (``owner``,
  ``pipeline``; ``createdAt``): the same entries keyed also on the filter's value (multi-attribute
  partition keys of attributes every job item has), so a listing filtered by status or pipeline reads
  only the entries that match. Each projects the rest of the summary.
- Index ``CostListing`` (``owner = <owner>#<shard>``, ``listCost``): the same entries keyed on the job's cost
  at its last status change (``listCost``), for a listing dearest first (:mod:`.cost_listings`); projects
  ``createdAt`` and the summary. Sparse: a job whose status has not changed since this index came is not in it.
- Index ``Stalled`` (``sweepKey = running#<shard>``, ``createdAt``): sparse, only running jobs, spread
  over ``SWEEP_SHARDS`` partitions, keys only; for the sweep.

A job's shard is fixed by a hash of its key, so no owner, however busy, sends all its index writes
to one partition: an owner has ``LIST_SHARDS`` partitions in ``Listing`` (each takes about 1,000
writes/s), and the whole table has ``SWEEP_SHARDS`` in ``Stalled``. A listing page queries each of
the owner's partitions for about a share of ``limit`` entries and merges them newest first
(:meth:`cairn.aws.dynamodb.DynamoDBStorage.list_page`); a status or pipeline filter queries the index
keyed on it, an id prefix (or the second of the two) filters the entries, the created-time range is a
key condition. An entry is 120 to 200 bytes and an
eventually consistent query costs half a read unit per 4 KB, so a page of 50 costs about 2 read units
(0.04 a job listed) and reads no job item, but for the few the entries cannot answer: a job not
written since the index kept its summary (no ``statusAt``), or a running job whose ``statusExpiresAt``
has passed (its later writes may have pushed its expiry on), and a job in error, whose exception type and
failed phase (``errorType``, ``errorPhase``, written with its status) only its item holds: eventually
consistent, half a read unit each.

Every index key and every projected attribute changes only when the status does, so a phase transition
writes no index at all; a status change rewrites the job's ``Listing`` and ``PipelineListing`` entries
(one write each), moves its ``StatusListing`` entry (a delete and a put) and puts or deletes its
``Stalled`` entry. (``attempt`` and ``nextPhase`` change between status changes: a listing
leaves them out.) The indexes ``ByStatus`` and ``ByOwner`` of earlier releases (keys only) are gone:
a table that has them is changed one index per deploy (docs/PROTOCOL.md, "Indexes").
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from ...core.ids import validate_owner as validate_owner  # the rule lives in cairn.ids

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeDefinitionTypeDef,
        GlobalSecondaryIndexTypeDef,
        KeySchemaElementTypeDef,
        ProjectionTypeDef,
    )

JOB_SK = "JOB"
HISTORY_PREFIX = "H#"
LEGACY_HISTORY_PREFIX = "HIST#"
INPUT_PREFIX = "INPUT#"
SAVE_PREFIX = "SAVE#"
ENTRY_PREFIX = "ENTRY#"
TTL_ATTRIBUTE = "expiresAt"
LISTING_INDEX = "Listing"
STATUS_LISTING_INDEX = "StatusListing"
PIPELINE_LISTING_INDEX = "PipelineListing"
STALLED_INDEX = "Stalled"
COST_LISTING_INDEX = "CostListing"
#: The job's cost as the last write that set its usage left it: dollars (34 digits) at the store's environment's
#: prices (:func:`cairn.features.cost.stored_cost`), set by every write that sets the usage (never the index's).
COST_ATTRIBUTE = "cost"
#: ``cost`` as the last status change found it: the ``CostListing`` index's sort key.
LISTED_COST_ATTRIBUTE = "listCost"
#: The ``listCost`` of a job whose cost was not known at its status change (written before ``cost`` existed).
UNKNOWN_COST = -1
SWEEP_KEY_RUNNING = "running"
SWEEP_SHARDS = 8
LIST_SHARDS = 4

#: What the ``Listing`` index projects beside its keys: what a listing shows, written only by status changes.
LISTING_ATTRIBUTES = ["pipeline", "status", "error", "statusAt", "statusExpiresAt"]

#: What the ``CostListing`` index projects beside its keys: the creation time and the listing's summary.
COST_LISTING_ATTRIBUTES = ["createdAt", *LISTING_ATTRIBUTES]

#: The indexes keyed also on a filter's attribute, by that attribute: a filter on it reads only its matches.
FILTER_INDEXES = {"status": STATUS_LISTING_INDEX, "pipeline": PIPELINE_LISTING_INDEX}


def filter_index_attributes(key: str) -> list[str]:
    """What a filter's index projects: the listing's summary but the attribute it is keyed on."""
    return [name for name in LISTING_ATTRIBUTES if name != key]


#: The one status whose job item is rewritten without its status changing (claims, saves, commits): a
#: listing confirms from the item that such a job whose ``statusExpiresAt`` has passed is gone.
REWRITTEN_IN_STATUS = "running"

#: The small attributes listings and the sweep read from job items (no state, no result).
SUMMARY_ATTRIBUTES = [
    "pk",
    "createdAt",
    *LISTING_ATTRIBUTES,
    "updatedAt",
    "expiresAt",
    "nextPhase",
    "leaseOwner",
    "leaseExpiresAt",
    "notBefore",
    "sequence",
    "errorType",
    "errorPhase",
]


def job_pk(owner: str, job_id: str) -> str:
    """The partition key of a job and everything stored with it."""
    return f"JOB#{owner}#{job_id}"


def list_shard(owner: str, job_id: str) -> int:
    """The listing shard of a job (0 to ``LIST_SHARDS - 1``), fixed by a hash of its key."""
    return zlib.crc32(job_pk(owner, job_id).encode()) % LIST_SHARDS


def owner_key(owner: str, shard: int) -> str:
    """The ``Listing`` partition of one shard of one owner's jobs."""
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


def history_sk(run: int, sequence: int, token: str) -> str:
    """Sort key of the history item written by the write ``token``, which gives the job ``sequence`` in ``run``."""
    return f"{run_history_prefix(run)}{sequence:012d}#{token}"


def run_history_prefix(run: int) -> str:
    """The sort-key prefix of every history item of the job's run ``run``."""
    return f"{HISTORY_PREFIX}{run}#"


def run_history_until(run: int, sequence: int) -> str:
    """The highest sort key a history item of ``run`` written at ``sequence`` or before can have."""
    return f"{run_history_prefix(run)}{sequence:012d}#~"


def legacy_history_sk(token: str) -> str:
    """Sort key of a history item written before history items were ordered: ``HIST#<write token>``."""
    return f"{LEGACY_HISTORY_PREFIX}{token}"


def is_history_sk(sk: str) -> bool:
    """Whether ``sk`` is a history item's, of either form."""
    return sk.startswith((HISTORY_PREFIX, LEGACY_HISTORY_PREFIX))


def history_token(sk: str) -> str:
    """The write token a history item's sort key ends with (either form)."""
    return sk.rsplit("#", 1)[-1]


def history_sequence(sk: str) -> int | None:
    """The sequence in an ordered history item's sort key (None for another key)."""
    parts = sk.split("#")
    if len(parts) != 4 or parts[0] != HISTORY_PREFIX[:-1] or not parts[2].isdigit():
        return None
    return int(parts[2])


def save_sk(token: str) -> str:
    """Sort key of the state saved mid-phase by the write ``token``."""
    return f"{SAVE_PREFIX}{token}"


def entry_sk(token: str) -> str:
    """Sort key of the item keeping, apart from its history item, the state a commit by the write ``token`` set."""
    return f"{ENTRY_PREFIX}{token}"


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

    def index(name: str, pk: list[str], sk: str, projected: list[str] | None = None) -> GlobalSecondaryIndexTypeDef:
        projection: ProjectionTypeDef = {"ProjectionType": "KEYS_ONLY"}
        if projected:
            projection = {"ProjectionType": "INCLUDE", "NonKeyAttributes": projected}
        keys: list[KeySchemaElementTypeDef] = [{"AttributeName": part, "KeyType": "HASH"} for part in pk]
        keys.append({"AttributeName": sk, "KeyType": "RANGE"})
        return {
            "IndexName": name,
            "KeySchema": keys,
            "Projection": projection,
        }

    keyed: list[AttributeDefinitionTypeDef] = [{"AttributeName": key, "AttributeType": "S"} for key in FILTER_INDEXES]
    client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "owner", "AttributeType": "S"},
            {"AttributeName": "createdAt", "AttributeType": "N"},
            {"AttributeName": "sweepKey", "AttributeType": "S"},
            *keyed,
            {"AttributeName": LISTED_COST_ATTRIBUTE, "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            index(LISTING_INDEX, ["owner"], "createdAt", LISTING_ATTRIBUTES),
            *(
                index(name, ["owner", key], "createdAt", filter_index_attributes(key))
                for key, name in FILTER_INDEXES.items()
            ),
            index(STALLED_INDEX, ["sweepKey"], "createdAt"),
            index(COST_LISTING_INDEX, ["owner"], LISTED_COST_ATTRIBUTE, COST_LISTING_ATTRIBUTES),
        ],
    )
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
