"""The errors the clients raise: `ApiError` for an answer they did not want, with a subclass
for each kind a caller may want to catch on its own, and `WaitTimedOut` for a wait on many
jobs that reached its timeout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import JobSummary


class ApiError(Exception):
    """An RFC 9457 problem document the server answered, or a status without one.

    `type` is the problem's URN (`urn:caseload:problem:invalid-input`...), `errors` the
    violations of an invalid input, each `{"pointer": ..., "message": ...}`. `request_id` is
    the `x-request-id` the server answered under, which its log lines name: quote it to an
    operator.
    """

    def __init__(self, status: int, problem: dict[str, Any], request_id: str | None = None):
        self.status = status
        self.type: str = problem.get("type", "about:blank")
        self.title: str = problem.get("title", "")
        self.detail: str = problem.get("detail", "")
        self.errors: list[dict[str, str]] = problem.get("errors", [])
        self.request_id = request_id
        super().__init__(self._message())

    def _message(self) -> str:
        request = f" (request {self.request_id})" if self.request_id else ""
        return f"{self.status} {self.title}: {self.detail}{request}"


class Unauthorized(ApiError):
    """401: no credentials, or ones the server does not take (expired, revoked, unknown)."""


class Forbidden(ApiError):
    """403: the caller's role or key does not allow this; the detail names the right needed."""


class NotFound(ApiError):
    """404: no such job, data file, use case, project... or one of another user's."""


class Conflict(ApiError):
    """409: not in a state that allows it (the output of a job that did not complete, a
    cancel of one that ended, a name taken)."""


class Invalid(ApiError):
    """422: the input, options or body broke the use case's schema or checks. `str()` lists
    every violation with its JSON pointer."""

    def _message(self) -> str:
        lines = [super()._message()]
        lines += [f"  {error.get('pointer') or '/'}: {error.get('message', '')}" for error in self.errors]
        return "\n".join(lines)


class NotImplementedByUseCase(ApiError):
    """501: the use case cannot do this; `evaluate` of a use case whose component does not
    score solutions."""


class QuotaExceeded(ApiError):
    """429 or 507 at a quota: pending jobs, stored bytes, held requests. Waiting for jobs to
    end or deleting data frees room; retrying at once does not."""


class Throttled(ApiError):
    """429 for too many attempts (logins): `retry_after` is the wait the server asked for, in
    seconds."""

    def __init__(self, status: int, problem: dict[str, Any], retry_after: float | None,
                 request_id: str | None = None):
        self.retry_after = retry_after
        super().__init__(status, problem, request_id)


def error_for(status: int, problem: dict[str, Any], retry_after: float | None,
              request_id: str | None = None) -> ApiError:
    """The error for a status and its problem document, answered under `request_id`."""
    kind = str(problem.get("type", ""))
    if status == 429 and "quota" not in kind:
        return Throttled(status, problem, retry_after, request_id)
    classes: dict[int, type[ApiError]] = {
        401: Unauthorized,
        403: Forbidden,
        404: NotFound,
        409: Conflict,
        422: Invalid,
        429: QuotaExceeded,
        501: NotImplementedByUseCase,
        507: QuotaExceeded,
    }
    return classes.get(status, ApiError)(status, problem, request_id)


class WaitTimedOut(TimeoutError):
    """`as_completed` or `wait_all` gave up at its `timeout`: `ended` holds the jobs that
    ended by then (a `JobSummary` by id), `waiting` the ids of the rest."""

    def __init__(self, ended: dict[str, JobSummary], waiting: list[str]):
        self.ended = ended
        self.waiting = waiting
        shown = ", ".join(waiting[:5]) + ("..." if len(waiting) > 5 else "")
        super().__init__(f"{len(waiting)} of {len(ended) + len(waiting)} jobs did not end in "
                         f"time: {shown}")
