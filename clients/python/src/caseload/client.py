"""The client: one `httpx.Client`, a token, and the calls of the API.

Retries are only made where they are safe: reads, cancels, publishes and promotions
(idempotent by the API's contract: the same bytes published again answer the stored version),
and launches, which always carry an `Idempotency-Key` so a retried launch answers the first
one's job instead of starting another. Uploads, reruns and retirements are not retried.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import httpx

from .errors import ApiError, error_for
from .types import Event, Incumbent, JobStatus, JobSummary, PluginVersion

T = TypeVar("T")

#: The longest a single long-poll is held by the server.
MAX_WAIT = 60.0

#: Statuses worth another try: the server is busy, restarting, or behind a proxy that is. A
#: 429 at a quota is not among them (`_retryable`): a quota does not free itself.
RETRY_STATUSES = (429, 502, 503, 504)


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
        response = self._send("POST", "/login", json={"username": username, "password": password},
                              retry=True, authorize=False)
        self._token = response.json()["access_token"]
        return self._token

    # Launching

    def submit(
        self,
        problem: str,
        input: dict[str, Any] | None = None,
        *,
        data_file: str | None = None,
        parameters: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        labels: dict[str, str] | None = None,
        version: str | None = None,
        project: str | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        """Launches a job of use case `problem` on `input`, or on the uploaded `data_file` (with
        the use case's dataset `parameters`); returns its id once the server committed it.
        `version` (`"1.2.0"` or `"sha256:<hex>"`) pins the component; by default the job runs
        the use case's current version. `project` launches in a shared project the caller is
        a member of (a key bound to a project launches there without it)."""
        if (input is None) == (data_file is None):
            raise ValueError("give either input or data_file")
        body = dict(input) if input is not None else {"data_file_identifier": data_file,
                                                       **(parameters or {})}
        if options:
            body["options"] = options
        if labels:
            body["labels"] = labels
        response = self._send("POST", _problem_path(problem, version), json=body, retry=True,
                              params=_project(project),
                              headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())})
        return response.json()["job"]

    def submit_batch(
        self,
        problem: str,
        bodies: Iterable[dict[str, Any]],
        *,
        version: str | None = None,
        project: str | None = None,
        idempotency_key: str | None = None,
    ) -> list[str]:
        """Launches up to 100 jobs in one transaction, all or none; each body is a launch body
        (an input, with `options` and `labels` if wanted), all on `version` if given, in
        `project` if given. Returns their ids in order."""
        response = self._send("POST", f"{_problem_path(problem, version)}/batch",
                              json={"jobs": list(bodies)},
                              params=_project(project),
                              retry=True,
                              headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())})
        return response.json()["jobs"]

    def rerun(
        self,
        job_id: str,
        *,
        version: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> str:
        """Launches a new job with what `job_id` was launched with (its input, its options with
        the seed it ran with, its labels) on the component it was bound to, or on `version`;
        `options` replace its options one by one. Returns the new job's id. Not retried: a
        rerun carries no idempotency key."""
        body: dict[str, Any] = {}
        if version is not None:
            body["version"] = version
        if options:
            body["options"] = options
        response = self._send("POST", f"/job/{_segment(job_id)}/rerun", json=body, retry=False)
        return response.json()["job"]

    def upload(
        self,
        file: str | os.PathLike[str] | BinaryIO,
        *,
        media_type: str = "application/octet-stream",
        filename: str | None = None,
        project: str | None = None,
        progress: bool = False,
        chunk_size: int = 1 << 20,
    ) -> dict[str, Any]:
        """Uploads a dataset, streamed from a path or an open binary file; with `progress`, a
        bar on standard error; in `project` if given (its members launch on it). Returns the
        data file's metadata (`data_file_identifier`...)."""
        if isinstance(file, (str, os.PathLike)):
            path = Path(file)
            with path.open("rb") as opened:
                return self.upload(opened, media_type=media_type, filename=filename or path.name,
                                   project=project, progress=progress, chunk_size=chunk_size)
        total = _size_of(file)

        def chunks() -> Iterator[bytes]:
            sent = 0
            while chunk := file.read(chunk_size):
                sent += len(chunk)
                if progress:
                    _draw_progress(sent, total)
                yield chunk
            if progress:
                sys.stderr.write("\n")

        params = {**({"filename": filename} if filename else {}), **(_project(project) or {})}
        response = self._send("POST", "/data_file", content=chunks(), params=params or None,
                              headers={"Content-Type": media_type}, retry=False)
        return response.json()

    # Reading

    def job(self, job_id: str) -> JobStatus:
        return JobStatus.from_body(self._send("GET", f"/job/{job_id}", retry=True).json())

    def wait(self, job_id: str, *, timeout: float | None = None) -> JobStatus:
        """Holds until the job ended (long-polls of up to a minute each) or `timeout` seconds
        passed; the job as last seen."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            hold = MAX_WAIT if deadline is None else max(0.0, min(MAX_WAIT, deadline - time.monotonic()))
            response = self._send("GET", f"/job/{job_id}", params={"wait": hold}, retry=True)
            status = JobStatus.from_body(response.json())
            if status.ended or (deadline is not None and time.monotonic() >= deadline):
                return status

    def output(self, job_id: str, *, wait: float | None = None, as_type: type[T] | None = None) -> Any:
        """The completed job's output; with `wait`, held up to that many seconds for the end.
        A `Conflict` (409) if the job did not complete. With `as_type` (a dataclass), the
        output read as one: its fields taken from the output's, the others left out."""
        params = {"wait": min(wait, MAX_WAIT)} if wait else None
        output = self._send("GET", f"/job/{job_id}/output", params=params, retry=True).json()
        if as_type is None:
            return output
        names = {field.name for field in dataclasses.fields(as_type)}  # type: ignore[arg-type]
        return as_type(**{name: value for name, value in output.items() if name in names})

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Cancels a pending or running job: `{detail, job, status}`."""
        return self._send("DELETE", f"/job/{job_id}", retry=True).json()

    def finish(self, job_id: str) -> dict[str, Any]:
        """Stops a running job now and keeps the best it found: it ends `COMPLETED` with that
        output (`JobStatus.stopped_early`); a pending one is cancelled. `{detail, job,
        status}`, once the job ended (the server waits up to 5 s for it)."""
        return self._send("POST", f"/job/{job_id}/finish", retry=True).json()

    def incumbents(self, job_id: str) -> list[Incumbent]:
        """The solutions the job's plugin reported as it found them, the newest few of each
        execution (a race's: each entrant's), oldest first. While the job runs, `events(job_id)`
        sends each as an `incumbent` event."""
        body = self._send("GET", f"/job/{job_id}/incumbents", retry=True).json()
        return [Incumbent.from_body(entry) for entry in body["incumbents"]]

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
        params: dict[str, Any] = {"limit": page_size}
        if status:
            params["status"] = status if isinstance(status, str) else ",".join(status)
        if problem:
            params["problem"] = problem
        if labels:
            params["label"] = [f"{key}:{value}" for key, value in labels.items()]
        if since is not None:
            params["since"] = _instant(since)
        if until is not None:
            params["until"] = _instant(until)
        if ids:
            params["ids"] = ",".join(ids)
        if project:
            params["project"] = project
        while True:
            page = self._send("GET", "/jobs", params=params, retry=True).json()
            for entry in page["jobs"]:
                yield JobSummary.from_body(entry)
            if page["next"] is None:
                return
            params["before"] = page["next"]

    def as_completed(self, job_ids: Iterable[str]) -> Iterator[JobSummary]:
        """Each of the caller's jobs named, once it ended, in the order they end: one stream of
        `/jobs/events` for them all, not a poll per job. Jobs that ended already come first."""
        waiting = set(job_ids)
        # Events since a little before the first read are replayed, so that a job ending
        # between the read and the stream is not missed.
        since = int(time.time() * 1000) - 5000
        known = list(waiting)
        for start in range(0, len(known), 100):
            for job in self.jobs(ids=known[start:start + 100]):
                if job.id in waiting and job.status not in ("PENDING", "RUNNING"):
                    waiting.discard(job.id)
                    yield job
        if not waiting:
            return
        for event in self.events(last_event_id=str(since)):
            if event.event != "status" or event.data.get("id") not in waiting:
                continue
            job = JobSummary.from_body(event.data)
            if job.status in ("PENDING", "RUNNING"):
                continue
            waiting.discard(job.id)
            yield job
            if not waiting:
                return

    def wait_all(self, job_ids: Iterable[str]) -> dict[str, JobSummary]:
        """Holds until every job named ended; each one as it ended, by id."""
        return {job.id: job for job in self.as_completed(job_ids)}

    def events(self, job_id: str | None = None, *, last_event_id: str | None = None) -> Iterator[Event]:
        """A job's events (`status`, `progress`, `log`, then `end`), or with no job those of every
        job of the caller (`status`). A dropped stream is resumed from the last event's id."""
        path = f"/job/{job_id}/events" if job_id else "/jobs/events"
        attempts = 0
        while True:
            headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
            try:
                with self._http.stream("GET", path, headers={**self._authorization(), **headers},
                                       timeout=httpx.Timeout(30.0, read=None)) as response:
                    if response.status_code != 200:
                        response.read()
                        raise _error(response)
                    attempts = 0
                    lines: list[str] = []
                    for line in response.iter_lines():
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
                            # The server closes this connection (a restart, or room for others):
                            # come back from the last event.
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
                time.sleep(_backoff(attempts))

    # Plugins

    def publish(
        self,
        wasm: bytes | str | os.PathLike[str] | BinaryIO,
        *,
        current: bool = True,
        gate: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Publishes a component (its bytes, a path to a `.wasm` file, or an open binary file)
        to the server's store; an administrator's call. The server checks it as
        `caseload plugin check` does and answers the stored version with `created` (False when
        the same bytes were published before) and the check's `report`. It becomes current
        unless `current=False`; with a `gate` (an experiment template: `{"inputs": [...],
        "seeds": [...], "options": {...}}`), only if it loses on none of those inputs against
        the current version, and the answer's `gate` says what its experiment found. A refused
        component is an `ApiError` (422) with the check's message in `detail`."""
        if isinstance(wasm, (str, os.PathLike)):
            wasm = Path(wasm).read_bytes()
        elif not isinstance(wasm, (bytes, bytearray, memoryview)):
            wasm = wasm.read()
        params = ({"gate": json.dumps(gate, separators=(",", ":"))} if gate is not None
                  else {"current": "true" if current else "false"})
        # A gate's experiment runs before the answer: up to 600 s.
        timeout = httpx.Timeout(None) if gate is not None else httpx.USE_CLIENT_DEFAULT
        response = self._send("POST", "/plugins", content=bytes(wasm), params=params,
                              headers={"Content-Type": "application/wasm"}, retry=True,
                              timeout=timeout)
        return response.json()

    def versions(self, problem: str) -> list[PluginVersion]:
        """Every version of use case `problem`: the store's (retired ones too), the built-in,
        the server's plugins directory file; `current` marks what an unpinned launch gets."""
        return _versions(self._send("GET", f"/problem/{_segment(problem)}/versions", retry=True))

    def set_current(self, problem: str, version: str) -> list[PluginVersion]:
        """Makes `version` (`"1.2.0"` or `"sha256:<hex>"`) what unpinned launches of `problem`
        get, on every replica; a rollback is the same call. An administrator's call; answers
        the versions."""
        return _versions(self._send("PUT", f"/problem/{_segment(problem)}/current",
                                    json={"version": version}, retry=True))

    def retire(self, problem: str, version: str) -> list[PluginVersion]:
        """Retires a published version: no new job runs it, jobs bound to it still do. An
        administrator's call; answers the versions. An `ApiError` (409) for the current
        version, a retired one or a built-in."""
        path = f"/problem/{_segment(problem)}/versions/{_segment(version)}"
        return _versions(self._send("DELETE", path, retry=False))

    # Experiments

    def experiment(
        self,
        problem: str,
        inputs: list[str | dict[str, Any]],
        *,
        versions: list[str] | None = None,
        seeds: list[int] | None = None,
        options: dict[str, Any] | None = None,
        project: str | None = None,
    ) -> str:
        """Launches an experiment: each of `versions` (the first the baseline; the current
        version if none) on each input (a job id, a data file id, or an inline input) with
        each seed, as ordinary jobs, in `project` if given. Returns its id;
        `experiment_status` reads it."""
        body: dict[str, Any] = {"problem": problem, "inputs": inputs}
        if versions is not None:
            body["versions"] = versions
        if seeds is not None:
            body["seeds"] = seeds
        if options:
            body["options"] = options
        return self._send("POST", "/experiments", json=body, params=_project(project),
                          retry=False).json()["experiment"]

    def experiment_status(self, experiment_id: str) -> dict[str, Any]:
        """`GET /experiments/<id>`: `progress`, the `summary` per version against the baseline
        (wins, ties, losses, mean relative difference, failures) and the `results` per input."""
        return self._send("GET", f"/experiments/{_segment(experiment_id)}", retry=True).json()

    def wait_experiment(self, experiment_id: str, *, timeout: float | None = None,
                        poll: float = 0.5) -> dict[str, Any]:
        """The experiment once every run ended (`TimeoutError` after `timeout` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
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
            params = {"limit": 200, **({"before": before} if before else {}),
                      **(_project(project) or {})}
            page = self._send("GET", "/experiments", params=params, retry=True).json()
            listed.extend(page["experiments"])
            before = page["next_before"]
            if before is None:
                return listed

    def cancel_experiment(self, experiment_id: str) -> dict[str, Any]:
        """Cancels the experiment's runs that have not started: `{detail, experiment,
        cancelled}`."""
        return self._send("DELETE", f"/experiments/{_segment(experiment_id)}", retry=True).json()

    # API keys

    def create_api_key(self, name: str, scopes: Iterable[str], *,
                       expires_at: datetime | None = None,
                       project: str | None = None) -> dict[str, Any]:
        """Makes an API key of the caller's: `{key, id, prefix, name, owner, scopes, project,
        created_at, expires_at, last_used_at}`. `key` is shown this once. With `project`, the
        key is bound to that project: it launches, uploads and lists there, and reads
        nothing outside it."""
        body: dict[str, Any] = {"name": name, "scopes": list(scopes)}
        if expires_at is not None:
            body["expires_at"] = expires_at.astimezone(timezone.utc).isoformat()
        if project is not None:
            body["project"] = project
        return self._send("POST", "/api_keys", json=body, retry=False).json()

    def api_keys(self) -> list[dict[str, Any]]:
        """The caller's API keys, without their secrets."""
        return self._send("GET", "/api_keys", retry=True).json()["api_keys"]

    def revoke_api_key(self, key_id: str) -> None:
        """Revokes a key (its id or its `cl_<id>` prefix); it stops within seconds."""
        self._send("DELETE", f"/api_keys/{_segment(key_id)}", retry=True)

    # The one place requests go out

    def _authorization(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _send(self, method: str, path: str, *, retry: bool, authorize: bool = True,
              headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
        attempt = 0
        relogged = False
        while True:
            attempt += 1
            all_headers = {**(self._authorization() if authorize else {}), **(headers or {})}
            try:
                response = self._http.request(method, path, headers=all_headers, **kwargs)
            except httpx.TransportError:
                if not retry or attempt > self._retries:
                    raise
                time.sleep(_backoff(attempt))
                continue
            if response.status_code == 401 and authorize and self._credentials and not relogged:
                relogged = True
                self.login(*self._credentials)
                continue
            if retry and attempt <= self._retries and _retryable(response):
                time.sleep(_retry_after(response) or _backoff(attempt))
                continue
            if response.status_code >= 400:
                raise _error(response)
            return response


def _segment(text: str) -> str:
    """`text` as one segment of a path: '/', '?', '#', '%' and spaces escaped; '@' and ':' kept
    readable (`versioned@sha256:...`), as the API reads them either way."""
    return urllib.parse.quote(text, safe="@:")


def _project(project: str | None) -> dict[str, str] | None:
    return {"project": project} if project else None


def _problem_path(problem: str, version: str | None) -> str:
    """`/problem/<problem>`, pinned to `version` if one is given (`/problem/maxcut@1.3.0`)."""
    return f"/problem/{_segment(problem)}" + (f"@{_segment(version)}" if version else "")


def _versions(response: httpx.Response) -> list[PluginVersion]:
    return [PluginVersion.from_body(entry) for entry in response.json()["versions"]]


def _instant(value: int | datetime) -> int | str:
    """A time filter as the API takes it: epoch milliseconds, or RFC 3339 in UTC."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return value


def _retryable(response: httpx.Response) -> bool:
    """Whether an answer is worth another try: a 429 for too many attempts is, a 429 at a
    quota is not (pending jobs, held requests: waiting a few seconds frees nothing)."""
    if response.status_code not in RETRY_STATUSES:
        return False
    return response.status_code != 429 or "quota" not in str(_problem(response).get("type", ""))


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        problem = response.json()
    except ValueError:
        problem = {"title": response.reason_phrase, "detail": response.text}
    return problem if isinstance(problem, dict) else {}


def _error(response: httpx.Response) -> ApiError:
    return error_for(response.status_code, _problem(response), _retry_after(response),
                     response.headers.get("x-request-id"))


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(float(response.headers.get("Retry-After", "")), MAX_WAIT)
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    return min(0.25 * 2 ** (attempt - 1), 8.0)


def _size_of(file: BinaryIO) -> int | None:
    """The bytes left to read in `file`, if it can say."""
    try:
        if not file.seekable():
            return None
        here = file.tell()
        end = file.seek(0, os.SEEK_END)
        file.seek(here)
        return end - here
    except (AttributeError, OSError, ValueError):
        return None


def _draw_progress(sent: int, total: int | None) -> None:
    if total:
        done = int(30 * sent / total)
        sys.stderr.write(f"\r[{'#' * done}{' ' * (30 - done)}] {sent / total:6.1%} of {total:,} bytes")
    else:
        sys.stderr.write(f"\r{sent:,} bytes")
    sys.stderr.flush()
