"""DynamoDB storage, split by what it stores: jobs and their transitions, history, listings, maps, lessons.

:class:`DynamoDBStorage` is the store; the table's layout is :mod:`cairn.aws.dynamodb.schema`, the
item codec :mod:`cairn.aws.dynamodb.codec`. The listing reads (and ``StalledJob``) are imported on
first use: a phase function never lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .storage import DynamoDBStorage

if TYPE_CHECKING:
    from .stalled import StalledJob

__all__ = ["DynamoDBStorage", "StalledJob"]


def __getattr__(name: str) -> Any:
    if name == "StalledJob":
        from .stalled import StalledJob

        return StalledJob
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
