"""A map's record and its item records as DynamoDB items, and back."""

from __future__ import annotations

import json

from ...core.errors import CorruptJobError
from ...core.models import MapItem, MapRecord
from ..payloads import ITEM_BUDGET
from . import schema
from .attributes import UNREADABLE, Item, from_item, location, to_item, unreadable_reason
from .owner_codec import OwnerCodec, key_of


class MapCodec(OwnerCodec):
    """Converts between a job's map records (the map's and each item's) and the items of one owner."""

    def map_item(self, job_id: str, fan_out: str, item: MapItem, *, expires_at: int) -> tuple[Item, set[str]]:
        """The DynamoDB item of a map's item record (a large one goes to S3 under its write token)."""
        key = f"items/{self.owner}/{job_id}/{fan_out}/{item.index}-{item.write_token or 'new'}.json"
        encoded = self.payloads.encode(item.model_dump(mode="json", by_alias=True), key=key, budget=ITEM_BUDGET - 1024)
        values = {
            "pk": self.pk(job_id),
            "sk": schema.map_item_sk(fan_out, item.index),
            "record": encoded.attribute,
            "version": item.version,
            "writeToken": item.write_token,
            "expiresAt": expires_at,
        }
        return to_item(values), key_of(encoded)

    def map_record(self, job_id: str, record: MapRecord, *, expires_at: int) -> Item:
        """The DynamoDB item of a map's record: what does not change as JSON, the count and marks beside it."""
        values = {
            "pk": self.pk(job_id),
            "sk": schema.map_record_sk(record.fan_out.id),
            "map": record.model_dump_json(by_alias=True, exclude={"done", "handed_off", "joined"}),
            "done": record.done,
            "handedOff": record.handed_off,
            "joined": record.joined,
            "expiresAt": expires_at,
        }
        return to_item(values)

    def decode_map_record(self, item: Item) -> MapRecord | None:
        """The map's record an item holds (None for a count without its record: a map started before maps had one)."""
        values = from_item(item)
        if "map" not in values:
            return None
        try:
            known = json.loads(values["map"])
            return MapRecord.model_validate(
                {
                    **known,
                    "done": int(values.get("done", 0)),
                    "handedOff": values.get("handedOff"),
                    "joined": values.get("joined"),
                }
            )
        except UNREADABLE as exc:
            raise CorruptJobError(location(item), unreadable_reason(exc)) from exc

    def decode_map_item(self, item: Item) -> MapItem:
        """The item record a DynamoDB item holds; CorruptJobError names an unreadable one."""
        where = location(item)
        try:
            return MapItem.model_validate(self.payloads.decode(from_item(item)["record"], where=where))
        except UNREADABLE as exc:
            raise CorruptJobError(where, unreadable_reason(exc)) from exc
