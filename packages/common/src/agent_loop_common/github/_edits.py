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
from agent_loop_common.github._models import Comment, Edit, ReviewComment

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
