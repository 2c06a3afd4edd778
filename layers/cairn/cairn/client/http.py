"""A client of the jobs HTTP API on the standard library's ``urllib``: one method per route, JSON in and out.

Every method returns the API's JSON body as a dict. An error response raises :class:`ApiError`
with the API's own status, code and message; no answer at all raises :class:`ApiUnreachable`.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from .auth import Auth, NoAuth, PreparedRequest
from .errors import ApiError, ApiUnreachable

DEFAULT_API = "http://127.0.0.1:3000"
"""Where ``cairn dev`` serves the API."""
DEFAULT_TIMEOUT = 30.0
#: How long reading a state through its link may take (it can be tens of MB).
LINK_TIMEOUT = 300.0
"""Seconds to wait for a connection and for each read of the answer."""
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: The filters ``GET /jobs`` takes, by their query names.
LIST_FILTERS = (
    "status",
    "pipeline",
    "createdFrom",
    "createdTo",
    "idPrefix",
    "sort",
    "costs",
    "stalled",
    "errorType",
    "errorPhase",
)
TERMINAL_STATUSES = frozenset({"complete", "error", "cancelled"})
"""Statuses a job stays in until someone retries it."""

Json = dict[str, Any]
JobList = list[Json]
_MAX_ERROR_TEXT = 300


def _error_code(status: int) -> str:
    """A code for an error without one of the API's bodies (a gateway's ``{"message": "Forbidden"}``, say)."""
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "http_error"


def api_error(status: int, raw: bytes) -> ApiError:
    """The error an error response stands for: the API's ``{"error": {code, message}}``, else what it said."""
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return ApiError(status, str(error.get("code") or _error_code(status)), error["message"], body=body)
        if isinstance(body.get("message"), str):
            return ApiError(status, _error_code(status), body["message"], body=body)
    text = " ".join(raw.decode("utf-8", errors="replace").split())[:_MAX_ERROR_TEXT]
    return ApiError(status, _error_code(status), text or f"The API answered {status} with no explanation")


def fetch_link(url: str) -> bytes:
    """The bytes a link the API handed over answers: a plain GET, without the API's credentials."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ApiError(502, "bad_response", "The API handed over a link that is not http(s)")
    try:
        with urllib.request.urlopen(url, timeout=LINK_TIMEOUT) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as exc:
        with exc:
            message = f"Reading through the link the API handed over failed ({exc.reason})"
            raise ApiError(exc.code, "link_failed", message) from None
    except (OSError, http.client.HTTPException) as exc:
        raise ApiUnreachable(f"cannot read through the link the API handed over: {exc}") from None


def linked_values(answer: Json) -> Json:
    """``answer`` (a job view or ``GET /jobs/{id}/states/{phase}``) with each value the API handed over as a link
    (``stateUrl``, ``resultUrl``) read through it into its place (``state``, ``result``)."""
    read = {}
    for value in ("state", "result"):
        url = answer.get(f"{value}Url")
        if not isinstance(url, str):
            continue
        body = fetch_link(url)
        try:
            read[value] = json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
        except (ValueError, OSError, EOFError) as exc:
            raise ApiError(502, "bad_response", f"The {value} read through its link is not JSON ({exc})") from None
    return {**answer, **read}


@dataclass(frozen=True)
class RawAnswer:
    """An answer as it came: its status, its headers and its body's bytes."""

    status: int
    headers: dict[str, str]
    body: bytes


class ApiClient:
    """The jobs API at ``base_url`` (a stage path is kept), called as ``auth`` says, ``timeout`` s per request."""

    def __init__(self, base_url: str, *, auth: Auth | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(f"the API URL must be http:// or https://, without a query: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.auth: Auth = auth if auth is not None else NoAuth()
        self.timeout = timeout
        self._opener = urllib.request.build_opener()

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None) -> Json:
        """Send one request and return its JSON body; ApiError for an error answer, ApiUnreachable for none."""
        given = {key: str(value) for key, value in (query or {}).items() if value is not None}
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {} if data is None else {"Content-Type": "application/json"}
        answer = self.exchange(method, path, query=urlencode(given), body=data, headers=headers)
        if not 200 <= answer.status < 300:
            raise api_error(answer.status, answer.body)
        try:
            parsed: Any = json.loads(answer.body)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise ApiError(answer.status, "bad_response", f"The answer to {method} {path} is not a JSON object")
        return parsed

    def exchange(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> RawAnswer:
        """Send one request (``path`` and the encoded ``query`` as given) as ``auth`` says; the answer, as it came.

        An error status is an answer too; only no answer at all raises (ApiUnreachable).
        """
        url = self.base_url + path + (f"?{query}" if query else "")
        prepared = PreparedRequest(method, url, {"Accept": "application/json", "User-Agent": "cairn-cli"}, body)
        prepared.headers.update(headers or {})
        self.auth.apply(prepared)
        request = urllib.request.Request(url, data=body, headers=prepared.headers, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return RawAnswer(int(response.status), dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return RawAnswer(exc.code, dict(exc.headers.items()), exc.read())
        except (OSError, http.client.HTTPException) as exc:
            raise ApiUnreachable(self._unreachable(exc)) from None

    def _unreachable(self, exc: BaseException) -> str:
        """One line on why no answer came."""
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        where = f"the cairn API at {self.base_url}"
        if isinstance(reason, TimeoutError):
            return f"{where} did not answer within {self.timeout:g} s"
        if isinstance(reason, ConnectionRefusedError) and urlsplit(self.base_url).hostname in LOCAL_HOSTS:
            return f"cannot reach {where} (is `cairn dev` running?)"
        if isinstance(reason, socket.gaierror):
            return f"cannot reach {where}: unknown host {urlsplit(self.base_url).hostname}"
        detail = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
        return f"cannot reach {where}: {detail or type(reason).__name__}"

    @staticmethod
    def _job(job_id: str, action: str = "") -> str:
        return f"/jobs/{quote(job_id, safe='')}{action}"

    def start(self, pipeline: str, state: Any = None, job_id: str | None = None) -> Json:
        """Start a job of ``pipeline`` (``POST /jobs``): the new job's view."""
        body: Json = {"pipeline": pipeline}
        if job_id is not None:
            body["jobId"] = job_id
        if state is not None:
            body["state"] = state
        return self.request("POST", "/jobs", body=body)

    def list(self, *, limit: int | None = None, cursor: str | None = None, **filters: str | None) -> Json:
        """One page of the caller's jobs, newest first: ``{"jobs": [...], "cursor": next or None}``.

        ``filters`` are the API's, applied on the server across pages: ``status``, ``pipeline``,
        ``createdFrom`` and ``createdTo`` (ISO 8601 date-times) and ``idPrefix``; None is left out.
        """
        unknown = sorted(set(filters) - set(LIST_FILTERS))
        if unknown:
            raise TypeError(f"unknown listing filters: {', '.join(unknown)}")
        return self.request("GET", "/jobs", query={**filters, "limit": limit, "cursor": cursor})

    def list_all(self, *, limit: int | None = None, **filters: str | None) -> Json:
        """Every page of :meth:`list` (``limit`` jobs a page), as one page without a cursor."""
        jobs: JobList = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = self.list(limit=limit, cursor=cursor, **filters)
            jobs.extend(page.get("jobs") or [])
            cursor = page.get("cursor")
            if not cursor or cursor in seen:
                return {"jobs": jobs, "cursor": None}
            seen.add(cursor)

    def failures(
        self,
        *,
        since: str | None = None,
        until: str | None = None,
        pipeline: str | None = None,
        limit: int | None = None,
    ) -> Json:
        """The caller's failed jobs created in the range, grouped by exception type, phase and pipeline
        (``GET /failures``): ``{"since", "until", "groups", "examined", "exact"}``; None is left out."""
        query = {"since": since, "until": until, "pipeline": pipeline, "limit": limit}
        return self.request("GET", "/failures", query=query)

    def counts(self) -> Json:
        """How many of the caller's jobs have each status (``GET /jobs/counts``): ``{"counts", "total", "exact"}``."""
        return self.request("GET", "/jobs/counts")

    def get(self, job_id: str, *, include_state: bool = False, include_input: bool = False) -> Json:
        """The job's view (``GET /jobs/{id}``); its checkpoint's state and its input too when asked.

        A state or result too large for one reply comes as a link (``stateUrl``, ``resultUrl``): it is read through
        it, and ``state`` or ``result`` holds it as for any other.
        """
        query = {"includeState": "true" if include_state else None, "includeInput": "true" if include_input else None}
        return linked_values(self.request("GET", self._job(job_id), query=query))

    def history(self, job_id: str, *, limit: int | None = None, cursor: str | None = None) -> Json:
        """What the job's writes added, newest first (``GET /jobs/{id}/history``): ``{"jobId", "writes", "cursor"}``.

        A job's view (:meth:`get`) holds its newest phase records; its ``historyCursor`` reads on from there.
        """
        return self.request("GET", self._job(job_id, "/history"), query={"limit": limit, "cursor": cursor})

    def log(self, job_id: str) -> Json:
        """The job's log, oldest first (``GET /jobs/{id}/log``): ``{"jobId", "entries": [...]}``; not paged."""
        return self.request("GET", self._job(job_id, "/log"))

    def retry(self, job_id: str, mode: str = "resume", state: Any = None, phase: str | None = None) -> Json:
        """Retry the job: ``resume`` from its checkpoint, ``full`` from the start, ``from`` ``phase``; the job."""
        body: Json = {"mode": mode}
        if phase is not None:
            body["phase"] = phase
        if state is not None:
            body["state"] = state
        return self.request("POST", self._job(job_id, "/retry"), body=body)

    def signal(self, job_id: str, name: str, payload: Any = None) -> Json:
        """Deliver the signal ``name`` (``payload`` as its JSON body) to the job waiting for it; the job."""
        return self.request("POST", self._job(job_id, f"/signals/{quote(name, safe='')}"), body=payload)

    def entered_state(self, job_id: str, phase: str, *, before: int | None = None) -> Json:
        """The state ``phase`` was last entered with (``GET /jobs/{id}/states/{phase}``): phase, enteredAt, state.

        With ``before`` (Unix ms), the newest entry written at or before then. A state too large for one reply
        comes as a link (``stateUrl``): it is read through it, and ``state`` holds it as for any other.
        """
        path = self._job(job_id, f"/states/{quote(phase, safe='')}")
        return linked_values(self.request("GET", path, query={"before": before}))

    def state_diff(self, job_id: str, before: str, after: str) -> Json:
        """The changes from phase ``before``'s entry state to ``after``'s (``GET /jobs/{id}/diff``)."""
        return self.request("GET", self._job(job_id, "/diff"), query={"from": before, "to": after})

    def maps(self, job_id: str) -> Json:
        """The job's maps, each as one lane (``GET /jobs/{id}/maps``): ``{"jobId", "maps"}``."""
        return self.request("GET", self._job(job_id, "/maps"))

    def map_item(self, job_id: str, map_id: str, index: int) -> Json:
        """One item of a map whole (``GET /jobs/{id}/maps/{mapId}/items/{index}``)."""
        return self.request("GET", self._job(job_id, f"/maps/{quote(map_id, safe='')}/items/{int(index)}"))

    def nudge(self, job_id: str) -> Json:
        """Schedule a stalled job's next phase again now, at its sequence (``POST /jobs/{id}/nudge``): what was
        scheduled, ``{"jobId", "phase", "sequence", "first"}``; 409 when the job is not stalled."""
        return self.request("POST", self._job(job_id, "/nudge"))

    def pause(self, job_id: str) -> Json:
        """Pause the job at its next phase boundary; the paused job."""
        return self.request("POST", self._job(job_id, "/pause"))

    def cancel(self, job_id: str) -> Json:
        """Cancel the job (its checkpoint stays, so it can be resumed); the cancelled job.

        A job already cancelled (the API's 409 ``already_cancelled``: a cancel sent again after its answer was
        lost, say) is the job as asked: its view is returned, with ``alreadyCancelled`` set.
        """
        try:
            return self.request("POST", self._job(job_id, "/cancel"))
        except ApiError as error:
            job = error.body.get("job") if error.code == "already_cancelled" and isinstance(error.body, dict) else None
            if not isinstance(job, dict):
                raise
            return {**job, "alreadyCancelled": True}

    def health(self) -> Json:
        """Whether the API and its job table answer (a signed call): ``{"status": "ok", "driver": ..., "checked":
        "table"}``."""
        return self.request("GET", "/health/deep")
