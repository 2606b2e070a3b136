"""Who last edited a body, and when: GitHub's GraphQL API, since REST does not say.

An issue's REST `user` is its author, but anyone with write access may rewrite the body
later, and `updated_at` also moves for labels, comments and state. GraphQL's
`lastEditedAt` and `editor` name the last change to the body itself, so a trust check
can tell a trusted person's words from an untrusted person's edit of them. Title
changes are not body edits: GitHub records them as `renamed` issue events.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from agent_loop_common.github._graphql import GraphQLBase
from agent_loop_common.github._models import (
    BodyHistory,
    BodyRevision,
    Comment,
    Edit,
    ReviewComment,
)

_EDIT_FIELDS = "lastEditedAt editor { login }"
ISSUE_EDIT_QUERY = f"""
query($owner: String!, $name: String!, $number: Int!) {{
  repository(owner: $owner, name: $name) {{
    issueOrPullRequest(number: $number) {{
      ... on Issue {{ {_EDIT_FIELDS} }}
      ... on PullRequest {{ {_EDIT_FIELDS} }}
    }}
  }}
}}
"""
"""The last edit of an issue's or pull request's body, by number."""

COMMENT_EDIT_QUERY = f"""
query($id: ID!) {{
  node(id: $id) {{
    ... on IssueComment {{ {_EDIT_FIELDS} }}
    ... on PullRequestReviewComment {{ {_EDIT_FIELDS} }}
  }}
}}
"""
"""The last edit of an issue comment or review comment, by GraphQL node id."""


HISTORY_PAGE = 100
"""Revisions read per body (GraphQL's most per page); a longer history is incomplete."""

_HISTORY_FIELDS = (
    f"lastEditedAt includesCreatedEdit userContentEdits(first: {HISTORY_PAGE}) "
    "{ totalCount nodes { editedAt deletedAt diff editor { login } } }"
)
ISSUE_HISTORY_QUERY = f"""
query($owner: String!, $name: String!, $number: Int!) {{
  repository(owner: $owner, name: $name) {{
    issueOrPullRequest(number: $number) {{
      ... on Issue {{ {_HISTORY_FIELDS} }}
      ... on PullRequest {{ {_HISTORY_FIELDS} }}
    }}
  }}
}}
"""
"""The edit history of an issue's or pull request's body, by number."""


class EditOps(GraphQLBase):
    """Last-edit lookups (one GraphQL query each; not cached, as edits can happen any time)."""

    async def last_edit(self, number: int) -> Edit | None:
        """Who last edited the body of issue or pull request `number`, and when.

        Returns:
            `None` when the body was never edited since it was written.

        Raises:
            NotFound: there is no issue or pull request `number`.
        """
        data = await self._graphql(
            ISSUE_EDIT_QUERY, {"owner": self._owner, "name": self._name, "number": number}
        )
        repository = cast("dict[str, Any] | None", data.get("repository")) or {}
        return _edit(repository.get("issueOrPullRequest"))

    async def body_history(self, number: int) -> BodyHistory:
        """The edit history of issue or pull request `number`'s body: every revision
        with its time, editor and text (GraphQL `userContentEdits`; REST has none).

        Raises:
            NotFound: there is no issue or pull request `number`.
        """
        data = await self._graphql(
            ISSUE_HISTORY_QUERY, {"owner": self._owner, "name": self._name, "number": number}
        )
        repository = cast("dict[str, Any] | None", data.get("repository")) or {}
        return _history(repository.get("issueOrPullRequest"))

    async def last_comment_edit(self, comment: Comment | ReviewComment) -> Edit | None:
        """Who last edited an issue comment or review comment, and when.

        `comment` comes from this facade's listings, which carry the GraphQL `node_id`.

        Returns:
            `None` when the comment was never edited.

        Raises:
            ValueError: `comment` has no `node_id` (built by hand, not read from GitHub).
            NotFound: the comment no longer exists.
        """
        if not comment.node_id:
            raise ValueError(f"comment {comment.id} has no node_id: read it from GitHub first")
        data = await self._graphql(COMMENT_EDIT_QUERY, {"id": comment.node_id})
        return _edit(data.get("node"))


def _edit(node: object) -> Edit | None:
    if not isinstance(node, dict):
        return None
    data = cast("dict[str, Any]", node)
    edited_at = data.get("lastEditedAt")
    if not isinstance(edited_at, str):
        return None
    editor = cast("dict[str, Any] | None", data.get("editor"))
    login = editor.get("login") if editor else None
    return Edit(
        editor=login if isinstance(login, str) else None,
        edited_at=datetime.fromisoformat(edited_at.replace("Z", "+00:00")),
    )


def _when(text: object) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if isinstance(text, str) else None


def _history(node: object) -> BodyHistory:
    data = cast("dict[str, Any]", node) if isinstance(node, dict) else {}
    edits = cast("dict[str, Any]", data.get("userContentEdits") or {})
    nodes: list[dict[str, Any]] = [
        cast("dict[str, Any]", n)
        for n in cast("list[Any]", edits.get("nodes") or [])
        if isinstance(n, dict)
    ]
    revisions: list[BodyRevision] = []
    for raw in nodes:
        edited_at = _when(raw.get("editedAt"))
        if edited_at is None:
            continue
        editor = cast("dict[str, Any] | None", raw.get("editor"))
        login = editor.get("login") if editor else None
        diff = raw.get("diff")
        deleted = raw.get("deletedAt") is not None
        revisions.append(
            BodyRevision(
                edited_at=edited_at,
                editor=login if isinstance(login, str) else None,
                body=None if deleted else (diff if isinstance(diff, str) else ""),
            )
        )
    # GitHub lists them newest first; the order is not promised, the times are.
    revisions.sort(key=lambda r: r.edited_at)
    total = edits.get("totalCount")
    return BodyHistory(
        last_edited_at=_when(data.get("lastEditedAt")),
        revisions=tuple(revisions),
        includes_creation=bool(data.get("includesCreatedEdit")),
        complete=isinstance(total, int) and total <= len(revisions),
    )
