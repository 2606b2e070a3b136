"""A transport that sends GitHub nothing: the facade of a run that must not talk to it.

The benchmark replays the builder on a repository snapshot already in hand
(`RepoSnapshot.from_archive`), with no claim and no write. Its runtime still carries a
`GitHub` facade (the `Runtime` shape every pipeline takes), built over this transport:
every request the run would make fails at once with `GitHubOffline`, before any byte
leaves the process, and is counted in the facade's `RequestStats` with no status, so
a run that asked GitHub for anything shows it in its own figures.
"""

from __future__ import annotations

import httpx

from agent_loop_common.github._errors import GitHubError

__all__ = ["GitHubOffline", "OfflineTransport"]


class GitHubOffline(GitHubError):
    """A run that works offline asked GitHub for something (a bug, never retried)."""

    hint = "This run works on a snapshot in hand and sends GitHub no request."


class OfflineTransport(httpx.AsyncBaseTransport):
    """Refuses every request with `GitHubOffline`, remembering what was asked."""

    def __init__(self) -> None:
        self.refused: list[str] = []
        """`METHOD path` of every request refused, in order."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        asked = f"{request.method} {request.url.path}"
        self.refused.append(asked)
        raise GitHubOffline(
            f"{asked} was refused: {GitHubOffline.hint}",
            method=request.method,
            url=str(request.url),
        )
