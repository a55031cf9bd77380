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
    datetimes in UTC, to the millisecond (`ended_at` None until the end)."""

    id: str
    status: str
    started_at: str
    end_at: str
    created_at: datetime
    ended_at: datetime | None
    executions: dict[str, dict[str, Any]]

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
class Event:
    """One server-sent event: its name (`status`, `progress`, `log`, `end`), its data as
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
