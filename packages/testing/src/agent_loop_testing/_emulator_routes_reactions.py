"""Reactions on issue and pull request conversation comments.

As on GitHub: anyone who can read the repository may react; a reaction is one of eight
contents; reacting again with the same content answers `200` with the existing reaction
instead of `201` (so a retried acknowledgement never doubles).
"""

from __future__ import annotations

from typing import Final

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_http import Ctx, Reply, Route, page_reply, string
from agent_loop_testing._emulator_ops_issues import get_comment
from agent_loop_testing._emulator_render import Json, Urls, node_id, simple_user_json, ts
from agent_loop_testing._emulator_state import ReactionRec, State

__all__ = ["CONTENTS", "ROUTES", "add_reaction", "reaction_json"]

_DOCS = "https://docs.github.com/rest/reactions/reactions"

CONTENTS: Final = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


def reaction_json(st: State, reaction: ReactionRec, urls: Urls) -> Json:
    return {
        "id": reaction.id,
        "node_id": node_id("REA", reaction.id),
        "user": simple_user_json(st.user(reaction.author), urls),
        "content": reaction.content,
        "created_at": ts(reaction.created_at),
    }


def add_reaction(st: State, comment_id: int, author: str, content: str) -> tuple[ReactionRec, bool]:
    """The reaction and whether it is new (an identical one is returned as it was)."""
    get_comment(st, comment_id)
    if content not in CONTENTS:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "Reaction", "field": "content", "code": "invalid"}],
        )
    for existing in st.reactions.values():
        if (existing.comment, existing.author, existing.content) == (comment_id, author, content):
            return existing, False
    rec = ReactionRec(st.new_id(), comment_id, author, content, st.tick())
    st.reactions[rec.id] = rec
    return rec, True


def post_reaction(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("read")
    content = string(ctx.json(), "content") or ""
    rec, new = add_reaction(st, ctx.int_param("comment_id"), user.login, content)
    return Reply(201 if new else 200, reaction_json(st, rec, ctx.urls))


def list_reactions(st: State, ctx: Ctx) -> Reply:
    comment = get_comment(st, ctx.int_param("comment_id"))
    wanted = ctx.query.get("content")
    found = [
        r
        for r in sorted(st.reactions.values(), key=lambda r: r.id)
        if r.comment == comment.id and (wanted is None or r.content == wanted)
    ]
    return page_reply(ctx, [reaction_json(st, r, ctx.urls) for r in found])


_C = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
ROUTES = [
    Route("POST", _C, post_reaction, f"{_DOCS}#create-reaction-for-an-issue-comment"),
    Route("GET", _C, list_reactions, f"{_DOCS}#list-reactions-for-an-issue-comment"),
]
