"""The one exception the emulator's operations raise: a GitHub error response.

Operations (shared by the REST routes and the test-seeding helpers) raise `ApiError`
with the status and message GitHub would send; the HTTP layer turns it into GitHub's
error body `{"message", "documentation_url", "status"}` (plus `errors` for 422s), and a
seeding helper lets it propagate so the test sees GitHub's reason.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ApiError", "validation_failed"]


class ApiError(Exception):
    """A GitHub error response waiting to be sent."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: list[Mapping[str, object]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors
        self.headers = dict(headers or {})


def validation_failed(resource: str, message: str, *, field: str | None = None) -> ApiError:
    """GitHub's 422 "Validation Failed" with one `custom` error, e.g. no commits between."""
    error: dict[str, object] = {"resource": resource, "code": "custom", "message": message}
    if field is not None:
        error["field"] = field
    return ApiError(422, "Validation Failed", errors=[error])
