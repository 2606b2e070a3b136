"""GraphQL requests of the facade: GitHub's answers with errors turned into typed errors.

GraphQL answers HTTP 200 with an `errors` list; each error's `type` names what went
wrong (`NOT_FOUND`, `FORBIDDEN`, `STALE_DATA` when a compare-and-swap found the branch
moved, ...), mapped here onto the same `GitHubError` classes REST failures raise.
"""

from __future__ import annotations

from typing import Any

from githubkit.exception import GraphQLFailed, RateLimitExceeded

from agent_loop_common.github._base import Base, translated
from agent_loop_common.github._errors import (
    AuthError,
    GitHubError,
    NotFastForward,
    NotFound,
    RateLimited,
    Unprocessable,
    describe,
)

__all__ = ["GraphQLBase"]

_BY_TYPE: dict[str, type[GitHubError]] = {
    "NOT_FOUND": NotFound,
    "FORBIDDEN": AuthError,
    "RATE_LIMITED": RateLimited,
    "RATE_LIMIT": RateLimited,
    "STALE_DATA": NotFastForward,
}


class GraphQLBase(Base):
    """One GraphQL request (query or mutation) with typed errors."""

    async def _graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        gh = await self._gh()
        with translated():
            try:
                return await gh.graphql.arequest(query, variables)
            except GraphQLFailed as exc:
                raise _graphql_error(exc) from None
            except RateLimitExceeded as exc:
                raise _graphql_error(exc) from None

    async def _graphql_fields(
        self, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, GitHubError]]:
        """One request whose root fields succeed or fail one by one (a mutation document
        of several mutations): the data, and each failed root field's typed error.

        Raises:
            GitHubError: the request as a whole failed (no data at all).
        """
        gh = await self._gh()
        with translated():
            try:
                return await gh.graphql.arequest(query, variables), {}
            except GraphQLFailed as exc:
                if exc.response.data is None:
                    raise _graphql_error(exc) from None
                by_field: dict[str, list[tuple[str, str]]] = {}
                for e in exc.response.errors or []:
                    root = str(e.path[0]) if e.path else ""
                    by_field.setdefault(root, []).append((e.type or "", e.message))
                return exc.response.data, {
                    root: _typed(errors, None) for root, errors in by_field.items()
                }
            except RateLimitExceeded as exc:
                raise _graphql_error(exc) from None


def _graphql_error(exc: GraphQLFailed | RateLimitExceeded) -> GitHubError:
    """The facade's error for a GraphQL answer that carries errors (HTTP 200)."""
    if isinstance(exc, RateLimitExceeded):
        return _typed([("RATE_LIMITED", "rate limit exceeded")], exc.retry_after.total_seconds())
    return _typed([(e.type or "", e.message) for e in exc.response.errors or []], None)


def _typed(errors: list[tuple[str, str]], wait: float | None) -> GitHubError:
    """GraphQL errors (`type`, `message`) as one facade error, typed by the first known."""
    said = "; ".join(message for _, message in errors)
    cls: type[GitHubError] = Unprocessable
    for kind, _ in errors:
        if kind in _BY_TYPE:
            cls = _BY_TYPE[kind]
            break
    message = describe(cls, method="POST", url="graphql", status=None, said=said)
    if cls is RateLimited:
        return RateLimited(
            message, method="POST", url="graphql", github_message=said, retry_after=wait
        )
    return cls(message, method="POST", url="graphql", github_message=said)
