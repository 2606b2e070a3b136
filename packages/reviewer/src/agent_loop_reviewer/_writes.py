"""The reviewer's writes to GitHub, each declared once in `WRITES`.

A write is a plain function over a facade: `env.py` turns the book into durable Flyte
actions (`WRITES.durable(env, ...)`), and tests and scripts call the same functions in
process (`DirectWriter`). Their inputs and outputs are pydantic models, so they cross a
task boundary as they are.

Pushing is a compare-and-swap: the commit is built on the head the pass reviewed and
the branch moves only while it still points there (one `createCommitOnBranch` write
with `expectedHeadOid`). If anyone pushed in between, nothing is overwritten: the
result says `pushed=False` with the head found.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent_loop_common.github import GitHub, GitTree, NotFastForward, NotFound
from agent_loop_common.runtime import Posted, Receipt, WriteBook
from agent_loop_reviewer._texts import PassMarker, no_changes_body, quote_reply_body

__all__ = [
    "WRITES",
    "FixCommit",
    "NoChangesNote",
    "PostedReplies",
    "PushResult",
    "ReplyBatch",
    "ReplyPost",
    "post_no_changes",
    "post_note",
    "post_replies",
    "push_fix",
]

_MODEL = ConfigDict(frozen=True, extra="forbid")

WRITES = WriteBook()
"""The reviewer's durable writes: `push_fix`, `post_replies`, `post_no_changes`, `post_note`."""


class FixCommit(BaseModel):
    """One verified fix to push onto a PR's head branch."""

    model_config = _MODEL

    pr: int
    branch: str
    """The PR's head branch (without `refs/heads/`)."""
    parent_sha: str
    """The head the pass reviewed; the branch must still point here."""
    parent_tree: GitTree | None = None
    """`parent_sha`'s tree as the pass read it (the entries around `files`), so the fix
    is committed without reading it again; `None` reads it."""
    message: str
    files: dict[str, str | None]
    """Path -> full new content, `None` to delete."""


class PushResult(Receipt):
    """What came of a push."""

    pushed: bool
    sha: str = ""
    """The new head commit when pushed."""
    found_head: str = ""
    """The branch head found when the push was refused (someone pushed meanwhile)."""


@WRITES.write
async def push_fix(github: GitHub, fix: FixCommit) -> PushResult:
    """Commit `fix` on the head the pass reviewed, in one compare-and-swap, never forcing.

    `GitHub.commit_on_branch` moves the branch only while it still points at
    `parent_sha` (GraphQL's `expectedHeadOid`); anyone's push in between refuses it.
    """
    try:
        sha = await github.commit_on_branch(
            branch=fix.branch,
            expected_head=fix.parent_sha,
            message=fix.message,
            files=fix.files,
            parent_tree=fix.parent_tree,
        )
    except (NotFastForward, NotFound):
        return PushResult(
            pushed=False, found_head=await github.get_ref(f"heads/{fix.branch}") or ""
        )
    return PushResult(pushed=True, sha=sha)


class ReplyPost(BaseModel):
    """A reply to one feedback item."""

    model_config = _MODEL

    kind: Literal["comment", "review", "review_comment"]
    comment_id: int
    thread_id: int | None = None
    """For inline comments: the thread's top-level comment (GitHub answers only those)."""
    author: str
    url: str = ""
    quote: str = ""
    reply: str


class ReplyBatch(BaseModel):
    """The replies of a pushed fix and the one summary comment after them."""

    model_config = _MODEL

    pr: int
    replies: list[ReplyPost]
    summary: str
    """The rendered summary comment (with its pass marker)."""


class PostedReplies(Receipt):
    """URLs of what was posted."""

    reply_urls: list[str]
    summary_url: str


@WRITES.write
async def post_replies(github: GitHub, batch: ReplyBatch) -> PostedReplies:
    """Reply in each inline thread, quote-reply to conversation items, then summarise."""
    urls: list[str] = []
    for item in batch.replies:
        if item.kind == "review_comment":
            thread = item.thread_id or item.comment_id
            posted = await github.reply_to_review_comment(batch.pr, thread, item.reply)
            urls.append(posted.html_url)
        else:
            body = quote_reply_body(
                author=item.author, url=item.url, quote=item.quote, reply=item.reply
            )
            urls.append((await github.create_issue_comment(batch.pr, body)).html_url)
    summary = await github.create_issue_comment(batch.pr, batch.summary)
    return PostedReplies(reply_urls=urls, summary_url=summary.html_url)


class NoChangesNote(BaseModel):
    """A pass that found nothing to change on the head it reviewed."""

    model_config = _MODEL

    pr: int
    head_sha: str
    reason: str
    run_id: str
    checks: bool = False
    """Whether the pass worked on failing checks (counts as a check-fix attempt)."""
    stop: str = ""
    """The note that check fixing stopped, when this pass says it."""


@WRITES.write
async def post_no_changes(github: GitHub, note: NoChangesNote) -> Posted:
    """Post the short comment naming the head commit reviewed."""
    marker = PassMarker(
        head=note.head_sha, run=note.run_id, checks=note.checks, stop=bool(note.stop)
    )
    body = no_changes_body(
        head=note.head_sha, reason=note.reason, run_id=note.run_id, marker=marker, stop=note.stop
    )
    return Posted(url=(await github.create_issue_comment(note.pr, body)).html_url)


@WRITES.write
async def post_note(github: GitHub, pr: int, body: str) -> Posted:
    """Post a rendered pass comment (a rejected fix, or that check fixing stopped)."""
    return Posted(url=(await github.create_issue_comment(pr, body)).html_url)
