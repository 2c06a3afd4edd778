"""The plug-in point for run-level features: what happens around a claimed run.

The engine proper claims a job, runs the phase its checkpoint names, commits what it returned and
schedules what follows. What happens around that run (the transition guard, the budget, the fair share
per owner, metering, lessons: :mod:`cairn.features`) plugs in here, the way phase kinds plug into
:class:`~cairn.core.pipeline.Pipeline`: a :class:`RunFeature` is registered once
(:func:`register_run_feature`), and for every claim it opens a :class:`RunHooks`, whose hooks the
engine calls at fixed points of the run. Every hook's default does nothing, so a feature overrides
only the points it needs, and a feature added later changes no engine file.

The points, in the order a run meets them:

- :meth:`RunFeature.open`, before the claim: a bad setting is refused here, before anything is written;
- :meth:`RunHooks.admit`, right after the claim (an advance only, not a crash report): a job returned
  ends the advance there (a run that waits for its owner's share gives its claim back);
- :meth:`RunHooks.before_phase`, before the state is loaded: a job returned ended the run (a map whose
  items still run gives the claim back; the guard's limit, the budget stop the job);
- :meth:`RunHooks.outcome`, when the phase returned an outcome the engine does not handle itself (a
  :class:`~cairn.core.outcomes.Map`): the first hook that returns a job committed it;
- :meth:`RunHooks.before_map`, when a map is about to start, before anything of it is written: a job
  returned was stopped instead;
- :meth:`RunHooks.before_write`, before each save and the commit (lessons are kept then);
- :meth:`RunHooks.save_usage` and :meth:`RunHooks.commit_usage`: what the write adds to the job's
  usage, summed once with the write; :meth:`RunHooks.keeps_on_record` says which counters the phase
  record keeps; :meth:`RunHooks.item_usage`: what a map item's finish adds to the item's usage;
- :meth:`RunHooks.close`, after the advance, whatever happened (what the run held is given back).

Hooks see the run through :class:`Run`: its job, pipeline, store, journal and hooks, what its phase
will read as ``ctx.results``, and the writes a feature may make: a log entry, and the commit that ends
the run (``fail`` ends it in ``error``).

Maps plug in here too (:mod:`cairn.maps`): their hooks take up the items' results before ``then`` runs
and start a map a phase returns, and an advance of one item goes to the :func:`register_item_runner`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ConfigurationError, PipelineError
from .models import Checkpoint, EntryKind, Failure, FanOut, Job, LogLevel, PhaseOutcome

if TYPE_CHECKING:
    from .context import JournalBuffer
    from .pipeline import Pipeline
    from .scheduler_port import Scheduler
    from .storage_port import Storage


class Run(Protocol):
    """What a hook sees of a claimed run (:class:`cairn.core.engine.claimed_run.ClaimedRun`)."""

    job: Job
    """The job as the claim (or the run's last write) left it."""
    pipeline: Pipeline[Any]
    storage: Storage
    phase_name: str
    """The phase the run is for: the checkpoint's ``nextPhase``."""
    journal: JournalBuffer
    """What the run's next write hands over: its log entries and usage."""
    hooks: tuple[RunHooks, ...]
    """The run's hooks, every feature's, in order."""
    results: list[Any] | None
    """What the phase reads as ``ctx.results`` (a map's items' results, for its ``then``)."""
    after_write: Callable[[], None] | None
    """Called once the run's next write (a save or the commit) has landed."""

    @property
    def holder(self) -> str:
        """Who holds the claim: ``<worker>#<claim sequence>``."""
        ...

    def entry(self, message: str, *, level: LogLevel = "info", kind: EntryKind = "log") -> None:
        """Add a log entry to the run's next write."""
        ...

    def fail(self, message: str, *, failure: Failure | None = None) -> Job:
        """End the run in ``error``: ``message`` logged as an error entry and kept as the job's error."""
        ...

    def commit(
        self,
        kind: PhaseOutcome,
        *,
        checkpoint: Checkpoint | None = None,
        error: str | None = None,
        delay: float = 0.0,
        fan_out: FanOut | None = None,
        failure: Failure | None = None,
        share_wait: str | None = None,
    ) -> Job:
        """End the run with ``kind`` (``error``: stopped; ``release``: the claim given back unrun)."""
        ...


@dataclass(frozen=True)
class CommitFacts:
    """What a commit is about to write, for :meth:`RunHooks.commit_usage`."""

    kind: PhaseOutcome
    checkpoint: Checkpoint | None
    """The checkpoint the commit writes (None: it keeps the job's, or the job ends)."""
    started_at: int
    ended_at: int
    memory_mb: int
    """The memory of the phase's function."""
    fan_out: FanOut | None = None
    """The map the commit starts, if any."""
    share_wait: str | None = None
    """Why the run gave its claim back unrun: it waits for its owner's share (a *look*)."""


class RunHooks:
    """One feature's hooks for one claimed run; every default does nothing."""

    def admit(self, run: Run, scheduler: Scheduler) -> Job | None:
        """Right after the claim: a job returned ends the advance (the hook committed it)."""
        return None

    def before_phase(self, run: Run, scheduler: Scheduler) -> Job | None:
        """Before the state is loaded and the phase runs: a job returned ended the run (the hook committed it)."""
        return None

    def outcome(self, run: Run, outcome: object, scheduler: Scheduler) -> Job | None:
        """The phase returned ``outcome``, which the engine does not handle: a job returned, the hook committed it."""
        return None

    def before_map(self, run: Run, *, items: int, phase: str) -> Job | None:
        """Before a map of ``items`` items over ``phase`` is written: a job returned was stopped instead."""
        return None

    def before_write(self, run: Run) -> None:
        """Before each save and the commit, with the journal that write hands over."""

    def save_usage(self, run: Run, checkpoint: Checkpoint) -> Mapping[str, float]:
        """What a save of ``checkpoint`` adds to the job's usage."""
        return {}

    def commit_usage(self, run: Run, commit: CommitFacts) -> Mapping[str, float]:
        """What the commit adds to the job's usage."""
        return {}

    def keeps_on_record(self, meter: str) -> bool:
        """Whether the phase record keeps the run's counter ``meter`` (kept when any hook keeps it)."""
        return False

    def item_usage(self, memory_mb: int, started_at: int, ended_at: int) -> Mapping[str, float]:
        """What the run of one map item adds to the item's usage, with its finish."""
        return {}

    def close(self, run: Run) -> None:
        """After the advance, whatever happened: give back what the run held."""


class RunFeature(Protocol):
    """A run-level feature: opens its hooks for each claimed run."""

    @property
    def name(self) -> str:
        """The feature's name, unique among the registered ones."""
        ...

    def open(self, pipeline: Pipeline[Any]) -> RunHooks | None:
        """The hooks for one run of ``pipeline`` (None: the feature has nothing to do for it).

        Called before the claim: a setting that cannot be read is refused here, before anything is written.
        """
        ...


_FEATURES: dict[str, RunFeature] = {}


def register_run_feature(feature: RunFeature) -> None:
    """Plug ``feature`` into every claimed run, after those registered before it.

    Registering a feature again under its name replaces it in its place (a feature configured anew).
    """
    if not feature.name or not isinstance(feature.name, str):
        raise PipelineError(f"A run feature needs a name, got {feature.name!r}")
    _FEATURES[feature.name] = feature


def run_features() -> tuple[RunFeature, ...]:
    """The registered run features, in the order they run."""
    return tuple(_FEATURES.values())


def open_hooks(pipeline: Pipeline[Any], features: Iterable[RunFeature] | None = None) -> tuple[RunHooks, ...]:
    """The hooks of ``features`` (default: the registered ones) for one run of ``pipeline``."""
    chosen = run_features() if features is None else features
    return tuple(hooks for feature in chosen if (hooks := feature.open(pipeline)) is not None)


def first_stop(stops: Iterable[Job | None]) -> Job | None:
    """The first job a hook returned (it ended the run), evaluating no hook after it; None: none did."""
    return next((job for job in stops if job is not None), None)


def summed_usage(parts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The counters of ``parts``, added up."""
    total: dict[str, float] = {}
    for part in parts:
        for meter, value in part.items():
            total[meter] = total.get(meter, 0) + value
    return total


ItemRunner = Callable[..., "Job | None"]
"""Runs one item of a job's map: :func:`cairn.maps.map_items.advance_item` (its signature is the contract)."""


_ITEM_RUNNER: list[ItemRunner] = []


def register_item_runner(runner: ItemRunner) -> None:
    """Make ``runner`` what an item advance calls (the maps plug-in registers one when imported)."""
    _ITEM_RUNNER[:] = [runner]


def item_runner() -> ItemRunner:
    """The registered item runner; none registered is a ConfigurationError."""
    if not _ITEM_RUNNER:
        raise ConfigurationError("An item advance needs the maps plug-in: import cairn (it registers cairn.maps)")
    return _ITEM_RUNNER[0]
