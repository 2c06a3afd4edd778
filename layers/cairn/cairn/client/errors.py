"""What can go wrong calling the jobs API, each as one line for people (``str(error)``)."""

from __future__ import annotations

from typing import Any


class RequestFailed(Exception):
    """A call to the API did not succeed; ``message`` says why in one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ApiError(RequestFailed):
    """The API answered with an error: its HTTP status, its error code and its message."""

    def __init__(self, status: int, code: str, message: str, *, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.body = body

    def __str__(self) -> str:
        return f"{self.message} (HTTP {self.status} {self.code})"


class ApiUnreachable(RequestFailed):
    """No answer: the connection was refused, the host is unknown, or the request timed out."""


class AuthError(RequestFailed):
    """The request cannot be authenticated (no credentials, no region); the message says what to do."""
