"""cairn's own requests in bare boto3: the calls cairn's transitions made, recorded, then sent again by raw clients.

A :class:`Recorder` keeps every request a cairn job makes through its clients, as botocore's
``provide-client-params`` event hands it on (what cairn passed, with anything botocore's own handlers
of that event add, such as S3's ``ChecksumMode``; sent again, they find it there), one list per step. An
:class:`OwnRequests` floor records a job of its own (its start, then as many middle transitions as it
will be asked for) and sends those requests again through the same clients for a second job, its
job id put in place of the first's (same length) everywhere a string names it. The second job so
starts where the first did, and each replayed transition carries the claim's worker, the write
tokens, the sequences and the times the recorded one did: every condition holds as it held for
cairn. What a replay costs is botocore's and the service's work for cairn's requests, without
cairn's own (building them, admitting, encoding and hashing the state, reading the answers).
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore import xform_name
from botocore.client import BaseClient
from botocore.model import OperationModel
from botocore.response import StreamingBody


@dataclass(frozen=True)
class Call:
    """One request: the client it went through, its method and its parameters as cairn gave them."""

    client: BaseClient
    method: str
    params: dict[str, Any]

    def send(self) -> None:
        """Send the request; a streamed answer (an S3 object) is read to its end, as its caller reads it."""
        answer = getattr(self.client, self.method)(**self.params)
        for value in answer.values():
            if isinstance(value, StreamingBody):
                value.read()


class Recorder:
    """Keeps the requests sent through ``clients`` while recording, a deep copy of each as it was asked for."""

    def __init__(self, clients: Sequence[BaseClient]) -> None:
        self.clients = tuple(clients)

    @contextmanager
    def recording(self) -> Iterator[list[Call]]:
        """The calls made inside, in order (the clients are left as they were on leaving)."""
        calls: list[Call] = []
        handlers: list[tuple[BaseClient, Callable[..., None]]] = []
        for client in self.clients:

            def keep(params: dict[str, Any], model: OperationModel, client: BaseClient = client, **_: Any) -> None:
                calls.append(Call(client, xform_name(model.name), copy.deepcopy(params)))

            client.meta.events.register("provide-client-params.*.*", keep)
            handlers.append((client, keep))
        try:
            yield calls
        finally:
            for client, keep in handlers:
                client.meta.events.unregister("provide-client-params.*.*", keep)


def renamed(value: Any, old: str, new: str) -> Any:
    """``value`` with ``old`` replaced by ``new`` in every string (dict keys too); bytes and bodies untouched."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {renamed(key, old, new): renamed(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [renamed(item, old, new) for item in value]
    if isinstance(value, io.BytesIO):
        return io.BytesIO(value.getvalue())
    return value


class OwnRequests:
    """Raw boto3 sending cairn's own requests: each ``transition()`` replays one recorded cairn transition.

    ``start`` starts the recorded job and gives the call that runs one middle transition of it; both
    are called here while recording (the step ``transitions`` times), and the replayed job's start is
    sent at once.
    """

    def __init__(
        self,
        clients: Sequence[BaseClient],
        start: Callable[[], Callable[[], None]],
        *,
        recorded_job: str,
        replayed_job: str,
        transitions: int,
    ) -> None:
        if len(recorded_job) != len(replayed_job):
            raise ValueError("the replayed job's id must be as long as the recorded one's (the same item sizes)")
        recorder = Recorder(clients)
        with recorder.recording() as calls:
            step = start()
        started = [self._renamed(call, recorded_job, replayed_job) for call in calls]
        self.steps: list[list[Call]] = []
        for _ in range(transitions):
            with recorder.recording() as calls:
                step()
            self.steps.append([self._renamed(call, recorded_job, replayed_job) for call in calls])
        self.steps.reverse()  # taken from the end
        for call in started:
            call.send()

    @staticmethod
    def _renamed(call: Call, old: str, new: str) -> Call:
        return Call(call.client, call.method, renamed(call.params, old, new))

    def transition(self) -> None:
        """Send the requests of the next recorded transition, in their order."""
        if not self.steps:
            raise RuntimeError("every recorded transition has been replayed")
        for call in self.steps.pop():
            call.send()
