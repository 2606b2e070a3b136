"""Reading one PR's state from GitHub, and deciding whom to trust (the effects of select).

Every listing goes through the facade's ETag cache, so an idle tick that finds nothing
new is answered with 304s that do not count against the rate limit. Permissions are
looked up only for authors whose feedback could matter (`Trust.resolve`), once per run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import datetime

from agent_loop_common.github import GitHub, PullRequest
from agent_loop_reviewer._feedback import PullSnapshot

__all__ = ["PERMISSION_RANK", "Trust", "authors", "read_snapshot"]

PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
"""GitHub's repository roles, weakest first."""


async def read_snapshot(github: GitHub, pull: PullRequest) -> PullSnapshot:
    """Read comments, reviews, inline comments, checks and statuses of `pull`'s head."""
    comments, reviews, review_comments, check_runs, statuses = await asyncio.gather(
        github.list_issue_comments(pull.number),
        github.list_reviews(pull.number),
        github.list_review_comments(pull.number),
        github.list_check_runs(pull.head_sha),
        github.list_statuses(pull.head_sha),
    )
    return PullSnapshot(
        pull=pull,
        comments=comments,
        reviews=reviews,
        review_comments=review_comments,
        check_runs=check_runs,
        statuses=statuses,
    )


class Trust:
    """Who counts as a trusted person: repository permission at least `min_permission`.

    The agents' own identity is never trusted as feedback. Lookups are cached for the
    run; `resolve` must have seen a login before `__call__` answers for it (unknown
    logins are untrusted, which fails closed).
    """

    def __init__(self, github: GitHub, *, min_permission: str, agent_login: str) -> None:
        self._github = github
        self._min = PERMISSION_RANK[min_permission]
        self._agent = agent_login.casefold()
        self._known: dict[str, bool] = {}

    async def resolve(self, logins: Iterable[str]) -> None:
        """Look up the permission of every login not seen yet (one request each)."""
        todo = sorted(
            {login for login in logins if login.casefold() not in self._known}
            - {login for login in logins if login.casefold() == self._agent}
        )
        levels = await asyncio.gather(*(self._github.permission(login) for login in todo))
        for login, level in zip(todo, levels, strict=True):
            self._known[login.casefold()] = PERMISSION_RANK.get(level, 0) >= self._min

    def __call__(self, login: str) -> bool:
        """Whether `login`'s feedback counts (after `resolve`)."""
        key = login.casefold()
        return key != self._agent and self._known.get(key, False)


def authors(snapshot: PullSnapshot, *, since: datetime | None = None) -> set[str]:
    """People who commented or reviewed on the PR (only after `since`, when given).

    Selection resolves only the authors of items newer than the last pass: an idle PR
    then costs no permission lookup at all.
    """

    def recent(*moments: datetime | None) -> bool:
        return since is None or any(m is not None and m > since for m in moments)

    found = {c.user.login for c in snapshot.comments if recent(c.created_at, c.updated_at)}
    found |= {r.user.login for r in snapshot.reviews if recent(r.submitted_at)}
    found |= {c.user.login for c in snapshot.review_comments if recent(c.created_at, c.updated_at)}
    return found
