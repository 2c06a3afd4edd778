"""Reading a job while saves replace the parts holding its state: the one rule every read of a job's state follows.

A save writes its state's item (and, for a large state, its S3 object) first, then the job item naming it,
then removes the item and object it replaced. A read that took the job item before such a save may find
the old part gone (:class:`~cairn.aws.payloads.MissingPartError`). It reads again, job item first: a save
landed in between, and the new read answers the newer state. A part that reads made after it was found
missing still name is missing while current: the job is corrupt. No sleeps; a bounded number of reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..payloads import MissingPartError

#: How many times a job is read while saves keep replacing the part holding its state.
READ_ATTEMPTS = 10
#: How many reads in a row must find the same part missing for the job to be corrupt.
MISSING_IN_A_ROW = 3

_T = TypeVar("_T")


def read_current(read: Callable[[int], _T]) -> _T:
    """``read(attempt)``, made again while a read finds missing a part of the job it named.

    Each call reads the job item afresh (``attempt`` counts from 0, for a caller whose first read starts
    from an item it already holds). A part that MISSING_IN_A_ROW reads in a row find missing (reads made
    after it was first found missing still name it), or a part missing at the last attempt, is raised: a
    CorruptJobError naming it.
    """
    missing: str | None = None
    in_a_row = 0
    for attempt in range(READ_ATTEMPTS):
        try:
            return read(attempt)
        except MissingPartError as exc:
            in_a_row = in_a_row + 1 if exc.part == missing else 1
            if in_a_row == MISSING_IN_A_ROW or attempt == READ_ATTEMPTS - 1:
                raise
            missing = exc.part
    raise AssertionError("unreachable: the last attempt returns or raises")
