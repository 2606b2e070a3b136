"""The last-editor rule: trusted words rewritten by someone untrusted are not trusted.

An issue's or comment's REST `user` is its author, but GitHub lets others rewrite the
body later (anyone with write access, the author's own account, an app). Trusting the
author alone would let such an edit put a stranger's instructions under a maintainer's
name. Both agents therefore ask one question, here: was the last edit made by someone
below the trust rule? A deleted account (`editor` unknown) is below it.

GitHub's timestamps (REST `created_at`, GraphQL `lastEditedAt`) are whole seconds, so
an edit made in the same second as an approval (the opt-in label) cannot be told apart
from one made just after it: it counts as after (`>=`), the side that fails closed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from agent_loop_common.github import Comment, Edit, GitHub, NotFound, ReviewComment
from agent_loop_common.trust._permissions import Trust

__all__ = ["comments_edited_by_untrusted", "untrusted_edit"]


async def untrusted_edit(
    trust: Trust, edit: Edit | None, *, since: datetime | None = None
) -> Edit | None:
    """`edit` when someone below the trust rule made it, else `None`.

    Args:
        trust: Whose content counts (permissions cached for the run).
        edit: The body's last edit (`GitHub.last_edit` / `last_comment_edit`), `None`
            when never edited.
        since: Only edits at or after this moment matter (the opt-in label's time): an
            edit in the same second counts as after it.
    """
    if edit is None:
        return None
    if since is not None and edit.edited_at < since:
        return None
    if edit.editor is not None and await trust.trusted(edit.editor):
        return None
    return edit


async def comments_edited_by_untrusted(
    github: GitHub, trust: Trust, comments: Iterable[Comment | ReviewComment]
) -> set[int]:
    """Ids of trusted people's comments whose last edit someone untrusted made.

    Only comments whose `updated_at` moved past `created_at` are asked about (one GraphQL
    request each; edits are rare). Authors are judged by `trust`'s cached answers
    (`Trust.resolve` them first): an unresolved or untrusted author's comment is left
    out by the caller anyway, and the agents' own are never shown as people's words. A
    comment deleted meanwhile is not tainted (it is gone from the next listing).
    """
    tainted: set[int] = set()
    for comment in comments:
        login = comment.user.login
        if comment.updated_at <= comment.created_at or trust.is_agent(login):
            continue
        if not comment.node_id or not trust(login):
            continue
        try:
            edit = await github.last_comment_edit(comment)
        except NotFound:
            continue
        if await untrusted_edit(trust, edit) is not None:
            tainted.add(comment.id)
    return tainted
