"""What `Client` and `AsyncClient` share: every call of the API as a `Call` (method, path,
body, whether it may be retried, how its answer is read), the policy for retries, the
errors answers become, and the bookkeeping of waiting for many jobs. The two clients only
send: so every call exists in both, and behaves the same in both.

Retries are only made where they are safe: reads, cancels, publishes and promotions
(idempotent by the API's contract: the same bytes published again answer the stored
version), and launches, which always carry an `Idempotency-Key` so a retried launch answers
the first one's job instead of starting another. Uploads, reruns, retirements, experiments
and new keys are not retried.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import httpx

from .errors import ApiError, WaitTimedOut, error_for
from .types import ENDED, Event, Incumbent, JobStatus, JobSummary, PluginVersion

T = TypeVar("T")

#: The longest a single long-poll is held by the server.
MAX_WAIT = 60.0

#: Statuses worth another try: the server is busy, restarting, or behind a proxy that is. A
#: 429 at a quota is not among them (`retry_delay`): a quota does not free itself.
RETRY_STATUSES = (429, 502, 503, 504)

#: The most ids one `GET /jobs?ids=` names.
IDS_PER_PAGE = 100

#: How far before its first read `as_completed` has its streams replay events, so that a
#: job that ends between the read and the stream's start is not missed.
REPLAY_MARGIN_MS = 5000


@dataclass
class Call(Generic[T]):
    """One request of the API and how to read its answer. `content` is bytes, or for an
    upload a `Chunks`, read as it is sent."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] | None = None
    json: Any = None
    content: bytes | Chunks | None = None
    headers: dict[str, str] = field(default_factory=dict)
    retry: bool = True
    authorize: bool = True
    #: Wait for the answer without a limit (a gated publish runs an experiment first).
    unbounded: bool = False
    #: The `x-request-id` it is sent under, every attempt of it.
    request_id: str = field(default_factory=lambda: new_request_id())

    @property
    def replayable(self) -> bool:
        """Whether it can be sent again (after a new login): its body can be read again."""
        return not isinstance(self.content, Chunks) or self.content.replayable

    def request_args(self, authorization: dict[str, str]) -> dict[str, Any]:
        """The keyword arguments of `httpx`'s `request` for one attempt of this call."""
        headers = {**(authorization if self.authorize else {}), "x-request-id": self.request_id,
                   **self.headers}
        args: dict[str, Any] = {"headers": headers}
        if self.params is not None:
            args["params"] = self.params
        if self.json is not None:
            args["json"] = self.json
        if isinstance(self.content, Chunks):
            args["content"] = self.content.read()
        elif self.content is not None:
            args["content"] = self.content
        if self.unbounded:
            args["timeout"] = httpx.Timeout(None)
        return args


class Chunks:
    """An upload's body, read a chunk at a time as it is sent: from a path (read again for
    each attempt), or from an open file (read again from where it was, if it can seek)."""

    def __init__(self, source: Path | BinaryIO, chunk_size: int, progress: bool):
        self._source = source
        self._chunk_size = chunk_size
        self._progress = progress
        self._start = None if isinstance(source, Path) else _position(source)
        self._read = False

    @property
    def replayable(self) -> bool:
        return isinstance(self._source, Path) or self._start is not None or not self._read

    def read(self) -> Iterator[bytes]:
        """The chunks, from the start."""
        if self._read and not self.replayable:
            raise RuntimeError("the upload's file cannot be read again")
        self._read = True
        if isinstance(self._source, Path):
            return _chunks_of_path(self._source, self._chunk_size, self._progress)
        if self._start is not None:
            self._source.seek(self._start)
        return _chunks(self._source, _size_of(self._source), self._chunk_size, self._progress)


def new_request_id() -> str:
    """An `x-request-id` for one request: the server keeps it and logs under it, and an
    error raised for its answer carries it."""
    return uuid.uuid4().hex


def _json(response: httpx.Response) -> Any:
    return response.json()


def _nothing(_: httpx.Response) -> None:
    return None


def _field(name: str) -> Callable[[httpx.Response], Any]:
    return lambda response: response.json()[name]


# Sessions


def login(username: str, password: str) -> Call[str]:
    """Exchanges credentials for a token."""
    return Call("POST", "/login", _field("access_token"),
                json={"username": username, "password": password}, authorize=False)


# Launching


def submit(
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
) -> Call[str]:
    """Launches a job of use case `problem` on `input`, or on the uploaded `data_file` (with
    the use case's dataset `parameters`); returns its id once the server committed it.
    `version` (`"1.2.0"` or `"sha256:<hex>"`) pins the component; by default the job runs
    the use case's current version. `project` launches in a shared project the caller is a
    member of (a key bound to a project launches there without it)."""
    if (input is None) == (data_file is None):
        raise ValueError("give either input or data_file")
    body = dict(input) if input is not None else {"data_file_identifier": data_file,
                                                   **(parameters or {})}
    if options:
        body["options"] = options
    if labels:
        body["labels"] = labels
    return Call("POST", _problem_path(problem, version), _field("job"), json=body,
                params=_project(project), headers=_idempotency(idempotency_key))


def evaluate(
    problem: str,
    solution: Any,
    input: dict[str, Any] | None = None,
    *,
    data_file: str | None = None,
    parameters: dict[str, Any] | None = None,
    version: str | None = None,
) -> Call[dict[str, Any]]:
    """Scores `solution` (the use case's output, or the part of it that decides the
    objective) for `input`, or for the uploaded `data_file` (with the use case's dataset
    `parameters`), by the use case's `evaluate`, without a job: `{problem, version,
    objective, sense, feasible, violations, details}`. A use case that does not evaluate
    solutions answers `NotImplemented` (501)."""
    if (input is None) == (data_file is None):
        raise ValueError("give either input or data_file")
    body: dict[str, Any] = {"solution": solution}
    if input is not None:
        body["input"] = input
    else:
        body["data_file_identifier"] = data_file
        if parameters:
            body["input"] = parameters
    return Call("POST", f"{_problem_path(problem, version)}/evaluate", _json, json=body)


def submit_batch(
    problem: str,
    bodies: Iterable[dict[str, Any]],
    *,
    version: str | None = None,
    project: str | None = None,
    idempotency_key: str | None = None,
) -> Call[list[str]]:
    """Launches up to 100 jobs in one transaction, all or none; each body is a launch body
    (an input, with `options` and `labels` if wanted), all on `version` if given, in
    `project` if given. Returns their ids in order."""
    return Call("POST", f"{_problem_path(problem, version)}/batch", _field("jobs"),
                json={"jobs": list(bodies)}, params=_project(project),
                headers=_idempotency(idempotency_key))


def rerun(
    job_id: str,
    *,
    version: str | None = None,
    options: dict[str, Any] | None = None,
) -> Call[str]:
    """Launches a new job with what `job_id` was launched with (its input, its options with
    the seed it ran with, its labels, its project) on the component it was bound to, or on
    `version`; `options` replace its options one by one. Returns the new job's id. Not
    retried: a rerun carries no idempotency key."""
    body: dict[str, Any] = {}
    if version is not None:
        body["version"] = version
    if options:
        body["options"] = options
    return Call("POST", f"/job/{_segment(job_id)}/rerun", _field("job"), json=body, retry=False)


def upload(
    file: str | os.PathLike[str] | BinaryIO,
    *,
    media_type: str = "application/octet-stream",
    filename: str | None = None,
    project: str | None = None,
    progress: bool = False,
    chunk_size: int = 1 << 20,
) -> Call[dict[str, Any]]:
    """Uploads a dataset, streamed from a path or an open binary file; with `progress`, a
    bar on standard error; in `project` if given (its members launch on it). Returns the data
    file's metadata (`data_file_identifier`, `size`, `sha256`...). Not retried: the file is
    read as it is sent (and again after a new login, if it can be)."""
    if isinstance(file, (str, os.PathLike)):
        path = Path(file)
        filename = filename or path.name
        chunks = Chunks(path, chunk_size, progress)
    else:
        chunks = Chunks(file, chunk_size, progress)
    params = {**({"filename": filename} if filename else {}), **(_project(project) or {})}
    return Call("POST", "/data_file", _json, params=params or None, content=chunks,
                headers={"Content-Type": media_type}, retry=False)


# Reading


def job(job_id: str) -> Call[JobStatus]:
    """The job's status, times, executions and project."""
    return Call("GET", f"/job/{_segment(job_id)}", _job_status)


def job_wait(job_id: str, hold: float) -> Call[JobStatus]:
    """The job once it ended, or after `hold` seconds (at most a minute) as it is then."""
    return Call("GET", f"/job/{_segment(job_id)}", _job_status, params={"wait": hold})


def hold_for(deadline: float | None) -> float:
    """How long the next long-poll may be held before `deadline` (a `time.monotonic()`)."""
    if deadline is None:
        return MAX_WAIT
    return max(0.0, min(MAX_WAIT, deadline - time.monotonic()))


def output(job_id: str, *, wait: float | None = None, as_type: type[T] | None = None) -> Call[Any]:
    """The completed job's output; with `wait`, held up to that many seconds (at most a
    minute) for the end. A `Conflict` (409) if the job did not complete. With `as_type` (a
    dataclass), the output read as one: its fields taken from the output's, the others left
    out."""
    params = {"wait": min(wait, MAX_WAIT)} if wait else None

    def parse(response: httpx.Response) -> Any:
        value = response.json()
        if as_type is None:
            return value
        names = {field.name for field in dataclasses.fields(as_type)}  # type: ignore[arg-type]
        return as_type(**{name: value for name, value in value.items() if name in names})

    return Call("GET", f"/job/{_segment(job_id)}/output", parse, params=params)


def cancel(job_id: str) -> Call[dict[str, Any]]:
    """Cancels a pending or running job: `{detail, job, status}`."""
    return Call("DELETE", f"/job/{_segment(job_id)}", _json)


def finish(job_id: str) -> Call[dict[str, Any]]:
    """Stops a running job now and keeps the best it found: it ends `COMPLETED` with that
    output (`JobStatus.stopped_early`); a pending one is cancelled. `{detail, job,
    status}`, once the job ended (the server waits up to 5 s for it)."""
    return Call("POST", f"/job/{_segment(job_id)}/finish", _json)


def incumbents(job_id: str) -> Call[list[Incumbent]]:
    """The solutions the job's plugin reported as it found them, the newest few of each
    execution (a race's: each entrant's), oldest first. While the job runs, `events(job_id)`
    sends each as an `incumbent` event."""
    return Call("GET", f"/job/{_segment(job_id)}/incumbents",
                lambda response: [Incumbent.from_body(entry)
                                  for entry in response.json()["incumbents"]])


def jobs_query(
    *,
    status: str | Iterable[str] | None = None,
    problem: str | None = None,
    labels: dict[str, str] | None = None,
    since: int | datetime | None = None,
    until: int | datetime | None = None,
    ids: Iterable[str] | None = None,
    project: str | None = None,
    page_size: int = 100,
) -> dict[str, Any]:
    """The query of `GET /jobs` for these filters (see `Client.jobs`)."""
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
    return params


def jobs_page(params: dict[str, Any], before: str | None) -> Call[tuple[list[JobSummary], str | None]]:
    """One page of `GET /jobs`: its jobs, and where the next page starts (None after the
    last)."""
    def parse(response: httpx.Response) -> tuple[list[JobSummary], str | None]:
        page = response.json()
        return [JobSummary.from_body(entry) for entry in page["jobs"]], page["next"]

    return Call("GET", "/jobs", parse, params={**params, **({"before": before} if before else {})})


def events_request(
    job_id: str | None,
    project: str | None,
    last_event_id: str | None,
    authorization: dict[str, str],
) -> dict[str, Any]:
    """The arguments of `httpx`'s `stream` for an event stream: a job's, a project's or
    the caller's, resumed after `last_event_id` if given."""
    path = f"/job/{_segment(job_id)}/events" if job_id else "/jobs/events"
    headers = {**authorization, "x-request-id": new_request_id()}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    args: dict[str, Any] = {"method": "GET", "url": path, "headers": headers,
                            "timeout": STREAM_TIMEOUT}
    if project and not job_id:
        args["params"] = {"project": project}
    return args


#: The timeouts of an event stream: the server sends a keep-alive every 15 s, so a stream
#: silent for longer is a dead connection, opened again.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=45.0)


class EventReader:
    """Server-sent events out of a stream's lines."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def line(self, line: str) -> Event | None:
        """Takes one line; the event it completes, if any."""
        if line:
            self._lines.append(line)
            return None
        lines, self._lines = self._lines, []
        return Event.parse(lines)


# Plugins


def publish(
    wasm: bytes | str | os.PathLike[str] | BinaryIO,
    *,
    current: bool = True,
    gate: dict[str, Any] | None = None,
) -> Call[dict[str, Any]]:
    """Publishes a component (its bytes, a path to a `.wasm` file, or an open binary file)
    to the server's store; an administrator's call. The server checks it as
    `caseload plugin check` does and answers the stored version with `created` (False when
    the same bytes were published before) and the check's `report`. It becomes current
    unless `current=False`; with a `gate` (an experiment template: `{"inputs": [...],
    "seeds": [...], "options": {...}}`), only if it loses on none of those inputs against
    the current version, and the answer's `gate` says what its experiment found. A refused
    component is an `Invalid` (422) with the check's message in `detail`."""
    if isinstance(wasm, (str, os.PathLike)):
        wasm = Path(wasm).read_bytes()
    elif not isinstance(wasm, (bytes, bytearray, memoryview)):
        wasm = wasm.read()
    params = ({"gate": json.dumps(gate, separators=(",", ":"))} if gate is not None
              else {"current": "true" if current else "false"})
    # A gate's experiment runs before the answer: up to 600 s.
    return Call("POST", "/plugins", _json, params=params, content=bytes(wasm),
                headers={"Content-Type": "application/wasm"}, unbounded=gate is not None)


def versions(problem: str) -> Call[list[PluginVersion]]:
    """Every version of use case `problem`: the store's (retired ones too), the built-in,
    the server's plugins directory file; `current` marks what an unpinned launch gets."""
    return Call("GET", f"/problem/{_segment(problem)}/versions", _versions)


def set_current(problem: str, version: str) -> Call[list[PluginVersion]]:
    """Makes `version` (`"1.2.0"` or `"sha256:<hex>"`) what unpinned launches of `problem`
    get, on every replica; a rollback is the same call. An administrator's call; answers
    the versions."""
    return Call("PUT", f"/problem/{_segment(problem)}/current", _versions,
                json={"version": version})


def retire(problem: str, version: str) -> Call[list[PluginVersion]]:
    """Retires a published version: no new job runs it, jobs bound to it still do. An
    administrator's call; answers the versions. A `Conflict` (409) for the current version,
    a retired one or a built-in."""
    return Call("DELETE", f"/problem/{_segment(problem)}/versions/{_segment(version)}",
                _versions, retry=False)


def download(problem: str, version: str) -> Call[bytes]:
    """The bytes of a published version of `problem` (`"1.2.0"` or `"sha256:<hex>"`),
    retired ones too: the component its jobs ran, to check or keep."""
    return Call("GET",
                f"/problem/{_segment(problem)}/versions/{_segment(version)}/component",
                lambda response: response.content)


# Experiments


def experiment(
    problem: str,
    inputs: list[str | dict[str, Any]],
    *,
    versions: list[str] | None = None,
    seeds: list[int] | None = None,
    options: dict[str, Any] | None = None,
    project: str | None = None,
) -> Call[str]:
    """Launches an experiment: each of `versions` (the first the baseline; the current
    version if none) on each input (a job id, a data file id, or an inline input) with
    each seed, as ordinary jobs, in `project` if given. Returns its id; `experiment_status`
    reads it. Not retried."""
    body: dict[str, Any] = {"problem": problem, "inputs": inputs}
    if versions is not None:
        body["versions"] = versions
    if seeds is not None:
        body["seeds"] = seeds
    if options:
        body["options"] = options
    return Call("POST", "/experiments", _field("experiment"), json=body,
                params=_project(project), retry=False)


def experiment_status(experiment_id: str) -> Call[dict[str, Any]]:
    """`GET /experiments/<id>`: `progress`, the `summary` per version against the baseline
    (wins, ties, losses, mean relative difference, failures) and the `results` per input."""
    return Call("GET", f"/experiments/{_segment(experiment_id)}", _json)


def experiments_page(
    before: str | None,
    project: str | None,
) -> Call[tuple[list[dict[str, Any]], str | None]]:
    """One page of the caller's (or `project`'s) experiments, newest first, and where the
    next starts."""
    params: dict[str, Any] = {"limit": 200, **({"before": before} if before else {}),
                              **(_project(project) or {})}

    def parse(response: httpx.Response) -> tuple[list[dict[str, Any]], str | None]:
        page = response.json()
        return page["experiments"], page["next_before"]

    return Call("GET", "/experiments", parse, params=params)


def cancel_experiment(experiment_id: str) -> Call[dict[str, Any]]:
    """Cancels the experiment's runs that have not started: `{detail, experiment,
    cancelled}`."""
    return Call("DELETE", f"/experiments/{_segment(experiment_id)}", _json)


# API keys


def create_api_key(
    name: str,
    scopes: Iterable[str],
    *,
    expires_at: datetime | None = None,
    project: str | None = None,
) -> Call[dict[str, Any]]:
    """Makes an API key of the caller's: `{key, id, prefix, name, owner, scopes, project,
    created_at, expires_at, last_used_at}`. `key` is shown this once. With `project`, the
    key is bound to that project: it launches, uploads and lists there, and reads nothing
    outside it. Not retried."""
    body: dict[str, Any] = {"name": name, "scopes": list(scopes)}
    if expires_at is not None:
        body["expires_at"] = expires_at.astimezone(timezone.utc).isoformat()
    if project is not None:
        body["project"] = project
    return Call("POST", "/api_keys", _json, json=body, retry=False)


def api_keys() -> Call[list[dict[str, Any]]]:
    """The caller's API keys, without their secrets."""
    return Call("GET", "/api_keys", _field("api_keys"))


def revoke_api_key(key_id: str) -> Call[None]:
    """Revokes a key (its id or its `cl_<id>` prefix); it stops within seconds."""
    return Call("DELETE", f"/api_keys/{_segment(key_id)}", _nothing)


# Answers


def retry_delay(response: httpx.Response, attempt: int) -> float | None:
    """How long to wait before trying a retryable call again after this answer; None for
    an answer not worth another try (a 429 at a quota among them)."""
    if response.status_code not in RETRY_STATUSES:
        return None
    if response.status_code == 429 and "quota" in str(_problem(response).get("type", "")):
        return None
    return retry_after(response) or backoff(attempt)


def error(response: httpx.Response, request_id: str | None = None) -> ApiError:
    """The error an answer of 400 or more becomes, with the request id the server answered
    under (or the one sent, for an answer that lacks it)."""
    return error_for(response.status_code, _problem(response), retry_after(response),
                     response.headers.get("x-request-id") or request_id)


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        problem = response.json()
    except ValueError:
        problem = {"title": response.reason_phrase, "detail": response.text}
    return problem if isinstance(problem, dict) else {}


def retry_after(response: httpx.Response) -> float | None:
    try:
        return min(float(response.headers.get("Retry-After", "")), MAX_WAIT)
    except ValueError:
        return None


def backoff(attempt: int) -> float:
    return min(0.25 * 2 ** (attempt - 1), 8.0)


# Waiting for many jobs


class Completion:
    """What `as_completed` knows of the jobs it waits for: which ended, and which feed
    (`GET /jobs/events`, the caller's or with `?project=` a project's) carries each of the
    rest. A job of the caller's own (or, for a key bound to a project, of its project) is
    found by `GET /jobs?ids=` and carried by the caller's feed; another's job in a shared
    project is found by `GET /job/<id>`, then by `GET /jobs?project=&ids=`, and carried by
    its project's feed."""

    def __init__(self, job_ids: Iterable[str]) -> None:
        self.waiting: dict[str, str | None] = {job_id: None for job_id in job_ids}
        self._unlocated = set(self.waiting)
        self._ended: dict[str, JobSummary] = {}
        #: Events from a little before the first read are replayed.
        self.since = str(int(time.time() * 1000) - REPLAY_MARGIN_MS)

    @property
    def done(self) -> bool:
        return not self.waiting

    @property
    def ended(self) -> dict[str, JobSummary]:
        """The jobs found ended so far, by id."""
        return dict(self._ended)

    def listings(self, project: str | None = None) -> list[Call[tuple[list[JobSummary], str | None]]]:
        """The `GET /jobs?ids=` pages that list the jobs not located yet (with `project`:
        those located in it)."""
        if project is None:
            wanted = [job_id for job_id in self.waiting if job_id in self._unlocated]
        else:
            wanted = [job_id for job_id, feed in self.waiting.items() if feed == project]
        return [jobs_page(jobs_query(ids=wanted[start:start + IDS_PER_PAGE],
                                     page_size=IDS_PER_PAGE, project=project), None)
                for start in range(0, len(wanted), IDS_PER_PAGE)]

    def listed(self, jobs: list[JobSummary], project: str | None = None) -> list[JobSummary]:
        """Takes a listing's jobs: located in `project`'s feed (None: the caller's); the
        ones that ended, to yield."""
        ended = []
        for job in jobs:
            if job.id not in self.waiting:
                continue
            self._unlocated.discard(job.id)
            self.waiting[job.id] = project
            if job.status in ENDED:
                ended.append(self._end(job))
        return ended

    def unlocated(self) -> list[str]:
        """The jobs no listing of the caller's found: another's, in a project, or none."""
        return [job_id for job_id in self.waiting if job_id in self._unlocated]

    def locate(self, status: JobStatus) -> str | None:
        """Takes a job's `GET /job`: its project, whose listing then finds it."""
        project = status.project or ""
        self._unlocated.discard(status.id)
        self.waiting[status.id] = project
        return project

    def projects(self) -> list[str]:
        """The projects located jobs are in, each once."""
        return sorted({feed for feed in self.waiting.values() if feed})

    def feeds(self) -> list[str | None]:
        """The feeds to follow: None for the caller's, else a project's id."""
        return sorted(set(self.waiting.values()), key=lambda feed: feed or "")

    def event(self, event: Event) -> JobSummary | None:
        """Takes an event of a feed; the job it says ended, if one waited for."""
        if event.event != "status" or not isinstance(event.data, dict):
            return None
        if event.data.get("id") not in self.waiting:
            return None
        job = JobSummary.from_body(event.data)
        if job.status not in ENDED:
            return None
        return self._end(job)

    def _end(self, job: JobSummary) -> JobSummary:
        self.waiting.pop(job.id, None)
        self._ended[job.id] = job
        return job

    def timed_out(self) -> WaitTimedOut:
        return WaitTimedOut(self.ended, list(self.waiting))


def deadline_of(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def left(deadline: float | None) -> float | None:
    """Seconds left before `deadline`, at least 0; None for no deadline."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


# Helpers


def _job_status(response: httpx.Response) -> JobStatus:
    return JobStatus.from_body(response.json())


def _versions(response: httpx.Response) -> list[PluginVersion]:
    return [PluginVersion.from_body(entry) for entry in response.json()["versions"]]


def _project(project: str | None) -> dict[str, str] | None:
    return {"project": project} if project else None


def _idempotency(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key or str(uuid.uuid4())}


def _segment(text: str) -> str:
    """`text` as one segment of a path: '/', '?', '#', '%' and spaces escaped; '@' and ':' kept
    readable (`versioned@sha256:...`), as the API reads them either way."""
    return urllib.parse.quote(text, safe="@:")


def _problem_path(problem: str, version: str | None) -> str:
    """`/problem/<problem>`, pinned to `version` if one is given (`/problem/maxcut@1.3.0`)."""
    return f"/problem/{_segment(problem)}" + (f"@{_segment(version)}" if version else "")


def _instant(value: int | datetime) -> int | str:
    """A time filter as the API takes it: epoch milliseconds, or RFC 3339 in UTC."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return value


def _chunks_of_path(path: Path, chunk_size: int, progress: bool) -> Iterator[bytes]:
    with path.open("rb") as opened:
        yield from _chunks(opened, _size_of(opened), chunk_size, progress)


def _chunks(file: BinaryIO, total: int | None, chunk_size: int, progress: bool) -> Iterator[bytes]:
    sent = 0
    while chunk := file.read(chunk_size):
        sent += len(chunk)
        if progress:
            _draw_progress(sent, total)
        yield chunk
    if progress:
        sys.stderr.write("\n")


def _position(file: BinaryIO) -> int | None:
    """Where `file` is, if it can seek back there."""
    try:
        return file.tell() if file.seekable() else None
    except (AttributeError, OSError, ValueError):
        return None


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
