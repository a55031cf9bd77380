"""`AsyncClient`: the job API for asyncio programs, on `httpx.AsyncClient`. It launches,
waits, reads and cancels as `Client` does, with the same retries and typed errors; many jobs
are followed on one stream of the caller's job events."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from typing import Any

import httpx

from .client import MAX_WAIT, _backoff, _error, _problem_path, _retry_after, _retryable, _segment
from .types import Event, Incumbent, JobStatus, JobSummary


class AsyncClient:
    """A session with one caseload server, for asyncio. Give an `api_key` (by default
    `CASELOAD_API_KEY`), a `token`, or call `await login(username, password)` first."""

    def __init__(self, base_url: str, *, api_key: str | None = None, token: str | None = None,
                 timeout: float = 30.0, retries: int = 4,
                 transport: httpx.AsyncBaseTransport | None = None):
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"),
                                       timeout=httpx.Timeout(timeout, read=MAX_WAIT + timeout),
                                       transport=transport)
        if api_key is None and token is None:
            api_key = os.environ.get("CASELOAD_API_KEY") or None
        self._token = token if token is not None else api_key
        self._retries = retries

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def login(self, username: str, password: str) -> str:
        """Exchanges credentials for a token, kept for the calls that follow; returns it."""
        response = await self._send("POST", "/login", json={"username": username, "password": password},
                                    retry=True, authorize=False)
        self._token = response.json()["access_token"]
        return self._token

    async def submit(self, problem: str, input: dict[str, Any] | None = None, *,
                     data_file: str | None = None, parameters: dict[str, Any] | None = None,
                     options: dict[str, Any] | None = None, labels: dict[str, str] | None = None,
                     version: str | None = None, project: str | None = None,
                     idempotency_key: str | None = None) -> str:
        """As `Client.submit`; `project` launches in a project the caller is a member of."""
        if (input is None) == (data_file is None):
            raise ValueError("give either input or data_file")
        body = dict(input) if input is not None else {"data_file_identifier": data_file, **(parameters or {})}
        if options:
            body["options"] = options
        if labels:
            body["labels"] = labels
        params = {"project": project} if project else None
        response = await self._send("POST", _problem_path(problem, version), json=body, params=params,
                                    retry=True, headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())})
        return response.json()["job"]

    async def job(self, job_id: str) -> JobStatus:
        return JobStatus.from_body((await self._send("GET", f"/job/{_segment(job_id)}", retry=True)).json())

    async def wait(self, job_id: str, *, timeout: float | None = None) -> JobStatus:
        """Holds until the job ended, a long-poll of up to a minute at a time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            hold = MAX_WAIT if deadline is None else max(0.0, min(MAX_WAIT, deadline - time.monotonic()))
            response = await self._send("GET", f"/job/{_segment(job_id)}", params={"wait": hold}, retry=True)
            status = JobStatus.from_body(response.json())
            if status.ended or (deadline is not None and time.monotonic() >= deadline):
                return status

    async def output(self, job_id: str) -> Any:
        """The completed job's output; a `Conflict` if it did not complete."""
        return (await self._send("GET", f"/job/{_segment(job_id)}/output", retry=True)).json()

    async def cancel(self, job_id: str) -> dict[str, Any]:
        return (await self._send("DELETE", f"/job/{_segment(job_id)}", retry=True)).json()

    async def finish(self, job_id: str) -> dict[str, Any]:
        return (await self._send("POST", f"/job/{_segment(job_id)}/finish", retry=True)).json()

    async def incumbents(self, job_id: str) -> list[Incumbent]:
        body = (await self._send("GET", f"/job/{_segment(job_id)}/incumbents", retry=True)).json()
        return [Incumbent.from_body(entry) for entry in body["incumbents"]]

    async def events(self, *, last_event_id: str | None = None) -> AsyncIterator[Event]:
        """The `status` events of every job of the caller; a dropped stream is resumed."""
        attempts = 0
        while True:
            headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
            try:
                async with self._http.stream("GET", "/jobs/events", headers={**self._authorization(), **headers},
                                             timeout=httpx.Timeout(30.0, read=None)) as response:
                    if response.status_code != 200:
                        await response.aread()
                        raise _error(response)
                    attempts = 0
                    lines: list[str] = []
                    async for line in response.aiter_lines():
                        if line:
                            lines.append(line)
                            continue
                        event = Event.parse(lines)
                        lines = []
                        if event is None:
                            continue
                        if event.id is not None:
                            last_event_id = event.id
                        if event.event == "reconnect":
                            break
                        yield event
                await asyncio.sleep(1.0)
            except httpx.TransportError:
                attempts += 1
                if attempts > self._retries:
                    raise
                await asyncio.sleep(_backoff(attempts))

    async def as_completed(self, job_ids: Iterable[str]) -> AsyncIterator[JobSummary]:
        """Each job named, once it ended, in the order they end, on one event stream."""
        waiting = set(job_ids)
        since = int(time.time() * 1000) - 5000
        known = list(waiting)
        for start in range(0, len(known), 100):
            page = (await self._send("GET", "/jobs", retry=True,
                                     params={"ids": ",".join(known[start:start + 100]), "limit": 100})).json()
            for entry in page["jobs"]:
                job = JobSummary.from_body(entry)
                if job.id in waiting and job.status not in ("PENDING", "RUNNING"):
                    waiting.discard(job.id)
                    yield job
        if not waiting:
            return
        # Closed when done, so that its connection is not left open until collected.
        async with aclosing(self.events(last_event_id=str(since))) as events:
            async for event in events:
                if event.event != "status" or event.data.get("id") not in waiting:
                    continue
                job = JobSummary.from_body(event.data)
                if job.status in ("PENDING", "RUNNING"):
                    continue
                waiting.discard(job.id)
                yield job
                if not waiting:
                    return

    async def wait_all(self, job_ids: Iterable[str]) -> dict[str, JobSummary]:
        """Holds until every job named ended; each as it ended, by id."""
        return {job.id: job async for job in self.as_completed(job_ids)}

    def _authorization(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    async def _send(self, method: str, path: str, *, retry: bool, authorize: bool = True,
                    headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            attempt += 1
            all_headers = {**(self._authorization() if authorize else {}), **(headers or {})}
            try:
                response = await self._http.request(method, path, headers=all_headers, **kwargs)
            except httpx.TransportError:
                if not retry or attempt > self._retries:
                    raise
                await asyncio.sleep(_backoff(attempt))
                continue
            if retry and attempt <= self._retries and _retryable(response):
                await asyncio.sleep(_retry_after(response) or _backoff(attempt))
                continue
            if response.status_code >= 400:
                raise _error(response)
            return response
