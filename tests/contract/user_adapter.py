"""A storage adapter as a user would write one, against cairn's public API only.

It keeps every record as JSON text in a dict of keys, as a key-value service would (each read
parses, each write serialises), on top of :class:`cairn.DocumentStorage`, which applies the
transition rules under the per-job lock this adapter provides.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from cairn import Job
from cairn.adapters import Clock, DocumentStorage, HistoryItem, Lesson, MapItem, StoredLesson, StoredMap


class KeyValueStorage(DocumentStorage):
    """Jobs, history, map records and lessons as JSON text under string keys."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.texts: dict[str, str] = {}
        self._lock = threading.RLock()

    def _get(self, key: str) -> Any:
        text = self.texts.get(key)
        return None if text is None else json.loads(text)

    def _put(self, key: str, value: Any) -> None:
        self.texts[key] = json.dumps(value, sort_keys=True)

    def _under(self, prefix: str) -> list[Any]:
        return [json.loads(text) for key, text in sorted(self.texts.items()) if key.startswith(prefix)]

    def _locked(self, job_id: str) -> AbstractContextManager[object]:
        return self._lock

    def _load(self, job_id: str) -> Job | None:
        found = self._get(f"job/{job_id}")
        return None if found is None else Job.model_validate(found)

    def _store(self, job: Job, *, lasting: bool = True) -> None:
        self._put(f"job/{job.job_id}", job.model_dump(mode="json"))

    def _job_ids(self) -> Iterator[str]:
        return iter([key.removeprefix("job/") for key in list(self.texts) if key.startswith("job/")])

    def _history(self, job_id: str) -> Mapping[str, HistoryItem]:
        items = (HistoryItem.model_validate(found) for found in self._under(f"history/{job_id}/"))
        return {item.token: item for item in items}

    def _append_history(self, job_id: str, item: HistoryItem) -> None:
        self._put(f"history/{job_id}/{item.token}", item.model_dump(mode="json"))

    def _items(self, job_id: str, fan_out: str) -> dict[int, MapItem]:
        items = (MapItem.model_validate(found) for found in self._under(f"item/{job_id}/{fan_out}/"))
        return {item.index: item for item in items}

    def _item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        found = self._get(f"item/{job_id}/{fan_out}/{index}")
        return None if found is None else MapItem.model_validate(found)

    def _put_item(self, job_id: str, fan_out: str, item: MapItem, *, new: bool = False) -> None:
        self._put(f"item/{job_id}/{fan_out}/{item.index}", item.model_dump(mode="json"))

    def _map(self, job_id: str, fan_out: str) -> StoredMap | None:
        found = self._get(f"map/{job_id}/{fan_out}")
        return None if found is None else StoredMap.model_validate(found)

    def _put_map(self, job_id: str, stored: StoredMap) -> None:
        self._put(f"map/{job_id}/{stored.record.fan_out.id}", stored.model_dump(mode="json"))

    def _maps(self, job_id: str) -> list[StoredMap]:
        return [StoredMap.model_validate(found) for found in self._under(f"map/{job_id}/")]

    def _lessons(self, pipeline: str) -> list[StoredLesson]:
        found = self._under(f"lesson/{pipeline}/")
        return [StoredLesson(Lesson.model_validate(kept["lesson"]), kept["expires_at"]) for kept in found]

    def _add_lessons(self, pipeline: str, records: Sequence[StoredLesson]) -> None:
        for record in records:
            kept = {"lesson": record.lesson.model_dump(mode="json"), "expires_at": record.expires_at}
            self._put(f"lesson/{pipeline}/{record.key}", kept)
