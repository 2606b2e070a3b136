"""`emulator_client`: the real `GitHub` facade wired to a `GitHubEmulator`, in process.

Tests in every package drive their pipelines through this, so they exercise the same
githubkit calls, transports, retries and ETags as production, with no sockets and with
retry sleeps that return at once (an injected 5xx costs no wall-clock time).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agent_loop_common.github import GitHub, GitHubRetryPolicy, TokenAuth, WritePacing

if TYPE_CHECKING:
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = ["EMULATOR_BASE_URL", "emulator_client", "instant_retry"]

EMULATOR_BASE_URL = "http://emulator.test"
"""Host the in-process transport answers on (any host works; this one is obviously fake)."""


async def _no_wait(_seconds: float) -> None:
    await asyncio.sleep(0)


def instant_retry(**kwargs: Any) -> GitHubRetryPolicy:
    """A `GitHubRetryPolicy` whose sleeps return immediately (other fields as given)."""
    return GitHubRetryPolicy(sleep=_no_wait, **kwargs)


def emulator_client(emulator: GitHubEmulator, *, token: str | None = None, **kwargs: Any) -> GitHub:
    """A `GitHub` for the emulator's repository, acting as the bot unless `token` is given.

    Keyword arguments go to `GitHub` (`auth`, `base_url`, `etags`, `per_page`, `retry`,
    `timeout`, `pacing`...); by default the transport is the emulator's in-process one,
    and neither retries nor the pacing of content writes sleep.
    """
    kwargs.setdefault("transport", emulator.transport())
    kwargs.setdefault("base_url", EMULATOR_BASE_URL)
    kwargs.setdefault("retry", instant_retry())
    kwargs.setdefault("pacing", WritePacing(sleep=_no_wait))
    if "auth" not in kwargs:
        kwargs["auth"] = TokenAuth(token if token is not None else emulator.bot_token)
    return GitHub(emulator.full_name, **kwargs)
