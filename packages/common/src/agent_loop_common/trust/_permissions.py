"""Repository permissions: their order, and a per-run cache of who holds which.

Trust is decided by GitHub's repository role (`AGENT_LOOP_TRUSTED_MIN_PERMISSION`,
default `write`). Looking a login up costs one request, so each login is asked once per
run, and only when its content could matter. A login never looked up is untrusted:
the synchronous answer fails closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from agent_loop_common.github import GitHub

__all__ = ["PERMISSION_RANK", "Trust", "permission_at_least"]

PERMISSION_RANK: dict[str, int] = {
    "none": 0,
    "read": 1,
    "triage": 2,
    "write": 3,
    "maintain": 4,
    "admin": 5,
}
"""GitHub's repository roles, weakest first; unknown roles rank as `none`."""


def permission_at_least(permission: str, minimum: str) -> bool:
    """Whether repository role `permission` is `minimum` or stronger."""
    return PERMISSION_RANK.get(permission, 0) >= PERMISSION_RANK.get(minimum, len(PERMISSION_RANK))


class Trust:
    """Whose content counts: the agents' identity, and people with at least `minimum`.

    Args:
        github: The run's facade (one permission request per login, cached for the run).
        minimum: The least trusted repository role (`settings.trusted_min_permission`).
        agent_login: The agents' own identity; trusted as an author (its sub-issues),
            though callers that collect feedback leave its own comments out.
    """

    def __init__(self, github: GitHub, *, minimum: str, agent_login: str) -> None:
        self._github = github
        self.minimum = minimum
        self.agent_login = agent_login
        self._roles: dict[str, str] = {}

    def is_agent(self, login: str) -> bool:
        """Whether `login` is the agents' own identity."""
        return login.casefold() == self.agent_login.casefold()

    async def permission(self, login: str) -> str:
        """`login`'s repository role (asked once per login and run)."""
        key = login.casefold()
        if key not in self._roles:
            self._roles[key] = await self._github.permission(login)
        return self._roles[key]

    async def resolve(self, logins: Iterable[str]) -> None:
        """Look up every login not known yet, concurrently (the agents' own is never asked)."""
        todo = sorted(
            {login for login in logins if login.casefold() not in self._roles}
            - {login for login in logins if self.is_agent(login)},
            key=str.casefold,
        )
        roles = await asyncio.gather(*(self._github.permission(login) for login in todo))
        for login, role in zip(todo, roles, strict=True):
            self._roles[login.casefold()] = role

    async def trusted(self, login: str) -> bool:
        """Whether content by `login` may be worked on and shown to a model."""
        if self.is_agent(login):
            return True
        return permission_at_least(await self.permission(login), self.minimum)

    def __call__(self, login: str) -> bool:
        """`trusted` for a login already resolved; an unknown login is untrusted."""
        if self.is_agent(login):
            return True
        role = self._roles.get(login.casefold())
        return role is not None and permission_at_least(role, self.minimum)
