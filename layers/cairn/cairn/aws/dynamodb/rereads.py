"""Reading a job while saves replace the parts holding its state: the one rule every read of a job's state follows.

A save writes its state's item (and, for a large state, its S3 object) first, then the job item naming it;
the item and object it replaced are removed by the save after (or the end of the phase). A read that took
the job item before two such saves may find the old part gone (:class:`~cairn.aws.payloads.MissingPartError`).
It reads again, job item first: saves landed in between, and the new read answers the newer state. A part
that a read made after it was found missing still names is missing while current: the job is corrupt. No
sleeps; a bounded number of reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..payloads import MissingPartError

#: How many times a job is read while saves keep replacing the part holding its state.
READ_ATTEMPTS = 10

_T = TypeVar("_T")


def read_current(read: Callable[[int], _T]) -> _T:
    """``read(attempt)``, made again while each read finds missing a part that the one before did not.

    Each call reads the job item afresh (``attempt`` counts from 0, for a caller whose first read starts
    from an item it already holds). The same part missing twice in a row, or a part missing at the last
    attempt, is raised: a CorruptJobError naming it.
    """
    missing: str | None = None
    for attempt in range(READ_ATTEMPTS):
        try:
            return read(attempt)
        except MissingPartError as exc:
            if exc.part == missing or attempt == READ_ATTEMPTS - 1:
                raise
            missing = exc.part
    raise AssertionError("unreachable: the last attempt returns or raises")
