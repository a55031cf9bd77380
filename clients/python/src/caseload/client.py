"""`Client`: the job API on one `httpx.Client`. Every call is made in `_core`, which
`AsyncClient` shares: this module sends, retries and follows streams."""

from __future__ import annotations

import functools
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from . import _core as core
from ._core import MAX_WAIT, Call, Completion, EventReader
from .types import Event, JobStatus, JobSummary

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
    evaluate = _call(core.evaluate)
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

    def as_completed(self, job_ids: Iterable[str], *,
                     timeout: float | None = None) -> Iterator[JobSummary]:
        """Each job named, once it ended, in the order they end; jobs that ended already come
        first. They are followed on event streams, not polled: the caller's own jobs on
        `GET /jobs/events`, another's job in a shared project on its project's
        (`?project=`). After `timeout` seconds, `WaitTimedOut` (a `TimeoutError`) names the
        jobs that did not end. A job the caller cannot read is a `NotFound`."""
        completion = Completion(job_ids)
        deadline = core.deadline_of(timeout)
        yield from self._locate(completion)
        if completion.done:
            return
        with _Feeds(self, completion) as feeds:
            while not completion.done:
                event = feeds.next_event(core.left(deadline))
                if event is None:
                    raise completion.timed_out()
                ended = completion.event(event)
                if ended is not None:
                    yield ended

    def wait_all(self, job_ids: Iterable[str], *,
                 timeout: float | None = None) -> dict[str, JobSummary]:
        """Holds until every job named ended; each one as it ended, by id. After `timeout`
        seconds, `WaitTimedOut` (a `TimeoutError`) with the ones that ended and the rest."""
        return {job.id: job for job in self.as_completed(job_ids, timeout=timeout)}

    def _locate(self, completion: Completion) -> Iterator[JobSummary]:
        """Reads where each job is and yields those that ended already."""
        for page in completion.listings():
            jobs, _ = self._run(page)
            yield from completion.listed(jobs)
        for job_id in completion.unlocated():
            completion.locate(self._run(core.job(job_id)))
        for project in completion.projects():
            for page in completion.listings(project):
                jobs, _ = self._run(page)
                yield from completion.listed(jobs, project)

    def events(self, job_id: str | None = None, *, project: str | None = None,
               last_event_id: str | None = None) -> Iterator[Event]:
        """A job's events (`status`, `progress`, `log`, `incumbent`, then `end`), or with no
        job the `status` events of every job of the caller (with `project`, of every job of
        that project). A dropped stream is resumed from the last event's id."""
        yield from self._events(job_id, project, last_event_id)

    def _events(self, job_id: str | None, project: str | None, last_event_id: str | None,
                feed: _Feeds | None = None) -> Iterator[Event]:
        """`events`; for one of `feed`'s threads, each response is handed to it (so that it
        can cut the stream off) and none is opened once it stops."""
        attempts = 0
        while True:
            if feed is not None and feed.stopping:
                return
            args = core.events_request(job_id, project, last_event_id, self._authorization())
            try:
                with self._http.stream(**args) as response:
                    if response.status_code != 200:
                        response.read()
                        raise core.error(response, args["headers"]["x-request-id"])
                    if feed is not None:
                        feed.opened(response)
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
                if (feed is not None and feed.stopping) or attempts > self._retries:
                    raise
                time.sleep(core.backoff(attempts))

    # Plugins

    publish = _call(core.publish)
    versions = _call(core.versions)
    set_current = _call(core.set_current)
    retire = _call(core.retire)
    download = _call(core.download)

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


class _Feeds:
    """The event streams `as_completed` follows, each read on a thread of its own and
    handed over on one queue, so that the caller's wait ends at its deadline to the
    millisecond however many streams there are. On exit each stream's connection is shut,
    which ends its thread at once."""

    def __init__(self, client: Client, completion: Completion):
        self._events: queue.Queue[tuple[Event | None, BaseException | None]] = queue.Queue()
        self._stopping = threading.Event()
        self._responses: list[httpx.Response] = []
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._follow, args=(client, feed, completion.since),
                             daemon=True)
            for feed in completion.feeds()
        ]

    def __enter__(self) -> _Feeds:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        with self._lock:
            for response in self._responses:
                _shut(response)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def next_event(self, wait: float | None) -> Event | None:
        """The next event of any stream; None if none came within `wait` seconds."""
        try:
            event, error = self._events.get(timeout=wait)
        except queue.Empty:
            return None
        if error is not None:
            raise error
        return event

    def opened(self, response: httpx.Response) -> None:
        """Keeps a stream's response, to shut on exit (at once, if that was already)."""
        with self._lock:
            self._responses.append(response)
            if self.stopping:
                _shut(response)

    def _follow(self, client: Client, project: str | None, since: str) -> None:
        try:
            for event in client._events(None, project, since, self):
                if self.stopping:
                    return
                self._events.put((event, None))
        except BaseException as error:  # noqa: BLE001 - raised in the caller's thread
            if not self.stopping:
                self._events.put((None, error))


def _shut(response: httpx.Response) -> None:
    """Shuts a streamed response's socket, which wakes the thread blocked reading it."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
