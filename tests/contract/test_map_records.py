"""The storage port's map records on every store: one item read by its key, the map's own record and its count.

An item's transitions read only its record (``get_item``); the write that finishes an item counts it on
the map's record in the same atomic step (``write_item(finishes=True)``), so the count grows by exactly
one per item whatever is sent again; ``mark_map`` gives each of the map's marks (the one hand-off to ``then``,
the usage joined to the job's) to one token.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn import FileStorage
from cairn.core.models import FanOut, MapItem, MapMark, MapRecord
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock

JOB = "mapped-1"
MAP = "a1b2c3"
EXPIRES = 1_900_000_000
COUNT = 3


def _record(fan_out: str = MAP, *, created_at: int = 1, then: str = "merge") -> MapRecord:
    return MapRecord(
        fan_out=FanOut(id=fan_out, phase="page", count=COUNT, max_concurrency=2),
        started_by="split",
        then=then,
        created_at=created_at,
    )


def _new_map(storage: Storage, fan_out: str = MAP, *, created_at: int = 1, then: str = "merge") -> None:
    for index in range(COUNT):
        item = MapItem(index=index, input={"page": index}, version=1)
        assert storage.write_item(JOB, fan_out, item, expected_version=None, expires_at=EXPIRES)
    storage.create_map(JOB, _record(fan_out, created_at=created_at, then=then), expires_at=EXPIRES)


def _done(item: MapItem, token: str) -> MapItem:
    return item.model_copy(
        update={"status": "done", "result": item.index * 10, "version": item.version + 1, "write_token": token}
    )


def _finish(storage: Storage, index: int, token: str) -> bool:
    current = storage.get_item(JOB, MAP, index)
    assert current is not None
    return storage.write_item(
        JOB, MAP, _done(current, token), expected_version=current.version, expires_at=EXPIRES, finishes=True
    )


def test_get_item_reads_one_record_by_its_index(storage: Storage) -> None:
    _new_map(storage)
    other = MapItem(index=1, input="another map's", version=1)
    assert storage.write_item(JOB, "ffff", other, expected_version=None, expires_at=EXPIRES)

    item = storage.get_item(JOB, MAP, 1)
    assert item is not None
    assert item.input == {"page": 1}
    assert storage.get_item(JOB, MAP, COUNT) is None
    assert storage.get_item(JOB, "nomap", 0) is None
    assert storage.get_item("another-job", MAP, 0) is None
    assert [item.index for item in storage.get_items(JOB, MAP)] == list(range(COUNT))


def test_a_new_map_record_counts_nothing_and_is_not_written_twice(storage: Storage) -> None:
    _new_map(storage)
    storage.create_map(JOB, _record().model_copy(update={"then": "written again"}), expires_at=EXPIRES)

    record = storage.get_map(JOB, MAP)
    assert record == _record()
    assert record.done == 0
    assert record.handed_off is None
    assert storage.get_map(JOB, "nomap") is None


def test_each_finish_counts_once_whatever_is_sent_again(storage: Storage) -> None:
    _new_map(storage)
    assert _finish(storage, 0, "t0")
    current = storage.get_item(JOB, MAP, 0)
    assert current is not None
    assert current.status == "done"

    # the same finishing write sent again (a lost response): its version moved, so nothing is written or counted
    again = _done(current.model_copy(update={"version": current.version - 1}), "t0")
    assert not storage.write_item(
        JOB, MAP, again, expected_version=current.version - 1, expires_at=EXPIRES, finishes=True
    )
    record = storage.get_map(JOB, MAP)
    assert record is not None
    assert record.done == 1

    # a write that does not finish the item (a claim, a retry) counts nothing
    claimed = storage.get_item(JOB, MAP, 1)
    assert claimed is not None
    held = claimed.model_copy(update={"lease_owner": "w", "version": claimed.version + 1, "write_token": "c1"})
    assert storage.write_item(JOB, MAP, held, expected_version=claimed.version, expires_at=EXPIRES)
    assert (storage.get_map(JOB, MAP) or _record()).done == 1

    assert _finish(storage, 1, "t1")
    assert _finish(storage, 2, "t2")
    record = storage.get_map(JOB, MAP)
    assert record is not None
    assert record.done == COUNT
    assert [item.result for item in storage.get_items(JOB, MAP)] == [0, 10, 20]


def test_a_finish_of_a_map_without_a_record_writes_the_item_and_counts_nothing(storage: Storage) -> None:
    item = MapItem(index=0, input=1, version=1)
    assert storage.write_item(JOB, MAP, item, expected_version=None, expires_at=EXPIRES)

    assert _finish(storage, 0, "t0")
    stored = storage.get_item(JOB, MAP, 0)
    assert stored is not None
    assert stored.status == "done"
    assert storage.get_map(JOB, MAP) is None
    assert storage.get_maps(JOB) == []


@pytest.mark.parametrize("mark", ["handed_off", "joined"])
def test_each_mark_goes_to_one_token(storage: Storage, mark: MapMark) -> None:
    _new_map(storage)
    assert storage.mark_map(JOB, MAP, mark, "first")
    assert storage.mark_map(JOB, MAP, mark, "first")  # the same mark sent again (a lost response)
    assert not storage.mark_map(JOB, MAP, mark, "second")
    record = storage.get_map(JOB, MAP)
    assert record is not None
    assert getattr(record, mark) == "first"
    other: MapMark = "joined" if mark == "handed_off" else "handed_off"
    assert getattr(record, other) is None
    assert storage.mark_map(JOB, MAP, other, "second")
    assert not storage.mark_map(JOB, "nomap", mark, "first")


def test_get_maps_lists_the_jobs_maps_oldest_first_without_their_items(storage: Storage, clock: FakeClock) -> None:
    _new_map(storage, "bbbb", created_at=20, then="review")
    _new_map(storage, "aaaa", created_at=10)
    assert _finish_of(storage, "bbbb")

    maps = storage.get_maps(JOB)
    assert [(record.fan_out.id, record.then, record.done) for record in maps] == [
        ("aaaa", "merge", 0),
        ("bbbb", "review", 1),
    ]
    assert storage.get_maps("another-job") == []


def _finish_of(storage: Storage, fan_out: str) -> bool:
    current = storage.get_item(JOB, fan_out, 0)
    assert current is not None
    return storage.write_item(
        JOB, fan_out, _done(current, "tb"), expected_version=current.version, expires_at=EXPIRES, finishes=True
    )


class _DiesBeforeTheItem(FileStorage):
    """A file store whose process dies once between a finish's two files: the map's count, then the item."""

    dying = False

    def _put_item(self, job_id: str, fan_out: str, item: MapItem, *, new: bool = False) -> None:
        if self.dying:
            self.dying = False
            raise SimulatedCrash("died between the map's record and the item's record")
        super()._put_item(job_id, fan_out, item, new=new)


def test_a_death_between_the_count_and_the_item_leaves_the_count_exact(tmp_path: Path) -> None:
    storage = _DiesBeforeTheItem(tmp_path / "jobs")
    _new_map(storage)
    storage.dying = True
    with pytest.raises(SimulatedCrash):
        _finish(storage, 0, "lost")

    after = FileStorage(tmp_path / "jobs")  # the next process
    record = after.get_map(JOB, MAP)
    assert record is not None
    assert record.done == 0
    unfinished = after.get_item(JOB, MAP, 0)
    assert unfinished is not None
    assert unfinished.status == "pending"

    assert _finish(after, 0, "again")
    assert _finish(after, 1, "t1")
    assert _finish(after, 2, "t2")
    record = after.get_map(JOB, MAP)
    assert record is not None
    assert record.done == COUNT
