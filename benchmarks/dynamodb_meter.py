"""A meter for DynamoDB: requests by operation, and write units as DynamoDB bills them on demand.

Attach it to the boto3 clients under test. It counts their calls through botocore's event hooks
(``before-parameter-build``, ``before-call``, ``after-call``) and, for every item a write touches,
reads the item before and after the write through a separate, un-instrumented client. From the two
it computes the write request units of the table (per item ``ceil(size / 1 KB)``, at least 1, the
larger of the item before and after; twice that in a transaction) and of every secondary index
(an entry put, deleted, moved or rewritten). The meter's own reads are never counted.

Reads are billed as DynamoDB bills them, whatever the request asked to be returned: a ``GetItem``
(and every key of a ``BatchGetItem``, every get of a ``TransactGetItems``) on the whole stored item,
rounded up to 4 KB per item, found or not; a ``Query`` or ``Scan`` on every item it evaluated before
its filter (from ``ExclusiveStartKey`` up to the ``LastEvaluatedKey`` it returned), summed and then
rounded up to 4 KB, and for an index on the index's entries. The meter finds those items by reading
them again through its own client. A strongly consistent read costs 1 unit per 4 KB, an eventually
consistent one half, a transactional one twice; the figures keep the first two apart.

Sizes follow "DynamoDB item sizes and formats" in the DynamoDB developer guide; a number's size is
the guide's approximation. A failed write is charged for the item as it stands, with no index
writes; a failed read is not charged. The meter is not thread-safe: meter one caller at a time.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from botocore.client import BaseClient
    from botocore.model import OperationModel

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
READ_OPERATIONS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
S3_PUT_TIER = frozenset(
    {
        "PutObject",
        "CopyObject",
        "ListObjects",
        "ListObjectsV2",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
    }
)
S3_GET_TIER = frozenset({"GetObject", "HeadObject"})

AttributeValue = Mapping[str, Any]
Item = Mapping[str, AttributeValue]
_CONTEXT_KEY = "dynamodb_meter"


# -- item sizes ------------------------------------------------------------------------------


def number_size(text: str) -> int:
    """Bytes of a number: one per two significant digits, plus one (plus one more when negative)."""
    value = str(text).strip()
    mantissa = re.split("[eE]", value.lstrip("+-"), maxsplit=1)[0].replace(".", "").strip("0")
    return math.ceil(max(len(mantissa), 1) / 2) + 1 + (1 if value.startswith("-") else 0)


def _binary_length(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return len(bytes(value))


def value_size(value: AttributeValue) -> int:
    """Bytes of one attribute value (without its name)."""
    if len(value) != 1:
        raise ValueError(f"not an attribute value: {value!r}")
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(str(inner).encode("utf-8"))
    if kind == "N":
        return number_size(inner)
    if kind == "B":
        return _binary_length(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(element).encode("utf-8")) for element in inner)
    if kind == "NS":
        return sum(number_size(element) for element in inner)
    if kind == "BS":
        return sum(_binary_length(element) for element in inner)
    if kind == "M":
        return 3 + sum(len(name.encode("utf-8")) + value_size(element) + 1 for name, element in inner.items())
    if kind == "L":
        return 3 + sum(value_size(element) + 1 for element in inner)
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: Item | None) -> int:
    """Bytes of an item: every attribute's name (UTF-8) and value; 0 for no item."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    """Write request units of one item write of ``size`` bytes: 1 per KB started, at least 1."""
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size: int) -> int:
    """Read request units of a strongly consistent read of ``size`` bytes: 1 per 4 KB started, at least 1."""
    return max(1, math.ceil(size / READ_UNIT_BYTES))


def _canonical(value: Any) -> Any:
    """A comparable form of an attribute value (sets compare unordered, binary as bytes)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(key), _canonical(inner)) for key, inner in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_canonical(inner) for inner in value)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def _same(left: AttributeValue | None, right: AttributeValue | None) -> bool:
    if left is None or right is None:
        return left is right
    (kind,) = left
    if kind in ("SS", "NS", "BS") and kind in right:
        return {_canonical(x) for x in left[kind]} == {_canonical(x) for x in right[kind]}
    return bool(_canonical(left) == _canonical(right))


def updated_attributes(expression: str, names: Mapping[str, str] | None = None) -> frozenset[str]:
    """The top-level attributes an ``UpdateExpression`` sets, removes, adds to or deletes from."""
    names = names or {}
    parts = re.split(r"\b(SET|REMOVE|ADD|DELETE)\b", expression, flags=re.IGNORECASE)
    roots: set[str] = set()
    for keyword, body in zip(parts[1::2], parts[2::2], strict=True):
        for action in _split_top_level(body):
            action = action.strip()
            if not action:
                continue
            path = action.split("=", 1)[0] if keyword.upper() == "SET" else action.split()[0]
            root = re.split(r"[.\[]", path.strip(), maxsplit=1)[0].strip()
            roots.add(names.get(root, root))
    return frozenset(roots)


def _split_top_level(body: str) -> Iterator[str]:
    depth, start = 0, 0
    for index, char in enumerate(body):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            yield body[start:index]
            start = index + 1
    yield body[start:]


# -- table layout ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexShape:
    """One secondary index: its key attributes and what it projects."""

    name: str
    keys: tuple[str, ...]
    projection: str
    included: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TableShape:
    """A table's primary key and secondary indexes, as DescribeTable reports them."""

    name: str
    keys: tuple[str, ...]
    indexes: tuple[IndexShape, ...] = ()

    @classmethod
    def from_description(cls, table: Mapping[str, Any]) -> TableShape:
        """The shape of a DescribeTable ``Table``."""
        indexes = [
            IndexShape(
                name=index["IndexName"],
                keys=tuple(key["AttributeName"] for key in index["KeySchema"]),
                projection=index.get("Projection", {}).get("ProjectionType", "ALL"),
                included=frozenset(index.get("Projection", {}).get("NonKeyAttributes", [])),
            )
            for index in [*table.get("GlobalSecondaryIndexes", []), *table.get("LocalSecondaryIndexes", [])]
        ]
        keys = tuple(key["AttributeName"] for key in table["KeySchema"])
        return cls(table["TableName"], keys, tuple(indexes))

    def key_of(self, item: Item) -> dict[str, AttributeValue]:
        """The primary key of ``item``."""
        return {name: item[name] for name in self.keys if name in item}

    def index_entry(self, index: IndexShape, item: Item | None) -> dict[str, AttributeValue] | None:
        """What ``index`` holds for ``item``: None when the item lacks an index key (a sparse index)."""
        if item is None or any(name not in item for name in index.keys):
            return None
        if index.projection == "ALL":
            return dict(item)
        wanted = {*self.keys, *index.keys, *(index.included if index.projection == "INCLUDE" else ())}
        return {name: value for name, value in item.items() if name in wanted}

    def index_writes(self, old: Item | None, new: Item | None) -> tuple[int, int]:
        """(index writes, index write units) that changing ``old`` into ``new`` costs over all indexes."""
        writes = units = 0
        for index in self.indexes:
            before, after = self.index_entry(index, old), self.index_entry(index, new)
            if before is None and after is None:
                continue
            if before is None or after is None:  # enters or leaves the index
                writes, units = writes + 1, units + write_units(item_size(after or before))
            elif any(not _same(before[key], after[key]) for key in index.keys):  # moves: delete + put
                writes, units = writes + 2, units + write_units(item_size(before)) + write_units(item_size(after))
            elif set(before) != set(after) or any(not _same(before[name], after[name]) for name in before):
                writes, units = writes + 1, units + write_units(item_size(after))
        return writes, units


# -- figures ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteRecord:
    """One item written (or attempted) by a write request, with what it cost."""

    operation: str
    table: str
    key: dict[str, AttributeValue]
    attributes: frozenset[str]
    size_before: int
    size_after: int
    table_units: int
    index_units: int
    index_writes: int
    failed: bool = False

    @property
    def write_units(self) -> int:
        """Table and index write units together."""
        return self.table_units + self.index_units


@dataclass
class Figures:
    """What the metered clients did: calls by service and operation, units, and every item written."""

    calls: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    table_units: int = 0
    index_units: int = 0
    consistent_read_units: float = 0.0
    """Read units of strongly consistent and transactional reads."""
    eventual_read_units: float = 0.0
    """Read units of eventually consistent reads (half a unit per 4 KB)."""
    records: list[WriteRecord] = field(default_factory=list)

    @property
    def read_units(self) -> float:
        """Read request units as DynamoDB bills them, every kind of read together."""
        return self.consistent_read_units + self.eventual_read_units

    @property
    def dynamodb(self) -> Counter[str]:
        """DynamoDB requests by operation."""
        return self.calls["dynamodb"]

    @property
    def s3(self) -> Counter[str]:
        """S3 requests by operation."""
        return self.calls["s3"]

    @property
    def write_requests(self) -> int:
        """DynamoDB write requests (a transaction or a batch is one)."""
        return sum(self.dynamodb[name] for name in WRITE_OPERATIONS)

    @property
    def read_requests(self) -> int:
        """DynamoDB read requests."""
        return sum(self.dynamodb[name] for name in READ_OPERATIONS)

    @property
    def write_units(self) -> int:
        """Write request units, table and indexes."""
        return self.table_units + self.index_units

    @property
    def s3_calls(self) -> int:
        """S3 requests of any kind."""
        return sum(self.s3.values())

    @property
    def s3_put_tier(self) -> int:
        """S3 requests priced as PUT (PUT, COPY, POST, LIST)."""
        return sum(self.s3[name] for name in S3_PUT_TIER)

    @property
    def s3_get_tier(self) -> int:
        """S3 requests priced as GET."""
        return sum(self.s3[name] for name in S3_GET_TIER)

    def written_attributes(self) -> frozenset[str]:
        """Every attribute name any write put, set, removed or changed."""
        return frozenset().union(*(record.attributes for record in self.records))


@dataclass
class _Target:
    operation: str
    table: str
    key: dict[str, AttributeValue]
    attributes: frozenset[str]
    transactional: bool = False
    shape: TableShape | None = None
    before: dict[str, AttributeValue] | None = None


@dataclass
class _Pending:
    params: Mapping[str, Any]
    targets: list[_Target] = field(default_factory=list)


# -- the meter -------------------------------------------------------------------------------


class DynamoDBMeter:
    """Counts the calls of a DynamoDB client (and of S3, Lambda, SQS... clients) and prices the writes.

    ``reader`` is the un-instrumented client used to read items and describe tables; by default a new
    client for the same region and endpoint. ``take()`` returns the figures so far and starts afresh.
    """

    def __init__(
        self,
        dynamodb: BaseClient,
        *,
        s3: BaseClient | None = None,
        others: Iterable[BaseClient] = (),
        reader: BaseClient | None = None,
    ) -> None:
        self._reader: Any = reader or boto3.client(
            "dynamodb", region_name=dynamodb.meta.region_name, endpoint_url=dynamodb.meta.endpoint_url
        )
        self._shapes: dict[str, TableShape | None] = {}
        self._figures = Figures()
        self._hooks: list[tuple[BaseClient, str, str]] = []
        self.enabled = True
        self._hook(dynamodb, "before-parameter-build.dynamodb", self._remember_params)
        self._hook(dynamodb, "before-call.dynamodb", self._before_dynamodb)
        self._hook(dynamodb, "after-call.dynamodb", self._after_dynamodb)
        for client in [*([s3] if s3 is not None else []), *others]:
            self._hook(client, f"before-call.{client.meta.service_model.service_id.hyphenize()}", self._count)

    def _hook(self, client: BaseClient, event: str, handler: Callable[..., None]) -> None:
        unique_id = f"{_CONTEXT_KEY}-{id(self)}-{event}"
        client.meta.events.register(event, handler, unique_id=unique_id)
        self._hooks.append((client, event, unique_id))

    def detach(self) -> None:
        """Remove every hook from the clients."""
        for client, event, unique_id in self._hooks:
            client.meta.events.unregister(event, unique_id=unique_id)
        self._hooks.clear()

    @property
    def figures(self) -> Figures:
        """The figures since the last ``take()`` (live; do not keep)."""
        return self._figures

    def take(self) -> Figures:
        """The figures since the last ``take()``; the meter starts again from zero."""
        taken, self._figures = self._figures, Figures()
        return taken

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls made inside are neither counted nor priced."""
        enabled, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = enabled

    # -- hooks -----------------------------------------------------------------------------

    def _count(self, model: OperationModel, **_: Any) -> None:
        if self.enabled:
            service = model.service_model.service_id.hyphenize()
            self._figures.calls[service][model.name] += 1

    def _remember_params(
        self, params: Mapping[str, Any], model: OperationModel, context: dict[str, Any], **_: Any
    ) -> None:
        if self.enabled:
            context[_CONTEXT_KEY] = _Pending(params)

    def _before_dynamodb(self, model: OperationModel, context: dict[str, Any], **_: Any) -> None:
        pending: _Pending | None = context.get(_CONTEXT_KEY)
        if not self.enabled or pending is None:
            context.pop(_CONTEXT_KEY, None)
            return
        self._figures.calls["dynamodb"][model.name] += 1
        if model.name in WRITE_OPERATIONS:
            pending.targets = self._targets(model.name, pending.params)
            for target in pending.targets:
                target.before = self._read(target)

    def _after_dynamodb(
        self, http_response: Any, parsed: Mapping[str, Any], model: OperationModel, context: dict[str, Any], **_: Any
    ) -> None:
        pending: _Pending | None = context.pop(_CONTEXT_KEY, None)
        if pending is None:
            return
        failed = getattr(http_response, "status_code", 200) >= 300 or "Error" in parsed
        if model.name in WRITE_OPERATIONS:
            unprocessed = self._unprocessed(parsed) if model.name == "BatchWriteItem" and not failed else set()
            for target in pending.targets:
                if (target.table, _canonical(target.key)) in unprocessed:
                    continue  # not written by this request; the caller sends it again
                self._price_write(target, failed=failed)
        elif model.name in READ_OPERATIONS and not failed:
            self._price_read(model.name, pending.params, parsed)

    # -- writes ----------------------------------------------------------------------------

    def _shape(self, table: str) -> TableShape | None:
        if table not in self._shapes:
            try:
                self._shapes[table] = TableShape.from_description(self._reader.describe_table(TableName=table)["Table"])
            except ClientError:
                self._shapes[table] = None
        return self._shapes[table]

    def _target(
        self, operation: str, body: Mapping[str, Any], kind: str, *, transactional: bool = False
    ) -> _Target | None:
        table = str(body["TableName"]) if "TableName" in body else ""
        return self._target_in(table, operation, body, kind, transactional=transactional)

    def _target_in(
        self, table: str, operation: str, body: Mapping[str, Any], kind: str, *, transactional: bool = False
    ) -> _Target | None:
        shape = self._shape(table)
        if shape is None:
            return None
        if kind == "Put":
            item: Item = body["Item"]
            key, attributes = shape.key_of(item), frozenset(item)
        else:
            key = dict(body["Key"])
            attributes = frozenset()
            if kind == "Update":
                attributes = updated_attributes(
                    body.get("UpdateExpression", ""), body.get("ExpressionAttributeNames")
                ) | frozenset(body.get("AttributeUpdates", {}))
        return _Target(operation, table, key, attributes, transactional, shape)

    def _targets(self, operation: str, params: Mapping[str, Any]) -> list[_Target]:
        found: list[_Target | None] = []
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            found.append(self._target(operation, params, operation.removesuffix("Item")))
        elif operation == "TransactWriteItems":
            for action in params.get("TransactItems", []):
                for kind, body in action.items():
                    found.append(self._target(f"{operation}/{kind}", body, kind, transactional=True))
        elif operation == "BatchWriteItem":
            for table, requests in params.get("RequestItems", {}).items():
                for request in requests:
                    for kind, body in request.items():
                        found.append(self._target_in(table, f"{operation}/{kind}", body, kind.removesuffix("Request")))
        return [target for target in found if target is not None]

    def _unprocessed(self, parsed: Mapping[str, Any]) -> set[tuple[str, Any]]:
        """(table, key) of the items a BatchWriteItem left unprocessed."""
        found: set[tuple[str, Any]] = set()
        for table, requests in parsed.get("UnprocessedItems", {}).items():
            shape = self._shape(table)
            for request in requests:
                if "DeleteRequest" in request:
                    found.add((table, _canonical(request["DeleteRequest"]["Key"])))
                elif "PutRequest" in request and shape is not None:
                    found.add((table, _canonical(shape.key_of(request["PutRequest"]["Item"]))))
        return found

    def _read(self, target: _Target) -> dict[str, AttributeValue] | None:
        try:
            response = self._reader.get_item(TableName=target.table, Key=target.key, ConsistentRead=True)
        except ClientError:
            return None
        item = response.get("Item")
        return dict(item) if item else None

    # -- reads -----------------------------------------------------------------------------

    def _stored_size(self, table: str, key: Mapping[str, Any]) -> int:
        """Bytes of the whole item stored under ``key`` (0: none), read through the meter's own client."""
        try:
            item = self._reader.get_item(TableName=table, Key=dict(key), ConsistentRead=True).get("Item")
        except ClientError:
            return 0
        return item_size(item)

    def _charge(self, units: float, *, consistent: bool) -> None:
        if consistent:
            self._figures.consistent_read_units += units
        else:
            self._figures.eventual_read_units += units / 2

    def _price_read(self, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> None:
        if operation == "GetItem":
            size = self._stored_size(params["TableName"], params["Key"])
            self._charge(read_units(size), consistent=bool(params.get("ConsistentRead")))
        elif operation == "TransactGetItems":
            for action in params.get("TransactItems", []):
                get = action["Get"]
                self._charge(2 * read_units(self._stored_size(get["TableName"], get["Key"])), consistent=True)
        elif operation == "BatchGetItem":
            unprocessed = parsed.get("UnprocessedKeys", {})
            for table, request in params.get("RequestItems", {}).items():
                left = [_canonical(key) for key in unprocessed.get(table, {}).get("Keys", [])]
                for key in request.get("Keys", []):
                    if _canonical(key) not in left:
                        units = read_units(self._stored_size(table, key))
                        self._charge(units, consistent=bool(request.get("ConsistentRead")))
        else:
            size = sum(item_size(item) for item in self._evaluated(operation, params, parsed))
            consistent = bool(params.get("ConsistentRead")) and "IndexName" not in params
            self._charge(read_units(size), consistent=consistent)

    def _evaluated(self, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> list[Item]:
        """The items (or index entries) a Query or Scan evaluated, whole, before its filter and projection."""
        request: dict[str, Any] = {
            name: params[name]
            for name in ("TableName", "IndexName", "KeyConditionExpression", "ScanIndexForward", "Segment")
            if name in params
        }
        if "TotalSegments" in params:
            request["TotalSegments"] = params["TotalSegments"]
        if "KeyConditions" in params:
            request["KeyConditions"] = params["KeyConditions"]
        used = str(params.get("KeyConditionExpression", ""))
        for kind in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {
                name: value for name, value in params.get(kind, {}).items() if re.search(f"{re.escape(name)}\\b", used)
            }
            if kept:
                request[kind] = kept
        last = parsed.get("LastEvaluatedKey")
        start = params.get("ExclusiveStartKey")
        found: list[Item] = []
        read = getattr(self._reader, "query" if operation == "Query" else "scan")
        while True:
            page = read(**request, **({"ExclusiveStartKey": start} if start else {}))
            for item in page.get("Items", []):
                found.append(item)
                if last is not None and all(_same(item.get(name), value) for name, value in last.items()):
                    return found
            start = page.get("LastEvaluatedKey")
            if start is None:
                return found

    # -- writes, priced ----------------------------------------------------------------------

    def _price_write(self, target: _Target, *, failed: bool) -> None:
        after = target.before if failed else self._read(target)
        size_before, size_after = item_size(target.before), item_size(after)
        table_units = write_units(max(size_before, size_after)) * (2 if target.transactional else 1)
        index_writes = index_units = 0
        if target.shape is not None and not failed:
            index_writes, index_units = target.shape.index_writes(target.before, after)
        self._figures.table_units += table_units
        self._figures.index_units += index_units
        self._figures.records.append(
            WriteRecord(
                operation=target.operation,
                table=target.table,
                key=target.key,
                attributes=target.attributes,
                size_before=size_before,
                size_after=size_after,
                table_units=table_units,
                index_units=index_units,
                index_writes=index_writes,
                failed=failed,
            )
        )
