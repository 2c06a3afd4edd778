"""Moto's DynamoDB at a cost that follows what a request touches: ``cairn dev`` and load tests at thousands of jobs.

In-process moto does two things whose cost grows with the whole table rather than with the request:
``TransactWriteItems`` deep-copies every table it names before it starts (for its rollback), and a
``Query`` on the table's own key sorts every item of the table before it keeps the partition asked
for. At 10,000 jobs or map items that makes moto's time, not cairn's, the figure a load test reports, and
a page of ``cairn dev``'s job list outlast the API function's timeout.

:func:`proportional_moto` changes only how moto gets there, never what it answers:

- a transaction keeps a copy of each item it names (or notes it absent) and puts those back when it
  is cancelled, instead of a copy of each table; moto's own rollback is left with nothing to copy;
- a ``Query`` on the table's key (no index) looks only at its partition, and only at the items its
  key condition keeps;
- a ``Query`` on an index is given the table's items that have every attribute of the index's key and match
  the query's hash key (moto keeps no other), already in the order moto sorts them into (by the index's key and
  the table's, an order no two items share, so the order they come in changes nothing but the time moto's sort
  takes); scans and everything else are moto's own.

``tests/benchmarks/test_moto_speedups.py`` checks that moto answers the same with and without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import decimal
import functools
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import moto.dynamodb.models as backend_module
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table


@dataclass(frozen=True)
class _Asked:
    """What a ``Query`` asks for, while moto answers it: a partition, maybe a range (no partition: an index's)."""

    table: Table
    hash_key: DynamoType | None
    comparison: str | None
    bounds: list[DynamoType]
    index_key: frozenset[str] = frozenset()
    """An index's key attributes (a query on an index)."""
    index_hash: tuple[tuple[str, tuple[str, Any] | None], ...] = ()
    """An index query's hash key conditions: each attribute's name, its type and value as moto compares them."""
    index_order: tuple[str, ...] = ()
    """The attributes moto sorts an index's items by: the index's hash and range keys, then the table's."""


_ASKED: contextvars.ContextVar[_Asked | None] = contextvars.ContextVar("asked", default=None)

_Key = tuple[str, DynamoType, DynamoType | None]


class _TablesNotCopied:
    """Stands in for the ``copy`` module inside moto's backend: a table is not copied, anything else is."""

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _item_key(backend: DynamoDBBackend, operation: dict[str, Any]) -> _Key | None:
    """The table and key one transaction entry writes, or None when moto will refuse the entry itself."""
    try:
        table_name = operation["TableName"]
        table = backend.tables[table_name]
        key = operation.get("Key") or operation["Item"]
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    except (KeyError, TypeError, AttributeError):
        return None
    return table_name, hash_value, range_value


def _saved_items(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> dict[_Key, Item | None]:
    """A copy of each item the transaction names, as it is before the transaction (None: absent)."""
    saved: dict[_Key, Item | None] = {}
    for entry in transact_items:
        operation = next(iter(entry.values()), None) if isinstance(entry, dict) else None
        key = _item_key(backend, operation) if isinstance(operation, dict) else None
        if key is not None and key not in saved:
            table_name, hash_value, range_value = key
            current = backend.tables[table_name].get_item(hash_value, range_value)
            saved[key] = copy.deepcopy(current)
    return saved


def _put_back(backend: DynamoDBBackend, saved: dict[_Key, Item | None]) -> None:
    """Every saved item as it was before the transaction."""
    for (table_name, hash_value, range_value), item in saved.items():
        table = backend.tables.get(table_name)
        if table is None:
            continue
        if table.range_key_attr:
            partition = table.items.get(hash_value)
            if item is not None:
                table.items[hash_value][range_value] = item
            elif partition is not None:
                partition.pop(range_value, None)
                if not partition:
                    del table.items[hash_value]
        elif item is not None:
            table.items[hash_value] = item  # type: ignore[assignment]  # a table without a range key
        else:
            table.items.pop(hash_value, None)


def _transactions_roll_back_items(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        saved = _saved_items(self, transact_items)
        try:
            original(self, transact_items)
        except Exception:
            _put_back(self, saved)
            raise

    return transact_write_items


def _index_asked(table: Table, schema: list[dict[str, str]], conditions: list[tuple[str, DynamoType]]) -> _Asked:
    """What a ``Query`` on an index with ``schema`` asks for, its hash key ``conditions`` as moto parsed them."""
    order = [key["AttributeName"] for kind in ("HASH", "RANGE") for key in schema if key["KeyType"] == kind]
    order += [name for name in (table.hash_key_attr, table.range_key_attr) if name and name not in order]
    return _Asked(
        table,
        None,
        None,
        [],
        index_key=frozenset(key["AttributeName"] for key in schema),
        index_hash=tuple((name, _compared(value)) for name, value in conditions),
        index_order=tuple(order),
    )


def _queries_read_their_partition(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def query(self: Table, hash_key: DynamoType | None, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        asked = None
        if index_name is None and hash_key is not None:
            comparison = args[0] if args else kwargs.get("range_comparison")
            bounds = list(args[1] if len(args) > 1 else kwargs.get("range_objs") or [])
            single_range_key = len(kwargs.get("range_key_conditions") or []) <= 1
            asked = _Asked(self, hash_key, comparison if single_range_key else None, bounds)
        elif index_name is not None:
            index = next((index for index in self.all_indexes() if index.name == index_name), None)
            if index is not None:  # else moto refuses the query
                asked = _index_asked(self, index.schema, kwargs.get("hash_key_conditions") or [])
        token = _ASKED.set(asked)
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            _ASKED.reset(token)

    return query


def _partition_values(table: Table, partition: Any) -> list[Item]:
    """A partition's items: its range keys' items, or the item itself in a table without a range key."""
    return list(partition.values()) if table.range_key_attr else [partition]


def _compared(value: Any) -> tuple[str, Any] | None:
    """A key attribute's type and value as moto compares them (``DynamoType.__eq__``); None if not a DynamoType."""
    if not isinstance(value, DynamoType):
        return None
    return (value.type, value.value if value.type == "S" else value.cast_value)


def _sort_value(value: DynamoType) -> Any:
    """A key value as moto orders it: numbers as numbers, strings and binaries as they are."""
    return decimal.Decimal(value.value) if value.type == "N" else value.value


def _index_partition(table: Table, asked: _Asked) -> list[Item]:
    """The items of an index's partition, in the order moto sorts them into (its sort then has nothing to move).

    Moto keeps, of the items it is given, those that have the index's key and match the query's hash conditions,
    then sorts them; it is given only those, already in its order where their keys allow it (any order would do:
    moto sorts them by the index's and the table's key, which no two items share).
    """
    hash_values = asked.index_hash
    kept = [
        item
        for partition in table.items.values()
        for item in _partition_values(table, partition)
        if item.attrs.keys() >= asked.index_key
        and all(_compared(item.attrs[name]) == expected for name, expected in hash_values)
    ]
    with contextlib.suppress(KeyError, TypeError, ArithmeticError):  # else moto sorts them from scratch
        kept.sort(key=lambda item: tuple(_sort_value(item.attrs[name]) for name in asked.index_order))
    return kept


def _partition_items(original: Callable[[Table], list[Item]]) -> Callable[[Table], list[Item]]:
    @functools.wraps(original)
    def all_items(self: Table) -> list[Item]:
        asked = _ASKED.get()
        if asked is None or asked.table is not self:
            return original(self)
        if asked.hash_key is None:  # an index's query: moto keeps only the items in the index's partition
            return _index_partition(self, asked)
        partition = self.items.get(asked.hash_key)
        if partition is None:
            return []
        if not self.range_key_attr:
            return [partition]  # type: ignore[list-item]
        items: list[Item] = list(partition.values())
        if asked.comparison:  # moto compares every item it is given again: this only gives it fewer
            items = [
                item for item in items if item.range_key and item.range_key.compare(asked.comparison, asked.bounds)
            ]
        return sorted(items, key=lambda item: item.range_key)  # type: ignore[arg-type,return-value]  # always set here

    return all_items


@contextmanager
def proportional_moto() -> Iterator[None]:
    """Within the block, moto's transactions and table-key queries cost what they touch (same answers)."""
    with ExitStack() as patches:
        patches.enter_context(mock.patch.object(backend_module, "copy", _TablesNotCopied()))
        patches.enter_context(
            mock.patch.object(
                DynamoDBBackend,
                "transact_write_items",
                _transactions_roll_back_items(DynamoDBBackend.transact_write_items),
            )
        )
        patches.enter_context(mock.patch.object(Table, "query", _queries_read_their_partition(Table.query)))
        patches.enter_context(mock.patch.object(Table, "all_items", _partition_items(Table.all_items)))
        yield
