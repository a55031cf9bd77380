"""A client for the caseload job API.

    from caseload import Client

    with Client("http://127.0.0.1:8080", "admin", "password") as client:
        job = client.submit("maxcut", {"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]})
        status = client.wait(job)
        print(status.status, client.output(job)["cut_value"])
"""

from .async_client import AsyncClient
from .client import Client
from .errors import (
    ApiError,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    NotImplementedByUseCase,
    QuotaExceeded,
    Throttled,
    Unauthorized,
    WaitTimedOut,
)
from .types import Event, Incumbent, JobStatus, JobSummary, PluginVersion

__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "Conflict",
    "Forbidden",
    "Invalid",
    "NotFound",
    "NotImplementedByUseCase",
    "QuotaExceeded",
    "Throttled",
    "Event",
    "Incumbent",
    "JobStatus",
    "JobSummary",
    "PluginVersion",
    "Unauthorized",
    "WaitTimedOut",
]
