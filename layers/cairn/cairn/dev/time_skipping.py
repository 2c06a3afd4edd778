"""``cairn dev --skip-waits``: delays on the local stack take no real time.

The stack's clock is real time plus an offset the server keeps, in milliseconds, in a file of its
own (``clock-offset`` in a temporary folder). Every worker gets the file's path in
``CAIRN_CLOCK_OFFSET_FILE``, which :func:`cairn.core.clock.system_clock_ms` adds: the functions read the
skipped time, and nothing else in cairn knows about ``cairn dev``.

Waits on the stack are held by moto in real time, in this process: an SQS message's
``DelaySeconds`` (a delayed advance of the direct driver: a ``Sleep``, a retry's backoff, a wait's
timeout) or visibility timeout (a message whose invocation failed), and a Step Functions ``Wait``
state (the stepfunctions driver's delays). :class:`TimeSkipper` reads the queues of the SQS event
sources in moto's backend, and :func:`skip_step_functions_waits` makes moto's ``Wait`` states wait
on the skipper (:meth:`TimeSkipper.wait`). When the stack is idle (no invocation running, queued or
started, no message the pollers could receive, no wait over) for ``QUIET_SECONDS``, the skipper
jumps to the moment the first wait ends: the offset grows by the time left, and every wait it holds
ends that much sooner (the first one now), so each keeps its place on the skipped clock. A poller
counts itself at work from its receive to its last delete, and an API request in flight puts the
jump off (without breaking the quiet: a client polling a job does not keep the clock still).

Not skipped: Lambda's async retries (queued work: the stack is not idle while one waits).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..core.clock import OFFSET_FILE_VARIABLE
from .logs import DevLog

QUIET_SECONDS = 0.2
"""How long the stack must stay idle before the clock skips ahead."""
CHECK_SECONDS = 0.05
"""How often the skipper looks."""


class Workload(Protocol):
    """What the skipper asks of the functions (:class:`~cairn.dev.lambda_service.LambdaService`)."""

    def started(self, excluding: Collection[str] = ()) -> int:
        """Invocations started so far, but of the functions ``excluding`` names."""
        ...

    def busy(self, excluding: Collection[str] = ()) -> bool:
        """Whether an invocation (not of ``excluding``) runs, or one is queued or waiting for a retry."""
        ...


def moto_queue(queue_arn: str) -> Any:
    """moto's in-process model of the queue ``queue_arn`` (None once it is gone)."""
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = queue_arn.split(":", 5)
    return sqs_backends[account][region].queues.get(name)


def held_until(message: Any) -> float:
    """When moto lets ``message`` be received (Unix ms): the later of its delay and its visibility timeout."""
    return max(float(message.delayed_until or 0), float(message.visible_at or 0))


def iso_ms(unix_ms: int) -> str:
    """``2025-01-02T03:04:05.678Z``."""
    return datetime.fromtimestamp(unix_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def describe_seconds(seconds: float) -> str:
    """``2h00m00s``, ``15m00s``, ``4.5s``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class _Timer:
    """One wait on the skipper: when it ends (real Unix ms, moved sooner by each skip)."""

    def __init__(self, due_ms: float) -> None:
        self.due_ms = due_ms


class TimeSkipper:
    """The stack's clock offset, and the thread that skips it ahead while the stack only waits."""

    def __init__(
        self,
        log: DevLog,
        stop: threading.Event,
        *,
        folder: Path | None = None,
        queue: Callable[[str], Any] = moto_queue,
    ) -> None:
        self.log = log
        self.stop = stop
        self.queue = queue
        self.queue_arns: list[str] = []
        self.work: Workload | None = None
        self.interactive: frozenset[str] = frozenset()
        self.folder = folder or Path(tempfile.mkdtemp(prefix="cairn-dev-"))
        self._own_folder = folder is None
        self.path = self.folder / "clock-offset"
        self.offset_ms = 0
        self.skips = 0
        self._working = 0
        self._lock = threading.Lock()
        self._quiet_since: float | None = None
        self._started = -1
        self._timers: set[_Timer] = set()
        self._write(0)
        self.thread = threading.Thread(target=self._loop, name="time-skipper", daemon=True)

    @property
    def environment(self) -> dict[str, str]:
        """What the workers need to read the skipped clock."""
        return {OFFSET_FILE_VARIABLE: str(self.path)}

    def now_ms(self) -> int:
        """The stack's time: Unix ms plus the offset."""
        return time.time_ns() // 1_000_000 + self.offset_ms

    def info(self) -> dict[str, Any]:
        """The clock, for ``GET /_cairn/info``."""
        now = self.now_ms()
        return {
            "skipWaits": True,
            "offsetMs": self.offset_ms,
            "nowMs": now,
            "now": iso_ms(now),
            "skips": self.skips,
        }

    def watch(self, queue_arns: Sequence[str], work: Workload, interactive: Collection[str] = ()) -> None:
        """Skip ahead to the messages of ``queue_arns`` whenever ``work`` and the queues are idle.

        The ``interactive`` functions (the API's) only put a skip off while they run: a client
        polling a job through the API does not keep the stack from skipping ahead.
        """
        self.queue_arns = list(queue_arns)
        self.work = work
        self.interactive = frozenset(interactive)

    def start(self) -> None:
        """Start skipping (on a thread, until ``stop`` is set)."""
        self.thread.start()

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """Count the caller busy (a poller receiving, then running, a batch): no skip happens meanwhile."""
        with self._lock:
            self._working += 1
        try:
            yield
        finally:
            with self._lock:
                self._working -= 1

    def _write(self, offset_ms: int) -> None:
        """Replace the offset file at once: a worker reads the old offset or the new, never half of one."""
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        temporary.write_text(f"{offset_ms}\n", encoding="ascii")
        os.replace(temporary, self.path)
        self.offset_ms = offset_ms

    def _loop(self) -> None:
        while not self.stop.wait(CHECK_SECONDS):
            try:
                self.step()
            except Exception as exc:  # moto changed under it, or is stopping: say so, keep going
                if self.stop.is_set():
                    return
                self.log.say("clock", f"time skipping failed: {exc}", "WARNING")

    def wait(self, seconds: float, interrupted: Callable[[], bool] = lambda: False) -> None:
        """Block for ``seconds`` of the stack's time (less real time when it skips); ``interrupted`` ends it early."""
        timer = _Timer(time.time() * 1000 + seconds * 1000)
        with self._lock:
            self._timers.add(timer)
        try:
            while not self.stop.is_set() and not interrupted():
                remaining = timer.due_ms - time.time() * 1000
                if remaining <= 0:
                    return
                time.sleep(min(remaining / 1000, CHECK_SECONDS))
        finally:
            with self._lock:
                self._timers.discard(timer)

    def _messages(self) -> list[Any]:
        queues = [self.queue(arn) for arn in self.queue_arns]
        return [message for queue in queues if queue is not None for message in list(queue._messages)]

    def step(self, now_ms: float | None = None) -> float:
        """Skip ahead when the stack has been idle for ``QUIET_SECONDS``; the seconds skipped (0: none).

        Idle: no invocation running or queued, none started since the last look (the interactive
        functions' aside), no message of the polled queues receivable at ``now_ms`` (Unix ms, real
        time by default), and, at the moment of the skip, no poller at work and no API request running.
        """
        with self._lock:
            work = self.work
            if work is None:
                return 0.0
            real_ms = time.time() * 1000 if now_ms is None else now_ms
            messages = self._messages()
            timers = list(self._timers)
            held = [held_until(message) for message in messages] + [timer.due_ms for timer in timers]
            started = work.started(excluding=self.interactive)
            if (
                work.busy(excluding=self.interactive)
                or started != self._started
                or any(until <= real_ms for until in held)
            ):
                self._started = started
                self._quiet_since = None
                return 0.0
            if self._quiet_since is None:
                self._quiet_since = time.monotonic()
            if not held or time.monotonic() - self._quiet_since < QUIET_SECONDS:
                return 0.0
            if self._working or work.busy():  # a poller receiving, an API request: look again soon
                return 0.0
            skip_ms = math.ceil(min(held) - real_ms)
            for message in messages:
                if message.delayed_until:
                    message.delayed_until -= skip_ms
                if message.visible_at:
                    message.visible_at -= skip_ms
            for timer in timers:
                timer.due_ms -= skip_ms
            self._write(self.offset_ms + skip_ms)
            self.skips += 1
            self._quiet_since = None
        self.log.say(
            "clock",
            f"skipped {describe_seconds(skip_ms / 1000)}: nothing to run until then; "
            f"the stack's clock reads {self.info()['now']} ({describe_seconds(self.offset_ms / 1000)} ahead)",
        )
        return skip_ms / 1000

    def close(self) -> None:
        """Remove the offset file (and the folder made for it)."""
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)


def skip_step_functions_waits(skipper: TimeSkipper) -> Callable[[], None] | None:
    """Make moto's Step Functions ``Wait`` states wait on ``skipper``; returns what undoes it (None: no moto engine)."""
    try:
        from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
    except ImportError:
        return None
    original = WaitFunction.__dict__.get("_wait_interval")
    if original is None:
        return None

    def wait_interval(self: Any, env: Any, wait_seconds: int) -> None:
        skipper.wait(wait_seconds, lambda: not env.is_running())

    setattr(WaitFunction, "_wait_interval", wait_interval)  # noqa: B010 (mypy: a method cannot be assigned)
    return lambda: setattr(WaitFunction, "_wait_interval", original)
