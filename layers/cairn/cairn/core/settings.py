"""Every environment variable cairn reads, in one place, read once into a settings object."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from . import naming
from .errors import ConfigurationError
from .redaction import Redaction, parsed_redaction

TABLE_NAME = "CAIRN_TABLE_NAME"
"""The DynamoDB table jobs are kept in (the template's ``CheckpointTable``)."""
STATE_BUCKET = "CAIRN_STATE_BUCKET"
"""The S3 bucket large states go to; unset: every state stays inline, up to ``CAIRN_INLINE_STATE_LIMIT``."""
INLINE_STATE_LIMIT = "CAIRN_INLINE_STATE_LIMIT"
"""Without a bucket, the largest state kept in the table (bytes as stored, gzipped when smaller): larger fails."""
OFFLOAD_STATE_FROM = "CAIRN_OFFLOAD_STATE_FROM"
"""With a bucket, states above this many bytes as stored (gzipped when smaller) go to S3: a PUT and GET's break-even."""
AWS_RETRY_MODE = "CAIRN_AWS_RETRY_MODE"
"""botocore's retry mode for every AWS client: ``adaptive`` or ``standard``."""
AWS_MAX_ATTEMPTS = "CAIRN_AWS_MAX_ATTEMPTS"
"""botocore's attempts per AWS call, the first included (throttling and 5xx are retried)."""
DRIVER = "CAIRN_DRIVER"
"""How a job moves: ``direct`` (each commit invokes the next phase) or ``stepfunctions`` (the state machine)."""
FUNCTION_PREFIX = "CAIRN_FUNCTION_PREFIX"
"""What every function name of the stack starts with (``<stack>-``): phases are invoked by name."""
MAX_MAP_CONCURRENCY = "CAIRN_MAX_MAP_CONCURRENCY"
"""The stack's ceiling on how many items of one map run at once (the template's ``MaxMapConcurrency``)."""
FUNCTION_ALIAS = "CAIRN_FUNCTION_ALIAS"
"""The alias every phase function is invoked through (the template's AutoPublishAlias); empty: the function itself."""
_ALIAS = re.compile(r"[A-Za-z0-9_-]{1,128}")
SCHEDULER_FUNCTION = "CAIRN_SCHEDULER_FUNCTION"
"""The scheduler function, sent crash reports and delayed advances."""
DELAY_QUEUE_URL = "CAIRN_DELAY_QUEUE_URL"
"""The SQS queue delayed advances wait in (a retry's backoff, a ``Sleep``)."""
STATE_MACHINE_ARN = "CAIRN_STATE_MACHINE_ARN"
"""The state machine the ``stepfunctions`` driver starts an execution of for each start or retry."""
SWEEP_IDLE_SECONDS = "CAIRN_SWEEP_IDLE_SECONDS"
"""How long a running job may go without a write before the sweep revives it (its worker is gone)."""
SWEEP_SCHEDULE = "CAIRN_SWEEP_SCHEDULE"
"""How often the sweep runs (the template's ``SweepSchedule``, ``rate(5 minutes)``): the console's "next sweep by"."""
_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
STATUS_COUNTS = "CAIRN_STATUS_COUNTS"
"""``maintained``: the table's stream keeps each owner's counts by status (the template's ``StatusCounts`` source),
and a count reads them; ``read`` (the default): a count reads the jobs' ``Listing`` entries."""
SWEEP_BATCH = "CAIRN_SWEEP_BATCH"
"""The most stalled jobs one sweep revives; the rest wait for the next sweep (the template's ``SweepBatchSize``)."""
MAX_TRANSITIONS = "CAIRN_MAX_TRANSITIONS"
"""The stack's limit of a job's transitions: lowers every pipeline's ``max_transitions`` (:mod:`.transition_guard`)."""
PRICE_REGION = "CAIRN_PRICE_REGION"
"""The region whose prices a job's cost is computed at (:mod:`.prices`); unset: ``us-east-1``, the shipped table."""
PRICES = "CAIRN_PRICES"
"""A JSON file of prices merged over the shipped table (:mod:`.prices`): your contract's, or other regions'."""
OWNER_CONCURRENCY = "CAIRN_OWNER_CONCURRENCY"
"""The most phases of one owner's jobs running at once (the template's ``OwnerConcurrency``), a whole number from 0
to 100000 (0 or unset: no limit; anything else is refused at start-up); an owner's own limit kept in the table
overrides it (:mod:`.owner_share`)."""
OWNER_STARTS_PER_MINUTE = "CAIRN_OWNER_STARTS_PER_MINUTE"
"""The most jobs one owner may start through the API in a minute (the template's ``OwnerStartsPerMinute``), a whole
number from 0 to 100000 (0 or unset: no limit); a start past it is refused with 429 and ``Retry-After``."""
MAX_OWNER_LIMIT = 100_000
"""The highest limit of phases running at once, for the stack (``CAIRN_OWNER_CONCURRENCY``) as for one owner."""
OWNER_LIMIT_RANGE = f"a whole number from 0 (no limit) to {MAX_OWNER_LIMIT}"
"""What a limit of phases running at once may be, as a refusal says it."""
_WHOLE_NUMBER = re.compile(r"0|[1-9][0-9]*")
REDACT = "CAIRN_REDACT"
"""The stack's redaction (the template's ``Redact``), JSON ``{"patterns": [regex...], "fields": [path...]}``: joins
every pipeline's own (:mod:`.redaction`); unset or empty: none; anything else is refused at start-up."""
PIPELINE = "CAIRN_PIPELINE"
"""Set on each phase function: the pipeline whose phase it runs (``cairn.aws.phase_handler``)."""
PHASE = "CAIRN_PHASE"
"""Set on each phase function: the phase it runs."""
CLOCK_OFFSET_FILE = "CAIRN_CLOCK_OFFSET_FILE"
"""A file holding how far a local stack's clock is ahead (set by ``cairn dev --skip-waits``; :mod:`.clock`)."""
CODE_VERSION = "CAIRN_CODE_VERSION"
"""The version of the code a phase runs, as a deploy names it (:mod:`.versions`); unset: Lambda's or a hash."""
LAMBDA_FUNCTION_VERSION = "AWS_LAMBDA_FUNCTION_VERSION"
"""Lambda's published version of the function running (``$LATEST`` when unpublished)."""
NOT_DEPLOYED = (CLOCK_OFFSET_FILE, CODE_VERSION)
"""Read by cairn, never set by the template: ``cairn dev``'s skipped clock; the code version a deploy may add."""

REQUIRED_VARIABLES = (
    TABLE_NAME,
    STATE_BUCKET,
    DRIVER,
    FUNCTION_PREFIX,
    SCHEDULER_FUNCTION,
    DELAY_QUEUE_URL,
    STATE_MACHINE_ARN,
)
"""What every function of a deployment must set (``cairn template check`` checks it): with one missing,
the job store has no table or no bucket for large state, the driver falls back to direct, phases are
invoked by the wrong names, unknown phases and delayed retries cannot be sent, or stepfunctions cannot
start. The other variables have defaults that work (limits, retries, the sweep's idle time)."""

DEFAULT_INLINE_STATE_LIMIT = 350_000
#: With a state bucket, values above this many (compressed) bytes go to S3: the break-even of the write-once
#: design, where a state's write units in its history item and its read units at the next claim come to an
#: S3 PUT and GET (8.4 KB stored, measured by ``python -m benchmarks.offload``), rounded down to a KB.
DEFAULT_OFFLOAD_STATE_FROM = 8192
RetryModeName = Literal["standard", "adaptive"]
DriverName = Literal["direct", "stepfunctions"]
StatusCountsName = Literal["read", "maintained"]
_STATUS_COUNTS: tuple[StatusCountsName, ...] = ("read", "maintained")
_RETRY_MODES: tuple[RetryModeName, ...] = ("standard", "adaptive")
_DRIVERS: tuple[DriverName, ...] = ("direct", "stepfunctions")
_Choice = TypeVar("_Choice", bound=str)


@dataclass(frozen=True)
class Settings:
    """Deployment settings: where jobs live and how AWS calls are retried."""

    table_name: str | None = None
    state_bucket: str | None = None
    inline_state_limit: int = DEFAULT_INLINE_STATE_LIMIT
    offload_state_from: int = DEFAULT_OFFLOAD_STATE_FROM
    aws_retry_mode: RetryModeName = "adaptive"
    aws_max_attempts: int = 8
    max_transitions: int | None = None
    """``CAIRN_MAX_TRANSITIONS``: the most transitions a job of any pipeline may take (None: each pipeline's own)."""
    driver: DriverName = "direct"
    function_prefix: str = ""
    function_alias: str = ""
    scheduler_function: str | None = None
    delay_queue_url: str | None = None
    state_machine_arn: str | None = None
    sweep_idle_seconds: int = 120
    sweep_batch: int = 100
    sweep_every_seconds: int | None = 300
    """``CAIRN_SWEEP_SCHEDULE``'s period: how often the sweep runs (None: unset, or a ``cron(...)`` schedule)."""
    status_counts: StatusCountsName = "read"
    """``CAIRN_STATUS_COUNTS``: whether a count reads the counts the table's stream keeps, or the jobs' entries."""
    owner_concurrency: int = 0
    """``CAIRN_OWNER_CONCURRENCY``: the stack's fair share per owner (0: off), checked when settings are read."""
    owner_starts_per_minute: int = 0
    """``CAIRN_OWNER_STARTS_PER_MINUTE``: the API's start rate per owner (0: off), checked when settings are read."""

    def phase_function(self, pipeline: str, phase: str) -> str:
        """The function that runs ``phase`` of ``pipeline``: ``<prefix><pipeline>-<phase>``, ``:<alias>`` after it."""
        name = naming.function_name(self.function_prefix, pipeline, phase)
        return f"{name}:{self.function_alias}" if self.function_alias else name

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from the environment (``os.environ`` by default); bad values are named clearly."""
        env = os.environ if environ is None else environ
        mode = _one_of(env, AWS_RETRY_MODE, _RETRY_MODES, default="adaptive")
        driver = _one_of(env, DRIVER, _DRIVERS, default="direct")
        stack_redaction(env)  # a bad CAIRN_REDACT is refused at start-up, not at the first text it redacts
        return cls(
            driver=driver,
            function_prefix=env.get(FUNCTION_PREFIX, ""),
            function_alias=_alias(env),
            scheduler_function=env.get(SCHEDULER_FUNCTION) or None,
            delay_queue_url=env.get(DELAY_QUEUE_URL) or None,
            state_machine_arn=env.get(STATE_MACHINE_ARN) or None,
            sweep_idle_seconds=_positive_int(env, SWEEP_IDLE_SECONDS, 120),
            sweep_batch=_positive_int(env, SWEEP_BATCH, 100),
            sweep_every_seconds=schedule_seconds(env.get(SWEEP_SCHEDULE, "")),
            status_counts=_one_of(env, STATUS_COUNTS, _STATUS_COUNTS, default="read"),
            table_name=env.get(TABLE_NAME) or None,
            state_bucket=env.get(STATE_BUCKET) or None,
            inline_state_limit=_positive_int(env, INLINE_STATE_LIMIT, DEFAULT_INLINE_STATE_LIMIT),
            offload_state_from=_positive_int(env, OFFLOAD_STATE_FROM, DEFAULT_OFFLOAD_STATE_FROM),
            aws_retry_mode=mode,
            aws_max_attempts=_positive_int(env, AWS_MAX_ATTEMPTS, 8),
            max_transitions=stack_max_transitions(env),
            owner_concurrency=stack_owner_concurrency(env),
            owner_starts_per_minute=_owner_starts_per_minute(env),
        )


def clock_offset_file(environ: Mapping[str, str] | None = None) -> str | None:
    """The clock offset file ``CAIRN_CLOCK_OFFSET_FILE`` names (``os.environ`` by default); None when unset."""
    return (os.environ if environ is None else environ).get(CLOCK_OFFSET_FILE) or None


def deployed_code_version(environ: Mapping[str, str] | None = None) -> str | None:
    """The code version the deployment names: ``CAIRN_CODE_VERSION`` (at most 128 characters), else Lambda's
    published version (``lambda:N``); None when neither says (``$LATEST``)."""
    env = os.environ if environ is None else environ
    given = env.get(CODE_VERSION)
    if given:
        return given[:128]
    published = env.get(LAMBDA_FUNCTION_VERSION)
    return f"lambda:{published}" if published and published != "$LATEST" else None


def stack_redaction(environ: Mapping[str, str] | None = None) -> Redaction:
    """The stack's redaction from ``CAIRN_REDACT`` (``os.environ`` by default); unset or empty: none."""
    raw = (os.environ if environ is None else environ).get(REDACT, "").strip()
    return parsed_redaction(raw, where=REDACT)


def stack_max_transitions(environ: Mapping[str, str] | None = None) -> int | None:
    """``CAIRN_MAX_TRANSITIONS`` (``os.environ`` by default): a positive whole number, or None when it is not set.

    The engine reads it where it claims a run (:func:`cairn.features.transition_guard.transition_limit`), as
    :meth:`Settings.from_env` does: the engine is handed pipelines, not settings.
    """
    env = os.environ if environ is None else environ
    if not env.get(MAX_TRANSITIONS):
        return None
    return _positive_int(env, MAX_TRANSITIONS, 0)


def price_settings(environ: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``CAIRN_PRICES`` and ``CAIRN_PRICE_REGION`` (``os.environ`` by default; None: not set), read where a job's
    cost is priced (:func:`cairn.features.prices.load_prices`): the file of price overrides, and the region."""
    env = os.environ if environ is None else environ
    return env.get(PRICES) or None, env.get(PRICE_REGION) or None


def stepfunctions_driver(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``CAIRN_DRIVER`` (``os.environ`` by default) is ``stepfunctions``: a phase run meters its transitions."""
    env = os.environ if environ is None else environ
    return env.get(DRIVER) == "stepfunctions"


def stack_owner_concurrency(environ: Mapping[str, str] | None = None) -> int:
    """``CAIRN_OWNER_CONCURRENCY`` (``os.environ`` by default): the most phases of one owner running at once;
    0 when it is not set (no limit). Read at start-up (:meth:`Settings.from_env`, ``Cairn(...)``) and where a
    run takes its owner's share (:mod:`cairn.features.owner_share`)."""
    env = os.environ if environ is None else environ
    raw = env.get(OWNER_CONCURRENCY, "")
    return 0 if raw == "" else owner_limit_of(raw, OWNER_CONCURRENCY)


def _owner_starts_per_minute(env: Mapping[str, str]) -> int:
    raw = env.get(OWNER_STARTS_PER_MINUTE, "")
    return 0 if raw == "" else owner_limit_of(raw, OWNER_STARTS_PER_MINUTE)


def owner_limit_of(raw: str, what: str) -> int:
    """``raw`` as a limit of phases running at once: a whole number from 0 (no limit) to :data:`MAX_OWNER_LIMIT`.

    The one rule for the stack's setting and for an owner's own limit; else ConfigurationError naming ``what``.
    """
    if _WHOLE_NUMBER.fullmatch(raw) is None or int(raw) > MAX_OWNER_LIMIT:
        raise ConfigurationError(f"{what} must be {OWNER_LIMIT_RANGE}, got {raw!r}")
    return int(raw)


def stack_max_map_concurrency(environ: Mapping[str, str] | None = None) -> int | None:
    """``CAIRN_MAX_MAP_CONCURRENCY`` (``os.environ`` by default): the most items of one map run at once in the
    stack, lowering a ``Map(max_concurrency=...)`` above it; None when it is not set."""
    env = os.environ if environ is None else environ
    if not env.get(MAX_MAP_CONCURRENCY):
        return None
    return _positive_int(env, MAX_MAP_CONCURRENCY, 0)


def _one_of(env: Mapping[str, str], name: str, choices: tuple[_Choice, ...], *, default: _Choice) -> _Choice:
    """The value of ``name``, one of ``choices`` (unset: ``default``); any other is refused, naming them."""
    raw = env.get(name, default)
    for choice in choices:
        if raw == choice:
            return choice
    raise ConfigurationError(f"{name} must be {' or '.join(repr(choice) for choice in choices)}, got {raw!r}")


def schedule_seconds(expression: str) -> int | None:
    """The period of an EventBridge ``rate(N minutes|hours|days)`` expression in seconds; None for anything else."""
    rate = _RATE.fullmatch(expression.strip())
    if rate is None:
        return None
    amount, unit = rate.groups()
    return int(amount) * _RATE_UNITS[unit.rstrip("s")]


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be a whole number, got {raw!r}") from exc
    if value <= 0:
        raise ConfigurationError(f"{name} must be positive, got {value}")
    return value


def _alias(env: Mapping[str, str]) -> str:
    """``CAIRN_FUNCTION_ALIAS`` as Lambda accepts an alias name (letters, digits, ``-`` and ``_``, not all digits)."""
    alias = env.get(FUNCTION_ALIAS, "")
    if alias and (not _ALIAS.fullmatch(alias) or alias.isdigit()):
        raise ConfigurationError(
            f"{FUNCTION_ALIAS} must be a Lambda alias name (up to 128 letters, digits, '-' or '_', not all digits), "
            f"got {alias!r}"
        )
    return alias
