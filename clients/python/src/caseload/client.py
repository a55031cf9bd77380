"""`Client`: the job API on one `httpx.Client`. Every call is made in `_core`, which
`AsyncClient` shares: this module sends, retries and follows streams."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from . import _core as core
from ._core import MAX_WAIT, Call, EventReader
from .types import ENDED, Event, JobStatus, JobSummary

T = TypeVar("T")
P = ParamSpec("P")


def _call(build: Callable[P, Call[T]]) -> Callable[Concatenate[Client, P], T]:
    """A method of `Client` that makes the call `build` describes and reads its answer."""

    @functools.wraps(build)
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(build(*args, **kwargs))

    return method


class Client:
    """A session with one caseload server.

    Give an `api_key` (`cl_...`; by default the `CASELOAD_API_KEY` environment variable), or
    `username` and `password` to log in (and to log in again when the token expires), or a
    `token` from elsewhere.
    """

    def __init__(
        self,
        base_url: str,
        username: str | None = None,
        password: str | None = None,
        *,
        token: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 4,
        transport: httpx.BaseTransport | None = None,
    ):
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=httpx.Timeout(timeout, read=MAX_WAIT + timeout),
            transport=transport,
        )
        self._credentials = (username, password) if username is not None else None
        if api_key is None and token is None and self._credentials is None:
            api_key = os.environ.get("CASELOAD_API_KEY") or None
        # A key is sent as a bearer token, as a token is; it never expires by itself.
        self._token = token if token is not None else api_key
        self._retries = retries
        if self._token is None and self._credentials is not None:
            self.login(*self._credentials)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # Sessions

    def login(self, username: str, password: str) -> str:
        """Exchanges credentials for a token, kept for the calls that follow; returns it."""
        self._token = self._run(core.login(username, password))
        return self._token

    # Launching

    submit = _call(core.submit)
    submit_batch = _call(core.submit_batch)
    rerun = _call(core.rerun)
    upload = _call(core.upload)

    # Reading

    job = _call(core.job)
    output = _call(core.output)
    cancel = _call(core.cancel)
    finish = _call(core.finish)
    incumbents = _call(core.incumbents)

    def wait(self, job_id: str, *, timeout: float | None = None) -> JobStatus:
        """Holds until the job ended (long-polls of up to a minute each) or `timeout` seconds
        passed; the job as last seen."""
        deadline = core.deadline_of(timeout)
        while True:
            status = self._run(core.job_wait(job_id, core.hold_for(deadline)))
            if status.ended or (deadline is not None and time.monotonic() >= deadline):
                return status

    def jobs(
        self,
        *,
        status: str | Iterable[str] | None = None,
        problem: str | None = None,
        labels: dict[str, str] | None = None,
        since: int | datetime | None = None,
        until: int | datetime | None = None,
        ids: Iterable[str] | None = None,
        project: str | None = None,
        page_size: int = 100,
    ) -> Iterator[JobSummary]:
        """The caller's jobs (with `project`, every job of that project, whoever launched it)
        that pass every filter given, newest first, page after page. `since` and `until`
        bound the creation time: datetimes (a naive one is local time, as Python takes it) or
        milliseconds since the Unix epoch."""
        params = core.jobs_query(status=status, problem=problem, labels=labels, since=since,
                                 until=until, ids=ids, project=project, page_size=page_size)
        before = None
        while True:
            jobs, before = self._run(core.jobs_page(params, before))
            yield from jobs
            if before is None:
                return

    def as_completed(self, job_ids: Iterable[str]) -> Iterator[JobSummary]:
        """Each of the caller's jobs named, once it ended, in the order they end: one stream of
        `/jobs/events` for them all, not a poll per job. Jobs that ended already come first."""
        waiting = dict.fromkeys(job_ids)
        # Events since a little before the first read are replayed, so that a job ending
        # between the read and the stream is not missed.
        since = str(int(time.time() * 1000) - core.REPLAY_MARGIN_MS)
        known = list(waiting)
        for start in range(0, len(known), core.IDS_PER_PAGE):
            page = known[start:start + core.IDS_PER_PAGE]
            for job in self.jobs(ids=page, page_size=core.IDS_PER_PAGE):
                if job.id in waiting and job.status in ENDED:
                    del waiting[job.id]
                    yield job
        if not waiting:
            return
        for event in self.events(last_event_id=since):
            if event.event != "status" or event.data.get("id") not in waiting:
                continue
            job = JobSummary.from_body(event.data)
            if job.status not in ENDED:
                continue
            del waiting[job.id]
            yield job
            if not waiting:
                return

    def wait_all(self, job_ids: Iterable[str]) -> dict[str, JobSummary]:
        """Holds until every job named ended; each one as it ended, by id."""
        return {job.id: job for job in self.as_completed(job_ids)}

    def events(self, job_id: str | None = None, *,
               last_event_id: str | None = None) -> Iterator[Event]:
        """A job's events (`status`, `progress`, `log`, `incumbent`, then `end`), or with no
        job the `status` events of every job of the caller. A dropped stream is resumed from
        the last event's id."""
        attempts = 0
        while True:
            args = core.events_request(job_id, last_event_id, self._authorization())
            try:
                with self._http.stream(**args) as response:
                    if response.status_code != 200:
                        response.read()
                        raise core.error(response, args["headers"]["x-request-id"])
                    attempts = 0
                    reader = EventReader()
                    for line in response.iter_lines():
                        event = reader.line(line)
                        if event is None:
                            continue
                        if event.id is not None:
                            last_event_id = event.id
                        if event.event == "reconnect":
                            # The server closes this connection (a restart, or room for
                            # others): come back from the last event.
                            break
                        yield event
                        if event.event == "end":
                            return
                    else:
                        if job_id is not None:
                            return
                        continue
                    time.sleep(1.0)
            except httpx.TransportError:
                attempts += 1
                if attempts > self._retries:
                    raise
                time.sleep(core.backoff(attempts))

    # Plugins

    publish = _call(core.publish)
    versions = _call(core.versions)
    set_current = _call(core.set_current)
    retire = _call(core.retire)

    # Experiments

    experiment = _call(core.experiment)
    experiment_status = _call(core.experiment_status)
    cancel_experiment = _call(core.cancel_experiment)

    def wait_experiment(self, experiment_id: str, *, timeout: float | None = None,
                        poll: float = 0.5) -> dict[str, Any]:
        """The experiment once every run ended (`TimeoutError` after `timeout` seconds)."""
        deadline = core.deadline_of(timeout)
        while True:
            experiment = self.experiment_status(experiment_id)
            if experiment["progress"]["done"]:
                return experiment
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"experiment {experiment_id} is not done")
            time.sleep(poll)

    def experiments(self, *, project: str | None = None) -> list[dict[str, Any]]:
        """The caller's experiments (with `project`, that project's), newest first."""
        listed: list[dict[str, Any]] = []
        before = None
        while True:
            page, before = self._run(core.experiments_page(before, project))
            listed.extend(page)
            if before is None:
                return listed

    # API keys

    create_api_key = _call(core.create_api_key)
    api_keys = _call(core.api_keys)
    revoke_api_key = _call(core.revoke_api_key)

    # The one place requests go out

    def _authorization(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _run(self, call: Call[T]) -> T:
        return call.parse(self._send(call))

    def _send(self, call: Call[Any]) -> httpx.Response:
        attempt = 0
        relogged = False
        while True:
            attempt += 1
            try:
                response = self._http.request(call.method, call.path,
                                              **call.request_args(self._authorization()))
            except httpx.TransportError:
                if not call.retry or attempt > self._retries:
                    raise
                time.sleep(core.backoff(attempt))
                continue
            if (response.status_code == 401 and call.authorize and self._credentials
                    and not relogged and call.replayable):
                relogged = True
                self.login(*self._credentials)
                continue
            if call.retry and attempt <= self._retries:
                delay = core.retry_delay(response, attempt)
                if delay is not None:
                    time.sleep(delay)
                    continue
            if response.status_code >= 400:
                raise core.error(response, call.request_id)
            return response
