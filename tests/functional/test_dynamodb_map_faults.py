"""A map's finishes on DynamoDB under transient faults: each item counts once on the map's record.

A finish is one TransactWriteItems (the item's put and one more on the map's count). One cancelled by
another transaction on the map's record at the same moment wrote nothing and is sent again; one that
landed but whose response was lost is recognised by its write token and never sent again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from cairn import Cairn, Done, InlineScheduler, JobStatus, Map, PhaseContext, Pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.map_items import _cancellation_reasons
from cairn.testing.faults import LosingResponses
from tests.functional.conftest import Moto
from tests.support import FakeClock

ITEMS = 5


def _mapping() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("mapped")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(ITEMS)), phase="item", then="total", max_concurrency=2)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state * 10)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.results)

    return pipeline


def _run(storage: DynamoDBStorage, clock: FakeClock) -> None:
    jobs = Cairn(_mapping(), storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start("mapped", "mapped-1", state={})
    jobs.run_until_idle()
    done = jobs.get("mapped-1")
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == [index * 10 for index in range(ITEMS)]
    [record] = storage.get_maps("mapped-1")
    assert record.done == ITEMS


class _Conflicting:
    """A client whose every other transaction is cancelled before it reaches the table, as DynamoDB cancels
    one that meets another transaction on the same item (``TransactionConflict``)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.cancelled = 0
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name != "transact_write_items":
            return attribute

        def transact(**kwargs: Any) -> Any:
            self.calls += 1
            if self.calls % 2 == 1:
                self.cancelled += 1
                raise ClientError(
                    {
                        "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
                        "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
                    },
                    "TransactWriteItems",
                )
            return attribute(**kwargs)

        return transact


def test_a_finish_cancelled_by_a_conflicting_transaction_is_sent_again_and_counted_once(
    moto: Moto, clock: FakeClock
) -> None:
    conflicting = _Conflicting(moto.dynamodb)
    _run(DynamoDBStorage(moto.table, client=conflicting, clock=clock), clock)  # type: ignore[arg-type]
    assert conflicting.cancelled == ITEMS


def test_a_finish_whose_response_is_lost_is_recognised_and_counted_once(moto: Moto, clock: FakeClock) -> None:
    lose: Callable[[str, int], bool] = lambda name, number: name == "transact_write_items"  # noqa: E731
    losing = LosingResponses(moto.dynamodb, lose)
    _run(DynamoDBStorage(moto.table, client=losing, clock=clock), clock)  # type: ignore[arg-type]
    assert losing.lost == ["transact_write_items"] * ITEMS


def test_the_reasons_of_a_cancelled_transaction_are_read_from_its_response_or_its_message() -> None:
    listed = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException"},
            "CancellationReasons": [{"Code": "ConditionalCheckFailed"}],
        },
        "TransactWriteItems",
    )
    assert _cancellation_reasons(listed) == ["ConditionalCheckFailed"]
    message = (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"
    )
    in_message = ClientError({"Error": {"Code": "TransactionCanceledException", "Message": message}}, "X")
    assert _cancellation_reasons(in_message) == ["None", "ConditionalCheckFailed"]
