"""Honouring a thread's commands from a scheduled poll: read, acknowledge, decide.

The gateway honours a command when its webhook arrives; a deployment without the
gateway (or a delivery GitHub never sent) still gets its commands honoured by the next
cron tick that looks at the thread. Both go through the same pure `command_state`; this
is its effectful edge for the agents: trust is looked up only for command authors,
reactions only for trusted command comments, and each pending command is acknowledged
once (a reaction, plus the help or status reply it asks for). A command comment deleted
between the listing and these reads (404) is skipped: it no longer exists on GitHub.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import structlog

from agent_loop_common.commands._parse import parse_commands
from agent_loop_common.commands._render import render_help, render_status
from agent_loop_common.commands._state import (
    CommandState,
    ThreadKind,
    command_authors,
    command_state,
)
from agent_loop_common.github import Comment, GitHub, NotFound
from agent_loop_common.trust import Trust, comments_edited_by_untrusted

__all__ = ["honour_commands"]

_log = structlog.get_logger(__name__)


async def honour_commands(
    github: GitHub,
    number: int,
    comments: Sequence[Comment],
    *,
    kind: ThreadKind,
    trust: Trust,
    now: datetime,
    updated_at: datetime | None = None,
) -> CommandState:
    """The thread's command state, after acknowledging its pending trusted commands.

    Costs nothing on a thread without commands; otherwise one permission lookup per new
    command author, one last-editor lookup per edited command comment (a command last
    edited by someone below the trust rule counts for nothing), and one reaction listing
    per trusted command comment.
    """
    authors = command_authors(comments, agent_login=trust.agent_login)
    if not authors:
        return CommandState()
    await trust.resolve(authors)
    tainted = await comments_edited_by_untrusted(
        github,
        trust,
        [
            c
            for c in comments
            if c.user.login in authors and trust(c.user.login) and parse_commands(c.body)
        ],
    )
    if tainted:
        # A trusted person's command rewritten by someone below the trust rule is not
        # theirs any more: it counts for nothing (the same rule as for text a model sees).
        _log.info("commands.edited_by_untrusted", target=number, comments=sorted(tainted))
        comments = [c for c in comments if c.id not in tainted]
    first = command_state(comments, trusted=trust, agent_login=trust.agent_login, kind=kind)
    done: set[int] = set()
    gone: set[int] = set()
    for comment_id in sorted({p.comment_id for p in first.pending}):
        try:
            reactions = await github.list_reactions(comment_id)
        except NotFound:
            gone.add(comment_id)
            continue
        if any(trust.is_agent(r.user.login) for r in reactions):
            done.add(comment_id)
    if gone:
        # Deleted between the listing and this read: GitHub no longer shows the command,
        # so it counts for nothing (it is not a failed tick).
        _log.info("commands.comment_vanished", target=number, comments=sorted(gone))
        comments = [c for c in comments if c.id not in gone]
    state = command_state(
        comments, trusted=trust, agent_login=trust.agent_login, kind=kind, acknowledged=done
    )
    for pending in state.pending:
        try:
            await github.add_reaction(pending.comment_id, pending.reaction)
        except NotFound:
            _log.info("commands.comment_vanished", target=number, comments=[pending.comment_id])
            continue
        if pending.reply == "help":
            await github.create_issue_comment(number, render_help(pending.command.word))
        elif pending.reply == "status":
            text = render_status(
                comments,
                kind=kind,
                agent_login=trust.agent_login,
                state=state,
                now=now,
                updated_at=updated_at,
            )
            await github.create_issue_comment(number, text)
        _log.info(
            "commands.acknowledged",
            target=number,
            command=pending.command.word,
            by=pending.author,
            reaction=pending.reaction,
        )
    return state
