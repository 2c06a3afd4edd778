"""The contract of a map's records: item writes by version, the count of finished items, and the marks."""

from __future__ import annotations

from ...core.models import FanOut, MapItem, MapRecord
from ...core.storage_port import Storage
from ..clock import SkippingClock
from .base import JOB, ContractBase, expiry, started

MAP = "map-1"


def map_record(clock: SkippingClock, count: int = 3) -> MapRecord:
    """A map of ``count`` items begun by ``split``, joined by ``join``."""
    fan_out = FanOut(id=MAP, phase="each", count=count, max_concurrency=2)
    return MapRecord(fan_out=fan_out, started_by="split", then="join", created_at=clock(), sequence=1)


class MapContract(ContractBase):
    """``create_map``, ``write_item``, ``get_item(s)``, ``get_map(s)`` and ``mark_map``."""

    def test_a_map_record_is_written_once_and_listed(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock)
        storage.create_map(JOB, map_record(clock), expires_at=expiry(clock))
        storage.create_map(JOB, map_record(clock, count=9), expires_at=expiry(clock))  # sent again: left as it is

        record = storage.get_map(JOB, MAP)
        assert record is not None
        assert (record.fan_out.count, record.done) == (3, 0)
        assert [kept.fan_out.id for kept in storage.get_maps(JOB)] == [MAP]
        assert storage.get_map(JOB, "no-such-map") is None

    def test_an_item_is_written_only_over_the_version_read(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock)
        storage.create_map(JOB, map_record(clock), expires_at=expiry(clock))
        for index in (1, 0, 2):
            new = MapItem(index=index, input=f"in-{index}", write_token=f"new-{index}")
            assert storage.write_item(JOB, MAP, new, expected_version=None, expires_at=expiry(clock))
        assert not storage.write_item(JOB, MAP, MapItem(index=0), expected_version=None, expires_at=expiry(clock))

        taken = MapItem(index=0, input="in-0", lease_owner="worker-1", version=1, write_token="take-0")
        assert storage.write_item(JOB, MAP, taken, expected_version=0, expires_at=expiry(clock))
        assert not storage.write_item(JOB, MAP, taken, expected_version=0, expires_at=expiry(clock))

        assert [item.index for item in storage.get_items(JOB, MAP)] == [0, 1, 2]
        item = storage.get_item(JOB, MAP, 0)
        assert item is not None
        assert (item.version, item.lease_owner) == (1, "worker-1")
        assert storage.get_item(JOB, MAP, 7) is None

    def test_each_finished_item_counts_once(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock)
        storage.create_map(JOB, map_record(clock), expires_at=expiry(clock))
        assert storage.write_item(JOB, MAP, MapItem(index=0), expected_version=None, expires_at=expiry(clock))
        done = MapItem(index=0, status="done", result="r", version=1, write_token="finish-0")

        assert storage.write_item(JOB, MAP, done, expected_version=0, expires_at=expiry(clock), finishes=True)
        again = storage.write_item(JOB, MAP, done, expected_version=0, expires_at=expiry(clock), finishes=True)

        assert not again
        record = storage.get_map(JOB, MAP)
        assert record is not None
        assert record.done == 1

    def test_a_mark_is_held_by_the_first_token(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock)
        assert not storage.mark_map(JOB, MAP, "handed_off", "token-a")  # no record yet
        storage.create_map(JOB, map_record(clock), expires_at=expiry(clock))

        assert storage.mark_map(JOB, MAP, "handed_off", "token-a")
        assert storage.mark_map(JOB, MAP, "handed_off", "token-a")  # asked again after a lost response
        assert not storage.mark_map(JOB, MAP, "handed_off", "token-b")
        assert storage.mark_map(JOB, MAP, "joined", "token-b")
        record = storage.get_map(JOB, MAP)
        assert record is not None
        assert (record.handed_off, record.joined) == ("token-a", "token-b")
