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

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from agent_loop_common.github import Comment, Edit, GitHub, IssueEvent, NotFound, ReviewComment

__all__ = [
    "EditorTrust",
    "as_their_authors_left_them",
    "comments_edited_by_untrusted",
    "untrusted_edit",
    "untrusted_issue_editor",
]


class EditorTrust(Protocol):
    """Whether a login passes the trust rule (`Trust` is one; the gateway adapts its own)."""

    async def trusted(self, login: str) -> bool: ...


async def untrusted_edit(
    trust: EditorTrust, edit: Edit | None, *, since: datetime | None = None
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
    github: GitHub, trust: EditorTrust, comments: Iterable[Comment | ReviewComment]
) -> set[int]:
    """Ids of `comments` whose last edit someone below the trust rule made.

    Pass the comments whose authors count (trusted people's): an untrusted author's
    comment is left out by the caller anyway. Only comments whose `updated_at` moved
    past `created_at` are asked about (one GraphQL request each; edits are rare). A
    comment deleted meanwhile is not tainted (it is gone from the next listing).
    """
    tainted: set[int] = set()
    for comment in comments:
        if comment.updated_at <= comment.created_at or not comment.node_id:
            continue
        try:
            edit = await github.last_comment_edit(comment)
        except NotFound:
            continue
        if await untrusted_edit(trust, edit) is not None:
            tainted.add(comment.id)
    return tainted


async def as_their_authors_left_them(
    github: GitHub, trust: EditorTrust, comments: Sequence[Comment], *, authors: Collection[str]
) -> list[Comment]:
    """`comments`, each of `authors`' comments last edited below the trust rule shown as
    its author left it: its `updated_at` set back to `created_at`.

    A back-off is lifted by a trusted person touching the thread after the agents' last
    comment (`claims.backoff_state` reads `updated_at`); without this, someone below
    the rule could buy a new run by editing a maintainer's older comment.

    Args:
        authors: Logins whose comments could matter (`claims.backoff_resetters`, trusted);
            only their edited comments are asked about.
    """
    wanted = {a.casefold() for a in authors}
    tainted = await comments_edited_by_untrusted(
        github, trust, [c for c in comments if c.user.login.casefold() in wanted]
    )
    return [
        c.model_copy(update={"updated_at": c.created_at}) if c.id in tainted else c
        for c in comments
    ]


async def untrusted_issue_editor(
    github: GitHub,
    trust: EditorTrust,
    number: int,
    events: Sequence[IssueEvent],
    *,
    since: datetime | None = None,
    body: bool = True,
) -> str | None:
    """Who below the trust rule last changed issue `number`'s text: `@login`, `a deleted
    account`, or `None` when nobody did.

    A title change is a `renamed` event (`events`: the issue's event listing), a body
    change its last edit (one GraphQL request; with `body` False it is not asked, for a
    caller that knows GraphQL cannot answer). With `since` (the opt-in label's time),
    every title change and the last body edit at or after it count; without it, the
    last title change and the last body edit.
    """
    renames = [e for e in events if e.event == "renamed"]
    if since is None:
        renames = renames[-1:]
    for event in renames:
        login = event.actor.login if event.actor is not None else None
        edit = Edit(editor=login, edited_at=event.created_at)
        if await untrusted_edit(trust, edit, since=since) is not None:
            return f"@{login}" if login else "a deleted account"
    if not body:
        return None
    edit = await untrusted_edit(trust, await github.last_edit(number), since=since)
    if edit is not None:
        return f"@{edit.editor}" if edit.editor else "a deleted account"
    return None
