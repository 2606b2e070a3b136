"""Issues, their comments, labels, events, and collaborator permissions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, cast

from githubkit.utils import UNSET

from agent_loop_common.github import _convert as conv
from agent_loop_common.github._base import Base, translated
from agent_loop_common.github._errors import NotFound
from agent_loop_common.github._models import Comment, Issue, IssueEvent, Reaction

_ROLES = ("admin", "maintain", "write", "triage", "read")


class IssueOps(Base):
    """Operations on issues (pull requests included where GitHub treats them as issues)."""

    async def list_issues(
        self,
        *,
        state: Literal["open", "closed", "all"] = "open",
        labels: Sequence[str] = (),
        since: datetime | None = None,
    ) -> list[Issue]:
        """All matching issues, every page; pull requests come with `is_pull_request`.

        `labels` must all be present (GitHub's AND semantics). A fixed `since` keeps the
        URL stable so an unchanged poll is answered 304 from the ETag cache.
        """
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.issues.async_list_for_repo,
            owner=self._owner,
            repo=self._name,
            state=state,
            labels=",".join(labels) if labels else UNSET,
            since=since if since is not None else UNSET,
            per_page=self._per_page,
        )
        return [conv.issue(i) for i in await self._all(paginator)]

    async def get_issue(self, n: int) -> Issue:
        """One issue (or pull request seen as an issue)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.issues.async_get(self._owner, self._name, n)
        return conv.issue(resp.parsed_data)

    async def create_issue(self, title: str, body: str, labels: Sequence[str] = ()) -> Issue:
        """Open an issue (not retried after an ambiguous failure: it could duplicate)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.issues.async_create(
                self._owner, self._name, title=title, body=body, labels=list(labels)
            )
        return conv.issue(resp.parsed_data)

    async def update_issue(
        self,
        n: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: Literal["open", "closed"] | None = None,
        labels: Sequence[str] | None = None,
    ) -> Issue:
        """Change the given fields; `labels` replaces the whole label set."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.issues.async_update(
                self._owner,
                self._name,
                n,
                title=UNSET if title is None else title,
                body=UNSET if body is None else body,
                state=UNSET if state is None else state,
                labels=UNSET if labels is None else list(labels),
            )
        return conv.issue(resp.parsed_data)

    async def close_issue(self, n: int, comment: str | None = None) -> Issue:
        """Close an issue, first explaining why in a comment when one is given."""
        if comment is not None:
            await self.create_issue_comment(n, comment)
        return await self.update_issue(n, state="closed")

    async def list_issue_comments(self, n: int, since: datetime | None = None) -> list[Comment]:
        """All comments of an issue or pull request conversation, every page, oldest first."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.issues.async_list_comments,
            owner=self._owner,
            repo=self._name,
            issue_number=n,
            since=since if since is not None else UNSET,
            per_page=self._per_page,
        )
        return [conv.comment(c) for c in await self._all(paginator)]

    async def create_issue_comment(self, n: int, body: str) -> Comment:
        """Comment on an issue or pull request (not retried after an ambiguous failure)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.issues.async_create_comment(self._owner, self._name, n, body=body)
        return conv.comment(resp.parsed_data)

    async def update_issue_comment(self, comment_id: int, body: str) -> Comment:
        """Replace a comment's body (how a claim marker is refreshed or released)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.issues.async_update_comment(
                self._owner, self._name, comment_id, body=body
            )
        return conv.comment(resp.parsed_data)

    async def delete_issue_comment(self, comment_id: int) -> None:
        """Delete a comment (a claim withdrawn after an operator's fault leaves no trace)."""
        gh = await self._gh()
        with translated():
            await gh.rest.issues.async_delete_comment(self._owner, self._name, comment_id)

    async def add_reaction(
        self,
        comment_id: int,
        content: Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"],
    ) -> Reaction:
        """React to an issue or PR conversation comment; reacting twice returns the first."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.reactions.async_create_for_issue_comment(
                self._owner, self._name, comment_id, data={"content": content}
            )
        return conv.reaction(resp.parsed_data)

    async def list_reactions(self, comment_id: int) -> list[Reaction]:
        """Every reaction on an issue or PR conversation comment, every page."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.reactions.async_list_for_issue_comment,
            owner=self._owner,
            repo=self._name,
            comment_id=comment_id,
            per_page=self._per_page,
        )
        return [conv.reaction(r) for r in await self._all(paginator)]

    async def add_labels(self, n: int, labels: Sequence[str]) -> tuple[str, ...]:
        """Add labels (creating unknown ones); returns the issue's labels afterwards."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.issues.async_add_labels(
                self._owner, self._name, n, data={"labels": list(labels)}
            )
        return tuple(label.name for label in resp.parsed_data)

    async def remove_label(self, n: int, label: str) -> None:
        """Remove a label; removing one that is not there is a no-op (the goal holds)."""
        gh = await self._gh()
        try:
            with translated():
                await gh.rest.issues.async_remove_label(self._owner, self._name, n, label)
        except NotFound:
            await self.get_issue(n)  # still raises NotFound when the issue is missing

    async def list_issue_events(self, n: int) -> list[IssueEvent]:
        """All events of an issue, every page: who applied which label, and when."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.issues.async_list_events,
            # githubkit's event union rejects common events (closed, referenced...):
            # take the raw JSON and parse the few fields we need ourselves.
            map_func=raw_list,
            owner=self._owner,
            repo=self._name,
            issue_number=n,
            per_page=self._per_page,
        )
        return [conv.issue_event(e) for e in await self._all(paginator)]

    async def permission(self, login: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none` for `login` here."""
        gh = await self._gh()
        try:
            with translated():
                resp = await gh.rest.repos.async_get_collaborator_permission_level(
                    self._owner, self._name, login
                )
        except NotFound:
            return "none"
        data = resp.parsed_data
        # `permission` folds maintain into write and triage into read; `role_name`
        # keeps them apart (custom roles fall back to `permission`).
        if data.role_name in _ROLES:
            return data.role_name
        return data.permission if data.permission in _ROLES else "none"


def raw_list(response: Any) -> list[Any]:
    """A listing page's raw JSON items (`map_func` of a paginator parsed leniently)."""
    data: Any = response.json()
    return cast("list[Any]", data) if isinstance(data, list) else []
