"""The one error the client raises for an answer it did not want."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An RFC 9457 problem document the server answered, or a status without one.

    `type` is the problem's URN (`urn:caseload:problem:invalid-input`...), `errors` the
    violations of an invalid input, each `{"pointer": ..., "message": ...}`.
    """

    def __init__(self, status: int, problem: dict[str, Any]):
        self.status = status
        self.type: str = problem.get("type", "about:blank")
        self.title: str = problem.get("title", "")
        self.detail: str = problem.get("detail", "")
        self.errors: list[dict[str, str]] = problem.get("errors", [])
        super().__init__(f"{status} {self.title}: {self.detail}")
