"""Who the gateway trusts: the agents' rule, read from the repository's permissions.

A person is trusted with at least `AGENT_LOOP_TRUSTED_MIN_PERMISSION` on the repository
(the same rule the builder and reviewer apply to issues and comments); the agents'
identity is trusted. The answer is asked from GitHub (`GET .../collaborators/{login}/
permission`), never taken from a payload's `author_association`, and cached for a few
minutes per login. Concurrent questions about one login share one request, so a flood
of deliveries from one person costs one lookup.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog

from agent_loop_common.github import GitHub
from agent_loop_gateway._clock import Clock

__all__ = ["ROLES", "PermissionTrust", "TrustChecker", "permission_at_least"]

_log = structlog.get_logger(__name__)

ROLES = ("none", "read", "triage", "write", "maintain", "admin")
"""Repository roles, weakest first."""


def permission_at_least(permission: str, minimum: str) -> bool:
    """Whether `permission` is `minimum` or stronger (unknown roles are weakest)."""
    rank = {role: i for i, role in enumerate(ROLES)}
    return rank.get(permission, 0) >= rank.get(minimum, len(ROLES))


class TrustChecker(Protocol):
    """Whether content by a login may start work."""

    async def is_trusted(self, login: str) -> bool: ...


class PermissionTrust:
    """`TrustChecker` over the repository's collaborator permissions, cached per login."""

    def __init__(
        self,
        github: GitHub,
        *,
        min_permission: str,
        agent_login: str,
        clock: Clock,
        ttl: float = 300.0,
    ) -> None:
        self._github = github
        self._minimum = min_permission
        self._agent = agent_login.casefold()
        self._clock = clock
        self._ttl = ttl
        self._cache: dict[str, tuple[float, bool]] = {}
        self._inflight: dict[str, asyncio.Future[bool]] = {}
        self.lookups = 0
        """Permission requests made so far (for tests and the benchmark)."""

    async def is_trusted(self, login: str) -> bool:
        key = login.casefold()
        if key == self._agent:
            return True
        cached = self._cache.get(key)
        if cached is not None and self._clock.monotonic() - cached[0] < self._ttl:
            return cached[1]
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            self.lookups += 1
            permission = await self._github.permission(login)
            trusted = permission_at_least(permission, self._minimum)
            self._cache[key] = (self._clock.monotonic(), trusted)
            future.set_result(trusted)
            _log.debug("gateway.trust", login=login, permission=permission, trusted=trusted)
            return trusted
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # marked retrieved: waiters re-raise it
            raise
        finally:
            del self._inflight[key]
