"""Everything the emulated GitHub remembers, as plain mutable records.

Ids and timestamps are deterministic by default: one counter hands out every id, and the
clock starts at a fixed instant and moves one second per write. Two runs of the same test
therefore see byte-identical responses, which keeps snapshots and ETags stable. A person
trying the agents out (`agent-loop emulator serve`) needs the opposite: the real clock
(`clock`, so "issue to PR" reads minutes, not months) and tokens nobody can guess
(`random_tokens`, so a web page cannot act as the owner).
"""

from __future__ import annotations

import secrets
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agent_loop_testing._emulator_git import GitStore, Identity

if TYPE_CHECKING:
    from agent_loop_testing._emulator_webhooks import WebhookSender

__all__ = [
    "PERMISSIONS",
    "AppRec",
    "CheckRunRec",
    "CommentRec",
    "EditRec",
    "EventRec",
    "IssueRec",
    "LabelRec",
    "PullRec",
    "ReactionRec",
    "ReviewCommentRec",
    "ReviewRec",
    "State",
    "StatusRec",
    "UserRec",
    "record_body_edit",
]

_TOKEN_ALPHABET = string.ascii_letters + string.digits

PERMISSIONS = ("none", "read", "triage", "write", "maintain", "admin")
"""Repository roles from weakest to strongest."""


@dataclass
class UserRec:
    login: str
    id: int
    type: str
    permission: str
    created_at: datetime
    name: str | None = None

    @property
    def email(self) -> str:
        return f"{self.id}+{self.login}@users.noreply.github.com"

    def can(self, role: str) -> bool:
        """True when this user's role is at least `role`."""
        return PERMISSIONS.index(self.permission) >= PERMISSIONS.index(role)


@dataclass
class LabelRec:
    id: int
    name: str
    color: str = "ededed"
    description: str | None = None


@dataclass
class PullRec:
    head_ref: str
    head_sha: str
    base_ref: str
    draft: bool = False
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    base_at_open: str = ""
    """The base branch's head when the PR was opened: the PR's commits are the head's
    that this one lacks (GitHub keeps listing them after the merge)."""
    linked_issues: list[int] = field(default_factory=list[int])
    """Issues linked by hand (the sidebar's "Development"): closed by the merge like the
    ones its body names with a closing keyword."""
    rebased: list[str] = field(default_factory=list[str])
    """The commits a rebase merge made on the base branch, oldest first (the last one is
    `merge_commit_sha`)."""


@dataclass(frozen=True)
class EditRec:
    """One revision of a body in its edit history (GitHub's `userContentEdits`): who wrote
    it, when, and the text it left (GraphQL `diff`, which holds the whole body).

    GitHub keeps no history for a body never edited; its first edit records two
    revisions, the text as created (by its author, at its creation) and the new one, so
    a history, once there, starts with the creation (`includesCreatedEdit`).
    """

    editor: str
    edited_at: datetime
    body: str | None = None
    """The whole body after this revision; `None` once the revision was deleted from the
    history (`deleted_at`)."""
    deleted_at: datetime | None = None
    """When someone deleted this revision from the history (its text is gone)."""
    deleted_by: str | None = None


@dataclass
class IssueRec:
    number: int
    id: int
    title: str
    body: str | None
    author: str
    created_at: datetime
    updated_at: datetime
    labels: list[str] = field(default_factory=list[str])
    assignees: list[str] = field(default_factory=list[str])
    state: str = "open"
    state_reason: str | None = None
    closed_at: datetime | None = None
    closed_by: str | None = None
    pull: PullRec | None = None
    edits: list[EditRec] = field(default_factory=list[EditRec])
    """The body's revisions, oldest first: empty until its first edit, then the text as
    created followed by every edit (`record_body_edit`); title changes are `renamed`
    events instead."""


@dataclass
class CommentRec:
    id: int
    issue: int
    body: str
    author: str
    created_at: datetime
    updated_at: datetime
    edits: list[EditRec] = field(default_factory=list[EditRec])


@dataclass
class ReactionRec:
    id: int
    comment: int
    """The issue comment reacted to."""
    author: str
    content: str
    created_at: datetime


@dataclass
class EventRec:
    id: int
    issue: int
    event: str
    actor: str
    created_at: datetime
    label: str | None = None
    commit_id: str | None = None
    rename: tuple[str, str] | None = None
    """`(from, to)` of a `renamed` event."""


@dataclass
class ReviewRec:
    id: int
    pull: int
    author: str
    state: str
    body: str
    commit_id: str
    submitted_at: datetime | None


@dataclass
class ReviewCommentRec:
    id: int
    pull: int
    review_id: int | None
    author: str
    body: str
    path: str
    line: int | None
    side: str
    commit_id: str
    diff_hunk: str
    created_at: datetime
    updated_at: datetime
    in_reply_to: int | None = None
    edits: list[EditRec] = field(default_factory=list[EditRec])
    resolved_by: str | None = None
    """A thread's first comment: who marked the thread resolved (None: unresolved)."""


@dataclass
class CheckRunRec:
    id: int
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    title: str | None
    summary: str | None
    text: str | None
    started_at: datetime
    completed_at: datetime | None
    external_id: str | None = None
    details_url: str | None = None


@dataclass
class StatusRec:
    id: int
    sha: str
    context: str
    state: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: datetime


@dataclass
class AppRec:
    app_id: int
    slug: str
    public_key_pem: str
    installation_id: int
    created_at: datetime


@dataclass
class State:
    """The repository, its people and its conversations."""

    owner: str
    name: str
    default_branch: str
    page_size_default: int
    now: datetime
    repo_id: int = 0
    next_id: int = 1
    frozen: bool = False
    """Writes share one timestamp (GitHub's are whole seconds): see `same_second`."""
    clock: Callable[[], datetime] | None = None
    """The real clock, when the emulator follows it: each write is stamped with its time
    (whole seconds, never before the previous write). None: one second per write."""
    random_tokens: bool = False
    """Tokens are random (a served emulator a person uses) instead of derived from the
    user's id (reproducible tests)."""
    next_number: int = 1
    git: GitStore = field(default_factory=GitStore)
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: dict[str, UserRec] = field(default_factory=dict[str, UserRec])
    tokens: dict[str, str] = field(default_factory=dict[str, str])
    installation_tokens: set[str] = field(default_factory=set[str])
    labels: dict[str, LabelRec] = field(default_factory=dict[str, LabelRec])
    issues: dict[int, IssueRec] = field(default_factory=dict[int, IssueRec])
    comments: dict[int, CommentRec] = field(default_factory=dict[int, CommentRec])
    events: list[EventRec] = field(default_factory=list[EventRec])
    reactions: dict[int, ReactionRec] = field(default_factory=dict[int, ReactionRec])
    reviews: dict[int, ReviewRec] = field(default_factory=dict[int, ReviewRec])
    review_comments: dict[int, ReviewCommentRec] = field(
        default_factory=dict[int, ReviewCommentRec]
    )
    check_runs: dict[int, CheckRunRec] = field(default_factory=dict[int, CheckRunRec])
    statuses: list[StatusRec] = field(default_factory=list[StatusRec])
    apps: dict[int, AppRec] = field(default_factory=dict[int, AppRec])
    created_at: datetime | None = None
    private: bool = False
    """The repository's visibility (`private`/`visibility` in its JSON)."""
    hook_sink: WebhookSender | None = None
    """Where state changes are announced as webhook deliveries (None: nowhere)."""
    host: list[State] = field(default_factory=list["State"])
    """Every repository served beside this one by a `GitHubHost` (this one included);
    empty for a lone emulator. The account-wide listings (`GET /user/repos`,
    `GET /installation/repositories`) read it."""

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def new_id(self) -> int:
        value = self.next_id
        self.next_id += 1
        return value

    def tick(self) -> datetime:
        """Advance the clock and return the new time (one call per write): one second, or
        to the real time with `clock` (several writes in one second share it, as on
        GitHub); inside `GitHubEmulator.same_second` the clock stands still."""
        if self.frozen:
            return self.now
        if self.clock is not None:
            self.now = max(self.now, self.clock().replace(microsecond=0))
        else:
            self.now += timedelta(seconds=1)
        return self.now

    def new_token(self, prefix: str, predictable: str) -> str:
        """A token for a user or an installation: `prefix` and 36 random letters and
        digits with `random_tokens` (GitHub's shape), else `prefix + predictable`."""
        if self.random_tokens:
            return prefix + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(36))
        return prefix + predictable

    def user(self, login: str) -> UserRec:
        """A known user; KeyError names the login when a test uses an unknown one."""
        if login not in self.users:
            raise KeyError(f"unknown user {login!r}: add it with GitHubEmulator.add_user()")
        return self.users[login]

    def identity(self, login: str) -> Identity:
        user = self.user(login)
        return Identity(user.name or user.login, user.email, self.now)

    def label(self, name: str) -> LabelRec:
        """The repository label, created on first use like GitHub does for issue labels."""
        for existing in self.labels.values():
            if existing.name.lower() == name.lower():
                return existing
        rec = LabelRec(self.new_id(), name)
        self.labels[name] = rec
        return rec

    def is_empty(self) -> bool:
        """GitHub calls a repository without branches empty (409 on git data calls)."""
        return not any(ref.startswith("refs/heads/") for ref in self.git.refs)


def record_body_edit(
    record: IssueRec | CommentRec | ReviewCommentRec, editor: str, at: datetime, body: str
) -> None:
    """Record `editor`'s edit of `record`'s body to `body` at `at`, as GitHub keeps it:
    the first edit also records the text as created (its author's, at its creation)."""
    if not record.edits:
        record.edits.append(EditRec(record.author, record.created_at, record.body or ""))
    record.edits.append(EditRec(editor, at, body))
