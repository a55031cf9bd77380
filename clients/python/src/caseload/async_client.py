"""`AsyncClient`: the job API for asyncio programs, on `httpx.AsyncClient`. Every call is
made in `_core`, which `Client` shares, so the two have the same calls, retries and errors;
this module sends them with `await`, and follows streams as tasks."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from . import _core as core
from ._core import MAX_WAIT, Call, Completion, EventReader
from .types import Event, JobStatus, JobSummary

T = TypeVar("T")
P = ParamSpec("P")


def _call(
    build: Callable[P, Call[T]],
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    """A method of `AsyncClient` that makes the call `build` describes and reads its
    answer."""

    @functools.wraps(build)
    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(build(*args, **kwargs))

    return method


class AsyncClient:
    """A session with one caseload server, for asyncio: every call of `Client`, awaited.

    Give an `api_key` (`cl_...`; by default the `CASELOAD_API_KEY` environment variable), or
    `username` and `password` (it logs in on its first call, and again when the token
    expires), or a `token` from elsewhere.
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
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            timeout=httpx.Timeout(timeout, read=MAX_WAIT + timeout),
            transport=transport,
        )
        self._credentials = (username, password) if username is not None else None
        if api_key is None and token is None and self._credentials is None:
            api_key = os.environ.get("CASELOAD_API_KEY") or None
        self._token = token if token is not None else api_key
        self._retries = retries

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # Sessions

    async def login(self, username: str, password: str) -> str:
        """Exchanges credentials for a token, kept for the calls that follow; returns it."""
        self._token = await self._run(core.login(username, password))
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

    async def wait(self, job_id: str, *, timeout: float | None = None) -> JobStatus:
        """Holds until the job ended (long-polls of up to a minute each) or `timeout` seconds
        passed; the job as last seen."""
        deadline = core.deadline_of(timeout)
        while True:
            status = await self._run(core.job_wait(job_id, core.hold_for(deadline)))
            if status.ended or (deadline is not None and time.monotonic() >= deadline):
                return status

    async def jobs(
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
    ) -> AsyncIterator[JobSummary]:
        """As `Client.jobs`: the caller's (or `project`'s) jobs that pass every filter given,
        newest first, page after page."""
        params = core.jobs_query(status=status, problem=problem, labels=labels, since=since,
                                 until=until, ids=ids, project=project, page_size=page_size)
        before = None
        while True:
            jobs, before = await self._run(core.jobs_page(params, before))
            for job in jobs:
                yield job
            if before is None:
                return

    async def as_completed(self, job_ids: Iterable[str], *,
                           timeout: float | None = None) -> AsyncIterator[JobSummary]:
        """As `Client.as_completed`: each job named, once it ended, in the order they end,
        followed on the caller's and the projects' event streams; `WaitTimedOut` after
        `timeout` seconds."""
        completion = Completion(job_ids)
        deadline = core.deadline_of(timeout)
        async for ended in self._locate(completion):
            yield ended
        if completion.done:
            return
        events: asyncio.Queue[Event] = asyncio.Queue()
        feeds = {asyncio.create_task(self._follow(feed, completion.since, events))
                 for feed in completion.feeds()}
        try:
            while not completion.done:
                getting = asyncio.ensure_future(events.get())
                done, _ = await asyncio.wait({getting, *feeds}, timeout=core.left(deadline),
                                             return_when=asyncio.FIRST_COMPLETED)
                for feed in done - {getting}:
                    # A stream that failed for good: its error is the caller's.
                    feeds.discard(feed)
                    feed.result()
                if getting not in done:
                    getting.cancel()
                    if deadline is not None and time.monotonic() >= deadline:
                        raise completion.timed_out()
                    continue
                ended = completion.event(getting.result())
                if ended is not None:
                    yield ended
        finally:
            for feed in feeds:
                feed.cancel()
            await asyncio.gather(*feeds, return_exceptions=True)

    async def wait_all(self, job_ids: Iterable[str], *,
                       timeout: float | None = None) -> dict[str, JobSummary]:
        """As `Client.wait_all`: every job named once it ended, by id."""
        return {job.id: job async for job in self.as_completed(job_ids, timeout=timeout)}

    async def _locate(self, completion: Completion) -> AsyncIterator[JobSummary]:
        """Reads where each job is and yields those that ended already."""
        for page in completion.listings():
            jobs, _ = await self._run(page)
            for ended in completion.listed(jobs):
                yield ended
        for job_id in completion.unlocated():
            completion.locate(await self._run(core.job(job_id)))
        for project in completion.projects():
            for page in completion.listings(project):
                jobs, _ = await self._run(page)
                for ended in completion.listed(jobs, project):
                    yield ended

    async def _follow(self, project: str | None, since: str, events: asyncio.Queue[Event]) -> None:
        """Puts a feed's events on the queue until cancelled."""
        async with contextlib.aclosing(self.events(project=project, last_event_id=since)) as feed:
            async for event in feed:
                await events.put(event)

    async def events(self, job_id: str | None = None, *, project: str | None = None,
                     last_event_id: str | None = None) -> AsyncIterator[Event]:
        """As `Client.events`: a job's events, or the `status` events of every job of the
        caller (or of `project`); a dropped stream is resumed from the last event's id."""
        attempts = 0
        while True:
            args = core.events_request(job_id, project, last_event_id, self._authorization())
            try:
                async with self._http.stream(**args) as response:
                    if response.status_code != 200:
                        await response.aread()
                        raise core.error(response, args["headers"]["x-request-id"])
                    attempts = 0
                    reader = EventReader()
                    async for line in response.aiter_lines():
                        event = reader.line(line)
                        if event is None:
                            continue
                        if event.id is not None:
                            last_event_id = event.id
                        if event.event == "reconnect":
                            break
                        yield event
                        if event.event == "end":
                            return
                    else:
                        if job_id is not None:
                            return
                        continue
                await asyncio.sleep(1.0)
            except httpx.TransportError:
                attempts += 1
                if attempts > self._retries:
                    raise
                await asyncio.sleep(core.backoff(attempts))

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

    async def wait_experiment(self, experiment_id: str, *, timeout: float | None = None,
                              poll: float = 0.5) -> dict[str, Any]:
        """As `Client.wait_experiment`: the experiment once every run ended."""
        deadline = core.deadline_of(timeout)
        while True:
            experiment = await self.experiment_status(experiment_id)
            if experiment["progress"]["done"]:
                return experiment
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"experiment {experiment_id} is not done")
            await asyncio.sleep(poll)

    async def experiments(self, *, project: str | None = None) -> list[dict[str, Any]]:
        """The caller's experiments (with `project`, that project's), newest first."""
        listed: list[dict[str, Any]] = []
        before = None
        while True:
            page, before = await self._run(core.experiments_page(before, project))
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

    async def _run(self, call: Call[T]) -> T:
        return call.parse(await self._send(call))

    async def _send(self, call: Call[Any]) -> httpx.Response:
        if self._token is None and self._credentials is not None and call.authorize:
            await self.login(*self._credentials)
        attempt = 0
        relogged = False
        while True:
            attempt += 1
            args = call.request_args(self._authorization())
            if "content" in args and not isinstance(args["content"], bytes):
                args["content"] = _read_off_loop(args["content"])
            try:
                response = await self._http.request(call.method, call.path, **args)
            except httpx.TransportError:
                if not call.retry or attempt > self._retries:
                    raise
                await asyncio.sleep(core.backoff(attempt))
                continue
            if (response.status_code == 401 and call.authorize and self._credentials
                    and not relogged and call.replayable):
                relogged = True
                await self.login(*self._credentials)
                continue
            if call.retry and attempt <= self._retries:
                delay = core.retry_delay(response, attempt)
                if delay is not None:
                    await asyncio.sleep(delay)
                    continue
            if response.status_code >= 400:
                raise core.error(response, call.request_id)
            return response


async def _read_off_loop(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """An upload's chunks, each read from its file on a worker thread, not the event loop."""
    while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
        yield chunk
