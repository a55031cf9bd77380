"""What the API answers, as typed values."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: The statuses a job may be in; the last three are ends.
STATUSES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED")
ENDED = ("COMPLETED", "FAILED", "CANCELLED")


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time of the API (`2026-11-26T04:40:37.123Z`) as an aware datetime in UTC;
    None for None. (`fromisoformat` takes a `Z` only from Python 3.11.)"""
    if text is None:
        return None
    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)


@dataclass(frozen=True)
class JobStatus:
    """`GET /job/<id>`: the job's status, its times and every execution.

    `started_at` and `end_at` are the spec's `MM/DD/YYYY, HH:MM:SS` strings (UTC, `end_at`
    empty until the end); `created_at` and `ended_at` are the same instants as aware
    datetimes in UTC, to the millisecond (`ended_at` None until the end). `plugin` is the
    component the job was bound to at acceptance, `{version, digest, requested}`
    (`requested` is the version it pinned, None for the current one); `rerun_of` names the
    job it reran, if any. `objective` is its output's objective where the use case declares
    one (`objective_sense` says whether lower or higher is better); `stopped_early` is true
    for a job that `finish` stopped with the best it had. `warm_start` names the job it
    started from (`options={"warm_start": id}`); `race` lists a race's entrants
    (`options={"race": {"seeds": k}}`), None for any other job. `project` is the project it
    is in (its launcher's id for the launcher's personal project)."""

    id: str
    status: str
    started_at: str
    end_at: str
    created_at: datetime
    ended_at: datetime | None
    executions: dict[str, dict[str, Any]]
    plugin: dict[str, Any] | None = None
    rerun_of: str | None = None
    objective: float | None = None
    objective_sense: str | None = None
    stopped_early: bool = False
    warm_start: str | None = None
    race: dict[str, Any] | None = None
    project: str | None = None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> JobStatus:
        ((job_id, job),) = body["job"].items()
        return cls(
            id=job_id,
            status=job["status"],
            started_at=job["started_at"],
            end_at=job["end_at"],
            created_at=parse_time(job["created_at"]),
            ended_at=parse_time(job["ended_at"]),
            executions=job["executions"],
            plugin=job.get("plugin"),
            rerun_of=job.get("rerun_of"),
            objective=job.get("objective"),
            objective_sense=job.get("objective_sense"),
            stopped_early=job.get("stopped_early", False),
            warm_start=job.get("warm_start"),
            race=job.get("race"),
            project=job.get("project"),
        )


@dataclass(frozen=True)
class JobSummary:
    """An entry of `GET /jobs`, with its times as `JobStatus` has them."""

    id: str
    problem: str
    status: str
    started_at: str
    end_at: str
    created_at: datetime
    ended_at: datetime | None
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_body(cls, entry: dict[str, Any]) -> JobSummary:
        return cls(
            id=entry["id"],
            problem=entry["problem"],
            status=entry["status"],
            started_at=entry["started_at"],
            end_at=entry["end_at"],
            created_at=parse_time(entry["created_at"]),
            ended_at=parse_time(entry["ended_at"]),
            labels=entry.get("labels", {}),
        )


@dataclass(frozen=True)
class PluginVersion:
    """One version of a use case, as `GET /problem/<id>/versions` lists it.

    `source` is `store`, `built-in` or `directory` (the server's plugins directory, with its
    `file`); `current` marks what an unpinned launch gets, `jobs` counts the jobs bound to it.
    `size`, `published_at` (an aware datetime in UTC) and `published_by` are the store's."""

    name: str
    version: str
    digest: str
    world: str
    source: str
    file: str | None
    size: int | None
    published_at: datetime | None
    published_by: str | None
    current: bool
    retired: bool
    loaded: bool
    jobs: int

    @classmethod
    def from_body(cls, entry: dict[str, Any]) -> PluginVersion:
        return cls(
            name=entry["name"],
            version=entry["version"],
            digest=entry["digest"],
            world=entry["world"],
            source=entry["source"],
            file=entry.get("file"),
            size=entry.get("size"),
            published_at=parse_time(entry.get("published_at")),
            published_by=entry.get("published_by"),
            current=entry["current"],
            retired=entry["retired"],
            loaded=entry["loaded"],
            jobs=entry["jobs"],
        )


@dataclass(frozen=True)
class Incumbent:
    """A solution a job's plugin reported as it found it: `objective` is the value the use
    case's objective points at, `solution` the JSON the plugin reported, `found_at` an aware
    datetime in UTC. `seq` numbers the reports of one execution from 1."""

    execution_id: str
    seq: int
    objective: float
    found_at: datetime | None
    solution: Any

    @classmethod
    def from_body(cls, entry: dict[str, Any]) -> Incumbent:
        return cls(
            execution_id=entry["execution_id"],
            seq=entry["seq"],
            objective=entry["objective"],
            found_at=parse_time(entry["found_at"]),
            solution=entry["solution"],
        )


@dataclass(frozen=True)
class Event:
    """One server-sent event: its name (`status`, `progress`, `log`, `incumbent`, `end`), its data as
    JSON, and its id where the stream can resume from it."""

    event: str
    data: Any
    id: str | None = None

    @classmethod
    def parse(cls, lines: list[str]) -> Event | None:
        name, data, event_id = "message", [], None
        for line in lines:
            if line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            elif key == "id":
                event_id = value
        if not data:
            return None
        return cls(event=name, data=json.loads("\n".join(data)), id=event_id)
