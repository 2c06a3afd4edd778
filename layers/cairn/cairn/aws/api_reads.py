"""What the API shows of one job, read a bounded part at a time: the job view, its history, its log.

- The view (``GET /jobs/{jobId}``, and the job every write route answers with) reads the job with only
  its newest history (:meth:`~cairn.core.storage_port.Storage.get_job_view`): its cost does not grow with
  the job's. ``phases`` holds the newest records and ``historyCursor`` reads the older ones.
- ``GET /jobs/{jobId}/history?limit=&cursor=``: what the job's writes added, newest first, a page at a time.
- ``GET /jobs/{jobId}/log``: without ``limit`` or ``cursor`` the whole log (as before); with them a
  page, oldest first, which costs what the page holds.

A cursor is opaque and bound to the job and its run: one of another job, altered, or from before a
full retry is refused (400, :mod:`cairn.core.history_pages`).
"""

from __future__ import annotations

from ..app import Cairn
from ..core.errors import InvalidInputError, JobNotFoundError
from ..core.history_pages import RecentJob
from ..core.ids import validate_job_id
from ..core.map_phases import pipeline_item_phases
from ..core.map_reruns import item_only_phases, rerun_phases
from ..core.models import Job, PhaseRecord
from ..core.settings import Settings
from ..core.transitions.changes import changed
from ..maps.map_items import usage_so_far
from .api_errors import ApiError
from .api_job_view import JobView, LinkedState
from .api_limits import LINK_SECONDS, TOO_LARGE, VALUE_ROOM, too_large_message, value_bytes
from .api_models import HistoryWrite, JobHistory, JobLog
from .api_redaction import linking_refused
from .observability import logger
from .stall_view import stalled_view

#: The most entries one page of a log holds.
MAX_LOG_PAGE = 1000
#: The entries of a page of the log when a cursor is given without a limit.
DEFAULT_LOG_PAGE = 200
#: The most writes one page of history holds, and how many one holds unless asked for fewer.
MAX_HISTORY_PAGE = 100
DEFAULT_HISTORY_PAGE = 20
#: Reads of a job view whose state or result is too large for the reply before it is refused: a write replacing it
#: between the view's read and its link's makes the view read again.
LINK_READS = 3
#: Writes of older history read at a time when the view must look further back (below).
_RERUN_LOOKUP_PAGE = 100


def _view(jobs: Cairn, job_id: str) -> RecentJob:
    """The caller's job with its newest history; 404 when it is absent (or another owner's)."""
    logger.append_keys(job_id=validate_job_id(job_id))
    view = jobs.storage.get_job_view(job_id)
    if view is None:
        raise JobNotFoundError(job_id)
    return view


def job_view(
    jobs: Cairn, job_id: str, *, include_state: bool, include_input: bool = False, settings: Settings | None = None
) -> JobView:
    """``GET /jobs/{jobId}``: the job with its newest phase records, the phases a rerun may start from.

    A state or a result too large for one reply is handed over as a link to the object holding it (``stateUrl``,
    ``resultUrl``); a write that replaced it between the two reads makes the view read again. A store that keeps no
    such object: 500 ``reply_too_large``, saying to ask without ``includeState``. ``settings`` (the sweep's, for
    a stalled job's ``stalled``): the deployment's by default (from the environment).
    """
    settings = settings or Settings.from_env()
    for _ in range(LINK_READS):
        view = _view(jobs, job_id)
        shown = JobView.of(
            _with_items_usage(jobs, view.job),
            include_state=include_state,
            include_input=include_input,
            rerun_phases=_rerun_phases(jobs, view),
            history_cursor=view.older,
            prices=jobs.prices,
            stalled=stalled_view(jobs.storage, view.job, settings),
        )
        bounded = _within_reply(jobs, view.job, shown)
        if bounded is not None:
            return bounded
    raise ApiError(*TOO_LARGE, too_large_message(_values_bytes(shown)))


def shown(jobs: Cairn, job: Job) -> JobView:
    """The view of ``job`` as stored after a transition (the transition's own result holds only what it wrote)."""
    view = jobs.storage.get_job_view(job.job_id)
    if view is None:
        return JobView.of(job, prices=jobs.prices)
    answer = JobView.of(_with_items_usage(jobs, view.job), history_cursor=view.older, prices=jobs.prices)
    bounded = _within_reply(jobs, view.job, answer)
    if bounded is None:
        raise ApiError(*TOO_LARGE, too_large_message(_values_bytes(answer)))
    return bounded


def _with_items_usage(jobs: Cairn, job: Job) -> Job:
    """``job`` with the usage (and so the cost) of its running map's items so far (:func:`usage_so_far`)."""
    return job if job.fan_out is None else changed(job, usage=usage_so_far(jobs.storage, job))


def _values_bytes(view: JobView) -> int:
    """The bytes the view's state and result take in a reply."""
    return sum(value_bytes(value) for value in (view.state, view.result) if value is not None)


def _within_reply(jobs: Cairn, job: Job, view: JobView) -> JobView | None:
    """``view`` of ``job`` with its result and state handed over as links where both would not fit one reply.

    A result past half the room goes first, then a state past what is left. None when a link it needs is not to be
    had: the store keeps that value in the table, or a write has replaced it since ``job`` was read.
    """
    result = value_bytes(view.result) if view.result is not None else 0
    state = value_bytes(view.state) if view.state is not None else 0
    if result + state <= VALUE_ROOM:
        return view
    refused = linking_refused(jobs.pipelines, result + state)
    if refused is not None:
        raise refused
    update: dict[str, object] = {}
    if result > VALUE_ROOM // 2:
        result_link = jobs.result_link(job, expires_in=LINK_SECONDS)
        if result_link is None:
            return None
        update |= {"result": None, **LinkedState.fields_of(result_link, "result")}
        result = 0
    if state > VALUE_ROOM - result:
        state_link = jobs.checkpoint_link(job, expires_in=LINK_SECONDS)
        if state_link is None:
            return None
        update |= {"state": None, **LinkedState.fields_of(state_link)}
    return view.model_copy(update=update)


def _rerun_phases(jobs: Cairn, view: RecentJob) -> list[str] | None:
    """The phases a rerun of the job may start from (None: this deployment does not run its pipeline).

    A phase the job runs only as a map's items is left out: a rerun from it is refused (the pipeline's
    code names it in ``Map(...)``, or the records of the job's maps say so; one small query). A map's
    item phase that the view's newest records do not show run as a phase of its own may have run so
    earlier: only then, and only for a job with maps, is older history read, until each such phase is
    found or the history ends.
    """
    job = view.job
    if job.pipeline not in jobs.pipelines.names:
        return None
    pipeline = jobs.pipelines.get(job.pipeline)
    maps = jobs.storage.get_maps(job.job_id)
    older: list[PhaseRecord] = []
    cursor = view.older

    def with_older() -> Job:
        return changed(job, phases=older + job.phases)

    while cursor is not None and item_only_phases(with_older(), maps, pipeline.resolve_name):
        try:
            page = jobs.storage.history_page(job.job_id, cursor, _RERUN_LOOKUP_PAGE)
        except InvalidInputError:  # started over since the view was read: that history is gone
            break
        if page is None:
            break
        older = [item.record for item in reversed(page.items) if item.record is not None] + older
        cursor = page.cursor
    named = pipeline_item_phases(pipeline)  # those the code names, for a job that has not mapped (yet)
    return rerun_phases(pipeline.phase_names, with_older(), maps, pipeline.resolve_name, named)


def job_history(jobs: Cairn, job_id: str, *, limit: int, cursor: str | None) -> JobHistory:
    """``GET /jobs/{jobId}/history``: what up to ``limit`` writes added, newest first, from ``cursor``."""
    logger.append_keys(job_id=validate_job_id(job_id))
    page = jobs.storage.history_page(job_id, cursor, limit)
    if page is None:
        raise JobNotFoundError(job_id)
    writes = [HistoryWrite(log=list(item.log), record=item.record) for item in page.items]
    return JobHistory(job_id=job_id, writes=writes, cursor=page.cursor)


def job_log(jobs: Cairn, job_id: str, *, limit: int | None, cursor: str | None) -> JobLog:
    """``GET /jobs/{jobId}/log``: the whole log without ``limit`` and ``cursor`` (the whole job read), else a page."""
    if limit is None and cursor is None:
        job = jobs.get(validate_job_id(job_id))
        logger.append_keys(job_id=job_id)
        return JobLog(job_id=job.job_id, entries=list(job.log))
    logger.append_keys(job_id=validate_job_id(job_id))
    page = jobs.storage.log_page(job_id, cursor, limit or DEFAULT_LOG_PAGE)
    if page is None:
        raise JobNotFoundError(job_id)
    return JobLog(job_id=job_id, entries=page.entries, cursor=page.cursor)
