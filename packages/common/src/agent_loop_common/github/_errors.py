"""Typed GitHub failures whose message says what was asked, what GitHub said, what to do.

```
GitHubError                 .status .method .url .github_message .attempts
├── NotFound                404
├── Conflict                409
├── Unprocessable           422
│   ├── RefExists           creating a ref that exists (the claim race was lost)
│   └── NotFastForward      a non-forced ref update that is not a fast-forward
├── AuthError               401, or a 403 that is not a rate limit
├── RateLimited             429 / secondary or primary limit, after the retries allowed
└── GitHubUnavailable       5xx, timeouts, connection errors, after the retries allowed
```

Callers branch on these classes (a lost claim, a missing file) rather than on githubkit
or httpx exceptions, which never leave the facade.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, cast


class GitHubError(Exception):
    """A GitHub request failed; `str(error)` is a complete, actionable sentence."""

    hint = "See GitHub's answer above."

    def __init__(
        self,
        message: str,
        *,
        method: str,
        url: str,
        status: int | None = None,
        github_message: str = "",
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.method = method
        """HTTP method of the failed request."""
        self.url = url
        """Full URL of the failed request."""
        self.status = status
        """HTTP status, or None when no response arrived (timeout, connection error)."""
        self.github_message = github_message
        """GitHub's own `message` (plus validation errors), empty when there was none."""
        self.attempts = attempts
        """How many times the request was sent before giving up."""


class NotFound(GitHubError):
    """404: the object does not exist, or this identity cannot see it."""

    hint = (
        "Check that it exists (the repository is AGENT_LOOP_REPO, or one of "
        "AGENT_LOOP_REPOS) and that this identity can see it (GitHub answers 404, not 403, "
        "for private resources without access: GITHUB_TOKEN or the App must be given it)."
    )


class Conflict(GitHubError):
    """409: the repository is in a state that forbids the request (e.g. empty)."""

    hint = "The resource is in a conflicting state (for example an empty repository); re-read it and retry."


class Unprocessable(GitHubError):
    """422: GitHub understood the request and refused it."""

    hint = "GitHub rejected the request as invalid; fix the fields it names."


class RefExists(Unprocessable):
    """Creating a ref that already exists: another writer got there first."""

    hint = "Another writer created this ref first; read it (get_ref) to see who holds it."


class NotFastForward(Unprocessable):
    """A non-forced ref update that would drop commits: the ref moved since it was read."""

    hint = (
        "The ref moved since it was read; re-read it and rebuild on top, "
        "or pass force=True when overwriting is intended."
    )


class AuthError(GitHubError):
    """401, or a 403 that is not a rate limit: bad, expired or underprivileged credentials."""

    hint = (
        "Check GITHUB_TOKEN (or the GitHub App's GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY or "
        "GITHUB_APP_PRIVATE_KEY_PATH, GITHUB_APP_INSTALLATION_ID): that it is valid, has "
        "not expired, and grants the needed permission (contents, issues, pull requests: "
        "write)."
    )


class RateLimited(GitHubError):
    """A rate limit that outlasted the retry policy's budget."""

    hint = (
        "Stop here and let the next scheduled run continue; conditional (ETag) polls and "
        "fewer writes per run lower the pressure."
    )

    def __init__(
        self,
        message: str,
        *,
        method: str,
        url: str,
        status: int | None = None,
        github_message: str = "",
        attempts: int = 1,
        retry_after: float | None = None,
        reset_at: datetime | None = None,
    ) -> None:
        super().__init__(
            message,
            method=method,
            url=url,
            status=status,
            github_message=github_message,
            attempts=attempts,
        )
        self.retry_after = retry_after
        """Seconds GitHub asked to wait (Retry-After or the limit reset), if it said."""
        self.reset_at = reset_at
        """When the primary limit resets (`x-ratelimit-reset`), if GitHub said."""


class GitHubUnavailable(GitHubError):
    """5xx, timeouts and connection errors that outlasted the retry policy."""

    hint = (
        "GitHub is failing or unreachable (GITHUB_API_URL names where it is looked for); "
        "a later run can retry."
    )


def github_message(content: bytes) -> str:
    """GitHub's error text from a response body: `message` plus validation `errors`."""
    try:
        data: Any = json.loads(content)
    except ValueError:
        return content[:200].decode("utf-8", "replace").strip()
    if not isinstance(data, dict):
        return ""
    body = cast("dict[str, Any]", data)
    text = str(body.get("message", ""))
    errors: Any = body.get("errors")
    if isinstance(errors, list):
        details: list[str] = []
        for item in cast("list[Any]", errors):
            if isinstance(item, dict):
                entry = cast("dict[str, Any]", item)
                details.append(str(entry.get("message") or entry.get("code") or entry))
            else:
                details.append(str(item))
        if details:
            text = f"{text} ({'; '.join(details)})"
    return text


def describe(
    cls: type[GitHubError],
    *,
    method: str,
    url: str,
    status: int | None,
    said: str,
    attempts: int = 1,
    extra: str = "",
) -> str:
    """The message every error carries: request, GitHub's answer, the remedy."""
    answer = f"GitHub answered {status}" if status is not None else "no answer from GitHub"
    if said:
        answer += f": {said!r}"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    parts = [f"{method} {url} failed{tries}; {answer}."]
    if extra:
        parts.append(extra)
    parts.append(cls.hint)
    return " ".join(parts)


_BY_STATUS: dict[int, type[GitHubError]] = {
    401: AuthError,
    403: AuthError,
    404: NotFound,
    409: Conflict,
    422: Unprocessable,
    429: RateLimited,
}


def error_for_status(
    status: int,
    *,
    method: str,
    url: str,
    content: bytes,
    attempts: int = 1,
    cls: type[GitHubError] | None = None,
    extra: str = "",
) -> GitHubError:
    """Build the typed error for an HTTP error answer (`cls` overrides the status map)."""
    if cls is None:
        cls = GitHubUnavailable if status >= 500 else _BY_STATUS.get(status, GitHubError)
    said = github_message(content)
    message = describe(
        cls,
        method=method,
        url=url,
        status=status,
        said=said,
        attempts=attempts,
        extra=extra,
    )
    return cls(
        message,
        method=method,
        url=url,
        status=status,
        github_message=said,
        attempts=attempts,
    )
